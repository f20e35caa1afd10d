/* rcclx/dda/ll.h - one-shot AllReduce with the flag in the data, for the
 * smallest messages: no barrier, no fence.
 *
 * NCCL's "LL" protocol applied to a one-shot.  A rank writes its message
 * into its source slot of the LL area (rcclx/comm.h) as 64-bit words {4
 * data bytes | tag << 32}, each written and read as one single-copy-atomic
 * access, two per 16-byte line (rcclx_st_relaxed_*_u64x2,
 * rcclx_ld_relaxed_*_u64x2).  The tag names the call, so a peer that reads
 * a word carrying this call's tag holds this call's 4 bytes: nothing orders
 * data before a flag (no fence), and nobody waits for a peer's arrival (no
 * barrier).  The bytes moved double; for small messages latency is all
 * that counts.
 * Where the words go is the view's choice (RCCLX_VIEW_LL_PUSH, set at
 * creation, the same on every rank; rcclx_ll_owner):
 *   pull: once, into the rank's own area; its peers poll them there.  Each
 *     line is polled by every peer, and with ranks on several GPUs every
 *     poll crosses a link.  Measured faster with every rank on one GPU:
 *     pushing lost 0.1-0.4 us at 2, 4 and 8 virtual ranks on one H200
 *     (bench/RESULTS.md, run 85), so that is the default there.
 *   push: into the rank's slot of every peer's area; each rank polls only
 *     its own, as NCCL's LL, TensorRT-LLM's Lamport and QuickReduce do:
 *     the link carries each word once, as a store, and every poll stays on
 *     the poller's GPU.  The default across GPUs; whether it wins there is
 *     issue #7's measurement.
 * (TensorRT-LLM's "Lamport" scheme marks data not yet arrived with a
 * sentinel value instead of a tag, which the receiver must clear again
 * after every call.  It was this file's first design and lost at every
 * rank count: 16 KiB bf16 took 3.25 / 3.95 / 5.48 us at 2 / 4 / 8 virtual
 * ranks, an LL probe 2.44 / 2.58 / 3.02 in the same run, run 41.)
 *
 * Call k of block slot b (k: the slot's LL call count, ll_calls):
 *   1. writes block b's header word {fingerprint | tag}, then block b's
 *      lines, into this rank's header word and slot of LL buffer k & 1
 *      (in its own area, or in every peer's);
 *   2. stores the call count k + 1 (read by the next call only);
 *   3. lane q < nranks of its last warp polls peer q's header word: a
 *      fingerprint that differs is RCCLX_ERR_RANK_MISMATCH and stops the
 *      block's other pollers; once every peer's header is seen, the block
 *      lets the stream's next kernel be scheduled (programmatic dependent
 *      launch: rcclx_dda_peers_committed in rcclx/signal.h);
 *   4. beside those header polls, the threads with lines poll each
 *      peer's slot of buffer k & 1 for the same lines until both words
 *      of each carry tag(k) (all peers' loads in flight together), then reduce in
 *      rank order 0..nranks-1 in fp32 (their own contribution: the line
 *      they wrote) and round once: the flat kernel's bits, NaN payloads
 *      included (every bit pattern travels as it is).
 * The grid is sized by the message (rcclx_ll_blocks in rcclx/dda/plan.h: g
 * blocks, 1 <= g <= c.nblocks; rcclx_ll_threads: blocks of the warps that
 * hold lines and one header warp, at most c.nthreads), the same on every
 * rank that passes the same count.  Lines are dealt to threads by the
 * mapping of every DDA kernel (rcclx_grid_first_vector over g blocks,
 * counted in lines), so block b reads only what block b of each peer wrote.
 * The state is kept per block slot, and every call advances all c.nblocks
 * slots alike, whatever its grid: block b stands for slots b, b + g, b + 2g,
 * ... (thread t of the block takes b + t * g, then every blockDim.x * g
 * further): it writes their header words and call counts.
 * So every slot holds the same count, and the words of a buffer carry one
 * tag per call, whichever block wrote them.
 * Why two buffers suffice with no fence and no clearing: a rank writes
 * buffer k & 1 again in call k + 2, which it starts after its call k + 1
 * completed, which read every peer's call-(k + 1) words, which each peer
 * wrote after its own call k completed: nobody reads the call-k words any
 * more (pulled from the writer's area or pushed into the reader's alike,
 * each word having one writer).  For the same reason no peer is ever more
 * than one call ahead.
 * Tags: tag(k) = k + 1, never 0 (the zeroed area) before the first
 * re-tagging.  A word not rewritten by this call carries the tag of an earlier
 * call, different from tag(k) while every word of the buffer was written
 * fewer than 2^32 calls ago.  Words that small calls never reach could grow
 * older than that, so when 2^30 calls have passed since a buffer was last
 * re-tagged (ll_cleaned), the call first rewrites every one of block b's
 * words there (its lines over its whole slot, its slots' header words,
 * wherever it writes them) with tag(k - 2), a tag no call expects for
 * 2^32 - 2 more calls, and passes one barrier before any peer polls.
 * A rank that passes another count or dtype is caught by the header
 * (RCCLX_ERR_RANK_MISMATCH), never by a hang: also when the counts give
 * different grids (a block of the larger grid finds the header of its slot
 * written by the smaller grid, with the other fingerprint), and when its
 * AUTO call resolved to a barrier kernel instead (rcclx_ll_header_mismatch:
 * every slot of that kernel is answered); the LL call counts are then out
 * of step, so the communicators must be rebuilt (as after a timeout).
 */
