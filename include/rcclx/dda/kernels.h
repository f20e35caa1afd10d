/* rcclx/dda/kernels.h - the ready DDA AllReduce kernels.
 *
 * Both run the communicator's fixed grid (c.nblocks x c.nthreads) and the
 * fixed vector->thread mapping of rcclx/comm.h; both take the message either
 * from `send` (copied into the copy-in half chosen by the block slot's call
 * count) or, zero_copy != 0, from the registered input region.
 */
#pragma once

#include <rcclx/dda/tree.h>

#if defined(RCCLX_GPU_LANG)

/* Byte offset of this call's message in every rank's buffer. */
RCCLX_DEVICE size_t rcclx_dda_call_offset(const rcclx_dev_comm& c, uint32_t call, int zero_copy) {
  return (zero_copy ? (size_t)RCCLX_REGION_INPUT : (size_t)(call & 1u)) * c.region_bytes;
}

template <typename T>
RCCLX_DEVICE void rcclx_dda_copy_in(const rcclx_dev_comm& c, const T* send, size_t off, size_t n, size_t nvec) {
  char* mine = (char*)c.bufs[c.rank] + off;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += stride)
    rcclx_st16(mine + v * 16, rcclx_load_vec_clipped(send, v, n));
}

/* What every DDA kernel starts with: this block slot's call count, the
 * message's offset in every rank's buffer and its 16-byte vector count;
 * with copy-in, the message staged into this rank's buffer. */
typedef struct rcclx_dda_call {
  uint32_t call;
  size_t off, nvec;
} rcclx_dda_call;
template <typename T>
RCCLX_DEVICE rcclx_dda_call rcclx_dda_begin_call(const rcclx_dev_comm& c, const T* send, size_t n, int zero_copy) {
  rcclx_dda_call k;
  k.call = c.sigs[c.rank]->calls[blockIdx.x];
  k.off = rcclx_dda_call_offset(c, k.call, zero_copy);
  k.nvec = (n + RCCLX_PACK_ELEMS(T) - 1) / RCCLX_PACK_ELEMS(T);
  if (!zero_copy) rcclx_dda_copy_in(c, send, k.off, n, k.nvec);
  return k;
}

RCCLX_DEVICE void rcclx_dda_finish_call(const rcclx_dev_comm& c, uint32_t call) {
  /* Every thread read `call` before the barrier this follows. */
  if (threadIdx.x == 0) c.sigs[c.rank]->calls[blockIdx.x] = call + 1u;
}

/* One-shot: [copy-in] barrier reduce-all [end barrier if zero-copy]. */
template <typename T, int OP, int NMAX>
RCCLX_GLOBAL void RCCLX_LAUNCH_BOUNDS(RCCLX_DDA_MAX_THREADS)
    rcclx_dda_flat_kernel(rcclx_dev_comm c, const T* send, T* recv, size_t n, uint32_t sig, int zero_copy) {
  const int slot = (int)blockIdx.x;
  const rcclx_dda_call k = rcclx_dda_begin_call(c, send, n, zero_copy);
  const size_t off = k.off, nvec = k.nvec;
  const int b = rcclx_barrier_block(c, slot, sig);
  if (b == RCCLX_BARRIER_TIMEOUT) return;
  if (b == RCCLX_BARRIER_OK) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += stride)
      rcclx_store_vec_clipped(recv, v, n, rcclx_dda_reduce_vector<T, OP, NMAX>(c, off, v));
  }
  if (zero_copy && rcclx_barrier_block(c, slot, 0) == RCCLX_BARRIER_TIMEOUT) return;
  rcclx_dda_finish_call(c, k.call);
}

/* Two-shot: [copy-in] barrier reduce-own-shard barrier gather-all
 * [end barrier if zero-copy].  The reduced shard overwrites this rank's copy
 * of it in place (in zero-copy mode: in the registered input region). */
