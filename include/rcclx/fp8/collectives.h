/* rcclx/fp8/collectives.h - low-precision collectives: FP8 on the wire,
 * fp32 arithmetic.  AllReduce (flat and tree), ReduceScatter, AllGather and
 * AllToAll, each ONE fused kernel (pack, barrier, read peers, unpack,
 * reduce), plus the group-level device pieces a user's kernel can call.
 *
 * Wire layout, chunking, checks and the environment switches:
 * rcclx/fp8/lowp_plan.h.  The same kernels also run the full-precision path
 * (RCCLX_WIRE_RAW), so every collective has a plain form to fall back to.
 *
 * ---- Fixed ownership ----------------------------------------------------
 * A segment of m elements is cut into quantization groups of B elements;
 * group g of a call (g = segment * groups_per_segment + j) belongs to tile
 * g / (nthreads / (B/8)), and tile t is handled by block t % nblocks in
 * every phase, on every rank.  So a group is only ever written and read by
 * same-index blocks, and the per-block barrier of rcclx/signal.h orders
 * everything, across calls too (every call runs the barrier on every block
 * and alternates copy-in halves, as the DDA kernels do, sharing their call
 * counter).
 *
 * ---- Results ----------------------------------------------------------------
 * A rank's contribution is quantized once (tree: the reduced shard is
 * quantized a second time by its owner); values are decoded, multiplied by
 * their scale and summed in fp32 in rank order 0..nranks-1, then rounded
 * once to the output type.  AllReduce and AllGather outputs are bitwise
 * identical on every rank (the owner of a segment also reads back the
 * quantized form), and equal to a host reference built from
 * rcclx/fp8/pack.h (tests/gpu/test_lowp.cpp).  Tail groups (counts that are
 * not multiples of B, 8 or nranks) are handled in-kernel, never dropped.
 * Error bounds: see pack.h and tests/cpu/test_lowp_ref.cpp.
 */
#pragma once

#include <rcclx/comm_setup.h>
#include <rcclx/dda/kernels.h>
#include <rcclx/dda/plan.h>
#include <rcclx/fp8/lowp_plan.h>
#include <rcclx/fp8/quantize.h>

#if defined(RCCLX_GPU_LANG)

/* 8 elements of a user array at element i0 (zeros past n), any alignment
 * of p + i0: vector loads where 16-byte aligned, element loads otherwise. */
template <typename T>
RCCLX_DEVICE void rcclx_lowp_load8(const T* p, size_t i0, size_t n, float (&x)[8]) {
  if (i0 + 8 <= n && (((uintptr_t)(p + i0)) & 15u) == 0) {
    rcclx_load8_f32(p, i0, n, x);
  } else {
RCCLX_UNROLL
    for (int i = 0; i < 8; ++i) x[i] = i0 + i < n ? rcclx_to_f32(p[i0 + i]) : 0.0f;
  }
}
template <typename T>
RCCLX_DEVICE void rcclx_lowp_store8(T* p, size_t i0, size_t n, const float (&x)[8]) {
  if (i0 + 8 <= n && (((uintptr_t)(p + i0)) & 15u) == 0) {
    rcclx_store8_f32(p, i0, n, x);
  } else {
RCCLX_UNROLL
    for (int i = 0; i < 8; ++i)
      if (i0 + i < n) p[i0 + i] = rcclx_from_f32<T>(x[i]);
  }
}

RCCLX_DEVICE void rcclx_lowp_zero8(float (&x)[8]) {
RCCLX_UNROLL
  for (int i = 0; i < 8; ++i) x[i] = 0.0f;
}

/* Publish group j of a wire segment of m elements: this lane's 8 values
 * (zeros past m).  All B/8 lanes of the group call it, all lanes of the
 * warp active (the scale is a group shuffle); `live` == 0 lanes compute but
 * store nothing.  The segment must be in the caller's own buffer. */