#pragma once

#include <rcclx/dda/flat.h>
#include <rcclx/signal.h>
#include <rcclx/trace.h>

#if defined(RCCLX_GPU_LANG)

/* Calls between two re-taggings of an LL buffer (see above). */
#define RCCLX_LL_RETAG_CALLS (1u << 30)

/* Byte offset of LL buffer `buf` (0 or 1) in every rank's polled area
 * (c.sigs[r], rcclx/comm.h: ranks spin on these words while others write
 * them): header lines, then one data slot per source rank. */
RCCLX_HOST_DEVICE size_t rcclx_ll_buffer_offset(uint32_t buf) {
  return RCCLX_SIGNAL_BYTES + (size_t)buf * RCCLX_LL_BUFFER_BYTES;
}
/* Byte offset of source src's header word of block slot b in that buffer. */
RCCLX_HOST_DEVICE size_t rcclx_ll_header_offset(uint32_t buf, int b, int src) {
  return rcclx_ll_buffer_offset(buf) + (size_t)b * RCCLX_LL_HEADER_STRIDE + 8 * (size_t)src;
}
/* Byte offset of source src's data line L (two words: message bytes
 * 8L..8L+7) in that buffer. */
RCCLX_HOST_DEVICE size_t rcclx_ll_line_offset(uint32_t buf, int src, size_t L) {
  return rcclx_ll_buffer_offset(buf) + RCCLX_LL_HEADER_BYTES + (size_t)src * RCCLX_LL_SLOT_BYTES + 16 * L;
}
/* Which views an LL function is compiled for (its MODE template
 * argument): RCCLX_LL_ANY reads the view's scope and push flags at run
 * time; RCCLX_LL_LOCAL serves only views with every rank on this GPU that
 * pull (rcclx_ll_mode_of: RCCLX_VIEW_ONE_DEVICE without
 * RCCLX_VIEW_LL_PUSH), so every store's and poll's scope and place are
 * fixed at compile time: no branch on the flags and no parameter read for
 * them between the call count and the stores, or in the polls.  Measured
 * 0.10-0.16 us faster per call with fork/join at 2, 4 and 8 virtual ranks
 * on one H100 (bench/RESULTS.md, run 119).  The ready kernel is built in
 * both modes (rcclx_dda_launch_ in rcclx/dda/allreduce.h picks); a fused
 * kernel may use either, the default being ANY. */
#define RCCLX_LL_ANY 0
#define RCCLX_LL_LOCAL 1
RCCLX_HOST_DEVICE int rcclx_ll_mode_of(uint32_t view_flags) {
  return (view_flags & (RCCLX_VIEW_ONE_DEVICE | RCCLX_VIEW_LL_PUSH)) == RCCLX_VIEW_ONE_DEVICE ? RCCLX_LL_LOCAL
                                                                                           : RCCLX_LL_ANY;
}
/* The view's flags as an LL function of mode MODE sees them (in LOCAL
 * mode the constant its views have; RCCLX_VIEW_LAUNCH_EARLY, which may
 * differ between ranks, is never read through this). */
template <int MODE>
RCCLX_DEVICE uint32_t rcclx_ll_flags(const rcclx_dev_comm& c) {
  return MODE == RCCLX_LL_LOCAL ? RCCLX_VIEW_ONE_DEVICE : c.flags;
}

/* The rank whose polled area holds the words source src writes for
 * `reader`: src's own when pulling, the reader's when pushing
 * (RCCLX_VIEW_LL_PUSH). */
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE int rcclx_ll_owner(const rcclx_dev_comm& c, int reader, int src) {
  return (rcclx_ll_flags<MODE>(c) & RCCLX_VIEW_LL_PUSH) ? reader : src;
}
/* The word at byte offset `off` of rank `owner`'s polled area. */
RCCLX_DEVICE uint64_t* rcclx_ll_at(const rcclx_dev_comm& c, int owner, size_t off) {
  return (uint64_t*)((char*)c.sigs[owner] + off);
}

/* LL stores and loads at the view's scope (device scope when every rank is
 * on this GPU, as the barriers' flags: rcclx_flag_release): a word, and a
 * line of data words d[0], d[1] under one tag. */
