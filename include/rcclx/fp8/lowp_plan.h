/* rcclx/fp8/lowp_plan.h - host-side planning for the low-precision
 * collectives (rcclx/fp8/collectives.h): the wire description, the buffer
 * layout of one call, chunking, argument checks and the environment
 * switches.  Plain host code, covered by the CPU tests.
 *
 * ---- What goes on the wire -----------------------------------------------
 * Each rank packs its input into its registered buffer (the copy-in half of
 * the call, rcclx/comm.h) and peers read it from there.  A call's input is S
 * segments of m elements (S = nranks for ReduceScatter and AllToAll, whose
 * input holds one segment per destination rank, else S = 1); segment s sits
 * at s * rcclx_lowp_segment_bytes(m) and is either
 *   - one packed FP8 chunk (rcclx/fp8/pack.h: scales, then codes), or
 *   - the raw elements (RCCLX_WIRE_RAW: the plain, full-precision path).
 * Arithmetic is always fp32: peers' groups are decoded, summed in rank order
 * 0..nranks-1 and rounded once, so every rank gets bitwise the same result.
 */
#pragma once

#include <rcclx/comm.h>
#include <rcclx/fp8/pack.h>

typedef enum : int {
  RCCLX_LOWP_ALLREDUCE_FLAT = 0, /* quantize, barrier, every rank sums all */
  RCCLX_LOWP_ALLREDUCE_TREE = 1, /* quantize, barrier, sum own shard and
                                    re-quantize it, barrier, gather */
  RCCLX_LOWP_REDUCE_SCATTER = 2,
  RCCLX_LOWP_ALLGATHER = 3,
  RCCLX_LOWP_ALLTOALL = 4,
  RCCLX_LOWP_KIND_COUNT
} rcclx_lowp_kind;

/* The format on the wire.  `format` is an rcclx_fp8_format, or
 * RCCLX_WIRE_RAW for the full-precision path of the same kernels. */
#define RCCLX_WIRE_RAW (-1)
typedef struct rcclx_wire {
  int format;             /* rcclx_fp8_format or RCCLX_WIRE_RAW */
  int block_size;         /* 32, 64, 128 or 256 elements per scale */
  rcclx_scale_kind scale; /* RCCLX_SCALE_F32 or RCCLX_SCALE_E8M0 */
} rcclx_wire;

/* e4m3 with 128-element blocks and fp32 scales: E4M3FNUZ in HIP builds
 * (what MI300 converts in hardware), OCP E4M3FN in CUDA and host builds.
 * MI350 (gfx950) converts the OCP formats: pass the wire explicitly there,
 * or set RCCLX_LOW_PRECISION_FORMAT=e4m3fn (FNUZ still works, in software). */
RCCLX_HOST rcclx_wire rcclx_wire_default(void) {
  rcclx_wire w;
#if defined(RCCLX_PLATFORM_HIP)
  w.format = RCCLX_FP8_E4M3FNUZ;
#else
  w.format = RCCLX_FP8_E4M3FN;
#endif
  w.block_size = 128;
  w.scale = RCCLX_SCALE_F32;
  return w;
}
RCCLX_HOST rcclx_wire rcclx_wire_make(int format, int block_size, rcclx_scale_kind scale) {
  rcclx_wire w;
  w.format = format;
  w.block_size = block_size;
  w.scale = scale;
  return w;
}
RCCLX_HOST rcclx_wire rcclx_wire_raw(void) {
  rcclx_wire w = rcclx_wire_default();
  w.format = RCCLX_WIRE_RAW;
  return w;
}
RCCLX_HOST int rcclx_wire_valid(const rcclx_wire* w) {
  return w && (w->format == RCCLX_WIRE_RAW || rcclx_fp8_format_valid((rcclx_fp8_format)w->format)) &&
         rcclx_fp8_block_size_valid(w->block_size) && (int)w->scale >= 0 && w->scale < RCCLX_SCALE_KIND_COUNT;
}

