// Shared by the benchmarks: checked runtime calls and graph-replay timing.
#pragma once
#include <rcclx/rcclx.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// Replays ge 3 times on stream st to warm up; returns ge.
static inline hipGraphExec_t bench_warm(hipGraphExec_t ge, hipStream_t st) {
  for (int w = 0; w < 3; ++w) CK(hipGraphLaunch(ge, st));
  return ge;
}

// One graph of K back-to-back calls of `body` (which issues one call on
// every rank): fork/join over the rank streams once around all K, or around
// each call with join_each; replayed 3 times to warm up.
static inline hipGraphExec_t bench_graph(rank_set& rs, const std::function<void(int)>& body, int K,
                                         bool join_each = false) {
  hipGraphExec_t ge;
  CK(rs.capture(K, body, &ge, join_each));
  return bench_warm(ge, rs.stream[0]);
}

// Microseconds per call of one replay of ge (K calls) on stream st, timed
// with events t0 and t1.
static inline double bench_replay_us(hipGraphExec_t ge, hipStream_t st, int K, hipEvent_t t0, hipEvent_t t1) {
  CK(hipEventRecord(t0, st));
  CK(hipGraphLaunch(ge, st));
  CK(hipEventRecord(t1, st));
  CK(hipEventSynchronize(t1));
  float ms = 0;
  CK(hipEventElapsedTime(&ms, t0, t1));
  return ms * 1000.0 / K;
}

// Median microseconds per call of each warmed-up graph ge[i] (K calls,
// replayed on stream st[i]), the graphs replayed in turn, R rounds of one
// replay each, so that drift over the run and the state a replay leaves
// behind hit them all alike; destroys the graphs.
static inline std::vector<double> bench_time_execs_in_turn(const std::vector<hipGraphExec_t>& ge,
                                                           const std::vector<hipStream_t>& st, int K, int R) {
  hipEvent_t t0, t1;
  CK(hipEventCreate(&t0));
  CK(hipEventCreate(&t1));
  std::vector<std::vector<double>> us(ge.size());
  for (int k = 0; k < R; ++k)
    for (size_t i = 0; i < ge.size(); ++i) us[i].push_back(bench_replay_us(ge[i], st[i], K, t0, t1));
  CK(hipGetLastError());
  std::vector<double> med;
  for (size_t i = 0; i < ge.size(); ++i) {
    CK(hipGraphExecDestroy(ge[i]));
    med.push_back(bench_median(us[i]));
  }
  CK(hipEventDestroy(t0));
  CK(hipEventDestroy(t1));
  return med;
}

// Median microseconds per call over R timed replays on stream st of the
// warmed-up graph ge of K calls; destroys ge.
static inline double bench_time_exec(hipGraphExec_t ge, hipStream_t st, int K, int R) {
  return bench_time_execs_in_turn({ge}, {st}, K, R)[0];
}

// Median microseconds per call of `body` over R timed replays of its
// warmed-up graph (bench_graph).
static inline double time_graph(rank_set& rs, const std::function<void(int)>& body, int K = 20, int R = 15,
                                bool join_each = false) {
  return bench_time_exec(bench_graph(rs, body, K, join_each), rs.stream[0], K, R);
}

// Median microseconds per call of `body` and of `floor` (an empty kernel
// in the same graph shape), timed in turn (bench_time_execs_in_turn): a
// floor timed once elsewhere in the run can differ from it by tenths of a
// us.  *floor_us: the floor's median.
static inline double time_graph_with_floor(rank_set& rs, const std::function<void(int)>& body,
                                           const std::function<void(int)>& floor, double* floor_us, int K, int R,
                                           bool join_each) {
  const std::vector<double> med = bench_time_execs_in_turn(
      {bench_graph(rs, body, K, join_each), bench_graph(rs, floor, K, join_each)}, {rs.stream[0], rs.stream[0]}, K, R);
  *floor_us = med[1];
  return med[0];
}

// Finite, non-zero 16-bit patterns (valid bf16/fp16 values, fp32 halves):
// halfword i of rank r's data.
RCCLX_HOST_DEVICE uint16_t bench_fill_u16(size_t i, int r) { return (uint16_t)(0x3c00 + ((i * 31 + r * 7) & 0xff)); }
static __global__ void bench_fill_kernel(uint16_t* p, size_t n, int r) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = bench_fill_u16(i, r);
}
// Element i of rank r's data as bench_fill_kernel wrote it, read as bf16 or
// fp32 (two halfwords, the low one first).
static inline double bench_fill_value(rcclx_dtype dt, size_t i, int r) {
  if (dt != RCCLX_FLOAT32) return rcclx_bf16_to_f32(bench_fill_u16(i, r));
  const uint32_t bits = (uint32_t)bench_fill_u16(2 * i, r) | (uint32_t)bench_fill_u16(2 * i + 1, r) << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

// Exits with 2 and a plain message when no GPU is visible: what every
// benchmark entry point (bench_start, bench_dda --nccl-selftest) does first.
static inline void bench_require_gpu(const char* name) {
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess || ndev < 1) {
    fprintf(stderr, "%s: no GPU found; this benchmark needs one (run bench/device-run.sh on a GPU machine)\n", name);
    exit(2);
  }
}

// A benchmark's start: bench_require_gpu, then opens the CSV named by
// argv[1] (default `name`.csv) and writes its header line.  Returns NULL if
// the file cannot be opened.
static inline FILE* bench_start(int argc, char** argv, const char* name, const char* header) {
  bench_require_gpu(name);
  char path[256];
  snprintf(path, sizeof path, "%s.csv", name);
  FILE* csv = fopen(argc > 1 ? argv[1] : path, "w");
  if (csv) fprintf(csv, "%s\n", header);
  return csv;
}