RCCLX_DEVICE uint64_t rcclx_ll_word(uint32_t data, uint32_t tag) { return ((uint64_t)tag << 32) | data; }
RCCLX_DEVICE uint32_t rcclx_ll_tag_of(uint64_t v) { return (uint32_t)(v >> 32); }
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE void rcclx_ll_st(const rcclx_dev_comm& c, uint64_t* p, uint32_t data, uint32_t tag) {
  if (rcclx_ll_flags<MODE>(c) & RCCLX_VIEW_ONE_DEVICE) rcclx_st_relaxed_dev_u64(p, rcclx_ll_word(data, tag));
  else rcclx_st_relaxed_sys_u64(p, rcclx_ll_word(data, tag));
}
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE uint64_t rcclx_ll_ld(const rcclx_dev_comm& c, const uint64_t* p) {
  return (rcclx_ll_flags<MODE>(c) & RCCLX_VIEW_ONE_DEVICE) ? rcclx_ld_relaxed_dev_u64(p) : rcclx_ld_relaxed_sys_u64(p);
}
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE void rcclx_ll_st_line(const rcclx_dev_comm& c, uint64_t* p, const uint32_t* d, uint32_t tag) {
  if (rcclx_ll_flags<MODE>(c) & RCCLX_VIEW_ONE_DEVICE)
    rcclx_st_relaxed_dev_u64x2(p, rcclx_ll_word(d[0], tag), rcclx_ll_word(d[1], tag));
  else rcclx_st_relaxed_sys_u64x2(p, rcclx_ll_word(d[0], tag), rcclx_ll_word(d[1], tag));
}
/* This rank's header word (nwords 1: data d[0]) or data line (nwords 2:
 * d[0], d[1]) at byte offset `off` of its own source slot, stored where
 * every peer reads it: once into its own area (pull), or into each peer's
 * (push), starting with the next rank so that the ranks' stores spread
 * over the peers. */
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE void rcclx_ll_publish(const rcclx_dev_comm& c, size_t off, const uint32_t* d, int nwords, uint32_t tag) {
  const int push = (rcclx_ll_flags<MODE>(c) & RCCLX_VIEW_LL_PUSH) != 0;
  for (int i = push ? 1 : 0; i < (push ? c.nranks : 1); ++i) {
    const int q = c.rank + i < c.nranks ? c.rank + i : c.rank + i - c.nranks;
    uint64_t* p = rcclx_ll_at(c, q, off);
    if (nwords == 2) rcclx_ll_st_line<MODE>(c, p, d, tag);
    else rcclx_ll_st<MODE>(c, p, d[0], tag);
  }
}
/* The load of a line of data words at byte offset `off`
 * (rcclx_ll_line_offset) of a rank's polled area `base`, at the scope the view's
 * flags give (one_device: c.flags has RCCLX_VIEW_ONE_DEVICE, read once by
 * the caller), into x[0], x[1]. */
RCCLX_DEVICE void rcclx_ll_poll_line(int one_device, const void* base, size_t off, uint64_t* x) {
  const uint64_t* p = (const uint64_t*)((const char*)base + off);
  if (one_device) rcclx_ld_relaxed_dev_u64x2(p, &x[0], &x[1]);
  else rcclx_ld_relaxed_sys_u64x2(p, &x[0], &x[1]);
}
/* Whether both words of a line carry `tag`. */
RCCLX_DEVICE int rcclx_ll_arrived(const uint64_t* x, uint32_t tag) {
  return rcclx_ll_tag_of(x[0]) == tag && rcclx_ll_tag_of(x[1]) == tag;
}

/* Bytes 8L..8L+7 of a user array of n elements into d[0], d[1]; elements
 * past n read as 0 and no byte past them is read.  p 16-byte aligned. */
template <typename T>
RCCLX_DEVICE void rcclx_ll_load_clipped(const T* p, size_t L, size_t n, uint32_t* d) {
  const int E = 8 / (int)sizeof(T);
  if ((L + 1) * E <= n) {
    const uint64_t v = *(const uint64_t*)(p + L * E);
    d[0] = (uint32_t)v;
    d[1] = (uint32_t)(v >> 32);
    return;
  }
  T e[8 / sizeof(T)];
  RCCLX_UNROLL
  for (int i = 0; i < E; ++i) e[i] = L * E + i < n ? p[L * E + i] : rcclx_from_f32<T>(0.0f);
  memcpy(d, e, 8);
}
/* Writes the elements of bytes 8L..8L+7 that are below n. */
template <typename T>
RCCLX_DEVICE void rcclx_ll_store_clipped(T* p, size_t L, size_t n, const uint32_t* d) {
  const int E = 8 / (int)sizeof(T);
  if ((L + 1) * E <= n) {
    *(uint64_t*)(p + L * E) = ((uint64_t)d[1] << 32) | d[0];
    return;
  }
  T e[8 / sizeof(T)];
  memcpy(e, d, 8);
  for (int i = 0; i < E; ++i)
    if (L * E + i < n) p[L * E + i] = e[i];
}

