// The collective library the benchmarks compare against where every rank
// has a GPU of its own: NCCL (PyTorch's bundled libnccl) or RCCL, loaded at
// run time (dlopen), so that rcclx builds without either.  The library is
// RCCLX_NCCL_LIB when set (bench/device-run.sh points it at PyTorch's),
// else libnccl.so.2, else librccl.so.1.  Only NCCL's stable C ABI is used:
// ncclGetVersion, ncclCommInitAll, ncclCommDestroy, ncclAllReduce,
// ncclGroupStart / ncclGroupEnd, ncclGetErrorString, and the enum values
// below (nccl.h; RCCL keeps them).  `bench_dda --nccl-selftest` checks the
// loading, a captured call and its result with one rank on one GPU (NCCL
// refuses two ranks on one GPU, so virtual ranks get no baseline);
// device-run.sh checks the values against the nccl.h shipped beside the
// library when there is one.
#pragma once
#include <dlfcn.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "timing.h"

// ncclDataType_t and ncclRedOp_t values (nccl.h).
#define BENCH_NCCL_FLOAT32 7
#define BENCH_NCCL_BFLOAT16 9
#define BENCH_NCCL_SUM 0

typedef struct bench_nccl {
  void* lib;
  char name[256]; // the library loaded
  int version;    // ncclGetVersion: major * 10000 + minor * 100 + patch
  int n;          // ranks of the communicators below (0: none)
  void* comm[RCCLX_MAX_RANKS];
  int (*get_version)(int*);
  int (*comm_init_all)(void**, int, const int*);
  int (*comm_destroy)(void*);
  int (*all_reduce)(const void*, void*, size_t, int, int, void*, hipStream_t);
  int (*group_start)(void);
  int (*group_end)(void);
  const char* (*error_string)(int);
} bench_nccl;

static inline int bench_nccl_dtype(rcclx_dtype dt) { return dt == RCCLX_FLOAT32 ? BENCH_NCCL_FLOAT32 : BENCH_NCCL_BFLOAT16; }

// Loads the library and its entry points.  0 on success; else -1 and the
// reason in why.
static inline int bench_nccl_load(bench_nccl* b, char* why, size_t wl) {
  memset(b, 0, sizeof *b);
  const char* env = getenv("RCCLX_NCCL_LIB");
  const char* names[] = {env && *env ? env : "libnccl.so.2", env && *env ? nullptr : "librccl.so.1"};
  for (const char* name : names) {
    if (!name || b->lib) continue;
    b->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (b->lib) snprintf(b->name, sizeof b->name, "%s", name);
  }
  if (!b->lib) {
    const char* e = dlerror();
    snprintf(why, wl, "no NCCL or RCCL library (RCCLX_NCCL_LIB names one): %s", e ? e : "not found");
    return -1;
  }
  struct { void** fn; const char* sym; } syms[] = {
      {(void**)&b->get_version, "ncclGetVersion"},  {(void**)&b->comm_init_all, "ncclCommInitAll"},
      {(void**)&b->comm_destroy, "ncclCommDestroy"}, {(void**)&b->all_reduce, "ncclAllReduce"},
      {(void**)&b->group_start, "ncclGroupStart"},   {(void**)&b->group_end, "ncclGroupEnd"},
      {(void**)&b->error_string, "ncclGetErrorString"}};
  for (auto& s : syms)
    if (!(*s.fn = dlsym(b->lib, s.sym))) {
      snprintf(why, wl, "%s has no %s", b->name, s.sym);
      dlclose(b->lib);
      b->lib = nullptr;
      return -1;
    }
  if (b->get_version(&b->version) != 0) b->version = -1;
  return 0;
}

