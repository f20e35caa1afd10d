/* rcclx/signal.h - cross-rank barrier between same-index blocks.
 *
 * Monotonic epochs, no reset: block b of each rank keeps the number of
 * barriers it has passed in its own signal area (device memory, bumped
 * in-kernel), so back-to-back calls, a rank running a call ahead of another,
 * and graph capture + replay all need no host state and no reset.  A rank
 * can run at most one barrier ahead of a peer (it cannot pass a barrier the
 * peer has not reached), so "arrived epoch >= mine" is the whole test, and
 * 32-bit wrap-around is handled by the signed difference.
 */
#pragma once

#include <rcclx/comm.h>

#if defined(RCCLX_GPU_LANG)

#define RCCLX_BARRIER_OK 0
#define RCCLX_BARRIER_TIMEOUT 1  /* the block must return at once */
#define RCCLX_BARRIER_MISMATCH 2 /* skip the data work, keep the barriers */

/* Keeps the first error of this rank; later ones are dropped. */
RCCLX_DEVICE void rcclx_record_error(const rcclx_dev_comm& c, rcclx_status s, int block, int peer, uint32_t epoch) {
  rcclx_error_record* r = &c.sigs[c.rank]->error;
  if (atomicCAS(&r->status, 0u, (uint32_t)s) == 0u) {
    r->rank = c.rank;
    r->block = block;
    r->peer = peer;
    r->epoch = epoch;
  }
}

/* The watchdog's part of one spin iteration: with c.watchdog_ns set, reads
 * the clock every 1024 spins; once the wait passed c.watchdog_ns it records
 * RCCLX_ERR_PEER_TIMEOUT (slot, peer, epoch) and returns 1 (stop waiting).
 * *spins and *t0 start at 0 and belong to one wait. */
RCCLX_DEVICE int rcclx_watchdog_expired(const rcclx_dev_comm& c, uint32_t* spins, uint64_t* t0, int slot, int peer,
                                        uint32_t epoch) {
  if (!c.watchdog_ns || (++*spins & 1023u) != 0u) return 0;
  const uint64_t now = rcclx_wall_ns();
  if (!*t0) {
    *t0 = now;
    return 0;
  }
  if (now - *t0 <= c.watchdog_ns) return 0;
  rcclx_record_error(c, RCCLX_ERR_PEER_TIMEOUT, slot, peer, epoch);
  return 1;
}

/* Spin (acquire, system scope) until *flag reaches epoch e (signed
 * difference: wrap-around safe).  With the watchdog on, gives up after
 * c.watchdog_ns, records RCCLX_ERR_PEER_TIMEOUT (slot, peer, e) and returns
 * 1; else returns 0.  One thread calls it per flag. */
RCCLX_DEVICE int rcclx_spin_until(const rcclx_dev_comm& c, const uint32_t* flag, uint32_t e, int slot, int peer) {
  uint32_t spins = 0;
  uint64_t t0 = 0;
  while ((int32_t)(rcclx_ld_acquire_sys_u32(flag) - e) < 0)
    if (rcclx_watchdog_expired(c, &spins, &t0, slot, peer, e)) return 1;
  return 0;
}

/* Barrier among block `slot` of every rank.  Every thread of the block
 * calls it.  Ordering: whatever any thread of this block wrote before the
 * call is visible to every peer's block `slot` once its call returns, and
 * vice versa.  Why that is enough: the __syncthreads before the arrival
 * makes the block's writes happen-before thread t's release store (system
 * scope, cumulative), the peer's acquire load that observes it (system
 * scope) plus its __syncthreads make them visible to all its threads.  Both
 * orders are needed at every position: the release also orders the block's
 * earlier peer READS before the arrival (a peer may overwrite that data
 * next), the acquire orders later reads and writes after it.
 * `sig` != 0: also check that every rank passed the same call fingerprint.
 * Returns RCCLX_BARRIER_OK, _TIMEOUT (watchdog; error recorded) or
 * _MISMATCH (ranks disagree; error recorded). */
RCCLX_DEVICE int rcclx_barrier_block(const rcclx_dev_comm& c, int slot, uint32_t sig) {
  rcclx_signal* me = c.sigs[c.rank];
  const int t = (int)threadIdx.x;
  int bad = RCCLX_BARRIER_OK;
  uint32_t e = 0;
  __syncthreads();
  if (t < c.nranks) {
    e = me->epoch[slot] + 1u;
    rcclx_signal* peer = c.sigs[t];
    if (sig) peer->call_sig[slot][c.rank][e & 1u] = sig; /* published by the release below */
    rcclx_st_release_sys_u32(&peer->arrive[slot][c.rank], e);
    bad = rcclx_spin_until(c, &me->arrive[slot][t], e, slot, t) ? RCCLX_BARRIER_TIMEOUT : RCCLX_BARRIER_OK;
    if (!bad && sig && me->call_sig[slot][t][e & 1u] != sig) {
      rcclx_record_error(c, RCCLX_ERR_RANK_MISMATCH, slot, t, e);
      bad = RCCLX_BARRIER_MISMATCH;
    }
  }
  const int timeout = __syncthreads_or(bad == RCCLX_BARRIER_TIMEOUT);
  const int mismatch = __syncthreads_or(bad == RCCLX_BARRIER_MISMATCH);
  if (t == 0) me->epoch[slot] = e; /* read above by threads < nranks, all past the syncs */
  return timeout ? RCCLX_BARRIER_TIMEOUT : (mismatch ? RCCLX_BARRIER_MISMATCH : RCCLX_BARRIER_OK);
}

#endif /* RCCLX_GPU_LANG */
