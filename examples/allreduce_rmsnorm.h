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
// one of three shapes (RCCLX_ALGO_AUTO: LL wherever one LL launch holds
// the message, then one-shot up to rmsnorm_one_shot_max_bytes, two-shot
// above):
//   LL (RCCLX_ALGO_LL): no barrier.  Each rank's x travels as tagged words
//     (rcclx's flag-in-data protocol, rcclx/dda/ll.h) and a row is spread
//     over several blocks, which trade their partial sums of squares the
//     same way.  For decode batches (at most RCCLX_LL_MAX_BYTES of x).
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
// rmsnorm_unfused_kernel) all save one write and one read of s and a
// launch; all four give the same bits (same arithmetic, same reduction
// order, the sum of squares included: rmsnorm_combine), so the choice
// never changes a model's numbers.
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

// The row's sum of squares in ONE order, whatever kernel computes it, so
// every rank and every kernel (fused, unfused, any shape) rounds alike.
// With W = RCCLX_WARP_SIZE, chunk j holds vectors W*j .. W*j + W - 1 of the
// row (8 bf16 each; past the row's end a vector counts 0):
//   q_v  = sum of y*y over vector v's 8 values, in order, from 0
//          (y: the new residual; each product rounded, rcclx_mul_rn);
//   P_j  = rmsnorm_warp_sum of the chunk's q (lane l holding q_{W*j+l});
//   ss   = rmsnorm_warp_sum over lanes l of Q_l = P_l + P_{l+W} + ...
//          (rmsnorm_combine).
// A chunk is one warp's worth of vectors, so a kernel may compute P_j
// wherever it likes (a warp of any block) and gather them before the
// combine: the LL kernel below spreads a row over several blocks.

// Chunks of a row of nvec vectors (the last one may be partial).
static inline __host__ __device__ uint32_t rmsnorm_chunks(uint32_t nvec) {
  return (nvec + RCCLX_WARP_SIZE - 1) / RCCLX_WARP_SIZE;
}
// Butterfly sum over a warp: every lane ends with the same bits (each add
// is commutative).
__device__ __forceinline__ float rmsnorm_warp_sum(float v) {
  for (int m = RCCLX_WARP_SIZE / 2; m > 0; m /= 2) v += rcclx_shfl_xor_f32(v, m, RCCLX_WARP_SIZE);
  return v;
}
// Butterfly max over a warp (exact).
__device__ __forceinline__ float rmsnorm_warp_max(float v) {
  for (int m = RCCLX_WARP_SIZE / 2; m > 0; m /= 2) v = rcclx_fmaxf(v, rcclx_shfl_xor_f32(v, m, RCCLX_WARP_SIZE));
  return v;
}
// ss from the row's nchunks partials P (see above); every lane of the
// calling warp gets the same bits.
__device__ __forceinline__ float rmsnorm_combine(const float* P, int nchunks) {
  float q = 0.0f;
  for (int j = (int)threadIdx.x % RCCLX_WARP_SIZE; j < nchunks; j += RCCLX_WARP_SIZE) q += P[j];
  return rmsnorm_warp_sum(q);
}
// Block-wide max (exact: any order gives the same bits).  Two
// __syncthreads.
__device__ __forceinline__ float rmsnorm_block_max(float v, float* smem) {
  v = rmsnorm_warp_max(v);
  if (threadIdx.x % RCCLX_WARP_SIZE == 0) smem[threadIdx.x / RCCLX_WARP_SIZE] = v;
  __syncthreads();
  float r = smem[0];
  for (int w = 1; w < (int)blockDim.x / RCCLX_WARP_SIZE; ++w) r = rcclx_fmaxf(r, smem[w]);
  __syncthreads();  // smem is rewritten by the next call
  return r;
}