// One communicator per rank, rank r on devs[r], all in this process.  0 on
// success; else -1 and the reason in why (also when two ranks share a GPU,
// which NCCL refuses).
static inline int bench_nccl_init(bench_nccl* b, const int* devs, int n, char* why, size_t wl) {
  b->n = 0;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (devs[i] == devs[j]) {
        snprintf(why, wl, "ranks %d and %d share GPU %d (NCCL needs one GPU per rank)", i, j, devs[i]);
        return -1;
      }
  const int e = b->comm_init_all(b->comm, n, devs);
  if (e != 0) {
    snprintf(why, wl, "ncclCommInitAll(%d ranks): %s", n, b->error_string(e));
    return -1;
  }
  b->n = n;
  return 0;
}

// A benchmark's baseline: loads the library and prints which, or why none
// (b->lib stays NULL and every later step does nothing).
static inline void bench_nccl_open(bench_nccl* b) {
  char why[512];
  if (bench_nccl_load(b, why, sizeof why) == 0) printf("NCCL baseline: %s, version %d\n", b->name, b->version);
  else printf("NCCL baseline: not loaded: %s\n", why);
}
// Communicators for the ranks of rs when the library is loaded; prints why
// not when they cannot be made (b->n stays 0: no baseline at this rank
// count, bench_nccl_point does nothing).
static inline void bench_nccl_begin(bench_nccl* b, const rank_set& rs) {
  char why[512];
  if (b->lib && bench_nccl_init(b, rs.dev.data(), rs.n, why, sizeof why) != 0)
    printf("NCCL baseline, %d ranks: not run: %s\n", rs.n, why);
}

static inline void bench_nccl_fini(bench_nccl* b) {
  for (int r = 0; r < b->n; ++r) (void)b->comm_destroy(b->comm[r]);
  b->n = 0;
}

// Rank r's part of one AllReduce (sum) of all b->n ranks, issued by one
// host thread for every rank in turn (r = 0, 1, ...): rank 0 opens an NCCL
// group and rank n - 1 closes it, as one thread driving several GPUs must.
// Returns an ncclResult_t (0: success).
static inline int bench_nccl_allreduce_rank(bench_nccl* b, int r, const void* send, void* recv, size_t count,
                                            rcclx_dtype dt, hipStream_t s) {
  int e = r == 0 && b->n > 1 ? b->group_start() : 0;
  if (e == 0) e = b->all_reduce(send, recv, count, bench_nccl_dtype(dt), BENCH_NCCL_SUM, b->comm[r], s);
  if (r == b->n - 1 && b->n > 1) {
    const int g = b->group_end();
    if (e == 0) e = g;
  }
  return e;
}

// Median microseconds per call of the AllReduce on every rank of rs, timed
// as time_graph times rcclx (R replays of a graph of K calls; join_each:
// fork/join around every call).  A negative value, with the reason in why,
// when NCCL fails under capture (nothing exits: rcclx's own sweep goes
// on); a replay that fails after that exits, as time_graph's does.
static inline double bench_nccl_time(rank_set& rs, bench_nccl* b, const std::vector<void*>& in,
                                     const std::vector<void*>& out, size_t count, rcclx_dtype dt, int K, int R,
                                     bool join_each, char* why, size_t wl) {
  int nccl_err = 0;
  hipGraphExec_t ge = nullptr;
  const hipError_t e = rs.capture(K, [&](int r) {
    const int x = bench_nccl_allreduce_rank(b, r, in[r], out[r], count, dt, rs.stream[r]);
    if (x != 0 && nccl_err == 0) nccl_err = x;
  }, &ge, join_each);
  if (e != hipSuccess || nccl_err != 0) {
    snprintf(why, wl, "NCCL under graph capture: %s", nccl_err ? b->error_string(nccl_err) : hipGetErrorString(e));
    if (e == hipSuccess) (void)hipGraphExecDestroy(ge);
    (void)hipGetLastError();
    return -1.0;
  }
  return bench_time_exec(bench_warm(ge, rs.stream[0]), rs.stream[0], K, R);
}

