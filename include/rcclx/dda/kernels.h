/* rcclx/dda/kernels.h - the ready DDA AllReduce kernels.
 *
 * Both run the communicator's fixed grid (c.nblocks x c.nthreads) and the
 * fixed vector->thread mapping of rcclx/comm.h.  Where the peers find a
 * rank's message (`src`, an RCCLX_SRC_* value of rcclx/dda/plan.h, the same
 * on every rank):
 *   STAGED      the kernel copies `send` into the copy-in half chosen by
 *               the block slot's call count (no end barrier needed: the
 *               next call stages into the other half);
 *   REGISTERED  `send` is the registered input region (zero-copy; a fused
 *               producer wrote it): no copy, an end barrier;
 *   DIRECT      two-shot only: peers read `send` and the reduced shards
 *               in `recv` where the user keeps them (RCCLX_VIEW_DIRECT views
 *               only; the pointers travel with the first barrier): no copy
 *               and no buffer-size limit, an end barrier.
 */
#pragma once

#include <rcclx/dda/plan.h>
#include <rcclx/dda/tree.h>
#include <rcclx/trace.h>

#if defined(RCCLX_GPU_LANG)

/* What every DDA kernel starts with, loaded together before any data: the
 * block slot's call count, its barrier session, whether this rank holds
 * an unread error; the 16-byte vector count; then, with STAGED, the
 * message copied into this rank's copy-in half. */
typedef struct rcclx_dda_call {
  uint32_t call;
  uint32_t failed; /* an error is recorded (rcclx_dda_first_barrier) */
  rcclx_barrier bar;
  size_t nvec;
} rcclx_dda_call;

/* Byte offset of the copy-in half a STAGED call `call` of a block slot
 * uses in every rank's buffer. */
RCCLX_DEVICE size_t rcclx_dda_staged_offset(const rcclx_dev_comm& c, uint32_t call) {
  return rcclx_region_offset(&c, RCCLX_REGION_COPY0 + (int)(call & 1u));
}

/* Copies vectors [0, nvec) of send (n elements) to dst, this thread's share
 * under the fixed mapping (rcclx_grid_first_vector), RCCLX_DDA_COPY_UNROLL
 * loads in flight. */
template <typename T>
RCCLX_DEVICE void rcclx_dda_copy_in(const T* send, char* dst, size_t n, size_t nvec) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const int U = RCCLX_DDA_COPY_UNROLL;
  for (size_t v0 = rcclx_grid_first_vector((int)blockIdx.x, (int)threadIdx.x, (int)gridDim.x); v0 < nvec;
       v0 += U * stride) {
    rcclx_vec16 x[RCCLX_DDA_COPY_UNROLL];
    RCCLX_UNROLL
    for (int u = 0; u < U; ++u)
      if (v0 + u * stride < nvec) x[u] = rcclx_load_vec_clipped(send, v0 + u * stride, n);
    RCCLX_UNROLL
    for (int u = 0; u < U; ++u)
      if (v0 + u * stride < nvec) rcclx_st16(dst + (v0 + u * stride) * 16, x[u]);
  }
}

/* The block slot's call count and barrier session, read before any data
 * (nvec left 0): what every collective kernel of the fixed grid opens.
 * First it waits for the stream's previous kernel (a programmatic
 * dependent launch may start this one early; see rcclx_dda_done_waiting
 * in rcclx/signal.h). */
RCCLX_DEVICE rcclx_dda_call rcclx_dda_open_call(const rcclx_dev_comm& c) {
  rcclx_grid_dependency_wait();
  rcclx_dda_call k;
  k.call = rcclx_ld_volatile_u32(&c.sigs[c.rank]->slot[blockIdx.x].calls);
  k.bar = rcclx_barrier_open(c, (int)blockIdx.x);
  k.failed = rcclx_error_unread(c);
  k.nvec = 0;
  return k;
}

/* Opens the call.  cards[r] (shared memory) gets where rank r's message is
 * for STAGED and REGISTERED (its buffer: input and reduced shard at the
 * same place); DIRECT fills it at the first barrier.  The caller's first
 * barrier makes cards visible to the whole block. */