// The new residual and its squares for one vector: a = bf16(s + res) as
// fp32 (what is stored back), returns q_v (see above).
__device__ __forceinline__ float rmsnorm_residual(const rcclx_vec16& s, const rcclx_vec16& res, float (&a)[8]) {
  float b[8], q = 0.0f;
  rcclx_unpack16<rcclx_bf16>(s, a);
  rcclx_unpack16<rcclx_bf16>(res, b);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    a[i] = rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(a[i] + b[i]));
    q += rcclx_mul_rn(a[i], a[i]);
  }
  return q;
}
// The normalised vector: bf16(a * inv * weight), each product rounded.
__device__ __forceinline__ void rmsnorm_scale(float (&a)[8], float inv, const rcclx_vec16& w) {
  float wf[8];
  rcclx_unpack16<rcclx_bf16>(w, wf);
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] = rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(rcclx_mul_rn(rcclx_mul_rn(a[i], inv), wf[i])));
}
// The optional FP8 output of one vector with the row's scale (ADAPT:
// format, or a block-scaled layout through rcclx_fp8_quantize_group8).
__device__ __forceinline__ void rmsnorm_store_fp8(uint8_t* row_fp8, size_t v, size_t nvec, const float (&a)[8],
                                                  const rcclx_fp8_scale& sc) {
  uint32_t q[2];
#pragma unroll
  for (int w = 0; w < 2; ++w)
    q[w] = rcclx_fp8_encode2_scaled(a[4 * w], a[4 * w + 1], sc.inv, RCCLX_FP8_E4M3FN) |
           (rcclx_fp8_encode2_scaled(a[4 * w + 2], a[4 * w + 3], sc.inv, RCCLX_FP8_E4M3FN) << 16);
  rcclx_store8_u8(row_fp8, v * 8, nvec * 8, q);
}

