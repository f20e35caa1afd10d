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
/* Ranks passed different fingerprints.  Every rank sees it at this same
 * barrier (each has a peer that differs), so a kernel that ends its call
 * here (rcclx_dda_first_barrier) keeps the epochs in step. */
#define RCCLX_BARRIER_MISMATCH 2

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

/* Whether this rank holds an error that rcclx_comm_check has not read.
 * A rank skips every collective from its first error until the error is
 * read (rcclx_dda_first_barrier, the LL kernel): a call that follows
 * a mismatch (the next chunk of a count its peers did not pass) then never
 * waits for peers that are not coming, and every rank of a mismatch
 * recorded it, so all skip alike.  A volatile load, meant to be issued
 * with the call's other counters. */
RCCLX_DEVICE uint32_t rcclx_error_unread(const rcclx_dev_comm& c) {
  return rcclx_ld_volatile_u32(&c.sigs[c.rank]->error.status);
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

/* The flag accesses of barriers and tile waits, at the scope the view
 * needs: system scope in general (peers on other GPUs: on gfx942 a release
 * is `buffer_wbl2 sc0 sc1` + an `sc0 sc1` store, on sm_90 `st.release.sys`),
 * device scope when every rank runs on this GPU (RCCLX_VIEW_ONE_DEVICE:
 * every peer thread is on the same device, so nothing beyond this GPU's
 * memory system needs to see the writes).  The branch is uniform. */
RCCLX_DEVICE void rcclx_flag_release(const rcclx_dev_comm& c, uint32_t* p, uint32_t v) {
  if (c.flags & RCCLX_VIEW_ONE_DEVICE) rcclx_st_release_dev_u32(p, v);
  else rcclx_st_release_sys_u32(p, v);
}
RCCLX_DEVICE uint32_t rcclx_flag_acquire(const rcclx_dev_comm& c, const uint32_t* p) {
  return (c.flags & RCCLX_VIEW_ONE_DEVICE) ? rcclx_ld_acquire_dev_u32(p) : rcclx_ld_acquire_sys_u32(p);
}
/* The same for a 64-bit arrival word (epoch in the low half). */
RCCLX_DEVICE void rcclx_flag_release(const rcclx_dev_comm& c, uint64_t* p, uint64_t v) {
  if (c.flags & RCCLX_VIEW_ONE_DEVICE) rcclx_st_release_dev_u64(p, v);
  else rcclx_st_release_sys_u64(p, v);
}
RCCLX_DEVICE uint64_t rcclx_flag_acquire(const rcclx_dev_comm& c, const uint64_t* p) {
  return (c.flags & RCCLX_VIEW_ONE_DEVICE) ? rcclx_ld_acquire_dev_u64(p) : rcclx_ld_acquire_sys_u64(p);
}

/* Spin (acquire, at the view's scope) until the epoch in *flag (its low 32
 * bits) reaches e (signed difference: wrap-around safe); *last gets the
 * word that ended the wait.  With the watchdog on, gives up after
 * c.watchdog_ns, records RCCLX_ERR_PEER_TIMEOUT (slot, peer, e) and returns
 * 1; else returns 0.  One thread calls it per flag.  W: uint32_t (tile
 * flags) or uint64_t (barrier arrivals). */
template <typename W>
RCCLX_DEVICE int rcclx_spin_until(const rcclx_dev_comm& c, const W* flag, uint32_t e, int slot, int peer, W* last) {
  uint32_t spins = 0;
  uint64_t t0 = 0;
  while ((int32_t)((uint32_t)(*last = rcclx_flag_acquire(c, flag)) - e) < 0)
    if (rcclx_watchdog_expired(c, &spins, &t0, slot, peer, e)) return 1;
  return 0;
}

/* A block's barrier session on block slot `slot`: the slot's epoch is read
 * once when the kernel opens it, kept in registers (every thread holds the
 * same value) across the kernel's barriers, and written back once by
 * rcclx_barrier_close, so a barrier costs no load or store of its own
 * counter.  At most one session per slot runs at a time (the fixed grid). */
typedef struct rcclx_barrier {
  uint32_t epoch; /* barriers this slot has passed */
  int slot;
} rcclx_barrier;

/* Every thread of the block calls it, before the kernel's first barrier on
 * `slot` (the previous kernel's close is ordered by the stream). */
RCCLX_DEVICE rcclx_barrier rcclx_barrier_open(const rcclx_dev_comm& c, int slot) {
  rcclx_barrier b;
  b.slot = slot;
  b.epoch = rcclx_ld_volatile_u32(&c.sigs[c.rank]->slot[slot].epoch);
  return b;
}

/* Barrier among block `slot` of every rank.  Every thread of the block
 * calls it.  Ordering: whatever any thread of this block wrote before the
 * call is visible to every peer's block `slot` once its call returns, and
 * vice versa.  Why that is enough: the __syncthreads before the arrival
 * makes the block's writes happen-before thread t's release store
 * (cumulative), the peer's acquire load that observes it plus its
 * __syncthreads make them visible to all its threads.  Both orders are
 * needed at every position: the release also orders the block's earlier
 * peer READS before the arrival (a peer may overwrite that data next), the
 * acquire orders later reads and writes after it.  Scope: see
 * rcclx_flag_release.
 * `sig` != 0: also check that every rank passed the same call fingerprint.
 * `cards` != NULL: also give every peer this rank's `card`, and store
 * peer t's card in cards[t] (shared memory, t < nranks), visible to the
 * whole block on return.
 * Returns RCCLX_BARRIER_OK, _TIMEOUT (watchdog; error recorded) or
 * _MISMATCH (ranks disagree; error recorded). */
RCCLX_DEVICE int rcclx_barrier_sync(const rcclx_dev_comm& c, rcclx_barrier* b, uint32_t sig, rcclx_call_card card,
                                    rcclx_call_card* cards) {
  rcclx_signal* me = c.sigs[c.rank];
  const int t = (int)threadIdx.x, slot = b->slot;
  const uint32_t e = ++b->epoch;
  int bad = RCCLX_BARRIER_OK;
  __syncthreads();
  if (t < c.nranks) {
    rcclx_signal* peer = c.sigs[t];
    /* Published by the release below; a peer overwrites parity e & 1 only
     * at epoch e + 2, after this rank arrived at e + 1, past the reads.
     * call_sig is read only in the rare case below; the common case finds
     * the fingerprint in the arrival word itself, with no second load after
     * the poll (a memory round trip on every call's critical path). */
    if (sig) peer->call_sig[slot][c.rank][e & 1u] = sig;
    if (cards) peer->call_card[slot][c.rank][e & 1u] = card;
    rcclx_flag_release(c, &peer->arrive[slot].from[c.rank], ((uint64_t)sig << 32) | e);
    uint64_t word = 0;
    bad = rcclx_spin_until(c, &me->arrive[slot].from[t], e, slot, t, &word) ? RCCLX_BARRIER_TIMEOUT
                                                                             : RCCLX_BARRIER_OK;
    /* Peer t may already have passed e and arrived at e + 1 (never
     * further: it cannot pass e + 1 before this rank arrives there); its
     * word then carries e + 1's fingerprint, and e's is in call_sig. */
    if (!bad && sig &&
        ((uint32_t)word == e ? (uint32_t)(word >> 32) : me->call_sig[slot][t][e & 1u]) != sig) {
      rcclx_record_error(c, RCCLX_ERR_RANK_MISMATCH, slot, t, e);
      bad = RCCLX_BARRIER_MISMATCH;
    }
    if (!bad && cards) cards[t] = me->call_card[slot][t][e & 1u];
  }
  /* One block-wide vote on the common path; which error only when one
   * happened (the vote's result is the same in every thread). */
  if (!__syncthreads_or(bad != RCCLX_BARRIER_OK)) return RCCLX_BARRIER_OK;
  return __syncthreads_or(bad == RCCLX_BARRIER_TIMEOUT) ? RCCLX_BARRIER_TIMEOUT : RCCLX_BARRIER_MISMATCH;
}

/* The card of a barrier that exchanges none. */
RCCLX_HOST_DEVICE rcclx_call_card rcclx_no_card(void) {
  rcclx_call_card k;
  k.send = NULL;
  k.recv = NULL;
  return k;
}

/* Writes the session's epoch back for the next kernel.  Every thread calls
 * it after the kernel's last barrier on the slot. */
RCCLX_DEVICE void rcclx_barrier_close(const rcclx_dev_comm& c, const rcclx_barrier* b) {
  if (threadIdx.x == 0) rcclx_st_u32(&c.sigs[c.rank]->slot[b->slot].epoch, b->epoch);
}

/* Lets the stream's next kernel be scheduled (programmatic dependent
 * launch, rcclx_launch in rcclx/platform.h).  Every block calls it right
 * after its LAST wait on a peer, never before (unless the view sized its
 * grid for it: rcclx_dda_launch_next_early below): the next kernel's blocks
 * hold multiprocessors while they wait for this grid to complete, and with
 * virtual ranks a peer's kernel that has not started yet may need those
 * multiprocessors; once no block of this grid waits on anyone, this grid
 * completes whatever the peers do, so the next kernel's wait is bounded.
 * (Once every peer's block is known to run the call, an earlier call is
 * safe too, but for the barrier kernels it was measured slower: the
 * barrier it overlaps loses more than the launch gains; bench/RESULTS.md,
 * runs 37-38.  The LL kernel, which has no barrier, gains from it:
 * rcclx_dda_peers_committed.) */
RCCLX_DEVICE void rcclx_dda_done_waiting(void) { rcclx_grid_dependents_launch(); }

/* The same, before the block's last wait, once every wait it has left is
 * bounded: each peer block it still waits on is known to run this call and
 * reaches what this block waits for without waiting on anyone itself (the
 * LL kernel, rcclx/dda/ll.h: a peer block whose header word for the call
 * is seen writes all its lines before it polls).  This grid then completes
 * whatever the peers' later work does, as in rcclx_dda_done_waiting.  Any
 * one thread of the block may call it: a block counts as having let the
 * next kernel go at its first call (programmatic dependent launch counts
 * blocks, not threads: bench/RESULTS.md, run 46's `nosync`), and later
 * calls, rcclx_dda_done_waiting's included, change nothing (were threads
 * counted, the block would count at that later call, as without this). */
RCCLX_DEVICE void rcclx_dda_peers_committed(void) { rcclx_grid_dependents_launch(); }

/* Views with RCCLX_VIEW_LAUNCH_EARLY: lets the stream's next kernel be
 * scheduled now, so its launch overlaps this call and its blocks wait
 * resident (in their rcclx_grid_dependency_wait) for this grid to
 * complete.  Every block calls it right after its own
 * rcclx_grid_dependency_wait: the stream's previous kernel has completed
 * by then, so a stream never holds more than two grids, the room the flag
 * promises (rcclx_comm_fill_view_).  Elsewhere a no-op. */
RCCLX_DEVICE void rcclx_dda_launch_next_early(const rcclx_dev_comm& c) {
  if (c.flags & RCCLX_VIEW_LAUNCH_EARLY) rcclx_grid_dependents_launch();
}

/* One barrier as a whole session (open, sync, close): for kernels with a
 * single barrier, or that interleave them with other work freely. */
RCCLX_DEVICE int rcclx_barrier_block(const rcclx_dev_comm& c, int slot, uint32_t sig) {
  rcclx_barrier b = rcclx_barrier_open(c, slot);
  const int r = rcclx_barrier_sync(c, &b, sig, rcclx_no_card(), NULL);
  rcclx_barrier_close(c, &b);
  __syncthreads(); /* the next open of this slot reads what thread 0 wrote */
  return r;
}

#endif /* RCCLX_GPU_LANG */
