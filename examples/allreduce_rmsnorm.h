// AllReduce + residual add + RMSNorm in ONE kernel, the fusion inference
// engines use after every row-parallel layer:
//
//   s        = allreduce(x)                  (fp32 sum in rank order, bf16)
//   residual = bf16(s + residual)            (written back: the new residual)
//   out      = bf16(residual * rsqrt(mean(residual^2) + eps) * weight)
//   [out_fp8 = e4m3(out / scale), one scale per token, for the next GEMM]
//
// x is each rank's partial result, [tokens, hidden] bf16, written by the
// producer (the GEMM) straight into the rank's registered input region
// (rcclx_comm_input): no copy-in.  One kernel runs after the producer, in
// one of two shapes, chosen as rcclx_allreduce chooses flat or tree
// (RCCLX_ALGO_AUTO: one-shot up to the communicator's flat_max_bytes):
//   one-shot (RCCLX_ALGO_FLAT): barrier (every rank's x is visible), each
//     block reduces whole rows across ranks and normalises them, end
//     barrier (no producer rewrites its x while a peer still reads it).
//     Each rank reads every rank's x: nranks times the bytes, one barrier
//     less; for small batches.
//   two-shot (RCCLX_ALGO_TREE): barrier; rank r reduces the r-th of
//     nranks pieces of every row into its staging region (a reduce-scatter);
//     barrier; each block gathers its rows' pieces from their owners as the
//     norm's first pass reads them (the all-gather, fused); end barrier (no
//     staging region is rewritten while a peer still reads it).  Each rank
//     reads about twice the bytes of x whatever nranks is; for large
//     batches.
// Compared with the unfused sequence (rcclx_allreduce, then
// rmsnorm_unfused_kernel) both save one write and one read of s and a
// launch; all three give the same bits (same arithmetic, same reduction
// order), so the choice never changes a model's numbers.
//
// Copy and adapt: the places a copier changes are marked ADAPT.
#pragma once
#include <rcclx/rcclx.h>

#define RMSNORM_THREADS 512
#define RMSNORM_MAX_HIDDEN 65536  // ADAPT: only the host check uses it
// Vectors of each input a two-shot thread keeps in flight (rmsnorm_row's U):
// the most that fits its 64 registers (two blocks per multiprocessor on
// NVIDIA) without spilling.
#define RMSNORM_TWO_SHOT_UNROLL 2

// Block-wide sum or max in a fixed order (a butterfly inside each warp,
// then every thread adds the warps' results in warp order), so every rank
// and both the fused and the unfused kernels round identically.  Two
// __syncthreads: with the fused kernels' one block per multiprocessor no
// other block hides a barrier's latency, and a row costs two of these.
template <bool MAX>
__device__ __forceinline__ float rmsnorm_block_reduce(float v, float* smem) {
  for (int m = RCCLX_WARP_SIZE / 2; m > 0; m /= 2) {
    const float o = rcclx_shfl_xor_f32(v, m, RCCLX_WARP_SIZE);
    v = MAX ? rcclx_fmaxf(v, o) : v + o;
  }
  if (threadIdx.x % RCCLX_WARP_SIZE == 0) smem[threadIdx.x / RCCLX_WARP_SIZE] = v;
  __syncthreads();
  float r = smem[0];
  for (int w = 1; w < RMSNORM_THREADS / RCCLX_WARP_SIZE; ++w) r = MAX ? rcclx_fmaxf(r, smem[w]) : r + smem[w];
  __syncthreads();  // smem is rewritten by the next call
  return r;
}

