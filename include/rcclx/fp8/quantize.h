/* rcclx/fp8/quantize.h - ready kernels and host launchers that pack a whole
 * array into one chunk (layout and scale rule: rcclx/fp8/pack.h) and back.
 *
 * rcclx_fp8_quantize_check() is plain host code: it validates arguments
 * exactly as the launchers do, so CPU tests cover every rejection.
 */
#pragma once

#include <rcclx/fp8/pack.h>
#include <rcclx/status.h>

/* Argument rules of rcclx_fp8_quantize / rcclx_fp8_dequantize:
 * `data` is the bf16/fp16/fp32 side, `chunk` the packed side; both non-NULL
 * and 16-byte aligned; n >= 1 (n == 0 is rejected: nothing to pack is a
 * caller's bug more often than a request); supported dtype, format, block
 * size and scale kind. */
RCCLX_HOST rcclx_status rcclx_fp8_quantize_check(const void* data, rcclx_dtype dtype, size_t n,
                                                 rcclx_fp8_format f, int block_size, rcclx_scale_kind k,
                                                 const void* chunk) {
  if (!data || !chunk) return RCCLX_ERR_NULL_POINTER;
  if (((uintptr_t)data | (uintptr_t)chunk) & 15u) return RCCLX_ERR_MISALIGNED;
  if (n == 0 || n > ((size_t)1 << 40)) return RCCLX_ERR_INVALID_COUNT;
  if (rcclx_dtype_size(dtype) == 0) return RCCLX_ERR_UNSUPPORTED_DTYPE;
  if (!rcclx_fp8_format_valid(f) || !rcclx_fp8_block_size_valid(block_size) || (int)k < 0 ||
      k >= RCCLX_SCALE_KIND_COUNT)
    return RCCLX_ERR_INVALID_ARGUMENT;
  return RCCLX_SUCCESS;
}

#if defined(RCCLX_GPU_LANG)

typedef struct __attribute__((aligned(8))) { uint32_t w[2]; } rcclx_u32x2;

/* 8 elements starting at i0 as floats; zeros past n.  p 16-byte aligned. */
template <typename T>
RCCLX_DEVICE void rcclx_load8_f32(const T* p, size_t i0, size_t n, float (&x)[8]) {
  if (i0 + 8 <= n) {
    if (sizeof(T) == 2) {
      rcclx_unpack16<T>(rcclx_ld16(p + i0), x);
    } else {
      rcclx_unpack16<T>(rcclx_ld16(p + i0), x);
      rcclx_unpack16<T>(rcclx_ld16(p + i0 + 4), x + 4);
    }
  } else {
RCCLX_UNROLL
    for (int i = 0; i < 8; ++i) x[i] = i0 + i < n ? rcclx_to_f32(p[i0 + i]) : 0.0f;
  }
}
template <typename T>
RCCLX_DEVICE void rcclx_store8_f32(T* p, size_t i0, size_t n, const float (&x)[8]) {
  if (i0 + 8 <= n) {
    if (sizeof(T) == 2) {
      rcclx_st16(p + i0, rcclx_pack16<T>(x));
    } else {
      rcclx_st16(p + i0, rcclx_pack16<T>(x));
      rcclx_st16(p + i0 + 4, rcclx_pack16<T>(x + 4));
    }
  } else {
RCCLX_UNROLL
    for (int i = 0; i < 8; ++i)
      if (i0 + i < n) p[i0 + i] = rcclx_from_f32<T>(x[i]);
  }
}
RCCLX_DEVICE void rcclx_store8_u8(uint8_t* p, size_t i0, size_t n, const uint32_t (&q)[2]) {
  if (i0 + 8 <= n) {
    rcclx_u32x2 v = {{q[0], q[1]}};
    *(rcclx_u32x2*)(p + i0) = v;
  } else {
RCCLX_UNROLL
    for (int i = 0; i < 8; ++i)
      if (i0 + i < n) p[i0 + i] = (uint8_t)(q[i / 4] >> (8 * (i % 4)));
  }
}
RCCLX_DEVICE void rcclx_load8_u8(const uint8_t* p, size_t i0, size_t n, uint32_t (&q)[2]) {
  if (i0 + 8 <= n) {
    rcclx_u32x2 v = *(const rcclx_u32x2*)(p + i0);
    q[0] = v.w[0];
    q[1] = v.w[1];
  } else {
    q[0] = q[1] = 0;
RCCLX_UNROLL
    for (int i = 0; i < 8; ++i)
      if (i0 + i < n) q[i / 4] |= (uint32_t)p[i0 + i] << (8 * (i % 4));
  }
}

