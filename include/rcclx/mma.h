/* rcclx/mma.h - a portable warp-level bf16 matrix multiply-accumulate, for
 * kernels that fuse rcclx into their own GEMM (examples/gemm_allreduce.h).
 * It reaches the matrix units through platform.h: CDNA's MFMA, NVIDIA's
 * tensor cores (mma.sync).
 *
 *   rcclx_mma_frag a, b;                   a lane's share of a 16 x 16 operand
 *   rcclx_mma_load_a(&a, s, ld);           A[m][k] = s[m * ld + k]  (shared)
 *   rcclx_mma_load_b(&b, s, ld);           B[k][n] = s[n * ld + k]  (shared)
 *   float d[RCCLX_MMA_ELEMS];              a lane's share of D, fp32
 *   rcclx_mma_bf16(d, a, b);               D += A B
 *   rcclx_mma_d_at(RCCLX_MMA_LAYOUT, rcclx_mma_lane(), j, &m, &n)
 *                                          d[j] is D[m][n]
 *
 * Who may call: every lane of a warp (64 on CDNA, 32 on NVIDIA), converged,
 * in a 1-D block.  Alignment: s and 2 * ld multiples of 8 bytes (B's k runs
 * are read as one word per lane).  Numbers: the products of bf16 are exact
 * in fp32; the unit adds them in its own fixed order, which is not a
 * sequential fp32 sum in k but is the same for the same inputs, so every
 * kernel built on the same tile code gives the same bits.
 *
 * Chips: NVIDIA sm_80 and up (sm_90 compiled and run); CDNA gfx942 (compiled
 * to ISA by CI, never run: no AMD GPU here) and gfx950 (uncompiled: clang-19
 * cannot target it).  Elsewhere rcclx_mma_bf16 traps.
 */
#pragma once
#include <rcclx/platform.h>
#include <rcclx/types.h>
#include <rcclx/mma_layout.h>

#if defined(RCCLX_GPU_LANG)
/* This thread's lane in its warp (1-D block). */
RCCLX_DEVICE int rcclx_mma_lane(void) { return (int)threadIdx.x % RCCLX_WARP_SIZE; }

/* Fragment word q of f from the k run that starts at p (the run's bytes are
 * one 4- or 8-byte aligned word). */
RCCLX_DEVICE void rcclx_mma_load_run(rcclx_mma_frag* f, int q, const rcclx_bf16* p) {
  if (rcclx_mma_k_run(RCCLX_MMA_LAYOUT) == 4) {
    const uint2 v = *(const uint2*)p;
    f->w[2 * q] = v.x;
    f->w[2 * q + 1] = v.y;
  } else {
    f->w[q] = *(const uint32_t*)p;
  }
}

/* One operand's 16 x 16 block from shared memory that holds it with k
 * contiguous: row m of A (is_b 0) or column n of B (is_b 1) at
 * s + m * ld (s + n * ld).  Whole warp; s and 2 * ld multiples of 8 bytes. */
RCCLX_DEVICE void rcclx_mma_load_k_major(rcclx_mma_frag* f, const rcclx_bf16* s, int ld, int is_b) {
  const int lane = rcclx_mma_lane(), run = rcclx_mma_k_run(RCCLX_MMA_LAYOUT);
  RCCLX_UNROLL
  for (int q = 0; q < RCCLX_MMA_ELEMS / run; ++q) {
    int mn, k;
    if (is_b) rcclx_mma_b_at(RCCLX_MMA_LAYOUT, lane, q * run, &k, &mn);
    else rcclx_mma_a_at(RCCLX_MMA_LAYOUT, lane, q * run, &mn, &k);
    rcclx_mma_load_run(f, q, s + mn * ld + k);
  }
}
/* A row-major (A[m][k] = s[m * ld + k]); B column-major (B[k][n] =
 * s[n * ld + k]). */
RCCLX_DEVICE void rcclx_mma_load_a(rcclx_mma_frag* f, const rcclx_bf16* s, int ld) { rcclx_mma_load_k_major(f, s, ld, 0); }
RCCLX_DEVICE void rcclx_mma_load_b(rcclx_mma_frag* f, const rcclx_bf16* s, int ld) { rcclx_mma_load_k_major(f, s, ld, 1); }
#endif