/* Block b's header from `src` in buffer `buf`: until src's block b wrote it
 * for this call, it carries another tag.  Once it has (*pending cleared) and
 * its fingerprint differs from sig, records RCCLX_ERR_RANK_MISMATCH, raises
 * *seen (the block's shared flag, which stops its other pollers) and
 * returns 1.
 * While it has not, every 256th poll (*polls counts them) also looks whether
 * src runs a barrier kernel instead: ranks that pass different counts to an
 * AUTO call can resolve it to LL here and to a barrier kernel there, where
 * src then waits for this rank at block b's first barrier forever.  src
 * arrived there past this block slot's epoch (acquire) while its header is
 * still missing (a src that ran this call wrote it before any later
 * arrival, so the acquire makes it visible): a mismatch, recorded as above;
 * and this rank arrives at src's barrier with its own fingerprint, so that
 * barrier reports the mismatch too (rcclx_barrier_sync) and src's kernel
 * ends.  It arrives so at every slot this block stands for: src's kernel
 * runs the whole communicator grid, and slots beyond this launch's grid
 * have no block of their own here.  Their arrival carries the slot's next
 * epoch as this rank counts it, which is src's (barrier epochs move in
 * step on every rank; src cannot pass that barrier without this rank). */
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE int rcclx_ll_header_mismatch(const rcclx_dev_comm& c, uint32_t buf, uint32_t tag, uint32_t sig,
                                          int* pending, int* seen, int b, int src, uint32_t call, uint32_t* polls) {
  const uint64_t* hp = rcclx_ll_at(c, rcclx_ll_owner<MODE>(c, c.rank, src), rcclx_ll_header_offset(buf, b, src));
  uint64_t h = rcclx_ll_ld<MODE>(c, hp);
  int elsewhere = 0;
  if (rcclx_ll_tag_of(h) != tag) {
    if ((++*polls & 255u) != 0u) return 0;
    const uint32_t epoch = rcclx_barrier_open(c, b).epoch; /* no LL call moves it (but a re-tagging's barrier) */
    const uint64_t w = rcclx_flag_acquire(c, &c.sigs[c.rank]->arrive[b].from[src]);
    if ((int32_t)((uint32_t)w - epoch) <= 0) return 0;
    h = rcclx_ll_ld<MODE>(c, hp);
    elsewhere = rcclx_ll_tag_of(h) != tag;
    if (elsewhere) {
      rcclx_flag_release(c, &c.sigs[src]->arrive[b].from[c.rank], ((uint64_t)sig << 32) | (uint32_t)w);
      for (int s = b + (int)gridDim.x; s < c.nblocks; s += (int)gridDim.x)
        rcclx_flag_release(c, &c.sigs[src]->arrive[s].from[c.rank],
                           ((uint64_t)sig << 32) | (rcclx_barrier_open(c, s).epoch + 1u));
    }
  }
  if (!elsewhere) {
    *pending = 0;
    if ((uint32_t)h == sig) return 0;
  }
  rcclx_record_error(c, RCCLX_ERR_RANK_MISMATCH, b, src, call);
  *(volatile int*)seen = 1;
  return 1;
}

/* Byte offset of line j of this rank's spare slot in LL buffer `buf` of
 * its own polled area: a slot no rank writes there in the view's mode (in
 * pull mode the next rank's, whose lines that rank keeps in its own area;
 * in push mode its own, which it never pushes to itself).  Words that only
 * this rank's blocks exchange during an LL call go there (a fused kernel's
 * row partials, examples/allreduce_rmsnorm.h), tagged like data lines. */
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE size_t rcclx_ll_spare_offset(const rcclx_dev_comm& c, uint32_t buf, size_t j) {
  const int push = (rcclx_ll_flags<MODE>(c) & RCCLX_VIEW_LL_PUSH) != 0;
  return rcclx_ll_line_offset(buf, push ? c.rank : (c.rank + 1 < c.nranks ? c.rank + 1 : 0), j);
}

/* f(s) for every block slot s the calling thread stands for (see above:
 * block b of a grid of g stands for slots b, b + g, b + 2g, ... below
 * c.nblocks; thread t takes b + t * g, then every blockDim.x * g
 * further). */
template <typename F>
RCCLX_DEVICE void rcclx_ll_for_block_slots(const rcclx_dev_comm& c, const F& f) {
  const int g = (int)gridDim.x;
  for (int s = (int)blockIdx.x + (int)threadIdx.x * g; s < c.nblocks; s += (int)blockDim.x * g) f(s);
}