template <typename T>
RCCLX_DEVICE rcclx_dda_call rcclx_dda_begin_call(const rcclx_dev_comm& c, const T* send, size_t n, int src,
                                                 rcclx_call_card* cards) {
  rcclx_dda_call k = rcclx_dda_open_call(c);
  rcclx_dda_launch_next_early(c);
  RCCLX_TRACE(c, k.call, 0);
  k.nvec = (n + RCCLX_PACK_ELEMS(T) - 1) / RCCLX_PACK_ELEMS(T);
  if (src == RCCLX_SRC_DIRECT) return k;
  const size_t off = src == RCCLX_SRC_REGISTERED ? rcclx_region_offset(&c, RCCLX_REGION_INPUT)
                                                 : rcclx_dda_staged_offset(c, k.call);
  rcclx_dda_cards_at(c, off, cards);
  if (src == RCCLX_SRC_STAGED) rcclx_dda_copy_in(send, (char*)c.bufs[c.rank] + off, n, k.nvec);
  return k;
}

/* Ends the call: the barrier session and the call count written back. */
RCCLX_DEVICE void rcclx_dda_finish_call(const rcclx_dev_comm& c, const rcclx_dda_call* k) {
  rcclx_barrier_close(c, &k->bar);
  if (threadIdx.x == 0) rcclx_st_u32(&c.sigs[c.rank]->slot[blockIdx.x].calls, k->call + 1u);
}

/* The first barrier of a call, with the call cards in DIRECT mode.
 * Returns 1 if the kernel must stop now: a timeout (return at once), or
 * ranks that disagree (every rank sees the mismatch at this same barrier,
 * so each ends the call here and the epochs stay in step).  Also, before
 * arriving, when this rank holds an unread error (rcclx_error_unread). */
RCCLX_DEVICE int rcclx_dda_first_barrier(const rcclx_dev_comm& c, rcclx_dda_call* k, uint32_t sig, int src,
                                         const void* send, void* recv, rcclx_call_card* cards) {
  if (k->failed) return 1;
  rcclx_call_card mine;
  mine.send = send;
  mine.recv = recv;
  const int b = rcclx_barrier_sync(c, &k->bar, sig, mine, src == RCCLX_SRC_DIRECT ? cards : NULL);
  if (b == RCCLX_BARRIER_MISMATCH) rcclx_dda_finish_call(c, k);
  return b != RCCLX_BARRIER_OK;
}

/* Ends a flat or tree call after its last data pass: the end barrier
 * unless STAGED (the next call stages into the other half), then lets the
 * stream's next kernel in and closes the call.  Returns 1 if the block must
 * stop at once (a watchdog timeout: the call is not closed). */
RCCLX_DEVICE int rcclx_dda_end_call(const rcclx_dev_comm& c, rcclx_dda_call* k, int src) {
  if (src != RCCLX_SRC_STAGED) {
    if (rcclx_barrier_sync(c, &k->bar, 0, rcclx_no_card(), NULL) == RCCLX_BARRIER_TIMEOUT) return 1;
    rcclx_dda_done_waiting();
  }
  rcclx_dda_finish_call(c, k);
  RCCLX_TRACE(c, k->call, 4);
  return 0;
}

/* One-shot: [copy-in] barrier reduce-all [end barrier if REGISTERED].
 * Never DIRECT: in place it would overwrite its input under its peers'
 * reads (rcclx_dda_resolve). */
template <typename T, int OP, int NMAX>
RCCLX_GLOBAL void RCCLX_LAUNCH_BOUNDS(RCCLX_DDA_MAX_THREADS)
    rcclx_dda_flat_kernel(rcclx_dev_comm c, const T* send, T* recv, size_t n, uint32_t sig, int src) {
  __shared__ rcclx_call_card cards[RCCLX_MAX_RANKS];
  rcclx_dda_call k = rcclx_dda_begin_call(c, send, n, src, cards);
  RCCLX_TRACE(c, k.call, 1);
  if (rcclx_dda_first_barrier(c, &k, sig, src, send, recv, cards)) return;
  RCCLX_TRACE(c, k.call, 2);
  if (src == RCCLX_SRC_STAGED) rcclx_dda_done_waiting();
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t v = rcclx_grid_first_vector((int)blockIdx.x, (int)threadIdx.x, (int)gridDim.x); v < k.nvec; v += stride)
    rcclx_store_vec_clipped(recv, v, n, rcclx_dda_reduce_sources<T, OP, NMAX>(cards, c.nranks, v, n));
  RCCLX_TRACE(c, k.call, 3);
  (void)rcclx_dda_end_call(c, &k, src);
}

