// A row-parallel linear layer with its AllReduce fused into the GEMM:
// rank r holds X_r [M, K] (its slice of the activations' columns) and W_r
// [K, N] (its slice of the weight's rows); the layer's output is
// Y = sum_r X_r W_r, which every rank needs.  Three ways, same bits:
//
//   fused     one persistent kernel: each block computes an output tile,
//             stores it (bf16) into the rank's registered input region,
//             publishes it, waits for that tile from every rank, reduces it
//             (fp32, rank order) and writes Y's tile (rcclx/tile.h);
//   epilogue  the GEMM's epilogue writes Y_r straight into the registered
//             input region, then rcclx_allreduce runs zero-copy;
//   unfused   the GEMM writes Y_r to its own buffer, then rcclx_allreduce
//             copies it in.
//
// The GEMM is a shared-memory tiled kernel on the matrix units (CDNA's MFMA,
// NVIDIA's tensor cores) through rcclx/mma.h: 64 x 64 output tiles, k in
// stages of 64 staged through shared memory, the next two stages' global
// loads in flight in registers while the current one multiplies (the decode
// shapes are weight-bandwidth bound: the bytes in flight are what counts).
// bf16 in, fp32 accumulate, each output rounded once to bf16.  It does not
// try to match cuBLAS / hipBLASLt (no asynchronous copies, no swizzled
// shared memory, one tile shape); bench/RESULTS.md says how far it is.
// Copy and adapt: the places to change are marked ADAPT (your GEMM's tile
// loop and epilogue replace gemm_tile_compute).
#pragma once
#include <rcclx/rcclx.h>
#include <rcclx/mma.h>
#include <rcclx/tile.h>

#define GEMM_BM 64  // ADAPT: your GEMM's output tile
#define GEMM_BN 64
#define GEMM_BK 64  // k per shared-memory stage
#define GEMM_THREADS 256
// Shared row pitch in elements: rows stay 16-byte aligned, and the 8 extra
// elements spread a warp's fragment reads over all banks.
#define GEMM_LDS (GEMM_BK + 8)
#define GEMM_LDY (GEMM_BN + 8)
// Warps, and the 16 x 16 blocks each owns: a (16 GEMM_WM) x 32 slice of the
// tile (NVIDIA: 8 warps of 16 x 32; CDNA: 4 waves of 32 x 32).
#define GEMM_WARPS (GEMM_THREADS / RCCLX_WARP_SIZE)
#define GEMM_WN 2
#define GEMM_WM (GEMM_BM * GEMM_BN / 256 / GEMM_WARPS / GEMM_WN)

// Output tiles of an M x N product (N a multiple of GEMM_BN).
__host__ __device__ __forceinline__ int gemm_tiles(int M, int N) { return (M + GEMM_BM - 1) / GEMM_BM * (N / GEMM_BN); }

// The block's output tile, each value rounded once to bf16, in shared
// memory: what the epilogue stores, publishes or quantizes.
typedef rcclx_bf16 gemm_tile_bf16[GEMM_BM][GEMM_LDY];

// One k stage of this thread's global loads, in flight in registers: two
// 16-byte pieces of X's tile rows and two of W's (rows k and k + 1 of one
// 8-column piece, so the transposing store writes k pairs).
typedef struct gemm_stage {
  rcclx_vec16 a[2], b[2];
} gemm_stage;

// W's piece of this thread: rows 2p, 2p + 1 of the stage, columns 8q..8q+7.
// Eight consecutive lanes take the 8 pieces of one row pair, so a warp's
// loads are whole 128-byte rows of W (4 row pairs per 32 lanes; 64-byte
// halves of 8 rows before, 8-12% slower at every M on H100, run 107).  Its
// transposing stores (gemm_store_stage) meet 8 to a bank: column 8q + j of
// pair p is on bank (4 j + p) mod 32 whatever q is.  Writing the columns
// in a lane-rotated order (j ^ q) removes the conflicts but costs sm_90
// 20-40 registers for the selects (fused kernel 128 -> 168: one block per
// SM instead of two), so the stores keep the conflicts.
__device__ __forceinline__ int gemm_b_pair(void) { return (int)threadIdx.x / 8; }
__device__ __forceinline__ int gemm_b_piece(void) { return (int)threadIdx.x % 8; }