// One uncaptured AllReduce on every rank of rs, then ranks 0 and n - 1's
// outputs against the float64 sum of the inputs bench_fill_kernel wrote
// (bench_fill_u16), first and last 4096 elements: relative 2^-4 for bf16
// (NCCL rounds partial sums to bf16 at every hop of its ring), 1e-5 for
// fp32.  It catches a wrong type, op or count.  0 if right; else -1 and
// the reason in why.
static inline int bench_nccl_check(rank_set& rs, bench_nccl* b, const std::vector<void*>& in,
                                   const std::vector<void*>& out, size_t count, rcclx_dtype dt, char* why, size_t wl) {
  for (int r = 0; r < rs.n; ++r) {
    const int x = bench_nccl_allreduce_rank(b, r, in[r], out[r], count, dt, rs.stream[r]);
    if (x != 0) {
      snprintf(why, wl, "ncclAllReduce: %s", b->error_string(x));
      return -1;
    }
  }
  if (rs.sync() != hipSuccess) {
    snprintf(why, wl, "NCCL call: %s", hipGetErrorString(hipGetLastError()));
    return -1;
  }
  const size_t es = rcclx_dtype_size(dt), m = count < 4096 ? count : 4096;
  const double tol = dt == RCCLX_FLOAT32 ? 1e-5 : 1.0 / 16;
  for (int r : {0, rs.n - 1})
    for (size_t start : {(size_t)0, count - m}) {
      std::vector<unsigned char> h(m * es);
      if (hipMemcpy(h.data(), (char*)out[r] + start * es, m * es, hipMemcpyDeviceToHost) != hipSuccess) {
        snprintf(why, wl, "NCCL result copy: %s", hipGetErrorString(hipGetLastError()));
        return -1;
      }
      for (size_t j = 0; j < m; ++j) {
        const size_t i = start + j;
        double want = 0, got;
        for (int q = 0; q < rs.n; ++q) want += bench_fill_value(dt, i, q);
        if (dt == RCCLX_FLOAT32) {
          float f;
          memcpy(&f, &h[j * 4], 4);
          got = f;
        } else {
          uint16_t u;
          memcpy(&u, &h[j * 2], 2);
          got = rcclx_bf16_to_f32(u);
        }
        if (!(std::fabs(got - want) <= tol * std::fabs(want))) {
          snprintf(why, wl, "NCCL result wrong: rank %d element %zu is %g, the float64 sum %g", r, i, got, want);
          return -1;
        }
      }
    }
  return 0;
}

// One baseline point: NCCL checked (bench_nccl_check), then timed
// (bench_nccl_time).  Returns microseconds per call; on a failure prints
// the reason, ends the communicators (b->n becomes 0: no baseline for the
// rest of this rank count) and returns a negative value.  Does nothing
// (returns a negative value) while b->n is 0.
static inline double bench_nccl_point(rank_set& rs, bench_nccl* b, const std::vector<void*>& in,
                                      const std::vector<void*>& out, size_t count, rcclx_dtype dt, int K, int R,
                                      bool join_each) {
  if (b->n == 0) return -1.0;
  char why[512];
  const double us = bench_nccl_check(rs, b, in, out, count, dt, why, sizeof why) == 0
                        ? bench_nccl_time(rs, b, in, out, count, dt, K, R, join_each, why, sizeof why)
                        : -1.0;
  if (us < 0) {
    printf("NCCL baseline, %d ranks: dropped: %s\n", rs.n, why);
    bench_nccl_fini(b);
  }
  return us;
}

