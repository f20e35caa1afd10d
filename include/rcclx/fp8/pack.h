/* rcclx/fp8/pack.h - block-scaled FP8 pack/unpack: the layout, the scale
 * rule, and device pieces at thread and lane-group granularity.
 *
 * ---- Packed chunk layout (used by every low-precision collective) ----------
 * n elements quantized in blocks of B (B = 32, 64, 128 or 256; the last
 * block may be partial) with one scale per block:
 *
 *   offset 0                    scales: nb = ceil(n / B) entries,
 *                               4 bytes each (RCCLX_SCALE_F32, an fp32) or
 *                               1 byte each (RCCLX_SCALE_E8M0, 2^(byte-127));
 *                               padded up to a multiple of 16 bytes
 *   offset scales_bytes(n)      payload: n fp8 codes, element i at byte i;
 *                               padded up to a multiple of 16 bytes
 *
 * The chunk starts 16-byte aligned and is rcclx_fp8_packed_bytes() long;
 * padding bytes have unspecified contents and are never read as values.
 *
 * ---- Scale rule, per block ----------------------------------------------
 * absmax = max |x| over the block's finite elements (0 if none), fmax = the
 * format's largest finite value.
 *   RCCLX_SCALE_F32:  s = absmax / fmax, q = encode(x * (fmax / absmax));
 *                     if absmax / fmax < 2^-126 (an all-zero block too):
 *                     s = 2^-126 and q = encode(x * 2^126).
 *   RCCLX_SCALE_E8M0: s = 2^e, e = ceil(log2(absmax / fmax)) computed
 *                     exactly and clamped to [-126, 126] (an all-zero block
 *                     gets e = -126); q = encode(x * 2^-e), exact scaling,
 *                     so the scale never clips.  With B = 32 and E4M3FN this
 *                     is OCP MXFP8.
 * Dequantize: x' = decode(q) * s, then one round-to-nearest-even to the
 * output type.  encode is rcclx_fp8_encode (RNE, saturating).
 * Non-finite inputs never reach the scale: NaN and +-Inf elements are stored
 * as the format's NaN code and come back as NaN, so a non-finite value is
 * never silently turned into a finite one, and their finite neighbours are
 * quantized as usual.  A scale is never NaN, Inf or zero.
 *
 * ---- Error (in the normal range of the format) --------------------------
 * |x' - x| <= 2^-(M+1) |x| (1 + 2^-22) + 2^(-bias-M) s, M = mantissa bits
 * (E4M3: 2^-4 relative; E5M2: 2^-3), plus the output type's own rounding.
 */
#pragma once

#include <rcclx/fp8/format.h>

typedef enum : int {
  RCCLX_SCALE_F32 = 0,  /* fp32 absmax / fmax, 4 bytes per block */
  RCCLX_SCALE_E8M0 = 1, /* power of two, 1 byte per block */
  RCCLX_SCALE_KIND_COUNT
} rcclx_scale_kind;

RCCLX_HOST_DEVICE int rcclx_fp8_block_size_valid(int B) {
  return B == 32 || B == 64 || B == 128 || B == 256;
}
RCCLX_HOST_DEVICE size_t rcclx_fp8_nblocks(size_t n, int B) { return (n + (size_t)B - 1u) / (size_t)B; }
RCCLX_HOST_DEVICE size_t rcclx_fp8_scale_size(rcclx_scale_kind k) { return k == RCCLX_SCALE_E8M0 ? 1u : 4u; }
/* Bytes before the payload (= the payload's offset). */
RCCLX_HOST_DEVICE size_t rcclx_fp8_scales_bytes(size_t n, int B, rcclx_scale_kind k) {
  return rcclx_align16(rcclx_fp8_nblocks(n, B) * rcclx_fp8_scale_size(k));
}
/* Whole packed chunk, a multiple of 16 bytes. */
RCCLX_HOST_DEVICE size_t rcclx_fp8_packed_bytes(size_t n, int B, rcclx_scale_kind k) {
  return rcclx_fp8_scales_bytes(n, B, k) + rcclx_align16(n);
}

/* One block's scale: `scale` multiplies decoded values, `inv` multiplies
 * inputs before encoding, `stored` is what the chunk holds (fp32 bits or the
 * E8M0 byte). */
typedef struct {
  float scale, inv;
  uint32_t stored;
} rcclx_fp8_scale;

RCCLX_HOST_DEVICE int rcclx_is_finite_f32(float x) {
  return (rcclx_f32_bits(x) & 0x7f800000u) != 0x7f800000u;
}