#define RCCLX_FP8_THREADS 256
#define RCCLX_FP8_LANE_ELEMS 16 /* values per lane in the quantize kernel */
/* Tuning of the two ready kernels (compile-time; bench/device-run.sh's
 * fp8_variants step times alternatives): quantize groups / dequantize
 * pieces per thread per step, all loads first; and the blocks per
 * multiprocessor the register budget must allow (0: the compiler's
 * choice).  Measured on the H200 (bench/RESULTS.md, run 6), 256 MiB bf16:
 * quantize unroll 2 reached 0.94 of the copy roofline, 4 reached 0.90,
 * 4 with 3 blocks per SM 0.82. */
#ifndef RCCLX_FP8_UNROLL
#  define RCCLX_FP8_UNROLL 2
#endif
#ifndef RCCLX_FP8_DEQUANT_UNROLL
#  define RCCLX_FP8_DEQUANT_UNROLL 4
#endif
#ifndef RCCLX_FP8_MIN_BLOCKS
#  define RCCLX_FP8_MIN_BLOCKS 0
#endif
#if RCCLX_FP8_MIN_BLOCKS > 0
#  define RCCLX_FP8_LAUNCH_BOUNDS __launch_bounds__(RCCLX_FP8_THREADS, RCCLX_FP8_MIN_BLOCKS)
#else
#  define RCCLX_FP8_LAUNCH_BOUNDS __launch_bounds__(RCCLX_FP8_THREADS)
#endif

/* 16 codes at byte i0 of p (16-byte aligned when whole), bytes < n only. */
RCCLX_DEVICE void rcclx_store16_u8(uint8_t* p, size_t i0, size_t n, const uint32_t (&q)[4]) {
  if (i0 + 16 <= n) {
    const rcclx_vec16 v = {{q[0], q[1], q[2], q[3]}};
    rcclx_st16(p + i0, v);
  } else {
RCCLX_UNROLL
    for (int i = 0; i < 16; ++i)
      if (i0 + i < n) p[i0 + i] = (uint8_t)(q[i / 4] >> (8 * (i % 4)));
  }
}

/* Quantize in[0..n) into `chunk`.  Lane groups of B/16 lanes own a block,
 * 16 values per lane (two or four 16-byte loads, one 16-byte store); each
 * thread handles RCCLX_FP8_UNROLL groups per step, all loads first.  The
 * loop is warp-uniform so the group shuffles always see full warps. */
template <typename T, int B, rcclx_fp8_format F>
RCCLX_GLOBAL void RCCLX_FP8_LAUNCH_BOUNDS
    rcclx_fp8_quantize_kernel(const T* in, size_t n, rcclx_scale_kind k, void* chunk) {
  constexpr int E = RCCLX_FP8_LANE_ELEMS, LANES = B / E, U = RCCLX_FP8_UNROLL;
  const size_t nb = rcclx_fp8_nblocks(n, B);
  uint8_t* payload = (uint8_t*)chunk + rcclx_fp8_scales_bytes(n, B, k);
  const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t stride = ((size_t)gridDim.x * blockDim.x) / LANES;
  const int lane = (int)(threadIdx.x % LANES);
  const size_t warp_first = (tid - threadIdx.x % RCCLX_WARP_SIZE) / LANES;
  constexpr int PV = 16 / (int)sizeof(T), NV = E / PV; /* values per vector, vectors per lane */
  for (size_t g0 = tid / LANES, gw = warp_first; gw < nb; g0 += U * stride, gw += U * stride) {
    /* Raw 16-byte loads first (packed: half the registers of floats for
     * 16-bit inputs), all U groups' in flight at once. */
    rcclx_vec16 raw[U][NV];
    RCCLX_UNROLL
    for (int u = 0; u < U; ++u) {
      const size_t i0 = (g0 + u * stride) * B + (size_t)lane * E;
      if (g0 + u * stride < nb && i0 + E <= n) {
        RCCLX_UNROLL
        for (int v = 0; v < NV; ++v) raw[u][v] = rcclx_ld16(in + i0 + (size_t)v * PV);
      }
    }
    RCCLX_UNROLL
    for (int u = 0; u < U; ++u) {
      const size_t g = g0 + u * stride, i0 = g * B + (size_t)lane * E;
      float x[E];
      if (g < nb && i0 + E <= n) {
        RCCLX_UNROLL
        for (int v = 0; v < NV; ++v) rcclx_unpack16<T>(raw[u][v], x + v * PV);
      } else {
        RCCLX_UNROLL
        for (int i = 0; i < E; ++i) x[i] = g < nb && i0 + i < n ? rcclx_to_f32(in[i0 + i]) : 0.0f;
      }
      uint32_t q[E / 4];
      const rcclx_fp8_scale s = rcclx_fp8_quantize_group_e<E>(x, LANES, F, k, q);
      if (g < nb) {
        if (lane == 0) rcclx_fp8_store_scale(chunk, g, s.stored, k);
        rcclx_store16_u8(payload, i0, n, q);
      }
    }
  }
}

