/* rcclx/fp8/format.h - scalar FP8: four formats, host and device.
 *
 * Formats (every name spells its interpretation; byte 0x80 is -0 in the OCP
 * formats and NaN in the FNUZ ones, so they are never aliased):
 *
 *   format      bias  max finite (code)  min normal  min subnormal  NaN        Inf
 *   E4M3FN        7   448      (0x7E)    2^-6        2^-9           0x7F,0xFF  none
 *   E4M3FNUZ      8   240      (0x7F)    2^-7        2^-10          0x80       none
 *   E5M2         15   57344    (0x7B)    2^-14       2^-16          0x7D..0x7F +-0x7C
 *   E5M2FNUZ     16   57344    (0x7F)    2^-15       2^-17          0x80       none
 *
 * E4M3FN / E5M2 are OCP (gfx950, NVIDIA sm_89+); E4M3FNUZ / E5M2FNUZ are what
 * gfx942 (MI300) converts in hardware.
 *
 * rcclx_fp8_encode contract: round to nearest, ties to even, saturating:
 * finite overflow and +-Inf go to +-max finite (an E5M2 Inf input also gives
 * max finite, never the Inf code); NaN gives the canonical NaN (0x7F for the
 * OCP formats, 0x80 for FNUZ); zero and values that round to zero give 0x00,
 * or 0x80 for negative inputs in the OCP formats (FNUZ never gives 0x80 for
 * a number).  float32 subnormals and fp8 subnormals are handled exactly.
 * rcclx_fp8_decode is exact.
 *
 * On the device the typed encoders use the chip's converts where they exist
 * (see rcclx/arch/); those are bit-identical to the software path here,
 * which is also the test oracle (checked on all 2^32 inputs on the GPU).
 */
#pragma once

#include <rcclx/types.h>

typedef enum : int {
  RCCLX_FP8_E4M3FN = 0,
  RCCLX_FP8_E4M3FNUZ = 1,
  RCCLX_FP8_E5M2 = 2,
  RCCLX_FP8_E5M2FNUZ = 3,
  RCCLX_FP8_FORMAT_COUNT
} rcclx_fp8_format;

RCCLX_HOST_DEVICE int rcclx_fp8_format_valid(rcclx_fp8_format f) {
  return (int)f >= 0 && (int)f < (int)RCCLX_FP8_FORMAT_COUNT;
}
RCCLX_HOST_DEVICE int rcclx_fp8_is_fnuz(rcclx_fp8_format f) {
  return f == RCCLX_FP8_E4M3FNUZ || f == RCCLX_FP8_E5M2FNUZ;
}
RCCLX_HOST_DEVICE int rcclx_fp8_mant_bits(rcclx_fp8_format f) {
  return (f == RCCLX_FP8_E4M3FN || f == RCCLX_FP8_E4M3FNUZ) ? 3 : 2;
}
RCCLX_HOST_DEVICE int rcclx_fp8_bias(rcclx_fp8_format f) {
  return f == RCCLX_FP8_E4M3FN ? 7 : f == RCCLX_FP8_E4M3FNUZ ? 8 : f == RCCLX_FP8_E5M2 ? 15 : 16;
}
/* Magnitude code (sign bit clear) of the largest finite value. */
RCCLX_HOST_DEVICE uint32_t rcclx_fp8_max_code(rcclx_fp8_format f) {
  return f == RCCLX_FP8_E4M3FN ? 0x7eu : f == RCCLX_FP8_E5M2 ? 0x7bu : 0x7fu;
}
RCCLX_HOST_DEVICE float rcclx_fp8_max(rcclx_fp8_format f) {
  return f == RCCLX_FP8_E4M3FN ? 448.0f : f == RCCLX_FP8_E4M3FNUZ ? 240.0f : 57344.0f;
}
RCCLX_HOST_DEVICE uint8_t rcclx_fp8_nan_code(rcclx_fp8_format f) {
  return rcclx_fp8_is_fnuz(f) ? (uint8_t)0x80 : (uint8_t)0x7f;
}
RCCLX_HOST const char* rcclx_fp8_format_name(rcclx_fp8_format f) {
  return f == RCCLX_FP8_E4M3FN ? "e4m3fn" : f == RCCLX_FP8_E4M3FNUZ ? "e4m3fnuz"
       : f == RCCLX_FP8_E5M2 ? "e5m2" : f == RCCLX_FP8_E5M2FNUZ ? "e5m2fnuz" : "?";
}

/* ---- software path: the definition, and the oracle for every fast path ---- */