RCCLX_HOST_DEVICE size_t rcclx_lowp_segment_bytes(size_t m, rcclx_wire w, size_t elem_size) {
  return w.format == RCCLX_WIRE_RAW ? rcclx_align16(m * elem_size)
                                    : rcclx_fp8_packed_bytes(m, w.block_size, w.scale);
}
RCCLX_HOST_DEVICE int rcclx_lowp_input_segments(rcclx_lowp_kind k, int nranks) {
  return (k == RCCLX_LOWP_REDUCE_SCATTER || k == RCCLX_LOWP_ALLTOALL) ? nranks : 1;
}
/* Bytes on the wire per element (what each rank publishes, per element). */
RCCLX_HOST double rcclx_lowp_wire_bytes_per_elem(rcclx_wire w, size_t elem_size) {
  return w.format == RCCLX_WIRE_RAW ? (double)elem_size
                                    : 1.0 + (double)rcclx_fp8_scale_size(w.scale) / w.block_size;
}

/* Segment length per launch: the largest multiple of the block size (so a
 * chunked message is quantized in exactly the groups of an unchunked one)
 * whose S segments fit in one region; 0 if not even one block fits. */
RCCLX_HOST size_t rcclx_lowp_chunk_elems(size_t region_bytes, int segments, rcclx_wire w, size_t elem_size) {
  const size_t B = (size_t)w.block_size, per = region_bytes / (size_t)segments;
  const double bytes_per_elem = rcclx_lowp_wire_bytes_per_elem(w, elem_size);
  size_t m = (size_t)((double)per / bytes_per_elem) / B * B;
  while (m > 0 && rcclx_lowp_segment_bytes(m, w, elem_size) * (size_t)segments > region_bytes) m -= B;
  return m;
}

/* Non-zero fingerprint of a call, compared across ranks in-kernel. */
RCCLX_HOST uint32_t rcclx_lowp_signature(rcclx_lowp_kind kind, size_t m, rcclx_dtype dtype, rcclx_wire w) {
  const uint64_t parts[6] = {(uint64_t)kind + 100u, (uint64_t)m, (uint64_t)dtype, (uint64_t)(w.format + 7),
                             (uint64_t)w.block_size, (uint64_t)w.scale};
  return rcclx_fingerprint(parts, 6);
}

/* Argument rules of every low-precision launcher, checked before a launch:
 *  - the view is built (nranks 2..8, rank in range, buffers present);
 *  - send/recv non-NULL and 16-byte aligned;
 *  - `count` is the per-rank count of the call (AllReduce: the message;
 *    ReduceScatter: the output; AllGather: the input; AllToAll: elements
 *    per peer), >= 1 (count == 0 is a no-op success in the launchers);
 *  - dtype fp32/fp16/bf16; a valid wire;
 *  - AllReduce may run in place (send == recv), other overlaps are rejected;
 *    the other collectives need disjoint send and recv;
 *  - at least one quantization block must fit in the registered region. */
RCCLX_HOST rcclx_status rcclx_lowp_check(const rcclx_dev_comm* v, rcclx_lowp_kind kind, const void* send,
                                         const void* recv, size_t count, rcclx_dtype dtype, const rcclx_wire* w) {
  if (!v || !w) return RCCLX_ERR_NULL_POINTER;
  if (v->nranks < 2 || v->nranks > RCCLX_MAX_RANKS) return RCCLX_ERR_INVALID_NRANKS;
  if (v->rank < 0 || v->rank >= v->nranks) return RCCLX_ERR_INVALID_RANK;
  if (v->nblocks < 1 || v->nblocks > RCCLX_MAX_BLOCKS || v->region_bytes < 4096) return RCCLX_ERR_INVALID_ARGUMENT;
  for (int r = 0; r < v->nranks; ++r)
    if (!v->bufs[r] || !v->sigs[r]) return RCCLX_ERR_NULL_POINTER;
  if ((int)kind < 0 || kind >= RCCLX_LOWP_KIND_COUNT) return RCCLX_ERR_INVALID_ARGUMENT;
  if (!send || !recv) return RCCLX_ERR_NULL_POINTER;
  if (((uintptr_t)send | (uintptr_t)recv) & 15u) return RCCLX_ERR_MISALIGNED;
  const size_t es = rcclx_dtype_size(dtype);
  if (es == 0) return RCCLX_ERR_UNSUPPORTED_DTYPE;
  if (!rcclx_wire_valid(w)) return RCCLX_ERR_INVALID_ARGUMENT;
  if (count == 0 || count > ((size_t)1 << 44) / es) return RCCLX_ERR_INVALID_COUNT;
  const size_t n = (size_t)v->nranks;
  const int segs = rcclx_lowp_input_segments(kind, v->nranks);
  const size_t in_bytes = count * es * (size_t)segs;
  const size_t out_bytes = count * es * (kind == RCCLX_LOWP_ALLGATHER || kind == RCCLX_LOWP_ALLTOALL ? n : 1u);
  const char *s = (const char*)send, *r = (const char*)recv;
  const int in_place_ok = kind == RCCLX_LOWP_ALLREDUCE_FLAT || kind == RCCLX_LOWP_ALLREDUCE_TREE;
  if (!(in_place_ok && s == r) && rcclx_ranges_overlap(s, in_bytes, r, out_bytes)) return RCCLX_ERR_INVALID_ARGUMENT;
  if (rcclx_overlaps_registered(v, recv, out_bytes)) return RCCLX_ERR_INVALID_ARGUMENT; /* peers read it */
  if (rcclx_lowp_chunk_elems(v->region_bytes, segs, *w, es) == 0) return RCCLX_ERR_BUFFER_TOO_SMALL;
  return RCCLX_SUCCESS;
}