/* The re-tagging of buffer `buf` by call k (see above): this rank's header
 * words of the block's slots, every line of this rank's whole source slot
 * whose owner is this block (owner(0, L) == blockIdx.x), wherever it
 * writes them, and every line j of its spare slot with owner(1, j) ==
 * blockIdx.x, rewritten with tag(k - 2) = k - 1; then one barrier on the
 * block slot (checking the call fingerprint), so that no peer polls before
 * the rewrite is visible; once it is passed, the slots record k as the
 * buffer's last re-tagging (ll_cleaned, read by later calls of this rank
 * only).  owner must give each line one block of the grid, the block that
 * reads it in this call's mapping (lines the call does not reach: any
 * block); -1 for lines nobody uses.  Every thread of the block calls it.
 * Returns the barrier's result. */
template <int MODE = RCCLX_LL_ANY, typename Owner>
RCCLX_DEVICE int rcclx_ll_retag(const rcclx_dev_comm& c, uint32_t buf, uint32_t k, uint32_t sig, const Owner& owner) {
  const int b = (int)blockIdx.x, nt = (int)blockDim.x;
  const uint32_t nlines = (uint32_t)(RCCLX_LL_MAX_BYTES / 8);
  const uint32_t zero[2] = {0u, 0u}, tag = k - 1u;
  rcclx_ll_for_block_slots(
      c, [&](int s) { rcclx_ll_publish<MODE>(c, rcclx_ll_header_offset(buf, s, c.rank), zero, 1, tag); });
  for (uint32_t L = threadIdx.x; L < nlines; L += (uint32_t)nt) {
    if (owner(0, L) == b) rcclx_ll_publish<MODE>(c, rcclx_ll_line_offset(buf, c.rank, L), zero, 2, tag);
    if (owner(1, L) == b)
      rcclx_ll_st_line<MODE>(c, rcclx_ll_at(c, c.rank, rcclx_ll_spare_offset<MODE>(c, buf, L)), zero, tag);
  }
  const int r = rcclx_barrier_block(c, b, sig);
  if (r == RCCLX_BARRIER_OK)
    rcclx_ll_for_block_slots(c, [&](int s) { rcclx_st_u32(&c.sigs[c.rank]->slot[s].ll_cleaned[buf], k); });
  return r;
}

#define RCCLX_LL_TIMEOUT 1
#define RCCLX_LL_MISMATCH 2
#define RCCLX_LL_ABORTED 4 /* another thread of the block saw a mismatch */

/* An LL call as a block runs it, for the LL kernel below and for kernels
 * that fuse an LL exchange with their own work (a fused epilogue or norm).
 * Every block of such a kernel, on every rank, follows the same steps:
 *   rcclx_ll_open            (every thread) the call count, re-tagging
 *   rcclx_ll_publish_headers (every thread) the block's header words
 *   rcclx_ll_publish ...     its lines: line L of the message at
 *                            rcclx_ll_line_offset(call.buf, c.rank, L)
 *   rcclx_ll_commit          (every thread) the call count, advanced
 *   rcclx_ll_check_headers   (every thread; lanes of one warp check)
 *   rcclx_ll_gather_lines ... the peers' copies of its lines
 * with the rules of this file: block b reads only lines that block b of
 * each peer wrote (the same line-to-block mapping on every rank: what the
 * call's count and grid give), the grid is at most c.nblocks blocks and
 * co-resident with every other rank's (its blocks spin on theirs), and
 * ranks pass the same fingerprint `sig` for the same call.  The LL state
 * is the communicator's: such calls interleave with rcclx_allreduce's LL
 * calls on the same stream. */
typedef struct rcclx_ll_call {
  uint32_t k;   /* the block slot's LL call count */
  uint32_t buf; /* LL buffer k & 1 */
  uint32_t tag; /* tag(k) = k + 1 */
  uint32_t sig; /* the call's fingerprint */
} rcclx_ll_call;
/* What the threads of a block share during a call (in __shared__ memory). */
typedef struct rcclx_ll_shared {
  int mismatch_seen; /* a thread saw a fingerprint that differs: pollers stop */
  int headers_seen;  /* peers whose header for this call the block has seen */
} rcclx_ll_shared;

/* rcclx_ll_open: reads the block slot's call count (and last
 * re-tagging), and re-tags its buffer when due (rcclx_ll_retag, with
 * `owner`).  Returns 0 when the block must leave at once: this rank
 * holds an unread error (rcclx_error_unread) or the re-tagging's barrier
 * failed.  *sh is initialised, visible to the block's threads after
 * rcclx_ll_commit. */