// The thread's vectors v < nvec of a row (v = threadIdx.x, then every
// RMSNORM_THREADS), U at a time: load(v, x, y) fills two vectors for each of
// the U first, so all their loads are in flight together, then use(v, x, y)
// takes them in v order, as U = 1 would.
template <int U, typename Load, typename Use>
__device__ __forceinline__ void rmsnorm_pass(size_t nvec, const Load& load, const Use& use) {
  for (size_t v0 = threadIdx.x; v0 < nvec; v0 += U * RMSNORM_THREADS) {
    rcclx_vec16 x[U], y[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + (size_t)u * RMSNORM_THREADS < nvec) load(v0 + (size_t)u * RMSNORM_THREADS, x[u], y[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (v0 + (size_t)u * RMSNORM_THREADS >= nvec) break;
      use(v0 + (size_t)u * RMSNORM_THREADS, x[u], y[u]);
    }
  }
}

// One row: residual add, RMSNorm, optional per-token FP8.  get_s(v) gives
// vector v (8 bf16) of the row's all-reduced values.  Shared by the fused
// and the unfused kernels; three streaming passes over the row (the second
// and third re-read what this thread itself wrote).  The first two keep U
// vectors of each of their inputs in flight per thread (rmsnorm_pass: the
// same bits for every U): with the co-resident grid of the fused kernels a
// multiprocessor holds few warps, so the loads in flight per thread set the
// bandwidth.  U = 1 where get_s itself keeps nranks loads in flight (the
// one-shot), and in the unfused kernel, whose full grid keeps enough warps
// in flight.  nvec = hidden / 8.
template <int U, typename GetS>
__device__ __forceinline__ void rmsnorm_row(const GetS& get_s, size_t row, size_t nvec,
                                            const rcclx_bf16* residual_in, rcclx_bf16* residual_out,
                                            const rcclx_bf16* weight, float eps, rcclx_bf16* out, uint8_t* out_fp8,
                                            float* out_scale, float* smem) {
  float ss = 0.0f;
  rmsnorm_pass<U>(
      nvec,
      [&](size_t v, rcclx_vec16& s, rcclx_vec16& res) {
        s = get_s(row * nvec + v);
        res = rcclx_ld16(residual_in + (row * nvec + v) * 8);
      },
      [&](size_t v, const rcclx_vec16& s, const rcclx_vec16& res) {
        float a[8], b[8];
        rcclx_unpack16<rcclx_bf16>(s, a);
        rcclx_unpack16<rcclx_bf16>(res, b);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          a[i] = rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(a[i] + b[i]));  // the new residual
          ss += rcclx_mul_rn(a[i], a[i]);
        }
        rcclx_st16(residual_out + (row * nvec + v) * 8, rcclx_pack16<rcclx_bf16>(a));
      });
  const float inv = 1.0f / rcclx_sqrtf(rmsnorm_block_reduce<false>(ss, smem) / (float)(nvec * 8) + eps);
  float amax = 0.0f;
  rmsnorm_pass<U>(
      nvec,
      [&](size_t v, rcclx_vec16& res, rcclx_vec16& w) {
        res = rcclx_ld16(residual_out + (row * nvec + v) * 8);
        w = rcclx_ld16(weight + v * 8);
      },
      [&](size_t v, const rcclx_vec16& res, const rcclx_vec16& w) {
        float a[8], wf[8];
        rcclx_unpack16<rcclx_bf16>(res, a);
        rcclx_unpack16<rcclx_bf16>(w, wf);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          a[i] = rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(rcclx_mul_rn(rcclx_mul_rn(a[i], inv), wf[i])));
          amax = rcclx_fmaxf(amax, rcclx_fabsf(a[i]));
        }
        rcclx_st16(out + (row * nvec + v) * 8, rcclx_pack16<rcclx_bf16>(a));
      });
  if (!out_fp8) return;
  // Optional FP8 output with one scale per token (ADAPT: format, or a
  // block-scaled layout through rcclx_fp8_quantize_group8).
  const rcclx_fp8_scale sc = rcclx_fp8_make_scale(rmsnorm_block_reduce<true>(amax, smem), RCCLX_FP8_E4M3FN, RCCLX_SCALE_F32);
  if (threadIdx.x == 0) out_scale[row] = sc.scale;
  for (size_t v = threadIdx.x; v < nvec; v += RMSNORM_THREADS) {
    float a[8];
    rcclx_unpack16<rcclx_bf16>(rcclx_ld16(out + (row * nvec + v) * 8), a);
    uint32_t q[2];
#pragma unroll
    for (int w = 0; w < 2; ++w)
      q[w] = rcclx_fp8_encode2_scaled(a[4 * w], a[4 * w + 1], sc.inv, RCCLX_FP8_E4M3FN) |
             (rcclx_fp8_encode2_scaled(a[4 * w + 2], a[4 * w + 3], sc.inv, RCCLX_FP8_E4M3FN) << 16);
    rcclx_store8_u8(out_fp8 + row * nvec * 8, v * 8, nvec * 8, q);
  }
}

// Both fused kernels run on every rank with the communicator's grid size
// (gridDim.x == c.nblocks: row i belongs to block slot i % nblocks on every
// rank, as rcclx's per-block barrier needs: block b only ever reads what
// block b of a peer wrote) and RMSNORM_THREADS threads.  `sig` fingerprints
// the call (shape and kernel): ranks that disagree stop at the first
// barrier with RCCLX_ERR_RANK_MISMATCH recorded (rcclx_comm_check), none
// waiting for a barrier the others never reach.

