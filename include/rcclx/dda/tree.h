/* rcclx/dda/tree.h - two-shot (DDA tree) pieces: reduce-scatter by direct
 * reads, then all-gather by direct reads.
 *
 * Vectors are split into nranks contiguous shards; rank r reduces shard r
 * from every rank (same fp32 rank order as flat, rounded once) and stores it
 * in its own buffer, then every rank gathers each shard from its owner.  The
 * result is bitwise identical to the flat algorithm's.
 */
#pragma once

#include <rcclx/dda/flat.h>

/* Vectors per shard; shard r is [r*vps, min(nvec, (r+1)*vps)). */
RCCLX_HOST_DEVICE size_t rcclx_tree_shard_vectors(size_t nvec, int nranks) {
  return (nvec + (size_t)nranks - 1) / (size_t)nranks;
}

/* 16-byte vectors each thread keeps in flight in the DDA copy loops
 * (copy-in, all-gather): loads first, then stores. */
#ifndef RCCLX_DDA_COPY_UNROLL
#  define RCCLX_DDA_COPY_UNROLL 4
#endif

#if defined(RCCLX_GPU_LANG)

/* Reduce-scatter piece: reduce vector v of this rank's shard from every
 * rank's cards[r].send and store it, clipped to n elements, at
 * cards[c.rank].recv (which may equal cards[c.rank].send: peers never read
 * this rank's copy of its own shard). */
template <typename T, int OP, int NMAX>
RCCLX_DEVICE void rcclx_dda_tree_reduce_vector(const rcclx_dev_comm& c, const rcclx_call_card* cards, size_t v,
                                               size_t n) {
  rcclx_store_vec_clipped((T*)cards[c.rank].recv, v, n, rcclx_dda_reduce_sources<T, OP, NMAX>(cards, c.nranks, v, n));
}

/* All-gather piece: this thread's vectors v0, v0 + stride, ... < nvec of
 * the result, each from its owner's cards[owner].recv (shards of vps
 * vectors), stored clipped to n elements into out;
 * RCCLX_DDA_COPY_UNROLL loads in flight.  Vectors owned by rank `skip`
 * (-1: none) are left alone (DIRECT: this rank's shard is already in out). */
template <typename T>
RCCLX_DEVICE void rcclx_dda_tree_gather(const rcclx_call_card* cards, int skip, size_t v0, size_t stride,
                                        size_t vps, size_t nvec, size_t n, T* out) {
  const int U = RCCLX_DDA_COPY_UNROLL;
  for (; v0 < nvec; v0 += U * stride) {
    rcclx_vec16 x[RCCLX_DDA_COPY_UNROLL];
    int owner[RCCLX_DDA_COPY_UNROLL];
    RCCLX_UNROLL
    for (int u = 0; u < U; ++u) {
      const size_t v = v0 + u * stride;
      /* 32-bit division: vector counts are < 2^32 (rcclx_dda_max_launch_elems). */
      owner[u] = v < nvec ? (int)((uint32_t)v / (uint32_t)vps) : skip;
      if (owner[u] != skip) x[u] = rcclx_load_vec_clipped((const T*)cards[owner[u]].recv, v, n);
    }
    RCCLX_UNROLL
    for (int u = 0; u < U; ++u)
      if (owner[u] != skip) rcclx_store_vec_clipped(out, v0 + u * stride, n, x[u]);
  }
}

#endif /* RCCLX_GPU_LANG */