/* Dequantize: 8 codes per thread per piece (an 8-byte load),
 * RCCLX_FP8_DEQUANT_UNROLL pieces per step with all loads first.  (16
 * codes per thread measured 0.56 of the copy roofline against 0.84 for this
 * form: bench/RESULTS.md, run 6.) */
template <typename T, int B, rcclx_fp8_format F>
RCCLX_GLOBAL void RCCLX_FP8_LAUNCH_BOUNDS
    rcclx_fp8_dequantize_kernel(const void* chunk, size_t n, rcclx_scale_kind k, T* out) {
  constexpr int U = RCCLX_FP8_DEQUANT_UNROLL;
  const uint8_t* payload = (const uint8_t*)chunk + rcclx_fp8_scales_bytes(n, B, k);
  const size_t stride = (size_t)gridDim.x * blockDim.x * 8;
  for (size_t i0 = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8; i0 < n; i0 += U * stride) {
    uint32_t q[U][2];
    float s[U];
    RCCLX_UNROLL
    for (int u = 0; u < U; ++u) {
      const size_t i = i0 + u * stride;
      if (i < n) {
        rcclx_load8_u8(payload, i, n, q[u]);
        s[u] = rcclx_fp8_scale_from_stored(rcclx_fp8_load_scale(chunk, i / B, k), k);
      }
    }
    RCCLX_UNROLL
    for (int u = 0; u < U; ++u) {
      const size_t i = i0 + u * stride;
      if (i < n) {
        float x[8];
        rcclx_fp8_dequantize8(q[u], s[u], F, x);
        rcclx_store8_f32(out, i, n, x);
      }
    }
  }
}

/* Grid for a memory-bound kernel: enough co-resident blocks to fill the GPU. */
RCCLX_HOST unsigned rcclx_fill_grid(const void* kernel, int threads, size_t work_threads) {
  int dev = 0, sms = 1, occ = 1;
  if (hipGetDevice(&dev) != hipSuccess ||
      hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev) != hipSuccess ||
      hipOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, 0) != hipSuccess || occ < 1)
    occ = 1;
  size_t want = (work_threads + (size_t)threads - 1) / (size_t)threads;
  size_t cap = (size_t)sms * (size_t)occ;
  return (unsigned)(want < 1 ? 1 : (want < cap ? want : cap));
}