template <typename T>
RCCLX_DEVICE void rcclx_lowp_put_group(char* seg, size_t m, size_t j, int lane, int live, const float (&x)[8],
                                       rcclx_wire w) {
  const size_t i0 = j * (size_t)w.block_size + (size_t)lane * 8;
  if (w.format == RCCLX_WIRE_RAW) {
    if (live) rcclx_lowp_store8((T*)seg, i0, m, x);
    return;
  }
  uint32_t q[2];
  const rcclx_fp8_scale s = rcclx_fp8_quantize_group8_n(x, w.block_size / 8, (rcclx_fp8_format)w.format, w.scale, q);
  if (live) {
    if (lane == 0) rcclx_fp8_store_scale(seg, j, s.stored, w.scale);
    rcclx_store8_u8((uint8_t*)seg + rcclx_fp8_scales_bytes(m, w.block_size, w.scale), i0, m, q);
  }
}

/* One lane's codes and scale of group j of one rank's fp8 segment, fetched
 * before decoding (so every peer's load is in flight before the first
 * decode). */
typedef struct rcclx_lowp_fetch {
  uint32_t q[2];
  uint32_t scale;
} rcclx_lowp_fetch;

RCCLX_DEVICE void rcclx_lowp_fetch_group(const char* seg, size_t m, size_t j, int lane, rcclx_wire w,
                                         rcclx_lowp_fetch* f) {
  const size_t i0 = j * (size_t)w.block_size + (size_t)lane * 8;
  rcclx_load8_u8((const uint8_t*)seg + rcclx_fp8_scales_bytes(m, w.block_size, w.scale), i0, m, f->q);
  f->scale = rcclx_fp8_load_scale(seg, j, w.scale);
}
/* decode(code) * scale for the 8 fetched codes, each product rounded once. */
RCCLX_DEVICE void rcclx_lowp_decode(const rcclx_lowp_fetch* f, rcclx_wire w, float (&x)[8]) {
  const float s = rcclx_fp8_scale_from_stored(f->scale, w.scale);
RCCLX_UNROLL
  for (int i = 0; i < 8; i += 2) {
    float a, b;
    rcclx_fp8_decode2(f->q[i / 4] >> (8 * (i % 4)), (rcclx_fp8_format)w.format, &a, &b);
    x[i] = rcclx_mul_rn(a, s);
    x[i + 1] = rcclx_mul_rn(b, s);
  }
}

/* This lane's 8 values of group j of a wire segment (zeros past m). */
template <typename T>
RCCLX_DEVICE void rcclx_lowp_get_group(const char* seg, size_t m, size_t j, int lane, rcclx_wire w, float (&x)[8]) {
  if (w.format == RCCLX_WIRE_RAW) {
    rcclx_lowp_load8((const T*)seg, j * (size_t)w.block_size + (size_t)lane * 8, m, x);
  } else {
    rcclx_lowp_fetch f;
    rcclx_lowp_fetch_group(seg, m, j, lane, w, &f);
    rcclx_lowp_decode(&f, w, x);
  }
}

/* Sum of group j of the segment at byte `seg_off` of the call's half over
 * every rank, in rank order 0..nranks-1, in fp32.  The caller guarantees
 * the peers' data is visible (a barrier or a tile wait). */
template <typename T>
RCCLX_DEVICE void rcclx_lowp_sum_group(const rcclx_dev_comm& c, size_t half_off, size_t seg_off, size_t m, size_t j,
                                       int lane, rcclx_wire w, float (&acc)[8]) {
  float y[8];
  if (w.format == RCCLX_WIRE_RAW) {
    rcclx_lowp_get_group<T>((const char*)c.bufs[0] + half_off + seg_off, m, j, lane, w, acc);
    for (int r = 1; r < c.nranks; ++r) {
      rcclx_lowp_get_group<T>((const char*)c.bufs[r] + half_off + seg_off, m, j, lane, w, y);
RCCLX_UNROLL
      for (int i = 0; i < 8; ++i) acc[i] += y[i];
    }
    return;
  }
  /* Four ranks' loads in flight at a time, the batches not unrolled: all
   * eight at once would not fit the 64 registers a co-resident grid allows
   * on NVIDIA, and unrolled batches cost CDNA ~190 VGPRs (95 like this). */
RCCLX_NO_UNROLL
  for (int r0 = 0; r0 < c.nranks; r0 += 4) {
    rcclx_lowp_fetch f[4];
RCCLX_UNROLL
    for (int r = 0; r < 4; ++r)
      if (r0 + r < c.nranks)
        rcclx_lowp_fetch_group((const char*)c.bufs[r0 + r] + half_off + seg_off, m, j, lane, w, &f[r]);
RCCLX_UNROLL
    for (int r = 0; r < 4; ++r)
      if (r0 + r < c.nranks) {
        rcclx_lowp_decode(&f[r], w, y);
RCCLX_UNROLL
        for (int i = 0; i < 8; ++i) acc[i] = r0 + r == 0 ? y[i] : acc[i] + y[i];
      }
  }
}