/* ---- switching it on ------------------------------------------------------
 * RCCL_LOW_PRECISION_ENABLE=1 (the variable RCCLX users know) or
 * RCCLX_LOW_PRECISION_ENABLE=1 turns the FP8 wire on for every collective;
 * RCCLX_LOW_PRECISION_<ALLREDUCE|REDUCE_SCATTER|ALLGATHER|ALLTOALL>=0|1
 * switches one collective off or on by itself.  Messages of fewer than
 * RCCLX_LOW_PRECISION_MIN_BYTES bytes per rank (default
 * rcclx_lowp_default_min_bytes) keep the full-precision path.
 * RCCLX_LOW_PRECISION_FORMAT=e4m3|e5m2|e4m3fn|e4m3fnuz|e5m2fnuz and
 * RCCLX_LOW_PRECISION_BLOCK=32|64|128|256 pick the wire.
 * A communicator reads them once, when it is created (rcclx_comm.lowp,
 * rcclx_lowp_switches_from_env); rcclx_lowp_enabled, rcclx_wire_from_env
 * and rcclx_wire_for read the environment as it is now. */
typedef enum : int {
  RCCLX_COLL_ALLREDUCE = 0,
  RCCLX_COLL_REDUCE_SCATTER = 1,
  RCCLX_COLL_ALLGATHER = 2,
  RCCLX_COLL_ALLTOALL = 3
} rcclx_collective;

RCCLX_HOST int rcclx_env_flag(const char* name, int fallback) {
  const char* s = getenv(name);
  if (!s || !*s) return fallback;
  return !(s[0] == '0' && s[1] == '\0');
}

/* Smallest message (bytes per rank) the switch sends over FP8.  16 MiB is
 * where RCCLX engages its own low-precision path.  Measured here
 * (bench/RESULTS.md, 2026-12-02): on ONE GPU, where no link limits the
 * bytes, FP8 AllReduce never paid (0.73x-0.96x of bf16 from 256 KiB to
 * 64 MiB) and ReduceScatter / AllGather / AllToAll were 0.96x-1.13x at
 * 16 MiB.  Where it pays on real links is issue #7's measurement. */
RCCLX_HOST size_t rcclx_lowp_default_min_bytes(void) { return (size_t)16 << 20; }

/* Low-precision AllReduce: flat at or below this many bytes per rank, tree
 * above (RCCLX_LOW_PRECISION_FLAT_MAX_BYTES overrides).  From
 * bench/RESULTS.md (2026-12-02, one H200, virtual ranks): 2 ranks flat up to
 * 64 MiB; 4 ranks even at 4 MiB, tree ahead above; 8 ranks flat at 256 KiB,
 * tree from 1 MiB. */