RCCLX_HOST_DEVICE uint8_t rcclx_fp8_encode_sw(float x, rcclx_fp8_format f) {
  const int M = rcclx_fp8_mant_bits(f), bias = rcclx_fp8_bias(f);
  const uint32_t u = rcclx_f32_bits(x), a = u & 0x7fffffffu;
  const uint32_t sign = (u >> 24) & 0x80u;
  if (a > 0x7f800000u) return rcclx_fp8_nan_code(f);
  const int fe = (int)(a >> 23); /* biased float32 exponent */
  uint32_t mag;
  if (fe == 0xff) {
    mag = 0xffu; /* Inf: saturates below */
  } else if (fe == 0) {
    mag = 0; /* float32 subnormals lie below half of every fp8 subnormal */
  } else {
    const uint32_t sig = (a & 0x7fffffu) | 0x800000u;
    const int e = fe - 127, min_e = 1 - bias;
    if (e >= min_e) {
      /* The rounding carry may step into the next binade; that is right. */
      mag = ((uint32_t)(e + bias) << M) + rcclx_rshift_rne(sig, 23 - M) - (1u << M);
    } else {
      const int sh = 23 - M + (min_e - e); /* units of the fp8 subnormal step */
      mag = sh > 25 ? 0u : rcclx_rshift_rne(sig, sh);
    }
  }
  const uint32_t max_code = rcclx_fp8_max_code(f);
  if (mag > max_code) mag = max_code;
  if (mag == 0) return rcclx_fp8_is_fnuz(f) ? (uint8_t)0 : (uint8_t)sign;
  return (uint8_t)(sign | mag);
}

RCCLX_HOST_DEVICE float rcclx_fp8_decode_sw(uint8_t v, rcclx_fp8_format f) {
  const int M = rcclx_fp8_mant_bits(f), bias = rcclx_fp8_bias(f);
  const uint32_t sign = (uint32_t)(v & 0x80u) << 24, mag = v & 0x7fu;
  const float qnan = rcclx_bits_f32(0x7fc00000u);
  if (rcclx_fp8_is_fnuz(f)) {
    if (v == 0x80u) return qnan;
  } else if (f == RCCLX_FP8_E4M3FN) {
    if (mag == 0x7fu) return qnan;
  } else if (mag >= 0x7cu) { /* E5M2 */
    return mag == 0x7cu ? rcclx_bits_f32(sign | 0x7f800000u) : qnan;
  }
  const uint32_t ef = mag >> M, m = mag & ((1u << M) - 1u);
  if (ef == 0) { /* m * 2^(1 - bias - M), exact */
    const float r = (float)m * rcclx_bits_f32((uint32_t)(127 + 1 - bias - M) << 23);
    return sign ? -r : r;
  }
  return rcclx_bits_f32(sign | ((ef - (uint32_t)bias + 127u) << 23) | (m << (23 - M)));
}

/* ---- typed encoders/decoders: the chip's converts where it has them ----
 * encode2 packs a into bits 0..7 and b into bits 8..15. */
#define RCCLX_FP8_TYPED_(name, FMT, HWMACRO_ON, hw_encode2, hw_decode)        \
  RCCLX_HOST_DEVICE uint32_t rcclx_fp8_encode2_##name(float a, float b) {     \
    if (HWMACRO_ON) return hw_encode2(a, b);                                  \
    return (uint32_t)rcclx_fp8_encode_sw(a, FMT) |                            \
           ((uint32_t)rcclx_fp8_encode_sw(b, FMT) << 8);                      \
  }                                                                           \
  RCCLX_HOST_DEVICE uint8_t rcclx_fp8_encode_##name(float x) {                \
    return (uint8_t)rcclx_fp8_encode2_##name(x, 0.0f);                        \
  }                                                                           \
  RCCLX_HOST_DEVICE float rcclx_fp8_decode_##name(uint8_t v) {                \
    if (HWMACRO_ON) return hw_decode(v);                                      \
    return rcclx_fp8_decode_sw(v, FMT);                                       \
  }

/* Where the chip lacks a format, the hw names resolve to the software path
 * and the branch above folds away. */
#if defined(RCCLX_HW_E4M3FN)
#  define RCCLX_HW_E4M3FN_ON_ 1
#else
#  define RCCLX_HW_E4M3FN_ON_ 0
#  define rcclx_hw_encode2_e4m3fn(a, b) 0u
#  define rcclx_hw_decode_e4m3fn(v) 0.0f
#endif
#if defined(RCCLX_HW_E5M2)
#  define RCCLX_HW_E5M2_ON_ 1
#else
#  define RCCLX_HW_E5M2_ON_ 0
#  define rcclx_hw_encode2_e5m2(a, b) 0u
#  define rcclx_hw_decode_e5m2(v) 0.0f
#endif
#if defined(RCCLX_HW_E4M3FNUZ)
#  define RCCLX_HW_E4M3FNUZ_ON_ 1
#else
#  define RCCLX_HW_E4M3FNUZ_ON_ 0
#  define rcclx_hw_encode2_e4m3fnuz(a, b) 0u
#  define rcclx_hw_decode_e4m3fnuz(v) 0.0f
#endif
#if defined(RCCLX_HW_E5M2FNUZ)
#  define RCCLX_HW_E5M2FNUZ_ON_ 1
#else
#  define RCCLX_HW_E5M2FNUZ_ON_ 0
#  define rcclx_hw_encode2_e5m2fnuz(a, b) 0u
#  define rcclx_hw_decode_e5m2fnuz(v) 0.0f
#endif

