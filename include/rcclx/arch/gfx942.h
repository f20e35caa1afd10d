/* rcclx/arch/gfx942.h - MI300 (gfx940/941/942) fp8 hardware converts.
 * Included only by rcclx/arch/amdgcn.h.
 *
 * gfx942's fp8/bf8 are the FNUZ formats (E4M3FNUZ, E5M2FNUZ).
 * `v_cvt_pk_fp8_f32` rounds to nearest even but does NOT saturate (an
 * out-of-range value becomes NaN, 0x80) and the LLVM 19 assembler has no
 * clamp modifier for it.  So each encoder here clamps with v_med3 first,
 * routes NaN around the clamp, and maps a 0x80 that is not a NaN input to
 * 0x00 (FNUZ has no -0).  Contract, as for every arch file: the results are
 * bit-identical to rcclx_fp8_encode_sw / rcclx_fp8_decode_sw (a NaN decodes
 * to some NaN).  CI greps the ISA for the v_med3_f32 before v_cvt_pk_fp8_f32.
 */
#pragma once

#define RCCLX_ARCH_GFX942 1
#define RCCLX_WARP_SIZE 64
#define RCCLX_HW_E4M3FNUZ 1
#define RCCLX_HW_E5M2FNUZ 1

RCCLX_DEVICE uint32_t rcclx_gfx942_fnuz_fixup(float x, uint32_t byte) {
  return x != x ? 0x80u : (byte == 0x80u ? 0u : byte);
}

/* Two floats -> two bytes, a in bits 0..7 and b in bits 8..15. */
RCCLX_DEVICE uint32_t rcclx_hw_encode2_e4m3fnuz(float a, float b) {
  uint32_t w = (uint32_t)__builtin_amdgcn_cvt_pk_fp8_f32(
      __builtin_amdgcn_fmed3f(a, -240.0f, 240.0f),
      __builtin_amdgcn_fmed3f(b, -240.0f, 240.0f), 0, false);
  return rcclx_gfx942_fnuz_fixup(a, w & 0xffu) |
         (rcclx_gfx942_fnuz_fixup(b, (w >> 8) & 0xffu) << 8);
}
RCCLX_DEVICE uint32_t rcclx_hw_encode2_e5m2fnuz(float a, float b) {
  uint32_t w = (uint32_t)__builtin_amdgcn_cvt_pk_bf8_f32(
      __builtin_amdgcn_fmed3f(a, -57344.0f, 57344.0f),
      __builtin_amdgcn_fmed3f(b, -57344.0f, 57344.0f), 0, false);
  return rcclx_gfx942_fnuz_fixup(a, w & 0xffu) |
         (rcclx_gfx942_fnuz_fixup(b, (w >> 8) & 0xffu) << 8);
}
RCCLX_DEVICE float rcclx_hw_decode_e4m3fnuz(uint32_t byte) {
  return __builtin_amdgcn_cvt_f32_fp8((int)byte, 0);
}
RCCLX_DEVICE float rcclx_hw_decode_e5m2fnuz(uint32_t byte) {
  return __builtin_amdgcn_cvt_f32_bf8((int)byte, 0);
}
