/* rcclx/dda/lamport.h - one-shot AllReduce with the flag in the data, for
 * the smallest messages (TensorRT-LLM's "Lamport" scheme): no barrier.
 *
 * Every rank's Lamport area (rcclx/comm.h) holds 3 rotating buffers, each
 * with one slot per source rank.  All bytes start as 0xFF: all-ones is a
 * NaN in fp32, fp16 and bf16 alike, and means "not arrived" for every
 * dtype, so the area needs no per-dtype reset.  A call k, in block b:
 *   1. pushes its input vectors into slot `rank` of buffer k%3 of every
 *      peer, and a header word (the call fingerprint) for block b (thread
 *      q to peer q): first, because the peers wait for it;
 *   2. clears (to all-ones) what block b read from buffer (k+2)%3 (that
 *      is, in call k-1), and its headers there;
 *   3. polls its own buffer k%3 until every peer's vectors hold no
 *      all-ones element (all peers' loads in flight together; peer q's
 *      header checked by thread q in the same loop), takes its own
 *      contribution from `send` (never a round trip through memory), then
 *      reduces in rank order 0..nranks-1 in fp32 and rounds once: bitwise
 *      the flat kernel's result.
 * A rank's own slot in its own area is never written nor read.
 * The vectors are dealt to the threads by the fixed mapping of every DDA
 * kernel (rcclx_grid_first_vector): a block clears in call k+1 exactly the
 * vectors it read in call k, whatever the counts.
 * Why three buffers suffice, with no fence: buffer (k+2)%3 is next written
 * by the peers' call k+2.  A peer starts call k+2 only after it received
 * this rank's call-(k+1) push, which a LATER kernel on this rank's stream
 * makes, after this kernel (and its clear) completed.  Nobody reads the
 * buffer any more: only its owner reads it, and it finished call k-1.
 * Inputs whose bits are all-ones (one particular NaN) are sent as the
 * canonical quiet NaN: the result is NaN either way (sum), or the NaN is
 * ignored either way (max/min); only a NaN's payload bits can differ from
 * the flat kernel's.  A rank that passes another count or dtype is caught
 * by the header (RCCLX_ERR_RANK_MISMATCH), never by a hang, also when its
 * AUTO call resolved to a barrier kernel instead
 * (rcclx_lamport_header_mismatch); unlike the barrier kernels' mismatch,
 * it leaves the rotating buffers and epochs out of step, so the
 * communicators must then be rebuilt (as after a timeout).
 */
#pragma once

#include <rcclx/dda/flat.h>
#include <rcclx/trace.h>

#if defined(RCCLX_GPU_LANG)

/* Where source `src`'s slot of buffer `buf` lives in rank `owner`'s area. */
RCCLX_DEVICE char* rcclx_lamport_slot(const rcclx_dev_comm& c, int owner, uint32_t buf, int src) {
  return (char*)c.bufs[owner] + RCCLX_NUM_REGIONS * c.region_bytes +
         ((size_t)buf * RCCLX_MAX_RANKS + (size_t)src) * RCCLX_LAMPORT_SLOT_BYTES;
}

/* Whether any of the first `lanes` elements of x is all-ones (not arrived). */
template <typename T>
RCCLX_DEVICE int rcclx_lamport_pending(const rcclx_vec16& x, int lanes) {
  int pending = 0;
  if (sizeof(T) == 4) {
    RCCLX_UNROLL
    for (int i = 0; i < 4; ++i) pending |= i < lanes && x.w[i] == 0xFFFFFFFFu;
  } else {
    RCCLX_UNROLL
    for (int i = 0; i < 8; ++i) pending |= i < lanes && (uint16_t)(x.w[i / 2] >> (16 * (i % 2))) == 0xFFFFu;
  }
  return pending;
}