RCCLX_FP8_TYPED_(e4m3fn, RCCLX_FP8_E4M3FN, RCCLX_HW_E4M3FN_ON_, rcclx_hw_encode2_e4m3fn, rcclx_hw_decode_e4m3fn)
RCCLX_FP8_TYPED_(e5m2, RCCLX_FP8_E5M2, RCCLX_HW_E5M2_ON_, rcclx_hw_encode2_e5m2, rcclx_hw_decode_e5m2)
RCCLX_FP8_TYPED_(e4m3fnuz, RCCLX_FP8_E4M3FNUZ, RCCLX_HW_E4M3FNUZ_ON_, rcclx_hw_encode2_e4m3fnuz, rcclx_hw_decode_e4m3fnuz)
RCCLX_FP8_TYPED_(e5m2fnuz, RCCLX_FP8_E5M2FNUZ, RCCLX_HW_E5M2FNUZ_ON_, rcclx_hw_encode2_e5m2fnuz, rcclx_hw_decode_e5m2fnuz)
#undef RCCLX_FP8_TYPED_

/* Two values at once in format f (fast path where the chip has one). */
RCCLX_HOST_DEVICE uint32_t rcclx_fp8_encode2(float a, float b, rcclx_fp8_format f) {
  switch (f) {
    case RCCLX_FP8_E4M3FN: return rcclx_fp8_encode2_e4m3fn(a, b);
    case RCCLX_FP8_E4M3FNUZ: return rcclx_fp8_encode2_e4m3fnuz(a, b);
    case RCCLX_FP8_E5M2: return rcclx_fp8_encode2_e5m2(a, b);
    default: return rcclx_fp8_encode2_e5m2fnuz(a, b);
  }
}

/* Two codes at once: bits 0..7 -> *lo, bits 8..15 -> *hi (higher bits are
 * ignored).  Exact, like rcclx_fp8_decode; a pair converter where the chip
 * has one (sm_89+: cvt.rn.f16x2.{e4m3x2,e5m2x2}), two single decodes
 * elsewhere. */
RCCLX_HOST_DEVICE void rcclx_fp8_decode2(uint32_t two, rcclx_fp8_format f, float* lo, float* hi) {
#if defined(RCCLX_HW_DECODE2_OCP)
  if (f == RCCLX_FP8_E4M3FN) { rcclx_hw_decode2_e4m3fn(two, lo, hi); return; }
  if (f == RCCLX_FP8_E5M2) { rcclx_hw_decode2_e5m2(two, lo, hi); return; }
#endif
  switch (f) {
    case RCCLX_FP8_E4M3FN:
      *lo = rcclx_fp8_decode_e4m3fn((uint8_t)two);
      *hi = rcclx_fp8_decode_e4m3fn((uint8_t)(two >> 8));
      break;
    case RCCLX_FP8_E4M3FNUZ:
      *lo = rcclx_fp8_decode_e4m3fnuz((uint8_t)two);
      *hi = rcclx_fp8_decode_e4m3fnuz((uint8_t)(two >> 8));
      break;
    case RCCLX_FP8_E5M2:
      *lo = rcclx_fp8_decode_e5m2((uint8_t)two);
      *hi = rcclx_fp8_decode_e5m2((uint8_t)(two >> 8));
      break;
    default:
      *lo = rcclx_fp8_decode_e5m2fnuz((uint8_t)two);
      *hi = rcclx_fp8_decode_e5m2fnuz((uint8_t)(two >> 8));
  }
}

/* The public scalar API. */
RCCLX_HOST_DEVICE uint8_t rcclx_fp8_encode(float x, rcclx_fp8_format f) {
  return (uint8_t)rcclx_fp8_encode2(x, 0.0f, f);
}
RCCLX_HOST_DEVICE float rcclx_fp8_decode(uint8_t v, rcclx_fp8_format f) {
  switch (f) {
    case RCCLX_FP8_E4M3FN: return rcclx_fp8_decode_e4m3fn(v);
    case RCCLX_FP8_E4M3FNUZ: return rcclx_fp8_decode_e4m3fnuz(v);
    case RCCLX_FP8_E5M2: return rcclx_fp8_decode_e5m2(v);
    default: return rcclx_fp8_decode_e5m2fnuz(v);
  }
}
