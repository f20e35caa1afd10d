/* rcclx/mma_layout.h - where each lane's operands and results sit in the
 * warp-level 16 x 16 x 16 bf16 matrix multiply-accumulate that platform.h's
 * rcclx_mma_bf16 runs (D = A B + D, A 16 x 16 rows m / columns k, B 16 x 16
 * rows k / columns n, D fp32).  Plain arithmetic, host and device: the
 * device loads use these maps, and CPU tests check them exhaustively.
 *
 * Two layouts, one per matrix-unit family (facts from the vendors' ISA
 * documents; the GPU tests check the products against float64):
 *
 *   RCCLX_MMA_LAYOUT_CDNA  wave64, one v_mfma_f32_16x16x16_bf16 (gfx90a,
 *     gfx942, gfx950).  Lane l, element j < 4:
 *       A[l % 16][4 (l / 16) + j]   B[4 (l / 16) + j][l % 16]
 *       D[4 (l / 16) + j][l % 16]
 *   RCCLX_MMA_LAYOUT_NV  warp32, two mma.sync.m16n8k16.row.col bf16 (sm_80
 *     and up), the second on columns 8..15.  Lane l, g = l / 4, t = l % 4,
 *     element j < 8 (register j / 2 holds elements j & ~1 and j | 1):
 *       A[g + 8 ((j / 2) % 2)][2t + j % 2 + 8 (j / 4)]
 *       B[2t + j % 2 + 8 ((j / 2) % 2)][g + 8 (j / 4)]
 *       D[g + 8 ((j / 2) % 2)][2t + j % 2 + 8 (j / 4)]
 *
 * Both keep an operand's elements with consecutive j at consecutive k (2 on
 * NV, 4 on CDNA), so a lane reads them as one word from shared memory that
 * holds A row-major (k contiguous) and B column-major (k contiguous).
 */
#pragma once
#include <rcclx/platform.h>

#define RCCLX_MMA_LAYOUT_CDNA 0
#define RCCLX_MMA_LAYOUT_NV 1

/* Lanes in the warp that runs one MMA, and elements each lane holds of A,
 * of B and of D (16 x 16 / lanes). */
RCCLX_HOST_DEVICE int rcclx_mma_lanes(int layout) { return layout == RCCLX_MMA_LAYOUT_CDNA ? 64 : 32; }
RCCLX_HOST_DEVICE int rcclx_mma_elems(int layout) { return 256 / rcclx_mma_lanes(layout); }
/* Elements of one operand that sit at consecutive k in one lane: one
 * shared-memory word of 4 (NV) or 8 (CDNA) bytes. */
RCCLX_HOST_DEVICE int rcclx_mma_k_run(int layout) { return layout == RCCLX_MMA_LAYOUT_CDNA ? 4 : 2; }

/* Element j of lane `lane` is A[*m][*k]. */
RCCLX_HOST_DEVICE void rcclx_mma_a_at(int layout, int lane, int j, int* m, int* k) {
  if (layout == RCCLX_MMA_LAYOUT_CDNA) {
    *m = lane % 16;
    *k = 4 * (lane / 16) + j;
  } else {
    *m = lane / 4 + 8 * ((j / 2) % 2);
    *k = 2 * (lane % 4) + j % 2 + 8 * (j / 4);
  }
}
/* Element j of lane `lane` is B[*k][*n]. */
RCCLX_HOST_DEVICE void rcclx_mma_b_at(int layout, int lane, int j, int* k, int* n) {
  if (layout == RCCLX_MMA_LAYOUT_CDNA) {
    *k = 4 * (lane / 16) + j;
    *n = lane % 16;
  } else {
    *k = 2 * (lane % 4) + j % 2 + 8 * ((j / 2) % 2);
    *n = lane / 4 + 8 * (j / 4);
  }
}
/* Accumulator element j of lane `lane` is D[*m][*n]. */
RCCLX_HOST_DEVICE void rcclx_mma_d_at(int layout, int lane, int j, int* m, int* n) {
  if (layout == RCCLX_MMA_LAYOUT_CDNA) {
    *m = 4 * (lane / 16) + j;
    *n = lane % 16;
  } else {
    *m = lane / 4 + 8 * ((j / 2) % 2);
    *n = 2 * (lane % 4) + j % 2 + 8 * (j / 4);
  }
}