/* x with every all-ones element replaced by the canonical quiet NaN of T. */
template <typename T>
RCCLX_DEVICE rcclx_vec16 rcclx_lamport_scrub(rcclx_vec16 x) {
  if (sizeof(T) == 4) {
    RCCLX_UNROLL
    for (int i = 0; i < 4; ++i)
      if (x.w[i] == 0xFFFFFFFFu) x.w[i] = 0x7FC00000u;
  } else {
    const uint32_t qnan = rcclx_dtype_of<T>::value == RCCLX_BFLOAT16 ? 0x7FC0u : 0x7E00u;
    RCCLX_UNROLL
    for (int i = 0; i < 4; ++i) {
      if ((x.w[i] & 0xFFFFu) == 0xFFFFu) x.w[i] = (x.w[i] & 0xFFFF0000u) | qnan;
      if ((x.w[i] >> 16) == 0xFFFFu) x.w[i] = (x.w[i] & 0xFFFFu) | (qnan << 16);
    }
  }
  return x;
}

/* A poll of Lamport data or a header, at the view's scope (as the barriers'
 * flags, rcclx_flag_acquire): device scope when every rank is on this GPU.
 * Relaxed is enough: the data is its own flag, nothing else is read
 * through it. */
RCCLX_DEVICE rcclx_vec16 rcclx_lamport_poll(const rcclx_dev_comm& c, const char* p) {
  return (c.flags & RCCLX_VIEW_ONE_DEVICE) ? rcclx_ld16_relaxed_dev(p) : rcclx_ld16_volatile(p);
}

/* Block b's header from `src` in buffer `buf`: all-ones until src's block b
 * pushed its fingerprint.  If it has arrived (*pending cleared) and differs
 * from sig, records RCCLX_ERR_RANK_MISMATCH, raises *seen (the block's
 * shared flag, which stops its other pollers) and returns 1.
 * While it has not arrived, every 256th poll (*polls counts them) also
 * looks whether src runs a barrier kernel instead: ranks that pass
 * different counts to an AUTO call can resolve it to Lamport here and to a
 * barrier kernel there, where src then waits for this rank at block b's
 * first barrier forever.  src arrived there past this block slot's epoch
 * (acquire) while its header is still missing (a src that ran this call
 * pushed it before any later arrival, so the acquire makes it visible): a
 * mismatch, recorded as above; and this rank arrives at src's barrier with
 * its own fingerprint, so that barrier reports the mismatch too
 * (rcclx_barrier_sync) and src's kernel ends. */
RCCLX_DEVICE int rcclx_lamport_header_mismatch(const rcclx_dev_comm& c, uint32_t buf, uint32_t sig, int* pending,
                                               int* seen, int b, int src, uint32_t call, uint32_t* polls) {
  const char* hp = rcclx_lamport_slot(c, c.rank, buf, src) + (size_t)b * 16;
  uint32_t h = rcclx_lamport_poll(c, hp).w[0];
  int elsewhere = 0;
  if (h == 0xFFFFFFFFu) {
    if ((++*polls & 255u) != 0u) return 0;
    const uint32_t epoch = rcclx_barrier_open(c, b).epoch; /* no Lamport call moves it */
    const uint64_t w = rcclx_flag_acquire(c, &c.sigs[c.rank]->arrive[b].from[src]);
    if ((int32_t)((uint32_t)w - epoch) <= 0) return 0;
    h = rcclx_lamport_poll(c, hp).w[0];
    elsewhere = h == 0xFFFFFFFFu;
    if (elsewhere)
      rcclx_flag_release(c, &c.sigs[src]->arrive[b].from[c.rank], ((uint64_t)sig << 32) | (uint32_t)w);
  }
  if (!elsewhere) {
    *pending = 0;
    if (h == sig) return 0;
  }
  rcclx_record_error(c, RCCLX_ERR_RANK_MISMATCH, b, src, call);
  *(volatile int*)seen = 1;
  return 1;
}

#define RCCLX_LAMPORT_TIMEOUT 1
#define RCCLX_LAMPORT_MISMATCH 2
#define RCCLX_LAMPORT_ABORTED 4 /* another thread of the block saw a mismatch */

