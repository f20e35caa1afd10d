/* rcclx_torch bridge: a C ABI over the rcclx host API, loaded by the Python
 * module (python/rcclx_torch/__init__.py) with ctypes.  Built either by
 * torch.utils.cpp_extension.load (the module's default: nvcc on CUDA
 * PyTorch; a ROCm PyTorch hipifies and builds the same source with hipcc)
 * or by this project's CMake (target rcclx_torch_bridge), whose library the
 * module takes from RCCLX_TORCH_LIB.
 *
 * Every function returns an rcclx_status (0 = success) unless it says
 * otherwise; none throws.  Streams are the caller's (PyTorch's current
 * stream); nothing here synchronises except init and check.
 * Handles are heap-allocated rcclx_comm objects. */
#include <rcclx/rcclx.h>
#include <stdlib.h>
#include <time.h>

#define RCCLX_TORCH_ABI 2

/* Kinds of rcclx_torch_collective (the Python module mirrors them). */
enum { RCCLX_TORCH_REDUCE_SCATTER = 0, RCCLX_TORCH_ALLGATHER = 1, RCCLX_TORCH_ALLTOALL = 2 };
/* Precision switch of a call (the Python module mirrors them). */
enum { RCCLX_TORCH_PRECISION_ENV = -1, RCCLX_TORCH_PRECISION_FULL = 0, RCCLX_TORCH_PRECISION_LOW = 1 };

static rcclx_config rcclx_torch_config_(size_t region_bytes, uint64_t watchdog_ms) {
  rcclx_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.region_bytes = region_bytes; /* 0: default / RCCLX_BUFFER_BYTES */
  cfg.watchdog_ns = watchdog_ms * 1000000ull;
  return cfg;
}

