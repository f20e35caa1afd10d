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
// The GEMM is a plain shared-memory tiled SIMT kernel (64x64 tiles, fp32
// FMA accumulation in k order): portable HIP/CUDA with no vendor headers.
// It does not use tensor / matrix cores, so it is far from cuBLAS/hipBLASLt
// on compute-bound (prefill) shapes; at decode shapes (M <= 64) the GEMM is
// weight-bandwidth bound and the comparison between the three ways is what
// this example is for.  Copy and adapt: the places to change are marked
// ADAPT (your GEMM's tile loop and epilogue replace gemm_tile_compute).
#pragma once
#include <rcclx/rcclx.h>
#include <rcclx/tile.h>

#define GEMM_BM 64  // ADAPT: your GEMM's output tile
#define GEMM_BN 64
#define GEMM_BK 32
#define GEMM_THREADS 256  // 16 x 16 threads, 4 x 4 outputs each

// acc = X[tm*BM.., :] * W[:, tn*BN..] for this thread's 4 x 4 outputs
// (rows ty*4+i, cols tx*4+j of the tile).  K a multiple of GEMM_BK; rows
// past M read as zero.
__device__ __forceinline__ void gemm_tile_compute(const rcclx_bf16* X, const rcclx_bf16* W, int M, int N, int K,
                                                  int tm, int tn, float (&acc)[4][4]) {
  __shared__ float As[GEMM_BK][GEMM_BM];
  __shared__ float Bs[GEMM_BK][GEMM_BN];
  const int ty = (int)threadIdx.x / 16, tx = (int)threadIdx.x % 16;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += GEMM_BK) {
    for (int i = (int)threadIdx.x; i < GEMM_BM * GEMM_BK; i += GEMM_THREADS) {
      const int r = i / GEMM_BK, kk = i % GEMM_BK, gr = tm * GEMM_BM + r;
      As[kk][r] = gr < M ? rcclx_to_f32(X[(size_t)gr * K + k0 + kk]) : 0.0f;
    }
    for (int i = (int)threadIdx.x; i < GEMM_BK * GEMM_BN; i += GEMM_THREADS) {
      const int kk = i / GEMM_BN, cc = i % GEMM_BN;
      Bs[kk][cc] = rcclx_to_f32(W[(size_t)(k0 + kk) * N + tn * GEMM_BN + cc]);
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < GEMM_BK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = As[kk][ty * 4 + i];
        b[i] = Bs[kk][tx * 4 + i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = rcclx_fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
}

// Epilogue: this thread's outputs rounded once to bf16 into Y (row-major,
// leading dimension N).
__device__ __forceinline__ void gemm_tile_store(rcclx_bf16* Y, int M, int N, int tm, int tn, const float (&acc)[4][4]) {
  const int ty = (int)threadIdx.x / 16, tx = (int)threadIdx.x % 16;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = tm * GEMM_BM + ty * 4 + i;
    if (row < M)
#pragma unroll
      for (int j = 0; j < 4; ++j) Y[(size_t)row * N + tn * GEMM_BN + tx * 4 + j] = rcclx_from_f32<rcclx_bf16>(acc[i][j]);
  }
}

// Plain GEMM, one block per output tile: the "epilogue" and "unfused" ways.
__global__ void __launch_bounds__(GEMM_THREADS)
    gemm_bf16_kernel(const rcclx_bf16* X, const rcclx_bf16* W, rcclx_bf16* Y, int M, int N, int K) {
  const int tiles_n = N / GEMM_BN;
  float acc[4][4];
  const int tm = (int)blockIdx.x / tiles_n, tn = (int)blockIdx.x % tiles_n;
  gemm_tile_compute(X, W, M, N, K, tm, tn, acc);
  gemm_tile_store(Y, M, N, tm, tn, acc);
}

// The fused way: persistent, tile t by block t % gridDim.x in ascending
// order on every rank (rcclx/tile.h's contract), grid co-resident.
template <int NMAX>
__global__ void __launch_bounds__(GEMM_THREADS)
    gemm_allreduce_fused_kernel(rcclx_dev_comm c, const rcclx_bf16* X, const rcclx_bf16* W, rcclx_bf16* out, int M,
                                int N, int K) {
  const int tiles_n = N / GEMM_BN, tiles = ((M + GEMM_BM - 1) / GEMM_BM) * tiles_n;
  rcclx_bf16* mine = (rcclx_bf16*)((char*)c.bufs[c.rank] + (size_t)RCCLX_REGION_INPUT * c.region_bytes);
  const size_t x_off = (size_t)RCCLX_REGION_INPUT * c.region_bytes;
  for (int t = (int)blockIdx.x; t < tiles; t += (int)gridDim.x) {
    const int tm = t / tiles_n, tn = t % tiles_n;
    const uint32_t e = rcclx_tile_begin(c, t);
    float acc[4][4];
    gemm_tile_compute(X, W, M, N, K, tm, tn, acc);
    gemm_tile_store(mine, M, N, tm, tn, acc);  // ADAPT: your epilogue's store
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

// Host checks shared by the three ways.  K a multiple of GEMM_BK, N of
// GEMM_BN; pointers 16-byte aligned.
static inline rcclx_status gemm_check(const void* X, const void* W, const void* Y, int M, int N, int K) {
  if (!X || !W || !Y) return RCCLX_ERR_NULL_POINTER;
  if (((uintptr_t)X | (uintptr_t)W | (uintptr_t)Y) & 15u) return RCCLX_ERR_MISALIGNED;
  if (M < 1 || N < GEMM_BN || K < GEMM_BK || N % GEMM_BN || K % GEMM_BK) return RCCLX_ERR_INVALID_COUNT;
  return RCCLX_SUCCESS;
}

// The plain GEMM (no communicator): launches on the current device, so
// stream must belong to it.
static inline rcclx_status gemm_bf16(const rcclx_bf16* X, const rcclx_bf16* W, rcclx_bf16* Y, int M, int N, int K,
                                     hipStream_t stream) {
  RCCLX_TRY(gemm_check(X, W, Y, M, N, K));
  const int tiles = ((M + GEMM_BM - 1) / GEMM_BM) * (N / GEMM_BN);
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
  const int tiles = ((M + GEMM_BM - 1) / GEMM_BM) * (N / GEMM_BN);
  if ((size_t)M * N * 2 > v.region_bytes || tiles > RCCLX_MAX_TILES) return RCCLX_ERR_BUFFER_TOO_SMALL;
  // Persistent grid: at most the communicator's, and co-resident with the
  // other ranks' grids on a shared GPU.
  const int grid = tiles < v.nblocks ? tiles : v.nblocks;
  const void* k = v.nranks <= 4 ? (const void*)gemm_allreduce_fused_kernel<4> : (const void*)gemm_allreduce_fused_kernel<8>;
  RCCLX_TRY(rcclx_comm_check_coresident(comm, k, GEMM_THREADS, grid));
  int prev = 0;  // the launch goes to the rank's GPU, whichever is current
  RCCLX_TRY(rcclx_comm_use_device(comm, &prev));
  if (v.nranks <= 4) gemm_allreduce_fused_kernel<4><<<grid, GEMM_THREADS, 0, stream>>>(v, X, W, out, M, N, K);
  else gemm_allreduce_fused_kernel<8><<<grid, GEMM_THREADS, 0, stream>>>(v, X, W, out, M, N, K);
  return rcclx_comm_launched(prev);
}