RCCLX_HOST_DEVICE rcclx_fp8_scale rcclx_fp8_make_scale(float absmax, rcclx_fp8_format f, rcclx_scale_kind k) {
  const float fmax = rcclx_fp8_max(f);
  rcclx_fp8_scale s;
  if (k == RCCLX_SCALE_E8M0) {
    const uint32_t a = rcclx_f32_bits(absmax), m = rcclx_f32_bits(fmax);
    int e = -126;
    if ((a >> 23) != 0u) { /* normal absmax; zero/subnormal keep the floor */
      e = (int)(a >> 23) - (int)(m >> 23) + ((a & 0x7fffffu) > (m & 0x7fffffu) ? 1 : 0);
      e = e < -126 ? -126 : (e > 126 ? 126 : e);
    }
    s.stored = (uint32_t)(e + 127);
    s.scale = rcclx_bits_f32(s.stored << 23);
    s.inv = rcclx_bits_f32((uint32_t)(127 - e) << 23);
  } else {
    const float tiny = rcclx_bits_f32(0x00800000u); /* 2^-126 */
    const float q = absmax / fmax;
    if (q < tiny) {
      s.scale = tiny;
      s.inv = rcclx_bits_f32(0x7e800000u); /* 2^126 */
    } else {
      s.scale = q;
      s.inv = fmax / absmax;
    }
    s.stored = rcclx_f32_bits(s.scale);
  }
  return s;
}

/* The scale a reader multiplies by, from the stored form. */
RCCLX_HOST_DEVICE float rcclx_fp8_scale_from_stored(uint32_t stored, rcclx_scale_kind k) {
  return k == RCCLX_SCALE_E8M0 ? rcclx_bits_f32(stored << 23) : rcclx_bits_f32(stored);
}

/* Encode one pre-scaled pair, with non-finite inputs forced to NaN. */
RCCLX_HOST_DEVICE uint32_t rcclx_fp8_encode2_scaled(float a, float b, float inv, rcclx_fp8_format f) {
  uint32_t r = rcclx_fp8_encode2(a * inv, b * inv, f);
  const uint32_t nan = rcclx_fp8_nan_code(f);
  if (!rcclx_is_finite_f32(a)) r = (r & 0xff00u) | nan;
  if (!rcclx_is_finite_f32(b)) r = (r & 0x00ffu) | (nan << 8);
  return r;
}

/* Scale location in a chunk. */
RCCLX_HOST_DEVICE void rcclx_fp8_store_scale(void* chunk, size_t block, uint32_t stored, rcclx_scale_kind k) {
  if (k == RCCLX_SCALE_E8M0) ((uint8_t*)chunk)[block] = (uint8_t)stored;
  else ((uint32_t*)chunk)[block] = stored;
}
RCCLX_HOST_DEVICE uint32_t rcclx_fp8_load_scale(const void* chunk, size_t block, rcclx_scale_kind k) {
  return k == RCCLX_SCALE_E8M0 ? (uint32_t)((const uint8_t*)chunk)[block] : ((const uint32_t*)chunk)[block];
}

/* ---- thread granularity: one thread owns a whole block ------------------
 * Quantizes x[0..count) (count <= B) into q[0..count) and returns the scale.
 * Host and device; this is also the reference the GPU tests compare with. */
RCCLX_HOST_DEVICE rcclx_fp8_scale rcclx_fp8_quantize_block_thread(const float* x, int count, rcclx_fp8_format f,
                                                                  rcclx_scale_kind k, uint8_t* q) {
  float absmax = 0.0f;
  for (int i = 0; i < count; ++i)
    if (rcclx_is_finite_f32(x[i])) absmax = rcclx_fmaxf(absmax, rcclx_fabsf(x[i]));
  const rcclx_fp8_scale s = rcclx_fp8_make_scale(absmax, f, k);
  for (int i = 0; i < count; i += 2) {
    const uint32_t two = rcclx_fp8_encode2_scaled(x[i], i + 1 < count ? x[i + 1] : 0.0f, s.inv, f);
    q[i] = (uint8_t)two;
    if (i + 1 < count) q[i + 1] = (uint8_t)(two >> 8);
  }
  return s;
}

/* Whole chunk on the host (a reference and a convenience; T = float,
 * rcclx_f16 or rcclx_bf16). */
template <typename T>
RCCLX_HOST void rcclx_fp8_pack_host(const T* in, size_t n, rcclx_fp8_format f, int B, rcclx_scale_kind k,
                                    void* chunk) {
  uint8_t* payload = (uint8_t*)chunk + rcclx_fp8_scales_bytes(n, B, k);
  float x[256];
  for (size_t b = 0; b < rcclx_fp8_nblocks(n, B); ++b) {
    const size_t start = b * (size_t)B;
    const int count = (int)(n - start < (size_t)B ? n - start : (size_t)B);
    for (int i = 0; i < count; ++i) x[i] = rcclx_to_f32(in[start + i]);
    rcclx_fp8_scale s = rcclx_fp8_quantize_block_thread(x, count, f, k, payload + start);
    rcclx_fp8_store_scale(chunk, b, s.stored, k);
  }
}
template <typename T>
RCCLX_HOST void rcclx_fp8_unpack_host(const void* chunk, size_t n, rcclx_fp8_format f, int B,
                                      rcclx_scale_kind k, T* out) {
  const uint8_t* payload = (const uint8_t*)chunk + rcclx_fp8_scales_bytes(n, B, k);
  for (size_t i = 0; i < n; ++i) {
    const float s = rcclx_fp8_scale_from_stored(rcclx_fp8_load_scale(chunk, i / (size_t)B, k), k);
    out[i] = rcclx_from_f32<T>(rcclx_fp8_decode(payload[i], f) * s);
  }
}

