/* rcclx/arch/gfx950.h - MI350 (gfx950) fp8 hardware converts.
 * Included only by rcclx/arch/amdgcn.h.
 *
 * UNCOMPILED: clang-19 (what CI has) cannot target gfx950.  This path needs
 * ROCm >= 6.4's clang and has never been built or run by this project.
 * On gfx950 the same `v_cvt_pk_fp8_f32` / `v_cvt_pk_bf8_f32` produce the
 * OCP formats (E4M3FN, E5M2), still without saturation, so each encoder
 * clamps to +-448 / +-57344 first and routes NaN around the clamp (the
 * canonical OCP NaN is 0x7F).  Same contract as gfx942.h.
 */
#pragma once

#define RCCLX_ARCH_GFX950 1
#define RCCLX_WARP_SIZE 64
#define RCCLX_HW_E4M3FN 1
#define RCCLX_HW_E5M2 1

RCCLX_DEVICE uint32_t rcclx_gfx950_nan_fixup(float x, uint32_t byte) {
  return x != x ? 0x7fu : byte;
}
RCCLX_DEVICE uint32_t rcclx_hw_encode2_e4m3fn(float a, float b) {
  uint32_t w = (uint32_t)__builtin_amdgcn_cvt_pk_fp8_f32(
      __builtin_amdgcn_fmed3f(a, -448.0f, 448.0f),
      __builtin_amdgcn_fmed3f(b, -448.0f, 448.0f), 0, false);
  return rcclx_gfx950_nan_fixup(a, w & 0xffu) |
         (rcclx_gfx950_nan_fixup(b, (w >> 8) & 0xffu) << 8);
}
RCCLX_DEVICE uint32_t rcclx_hw_encode2_e5m2(float a, float b) {
  uint32_t w = (uint32_t)__builtin_amdgcn_cvt_pk_bf8_f32(
      __builtin_amdgcn_fmed3f(a, -57344.0f, 57344.0f),
      __builtin_amdgcn_fmed3f(b, -57344.0f, 57344.0f), 0, false);
  return rcclx_gfx950_nan_fixup(a, w & 0xffu) |
         (rcclx_gfx950_nan_fixup(b, (w >> 8) & 0xffu) << 8);
}
RCCLX_DEVICE float rcclx_hw_decode_e4m3fn(uint32_t byte) {
  return __builtin_amdgcn_cvt_f32_fp8((int)byte, 0);
}
RCCLX_DEVICE float rcclx_hw_decode_e5m2(uint32_t byte) {
  return __builtin_amdgcn_cvt_f32_bf8((int)byte, 0);
}