// One-shot: each row's s reduced from every rank's x.
template <int NMAX>
__global__ void __launch_bounds__(RMSNORM_THREADS, 2)  // 2 per SM: the comm grid's co-residency
    allreduce_rmsnorm_kernel(rcclx_dev_comm c, uint32_t sig, size_t tokens, size_t hidden,
                             const rcclx_bf16* residual_in, rcclx_bf16* residual_out, const rcclx_bf16* weight,
                             float eps, rcclx_bf16* out, uint8_t* out_fp8, float* out_scale) {
  __shared__ float smem[RMSNORM_THREADS];
  const int slot = (int)blockIdx.x;
  // Every rank's producer has finished writing x into its input region.
  if (rcclx_barrier_block(c, slot, sig) != RCCLX_BARRIER_OK) return;
  const size_t x_off = (size_t)RCCLX_REGION_INPUT * c.region_bytes, nvec = hidden / 8;
  const auto reduced = [&](size_t v) { return rcclx_dda_reduce_vector<rcclx_bf16, RCCLX_SUM, NMAX>(c, x_off, v); };
  for (size_t row = blockIdx.x; row < tokens; row += gridDim.x)
    rmsnorm_row<1>(reduced, row, nvec, residual_in, residual_out, weight, eps, out, out_fp8, out_scale, smem);
  // No rank's producer may overwrite its x while a peer still reads it.
  (void)rcclx_barrier_block(c, slot, 0);
}

// Two-shot.  Row pieces: vectors [q * piece, (q + 1) * piece) of every row
// (piece: the tree's shard, rcclx_tree_shard_vectors, of a row's hidden / 8
// vectors) are reduced by rank q into its staging region
// (RCCLX_REGION_COPY0, at the row's own offset), so every batch size
// spreads the reduction over all ranks and all of each rank's blocks.  The
// staging region is the library's copy-in half: rcclx's own calls on this
// communicator may use it too, which is safe because a rank reaches this
// kernel's first barrier only after its previous kernel completed, and
// leaves the kernel only after every rank finished reading.
template <int NMAX>
__global__ void __launch_bounds__(RMSNORM_THREADS, 2)
    allreduce_rmsnorm_two_shot_kernel(rcclx_dev_comm c, uint32_t sig, size_t tokens, size_t hidden,
                                      const rcclx_bf16* residual_in, rcclx_bf16* residual_out,
                                      const rcclx_bf16* weight, float eps, rcclx_bf16* out, uint8_t* out_fp8,
                                      float* out_scale) {
  __shared__ float smem[RMSNORM_THREADS];
  const int slot = (int)blockIdx.x;
  if (rcclx_barrier_block(c, slot, sig) != RCCLX_BARRIER_OK) return;
  const size_t x_off = (size_t)RCCLX_REGION_INPUT * c.region_bytes, s_off = (size_t)RCCLX_REGION_COPY0 * c.region_bytes;
  // 32-bit index math: tokens * hidden * 2 fits the region (< 64 GiB), so
  // every vector index of x is below 2^32.
  const uint32_t nvec = (uint32_t)(hidden / 8), piece = (uint32_t)rcclx_tree_shard_vectors(nvec, c.nranks);
  {
    const uint32_t p0 = (uint32_t)c.rank * piece < nvec ? (uint32_t)c.rank * piece : nvec;
    const uint32_t len = p0 + piece < nvec ? piece : nvec - p0;
    char* staging = (char*)c.bufs[c.rank] + s_off;
    // 1. This rank's piece of each of the block's rows, from every rank:
    // the block's threads walk (row, j) over rows blockIdx.x + k * gridDim.x
    // and j < len, thread t starting at the t-th pair.
    if (len > 0) {
      const uint32_t row_step = RMSNORM_THREADS / len * gridDim.x, j_step = RMSNORM_THREADS % len;
      uint32_t row = blockIdx.x + threadIdx.x / len * gridDim.x, j = threadIdx.x % len;
      for (; row < tokens; row += row_step, j += j_step) {
        if (j >= len) {
          j -= len;
          row += gridDim.x;
          if (row >= tokens) break;
        }
        const size_t v = (size_t)row * nvec + p0 + j;
        rcclx_st16(staging + v * 16, rcclx_dda_reduce_vector<rcclx_bf16, RCCLX_SUM, NMAX>(c, x_off, v));
      }
    }
  }
  // 2. Every rank's pieces of these rows are staged (and every x read).
  if (rcclx_barrier_block(c, slot, 0) != RCCLX_BARRIER_OK) return;
  for (size_t row = blockIdx.x; row < tokens; row += gridDim.x) {
    const size_t row0 = row * nvec;
    const auto gathered = [&](size_t v) {  // vector v of s, from the rank that owns its piece
      const uint32_t owner = (uint32_t)(v - row0) / piece;
      return rcclx_ld16((const char*)c.bufs[owner] + s_off + v * 16);
    };
    rmsnorm_row<RMSNORM_TWO_SHOT_UNROLL>(gathered, row, nvec, residual_in, residual_out, weight, eps, out, out_fp8,
                                         out_scale, smem);
  }
  // 3. No rank rewrites its staging region while a peer still reads it.
  (void)rcclx_barrier_block(c, slot, 0);
}