extern "C" {

int rcclx_torch_abi(void) { return RCCLX_TORCH_ABI; }

const char* rcclx_torch_status_string(int s) { return rcclx_status_string((rcclx_status)s); }

/* One process per rank.  `allgather` is called twice (from this thread)
 * and must return 0 on success; *out receives the handle. */
int rcclx_torch_init_ipc(int rank, int nranks, int device, size_t region_bytes, uint64_t watchdog_ms,
                         rcclx_allgather_fn allgather, void* ctx, void** out) {
  if (!out) return RCCLX_ERR_NULL_POINTER;
  *out = NULL;
  rcclx_comm* c = (rcclx_comm*)calloc(1, sizeof(rcclx_comm));
  if (!c) return RCCLX_ERR_OUT_OF_MEMORY;
  const rcclx_config cfg = rcclx_torch_config_(region_bytes, watchdog_ms);
  const rcclx_status st = rcclx_comm_init_ipc(rank, nranks, device, &cfg, allgather, ctx, c);
  if (st != RCCLX_SUCCESS) {
    free(c);
    return st;
  }
  *out = c;
  return RCCLX_SUCCESS;
}

/* One process drives nranks ranks (virtual ranks on one GPU, or one GPU
 * each); out[r] receives rank r's handle. */
int rcclx_torch_init_local(int nranks, const int* devices, size_t region_bytes, uint64_t watchdog_ms, void** out) {
  if (!out || !devices) return RCCLX_ERR_NULL_POINTER;
  if (nranks < 2 || nranks > RCCLX_MAX_RANKS) return RCCLX_ERR_INVALID_NRANKS;
  rcclx_comm* c = (rcclx_comm*)calloc((size_t)nranks, sizeof(rcclx_comm));
  if (!c) return RCCLX_ERR_OUT_OF_MEMORY;
  const rcclx_config cfg = rcclx_torch_config_(region_bytes, watchdog_ms);
  const rcclx_status st = rcclx_comms_init_local(nranks, devices, &cfg, c);
  if (st != RCCLX_SUCCESS) {
    free(c);
    return st;
  }
  /* One allocation: handle r is &c[r]; rcclx_torch_destroy_local frees it. */
  for (int r = 0; r < nranks; ++r) out[r] = &c[r];
  return RCCLX_SUCCESS;
}

void rcclx_torch_destroy(void* h) {
  if (!h) return;
  rcclx_comm_destroy((rcclx_comm*)h);
  free(h);
}

/* Destroys every rank of one rcclx_torch_init_local call (handles[0] is the
 * allocation). */
void rcclx_torch_destroy_local(int nranks, void** handles) {
  if (!handles || !handles[0]) return;
  for (int r = 0; r < nranks; ++r) rcclx_comm_destroy((rcclx_comm*)handles[r]);
  free(handles[0]);
}

/* Shape of a built communicator: rank, nranks, device, region bytes. */
int rcclx_torch_info(void* h, int* rank, int* nranks, int* device, size_t* region_bytes) {
  const rcclx_comm* c = (const rcclx_comm*)h;
  if (!c || !c->kind || !rank || !nranks || !device || !region_bytes) return RCCLX_ERR_NULL_POINTER;
  *rank = c->view.rank;
  *nranks = c->view.nranks;
  *device = c->device;
  *region_bytes = c->view.region_bytes;
  return RCCLX_SUCCESS;
}

/* The registered input region (rcclx_comm_input), or NULL. */
void* rcclx_torch_input(void* h) { return rcclx_comm_input((const rcclx_comm*)h); }

/* Whether [p, p + bytes) overlaps this rank's registered buffer (every
 * region and the LL area), which rcclx_allreduce rejects as an output. */
int rcclx_torch_overlaps_registered(void* h, const void* p, size_t bytes) {
  const rcclx_comm* c = (const rcclx_comm*)h;
  return c && c->kind && rcclx_overlaps_registered(&c->view, p, bytes);
}

/* AllReduce.  precision ENV: rcclx_allreduce as is (RCCL_LOW_PRECISION_ENABLE
 * and the other switches of rcclx/fp8/lowp_plan.h, as the environment held
 * them when the communicator was created, decide); FULL: never FP8; LOW:
 * FP8 wire (format and block from the same switches).  algo: rcclx_algo
 * (auto / flat / tree / ll). */
int rcclx_torch_allreduce(void* h, const void* send, void* recv, size_t count, int dtype, int op, int algo,
                          int precision, void* stream) {
  rcclx_comm* c = (rcclx_comm*)h;
  if (!c || !c->kind) return RCCLX_ERR_NULL_POINTER;
  if (algo != RCCLX_ALGO_AUTO && algo != RCCLX_ALGO_FLAT && algo != RCCLX_ALGO_TREE && algo != RCCLX_ALGO_LL)
    return RCCLX_ERR_INVALID_ARGUMENT;
  const hipStream_t s = (hipStream_t)stream;
  if (precision == RCCLX_TORCH_PRECISION_LOW) {
    if (op != RCCLX_SUM) return RCCLX_ERR_UNSUPPORTED_OP;
    if (algo == RCCLX_ALGO_LL) return RCCLX_ERR_INVALID_ARGUMENT;
    return rcclx_lowp_allreduce(c, send, recv, count, (rcclx_dtype)dtype, (rcclx_algo)algo,
                                rcclx_lowp_switches_fp8(&c->lowp), s);
  }
  rcclx_algo a = (rcclx_algo)algo;
  int src = 0;
  if (precision == RCCLX_TORCH_PRECISION_FULL && a == RCCLX_ALGO_AUTO) /* pin full precision, keep the size rule */
    a = rcclx_dda_resolve(c, send, count * rcclx_dtype_size((rcclx_dtype)dtype), RCCLX_ALGO_AUTO, &src);
  return rcclx_allreduce(c, send, recv, count, (rcclx_dtype)dtype, (rcclx_op)op, a, s);
}

/* ReduceScatter (sum), AllGather, AllToAll; `count` per rank segment, as
 * rcclx/fp8/collectives.h.  precision as rcclx_torch_allreduce. */
int rcclx_torch_collective(void* h, int kind, const void* send, void* recv, size_t count, int dtype, int precision,
                           void* stream) {
  rcclx_comm* c = (rcclx_comm*)h;
  if (!c || !c->kind) return RCCLX_ERR_NULL_POINTER;
  static const rcclx_lowp_kind kinds[3] = {RCCLX_LOWP_REDUCE_SCATTER, RCCLX_LOWP_ALLGATHER, RCCLX_LOWP_ALLTOALL};
  static const rcclx_collective colls[3] = {RCCLX_COLL_REDUCE_SCATTER, RCCLX_COLL_ALLGATHER, RCCLX_COLL_ALLTOALL};
  if (kind < 0 || kind > 2) return RCCLX_ERR_INVALID_ARGUMENT;
  const rcclx_wire w = precision == RCCLX_TORCH_PRECISION_LOW ? rcclx_lowp_switches_fp8(&c->lowp)
                       : precision == RCCLX_TORCH_PRECISION_ENV
                           ? rcclx_comm_lowp_wire(c, colls[kind], count, (rcclx_dtype)dtype)
                           : rcclx_wire_raw();
  return rcclx_lowp_collective(c, kinds[kind], send, recv, count, (rcclx_dtype)dtype, w, (hipStream_t)stream);
}

/* After the caller synchronised the rank's stream: the first error a kernel
 * recorded (0 if none), cleared; detail[4] = rank, slot, peer, epoch. */
int rcclx_torch_check(void* h, int* detail) {
  rcclx_error_record e;
  memset(&e, 0, sizeof e);
  const rcclx_status st = rcclx_comm_check((rcclx_comm*)h, &e);
  if (detail) {
    detail[0] = e.rank;
    detail[1] = e.block;
    detail[2] = e.peer;
    detail[3] = (int)e.epoch;
  }
  return st;
}

/* The C launcher's own eager cost, for the bridge-overhead benchmark: for
 * `iters` rounds every rank of a local group issues one in-place sum
 * AllReduce of `count` elements of `dtype` on its stream.  *issue_us: host
 * microseconds per round to issue the calls; *total_us: per round until
 * every stream finished (host clock, streams synchronised before). */
int rcclx_torch_time_local_c(int nranks, void** handles, void** bufs, void** streams, size_t count, int dtype, int iters,
                             double* issue_us, double* total_us) {
  if (!handles || !bufs || !streams || !issue_us || !total_us || iters < 1) return RCCLX_ERR_NULL_POINTER;
  for (int r = 0; r < nranks; ++r)
    if (hipStreamSynchronize((hipStream_t)streams[r]) != hipSuccess) return RCCLX_ERR_RUNTIME;
  struct timespec t0, t1, t2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < iters; ++i)
    for (int r = 0; r < nranks; ++r)
      RCCLX_TRY(rcclx_allreduce((rcclx_comm*)handles[r], bufs[r], bufs[r], count, (rcclx_dtype)dtype, RCCLX_SUM,
                                RCCLX_ALGO_AUTO, (hipStream_t)streams[r]));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  for (int r = 0; r < nranks; ++r)
    if (hipStreamSynchronize((hipStream_t)streams[r]) != hipSuccess) return RCCLX_ERR_RUNTIME;
  clock_gettime(CLOCK_MONOTONIC, &t2);
  *issue_us = ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) * 1e-3) / iters;
  *total_us = ((t2.tv_sec - t0.tv_sec) * 1e6 + (t2.tv_nsec - t0.tv_nsec) * 1e-3) / iters;
  return RCCLX_SUCCESS;
}

} /* extern "C" */
