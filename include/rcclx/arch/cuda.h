/* rcclx/arch/cuda.h - device primitives for NVIDIA GPUs (CUDA device pass).
 * Included only by rcclx/platform.h.  fp8 converts for sm_89+ live in
 * sm90.h. */
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#  include <rcclx/arch/sm90.h>
#endif

#define RCCLX_WARP_SIZE 32

/* Ordered flag accesses: a store (release) or load (acquire, relaxed) of a
 * 32- or 64-bit word (T, its PTX type and register constraint) at a scope.
 * `.sys` scope is what peers on other GPUs need (CI greps the PTX for it);
 * `.gpu` is enough when every rank runs on this one GPU (the _dev ones). */
#define RCCLX_CUDA_ST_ORDERED(name, T, op, c)                      \
  RCCLX_DEVICE void name(T* p, T v) {                              \
    asm volatile(op " [%0], %1;" ::"l"(p), c(v) : "memory");       \
  }
#define RCCLX_CUDA_LD_ORDERED(name, T, op, c)                      \
  RCCLX_DEVICE T name(const T* p) {                                \
    T v;                                                           \
    asm volatile(op " %0, [%1];" : "=" c(v) : "l"(p) : "memory");  \
    return v;                                                      \
  }
RCCLX_CUDA_ST_ORDERED(rcclx_st_release_sys_u32, uint32_t, "st.release.sys.global.u32", "r")
RCCLX_CUDA_LD_ORDERED(rcclx_ld_acquire_sys_u32, uint32_t, "ld.acquire.sys.global.u32", "r")
RCCLX_CUDA_LD_ORDERED(rcclx_ld_relaxed_sys_u32, uint32_t, "ld.relaxed.sys.global.u32", "r")
RCCLX_CUDA_ST_ORDERED(rcclx_st_release_dev_u32, uint32_t, "st.release.gpu.global.u32", "r")
RCCLX_CUDA_LD_ORDERED(rcclx_ld_acquire_dev_u32, uint32_t, "ld.acquire.gpu.global.u32", "r")
/* A counter in global memory, read afresh (volatile: no ordering; a plain
 * C load, so the compiler may still schedule it beside others). */
RCCLX_DEVICE uint32_t rcclx_ld_volatile_u32(const uint32_t* p) { return *(const volatile uint32_t*)p; }
/* A plain store of such a counter (a C store). */
RCCLX_DEVICE void rcclx_st_u32(uint32_t* p, uint32_t v) { *p = v; }
/* 64-bit words (a barrier's arrival: epoch and fingerprint together). */
RCCLX_CUDA_ST_ORDERED(rcclx_st_release_sys_u64, uint64_t, "st.release.sys.global.u64", "l")
RCCLX_CUDA_LD_ORDERED(rcclx_ld_acquire_sys_u64, uint64_t, "ld.acquire.sys.global.u64", "l")
RCCLX_CUDA_ST_ORDERED(rcclx_st_release_dev_u64, uint64_t, "st.release.gpu.global.u64", "l")
RCCLX_CUDA_LD_ORDERED(rcclx_ld_acquire_dev_u64, uint64_t, "ld.acquire.gpu.global.u64", "l")
/* Relaxed 64-bit words (the LL protocol's tagged data: single-copy atomic). */
RCCLX_CUDA_ST_ORDERED(rcclx_st_relaxed_sys_u64, uint64_t, "st.relaxed.sys.global.u64", "l")
RCCLX_CUDA_LD_ORDERED(rcclx_ld_relaxed_sys_u64, uint64_t, "ld.relaxed.sys.global.u64", "l")
RCCLX_CUDA_ST_ORDERED(rcclx_st_relaxed_dev_u64, uint64_t, "st.relaxed.gpu.global.u64", "l")
RCCLX_CUDA_LD_ORDERED(rcclx_ld_relaxed_dev_u64, uint64_t, "ld.relaxed.gpu.global.u64", "l")
/* Two such words at once (a 16-byte aligned pair: .v2.u64 is two 64-bit
 * accesses, each single-copy atomic). */