/* The fused kernel of every low-precision collective.  m: elements per
 * segment in this launch; in_stride / out_stride: elements between the
 * segments of send (RS, A2A) / recv (AG, A2A). */
#define RCCLX_LOWP_MAX_THREADS 512

template <typename T, int KIND, int FMT>
RCCLX_GLOBAL void RCCLX_LAUNCH_BOUNDS_512
    rcclx_lowp_kernel(rcclx_dev_comm c, const T* send, T* recv, size_t m, size_t in_stride, size_t out_stride,
                      rcclx_wire w, uint32_t sig) {
  /* The wire format is a compile-time constant (one encode/decode path per
   * kernel: a run-time switch over four formats cost CDNA 200+ VGPRs). */
  w.format = FMT;
  /* Group and tile indices fit in 32 bits: a call's groups all lie in one
   * region (< 2^36 bytes, rcclx_config_resolve) of >= 32-element groups. */
  const int R = c.nranks, me = c.rank;
  rcclx_dda_call k = rcclx_dda_open_call(c); /* call count and barrier session, as DDA */
  const size_t half = rcclx_dda_staged_offset(c, k.call); /* the copy-in half, as DDA */
  const uint32_t B = (uint32_t)w.block_size, lanes = B / 8u;
  const uint32_t gpb = blockDim.x / lanes, lg = threadIdx.x / lanes, nb = gridDim.x;
  const int lane = (int)(threadIdx.x % lanes);
  const uint32_t gs = (uint32_t)rcclx_fp8_nblocks(m, (int)B);
  const size_t seg = rcclx_lowp_segment_bytes(m, w, sizeof(T));
  char* mine = (char*)c.bufs[me] + half;
  float x[8];

  /* Phase 1: publish my input (S segments) into my half. */
  const uint32_t G1 = gs * (uint32_t)rcclx_lowp_input_segments((rcclx_lowp_kind)KIND, R);
  for (uint32_t t = blockIdx.x; t * gpb < G1; t += nb) {
    const uint32_t g = t * gpb + lg;
    const int live = g < G1;
    const uint32_t s = live ? g / gs : 0u, j = live ? g - s * gs : 0u;
    if (live) rcclx_lowp_load8(send + s * in_stride, (size_t)j * B + (size_t)lane * 8, m, x);
    else rcclx_lowp_zero8(x);
    rcclx_lowp_put_group<T>(mine + s * seg, m, j, lane, live, x, w);
  }
  if (rcclx_dda_first_barrier(c, &k, sig, RCCLX_SRC_STAGED, NULL, NULL, NULL)) return;

  /* Phase 2 (and 3): the groups this rank consumes, tile by tile.  The
   * block iterates uniformly (shuffles and barriers need every lane). */
  const int by_segment = KIND == RCCLX_LOWP_REDUCE_SCATTER || KIND == RCCLX_LOWP_ALLTOALL;
  uint32_t gb = by_segment ? (uint32_t)me * gs : 0u, ge = gb + gs; /* group range of phase 2 */
  const uint32_t gps = (gs + (uint32_t)R - 1u) / (uint32_t)R;    /* tree shard, in groups */
  if (KIND == RCCLX_LOWP_ALLREDUCE_TREE) {
    gb = gps * (uint32_t)me < gs ? gps * (uint32_t)me : gs;
    ge = gb + gps < gs ? gb + gps : gs;
  }
  const size_t seg_off = by_segment ? (size_t)me * seg : 0u;
  {
    const uint32_t tb = gb / gpb;
    for (uint32_t t = tb + (blockIdx.x + nb - tb % nb) % nb; t * gpb < ge; t += nb) {
      const uint32_t g = t * gpb + lg;
      const int live = g >= gb && g < ge;
      const uint32_t j = live ? g - (by_segment ? gb : 0u) : 0u;
      const size_t i0 = (size_t)j * B + (size_t)lane * 8;
      if (KIND == RCCLX_LOWP_ALLREDUCE_FLAT || KIND == RCCLX_LOWP_REDUCE_SCATTER) {
        if (live) {
          rcclx_lowp_sum_group<T>(c, half, seg_off, m, j, lane, w, x);
          rcclx_lowp_store8(recv, i0, m, x);
        }
      } else if (KIND == RCCLX_LOWP_ALLREDUCE_TREE) {
        /* My shard: sum, then re-publish it (re-quantized) in place; only
         * this lane group ever read my copy of group j. */
        if (live) rcclx_lowp_sum_group<T>(c, half, 0, m, j, lane, w, x);
        else rcclx_lowp_zero8(x);
        rcclx_lowp_put_group<T>(mine, m, j, lane, live, x, w);
      } else if (live) { /* ALLGATHER, ALLTOALL: segment of every rank */
        for (int r = 0; r < R; ++r) {
          rcclx_lowp_get_group<T>((const char*)c.bufs[r] + half + seg_off, m, j, lane, w, x);
          rcclx_lowp_store8(recv + (size_t)r * out_stride, i0, m, x);
        }
      }
    }
  }
  if (KIND == RCCLX_LOWP_ALLREDUCE_TREE) {
    if (rcclx_barrier_sync(c, &k.bar, 0, rcclx_no_card(), NULL) == RCCLX_BARRIER_TIMEOUT) return;
    for (uint32_t t = blockIdx.x; t * gpb < gs; t += nb) {
      const uint32_t g = t * gpb + lg;
      if (g < gs) {
        rcclx_lowp_get_group<T>((const char*)c.bufs[g / gps] + half, m, g, lane, w, x);
        rcclx_lowp_store8(recv, (size_t)g * B + (size_t)lane * 8, m, x);
      }
    }
  }
  rcclx_dda_finish_call(c, &k);
}