// Stage k0..k0+GEMM_BK of X's rows tm*BM.. and W's columns tn*BN.. into
// registers; rows past M and k past K read as zero.  The edges are masked
// loads, not branches (rcclx_ld16_or_zero): with a branch around a load the
// compiler can no longer count the loads in flight, and on CDNA it waited
// for both stages at the top of the pipeline.  Offsets from the tile's
// first row and the stage's first k (gemm_check keeps them below 2^31).
__device__ __forceinline__ void gemm_load_stage(gemm_stage& st, const rcclx_bf16* X, const rcclx_bf16* W, int M, int N,
                                                int K, int tm, int tn, int k0) {
  const rcclx_bf16* xt = X + (size_t)tm * GEMM_BM * K;
  const rcclx_bf16* wt = W + (size_t)(k0 < K ? k0 : K) * N + tn * GEMM_BN;  // k0 >= K: every lane masked
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int c = (int)threadIdx.x + GEMM_THREADS * i, r = c / 8, k = k0 + 8 * (c % 8);
    st.a[i] = rcclx_ld16_or_zero(xt, (uint32_t)(r * K + k) * 2u, tm * GEMM_BM + r < M && k < K);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int dk = 2 * gemm_b_pair() + i;
    st.b[i] = rcclx_ld16_or_zero(wt, (uint32_t)(dk * N + 8 * gemm_b_piece()) * 2u, k0 + dk < K);
  }
}

// The stage into shared memory: X's rows as they are (k contiguous), W's
// columns transposed (Bs[n][k], k contiguous), which is what the matrix
// unit's operand loads want (rcclx/mma.h).
__device__ __forceinline__ void gemm_store_stage(const gemm_stage& st, rcclx_bf16 (*As)[GEMM_LDS],
                                                 rcclx_bf16 (*Bs)[GEMM_LDS]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int c = (int)threadIdx.x + GEMM_THREADS * i;
    *(rcclx_vec16*)&As[c / 8][8 * (c % 8)] = st.a[i];
  }
  const int p = gemm_b_pair(), q = gemm_b_piece();
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const uint32_t lo = (st.b[0].w[j / 2] >> (16 * (j % 2))) & 0xffffu, hi = (st.b[1].w[j / 2] >> (16 * (j % 2))) & 0xffffu;
    *(uint32_t*)&Bs[8 * q + j][2 * p] = lo | hi << 16;
  }
}

// This warp's slice of the tile: first row and column.
__device__ __forceinline__ int gemm_warp_row(void) {
  return (int)threadIdx.x / RCCLX_WARP_SIZE / GEMM_WN * 16 * GEMM_WM;
}
__device__ __forceinline__ int gemm_warp_col(void) { return (int)threadIdx.x / RCCLX_WARP_SIZE % GEMM_WN * 16 * GEMM_WN; }

// acc += the staged X rows times the staged W columns, on the matrix unit.
__device__ __forceinline__ void gemm_mma_stage(float (&acc)[GEMM_WM][GEMM_WN][RCCLX_MMA_ELEMS],
                                               const rcclx_bf16 (*As)[GEMM_LDS], const rcclx_bf16 (*Bs)[GEMM_LDS]) {
  const int r0 = gemm_warp_row(), c0 = gemm_warp_col();
#pragma unroll
  for (int kk = 0; kk < GEMM_BK; kk += 16) {
    rcclx_mma_frag a[GEMM_WM], b[GEMM_WN];
#pragma unroll
    for (int i = 0; i < GEMM_WM; ++i) rcclx_mma_load_a(&a[i], &As[r0 + 16 * i][kk], GEMM_LDS);
#pragma unroll
    for (int j = 0; j < GEMM_WN; ++j) rcclx_mma_load_b(&b[j], &Bs[c0 + 16 * j][kk], GEMM_LDS);
#pragma unroll
    for (int i = 0; i < GEMM_WM; ++i)
#pragma unroll
      for (int j = 0; j < GEMM_WN; ++j) rcclx_mma_bf16(acc[i][j], a[i], b[j]);
  }
}