/* Two-shot: [copy-in] barrier reduce-own-shard barrier gather-all [end
 * barrier unless STAGED].  Rank r's reduced shard goes to cards[r].recv
 * (STAGED / REGISTERED: over its own copy in its buffer; DIRECT: straight
 * into its recv, which peers then read). */
template <typename T, int OP, int NMAX>
RCCLX_GLOBAL void RCCLX_LAUNCH_BOUNDS(RCCLX_DDA_MAX_THREADS)
    rcclx_dda_tree_kernel(rcclx_dev_comm c, const T* send, T* recv, size_t n, uint32_t sig, int src) {
  __shared__ rcclx_call_card cards[RCCLX_MAX_RANKS];
  rcclx_dda_call k = rcclx_dda_begin_call(c, send, n, src, cards);
  RCCLX_TRACE(c, k.call, 1);
  if (rcclx_dda_first_barrier(c, &k, sig, src, send, recv, cards)) return;
  RCCLX_TRACE(c, k.call, 2);
  const size_t nvec = k.nvec, stride = (size_t)gridDim.x * blockDim.x;
  const size_t v0 = rcclx_grid_first_vector((int)blockIdx.x, (int)threadIdx.x, (int)gridDim.x);
  const size_t vps = rcclx_tree_shard_vectors(nvec, c.nranks);
  {
    /* My shard, visited with the same vector->thread mapping as every phase. */
    const size_t begin = vps * (size_t)c.rank;
    const size_t end = begin + vps < nvec ? begin + vps : nvec;
    /* 32-bit modulo (a 64-bit one costs registers the co-resident grid
     * does not have): vector counts are < 2^32 (see rcclx_dda_max_launch_elems). */
    const uint32_t st = (uint32_t)stride;
    for (size_t v = begin + ((uint32_t)v0 + st - (uint32_t)begin % st) % st; v < end; v += stride)
      rcclx_dda_tree_reduce_vector<T, OP, NMAX>(c, cards, v, n);
  }
  if (rcclx_barrier_sync(c, &k.bar, 0, rcclx_no_card(), NULL) == RCCLX_BARRIER_TIMEOUT) return;
  /* DIRECT: my own shard is already in recv. */
  const int skip = src == RCCLX_SRC_DIRECT ? c.rank : -1;
  if (src == RCCLX_SRC_STAGED) rcclx_dda_done_waiting();
  rcclx_dda_tree_gather<T>(cards, skip, v0, stride, vps, nvec, n, recv);
  RCCLX_TRACE(c, k.call, 3);
  (void)rcclx_dda_end_call(c, &k, src);
}

#endif /* RCCLX_GPU_LANG */

#include <rcclx/dda/ll.h>

#if defined(RCCLX_GPU_LANG)

/* Fewest co-resident blocks per multiprocessor over every DDA kernel at
 * `threads` threads: what the fixed grid must respect (0 on error).  Both
 * LL modes count: the grid is sized before the view's flags, which pick
 * the mode, are set (rcclx_comm_grid_ runs first).  The mode not used
 * costs 18 more occupancy queries, at communicator creation only. */
template <typename T, int OP, int NMAX>
RCCLX_HOST int rcclx_dda_occupancy_one_(int threads) {
  int a = 0, b = 0, l = 0, m = 0;
  if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&a, (const void*)rcclx_dda_flat_kernel<T, OP, NMAX>, threads, 0) !=
          hipSuccess ||
      hipOccupancyMaxActiveBlocksPerMultiprocessor(&b, (const void*)rcclx_dda_tree_kernel<T, OP, NMAX>, threads, 0) !=
          hipSuccess ||
      hipOccupancyMaxActiveBlocksPerMultiprocessor(
          &l, (const void*)rcclx_dda_ll_kernel<T, OP, NMAX, RCCLX_LL_ANY>, threads, 0) != hipSuccess ||
      hipOccupancyMaxActiveBlocksPerMultiprocessor(
          &m, (const void*)rcclx_dda_ll_kernel<T, OP, NMAX, RCCLX_LL_LOCAL>, threads, 0) != hipSuccess)
    return 0;
  a = a < b ? a : b;
  l = l < m ? l : m;
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