/* ---- host launchers --------------------------------------------------------- */

template <typename T, int KIND, int FMT>
RCCLX_HOST rcclx_status rcclx_lowp_launch_(const rcclx_comm* comm, const void* send, void* recv, size_t m,
                                           size_t in_stride, size_t out_stride, rcclx_wire w, uint32_t sig,
                                           hipStream_t stream) {
  const rcclx_dev_comm& v = comm->view;
  if (v.nthreads > RCCLX_LOWP_MAX_THREADS) return RCCLX_ERR_INVALID_ARGUMENT;
  /* The communicator's grid was sized for co-residency from the DDA
   * kernels; refuse to launch one that could not be co-resident.  (The
   * first query also loads the kernel before its first launch:
   * rcclx/comm.h; later calls read the memo.) */
  static rcclx_occupancy_memo memo;
  RCCLX_TRY(rcclx_comm_check_coresident_memo(comm, (const void*)rcclx_lowp_kernel<T, KIND, FMT>, v.nthreads,
                                             v.nblocks, &memo));
  rcclx_lowp_kernel<T, KIND, FMT><<<v.nblocks, v.nthreads, 0, stream>>>(v, (const T*)send, (T*)recv, m, in_stride,
                                                                          out_stride, w, sig);
  return hipGetLastError() == hipSuccess ? RCCLX_SUCCESS : RCCLX_ERR_RUNTIME;
}
/* A call's shape, passed down the dispatch. */
typedef struct rcclx_lowp_call_ {
  const rcclx_comm* comm;
  const void* send;
  void* recv;
  size_t m, in_stride, out_stride;
  rcclx_wire w;
  uint32_t sig;
  hipStream_t stream;
} rcclx_lowp_call_;
template <typename T, int KIND>
RCCLX_HOST rcclx_status rcclx_lowp_launch_f_(const rcclx_lowp_call_& a) {
#define RCCLX_LOWP_LAUNCH_(F) \
  rcclx_lowp_launch_<T, KIND, F>(a.comm, a.send, a.recv, a.m, a.in_stride, a.out_stride, a.w, a.sig, a.stream)
  switch (a.w.format) {
    case RCCLX_FP8_E4M3FN: return RCCLX_LOWP_LAUNCH_(RCCLX_FP8_E4M3FN);
    case RCCLX_FP8_E4M3FNUZ: return RCCLX_LOWP_LAUNCH_(RCCLX_FP8_E4M3FNUZ);
    case RCCLX_FP8_E5M2: return RCCLX_LOWP_LAUNCH_(RCCLX_FP8_E5M2);
    case RCCLX_FP8_E5M2FNUZ: return RCCLX_LOWP_LAUNCH_(RCCLX_FP8_E5M2FNUZ);
    default: return RCCLX_LOWP_LAUNCH_(RCCLX_WIRE_RAW);
  }
#undef RCCLX_LOWP_LAUNCH_
}
template <int KIND>
RCCLX_HOST rcclx_status rcclx_lowp_launch_t_(rcclx_dtype dt, const rcclx_lowp_call_& a) {
  if (dt == RCCLX_FLOAT32) return rcclx_lowp_launch_f_<float, KIND>(a);
  if (dt == RCCLX_FLOAT16) return rcclx_lowp_launch_f_<rcclx_f16, KIND>(a);
  return rcclx_lowp_launch_f_<rcclx_bf16, KIND>(a);
}
RCCLX_HOST rcclx_status rcclx_lowp_launch_k_(rcclx_lowp_kind k, rcclx_dtype dt, const rcclx_lowp_call_& a) {
  switch (k) {
    case RCCLX_LOWP_ALLREDUCE_FLAT: return rcclx_lowp_launch_t_<RCCLX_LOWP_ALLREDUCE_FLAT>(dt, a);
    case RCCLX_LOWP_ALLREDUCE_TREE: return rcclx_lowp_launch_t_<RCCLX_LOWP_ALLREDUCE_TREE>(dt, a);
    case RCCLX_LOWP_REDUCE_SCATTER: return rcclx_lowp_launch_t_<RCCLX_LOWP_REDUCE_SCATTER>(dt, a);
    case RCCLX_LOWP_ALLGATHER: return rcclx_lowp_launch_t_<RCCLX_LOWP_ALLGATHER>(dt, a);
    default: return rcclx_lowp_launch_t_<RCCLX_LOWP_ALLTOALL>(dt, a);
  }
}

