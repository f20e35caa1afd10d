/* rcclx/dda/plan.h - host-side planning and argument checks for the DDA
 * AllReduce: plain host code, covered by the CPU tests. */
#pragma once

#include <rcclx/comm.h>

typedef enum : int {
  RCCLX_ALGO_AUTO = 0, /* by size: LL, flat, tree (rcclx_dda_resolve) */
  RCCLX_ALGO_FLAT = 1, /* one-shot: every rank reads every peer; one barrier */
  RCCLX_ALGO_TREE = 2, /* two-shot: reduce-scatter + all-gather; two barriers */
  RCCLX_ALGO_LOWP_FLAT = 3, /* FP8 on the wire, one-shot (rcclx/fp8/collectives.h); sum only */
  RCCLX_ALGO_LOWP_TREE = 4, /* FP8 on the wire, two-shot; sum only */
  RCCLX_ALGO_LL = 5,        /* one-shot with the flag in the data (rcclx/dda/ll.h): no barrier, no fence */
  RCCLX_ALGO_COUNT
} rcclx_algo;

RCCLX_HOST const char* rcclx_algo_name(rcclx_algo a) {
  return a == RCCLX_ALGO_AUTO ? "auto" : a == RCCLX_ALGO_FLAT ? "flat" : a == RCCLX_ALGO_TREE ? "tree"
       : a == RCCLX_ALGO_LOWP_FLAT ? "lowp_flat" : a == RCCLX_ALGO_LOWP_TREE ? "lowp_tree"
       : a == RCCLX_ALGO_LL ? "ll" : "?";
}

/* Default flat/tree switch point for nranks (bytes of one rank's message);
 * RCCLX_FLAT_MAX_BYTES overrides.  From bench/RESULTS.md (2026-12-02, one
 * H200, virtual ranks, bf16): with 2 and 4 ranks flat was faster at every
 * size up to 64 MiB; with 8, flat up to 256 KiB and tree from 1 MiB.  Real
 * links favour tree sooner: re-measure on several GPUs (issue #7). */
RCCLX_HOST size_t rcclx_default_flat_max_bytes(int nranks) {
  const size_t d = nranks <= 4 ? ((size_t)256 << 20) : ((size_t)512 << 10);
  return rcclx_env_size("RCCLX_FLAT_MAX_BYTES", d);
}

/* Default LL switch point for AUTO (bytes of one rank's message, at most
 * RCCLX_LL_MAX_BYTES); RCCLX_LL_MAX_BYTES overrides.  From bench/RESULTS.md
 * (run 44, one H200, virtual ranks, bf16, us per call, LL against the
 * flat kernel): 2 ranks 2.55 / 3.30 at 16 KiB and 2.62 / 3.48 at 64 KiB;
 * 4 ranks 2.91 / 3.54 and 3.08 / 3.60; 8 ranks 4.01 / 4.25 at 16 KiB but
 * 5.69 / 4.30 at 64 KiB (its doubled bytes, read by 7 peers).  So 64 KiB
 * up to 4 ranks, 16 KiB above (3, 5-7 ranks: unmeasured, by their
 * neighbours).  Whether it wins over real links is issue #7's
 * measurement.  (After a rank mismatch in an LL call the communicators
 * must be rebuilt: rcclx/dda/ll.h.) */
RCCLX_HOST size_t rcclx_default_ll_max_bytes(int nranks) {
  const size_t d = nranks <= 4 ? ((size_t)64 << 10) : ((size_t)16 << 10);
  const size_t v = rcclx_env_size("RCCLX_LL_MAX_BYTES", d);
  return v < RCCLX_LL_MAX_BYTES ? v : RCCLX_LL_MAX_BYTES;
}

/* Blocks of one LL launch (rcclx/dda/ll.h) of `bytes` bytes per rank on a
 * communicator grid of nblocks x nthreads: one per nthreads / 4 lines of 8
 * data bytes (128 at 512 threads: the first warps of a block poll lines,
 * and the header checks of its last warp never queue behind lines of
 * their own), at least 1 and at most nblocks.  Every block a small message
 * leaves without lines still checks headers and lengthens the tail; too
 * few blocks queue the lines' polls (bench/RESULTS.md, runs 49-50).
 * Against the whole grid, interleaved (run 52, one H200, virtual ranks):
 * 0.15-0.3 us off a 1 KiB call at 2-8 ranks, 0.14 off 16 KiB at 2.  The
 * grid follows from the launch's count and the communicator, so ranks that
 * agree on the call agree on it. */
RCCLX_HOST_DEVICE int rcclx_ll_blocks(size_t bytes, int nblocks, int nthreads) {
  const size_t lines = (bytes + 7) / 8, per_block = nthreads / 4 > 0 ? (size_t)(nthreads / 4) : 1;
  const size_t g = (lines + per_block - 1) / per_block;
  return g < 1 ? 1 : g > (size_t)nblocks ? nblocks : (int)g;
}