template <int MODE = RCCLX_LL_ANY, typename Owner>
RCCLX_DEVICE int rcclx_ll_open(const rcclx_dev_comm& c, uint32_t sig, rcclx_ll_shared* sh, const Owner& owner,
                               rcclx_ll_call* call) {
  const rcclx_slot_counters* ctr = &c.sigs[c.rank]->slot[blockIdx.x];
  const uint32_t failed = rcclx_error_unread(c);
  const uint32_t k = rcclx_ld_volatile_u32(&ctr->ll_calls), cleaned0 = rcclx_ld_volatile_u32(&ctr->ll_cleaned[0]),
                 cleaned1 = rcclx_ld_volatile_u32(&ctr->ll_cleaned[1]);
  if (failed) return 0;
  call->k = k;
  call->buf = k & 1u;
  call->tag = k + 1u;
  call->sig = sig;
  if (threadIdx.x == 0) {
    sh->mismatch_seen = 0;
    sh->headers_seen = 0;
  }
  const uint32_t cleaned = k & 1u ? cleaned1 : cleaned0;
  return !(k - cleaned >= RCCLX_LL_RETAG_CALLS &&
           rcclx_ll_retag<MODE>(c, call->buf, k, sig, owner) != RCCLX_BARRIER_OK);
}

/* rcclx_ll_publish_headers: the header words {sig | tag} of the block
 * slots this block stands for (rcclx_ll_for_block_slots), where every
 * peer reads them. */
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE void rcclx_ll_publish_headers(const rcclx_dev_comm& c, const rcclx_ll_call& call) {
  rcclx_ll_for_block_slots(
      c, [&](int s) {
        rcclx_ll_publish<MODE>(c, rcclx_ll_header_offset(call.buf, s, c.rank), &call.sig, 1, call.tag);
      });
}

/* rcclx_ll_commit, after the block's lines are published: the call count
 * of the block's slots, now, so the store is off the kernel's end.  The
 * __syncthreads makes it safe (every thread of the block read slot b's
 * count in rcclx_ll_open; no other block of this grid touches these slots,
 * and the next call is a later kernel on the same stream, which reads them
 * once this grid completed) and makes *sh visible.  (A call that fails
 * later leaves the counts out of step on some rank anyway: the
 * communicators must be rebuilt, rcclx_comm_check.) */
RCCLX_DEVICE void rcclx_ll_commit(const rcclx_dev_comm& c, const rcclx_ll_call& call) {
  __syncthreads();
  rcclx_ll_for_block_slots(c, [&](int s) { rcclx_st_u32(&c.sigs[c.rank]->slot[s].ll_calls, call.k + 1u); });
}

/* rcclx_ll_check_headers: lane q < nranks of the warp that starts at
 * thread `first` checks peer q's header of block slot b (a differing
 * fingerprint stops the block's other pollers); the other threads return
 * 0 at once.  Once every
 * peer's header is seen, every peer block this block waits on runs the
 * call and writes its lines without waiting: with `early` the lane that
 * saw the last one lets the stream's next kernel be scheduled
 * (rcclx_dda_peers_committed), so its launch overlaps the data polls.
 * *spins, *t0: the thread's watchdog state (rcclx_watchdog_expired), kept
 * for its later waits of the call.  Returns 0, RCCLX_LL_MISMATCH or
 * RCCLX_LL_TIMEOUT. */
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE int rcclx_ll_check_headers(const rcclx_dev_comm& c, const rcclx_ll_call& call, rcclx_ll_shared* sh,
                                        int first, int early, uint32_t* spins, uint64_t* t0) {
  const int q = (int)threadIdx.x - first, b = (int)blockIdx.x;
  const int checks = q >= 0 && q < c.nranks && q != c.rank;
  int pending = checks, bad = 0;
  uint32_t polls = 0;
  while (pending && !bad) {
    if (rcclx_ll_header_mismatch<MODE>(c, call.buf, call.tag, call.sig, &pending, &sh->mismatch_seen, b, q, call.k,
                                       &polls))
      bad = RCCLX_LL_MISMATCH;
    else if (pending && rcclx_watchdog_expired(c, spins, t0, b, q, call.k))
      bad = RCCLX_LL_TIMEOUT;
  }
  if (early && checks && !bad && atomicAdd(&sh->headers_seen, 1) == c.nranks - 2) rcclx_dda_peers_committed();
  return bad;
}

/* Where a block's polls read: what the poll addresses need from the view,
 * read once before the polls (read at each poll, as the loads' memory
 * clobbers made the compiler do, it cost a dependent parameter read per
 * peer: issuing the first batch took longer than its round trip at 8
 * ranks, bench/RESULTS.md runs 73-74). */
typedef struct rcclx_ll_reader {
  int one_device, push, rank, nranks;
} rcclx_ll_reader;
template <int MODE = RCCLX_LL_ANY>
RCCLX_DEVICE rcclx_ll_reader rcclx_ll_reader_of(const rcclx_dev_comm& c) {
  rcclx_ll_reader r;
  r.one_device = (rcclx_ll_flags<MODE>(c) & RCCLX_VIEW_ONE_DEVICE) != 0;
  r.push = (rcclx_ll_flags<MODE>(c) & RCCLX_VIEW_LL_PUSH) != 0;
  r.rank = c.rank;
  r.nranks = c.nranks;
  return r;
}