template <typename T, int B, rcclx_fp8_format F>
RCCLX_HOST rcclx_status rcclx_fp8_launch_(int quantize, const void* data, size_t n, rcclx_scale_kind k,
                                          void* chunk, hipStream_t stream) {
  if (quantize) {
    const void* kern = (const void*)rcclx_fp8_quantize_kernel<T, B, F>;
    unsigned grid = rcclx_fill_grid(kern, RCCLX_FP8_THREADS,
                                    rcclx_fp8_nblocks(n, B) * (B / RCCLX_FP8_LANE_ELEMS) / RCCLX_FP8_UNROLL + 1);
    rcclx_fp8_quantize_kernel<T, B, F><<<grid, RCCLX_FP8_THREADS, 0, stream>>>((const T*)data, n, k, chunk);
  } else {
    const void* kern = (const void*)rcclx_fp8_dequantize_kernel<T, B, F>;
    unsigned grid = rcclx_fill_grid(kern, RCCLX_FP8_THREADS, (n + 7) / 8 / RCCLX_FP8_DEQUANT_UNROLL + 1);
    rcclx_fp8_dequantize_kernel<T, B, F><<<grid, RCCLX_FP8_THREADS, 0, stream>>>(chunk, n, k, (T*)data);
  }
  return hipGetLastError() == hipSuccess ? RCCLX_SUCCESS : RCCLX_ERR_RUNTIME;
}
template <typename T, int B>
RCCLX_HOST rcclx_status rcclx_fp8_launch_f_(int q, const void* d, size_t n, rcclx_fp8_format f,
                                            rcclx_scale_kind k, void* c, hipStream_t s) {
  switch (f) {
    case RCCLX_FP8_E4M3FN: return rcclx_fp8_launch_<T, B, RCCLX_FP8_E4M3FN>(q, d, n, k, c, s);
    case RCCLX_FP8_E4M3FNUZ: return rcclx_fp8_launch_<T, B, RCCLX_FP8_E4M3FNUZ>(q, d, n, k, c, s);
    case RCCLX_FP8_E5M2: return rcclx_fp8_launch_<T, B, RCCLX_FP8_E5M2>(q, d, n, k, c, s);
    default: return rcclx_fp8_launch_<T, B, RCCLX_FP8_E5M2FNUZ>(q, d, n, k, c, s);
  }
}
template <typename T>
RCCLX_HOST rcclx_status rcclx_fp8_launch_b_(int q, const void* d, size_t n, rcclx_fp8_format f, int B,
                                            rcclx_scale_kind k, void* c, hipStream_t s) {
  switch (B) {
    case 32: return rcclx_fp8_launch_f_<T, 32>(q, d, n, f, k, c, s);
    case 64: return rcclx_fp8_launch_f_<T, 64>(q, d, n, f, k, c, s);
    case 128: return rcclx_fp8_launch_f_<T, 128>(q, d, n, f, k, c, s);
    default: return rcclx_fp8_launch_f_<T, 256>(q, d, n, f, k, c, s);
  }
}
RCCLX_HOST rcclx_status rcclx_fp8_launch_t_(int q, const void* d, rcclx_dtype t, size_t n, rcclx_fp8_format f,
                                            int B, rcclx_scale_kind k, void* c, hipStream_t s) {
  switch (t) {
    case RCCLX_FLOAT32: return rcclx_fp8_launch_b_<float>(q, d, n, f, B, k, c, s);
    case RCCLX_FLOAT16: return rcclx_fp8_launch_b_<rcclx_f16>(q, d, n, f, B, k, c, s);
    default: return rcclx_fp8_launch_b_<rcclx_bf16>(q, d, n, f, B, k, c, s);
  }
}

/* Quantize n elements of `in` into the chunk at `chunk` (which must hold
 * rcclx_fp8_packed_bytes(n, block_size, k) bytes), on `stream`, which
 * belongs to the current device (no communicator says which GPU: as for
 * any plain kernel launch, the caller makes it current; the grid is sized
 * for it). */
RCCLX_HOST rcclx_status rcclx_fp8_quantize(const void* in, rcclx_dtype dtype, size_t n, rcclx_fp8_format f,
                                           int block_size, rcclx_scale_kind k, void* chunk, hipStream_t stream) {
  RCCLX_TRY(rcclx_fp8_quantize_check(in, dtype, n, f, block_size, k, chunk));
  return rcclx_fp8_launch_t_(1, in, dtype, n, f, block_size, k, chunk, stream);
}
/* Dequantize a chunk written by rcclx_fp8_quantize (same n, format, block
 * size and kind) into n elements of `out`, on `stream` of the current
 * device (as rcclx_fp8_quantize). */
RCCLX_HOST rcclx_status rcclx_fp8_dequantize(const void* chunk, size_t n, rcclx_fp8_format f, int block_size,
                                             rcclx_scale_kind k, void* out, rcclx_dtype dtype, hipStream_t stream) {
  RCCLX_TRY(rcclx_fp8_quantize_check(out, dtype, n, f, block_size, k, chunk));
  return rcclx_fp8_launch_t_(0, out, dtype, n, f, block_size, k, (void*)chunk, stream);
}

#endif /* RCCLX_GPU_LANG */
