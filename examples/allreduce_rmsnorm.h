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
// (rcclx_comm_input): no copy-in.  One kernel runs after the producer:
// barrier (every rank's x is visible), each block reduces whole rows across
// ranks and normalises them, end barrier (no producer rewrites its x while a
// peer still reads it).  Compared with the unfused sequence
// (rcclx_allreduce, then rmsnorm_unfused_kernel) it saves one write and one
// read of s and a launch; both give the same bits (same arithmetic, same
// reduction order).
//
// Copy and adapt: the places a copier changes are marked ADAPT.
#pragma once
#include <rcclx/rcclx.h>

#define RMSNORM_THREADS 512
#define RMSNORM_MAX_HIDDEN 65536  // ADAPT: only the host check uses it

// Block-wide sum or max in a fixed order (shared memory tree), so every
// rank and both the fused and the unfused kernel round identically.
template <bool MAX>
__device__ __forceinline__ float rmsnorm_block_reduce(float v, float* smem) {
  smem[threadIdx.x] = v;
  __syncthreads();
  for (int s = RMSNORM_THREADS / 2; s > 0; s /= 2) {
    if ((int)threadIdx.x < s)
      smem[threadIdx.x] = MAX ? rcclx_fmaxf(smem[threadIdx.x], smem[threadIdx.x + s]) : smem[threadIdx.x] + smem[threadIdx.x + s];
    __syncthreads();
  }
  const float r = smem[0];
  __syncthreads();
  return r;
}

// One row: residual add, RMSNorm, optional per-token FP8.  get_s(v) gives
// vector v (8 bf16) of the row's all-reduced values.  Shared by the fused
// and the unfused kernel; three streaming passes over the row (the second
// and third re-read what this thread itself wrote), so it needs few
// registers and fits the co-resident grid.  nvec = hidden / 8.
template <typename GetS>
__device__ __forceinline__ void rmsnorm_row(const GetS& get_s, size_t row, size_t nvec,
                                            const rcclx_bf16* residual_in, rcclx_bf16* residual_out,
                                            const rcclx_bf16* weight, float eps, rcclx_bf16* out, uint8_t* out_fp8,
                                            float* out_scale, float* smem) {
  float ss = 0.0f;
  for (size_t v = threadIdx.x; v < nvec; v += RMSNORM_THREADS) {
    float a[8], b[8];
    rcclx_unpack16<rcclx_bf16>(get_s(row * nvec + v), a);
    rcclx_unpack16<rcclx_bf16>(rcclx_ld16(residual_in + (row * nvec + v) * 8), b);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      a[i] = rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(a[i] + b[i]));  // the new residual
      ss += rcclx_mul_rn(a[i], a[i]);
    }
    rcclx_st16(residual_out + (row * nvec + v) * 8, rcclx_pack16<rcclx_bf16>(a));
  }
  const float inv = 1.0f / rcclx_sqrtf(rmsnorm_block_reduce<false>(ss, smem) / (float)(nvec * 8) + eps);
  float amax = 0.0f;
  for (size_t v = threadIdx.x; v < nvec; v += RMSNORM_THREADS) {
    float a[8], w[8];
    rcclx_unpack16<rcclx_bf16>(rcclx_ld16(residual_out + (row * nvec + v) * 8), a);
    rcclx_unpack16<rcclx_bf16>(rcclx_ld16(weight + v * 8), w);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      a[i] = rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(rcclx_mul_rn(rcclx_mul_rn(a[i], inv), w[i])));
      amax = rcclx_fmaxf(amax, rcclx_fabsf(a[i]));
    }
    rcclx_st16(out + (row * nvec + v) * 8, rcclx_pack16<rcclx_bf16>(a));
  }
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