/* One low-precision (or, with RCCLX_WIRE_RAW, full-precision) collective,
 * stream-ordered and graph-capturable, every rank calling it with the same
 * arguments (disagreement is caught in-kernel: RCCLX_ERR_RANK_MISMATCH from
 * rcclx_comm_check).  `count` per rcclx_lowp_check; op is always sum.
 * Messages larger than the registered region run in chunks of whole
 * quantization groups.  count == 0 launches nothing.  Needs a communicator
 * of at most RCCLX_LOWP_MAX_THREADS threads per block (the default 512). */
RCCLX_HOST rcclx_status rcclx_lowp_collective(rcclx_comm* comm, rcclx_lowp_kind kind, const void* send, void* recv,
                                              size_t count, rcclx_dtype dtype, rcclx_wire w, hipStream_t stream) {
  if (!comm || !comm->kind) return RCCLX_ERR_NULL_POINTER;
  if (count == 0) return RCCLX_SUCCESS;
  RCCLX_TRY(rcclx_lowp_check(&comm->view, kind, send, recv, count, dtype, &w));
  const size_t es = rcclx_dtype_size(dtype);
  const size_t chunk = rcclx_lowp_chunk_elems(comm->view.region_bytes, rcclx_lowp_input_segments(kind, comm->view.nranks),
                                              w, es);
  int prev = 0;
  RCCLX_TRY(rcclx_set_device_(comm->device, &prev));
  rcclx_status st = RCCLX_SUCCESS;
  for (size_t done = 0; done < count && st == RCCLX_SUCCESS; done += chunk) {
    const size_t m = count - done < chunk ? count - done : chunk;
    const uint32_t sig = rcclx_chunk_signature(rcclx_lowp_signature(kind, m, dtype, w), count);
    const rcclx_lowp_call_ a = {comm, (const char*)send + done * es, (char*)recv + done * es, m, count, count, w, sig,
                                stream};
    st = rcclx_lowp_launch_k_(kind, dtype, a);
  }
  if (prev != comm->device) (void)hipSetDevice(prev);
  return st;
}