// Y = X[tm*BM.., :] * W[:, tn*BN..], rounded once to bf16, into the shared
// tile.  All threads of the block call it; it returns after a barrier, with
// the whole tile in Y.  X rows and W rows 16-byte aligned (K, N multiples of
// 8); rows past M come out as zero.
__device__ __forceinline__ void gemm_tile_compute(const rcclx_bf16* X, const rcclx_bf16* W, int M, int N, int K,
                                                  int tm, int tn, gemm_tile_bf16& Y) {
  __shared__ __align__(16) rcclx_bf16 As[GEMM_BM][GEMM_LDS];
  __shared__ __align__(16) rcclx_bf16 Bs[GEMM_BN][GEMM_LDS];
  float acc[GEMM_WM][GEMM_WN][RCCLX_MMA_ELEMS];
#pragma unroll
  for (int i = 0; i < GEMM_WM; ++i)
#pragma unroll
    for (int j = 0; j < GEMM_WN; ++j)
#pragma unroll
      for (int e = 0; e < RCCLX_MMA_ELEMS; ++e) acc[i][j][e] = 0.0f;
  // Two stages in flight: s0 holds the even stages, s1 the odd ones; a
  // stage's registers are refilled right after they reach shared memory.
  // No load sits under a branch (see gemm_load_stage): the stages come in
  // pairs, and the loads past K are masked off (no memory touched), so an
  // odd stage count multiplies one stage of zeros.  The scheduling fences
  // keep s0's loads ahead of s1's and each stage's work after the previous
  // one, so the loads land in the order they are used and CDNA's compiler
  // waits for one stage (s_waitcnt vmcnt(4)), not both.
  const int pairs = (K + 2 * GEMM_BK - 1) / (2 * GEMM_BK);
  gemm_stage s0, s1;
  const auto step = [&](gemm_stage& st, int s) {  // stage s, held in st
    rcclx_sched_barrier();
    gemm_store_stage(st, As, Bs);
    __syncthreads();
    gemm_load_stage(st, X, W, M, N, K, tm, tn, (s + 2) * GEMM_BK);
    gemm_mma_stage(acc, As, Bs);
    __syncthreads();
  };
  gemm_load_stage(s0, X, W, M, N, K, tm, tn, 0);
  rcclx_sched_barrier();
  gemm_load_stage(s1, X, W, M, N, K, tm, tn, GEMM_BK);
  for (int p = 0; p < pairs; ++p) {
    step(s0, 2 * p);
    step(s1, 2 * p + 1);
  }
  const int r0 = gemm_warp_row(), c0 = gemm_warp_col(), lane = rcclx_mma_lane();
#pragma unroll
  for (int i = 0; i < GEMM_WM; ++i)
#pragma unroll
    for (int j = 0; j < GEMM_WN; ++j)
#pragma unroll
      for (int e = 0; e < RCCLX_MMA_ELEMS; ++e) {
        int m, n;
        rcclx_mma_d_at(RCCLX_MMA_LAYOUT, lane, e, &m, &n);
        Y[r0 + 16 * i + m][c0 + 16 * j + n] = rcclx_from_f32<rcclx_bf16>(acc[i][j][e]);
      }
  __syncthreads();
}

// Epilogue: the tile's rows below M into Y (row-major, leading dimension N,
// 16-byte aligned), 16 bytes per store.  All threads of the block call it.
__device__ __forceinline__ void gemm_tile_store(rcclx_bf16* Y, int M, int N, int tm, int tn, const gemm_tile_bf16& t) {
  for (int c = (int)threadIdx.x; c < GEMM_BM * GEMM_BN / 8; c += GEMM_THREADS) {
    const int r = c / (GEMM_BN / 8), col = 8 * (c % (GEMM_BN / 8)), row = tm * GEMM_BM + r;
    if (row < M) rcclx_st16(Y + (size_t)row * N + tn * GEMM_BN + col, *(const rcclx_vec16*)&t[r][col]);
  }
}

// Plain GEMM, one block per output tile: the "epilogue" and "unfused" ways.
__global__ void __launch_bounds__(GEMM_THREADS)
    gemm_bf16_kernel(const rcclx_bf16* X, const rcclx_bf16* W, rcclx_bf16* Y, int M, int N, int K) {
  __shared__ __align__(16) gemm_tile_bf16 tile;
  const int tiles_n = N / GEMM_BN;
  const int tm = (int)blockIdx.x / tiles_n, tn = (int)blockIdx.x % tiles_n;
  gemm_tile_compute(X, W, M, N, K, tm, tn, tile);
  gemm_tile_store(Y, M, N, tm, tn, tile);
}

