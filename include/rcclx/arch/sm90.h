/* rcclx/arch/sm90.h - fp8 hardware converts on NVIDIA sm_89 and later
 * (Hopper sm_90 is the target).  Included only by rcclx/arch/cuda.h.
 *
 * `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` round to nearest even and
 * saturate finite overflow and +-Inf to +-max, NaN gives NaN;
 * `cvt.rn.f16x2.{e4m3x2,e5m2x2}` decode exactly (every value is a half).
 * Same contract as gfx942.h: bit-identical to the software path, checked
 * on all 2^32 float inputs by tests/gpu.  NVIDIA has no FNUZ converts: those
 * formats use the software path.
 */
#pragma once

#define RCCLX_ARCH_SM89_PLUS 1
#define RCCLX_HW_E4M3FN 1
#define RCCLX_HW_E5M2 1
#define RCCLX_HW_DECODE2_OCP 1

/* Two floats -> two bytes, a in bits 0..7 and b in bits 8..15 (PTX puts
 * its first source in the upper byte). */
RCCLX_DEVICE uint32_t rcclx_hw_encode2_e4m3fn(float a, float b) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(b), "f"(a));
  return r;
}
RCCLX_DEVICE uint32_t rcclx_hw_encode2_e5m2(float a, float b) {
  uint16_t r;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(b), "f"(a));
  return r;
}
RCCLX_DEVICE float rcclx_sm90_half_to_float(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
RCCLX_DEVICE float rcclx_hw_decode_e4m3fn(uint32_t byte) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((uint16_t)byte));
  return rcclx_sm90_half_to_float((uint16_t)h2);
}
RCCLX_DEVICE float rcclx_hw_decode_e5m2(uint32_t byte) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"((uint16_t)byte));
  return rcclx_sm90_half_to_float((uint16_t)h2);
}
/* Two codes (bits 0..7 and 8..15) in one convert: the low byte lands in the
 * low half of the result, as the single decodes above rely on. */
RCCLX_DEVICE void rcclx_sm90_halves_to_floats(uint32_t h2, float* lo, float* hi) {
  *lo = rcclx_sm90_half_to_float((uint16_t)h2);
  *hi = rcclx_sm90_half_to_float((uint16_t)(h2 >> 16));
}
RCCLX_DEVICE void rcclx_hw_decode2_e4m3fn(uint32_t two, float* lo, float* hi) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((uint16_t)two));
  rcclx_sm90_halves_to_floats(h2, lo, hi);
}
RCCLX_DEVICE void rcclx_hw_decode2_e5m2(uint32_t two, float* lo, float* hi) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"((uint16_t)two));
  rcclx_sm90_halves_to_floats(h2, lo, hi);
}
