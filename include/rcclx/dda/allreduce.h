/* rcclx/dda/allreduce.h - the host AllReduce launcher.
 *
 *   rcclx_allreduce(comm, send, recv, count, dtype, op, algo, stream)
 *
 * Every rank calls it with the same count, dtype, op and algo (ranks that
 * disagree are caught in-kernel and reported by rcclx_comm_check as
 * RCCLX_ERR_RANK_MISMATCH, also when AUTO resolves their counts to
 * different kernels; where one of those was the LL one-shot, rebuild
 * the communicators afterwards: rcclx/dda/ll.h).  It is
 * stream-ordered and graph-capturable: no host state changes between
 * calls, nothing needs a reset.
 *   - send == recv is in place; otherwise they must not overlap.
 *   - send == rcclx_comm_input(comm): zero-copy, the message must fit in the
 *     region (the path a fused GEMM epilogue uses).
 *   - Any other send, on a view with RCCLX_VIEW_DIRECT (one process; by
 *     default when every rank is on one GPU) and at least
 *     comm->direct_min_bytes, with AUTO or TREE: the two-shot reads send
 *     and the reduced shards in recv where the user keeps them
 *     (rcclx_dda_resolve); no copy, any count.  Different ranks' send and
 *     recv buffers must then not overlap.
 *   - Otherwise send is copied in by the kernel itself, in chunks of the
 *     region size for any count.
 *   - count == 0 returns RCCLX_SUCCESS and launches nothing.
 *   - algo AUTO picks LL (rcclx/dda/ll.h) up to
 *     comm->ll_max_bytes, flat up to comm->flat_max_bytes, tree above
 *     (and from comm->direct_min_bytes on a direct view);
 *     their results are bitwise identical, so the choice never changes
 *     numbers.  An explicit LL runs larger messages in chunks of
 *     RCCLX_LL_MAX_BYTES.
 *   - Low precision (FP8 on the wire, rcclx/fp8/collectives.h): algo
 *     LOWP_FLAT / LOWP_TREE, or AUTO with RCCL_LOW_PRECISION_ENABLE=1 (see
 *     rcclx/fp8/lowp_plan.h for the switches, threshold and wire; read
 *     when the communicator was created, comm->lowp) and op sum.  An
 *     explicit FLAT or TREE always keeps full precision.
 *   - Result: fp32 reduction in rank order 0..nranks-1, rounded once to
 *     dtype, bitwise identical on every rank and independent of the grid.
 */
#pragma once

#include <rcclx/comm_setup.h>
#include <rcclx/dda/kernels.h>
#include <rcclx/dda/plan.h>
#include <rcclx/fp8/collectives.h>

#if defined(RCCLX_GPU_LANG)

/* One DDA kernel launch on the communicator's fixed grid (LL: as many of
 * its blocks as the message needs, rcclx_ll_blocks, of rcclx_ll_threads
 * threads, built for the view's mode, rcclx_ll_mode_of); pdl: see
 * rcclx_config.pdl.  Returns the launch's error. */
template <typename T, int OP, int NMAX>
RCCLX_HOST hipError_t rcclx_dda_launch_(const rcclx_dev_comm& v, rcclx_algo algo, const void* send, void* recv,
                                        size_t n, uint32_t sig, int src, int pdl, hipStream_t s) {
  const dim3 g((unsigned)v.nblocks), b((unsigned)v.nthreads);
  if (algo == RCCLX_ALGO_LL) {
    /* sized by the message; the block by its lines and one header warp */
    const int lg = rcclx_ll_blocks(n * sizeof(T), v.nblocks, v.nthreads);
    const dim3 gl((unsigned)lg), bl((unsigned)rcclx_ll_threads(n * sizeof(T), lg, v.nthreads, RCCLX_WARP_SIZE));
    const auto ll = rcclx_ll_mode_of(v.flags) == RCCLX_LL_LOCAL ? rcclx_dda_ll_kernel<T, OP, NMAX, RCCLX_LL_LOCAL>
                                                                 : rcclx_dda_ll_kernel<T, OP, NMAX, RCCLX_LL_ANY>;
    return rcclx_launch(ll, gl, bl, s, pdl, v, (const T*)send, (T*)recv, n, sig);
  }
  if (algo == RCCLX_ALGO_FLAT)
    return rcclx_launch(rcclx_dda_flat_kernel<T, OP, NMAX>, g, b, s, pdl, v, (const T*)send, (T*)recv, n, sig, src);
  return rcclx_launch(rcclx_dda_tree_kernel<T, OP, NMAX>, g, b, s, pdl, v, (const T*)send, (T*)recv, n, sig, src);
}
template <typename T, int OP>
RCCLX_HOST hipError_t rcclx_dda_launch_n_(const rcclx_dev_comm& v, rcclx_algo a, const void* sd, void* rv, size_t n,
                                          uint32_t sig, int src, int pdl, hipStream_t s) {
  /* Two bounds: an NMAX = 2 instance is not built (fewer instances to
   * compile and load; when it was, its bf16 tree kernel spilled under the
   * 64 registers of 1024-thread launch bounds); 2 ranks run the NMAX = 4
   * kernels, which skip the absent ranks' loads. */
  if (v.nranks <= 4) return rcclx_dda_launch_<T, OP, 4>(v, a, sd, rv, n, sig, src, pdl, s);
  return rcclx_dda_launch_<T, OP, 8>(v, a, sd, rv, n, sig, src, pdl, s);
}
template <typename T>
RCCLX_HOST hipError_t rcclx_dda_launch_op_(const rcclx_dev_comm& v, rcclx_op op, rcclx_algo a, const void* sd,
                                           void* rv, size_t n, uint32_t sig, int src, int pdl, hipStream_t s) {
  if (op == RCCLX_SUM) return rcclx_dda_launch_n_<T, RCCLX_SUM>(v, a, sd, rv, n, sig, src, pdl, s);
  if (op == RCCLX_MAX) return rcclx_dda_launch_n_<T, RCCLX_MAX>(v, a, sd, rv, n, sig, src, pdl, s);
  return rcclx_dda_launch_n_<T, RCCLX_MIN>(v, a, sd, rv, n, sig, src, pdl, s);
}