/* Lines L .. L + NL - 1 of every peer's message (this call's words) into
 * x[i][q] (x[i][rank] untouched).  Every source's lines are loaded at once
 * and the ones not yet arrived are re-polled together, so a call costs one
 * round trip once the data is there.  One load per missing line per
 * round, issued as soon as the last came back, measured best on one H200
 * (virtual ranks) against: a second load of the line in flight, at once or
 * staggered (runs 75-76: the extra polls lengthen every round trip, and
 * the reduction waits for the later load), back-off or fewer peers polled
 * while several are missing (runs 56, 78), polls only after the peers'
 * headers (run 48), atomics as polls (run 70), more or fewer blocks (runs
 * 49-50, 71, 77).  b: the block's index (blockIdx.x), as the caller read it.
 * Returns 0, or RCCLX_LL_ABORTED (another thread saw a mismatch) or
 * RCCLX_LL_TIMEOUT (recorded), when a line is incomplete. */
template <int NMAX, int NL>
RCCLX_DEVICE int rcclx_ll_gather_lines(const rcclx_dev_comm& c, const rcclx_ll_reader& rd, const rcclx_ll_call& call,
                                       const rcclx_ll_shared* sh, uint32_t L, uint64_t (*x)[NMAX][2], uint32_t* spins,
                                       uint64_t* t0, int b) {
  /* Source q's line: at off + q * RCCLX_LL_SLOT_BYTES of q's area (pull)
   * or of this rank's (push): rcclx_ll_owner, with the flag read once. */
  const size_t off = rcclx_ll_line_offset(call.buf, 0, L);
  const int rank = rd.rank, nranks = rd.nranks;
  RCCLX_UNROLL
  for (int i = 0; i < NL; ++i)
    RCCLX_UNROLL
    for (int q = 0; q < NMAX; ++q)
      if (q < nranks && q != rank)
        rcclx_ll_poll_line(rd.one_device, c.sigs[rd.push ? rank : q], off + 16 * i + (size_t)q * RCCLX_LL_SLOT_BYTES,
                           x[i][q]);
  for (;;) {
    int waiting_on = -1;
    RCCLX_UNROLL
    for (int i = 0; i < NL; ++i)
      RCCLX_UNROLL
      for (int q = NMAX - 1; q >= 0; --q)
        if (q < nranks && q != rank && !rcclx_ll_arrived(x[i][q], call.tag)) waiting_on = q;
    if (waiting_on < 0) return 0;
    if (*(const volatile int*)&sh->mismatch_seen) return RCCLX_LL_ABORTED;
    if (rcclx_watchdog_expired(c, spins, t0, b, waiting_on, call.k)) return RCCLX_LL_TIMEOUT;
    RCCLX_UNROLL
    for (int i = 0; i < NL; ++i)
      RCCLX_UNROLL
      for (int q = 0; q < NMAX; ++q)
        if (q < nranks && q != rank && !rcclx_ll_arrived(x[i][q], call.tag))
          rcclx_ll_poll_line(rd.one_device, c.sigs[rd.push ? rank : q],
                             off + 16 * i + (size_t)q * RCCLX_LL_SLOT_BYTES, x[i][q]);
  }
}

/* Line L's sum over ranks 0..nranks-1 in fp32, rounded once (the flat
 * kernel's bits, NaN payloads included): own = this rank's 8 bytes, x[q]
 * the peers' lines (rcclx_ll_gather_lines). */
template <typename T, int OP, int NMAX>
RCCLX_DEVICE void rcclx_ll_reduce_line(const rcclx_ll_reader& rd, const uint32_t* own, const uint64_t (*x)[2],
                                       uint32_t* out) {
  /* Each rank's 8 bytes as the low half of a 16-byte vector, for the
   * summation every DDA path shares (rcclx_dda_accumulate); the zero
   * upper half and its result are dead code to the compiler. */
  rcclx_vec16 v[NMAX];
  RCCLX_UNROLL
  for (int q = 0; q < NMAX; ++q) {
    v[q].w[0] = q == rd.rank ? own[0] : (uint32_t)x[q][0];
    v[q].w[1] = q == rd.rank ? own[1] : (uint32_t)x[q][1];
    v[q].w[2] = v[q].w[3] = 0u;
  }
  const rcclx_vec16 sum = rcclx_dda_accumulate<T, OP, NMAX>(v, rd.nranks);
  out[0] = sum.w[0];
  out[1] = sum.w[1];
}