template <typename T, int OP, int NMAX>
RCCLX_GLOBAL void RCCLX_LAUNCH_BOUNDS(RCCLX_DDA_MAX_THREADS)
    rcclx_dda_tree_kernel(rcclx_dev_comm c, const T* send, T* recv, size_t n, uint32_t sig, int zero_copy) {
  const int slot = (int)blockIdx.x;
  const rcclx_dda_call k = rcclx_dda_begin_call(c, send, n, zero_copy);
  const size_t off = k.off, nvec = k.nvec;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t v0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  int b = rcclx_barrier_block(c, slot, sig);
  if (b == RCCLX_BARRIER_TIMEOUT) return;
  const int ok = b == RCCLX_BARRIER_OK;
  if (ok) {
    /* My shard, visited with the same vector->thread mapping as every phase. */
    const size_t vps = rcclx_tree_shard_vectors(nvec, c.nranks);
    const size_t begin = vps * (size_t)c.rank;
    const size_t end = begin + vps < nvec ? begin + vps : nvec;
    /* 32-bit modulo (a 64-bit one costs registers the co-resident grid
     * does not have): vector counts are < 2^32 (region < 2^36 bytes). */
    const uint32_t st = (uint32_t)stride;
    for (size_t v = begin + ((uint32_t)v0 + st - (uint32_t)begin % st) % st; v < end; v += stride)
      rcclx_dda_tree_reduce_vector<T, OP, NMAX>(c, off, off, v);
  }
  if (rcclx_barrier_block(c, slot, 0) == RCCLX_BARRIER_TIMEOUT) return;
  if (ok)
    for (size_t v = v0; v < nvec; v += stride) rcclx_dda_tree_gather_vector<T>(c, off, v, nvec, n, recv);
  if (zero_copy && rcclx_barrier_block(c, slot, 0) == RCCLX_BARRIER_TIMEOUT) return;
  rcclx_dda_finish_call(c, k.call);
}

#endif /* RCCLX_GPU_LANG */

#include <rcclx/dda/lamport.h>

#if defined(RCCLX_GPU_LANG)

/* Fewest co-resident blocks per multiprocessor over every DDA kernel at
 * `threads` threads: what the fixed grid must respect (0 on error). */
template <typename T, int OP, int NMAX>
RCCLX_HOST int rcclx_dda_occupancy_one_(int threads) {
  int a = 0, b = 0, l = 0;
  if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&a, (const void*)rcclx_dda_flat_kernel<T, OP, NMAX>, threads, 0) !=
          hipSuccess ||
      hipOccupancyMaxActiveBlocksPerMultiprocessor(&b, (const void*)rcclx_dda_tree_kernel<T, OP, NMAX>, threads, 0) !=
          hipSuccess ||
      hipOccupancyMaxActiveBlocksPerMultiprocessor(&l, (const void*)rcclx_dda_lamport_kernel<T, OP, NMAX>, threads, 0) !=
          hipSuccess)
    return 0;
  a = a < b ? a : b;
  return a < l ? a : l;
}
template <typename T, int NMAX>
RCCLX_HOST int rcclx_dda_occupancy_ops_(int threads) {
  int m = rcclx_dda_occupancy_one_<T, RCCLX_SUM, NMAX>(threads), x;
  if ((x = rcclx_dda_occupancy_one_<T, RCCLX_MAX, NMAX>(threads)) < m) m = x;
  if ((x = rcclx_dda_occupancy_one_<T, RCCLX_MIN, NMAX>(threads)) < m) m = x;
  return m;
}
template <int NMAX>
RCCLX_HOST int rcclx_dda_occupancy_types_(int threads) {
  int m = rcclx_dda_occupancy_ops_<float, NMAX>(threads), x;
  if ((x = rcclx_dda_occupancy_ops_<rcclx_f16, NMAX>(threads)) < m) m = x;
  if ((x = rcclx_dda_occupancy_ops_<rcclx_bf16, NMAX>(threads)) < m) m = x;
  return m;
}
RCCLX_HOST int rcclx_dda_min_occupancy(int threads) {
  int m = rcclx_dda_occupancy_types_<4>(threads), x;
  if ((x = rcclx_dda_occupancy_types_<8>(threads)) < m) m = x;
  return m;
}

#endif /* RCCLX_GPU_LANG */
