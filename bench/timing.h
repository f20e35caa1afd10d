// Shared by the benchmarks: checked runtime calls and graph-replay timing.
#pragma once
#include <rcclx/rcclx.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
#include "../tests/gpu/ranks.h"

#define CK(x) do { hipError_t e_ = (x); if (e_ != hipSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_)); exit(1); } } while (0)
#define RK(x) do { rcclx_status s_ = (x); if (s_ != RCCLX_SUCCESS) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, rcclx_status_string(s_)); exit(1); } } while (0)

// The median of v (0 when empty).
static inline double bench_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median microseconds per call of `body` (which issues one call on every
// rank): one graph of K back-to-back calls (fork/join over the rank
// streams, once around all K, or around each call with join_each), 3
// warm-up replays, median over R timed replays.
static inline double time_graph(rank_set& rs, const std::function<void(int)>& body, int K = 20, int R = 15,
                                bool join_each = false) {
  hipGraphExec_t ge;
  CK(rs.capture(K, body, &ge, join_each));
  hipEvent_t t0, t1;
  CK(hipEventCreate(&t0));
  CK(hipEventCreate(&t1));
  for (int w = 0; w < 3; ++w) CK(hipGraphLaunch(ge, rs.stream[0]));
  std::vector<double> us;
  for (int i = 0; i < R; ++i) {
    CK(hipEventRecord(t0, rs.stream[0]));
    CK(hipGraphLaunch(ge, rs.stream[0]));
    CK(hipEventRecord(t1, rs.stream[0]));
    CK(hipEventSynchronize(t1));
    float ms = 0;
    CK(hipEventElapsedTime(&ms, t0, t1));
    us.push_back(ms * 1000.0 / K);
  }
  CK(hipGetLastError());
  CK(hipGraphExecDestroy(ge));
  CK(hipEventDestroy(t0));
  CK(hipEventDestroy(t1));
  return bench_median(us);
}

// Finite, non-zero 16-bit patterns (valid bf16/fp16 values, fp32 halves).
static __global__ void bench_fill_kernel(uint16_t* p, size_t n, int r) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = (uint16_t)(0x3c00 + ((i * 31 + r * 7) & 0xff));
}

// A benchmark's start: exits with 2 and a plain message when no GPU is
// visible; opens the CSV named by argv[1] (default `name`.csv) and writes
// its header line.  Returns NULL if the file cannot be opened.
static inline FILE* bench_start(int argc, char** argv, const char* name, const char* header) {
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess || ndev < 1) {
    fprintf(stderr, "%s: no GPU found; this benchmark needs one (run bench/device-run.sh on a GPU machine)\n", name);
    exit(2);
  }
  char path[256];
  snprintf(path, sizeof path, "%s.csv", name);
  FILE* csv = fopen(argc > 1 ? argv[1] : path, "w");
  if (csv) fprintf(csv, "%s\n", header);
  return csv;
}