RCCLX_HOST size_t rcclx_lowp_default_flat_max_bytes(int nranks) {
  const size_t d = nranks <= 2 ? ((size_t)64 << 20) : nranks <= 4 ? ((size_t)4 << 20) : ((size_t)512 << 10);
  return rcclx_env_size("RCCLX_LOW_PRECISION_FLAT_MAX_BYTES", d);
}

/* The switches as the environment holds them now. */
RCCLX_HOST rcclx_lowp_switches rcclx_lowp_switches_from_env(void) {
  static const char* const per[4] = {"RCCLX_LOW_PRECISION_ALLREDUCE", "RCCLX_LOW_PRECISION_REDUCE_SCATTER",
                                     "RCCLX_LOW_PRECISION_ALLGATHER", "RCCLX_LOW_PRECISION_ALLTOALL"};
  rcclx_lowp_switches s;
  const int all = rcclx_env_flag("RCCL_LOW_PRECISION_ENABLE", 0) || rcclx_env_flag("RCCLX_LOW_PRECISION_ENABLE", 0);
  s.on = 0;
  for (int c = 0; c < 4; ++c)
    if (rcclx_env_flag(per[c], all)) s.on |= 1u << c;
  s.min_bytes = rcclx_env_size("RCCLX_LOW_PRECISION_MIN_BYTES", rcclx_lowp_default_min_bytes());
  rcclx_wire w = rcclx_wire_default();
  const char* f = getenv("RCCLX_LOW_PRECISION_FORMAT");
  if (f && !strcmp(f, "e5m2")) w.format = rcclx_fp8_is_fnuz((rcclx_fp8_format)w.format) ? RCCLX_FP8_E5M2FNUZ : RCCLX_FP8_E5M2;
  else if (f && !strcmp(f, "e4m3fn")) w.format = RCCLX_FP8_E4M3FN;
  else if (f && !strcmp(f, "e4m3fnuz")) w.format = RCCLX_FP8_E4M3FNUZ;
  else if (f && !strcmp(f, "e5m2fnuz")) w.format = RCCLX_FP8_E5M2FNUZ;
  const int b = (int)rcclx_env_size("RCCLX_LOW_PRECISION_BLOCK", 0);
  if (rcclx_fp8_block_size_valid(b)) w.block_size = b;
  s.format = w.format;
  s.block_size = w.block_size;
  return s;
}

/* The FP8 wire the switches name (format and block; fp32 scales). */
RCCLX_HOST rcclx_wire rcclx_lowp_switches_fp8(const rcclx_lowp_switches* s) {
  rcclx_wire w = rcclx_wire_default();
  w.format = s->format;
  w.block_size = s->block_size;
  return w;
}
/* Whether the switches send collective c's message of bytes_per_rank over FP8. */
RCCLX_HOST int rcclx_lowp_switches_on(const rcclx_lowp_switches* s, rcclx_collective c, size_t bytes_per_rank) {
  return (int)c >= 0 && (int)c <= 3 && ((s->on >> (int)c) & 1u) && bytes_per_rank >= s->min_bytes;
}
/* The wire they give it: the FP8 wire where on, else full precision. */
RCCLX_HOST rcclx_wire rcclx_lowp_switches_wire(const rcclx_lowp_switches* s, rcclx_collective c,
                                               size_t bytes_per_rank) {
  return rcclx_lowp_switches_on(s, c, bytes_per_rank) ? rcclx_lowp_switches_fp8(s) : rcclx_wire_raw();
}

/* The same three, read from the environment as it is now. */
RCCLX_HOST int rcclx_lowp_enabled(rcclx_collective c, size_t bytes_per_rank) {
  const rcclx_lowp_switches s = rcclx_lowp_switches_from_env();
  return rcclx_lowp_switches_on(&s, c, bytes_per_rank);
}
RCCLX_HOST rcclx_wire rcclx_wire_from_env(void) {
  const rcclx_lowp_switches s = rcclx_lowp_switches_from_env();
  return rcclx_lowp_switches_fp8(&s);
}
RCCLX_HOST rcclx_wire rcclx_wire_for(rcclx_collective c, size_t bytes_per_rank) {
  const rcclx_lowp_switches s = rcclx_lowp_switches_from_env();
  return rcclx_lowp_switches_wire(&s, c, bytes_per_rank);
}
