// The FP8 form of the fused GEMM + AllReduce (read examples/gemm_allreduce.h
// first): the epilogue quantizes its output tile, block-scaled, into the
// rank's registered input region; the reducer dequantizes every rank's copy
// and sums in fp32.  Half the bytes in the buffer and on the links.
//
//   - Wire layout: the message is the whole M x N output, laid out as
//     rcclx/fp8/pack.h's chunk (scales of all groups, then the codes), cut
//     into groups of w.block_size (32 or 64) consecutive elements.  A tile row
//     slice (GEMM_BN = 64 elements) is one or two whole groups, so a tile
//     owns its groups outright.
//   - Numbers: Y_r is rounded to bf16 first (what a bf16 GEMM stores), then
//     quantized exactly as rcclx's low-precision AllReduce quantizes a bf16
//     input, and summed in rank order: the result is bitwise that of
//     gemm_bf16 followed by rcclx_lowp_allreduce(RCCLX_ALGO_FLAT) with the
//     same wire (tests/gpu/test_fusion.cpp checks it).
#pragma once
#include "gemm_allreduce.h"

// Lanes that hold one tile row: 8 values each.
#define GEMM_ROW_LANES (GEMM_BN / 8)

// FMT: the wire's FP8 format as a constant for the encoder (a run-time
// format there cost CDNA 48 bytes of scratch); the decoder keeps the
// run-time one (a constant there made this kernel 1.5x slower on the H200:
// bench/RESULTS.md, runs 11-12).
template <int FMT>
__global__ void __launch_bounds__(GEMM_THREADS)
    gemm_allreduce_fused_fp8_kernel(rcclx_dev_comm c, const rcclx_bf16* X, const rcclx_bf16* W, rcclx_bf16* out,
                                    int M, int N, int K, rcclx_wire w) {
  rcclx_wire w_enc = w;
  w_enc.format = FMT;
  __shared__ __align__(16) gemm_tile_bf16 tile;
  const int tiles_n = N / GEMM_BN, tiles = gemm_tiles(M, N);
  const size_t m = (size_t)M * N, in_off = rcclx_region_offset(&c, RCCLX_REGION_INPUT);
  char* seg = rcclx_input_region(&c, c.rank);
  const int lane8 = (int)threadIdx.x % GEMM_ROW_LANES, gl = (lane8 * 8 % w.block_size) / 8;
  for (int t = (int)blockIdx.x; t < tiles; t += (int)gridDim.x) {
    const int tm = t / tiles_n, tn = t % tiles_n;
    const uint32_t e = rcclx_tile_begin(c, t);
    gemm_tile_compute(X, W, M, N, K, tm, tn, tile);
    // ADAPT: your epilogue hands rcclx_lowp_put_group 8 consecutive values
    // per lane, B/8 lanes per group, every lane of the warp present.
    for (int r0 = 0; r0 < GEMM_BM; r0 += GEMM_THREADS / GEMM_ROW_LANES) {
      const int row = r0 + (int)threadIdx.x / GEMM_ROW_LANES, grow = tm * GEMM_BM + row;
      float x[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) x[i] = rcclx_to_f32(tile[row][lane8 * 8 + i]);
      const size_t j = ((size_t)grow * N + (size_t)tn * GEMM_BN + (size_t)lane8 * 8) / (size_t)w.block_size;
      rcclx_lowp_put_group<rcclx_bf16>(seg, m, j, gl, grow < M, x, w_enc);
    }
    rcclx_tile_publish(c, t, e);
    if (rcclx_tile_wait(c, t, e)) return;  // watchdog fired
    for (int r0 = 0; r0 < GEMM_BM; r0 += GEMM_THREADS / GEMM_ROW_LANES) {
      const int grow = tm * GEMM_BM + r0 + (int)threadIdx.x / GEMM_ROW_LANES;
      if (grow >= M) continue;
      const size_t i0 = (size_t)grow * N + (size_t)tn * GEMM_BN + (size_t)lane8 * 8;
      float s[8];
      rcclx_lowp_sum_group<rcclx_bf16>(c, in_off, 0, m, i0 / (size_t)w.block_size, gl, w, s);
      rcclx_lowp_store8(out, i0, m, s);
    }
    rcclx_tile_done(c, t, e);
  }
  for (int t = (int)blockIdx.x; t < tiles; t += (int)gridDim.x)
    if (rcclx_tile_wait_done(c, t, rcclx_tile_begin(c, t) - 1u)) return;
}

// Every rank calls it with the same M, N, K and wire (an FP8 format, block
// size 32 or 64, either scale kind).  The packed output must fit the input
// region: rcclx_fp8_packed_bytes(M * N, ...) bytes.
static inline rcclx_status gemm_allreduce_fused_fp8(rcclx_comm* comm, const rcclx_bf16* X, const rcclx_bf16* W,
                                                    rcclx_bf16* out, int M, int N, int K, rcclx_wire w,
                                                    hipStream_t stream) {
  if (!comm || !comm->kind) return RCCLX_ERR_NULL_POINTER;
  RCCLX_TRY(gemm_check(X, W, out, M, N, K));
  if (!rcclx_wire_valid(&w) || w.format == RCCLX_WIRE_RAW || (w.block_size != 32 && w.block_size != 64))
    return RCCLX_ERR_INVALID_ARGUMENT;
  const rcclx_dev_comm& v = comm->view;
  const int tiles = gemm_tiles(M, N);
  if (rcclx_fp8_packed_bytes((size_t)M * N, w.block_size, w.scale) > v.region_bytes || tiles > RCCLX_MAX_TILES)
    return RCCLX_ERR_BUFFER_TOO_SMALL;
  void (*kernel)(rcclx_dev_comm, const rcclx_bf16*, const rcclx_bf16*, rcclx_bf16*, int, int, int, rcclx_wire) =
      w.format == RCCLX_FP8_E4M3FN     ? gemm_allreduce_fused_fp8_kernel<RCCLX_FP8_E4M3FN>
      : w.format == RCCLX_FP8_E4M3FNUZ ? gemm_allreduce_fused_fp8_kernel<RCCLX_FP8_E4M3FNUZ>
      : w.format == RCCLX_FP8_E5M2     ? gemm_allreduce_fused_fp8_kernel<RCCLX_FP8_E5M2>
                                       : gemm_allreduce_fused_fp8_kernel<RCCLX_FP8_E5M2FNUZ>;
  // One memo per kernel (w.format is one of the 4 FP8 formats here): the
  // runtime is asked once per device.
  static rcclx_occupancy_memo memo[4];
  int grid = 0;  // persistent: co-resident with the other ranks' grids
  RCCLX_TRY(rcclx_comm_persistent_grid(comm, (const void*)kernel, GEMM_THREADS, tiles, &memo[w.format], &grid));
  int prev = 0;  // the launch goes to the rank's GPU, whichever is current
  RCCLX_TRY(rcclx_comm_use_device(comm, &prev));
  kernel<<<grid, GEMM_THREADS, 0, stream>>>(v, X, W, out, M, N, K, w);
  return rcclx_comm_launched(prev);
}