#define RCCLX_CUDA_PAIR(st, ld, scope)                                                         \
  RCCLX_DEVICE void st(uint64_t* p, uint64_t a, uint64_t b) {                                  \
    asm volatile("st.relaxed." scope ".global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) \
                 : "memory");                                                                  \
  }                                                                                            \
  RCCLX_DEVICE void ld(const uint64_t* p, uint64_t* a, uint64_t* b) {                          \
    asm volatile("ld.relaxed." scope ".global.v2.u64 {%0, %1}, [%2];"                          \
                 : "=l"(*a), "=l"(*b)                                                          \
                 : "l"(p)                                                                      \
                 : "memory");                                                                  \
  }
RCCLX_CUDA_PAIR(rcclx_st_relaxed_sys_u64x2, rcclx_ld_relaxed_sys_u64x2, "sys")
RCCLX_CUDA_PAIR(rcclx_st_relaxed_dev_u64x2, rcclx_ld_relaxed_dev_u64x2, "gpu")
#undef RCCLX_CUDA_PAIR
#undef RCCLX_CUDA_ST_ORDERED
#undef RCCLX_CUDA_LD_ORDERED
RCCLX_DEVICE void rcclx_fence_acq_rel_sys(void) {
  asm volatile("fence.acq_rel.sys;" ::: "memory");
}

/* Programmatic dependent launch (griddepcontrol, sm_90+); both return at
 * once in a kernel launched without it. */
RCCLX_DEVICE void rcclx_grid_dependency_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
RCCLX_DEVICE void rcclx_grid_dependents_launch(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* The 16-byte loads, one PTX form each (the qualifier is the point):
 *   rcclx_ld16              ld.global              plain
 *   rcclx_ld16_volatile     ld.volatile.global     never cached (system scope)
 *   rcclx_ld16_relaxed_dev  ld.relaxed.gpu.global  coherent at device scope:
 *                           enough when every writer runs on this GPU, and
 *                           cheaper than .volatile
 *   rcclx_ld16_nt           ld.global.cs           streaming, evict first
 *                                                  (a read-once peer slice) */
#define RCCLX_CUDA_LD16(name, op)                                                \
  RCCLX_DEVICE rcclx_vec16 name(const void* p) {                                 \
    rcclx_vec16 r;                                                               \
    asm volatile(op " {%0,%1,%2,%3}, [%4];"                                      \
                 : "=r"(r.w[0]), "=r"(r.w[1]), "=r"(r.w[2]), "=r"(r.w[3])        \
                 : "l"(p) : "memory");                                           \
    return r;                                                                    \
  }
RCCLX_CUDA_LD16(rcclx_ld16, "ld.global.v4.u32")
RCCLX_CUDA_LD16(rcclx_ld16_volatile, "ld.volatile.global.v4.u32")
RCCLX_CUDA_LD16(rcclx_ld16_relaxed_dev, "ld.relaxed.gpu.global.v4.u32")
RCCLX_CUDA_LD16(rcclx_ld16_nt, "ld.global.cs.v4.u32")
#undef RCCLX_CUDA_LD16
/* Predicated: the compiler counts each load's registers on its own, so a
 * load under a condition costs nothing else here. */
RCCLX_DEVICE rcclx_vec16 rcclx_ld16_or_zero(const void* base, uint32_t off, int ok) {
  const rcclx_vec16 zero = {{0u, 0u, 0u, 0u}};
  return ok ? rcclx_ld16((const char*)base + off) : zero;
}
/* A scheduling fence for CDNA's compiler (rcclx/platform.h); nvcc tracks
 * each load's registers on its own and needs none. */
RCCLX_DEVICE void rcclx_sched_barrier(void) {}
RCCLX_DEVICE void rcclx_st16(void* p, rcclx_vec16 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.w[0]),
               "r"(v.w[1]), "r"(v.w[2]), "r"(v.w[3])
               : "memory");
}

RCCLX_DEVICE float rcclx_shfl_xor_f32(float v, int mask, int width) {
  return __shfl_xor_sync(0xffffffffu, v, mask, width);
}

RCCLX_DEVICE uint64_t rcclx_wall_ns(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

RCCLX_DEVICE float rcclx_f16_to_f32(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
RCCLX_DEVICE uint16_t rcclx_f32_to_f16_rn(float f) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

/* a * b rounded once, never fused into a following add (so device sums
 * match a host reference bit for bit). */
RCCLX_DEVICE float rcclx_mul_rn(float a, float b) { return __fmul_rn(a, b); }

RCCLX_DEVICE float rcclx_clampf(float x, float lo, float hi) {
  return fminf(fmaxf(x, lo), hi); /* two instructions; NaN must not reach it */
}

/* Matrix unit (rcclx/mma.h): one 16 x 16 x 16 bf16 step is two
 * mma.sync.m16n8k16 (sm_80 and up), the second on columns 8..15; the lane
 * layout is rcclx/mma_layout.h's RCCLX_MMA_LAYOUT_NV.  A fragment is 4
 * registers of 2 bf16 (lower k in the low half). */
#define RCCLX_MMA_LAYOUT RCCLX_MMA_LAYOUT_NV
#define RCCLX_MMA_ELEMS 8
typedef struct rcclx_mma_frag {
  uint32_t w[4];
} rcclx_mma_frag;
RCCLX_DEVICE void rcclx_mma_bf16(float (&d)[RCCLX_MMA_ELEMS], const rcclx_mma_frag& a, const rcclx_mma_frag& b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#  define RCCLX_CUDA_MMA_M16N8K16(d0, d1, d2, d3, b0, b1)                                                 \
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
        "{%0,%1,%2,%3};"                                                                             \
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)                                                     \
        : "r"(a.w[0]), "r"(a.w[1]), "r"(a.w[2]), "r"(a.w[3]), "r"(b0), "r"(b1))
  RCCLX_CUDA_MMA_M16N8K16(d[0], d[1], d[2], d[3], b.w[0], b.w[1]);
  RCCLX_CUDA_MMA_M16N8K16(d[4], d[5], d[6], d[7], b.w[2], b.w[3]);
#  undef RCCLX_CUDA_MMA_M16N8K16
#elif defined(__CUDA_ARCH__)
  (void)d, (void)a, (void)b;
  __trap(); /* no bf16 tensor-core MMA below sm_80: fail loudly, never a wrong sum */
#else
  (void)d, (void)a, (void)b;
#endif
}
