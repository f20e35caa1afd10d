/* rcclx/arch/amdgcn.h - device primitives for AMD GPUs (HIP device pass).
 * Included only by rcclx/platform.h.  The chip-specific fp8 converts live in
 * gfx942.h / gfx950.h, chosen here by the one feature macro clang sets. */
#pragma once

#if defined(__gfx942__) || defined(__gfx940__) || defined(__gfx941__)
#  include <rcclx/arch/gfx942.h>
#elif defined(__gfx950__)
#  include <rcclx/arch/gfx950.h> /* not compiled by clang-19: see the file */
#endif

#ifndef RCCLX_WARP_SIZE
#  define RCCLX_WARP_SIZE 64 /* every CDNA target rcclx supports runs wave64 */
#endif

typedef uint32_t rcclx_amd_v4u __attribute__((ext_vector_type(4)));

/* Every memory primitive below takes a pointer to global memory (this
 * GPU's or a peer's, mapped), never to shared memory, as the `.global`
 * instructions of the CUDA ones require.  Seen through the global address
 * space, accesses lower to global_* instead of flat_* instructions.  A
 * flat access may be one to shared memory, so it counts against both
 * vmcnt and lgkmcnt, cannot take an SGPR base, and once one is in a kernel
 * the compiler's waits around it grow conservative: one flat counter read
 * in the fused GEMM made it wait for every load in flight (s_waitcnt
 * vmcnt(0)) at the top of each k step. */
#define RCCLX_AMD_GLOBAL(T, p) ((__attribute__((address_space(1))) T*)(p))

/* System scope ("" in clang's AMDGPU sync scopes) is what peers on other
 * GPUs need.  On gfx942 a release lowers to `buffer_wbl2 sc0 sc1` before an
 * `sc0 sc1` store, an acquire to an `sc0 sc1` load followed by
 * `buffer_inv sc0 sc1`; CI greps the ISA for exactly that. */