template <typename T, int OP, int NMAX, int MODE>
/* MODE: RCCLX_LL_ANY or RCCLX_LL_LOCAL (rcclx_ll_mode_of(c.flags)).
 * RCCLX_LAUNCH_BOUNDS_512: two blocks per SM on NVIDIA, as the other DDA
 * kernels reach by themselves (the grid is sized by the fewest blocks any
 * of them fits per multiprocessor, rcclx_dda_min_occupancy). */
RCCLX_GLOBAL void RCCLX_LAUNCH_BOUNDS_512
    rcclx_dda_ll_kernel(rcclx_dev_comm c, const T* send, T* recv, size_t n, uint32_t sig) {
  __shared__ rcclx_ll_shared sh;
  rcclx_grid_dependency_wait(); /* the previous kernel's writes (rcclx_dda_done_waiting) */
  rcclx_dda_launch_next_early(c);
  const int b = (int)blockIdx.x, tid = (int)threadIdx.x, g = (int)gridDim.x, E = 8 / (int)sizeof(T);
  /* 32-bit line indices: a launch holds at most RCCLX_LL_MAX_BYTES / 8
   * lines.  Thread tid's lines: L0, then every `stride` further
   * (rcclx_grid_first_vector, counted in lines). */
  const uint32_t L0 = (uint32_t)rcclx_grid_first_vector(b, tid, g), stride = (uint32_t)blockDim.x * (uint32_t)g;
  const uint32_t nlines = (uint32_t)((n + E - 1) / E);
  /* The thread's first line of send, loaded before the counters
   * (rcclx_ll_open; neither load needs the other), so the two round trips
   * overlap. */
  uint32_t first[2] = {0u, 0u};
  if (L0 < nlines) rcclx_ll_load_clipped(send, L0, n, first);
  /* The mapping's owner of line L: warp-sized runs dealt to the g blocks
   * in turn; no spare lines. */
  const auto owner = [g](int spare, uint32_t L) { return spare ? -1 : (int)(L / RCCLX_WARP_SIZE % (uint32_t)g); };
  rcclx_ll_call call;
  if (!rcclx_ll_open<MODE>(c, sig, &sh, owner, &call)) return;
  RCCLX_TRACE(c, call.k, 0);

  rcclx_ll_publish_headers<MODE>(c, call);
  if (L0 < nlines) rcclx_ll_publish<MODE>(c, rcclx_ll_line_offset(call.buf, c.rank, L0), first, 2, call.tag);
  for (uint32_t L = L0 + stride; L < nlines; L += stride) {
    uint32_t d[2];
    rcclx_ll_load_clipped(send, L, n, d);
    rcclx_ll_publish<MODE>(c, rcclx_ll_line_offset(call.buf, c.rank, L), d, 2, call.tag);
  }
  RCCLX_TRACE(c, call.k, 1);
  rcclx_ll_commit(c, call);

  /* The headers: the block's last warp checks them (a small message leaves
   * that warp without lines, so the check runs beside the data polls).
   * One watchdog state per thread for all its waits of the call (a header
   * lane's header wait, then its lines' when its warp holds lines): the
   * watchdog bounds the thread's whole wait for its peers. */
  uint32_t spins = 0;
  uint64_t t0 = 0;
  int bad = rcclx_ll_check_headers<MODE>(c, call, &sh, (int)blockDim.x - RCCLX_WARP_SIZE, 1, &spins, &t0);

  const rcclx_ll_reader rd = rcclx_ll_reader_of<MODE>(c);
  for (uint32_t L = L0; !bad && L < nlines; L += stride) {
    uint64_t x[1][NMAX][2];
    bad = rcclx_ll_gather_lines<NMAX, 1>(c, rd, call, &sh, L, x, &spins, &t0, b);
    if (bad) break;
    /* This rank's own part: the first line from the registers its write
     * used (reading send again put a load after the polls, on the call's
     * path: bench/RESULTS.md runs 58-59), later ones from send. */
    uint32_t own[2] = {first[0], first[1]}, sum[2];
    if (L != L0) rcclx_ll_load_clipped(send, L, n, own);
    rcclx_ll_reduce_line<T, OP, NMAX>(rd, own, x[0], sum);
    rcclx_ll_store_clipped(recv, L, n, sum);
  }
  RCCLX_TRACE(c, call.k, 2);
  /* No closing vote or trigger: each thread leaves once its own polls are
   * done.  A block that exits counts as having let the stream's next kernel
   * go, and on the normal path its header lane already did
   * (rcclx_ll_check_headers); a block-wide vote here only kept every warp
   * until the slowest one (bench/RESULTS.md, runs 67-69).  A thread that
   * stopped on a timeout or a mismatch leaves its lines unwritten; the error
   * is recorded. */
  RCCLX_TRACE(c, call.k, 3);
  RCCLX_TRACE(c, call.k, 4);
}

#endif /* RCCLX_GPU_LANG */
