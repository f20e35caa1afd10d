/* rcclx/types.h - element types, reduce ops and 16-byte packs.
 *
 * Wire and buffer element types are stored as their raw bits (uint16_t for
 * bf16/fp16) so the same code builds as host C++, HIP and CUDA.  Arithmetic
 * is always fp32: a 16-byte pack is unpacked to floats, reduced, and packed
 * back with one round-to-nearest-even.
 */
#pragma once

#include <rcclx/platform.h>
#include <string.h>

/* Every enum of the public API has int as its underlying type, so any int
 * a caller passes (from C, Python or another compiler's build) is a value
 * of the type and the checks that reject it are well defined: without a
 * fixed type C++ makes an out-of-range value undefined, and -fstrict-enums
 * lets the compiler drop those checks.  It also fixes the types' size in
 * the structs that carry them. */
typedef enum rcclx_dtype : int {
  RCCLX_FLOAT32 = 0,
  RCCLX_FLOAT16 = 1,
  RCCLX_BFLOAT16 = 2,
  RCCLX_DTYPE_COUNT
} rcclx_dtype;

typedef enum rcclx_op : int {
  RCCLX_SUM = 0,
  RCCLX_MAX = 1, /* fmaxf semantics: a NaN operand is ignored */
  RCCLX_MIN = 2, /* fminf semantics */
  RCCLX_OP_COUNT
} rcclx_op;

/* Bytes per element; 0 for an invalid dtype. */
RCCLX_HOST_DEVICE size_t rcclx_dtype_size(rcclx_dtype t) {
  return t == RCCLX_FLOAT32 ? 4u : (t == RCCLX_FLOAT16 || t == RCCLX_BFLOAT16) ? 2u : 0u;
}

RCCLX_HOST const char* rcclx_dtype_name(rcclx_dtype t) {
  return t == RCCLX_FLOAT32 ? "fp32" : t == RCCLX_FLOAT16 ? "fp16" : t == RCCLX_BFLOAT16 ? "bf16" : "?";
}
RCCLX_HOST const char* rcclx_op_name(rcclx_op op) {
  return op == RCCLX_SUM ? "sum" : op == RCCLX_MAX ? "max" : op == RCCLX_MIN ? "min" : "?";
}

/* Element tags for templates: the bits of one value. */
typedef struct rcclx_bf16 { uint16_t bits; } rcclx_bf16;
typedef struct rcclx_f16 { uint16_t bits; } rcclx_f16;

RCCLX_HOST_DEVICE uint32_t rcclx_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
RCCLX_HOST_DEVICE float rcclx_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* v >> sh rounded to nearest, ties to even; 1 <= sh <= 31. */
RCCLX_HOST_DEVICE uint32_t rcclx_rshift_rne(uint32_t v, int sh) {
  uint32_t q = v >> sh;
  uint32_t rem = v & ((1u << sh) - 1u);
  uint32_t half = 1u << (sh - 1);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

RCCLX_HOST_DEVICE uint32_t rcclx_umax(uint32_t a, uint32_t b) { return a > b ? a : b; }

RCCLX_HOST_DEVICE size_t rcclx_align16(size_t x) { return (x + 15u) & ~(size_t)15u; }

/* Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a
 * byte (an empty range shares none). */
RCCLX_HOST_DEVICE int rcclx_ranges_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const char *x = (const char*)a, *y = (const char*)b;
  return x < y + b_bytes && y < x + a_bytes;
}

/* ---- bf16 ---- */
RCCLX_HOST_DEVICE float rcclx_bf16_to_f32(uint16_t b) { return rcclx_bits_f32((uint32_t)b << 16); }
/* Round to nearest even; NaN stays a (quiet) NaN, overflow gives Inf. */
RCCLX_HOST_DEVICE uint16_t rcclx_f32_to_bf16_rn(float f) {
  uint32_t u = rcclx_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ---- fp16: hardware converts on the device, IEEE software on the host ---- */
RCCLX_HOST_DEVICE float rcclx_f16_to_f32_sw(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return rcclx_bits_f32(sign | 0x7f800000u | (m << 13));
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
    float r = (float)m * rcclx_bits_f32(0x33800000u);
    return sign ? -r : r;
  }
  return rcclx_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}
