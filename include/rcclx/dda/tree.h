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

#if defined(RCCLX_GPU_LANG)

/* Reduce-scatter piece: reduce owned vector v from every rank at src_off
 * and store it into this rank's own buffer at dst_off (dst_off == src_off
 * is allowed: peers never read this rank's copy of its own shard). */
template <typename T, int OP, int NMAX>
RCCLX_DEVICE void rcclx_dda_tree_reduce_vector(const rcclx_dev_comm& c, size_t src_off, size_t dst_off, size_t v) {
  const rcclx_vec16 r = rcclx_dda_reduce_vector<T, OP, NMAX>(c, src_off, v);
  rcclx_st16((char*)c.bufs[c.rank] + dst_off + v * 16, r);
}

/* All-gather piece: vector v of the result, from its owner's buffer at off. */
template <typename T>
RCCLX_DEVICE void rcclx_dda_tree_gather_vector(const rcclx_dev_comm& c, size_t off, size_t v, size_t nvec,
                                               size_t n, T* out) {
  /* 32-bit division: vector counts are < 2^32 (region < 2^36 bytes). */
  const int owner = (int)((uint32_t)v / (uint32_t)rcclx_tree_shard_vectors(nvec, c.nranks));
  rcclx_store_vec_clipped(out, v, n, rcclx_ld16((const char*)c.bufs[owner] + off + v * 16));
}

#endif /* RCCLX_GPU_LANG */