/* Threads of each block of an LL launch of `bytes` bytes per rank on g
 * blocks (rcclx_ll_blocks) of a communicator grid of nthreads threads per
 * block, with warps of `warp` lanes: the warps that hold lines (the line
 * mapping deals warp-sized runs of lines to the g blocks in turn,
 * rcclx_grid_first_vector) and one more, whose lanes check the peers'
 * headers (rcclx/dda/ll.h); at most nthreads (then the last warp may hold
 * lines too, as before).  A block of the full nthreads would launch and
 * retire warps that only wait at its barrier. */
RCCLX_HOST_DEVICE int rcclx_ll_threads(size_t bytes, int g, int nthreads, int warp) {
  const size_t lines = bytes ? (bytes + 7) / 8 : 1;
  const size_t line_warps = (lines - 1) / (size_t)warp / (size_t)g + 1;
  const size_t t = (line_warps + 1) * (size_t)warp;
  return t < (size_t)nthreads ? (int)t : nthreads;
}

/* Default size (bytes of one rank's message) from which a view with
 * RCCLX_VIEW_DIRECT runs AUTO as the two-shot reading the user's buffers
 * (rcclx_dda_resolve); RCCLX_DIRECT_MIN_BYTES overrides.  Below it the
 * staged one-shot (one barrier, no end barrier) is faster; above it the
 * staging copy is what large messages pay for.  From bench/RESULTS.md
 * (run 9, one H200, virtual ranks): direct won from 1 MiB with 8 ranks,
 * from 4 MiB with 4 ranks (lost at 1 MiB) and broke even at 4 MiB with 2;
 * 2 MiB is in the run-10 sweep. */
RCCLX_HOST size_t rcclx_default_direct_min_bytes(int nranks) {
  const size_t d = nranks >= 8 ? ((size_t)1 << 20) : nranks >= 4 ? ((size_t)2 << 20) : ((size_t)4 << 20);
  return rcclx_env_size("RCCLX_DIRECT_MIN_BYTES", d);
}

/* Most elements of one launch: vector counts stay below 2^32, which the
 * kernels' 32-bit index arithmetic relies on (staged and registered calls
 * are bounded by the region, < 2^36 bytes, already). */
RCCLX_HOST size_t rcclx_dda_max_launch_elems(rcclx_dtype dtype) {
  return ((size_t)1 << 35) / rcclx_dtype_size(dtype);
}

/* AUTO resolved by size: flat and tree give bitwise-identical results, so
 * this choice never changes a model's numbers. */
RCCLX_HOST rcclx_algo rcclx_allreduce_choose(rcclx_algo algo, size_t bytes, size_t flat_max_bytes) {
  if (algo != RCCLX_ALGO_AUTO) return algo;
  return bytes <= flat_max_bytes ? RCCLX_ALGO_FLAT : RCCLX_ALGO_TREE;
}
/* The same with the LL one-shot for the smallest messages (its results are
 * the flat kernel's bits too, rcclx/dda/ll.h). */
RCCLX_HOST rcclx_algo rcclx_dda_choose(rcclx_algo algo, size_t bytes, size_t ll_max_bytes, size_t flat_max_bytes) {
  if (algo == RCCLX_ALGO_AUTO && bytes <= ll_max_bytes) return RCCLX_ALGO_LL;
  return rcclx_allreduce_choose(algo, bytes, flat_max_bytes);
}

/* Where the peers read a call's message (`src` of the kernels in
 * rcclx/dda/kernels.h). */
#define RCCLX_SRC_STAGED 0     /* copied into the copy-in half by the kernel */
#define RCCLX_SRC_REGISTERED 1 /* already in the registered input region */
#define RCCLX_SRC_DIRECT 2     /* read from the user's buffers (tree only) */

/* A full-precision call's algorithm (AUTO resolved) and source, from the
 * communicator's thresholds: send at the registered input region is
 * REGISTERED; on a view with RCCLX_VIEW_DIRECT, AUTO from
 * c->direct_min_bytes up is the tree reading the user's buffers (DIRECT),
 * as is an explicit TREE that large; everything else is STAGED.  Only the
 * two-shot reads directly: its ranks write nothing a peer still reads, even
 * in place, while a one-shot in place would overwrite its input under its
 * peers' reads.  So a rank's choice never depends on whether it runs in
 * place, and ranks passing the same count, dtype and algo agree. */
RCCLX_HOST rcclx_algo rcclx_dda_resolve(const rcclx_comm* c, const void* send, size_t bytes, rcclx_algo algo,
                                        int* src) {
  const int zero_copy = send == rcclx_comm_input(c);
  const size_t direct_min = !zero_copy && (c->view.flags & RCCLX_VIEW_DIRECT) ? c->direct_min_bytes : SIZE_MAX;
  rcclx_algo a = algo;
  if (a == RCCLX_ALGO_AUTO && bytes > c->ll_max_bytes && bytes >= direct_min) a = RCCLX_ALGO_TREE;
  a = rcclx_dda_choose(a, bytes, c->ll_max_bytes, c->flat_max_bytes);
  *src = a == RCCLX_ALGO_LL ? RCCLX_SRC_STAGED /* copies from wherever send is */
         : zero_copy             ? RCCLX_SRC_REGISTERED
         : a == RCCLX_ALGO_TREE && bytes >= direct_min ? RCCLX_SRC_DIRECT
                                                       : RCCLX_SRC_STAGED;
  return a;
}

