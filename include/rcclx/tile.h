/* rcclx/tile.h - tile-granular publish / wait, for AllReduce fused into a
 * producer kernel (a GEMM epilogue).
 *
 * A fused kernel on every rank computes output tiles, stores tile t into
 * its own registered input region (rcclx_comm_input, at an offset the
 * kernel chooses, the same on every rank) and publishes it; the block that
 * reduces tile t waits until every rank published it, reads every rank's
 * copy (rcclx_dda_reduce_vector, or the FP8 group pieces of
 * rcclx/fp8/collectives.h), then marks it done; before the kernel ends (or
 * the tile's storage is written again) the block waits until every rank is
 * done with its tiles.  Per tile and call:
 *
 *   e = rcclx_tile_begin(c, t);     // the epoch of this publication
 *   ... store the tile into my input region ...
 *   rcclx_tile_publish(c, t, e);    // release: my tile is visible to peers
 *   rcclx_tile_wait(c, t, e);       // acquire: every rank's tile t is here
 *   ... reduce tile t from every rank, write my output ...
 *   rcclx_tile_done(c, t, e);       // release: I no longer read tile t
 *   rcclx_tile_wait_done(c, t, e);  // every rank finished reading tile t
 *
 * All threads of the block call each function (they synchronise the
 * block).  Ordering: publish makes the block's earlier stores visible to a
 * peer's block that returns from tile_wait for that epoch (release/acquire,
 * system scope, as rcclx/signal.h); tile_done orders the block's reads of
 * peers' tile t before any peer's tile_wait_done returns, so a tile's
 * storage may be written again after tile_wait_done.  Epochs live in device
 * memory and are bumped in-kernel: no reset, graph-capturable.
 *
 * Deadlock-freedom contract (the caller's to keep):
 *   1. Every rank publishes every tile exactly once per call, and calls
 *      rcclx_tile_done for it exactly once (after tile_wait).
 *   2. Either the grid is persistent and co-resident on every GPU (at most
 *      rcclx_comm_persistent_grid's blocks: with virtual ranks the ranks
 *      share one GPU), and every rank's blocks handle tiles in the same
 *      order (tile t by block t % gridDim.x, ascending);
 *      or the waits run in a later kernel than the publishes.
 *   3. At most RCCLX_MAX_TILES tiles per call.
 * A wait that breaks the contract spins until the watchdog (if on) records
 * RCCLX_ERR_PEER_TIMEOUT, and then returns 1 so the kernel can exit.
 */
#pragma once

#include <rcclx/signal.h>

#if defined(RCCLX_GPU_LANG)

/* Epoch of this rank's next publication of tile t.  Every thread may call
 * it; it reads only this rank's own counter. */
RCCLX_DEVICE uint32_t rcclx_tile_begin(const rcclx_dev_comm& c, int t) {
  return rcclx_ld_volatile_u32(&c.sigs[c.rank]->tile_epoch[t]) + 1u;
}

/* Publish tile t at epoch e to every rank (this rank included). */
RCCLX_DEVICE void rcclx_tile_publish(const rcclx_dev_comm& c, int t, uint32_t e) {
  __syncthreads(); /* the block's tile stores happen before the releases */
  if ((int)threadIdx.x < c.nranks) rcclx_flag_release(c, &c.sigs[threadIdx.x]->tile_ready[t][c.rank], e);
}

/* Wait until every rank published tile t at epoch >= e.  Returns 1 if the
 * watchdog fired (the block must stop), else 0. */
RCCLX_DEVICE int rcclx_tile_wait(const rcclx_dev_comm& c, int t, uint32_t e) {
  int bad = 0;
  uint32_t last = 0;
  if ((int)threadIdx.x < c.nranks)
    bad = rcclx_spin_until(c, &c.sigs[c.rank]->tile_ready[t][threadIdx.x], e, t, (int)threadIdx.x, &last);
  return __syncthreads_or(bad);
}

/* This rank has finished reading every rank's tile t (epoch e).  On
 * return every thread of the block sees the new epoch (rcclx_tile_begin(c,
 * t) == e + 1). */
RCCLX_DEVICE void rcclx_tile_done(const rcclx_dev_comm& c, int t, uint32_t e) {
  __syncthreads(); /* the block's reads of tile t happen before the releases */
  if ((int)threadIdx.x < c.nranks) rcclx_flag_release(c, &c.sigs[threadIdx.x]->tile_done[t][c.rank], e);
  if (threadIdx.x == 0) rcclx_st_u32(&c.sigs[c.rank]->tile_epoch[t], e);
  __syncthreads();
}

/* Wait until every rank finished reading tile t (epoch >= e); after it, the
 * tile's storage in this rank's buffer may be written again.  Returns 1 if
 * the watchdog fired, else 0. */
RCCLX_DEVICE int rcclx_tile_wait_done(const rcclx_dev_comm& c, int t, uint32_t e) {
  int bad = 0;
  uint32_t last = 0;
  if ((int)threadIdx.x < c.nranks)
    bad = rcclx_spin_until(c, &c.sigs[c.rank]->tile_done[t][threadIdx.x], e, t, (int)threadIdx.x, &last);
  return __syncthreads_or(bad);
}

#endif /* RCCLX_GPU_LANG */