RCCLX_DEVICE void rcclx_st_release_sys_u32(uint32_t* p, uint32_t v) {
  __hip_atomic_store(RCCLX_AMD_GLOBAL(uint32_t, p), v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}
RCCLX_DEVICE uint32_t rcclx_ld_acquire_sys_u32(const uint32_t* p) {
  return __hip_atomic_load(RCCLX_AMD_GLOBAL(const uint32_t, p), __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
RCCLX_DEVICE uint32_t rcclx_ld_relaxed_sys_u32(const uint32_t* p) {
  return __hip_atomic_load(RCCLX_AMD_GLOBAL(const uint32_t, p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
RCCLX_DEVICE void rcclx_fence_acq_rel_sys(void) {
  __builtin_amdgcn_fence(__ATOMIC_ACQ_REL, "");
}
/* Agent scope: enough when every rank runs on this one GPU (all its XCDs;
 * gfx942 release is `buffer_wbl2 sc1`, acquire `buffer_inv sc1`). */
RCCLX_DEVICE void rcclx_st_release_dev_u32(uint32_t* p, uint32_t v) {
  __hip_atomic_store(RCCLX_AMD_GLOBAL(uint32_t, p), v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
}
RCCLX_DEVICE uint32_t rcclx_ld_acquire_dev_u32(const uint32_t* p) {
  return __hip_atomic_load(RCCLX_AMD_GLOBAL(const uint32_t, p), __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
}

/* A counter in global memory, read afresh (volatile: no ordering). */
RCCLX_DEVICE uint32_t rcclx_ld_volatile_u32(const uint32_t* p) { return *RCCLX_AMD_GLOBAL(const volatile uint32_t, p); }
/* A plain store of such a counter. */
RCCLX_DEVICE void rcclx_st_u32(uint32_t* p, uint32_t v) { *RCCLX_AMD_GLOBAL(uint32_t, p) = v; }

/* 64-bit words (a barrier's arrival: epoch and fingerprint together), the
 * same orderings and scopes. */
RCCLX_DEVICE void rcclx_st_release_sys_u64(uint64_t* p, uint64_t v) {
  __hip_atomic_store(RCCLX_AMD_GLOBAL(uint64_t, p), v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}
RCCLX_DEVICE uint64_t rcclx_ld_acquire_sys_u64(const uint64_t* p) {
  return __hip_atomic_load(RCCLX_AMD_GLOBAL(const uint64_t, p), __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
RCCLX_DEVICE void rcclx_st_release_dev_u64(uint64_t* p, uint64_t v) {
  __hip_atomic_store(RCCLX_AMD_GLOBAL(uint64_t, p), v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
}
RCCLX_DEVICE uint64_t rcclx_ld_acquire_dev_u64(const uint64_t* p) {
  return __hip_atomic_load(RCCLX_AMD_GLOBAL(const uint64_t, p), __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
}
/* Relaxed 64-bit words (the LL protocol's tagged data: single-copy atomic). */
RCCLX_DEVICE void rcclx_st_relaxed_sys_u64(uint64_t* p, uint64_t v) {
  __hip_atomic_store(RCCLX_AMD_GLOBAL(uint64_t, p), v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
RCCLX_DEVICE uint64_t rcclx_ld_relaxed_sys_u64(const uint64_t* p) {
  return __hip_atomic_load(RCCLX_AMD_GLOBAL(const uint64_t, p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
RCCLX_DEVICE void rcclx_st_relaxed_dev_u64(uint64_t* p, uint64_t v) {
  __hip_atomic_store(RCCLX_AMD_GLOBAL(uint64_t, p), v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
RCCLX_DEVICE uint64_t rcclx_ld_relaxed_dev_u64(const uint64_t* p) {
  return __hip_atomic_load(RCCLX_AMD_GLOBAL(const uint64_t, p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
/* Two such words at once (a 16-byte aligned pair). */
RCCLX_DEVICE void rcclx_st_relaxed_sys_u64x2(uint64_t* p, uint64_t a, uint64_t b) {
  rcclx_st_relaxed_sys_u64(p, a);
  rcclx_st_relaxed_sys_u64(p + 1, b);
}
RCCLX_DEVICE void rcclx_ld_relaxed_sys_u64x2(const uint64_t* p, uint64_t* a, uint64_t* b) {
  *a = rcclx_ld_relaxed_sys_u64(p);
  *b = rcclx_ld_relaxed_sys_u64(p + 1);
}
RCCLX_DEVICE void rcclx_st_relaxed_dev_u64x2(uint64_t* p, uint64_t a, uint64_t b) {
  rcclx_st_relaxed_dev_u64(p, a);
  rcclx_st_relaxed_dev_u64(p + 1, b);
}
RCCLX_DEVICE void rcclx_ld_relaxed_dev_u64x2(const uint64_t* p, uint64_t* a, uint64_t* b) {
  *a = rcclx_ld_relaxed_dev_u64(p);
  *b = rcclx_ld_relaxed_dev_u64(p + 1);
}

/* AMD has no programmatic dependent launch: a kernel starts after the
 * stream's previous one completed, so there is nothing to wait for. */
RCCLX_DEVICE void rcclx_grid_dependency_wait(void) {}
RCCLX_DEVICE void rcclx_grid_dependents_launch(void) {}

RCCLX_DEVICE rcclx_vec16 rcclx_amd_from_v4u(rcclx_amd_v4u x) {
  rcclx_vec16 r;
  r.w[0] = x.x; r.w[1] = x.y; r.w[2] = x.z; r.w[3] = x.w;
  return r;
}
RCCLX_DEVICE rcclx_vec16 rcclx_ld16(const void* p) {
  return rcclx_amd_from_v4u(*RCCLX_AMD_GLOBAL(const rcclx_amd_v4u, p));
}
RCCLX_DEVICE rcclx_vec16 rcclx_ld16_volatile(const void* p) {
  return rcclx_amd_from_v4u(*RCCLX_AMD_GLOBAL(const volatile rcclx_amd_v4u, p));
}
/* No device-scope 16-byte coherent load in clang's builtins: the volatile
 * (system-coherent) one serves. */
RCCLX_DEVICE rcclx_vec16 rcclx_ld16_relaxed_dev(const void* p) { return rcclx_ld16_volatile(p); }
RCCLX_DEVICE rcclx_vec16 rcclx_ld16_nt(const void* p) {
  return rcclx_amd_from_v4u(__builtin_nontemporal_load(RCCLX_AMD_GLOBAL(const rcclx_amd_v4u, p)));
}
/* A raw buffer load (CDNA's V#: base, no stride, 2^31 bytes in range,
 * gfx9's 32-bit data format in the last dword): a lane whose offset is out
 * of range reads zero and touches no memory, and nothing branches around
 * the load, so the compiler keeps counting the loads in flight (a load
 * under a branch that may skip it made it wait for all of them: s_waitcnt
 * vmcnt(0) at the top of the example GEMM's pipeline). */
RCCLX_DEVICE rcclx_vec16 rcclx_ld16_or_zero(const void* base, uint32_t off, int ok) {
  const __amdgpu_buffer_rsrc_t r = __builtin_amdgcn_make_buffer_rsrc((void*)base, 0, (int)0x80000000u, 0x00020000);
  return rcclx_amd_from_v4u(__builtin_amdgcn_raw_buffer_load_b128(r, ok ? off : 0x80000000u, 0, 0));
}
/* The compiler's scheduler moves nothing across this point (no memory
 * ordering: instruction order only). */
RCCLX_DEVICE void rcclx_sched_barrier(void) { __builtin_amdgcn_sched_barrier(0); }
RCCLX_DEVICE void rcclx_st16(void* p, rcclx_vec16 v) {
  rcclx_amd_v4u x = {v.w[0], v.w[1], v.w[2], v.w[3]};
  *RCCLX_AMD_GLOBAL(rcclx_amd_v4u, p) = x;
}

RCCLX_DEVICE float rcclx_shfl_xor_f32(float v, int mask, int width) {
  return __shfl_xor(v, mask, width);
}

/* s_memrealtime counts a constant 100 MHz clock on gfx9 parts. */
RCCLX_DEVICE uint64_t rcclx_wall_ns(void) {
  return (uint64_t)__builtin_amdgcn_s_memrealtime() * 10u;
}

RCCLX_DEVICE float rcclx_f16_to_f32(uint16_t h) {
  return (float)__builtin_bit_cast(_Float16, h);
}
RCCLX_DEVICE uint16_t rcclx_f32_to_f16_rn(float f) {
  return __builtin_bit_cast(uint16_t, (_Float16)f);
}

/* a * b rounded once, never fused into a following add (clang contracts
 * across statements in HIP by default; the pragma takes this multiply out). */
RCCLX_DEVICE float rcclx_mul_rn(float a, float b) {
#pragma clang fp contract(off)
  return a * b;
}

/* Clamp into [lo, hi] in one v_med3_f32 (NaN must be routed around it). */
RCCLX_DEVICE float rcclx_clampf(float x, float lo, float hi) {
  return __builtin_amdgcn_fmed3f(x, lo, hi);
}

/* Matrix unit (rcclx/mma.h): one v_mfma_f32_16x16x16_bf16 per 16 x 16 x 16
 * bf16 step (CDNA2 and up); the lane layout is rcclx/mma_layout.h's
 * RCCLX_MMA_LAYOUT_CDNA.  A fragment is 4 bf16 at consecutive k (2
 * registers, lowest k in the low half of the first). */
#define RCCLX_MMA_LAYOUT RCCLX_MMA_LAYOUT_CDNA
#define RCCLX_MMA_ELEMS 4
typedef struct rcclx_mma_frag {
  uint32_t w[2];
} rcclx_mma_frag;
RCCLX_DEVICE void rcclx_mma_bf16(float (&d)[RCCLX_MMA_ELEMS], const rcclx_mma_frag& a, const rcclx_mma_frag& b) {
#if defined(RCCLX_ARCH_GFX942) || defined(RCCLX_ARCH_GFX950)
  typedef short v4s __attribute__((ext_vector_type(4)));
  typedef float v4f __attribute__((ext_vector_type(4)));
  v4f c = {d[0], d[1], d[2], d[3]};
  c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(v4s, a), __builtin_bit_cast(v4s, b), c, 0, 0, 0);
  d[0] = c[0], d[1] = c[1], d[2] = c[2], d[3] = c[3];
#elif defined(RCCLX_DEVICE_PASS)
  (void)d, (void)a, (void)b;
  __builtin_trap(); /* a chip rcclx has no matrix-unit path for: fail loudly */
#else
  (void)d, (void)a, (void)b;
#endif
}