// The fused way: persistent, tile t by block t % gridDim.x in ascending
// order on every rank (rcclx/tile.h's contract), grid co-resident.
template <int NMAX>
__global__ void __launch_bounds__(GEMM_THREADS)
    gemm_allreduce_fused_kernel(rcclx_dev_comm c, const rcclx_bf16* X, const rcclx_bf16* W, rcclx_bf16* out, int M,
                                int N, int K) {
  const int tiles_n = N / GEMM_BN, tiles = gemm_tiles(M, N);
  const size_t x_off = rcclx_region_offset(&c, RCCLX_REGION_INPUT);
  rcclx_bf16* mine = (rcclx_bf16*)rcclx_input_region(&c, c.rank);
  __shared__ __align__(16) gemm_tile_bf16 tile;
  for (int t = (int)blockIdx.x; t < tiles; t += (int)gridDim.x) {
    const int tm = t / tiles_n, tn = t % tiles_n;
    const uint32_t e = rcclx_tile_begin(c, t);
    gemm_tile_compute(X, W, M, N, K, tm, tn, tile);
    gemm_tile_store(mine, M, N, tm, tn, tile);  // ADAPT: your epilogue's store
    rcclx_tile_publish(c, t, e);
    if (rcclx_tile_wait(c, t, e)) return;  // watchdog fired
    // Reduce the tile from every rank: 8 vectors of 8 bf16 per tile row.
    for (int i = (int)threadIdx.x; i < GEMM_BM * (GEMM_BN / 8); i += GEMM_THREADS) {
      const int row = tm * GEMM_BM + i / (GEMM_BN / 8);
      if (row >= M) continue;
      const size_t v = ((size_t)row * N + tn * GEMM_BN) / 8 + i % (GEMM_BN / 8);
      rcclx_st16(out + v * 8, rcclx_dda_reduce_vector<rcclx_bf16, RCCLX_SUM, NMAX>(c, x_off, v));
    }
    rcclx_tile_done(c, t, e);
  }
  // Nobody rewrites its tiles while a peer still reads them.
  for (int t = (int)blockIdx.x; t < tiles; t += (int)gridDim.x)
    if (rcclx_tile_wait_done(c, t, rcclx_tile_begin(c, t) - 1u)) return;
}

// Host checks shared by the three ways.  N a multiple of GEMM_BN, K of 8
// (16-byte rows), both at most 2^24 (a stage's load offsets, in bytes from
// the tile's first row or the stage's first k, stay below 2^31); pointers
// 16-byte aligned.
static inline rcclx_status gemm_check(const void* X, const void* W, const void* Y, int M, int N, int K) {
  if (!X || !W || !Y) return RCCLX_ERR_NULL_POINTER;
  if (((uintptr_t)X | (uintptr_t)W | (uintptr_t)Y) & 15u) return RCCLX_ERR_MISALIGNED;
  if (M < 1 || N < GEMM_BN || K < 8 || N % GEMM_BN || K % 8 || N > (1 << 24) || K > (1 << 24))
    return RCCLX_ERR_INVALID_COUNT;
  return RCCLX_SUCCESS;
}

// The plain GEMM (no communicator): launches on the current device, so
// stream must belong to it.
static inline rcclx_status gemm_bf16(const rcclx_bf16* X, const rcclx_bf16* W, rcclx_bf16* Y, int M, int N, int K,
                                     hipStream_t stream) {
  RCCLX_TRY(gemm_check(X, W, Y, M, N, K));
  const int tiles = gemm_tiles(M, N);
  gemm_bf16_kernel<<<tiles, GEMM_THREADS, 0, stream>>>(X, W, Y, M, N, K);
  return hipGetLastError() == hipSuccess ? RCCLX_SUCCESS : RCCLX_ERR_RUNTIME;
}

// Every rank calls it with the same M, N, K.  out: M x N bf16 (not the
// registered buffer); M * N * 2 bytes must fit in the input region.
static inline rcclx_status gemm_allreduce_fused(rcclx_comm* comm, const rcclx_bf16* X, const rcclx_bf16* W,
                                                rcclx_bf16* out, int M, int N, int K, hipStream_t stream) {
  if (!comm || !comm->kind) return RCCLX_ERR_NULL_POINTER;
  RCCLX_TRY(gemm_check(X, W, out, M, N, K));
  const rcclx_dev_comm& v = comm->view;
  const int tiles = gemm_tiles(M, N);
  if ((size_t)M * N * 2 > v.region_bytes || tiles > RCCLX_MAX_TILES) return RCCLX_ERR_BUFFER_TOO_SMALL;
  // Persistent grid: a tile per block up to what may be co-resident with
  // the other ranks' grids (ADAPT: your kernel and block size).
  // One kernel per rank-count bound (NMAX 4 or 8), chosen once; one memo
  // per kernel: the runtime is asked once per device.
  const int big = v.nranks > 4;
  void (*const kernel)(rcclx_dev_comm, const rcclx_bf16*, const rcclx_bf16*, rcclx_bf16*, int, int, int) =
      big ? gemm_allreduce_fused_kernel<8> : gemm_allreduce_fused_kernel<4>;
  static rcclx_occupancy_memo memo[2];
  int grid = 0;
  RCCLX_TRY(rcclx_comm_persistent_grid(comm, (const void*)kernel, GEMM_THREADS, tiles, &memo[big], &grid));
  int prev = 0;  // the launch goes to the rank's GPU, whichever is current
  RCCLX_TRY(rcclx_comm_use_device(comm, &prev));
  kernel<<<grid, GEMM_THREADS, 0, stream>>>(v, X, W, out, M, N, K);
  return rcclx_comm_launched(prev);
}