RCCLX_HOST rcclx_status rcclx_allreduce(rcclx_comm* comm, const void* send, void* recv, size_t count, rcclx_dtype dtype,
                                        rcclx_op op, rcclx_algo algo, hipStream_t stream) {
  if (!comm || !comm->kind) return RCCLX_ERR_NULL_POINTER;
  if (count == 0) return RCCLX_SUCCESS;
  RCCLX_TRY(rcclx_allreduce_check(&comm->view, send, recv, count, dtype, op, algo));
  const size_t es = rcclx_dtype_size(dtype);
  if (algo == RCCLX_ALGO_LOWP_FLAT || algo == RCCLX_ALGO_LOWP_TREE ||
      (algo == RCCLX_ALGO_AUTO && op == RCCLX_SUM &&
       rcclx_lowp_switches_on(&comm->lowp, RCCLX_COLL_ALLREDUCE, count * es)))
    return rcclx_lowp_allreduce(comm, send, recv, count, dtype,
                                algo == RCCLX_ALGO_LOWP_FLAT ? RCCLX_ALGO_FLAT
                                : algo == RCCLX_ALGO_LOWP_TREE ? RCCLX_ALGO_TREE : RCCLX_ALGO_AUTO,
                                rcclx_lowp_switches_fp8(&comm->lowp), stream);
  int src = RCCLX_SRC_STAGED;
  const rcclx_algo a = rcclx_dda_resolve(comm, send, count * es, algo, &src);
  const size_t chunk = a == RCCLX_ALGO_LL            ? RCCLX_LL_MAX_BYTES / es
                       : src == RCCLX_SRC_STAGED ? rcclx_allreduce_chunk_elems(comm->view.region_bytes, dtype)
                                                          : rcclx_dda_max_launch_elems(dtype);
  int prev = 0;
  RCCLX_TRY(rcclx_set_device_(comm->device, &prev));
  rcclx_status st = RCCLX_SUCCESS;
  for (size_t done = 0; done < count && st == RCCLX_SUCCESS; done += chunk) {
    const size_t n = count - done < chunk ? count - done : chunk;
    const uint32_t sig = rcclx_chunk_signature(rcclx_call_signature(n, dtype, op, a, src), count);
    const char* sd = (const char*)send + done * es;
    char* rv = (char*)recv + done * es;
    const int pdl = comm->pdl;
    hipError_t e;
    if (dtype == RCCLX_FLOAT32) e = rcclx_dda_launch_op_<float>(comm->view, op, a, sd, rv, n, sig, src, pdl, stream);
    else if (dtype == RCCLX_FLOAT16)
      e = rcclx_dda_launch_op_<rcclx_f16>(comm->view, op, a, sd, rv, n, sig, src, pdl, stream);
    else e = rcclx_dda_launch_op_<rcclx_bf16>(comm->view, op, a, sd, rv, n, sig, src, pdl, stream);
    if (e != hipSuccess) {
      (void)hipGetLastError(); /* consumed: the status reports it */
      st = RCCLX_ERR_RUNTIME;
    }
  }
  if (prev != comm->device) (void)hipSetDevice(prev);
  return st;
}

#endif /* RCCLX_GPU_LANG */