/* The named forms.  AllReduce: recv[i] = sum over ranks of send[i] (count
 * elements).  ReduceScatter: send holds nranks * count, rank r receives the
 * sum of every rank's segment r (count).  AllGather: send holds count,
 * recv nranks * count (segment r from rank r).  AllToAll: send holds
 * nranks * count (segment s goes to rank s), recv nranks * count (segment s
 * came from rank s). */
RCCLX_HOST rcclx_status rcclx_lowp_allreduce(rcclx_comm* comm, const void* send, void* recv, size_t count,
                                             rcclx_dtype dtype, rcclx_algo algo, rcclx_wire w, hipStream_t stream) {
  if (algo != RCCLX_ALGO_AUTO && algo != RCCLX_ALGO_FLAT && algo != RCCLX_ALGO_TREE) return RCCLX_ERR_INVALID_ARGUMENT;
  const size_t bytes = count * rcclx_dtype_size(dtype);
  const rcclx_algo a = rcclx_allreduce_choose(algo, bytes, comm ? comm->lowp_flat_max_bytes : 0);
  return rcclx_lowp_collective(comm, a == RCCLX_ALGO_FLAT ? RCCLX_LOWP_ALLREDUCE_FLAT : RCCLX_LOWP_ALLREDUCE_TREE,
                               send, recv, count, dtype, w, stream);
}
/* The wire comm's low-precision switches (read at its creation) give
 * collective c for count elements of dtype per rank segment (full
 * precision for a NULL comm, which the collective then refuses). */
RCCLX_HOST rcclx_wire rcclx_comm_lowp_wire(const rcclx_comm* comm, rcclx_collective c, size_t count,
                                           rcclx_dtype dtype) {
  return comm ? rcclx_lowp_switches_wire(&comm->lowp, c, count * rcclx_dtype_size(dtype)) : rcclx_wire_raw();
}
RCCLX_HOST rcclx_status rcclx_reduce_scatter(rcclx_comm* comm, const void* send, void* recv, size_t count,
                                             rcclx_dtype dtype, hipStream_t stream) {
  const rcclx_wire w = rcclx_comm_lowp_wire(comm, RCCLX_COLL_REDUCE_SCATTER, count, dtype);
  return rcclx_lowp_collective(comm, RCCLX_LOWP_REDUCE_SCATTER, send, recv, count, dtype, w, stream);
}
RCCLX_HOST rcclx_status rcclx_allgather(rcclx_comm* comm, const void* send, void* recv, size_t count,
                                        rcclx_dtype dtype, hipStream_t stream) {
  const rcclx_wire w = rcclx_comm_lowp_wire(comm, RCCLX_COLL_ALLGATHER, count, dtype);
  return rcclx_lowp_collective(comm, RCCLX_LOWP_ALLGATHER, send, recv, count, dtype, w, stream);
}
RCCLX_HOST rcclx_status rcclx_alltoall(rcclx_comm* comm, const void* send, void* recv, size_t count,
                                       rcclx_dtype dtype, hipStream_t stream) {
  const rcclx_wire w = rcclx_comm_lowp_wire(comm, RCCLX_COLL_ALLTOALL, count, dtype);
  return rcclx_lowp_collective(comm, RCCLX_LOWP_ALLTOALL, send, recv, count, dtype, w, stream);
}

#endif /* RCCLX_GPU_LANG */