template <typename T, int OP, int NMAX>
/* RCCLX_LAUNCH_BOUNDS_512: two blocks per SM on NVIDIA, as the other DDA
 * kernels reach by themselves (the grid is sized by the fewest blocks any
 * of them fits per multiprocessor, rcclx_dda_min_occupancy). */
RCCLX_GLOBAL void RCCLX_LAUNCH_BOUNDS_512
    rcclx_dda_lamport_kernel(rcclx_dev_comm c, const T* send, T* recv, size_t n, uint32_t sig) {
  /* Set when a thread of this block saw a fingerprint that differs: the
   * threads still polling for data that peer may never send stop. */
  __shared__ int mismatch_seen;
  rcclx_grid_dependency_wait(); /* the previous kernel's writes (rcclx_dda_done_waiting) */
  rcclx_dda_launch_next_early(c);
  /* Indices read once: under HIP they are runtime calls until the device
   * libraries are linked, and CI's ISA build links none. */
  const int b = (int)blockIdx.x, tid = (int)threadIdx.x, V = RCCLX_PACK_ELEMS(T);
  const size_t v0 = rcclx_grid_first_vector(b, tid, (int)gridDim.x), stride = (size_t)gridDim.x * blockDim.x;
  rcclx_signal* me = c.sigs[c.rank];
  /* The call count and the three buffers' clear extents: one line, all
   * four loads in flight together, and whether this rank holds an unread
   * error (then it skips the call: rcclx_error_unread). */
  const volatile rcclx_slot_counters* ctr = &me->slot[b];
  const uint32_t failed = rcclx_error_unread(c);
  const uint32_t k = ctr->lamport_calls;
  uint32_t extent[3];
  RCCLX_UNROLL
  for (int i = 0; i < 3; ++i) extent[i] = ctr->lamport_nvec[i];
  if (failed) return;
  const uint32_t buf = k % 3u, clr = (k + 2u) % 3u;
  const size_t nvec = (n + V - 1) / V;
  const rcclx_vec16 ones = {{0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}};
  if (tid == 0) mismatch_seen = 0;
  RCCLX_TRACE(c, k, 0);

  /* 1. Push into slot `rank` of buffer k%3 of every peer, then the header. */
  for (size_t v = v0; v < nvec; v += stride) {
    const rcclx_vec16 x = rcclx_lamport_scrub<T>(rcclx_load_vec_clipped(send, v, n));
    RCCLX_UNROLL
    for (int q = 0; q < NMAX; ++q)
      if (q < c.nranks && q != c.rank)
        rcclx_st16(rcclx_lamport_slot(c, q, buf, c.rank) + RCCLX_LAMPORT_HEADER_BYTES + v * 16, x);
  }
  if (tid < c.nranks && tid != c.rank) { /* thread q: peer q's copy (in parallel) */
    const rcclx_vec16 h = {{sig, 0u, 0u, 0u}};
    rcclx_st16(rcclx_lamport_slot(c, tid, buf, c.rank) + (size_t)b * 16, h);
  }

  /* 2. Clear buffer (k+2)%3: the vectors this block read there in call k-1
   * (no fence: peers write there only after this kernel completed). */
  const size_t old = clr == 0u ? extent[0] : clr == 1u ? extent[1] : extent[2];
  for (int q = 0; q < c.nranks; ++q) {
    if (q == c.rank) continue;
    char* s = rcclx_lamport_slot(c, c.rank, clr, q) + RCCLX_LAMPORT_HEADER_BYTES;
    for (size_t v = v0; v < old; v += stride) rcclx_st16(s + v * 16, ones);
  }
  if (tid < c.nranks && tid != c.rank) rcclx_st16(rcclx_lamport_slot(c, c.rank, clr, tid) + (size_t)b * 16, ones);
  RCCLX_TRACE(c, k, 1);
  __syncthreads(); /* mismatch_seen is initialised */

  /* 3. Wait and reduce.  Every source's vector is loaded at once and the
   * ones not yet arrived are re-polled together, so a call costs one round
   * trip once the data is there.  Thread q < nranks also checks source q's
   * header in the same loop (no separate round trip); a mismatch stops the
   * block's other pollers.  Then rank order 0..nranks-1 in fp32, rounded
   * once: the flat kernel's bits. */
  int bad = 0, hdr_pending = tid < c.nranks && tid != c.rank;
  uint32_t spins = 0, hdr_polls = 0;
  uint64_t t0 = 0;
  for (size_t v = v0; !bad && v < nvec; v += stride) {
    const int lanes = (v + 1) * V <= n ? V : (int)(n - v * V);
    const char* base = rcclx_lamport_slot(c, c.rank, buf, 0) + RCCLX_LAMPORT_HEADER_BYTES + v * 16;
    /* Own contribution: as pushed (scrubbed), so never pending. */
    const rcclx_vec16 mine = rcclx_lamport_scrub<T>(rcclx_load_vec_clipped(send, v, n));
    rcclx_vec16 x[NMAX];
    RCCLX_UNROLL
    for (int q = 0; q < NMAX; ++q)
      if (q < c.nranks) x[q] = q == c.rank ? mine : rcclx_lamport_poll(c, base + (size_t)q * RCCLX_LAMPORT_SLOT_BYTES);
    for (;;) {
      int waiting_on = -1;
      RCCLX_UNROLL
      for (int q = NMAX - 1; q >= 0; --q)
        if (q < c.nranks && rcclx_lamport_pending<T>(x[q], lanes)) waiting_on = q;
      if (hdr_pending &&
          rcclx_lamport_header_mismatch(c, buf, sig, &hdr_pending, &mismatch_seen, b, tid, k, &hdr_polls))
        bad = RCCLX_LAMPORT_MISMATCH;
      if (waiting_on < 0 || bad) break;
      if (*(volatile int*)&mismatch_seen) bad = RCCLX_LAMPORT_ABORTED;
      else if (rcclx_watchdog_expired(c, &spins, &t0, b, waiting_on, k)) bad = RCCLX_LAMPORT_TIMEOUT;
      if (bad) break;
      RCCLX_UNROLL
      for (int q = 0; q < NMAX; ++q)
        if (q < c.nranks && rcclx_lamport_pending<T>(x[q], lanes))
          x[q] = rcclx_lamport_poll(c, base + (size_t)q * RCCLX_LAMPORT_SLOT_BYTES);
    }
    if (!bad) rcclx_store_vec_clipped(recv, v, n, rcclx_dda_accumulate<T, OP, NMAX>(x, c.nranks));
  }
  RCCLX_TRACE(c, k, 2);
  /* A header thread whose vectors (if any) are done still checks its header. */
  while (hdr_pending && !bad) {
    if (rcclx_lamport_header_mismatch(c, buf, sig, &hdr_pending, &mismatch_seen, b, tid, k, &hdr_polls))
      bad = RCCLX_LAMPORT_MISMATCH;
    else if (hdr_pending && rcclx_watchdog_expired(c, &spins, &t0, b, tid, k))
      bad = RCCLX_LAMPORT_TIMEOUT;
  }
  /* A timeout or mismatch leaves the Lamport buffers out of step: the
   * communicators must be rebuilt (rcclx_comm_check). */
  if (__syncthreads_or(bad)) return;
  RCCLX_TRACE(c, k, 3);
  rcclx_dda_done_waiting();
  /* 4. How far buffer k%3 must be cleared in call k+1, and the call count
   * (every thread read both counters before the barrier above; the next
   * call is a later kernel on the same stream). */
  if (tid == 0) {
    me->slot[b].lamport_nvec[buf] = (uint32_t)nvec;
    me->slot[b].lamport_calls = k + 1u;
  }
  RCCLX_TRACE(c, k, 4);
}

#endif /* RCCLX_GPU_LANG */