/* Non-zero fingerprint of a call, compared across ranks in-kernel. */
RCCLX_HOST uint32_t rcclx_call_signature(size_t count, rcclx_dtype dtype, rcclx_op op, rcclx_algo algo, int source) {
  const uint64_t parts[5] = {(uint64_t)count, (uint64_t)dtype, (uint64_t)op, (uint64_t)algo, (uint64_t)source};
  return rcclx_fingerprint(parts, 5);
}

/* The fingerprint of one launch of a call run in chunks: the launch's own
 * (sig) and the whole call's count.  Ranks whose counts agree in a first
 * chunk but not in total then disagree at that first chunk, instead of one
 * of them later launching a chunk the others never do. */
RCCLX_HOST uint32_t rcclx_chunk_signature(uint32_t sig, size_t total) {
  const uint64_t parts[2] = {(uint64_t)sig, (uint64_t)total};
  return rcclx_fingerprint(parts, 2);
}

/* Argument rules of rcclx_allreduce, checked before any launch:
 *  - the view is built (nranks 2..8, rank in range, nblocks >= 1);
 *  - send and recv non-NULL and 16-byte aligned; equal (in place) or not
 *    overlapping;
 *  - count >= 1 (count == 0 is a documented no-op handled by the caller);
 *  - dtype fp32/fp16/bf16, op sum/max/min, algo auto/flat/tree, or
 *    lowp_flat/lowp_tree with op sum;
 *  - zero-copy (send == the registered input region): the message must fit
 *    in the region; copy-in messages of any size are processed in chunks;
 *  - recv outside this rank's registered buffer (all regions): peers read
 *    that memory during the call, so an in-place zero-copy call, or any
 *    output written there, would race with them. */
RCCLX_HOST rcclx_status rcclx_allreduce_check(const rcclx_dev_comm* v, const void* send, const void* recv, size_t count,
                                              rcclx_dtype dtype, rcclx_op op, rcclx_algo algo) {
  if (!v) return RCCLX_ERR_NULL_POINTER;
  if (v->nranks < 2 || v->nranks > RCCLX_MAX_RANKS) return RCCLX_ERR_INVALID_NRANKS;
  if (v->rank < 0 || v->rank >= v->nranks) return RCCLX_ERR_INVALID_RANK;
  if (v->nblocks < 1 || v->nblocks > RCCLX_MAX_BLOCKS || v->region_bytes < 4096) return RCCLX_ERR_INVALID_ARGUMENT;
  for (int r = 0; r < v->nranks; ++r)
    if (!v->bufs[r] || !v->sigs[r]) return RCCLX_ERR_NULL_POINTER;
  if (!send || !recv) return RCCLX_ERR_NULL_POINTER;
  if (((uintptr_t)send | (uintptr_t)recv) & 15u) return RCCLX_ERR_MISALIGNED;
  const size_t es = rcclx_dtype_size(dtype);
  if (es == 0) return RCCLX_ERR_UNSUPPORTED_DTYPE;
  if ((int)op < 0 || op >= RCCLX_OP_COUNT) return RCCLX_ERR_UNSUPPORTED_OP;
  if ((int)algo < 0 || algo >= RCCLX_ALGO_COUNT) return RCCLX_ERR_INVALID_ARGUMENT;
  if ((algo == RCCLX_ALGO_LOWP_FLAT || algo == RCCLX_ALGO_LOWP_TREE) && op != RCCLX_SUM) return RCCLX_ERR_UNSUPPORTED_OP;
  if (count == 0 || count > ((size_t)1 << 48) / es) return RCCLX_ERR_INVALID_COUNT;
  const size_t bytes = count * es;
  const char *s = (const char*)send, *r = (const char*)recv;
  if (s != r && rcclx_ranges_overlap(s, bytes, r, bytes)) return RCCLX_ERR_INVALID_ARGUMENT; /* partial overlap */
  const char* input = rcclx_input_region(v, v->rank);
  if (s == input && bytes > v->region_bytes) return RCCLX_ERR_BUFFER_TOO_SMALL;
  if (rcclx_overlaps_registered(v, recv, bytes)) return RCCLX_ERR_INVALID_ARGUMENT;
  return RCCLX_SUCCESS;
}

/* Elements per launch for copy-in calls: a whole region. */
RCCLX_HOST size_t rcclx_allreduce_chunk_elems(size_t region_bytes, rcclx_dtype dtype) {
  return region_bytes / rcclx_dtype_size(dtype);
}
