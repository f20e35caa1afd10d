/* rcclx/dda/flat.h - one-shot (DDA flat) reduction pieces.
 *
 * Every rank reads a 16-byte vector from every rank's buffer, reduces in
 * fp32 in rank order 0..nranks-1 (the same order on every rank, so results
 * are bitwise identical everywhere) and rounds once to T.
 */
#pragma once

#include <rcclx/signal.h>

#if defined(RCCLX_GPU_LANG)

/* Largest block of the DDA kernels (flat, tree, LL): their launch
 * bounds (rcclx/comm.h). */
#define RCCLX_DDA_MAX_THREADS RCCLX_MAX_THREADS

/* The fixed grid's vector->thread mapping (rcclx/comm.h): thread t of
 * block b (of nb) handles vectors v0, v0 + S, v0 + 2S, ... of a message,
 * where v0 is returned here and S = nb * blockDim.x (a sweep).  Within a
 * sweep, runs of RCCLX_WARP_SIZE consecutive vectors (one per lane: 16
 * bytes x warp, coalesced) are dealt to the blocks in turn, so a message of
 * a few KiB already spreads over every block and multiprocessor.
 * blockDim.x must be a multiple of the warp size (rcclx_config_resolve). */
RCCLX_DEVICE size_t rcclx_grid_first_vector(int b, int t, int nb) {
  const size_t G = RCCLX_WARP_SIZE;
  return ((size_t)t / G * (size_t)nb + (size_t)b) * G + (size_t)t % G;
}

/* Vector v (elements v*V .. v*V+V-1, V = 16/sizeof(T)) of a user array of n
 * elements; lanes past n read as 0 and are never written. p 16-byte aligned. */
template <typename T>
RCCLX_DEVICE rcclx_vec16 rcclx_load_vec_clipped(const T* p, size_t v, size_t n) {
  const int V = RCCLX_PACK_ELEMS(T);
  if ((v + 1) * V <= n) return rcclx_ld16(p + v * V);
  T e[RCCLX_PACK_ELEMS(T)];
  RCCLX_UNROLL
  for (int i = 0; i < V; ++i) e[i] = v * V + i < n ? p[v * V + i] : rcclx_from_f32<T>(0.0f);
  rcclx_vec16 r;
  memcpy(&r, e, 16);
  return r;
}
template <typename T>
RCCLX_DEVICE void rcclx_store_vec_clipped(T* p, size_t v, size_t n, rcclx_vec16 x) {
  const int V = RCCLX_PACK_ELEMS(T);
  if ((v + 1) * V <= n) {
    rcclx_st16(p + v * V, x);
    return;
  }
  T e[RCCLX_PACK_ELEMS(T)];
  memcpy(e, &x, 16);
RCCLX_UNROLL
  for (int i = 0; i < V; ++i)
    if (v * V + i < n) p[v * V + i] = e[i];
}

/* x[0..nranks) reduced in fp32 in rank order 0..nranks-1, rounded once to
 * T: the one summation order every DDA path shares. */
template <typename T, int OP, int NMAX>
RCCLX_DEVICE rcclx_vec16 rcclx_dda_accumulate(const rcclx_vec16* x, int nranks) {
  const int V = RCCLX_PACK_ELEMS(T);
  float acc[RCCLX_PACK_ELEMS(T)], y[RCCLX_PACK_ELEMS(T)];
  rcclx_unpack16<T>(x[0], acc);
  RCCLX_UNROLL
  for (int r = 1; r < NMAX; ++r) {
    if (r < nranks) {
      rcclx_unpack16<T>(x[r], y);
      RCCLX_UNROLL
      for (int i = 0; i < V; ++i) acc[i] = rcclx_reduce_f32<OP>(acc[i], y[i]);
    }
  }
  return rcclx_pack16<T>(acc);
}

/* Reduce vector v from every rank's buffer at byte offset src_off.  NMAX >=
 * nranks is a compile-time bound: all loads are in flight before the first
 * add.  The caller guarantees the peers' data is visible (a barrier or a
 * tile wait).  Returns the packed result (rounded once to T). */
template <typename T, int OP, int NMAX>
RCCLX_DEVICE rcclx_vec16 rcclx_dda_reduce_vector(const rcclx_dev_comm& c, size_t src_off, size_t v) {
  rcclx_vec16 x[NMAX];
  RCCLX_UNROLL
  for (int r = 0; r < NMAX; ++r)
    if (r < c.nranks) x[r] = rcclx_ld16((const char*)c.bufs[r] + src_off + v * 16);
  return rcclx_dda_accumulate<T, OP, NMAX>(x, c.nranks);
}

/* The same from call cards: cards[r].send is rank r's copy of the message
 * (16-byte aligned; the table may live in shared memory), holding at least
 * n elements; lanes at or past n read as 0 and no byte past them is read,
 * so it may be a user's buffer of exactly n elements. */
template <typename T, int OP, int NMAX>
RCCLX_DEVICE rcclx_vec16 rcclx_dda_reduce_sources(const rcclx_call_card* cards, int nranks, size_t v, size_t n) {
  rcclx_vec16 x[NMAX];
  if ((v + 1) * RCCLX_PACK_ELEMS(T) <= n) {
    RCCLX_UNROLL
    for (int r = 0; r < NMAX; ++r)
      if (r < nranks) x[r] = rcclx_ld16((const char*)cards[r].send + v * 16);
    return rcclx_dda_accumulate<T, OP, NMAX>(x, nranks);
  }
  /* The message's last, partial vector: element by element, same order. */
  const int V = RCCLX_PACK_ELEMS(T);
  float acc[RCCLX_PACK_ELEMS(T)];
  RCCLX_UNROLL
  for (int i = 0; i < V; ++i) {
    const size_t e = v * V + (size_t)i;
    acc[i] = e < n ? rcclx_to_f32(((const T*)cards[0].send)[e]) : 0.0f;
    for (int r = 1; r < nranks; ++r)
      if (e < n) acc[i] = rcclx_reduce_f32<OP>(acc[i], rcclx_to_f32(((const T*)cards[r].send)[e]));
  }
  return rcclx_pack16<T>(acc);
}

/* Cards for a message at byte offset off of every rank's buffer (what a
 * fused kernel that staged its output there passes to the card-based
 * pieces); thread t < nranks fills cards[t], the caller then syncs. */
RCCLX_DEVICE void rcclx_dda_cards_at(const rcclx_dev_comm& c, size_t off, rcclx_call_card* cards) {
  if ((int)threadIdx.x < c.nranks) {
    char* p = (char*)c.bufs[threadIdx.x] + off;
    cards[threadIdx.x].send = p;
    cards[threadIdx.x].recv = p;
  }
}

/* Block granularity, for fused kernels: this block's threads reduce vectors
 * [v_begin, v_end) of a message of n elements held at src_off in every
 * rank's buffer, writing elements < n of out.  Call after the data is
 * visible on all ranks; all threads of the block may call it. */
template <typename T, int OP, int NMAX>
RCCLX_DEVICE void rcclx_dda_flat_reduce_block(const rcclx_dev_comm& c, size_t src_off, size_t v_begin, size_t v_end,
                                              size_t n, T* out) {
  for (size_t v = v_begin + threadIdx.x; v < v_end; v += blockDim.x)
    rcclx_store_vec_clipped(out, v, n, rcclx_dda_reduce_vector<T, OP, NMAX>(c, src_off, v));
}

#endif /* RCCLX_GPU_LANG */