// The thread's vectors v < nvec of a row (v = threadIdx.x, then every
// RMSNORM_THREADS), U at a time, warp by warp: load(v, x, y) fills two
// vectors for each of the U first (where v < nvec), so all their loads are
// in flight together, then use(v, on, x, y) takes them in v order, as
// U = 1 would, on every lane of a warp whose chunk holds vectors (on: this
// lane's v < nvec), so use may exchange values across the warp.
template <int U, typename Load, typename Use>
__device__ __forceinline__ void rmsnorm_pass(size_t nvec, const Load& load, const Use& use) {
  const size_t lane = threadIdx.x % RCCLX_WARP_SIZE;
  for (size_t c0 = threadIdx.x - lane; c0 < nvec; c0 += U * RMSNORM_THREADS) {
    rcclx_vec16 x[U], y[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (c0 + lane + (size_t)u * RMSNORM_THREADS < nvec) load(c0 + lane + (size_t)u * RMSNORM_THREADS, x[u], y[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c0 + (size_t)u * RMSNORM_THREADS >= nvec) break;  // warp-uniform
      const size_t v = c0 + lane + (size_t)u * RMSNORM_THREADS;
      use(v, v < nvec, x[u], y[u]);
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
// in flight.  nvec = hidden / 8; smem: at least nvec / RCCLX_WARP_SIZE + 1
// floats.
template <int U, typename GetS>
__device__ __forceinline__ void rmsnorm_row(const GetS& get_s, size_t row, size_t nvec,
                                            const rcclx_bf16* residual_in, rcclx_bf16* residual_out,
                                            const rcclx_bf16* weight, float eps, rcclx_bf16* out, uint8_t* out_fp8,
                                            float* out_scale, float* smem) {
  rmsnorm_pass<U>(
      nvec,
      [&](size_t v, rcclx_vec16& s, rcclx_vec16& res) {
        s = get_s(row * nvec + v);
        res = rcclx_ld16(residual_in + (row * nvec + v) * 8);
      },
      [&](size_t v, bool on, const rcclx_vec16& s, const rcclx_vec16& res) {
        float a[8];
        const float q = on ? rmsnorm_residual(s, res, a) : 0.0f;
        if (on) rcclx_st16(residual_out + (row * nvec + v) * 8, rcclx_pack16<rcclx_bf16>(a));
        const float p = rmsnorm_warp_sum(q);  // P_j of chunk j = v / RCCLX_WARP_SIZE
        if (threadIdx.x % RCCLX_WARP_SIZE == 0) smem[v / RCCLX_WARP_SIZE] = p;
      });
  __syncthreads();
  const float ss = rmsnorm_combine(smem, (int)rmsnorm_chunks((uint32_t)nvec));
  __syncthreads();  // smem is rewritten next
  const float inv = 1.0f / rcclx_sqrtf(ss / (float)(nvec * 8) + eps);
  float amax = 0.0f;
  rmsnorm_pass<U>(
      nvec,
      [&](size_t v, rcclx_vec16& res, rcclx_vec16& w) {
        res = rcclx_ld16(residual_out + (row * nvec + v) * 8);
        w = rcclx_ld16(weight + v * 8);
      },
      [&](size_t v, bool on, const rcclx_vec16& res, const rcclx_vec16& w) {
        if (!on) return;
        float a[8];
        rcclx_unpack16<rcclx_bf16>(res, a);
        rmsnorm_scale(a, inv, w);
#pragma unroll
        for (int i = 0; i < 8; ++i) amax = rcclx_fmaxf(amax, rcclx_fabsf(a[i]));
        rcclx_st16(out + (row * nvec + v) * 8, rcclx_pack16<rcclx_bf16>(a));
      });
  if (!out_fp8) return;
  const rcclx_fp8_scale sc = rcclx_fp8_make_scale(rmsnorm_block_max(amax, smem), RCCLX_FP8_E4M3FN, RCCLX_SCALE_F32);
  if (threadIdx.x == 0) out_scale[row] = sc.scale;
  for (size_t v = threadIdx.x; v < nvec; v += RMSNORM_THREADS) {
    float a[8];
    rcclx_unpack16<rcclx_bf16>(rcclx_ld16(out + (row * nvec + v) * 8), a);
    rmsnorm_store_fp8(out_fp8 + row * nvec * 8, v, nvec, a, sc);
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
  const size_t x_off = rcclx_region_offset(&c, RCCLX_REGION_INPUT), nvec = hidden / 8;
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
  const size_t x_off = rcclx_region_offset(&c, RCCLX_REGION_INPUT), s_off = rcclx_region_offset(&c, RCCLX_REGION_COPY0);
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

// LL shape (RCCLX_ALGO_LL), for decode batches: rcclx's flag-in-data
// exchange (rcclx/dda/ll.h: no barrier, no fence; x may be rewritten as
// soon as the call returns).  A row is spread over S blocks
// (rmsnorm_ll_pieces) of `warps` line warps and one header warp; each
// thread of a line warp owns one vector of the row (two LL lines):
//   publish its vector of x; poll the peers' copies; reduce in rank order
//   and add the residual (registers only);
//   each line warp's chunk partial P_j goes to the row's other blocks as a
//   tagged word in the rank's spare LL slot (rcclx_ll_spare_offset); every
//   block gathers all of its row's partials and combines them in the one
//   order (rmsnorm_combine), so its bits are the other shapes' bits;
//   write the new residual and the output; for FP8 the row's max travels
//   the same way.
// Nothing is written until every thread of the block agrees there was no
// mismatch (and no timeout); a block that stops sends its row's other
// blocks a failure word instead of its partial, so they stop too.
// At most 256 line threads per block: 8 warps on NVIDIA, 4 wave64s on
// CDNA (with 8 there the 8-rank kernel spilled on gfx942).
#define RMSNORM_LL_MAX_WARPS (256 / RCCLX_WARP_SIZE)
#define RMSNORM_LL_THREADS ((RMSNORM_LL_MAX_WARPS + 1) * RCCLX_WARP_SIZE)

// Blocks per row of the LL shape with `warps` line warps per block.
static inline __host__ __device__ uint32_t rmsnorm_ll_pieces(uint32_t nvec, int warps) {
  return (rmsnorm_chunks(nvec) + (uint32_t)warps - 1) / (uint32_t)warps;
}

// Line warps per block of the LL shape: the fewest of 2, 4, ... that keep
// the grid (tokens * S blocks) within the communicator's nblocks (more,
// smaller blocks spread the polls over more multiprocessors); 0 when none
// does or the message exceeds one LL launch.
static inline int rmsnorm_ll_warps(size_t tokens, size_t hidden, int nblocks) {
  if (tokens * hidden * 2 > RCCLX_LL_MAX_BYTES) return 0;
  for (int w = 2; w <= RMSNORM_LL_MAX_WARPS; w *= 2)
    if (tokens * rmsnorm_ll_pieces((uint32_t)(hidden / 8), w) <= (size_t)nblocks) return w;
  return 0;
}

// The word of the row's partial `j` in phase `ph` (0: sums of squares,
// 1: the FP8 maxima) in this rank's spare LL slot: word 0 of one line each.
__device__ __forceinline__ uint64_t* rmsnorm_ll_partial(const rcclx_dev_comm& c, const rcclx_ll_call& call,
                                                        uint32_t row, uint32_t nchunks, uint32_t j, int ph) {
  return rcclx_ll_at(c, c.rank, rcclx_ll_spare_offset(c, call.buf, ((size_t)row * nchunks + j) * 2 + (size_t)ph));
}

// One exchange of the row's partials between its blocks: lane 0 of each
// line warp whose chunk holds vectors stores its warp's value (`mine`,
// the same in every lane), or the failure tag when `failed`; then the
// block gathers all nchunks partials into part[].  Every thread calls it.
// Returns nonzero (the block must stop, writing nothing) when this block
// failed, a block of the row failed, or the watchdog fired.
__device__ __forceinline__ int rmsnorm_ll_exchange(const rcclx_dev_comm& c, const rcclx_ll_call& call, uint32_t row,
                                                   uint32_t nchunks, uint32_t chunk, int ph, float mine, int failed,
                                                   float* part) {
  const uint32_t fail_tag = call.tag + 0x80000000u;  // the tag of no call within 2^31 of this one
  if (threadIdx.x % RCCLX_WARP_SIZE == 0 && chunk < nchunks)
    rcclx_ll_st(c, rmsnorm_ll_partial(c, call, row, nchunks, chunk, ph), rcclx_f32_bits(mine),
                failed ? fail_tag : call.tag);
  if (failed) return 1;
  int fail = 0;
  for (uint32_t j = threadIdx.x; j < nchunks && !fail; j += blockDim.x) {
    const uint64_t* p = rmsnorm_ll_partial(c, call, row, nchunks, j, ph);
    uint32_t spins = 0;
    uint64_t t0 = 0;
    uint64_t w = rcclx_ll_ld(c, p);
    while (rcclx_ll_tag_of(w) != call.tag && !fail) {
      fail = rcclx_ll_tag_of(w) == fail_tag || rcclx_watchdog_expired(c, &spins, &t0, (int)blockIdx.x, c.rank, call.k);
      w = rcclx_ll_ld(c, p);
    }
    part[j] = rcclx_bits_f32((uint32_t)w);
  }
  return __syncthreads_or(fail);
}

template <int NMAX>
__global__ void __launch_bounds__(RMSNORM_LL_THREADS)
    allreduce_rmsnorm_ll_kernel(rcclx_dev_comm c, uint32_t sig, uint32_t tokens, uint32_t hidden, int warps,
                                const rcclx_bf16* residual_in, rcclx_bf16* residual_out, const rcclx_bf16* weight,
                                float eps, rcclx_bf16* out, uint8_t* out_fp8, float* out_scale) {
  __shared__ rcclx_ll_shared sh;
  __shared__ float part[RMSNORM_MAX_HIDDEN / 8 / RCCLX_WARP_SIZE];  // the row's partials
  const uint32_t WS = RCCLX_WARP_SIZE, tid = threadIdx.x, W = (uint32_t)warps;
  const uint32_t nvec = hidden / 8, nchunks = rmsnorm_chunks(nvec), S = rmsnorm_ll_pieces(nvec, warps);
  const uint32_t row = blockIdx.x / S, piece = blockIdx.x % S;
  const bool line_thread = tid < W * WS;
  // The thread's vector of the row, and its warp's chunk (none for the
  // header warp).
  const uint32_t col = piece * W * WS + tid, chunk = line_thread ? piece * W + tid / WS : nchunks;
  const bool on = line_thread && col < nvec;
  const uint32_t v = row * nvec + col;  // vector v of x: LL lines 2v and 2v + 1
  const rcclx_bf16* x = (const rcclx_bf16*)rcclx_input_region(&c, c.rank);
  rcclx_vec16 mine = {}, res = {}, w = {};
  if (on) {  // all three loads in flight before the polls
    mine = rcclx_ld16(x + (size_t)v * 8);
    res = rcclx_ld16(residual_in + (size_t)v * 8);
    w = rcclx_ld16(weight + (size_t)col * 8);
  }
  // Which block re-tags a line (rcclx_ll_retag): data line L is vector
  // L / 2's; spare line L holds partial L / 2 of this shape's layout.
  // Lines past this call's rows wrap onto its rows.
  const auto owner = [&](int spare, uint32_t L) -> int {
    const uint32_t per_row = spare ? nchunks : nvec, item = L / 2, j = item % per_row;
    return (int)(item / per_row % tokens * S + (spare ? j : j / WS) / W);
  };
  rcclx_ll_call call;
  if (!rcclx_ll_open(c, sig, &sh, owner, &call)) return;
  rcclx_ll_publish_headers(c, call);
  if (on) {
    rcclx_ll_publish(c, rcclx_ll_line_offset(call.buf, c.rank, 2 * (size_t)v), &mine.w[0], 2, call.tag);
    rcclx_ll_publish(c, rcclx_ll_line_offset(call.buf, c.rank, 2 * (size_t)v + 1), &mine.w[2], 2, call.tag);
  }
  rcclx_ll_commit(c, call);
  uint32_t spins = 0;
  uint64_t t0 = 0;
  // The header warp checks the peers' fingerprints; no early launch (a
  // plain launch follows).
  int bad = rcclx_ll_check_headers(c, call, &sh, (int)(W * WS), 0, &spins, &t0);
  float a[8], q = 0.0f;
  if (on && !bad) {
    const rcclx_ll_reader rd = rcclx_ll_reader_of(c);
    uint64_t xs[2][NMAX][2];
    bad = rcclx_ll_gather_lines<NMAX, 2>(c, rd, call, &sh, 2 * v, xs, &spins, &t0, (int)blockIdx.x);
    if (!bad) {
      rcclx_vec16 s;
      rcclx_ll_reduce_line<rcclx_bf16, RCCLX_SUM, NMAX>(rd, &mine.w[0], xs[0], &s.w[0]);
      rcclx_ll_reduce_line<rcclx_bf16, RCCLX_SUM, NMAX>(rd, &mine.w[2], xs[1], &s.w[2]);
      q = rmsnorm_residual(s, res, a);
    }
  }
  const int failed = __syncthreads_or(bad != 0);
  if (rmsnorm_ll_exchange(c, call, row, nchunks, chunk, 0, rmsnorm_warp_sum(q), failed, part)) return;
  const float inv = 1.0f / rcclx_sqrtf(rmsnorm_combine(part, (int)nchunks) / (float)hidden + eps);
  float amax = 0.0f;
  if (on) {
    rcclx_st16(residual_out + (size_t)v * 8, rcclx_pack16<rcclx_bf16>(a));
    rmsnorm_scale(a, inv, w);
#pragma unroll
    for (int i = 0; i < 8; ++i) amax = rcclx_fmaxf(amax, rcclx_fabsf(a[i]));
    rcclx_st16(out + (size_t)v * 8, rcclx_pack16<rcclx_bf16>(a));
  }
  if (!out_fp8) return;
  __syncthreads();  // every warp has combined part[] before it is rewritten
  if (rmsnorm_ll_exchange(c, call, row, nchunks, chunk, 1, rmsnorm_warp_max(amax), 0, part)) return;
  float rmax = 0.0f;
  for (uint32_t j = 0; j < nchunks; ++j) rmax = rcclx_fmaxf(rmax, part[j]);
  const rcclx_fp8_scale sc = rcclx_fp8_make_scale(rmax, RCCLX_FP8_E4M3FN, RCCLX_SCALE_F32);
  if (piece == 0 && tid == 0) out_scale[row] = sc.scale;
  if (on) rmsnorm_store_fp8(out_fp8 + (size_t)row * nvec * 8, col, nvec, a, sc);
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

// AUTO's one-shot / two-shot switch for the fused kernel (bytes of one
// rank's x): the one-shot reads every rank's x in every rank's kernel, so
// it gives way to the two-shot sooner than rcclx_allreduce's flat and tree
// do (comm->flat_max_bytes, which still caps it: RCCLX_FLAT_MAX_BYTES lowers
// both).  Measured (bench/RESULTS.md, run 106: one H200, virtual ranks,
// hidden 8192, us per call, one-shot / two-shot): 2 ranks, the one-shot
// won at every size up to 16 MiB (83.5 / 84.9 there); 4 ranks, a tie at 1
// MiB (13.48 / 13.50), the two-shot from 2 MiB (24.3 / 22.6; 165.9 / 151.2
// at 16 MiB); 8 ranks, the two-shot from 128 KiB, the first size past LL
// (11.11 / 11.00; 11.77 / 11.12 at 256 KiB; 17.7 / 14.6 at 512 KiB).
// 3 and 5-7 ranks: by their neighbours.  ADAPT: re-measure on your links
// (issue #7).
static inline size_t rmsnorm_one_shot_max_bytes(int nranks, size_t flat_max_bytes) {
  const size_t own = nranks <= 2 ? flat_max_bytes : nranks <= 4 ? ((size_t)1 << 20) : ((size_t)64 << 10);
  return own < flat_max_bytes ? own : flat_max_bytes;
}

// Host side of the fused call.  x must already be in every rank's input
// region (tokens * hidden bf16 <= region); hidden a multiple of 8 and at
// most RMSNORM_MAX_HIDDEN; residual_in may equal residual_out (each thread
// reads its residual before writing it); out_fp8 / out_scale may be NULL (no
// FP8 output).  algo: RCCLX_ALGO_AUTO (LL wherever one LL launch holds the
// message and its grid fits, else one-shot up to rmsnorm_one_shot_max_bytes
// and two-shot above), RCCLX_ALGO_LL (RCCLX_ERR_INVALID_ARGUMENT when the
// message exceeds one LL launch, RCCLX_LL_MAX_BYTES, or its grid the
// communicator's), RCCLX_ALGO_FLAT (one-shot) or RCCLX_ALGO_TREE (two-shot);
// every rank must pass the same tokens, hidden and algo (else
// RCCLX_ERR_RANK_MISMATCH from rcclx_comm_check, and the call leaves its
// outputs unwritten; after a mismatch in an LL call the communicators must
// be rebuilt, as rcclx/dda/ll.h says).
static inline rcclx_status allreduce_rmsnorm(rcclx_comm* comm, size_t tokens, size_t hidden,
                                             const rcclx_bf16* residual_in, rcclx_bf16* residual_out,
                                             const rcclx_bf16* weight, float eps, rcclx_bf16* out, uint8_t* out_fp8,
                                             float* out_scale, rcclx_algo algo, hipStream_t stream) {
  if (!comm || !comm->kind || !residual_in || !residual_out || !weight || !out) return RCCLX_ERR_NULL_POINTER;
  if (tokens == 0 || tokens > 0x7fffffffu || hidden == 0 || hidden % 8 || hidden > RMSNORM_MAX_HIDDEN)
    return RCCLX_ERR_INVALID_COUNT;  // (tokens: the two-shot's 32-bit row index)
  const size_t bytes = tokens * hidden * 2;
  if (bytes > comm->view.region_bytes) return RCCLX_ERR_BUFFER_TOO_SMALL;
  if ((out_fp8 == nullptr) != (out_scale == nullptr)) return RCCLX_ERR_INVALID_ARGUMENT;
  if (algo != RCCLX_ALGO_AUTO && algo != RCCLX_ALGO_FLAT && algo != RCCLX_ALGO_TREE && algo != RCCLX_ALGO_LL)
    return RCCLX_ERR_INVALID_ARGUMENT;
  const rcclx_dev_comm& v = comm->view;
  const int warps = rmsnorm_ll_warps(tokens, hidden, v.nblocks);
  if (algo == RCCLX_ALGO_LL && !warps) return RCCLX_ERR_INVALID_ARGUMENT;
  // 0: one-shot, 1: two-shot, 2: LL.  AUTO takes LL wherever one LL
  // launch holds the message (unless the communicator has LL switched off,
  // ll_max_bytes 0): it beat the unfused sequence and both barrier shapes
  // at every such point measured (bench/RESULTS.md, runs 99 and 106: 1 and
  // 4 tokens of 8192 at 2, 4 and 8 virtual ranks), also where
  // rcclx_allreduce's own switch (16 KiB at 8 ranks) would not take LL: the
  // fused one-shot pays two barriers.  ADAPT: re-measure on your links
  // (issue #7).
  int shape = 2;
  if (algo != RCCLX_ALGO_LL && !(algo == RCCLX_ALGO_AUTO && warps && comm->ll_max_bytes > 0)) {
    const size_t one_shot_max = rmsnorm_one_shot_max_bytes(v.nranks, comm->flat_max_bytes);
    shape = rcclx_allreduce_choose(algo, bytes, one_shot_max) == RCCLX_ALGO_TREE ? 1 : 0;
  }
  const uint64_t parts[3] = {(uint64_t)tokens, (uint64_t)hidden, (uint64_t)shape};
  const uint32_t sig = rcclx_fingerprint(parts, 3);
  int prev = 0;  // the launch goes to the rank's GPU, whichever is current
  if (shape == 2) {
    typedef void (*ll_kernel_t)(rcclx_dev_comm, uint32_t, uint32_t, uint32_t, int, const rcclx_bf16*, rcclx_bf16*,
                                const rcclx_bf16*, float, rcclx_bf16*, uint8_t*, float*);
    const ll_kernel_t k = v.nranks <= 4 ? allreduce_rmsnorm_ll_kernel<4> : allreduce_rmsnorm_ll_kernel<8>;
    const int threads = (warps + 1) * RCCLX_WARP_SIZE;
    const unsigned grid = (unsigned)(tokens * rmsnorm_ll_pieces((uint32_t)(hidden / 8), warps));
    // Its blocks spin on the peers' blocks: every rank's grid co-resident.
    RCCLX_TRY(rcclx_comm_check_coresident(comm, (const void*)k, threads, (int)grid));
    RCCLX_TRY(rcclx_comm_use_device(comm, &prev));
    k<<<grid, threads, 0, stream>>>(v, sig, (uint32_t)tokens, (uint32_t)hidden, warps, residual_in, residual_out,
                                    weight, eps, out, out_fp8, out_scale);
    return rcclx_comm_launched(prev);
  }
  typedef void (*kernel_t)(rcclx_dev_comm, uint32_t, size_t, size_t, const rcclx_bf16*, rcclx_bf16*,
                           const rcclx_bf16*, float, rcclx_bf16*, uint8_t*, float*);
  const kernel_t k = shape == 1 ? (v.nranks <= 4 ? allreduce_rmsnorm_two_shot_kernel<4> : allreduce_rmsnorm_two_shot_kernel<8>)
                                : (v.nranks <= 4 ? allreduce_rmsnorm_kernel<4> : allreduce_rmsnorm_kernel<8>);
  // The barrier needs every rank's grid co-resident (virtual ranks share a GPU).
  RCCLX_TRY(rcclx_comm_check_coresident(comm, (const void*)k, RMSNORM_THREADS, v.nblocks));
  RCCLX_TRY(rcclx_comm_use_device(comm, &prev));
  k<<<v.nblocks, RMSNORM_THREADS, 0, stream>>>(v, sig, tokens, hidden, residual_in, residual_out, weight, eps, out,
                                              out_fp8, out_scale);
  return rcclx_comm_launched(prev);
}