// `bench_dda --nccl-selftest`: what one GPU can check of the baseline.
// One rank on GPU 0: the library loads, an AllReduce of bf16 (odd count)
// and of fp32 returns its input bit for bit (a sum over one rank), also
// from a captured graph replayed with new data; prints the library, its
// version and the replayed call's time beside an empty kernel's.  Returns
// 0 if everything holds, 1 if not, 3 if no library was found.
static __global__ void bench_nccl_empty_kernel() {}
static inline int bench_nccl_selftest(void) {
  char why[512];
  bench_nccl b;
  if (bench_nccl_load(&b, why, sizeof why) != 0) {
    printf("nccl-selftest: %s\n", why);
    return 3;
  }
  printf("nccl-selftest: %s, version %d\n", b.name, b.version);
  const int dev0 = 0;
  if (hipSetDevice(dev0) != hipSuccess || bench_nccl_init(&b, &dev0, 1, why, sizeof why) != 0) {
    printf("nccl-selftest: FAIL: %s\n", why);
    return 1;
  }
  hipStream_t s = nullptr;
  CK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
  int bad = 0;
  const struct { rcclx_dtype dt; size_t count; } cases[] = {{RCCLX_BFLOAT16, 4097}, {RCCLX_FLOAT32, (size_t)1 << 18}};
  for (const auto& c : cases) {
    const size_t bytes = c.count * rcclx_dtype_size(c.dt);
    std::vector<unsigned char> h(bytes), got(bytes);
    void *in = nullptr, *out = nullptr;
    CK(hipMalloc(&in, bytes));
    CK(hipMalloc(&out, bytes));
    uint32_t x = 12345u + (uint32_t)c.count;
    auto refill = [&] {  // fresh finite, non-zero values: random bits with a fixed exponent range
      for (size_t i = 0; i + 1 < bytes; i += 2) {
        x = x * 1664525u + 1013904223u;
        const uint16_t u = (uint16_t)(0x3c00 | (x >> 16 & 0x3ff) | (x & 0x8000));
        memcpy(&h[i], &u, 2);
      }
      CK(hipMemcpy(in, h.data(), bytes, hipMemcpyHostToDevice));
      CK(hipMemset(out, 0xFF, bytes));  // poison
      CK(hipDeviceSynchronize());
    };
    auto same = [&](const char* what) {
      CK(hipStreamSynchronize(s));
      CK(hipMemcpy(got.data(), out, bytes, hipMemcpyDeviceToHost));
      const bool ok = memcmp(got.data(), h.data(), bytes) == 0;
      printf("nccl-selftest: %s %zu elements, %s: %s\n", rcclx_dtype_name(c.dt), c.count, what,
             ok ? "bitwise its input" : "FAIL: differs from its input");
      bad += !ok;
    };
    refill();
    int e = bench_nccl_allreduce_rank(&b, 0, in, out, c.count, c.dt, s);
    if (e != 0) {
      printf("nccl-selftest: FAIL: ncclAllReduce: %s\n", b.error_string(e));
      return 1;
    }
    same("one call");
    const int K = 20;
    hipGraph_t g = nullptr;
    hipGraphExec_t ge = nullptr;
    CK(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed));
    for (int k = 0; k < K && e == 0; ++k) e = bench_nccl_allreduce_rank(&b, 0, in, out, c.count, c.dt, s);
    CK(hipStreamEndCapture(s, &g));
    if (e != 0) {
      printf("nccl-selftest: FAIL: ncclAllReduce under capture: %s\n", b.error_string(e));
      return 1;
    }
    CK(hipGraphInstantiateWithFlags(&ge, g, 0));
    CK(hipGraphDestroy(g));
    refill();
    CK(hipGraphLaunch(ge, s));
    same("graph replay, new data");
    hipGraph_t ge_empty_g = nullptr;
    hipGraphExec_t ge_empty = nullptr;
    CK(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed));
    for (int k = 0; k < K; ++k) bench_nccl_empty_kernel<<<1, 32, 0, s>>>();
    CK(hipStreamEndCapture(s, &ge_empty_g));
    CK(hipGraphInstantiateWithFlags(&ge_empty, ge_empty_g, 0));
    CK(hipGraphDestroy(ge_empty_g));
    const std::vector<double> us = bench_time_execs_in_turn({bench_warm(ge, s), bench_warm(ge_empty, s)}, {s, s}, K, 20);
    printf("nccl-selftest: %s %zu elements, graph replay: %.2f us per call, empty kernel %.2f\n", rcclx_dtype_name(c.dt),
           c.count, us[0], us[1]);
    CK(hipFree(in));
    CK(hipFree(out));
  }
  CK(hipStreamDestroy(s));
  bench_nccl_fini(&b);
  printf("nccl-selftest: %s\n", bad ? "FAIL" : "ok");
  return bad ? 1 : 0;
}