// The unfused second half: s already all-reduced into `s_all` (bf16).
__global__ void __launch_bounds__(RMSNORM_THREADS)
    rmsnorm_unfused_kernel(const rcclx_bf16* s_all, size_t tokens, size_t hidden, const rcclx_bf16* residual_in,
                           rcclx_bf16* residual_out, const rcclx_bf16* weight, float eps, rcclx_bf16* out,
                           uint8_t* out_fp8, float* out_scale) {
  __shared__ float smem[RMSNORM_THREADS];
  const size_t nvec = hidden / 8;
  const auto loaded = [&](size_t v) { return rcclx_ld16(s_all + v * 8); };
  for (size_t row = blockIdx.x; row < tokens; row += gridDim.x)
    rmsnorm_row<1>(loaded, row, nvec, residual_in, residual_out, weight, eps, out, out_fp8, out_scale, smem);
}

// Host side of the fused call.  x must already be in every rank's input
// region (tokens * hidden bf16 <= region); hidden a multiple of 8 and at
// most RMSNORM_MAX_HIDDEN; residual_in may equal residual_out (each thread
// reads its residual before writing it); out_fp8 / out_scale may be NULL
// (no FP8 output).  algo: RCCLX_ALGO_AUTO (one-shot up to
// comm->flat_max_bytes per rank, as rcclx_allreduce), RCCLX_ALGO_FLAT
// (one-shot) or RCCLX_ALGO_TREE (two-shot); every rank must pass the same
// tokens, hidden and algo (else RCCLX_ERR_RANK_MISMATCH from
// rcclx_comm_check, and the call leaves its outputs unwritten).
static inline rcclx_status allreduce_rmsnorm(rcclx_comm* comm, size_t tokens, size_t hidden,
                                             const rcclx_bf16* residual_in, rcclx_bf16* residual_out,
                                             const rcclx_bf16* weight, float eps, rcclx_bf16* out, uint8_t* out_fp8,
                                             float* out_scale, rcclx_algo algo, hipStream_t stream) {
  if (!comm || !comm->kind || !residual_in || !residual_out || !weight || !out) return RCCLX_ERR_NULL_POINTER;
  if (tokens == 0 || tokens > 0x7fffffffu || hidden == 0 || hidden % 8 || hidden > RMSNORM_MAX_HIDDEN)
    return RCCLX_ERR_INVALID_COUNT;  // (tokens: the two-shot's 32-bit row index)
  if (tokens * hidden * 2 > comm->view.region_bytes) return RCCLX_ERR_BUFFER_TOO_SMALL;
  if ((out_fp8 == nullptr) != (out_scale == nullptr)) return RCCLX_ERR_INVALID_ARGUMENT;
  if (algo != RCCLX_ALGO_AUTO && algo != RCCLX_ALGO_FLAT && algo != RCCLX_ALGO_TREE) return RCCLX_ERR_INVALID_ARGUMENT;
  const rcclx_dev_comm& v = comm->view;
  const int two_shot = rcclx_allreduce_choose(algo, tokens * hidden * 2, comm->flat_max_bytes) == RCCLX_ALGO_TREE;
  const uint64_t parts[3] = {(uint64_t)tokens, (uint64_t)hidden, (uint64_t)two_shot};
  const uint32_t sig = rcclx_fingerprint(parts, 3);
  typedef void (*kernel_t)(rcclx_dev_comm, uint32_t, size_t, size_t, const rcclx_bf16*, rcclx_bf16*,
                           const rcclx_bf16*, float, rcclx_bf16*, uint8_t*, float*);
  const kernel_t k = two_shot ? (v.nranks <= 4 ? allreduce_rmsnorm_two_shot_kernel<4> : allreduce_rmsnorm_two_shot_kernel<8>)
                              : (v.nranks <= 4 ? allreduce_rmsnorm_kernel<4> : allreduce_rmsnorm_kernel<8>);
  // The barrier needs every rank's grid co-resident (virtual ranks share a GPU).
  RCCLX_TRY(rcclx_comm_check_coresident(comm, (const void*)k, RMSNORM_THREADS, v.nblocks));
  int prev = 0;  // the launch goes to the rank's GPU, whichever is current
  RCCLX_TRY(rcclx_comm_use_device(comm, &prev));
  k<<<v.nblocks, RMSNORM_THREADS, 0, stream>>>(v, sig, tokens, hidden, residual_in, residual_out, weight, eps, out,
                                              out_fp8, out_scale);
  return rcclx_comm_launched(prev);
}