// The fused kernel: launched on every rank with the communicator's grid
// size (gridDim.x == c.nblocks: row i belongs to block slot i % nblocks on
// every rank, as rcclx's barrier needs), RMSNORM_THREADS threads.
template <int NMAX>
__global__ void __launch_bounds__(RMSNORM_THREADS, 2)  // 2 per SM: the comm grid's co-residency
    allreduce_rmsnorm_kernel(rcclx_dev_comm c, size_t tokens, size_t hidden, const rcclx_bf16* residual_in,
                             rcclx_bf16* residual_out, const rcclx_bf16* weight, float eps, rcclx_bf16* out,
                             uint8_t* out_fp8, float* out_scale) {
  __shared__ float smem[RMSNORM_THREADS];
  const int slot = (int)blockIdx.x;
  // Every rank's producer has finished writing x into its input region.
  if (rcclx_barrier_block(c, slot, 0) == RCCLX_BARRIER_TIMEOUT) return;
  const size_t x_off = (size_t)RCCLX_REGION_INPUT * c.region_bytes, nvec = hidden / 8;
  const auto reduced = [&](size_t v) { return rcclx_dda_reduce_vector<rcclx_bf16, RCCLX_SUM, NMAX>(c, x_off, v); };
  for (size_t row = blockIdx.x; row < tokens; row += gridDim.x)
    rmsnorm_row(reduced, row, nvec, residual_in, residual_out, weight, eps, out, out_fp8, out_scale, smem);
  // No rank's producer may overwrite its x while a peer still reads it.
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
    rmsnorm_row(loaded, row, nvec, residual_in, residual_out, weight, eps, out, out_fp8, out_scale, smem);
}

// Host side of the fused call.  x must already be in every rank's input
// region (tokens * hidden bf16 <= region); hidden a multiple of 8 and at
// most RMSNORM_MAX_HIDDEN; residual_in may equal residual_out (each thread
// reads its residual before writing it); out_fp8 / out_scale may be NULL (no FP8 output).
static inline rcclx_status allreduce_rmsnorm(rcclx_comm* comm, size_t tokens, size_t hidden,
                                             const rcclx_bf16* residual_in, rcclx_bf16* residual_out,
                                             const rcclx_bf16* weight, float eps, rcclx_bf16* out, uint8_t* out_fp8,
                                             float* out_scale, hipStream_t stream) {
  if (!comm || !comm->kind || !residual_in || !residual_out || !weight || !out) return RCCLX_ERR_NULL_POINTER;
  if (tokens == 0 || hidden == 0 || hidden % 8 || hidden > RMSNORM_MAX_HIDDEN)
    return RCCLX_ERR_INVALID_COUNT;
  if (tokens * hidden * 2 > comm->view.region_bytes) return RCCLX_ERR_BUFFER_TOO_SMALL;
  if ((out_fp8 == nullptr) != (out_scale == nullptr)) return RCCLX_ERR_INVALID_ARGUMENT;
  const rcclx_dev_comm& v = comm->view;
  // The barrier needs every rank's grid co-resident (virtual ranks share a GPU).
  const void* k = v.nranks <= 4 ? (const void*)allreduce_rmsnorm_kernel<4> : (const void*)allreduce_rmsnorm_kernel<8>;
  RCCLX_TRY(rcclx_comm_check_coresident(comm, k, RMSNORM_THREADS, v.nblocks));
  int prev = 0;  // the launch goes to the rank's GPU, whichever is current
  RCCLX_TRY(rcclx_comm_use_device(comm, &prev));
  if (v.nranks <= 4)
    allreduce_rmsnorm_kernel<4><<<v.nblocks, RMSNORM_THREADS, 0, stream>>>(v, tokens, hidden, residual_in, residual_out,
                                                                          weight, eps, out, out_fp8, out_scale);
  else
    allreduce_rmsnorm_kernel<8><<<v.nblocks, RMSNORM_THREADS, 0, stream>>>(v, tokens, hidden, residual_in, residual_out,
                                                                          weight, eps, out, out_fp8, out_scale);
  return rcclx_comm_launched(prev);
}