#if defined(RCCLX_GPU_LANG)
/* ---- lane-group granularity: LANES consecutive lanes of one warp own a
 * block of LANES*8 elements, 8 per lane (lane l holds elements 8l..8l+7).
 * Call with all LANES lanes active; LANES is 4, 8, 16 or 32 and groups start
 * at lane multiples of LANES.  Elements past the block's end (a partial last
 * block) must be passed as 0.  Returns the block's scale in every lane and
 * writes the lane's 8 codes to *q8 (little-endian: element 8l in byte 0).
 * This is what a GEMM epilogue calls on its own registers. */
/* Same with the group width a run-time value (lanes = B / 8, a power of
 * two <= the warp width); the template form folds it to a constant. */
RCCLX_DEVICE rcclx_fp8_scale rcclx_fp8_quantize_group8_n(const float (&x)[8], int lanes, rcclx_fp8_format f,
                                                         rcclx_scale_kind k, uint32_t (&q8)[2]);
template <int LANES>
RCCLX_DEVICE rcclx_fp8_scale rcclx_fp8_quantize_group8(const float (&x)[8], rcclx_fp8_format f,
                                                       rcclx_scale_kind k, uint32_t (&q8)[2]) {
  return rcclx_fp8_quantize_group8_n(x, LANES, f, k, q8);
}
/* The same with E values per lane (8 or 16; lane l holds elements
 * E*l..E*l+E-1 of a block of lanes*E), codes in q[E/4].  The ready
 * quantize kernel uses E = 16: one 16-byte store of codes per lane. */
template <int E>
RCCLX_DEVICE rcclx_fp8_scale rcclx_fp8_quantize_group_e(const float (&x)[E], int lanes, rcclx_fp8_format f,
                                                        rcclx_scale_kind k, uint32_t (&q)[E / 4]) {
  /* |x| compared as bits: for non-negative floats unsigned order is numeric
   * order, and Inf/NaN sort above every finite value.  So the common case
   * (a lane with only finite values) costs one AND and one MAX per element;
   * a lane holding a non-finite value redoes its own maximum over the finite
   * ones (no shuffles inside, so divergence there is safe).  Same result as
   * rcclx_fp8_quantize_block_thread, bit for bit. */
  uint32_t m = 0;
RCCLX_UNROLL
  for (int i = 0; i < E; ++i) m = rcclx_umax(m, rcclx_f32_bits(x[i]) & 0x7fffffffu);
  const int nonfinite = m >= 0x7f800000u;
  if (nonfinite) {
    m = 0;
RCCLX_UNROLL
    for (int i = 0; i < E; ++i) {
      const uint32_t a = rcclx_f32_bits(x[i]) & 0x7fffffffu;
      if (a < 0x7f800000u) m = rcclx_umax(m, a);
    }
  }
  for (int d = lanes / 2; d > 0; d /= 2)
    m = rcclx_umax(m, rcclx_f32_bits(rcclx_shfl_xor_f32(rcclx_bits_f32(m), d, lanes)));
  const rcclx_fp8_scale s = rcclx_fp8_make_scale(rcclx_bits_f32(m), f, k);
  /* A finite x gives a finite x * inv (|x| <= absmax), and NaN encodes to
   * NaN, so only a lane that holds an Inf needs the per-element fix-up. */
RCCLX_UNROLL
  for (int w = 0; w < E / 4; ++w)
    q[w] = rcclx_fp8_encode2(x[4 * w + 0] * s.inv, x[4 * w + 1] * s.inv, f) |
           (rcclx_fp8_encode2(x[4 * w + 2] * s.inv, x[4 * w + 3] * s.inv, f) << 16);
  if (nonfinite) {
    const uint32_t nan = rcclx_fp8_nan_code(f);
RCCLX_UNROLL
    for (int i = 0; i < E; ++i)
      if (!rcclx_is_finite_f32(x[i])) {
        const int sh = 8 * (i % 4);
        q[i / 4] = (q[i / 4] & ~(0xffu << sh)) | (nan << sh);
      }
  }
  return s;
}
RCCLX_DEVICE rcclx_fp8_scale rcclx_fp8_quantize_group8_n(const float (&x)[8], int lanes, rcclx_fp8_format f,
                                                         rcclx_scale_kind k, uint32_t (&q8)[2]) {
  return rcclx_fp8_quantize_group_e<8>(x, lanes, f, k, q8);
}

/* The inverse for one lane: 8 codes and the block's scale -> 8 floats. */
RCCLX_DEVICE void rcclx_fp8_dequantize8(const uint32_t (&q8)[2], float scale, rcclx_fp8_format f, float (&x)[8]) {
RCCLX_UNROLL
  for (int i = 0; i < 8; i += 2) {
    rcclx_fp8_decode2(q8[i / 4] >> (8 * (i % 4)), f, &x[i], &x[i + 1]);
    x[i] *= scale;
    x[i + 1] *= scale;
  }
}
#endif /* RCCLX_GPU_LANG */