RCCLX_HOST_DEVICE uint16_t rcclx_f32_to_f16_rn_sw(float f) {
  uint32_t u = rcclx_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: Inf */
  uint32_t e = a >> 23;
  if (e >= 113u) return (uint16_t)(sign | rcclx_rshift_rne(a - (112u << 23), 13));
  if (e == 0u) return sign; /* float32 subnormals are below 2^-25 */
  uint32_t sh = 126u - e;   /* units of 2^-24 */
  if (sh > 25u) return sign;
  return (uint16_t)(sign | rcclx_rshift_rne((a & 0x7fffffu) | 0x800000u, (int)sh));
}
RCCLX_HOST_DEVICE float rcclx_half_to_f32(uint16_t h) {
#if defined(RCCLX_DEVICE_PASS)
  return rcclx_f16_to_f32(h);
#else
  return rcclx_f16_to_f32_sw(h);
#endif
}
RCCLX_HOST_DEVICE uint16_t rcclx_f32_to_half_rn(float f) {
#if defined(RCCLX_DEVICE_PASS)
  return rcclx_f32_to_f16_rn(f);
#else
  return rcclx_f32_to_f16_rn_sw(f);
#endif
}

/* ---- generic element <-> fp32 ---- */
RCCLX_HOST_DEVICE float rcclx_to_f32(float x) { return x; }
RCCLX_HOST_DEVICE float rcclx_to_f32(rcclx_bf16 x) { return rcclx_bf16_to_f32(x.bits); }
RCCLX_HOST_DEVICE float rcclx_to_f32(rcclx_f16 x) { return rcclx_half_to_f32(x.bits); }

template <typename T> RCCLX_HOST_DEVICE T rcclx_from_f32(float f);
template <> RCCLX_HOST_DEVICE float rcclx_from_f32<float>(float f) { return f; }
template <> RCCLX_HOST_DEVICE rcclx_bf16 rcclx_from_f32<rcclx_bf16>(float f) {
  rcclx_bf16 r = {rcclx_f32_to_bf16_rn(f)};
  return r;
}
template <> RCCLX_HOST_DEVICE rcclx_f16 rcclx_from_f32<rcclx_f16>(float f) {
  rcclx_f16 r = {rcclx_f32_to_half_rn(f)};
  return r;
}

template <typename T> struct rcclx_dtype_of;
template <> struct rcclx_dtype_of<float> { static const rcclx_dtype value = RCCLX_FLOAT32; };
template <> struct rcclx_dtype_of<rcclx_f16> { static const rcclx_dtype value = RCCLX_FLOAT16; };
template <> struct rcclx_dtype_of<rcclx_bf16> { static const rcclx_dtype value = RCCLX_BFLOAT16; };

/* ---- 16-byte packs: 4 fp32 or 8 fp16/bf16 ---- */
#define RCCLX_PACK_ELEMS(T) ((int)(16 / sizeof(T)))

template <typename T>
RCCLX_HOST_DEVICE void rcclx_unpack16(rcclx_vec16 v, float* out) {
  T e[RCCLX_PACK_ELEMS(T)];
  memcpy(e, &v, 16);
RCCLX_UNROLL
  for (int i = 0; i < RCCLX_PACK_ELEMS(T); ++i) out[i] = rcclx_to_f32(e[i]);
}
template <typename T>
RCCLX_HOST_DEVICE rcclx_vec16 rcclx_pack16(const float* in) {
  T e[RCCLX_PACK_ELEMS(T)];
RCCLX_UNROLL
  for (int i = 0; i < RCCLX_PACK_ELEMS(T); ++i) e[i] = rcclx_from_f32<T>(in[i]);
  rcclx_vec16 v;
  memcpy(&v, e, 16);
  return v;
}

/* ---- reduce ops in fp32; OP is compile-time so the inner loop has no branch ---- */
template <int OP>
RCCLX_HOST_DEVICE float rcclx_reduce_f32(float a, float b) {
  return OP == RCCLX_SUM ? a + b : OP == RCCLX_MAX ? rcclx_fmaxf(a, b) : rcclx_fminf(a, b);
}
