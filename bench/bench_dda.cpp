// DDA AllReduce sweep: N ranks (virtual on one GPU, or real GPUs: see
// tests/gpu/ranks.h), graph replays of K back-to-back calls, median of R.
// Baselines measured in the same run: an empty kernel per rank with the same
// fork/join graph (the launch floor) and a device-to-device copy of the
// unique bytes (each rank's input read once + output written once).
// Output: CSV on stdout's file (argv[1]) and a table on stdout.
#include <rcclx/rcclx.h>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>
#include "../tests/gpu/ranks.h"

#define CK(x) do { hipError_t e_ = (x); if (e_ != hipSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_)); exit(1); } } while (0)
#define RK(x) do { rcclx_status s_ = (x); if (s_ != RCCLX_SUCCESS) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, rcclx_status_string(s_)); exit(1); } } while (0)

__global__ void empty_kernel() {}
__global__ void init_kernel(uint16_t* p, size_t n, int r) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = (uint16_t)(0x3c00 + ((i * 31 + r * 7) & 0xff));  // finite, non-zero values (bf16/fp16/fp32 halves)
}

// Median microseconds per call of `body` (which issues one call on every rank).
static double time_graph(rank_set& rs, const std::function<void(int)>& body, int K = 20, int R = 15) {
  hipGraphExec_t ge;
  CK(rs.capture(K, body, &ge));
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
  std::sort(us.begin(), us.end());
  CK(hipGraphExecDestroy(ge));
  CK(hipEventDestroy(t0));
  CK(hipEventDestroy(t1));
  return us[us.size() / 2];
}

int main(int argc, char** argv) {
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess || ndev < 1) {
    fprintf(stderr, "bench_dda: no GPU found; this benchmark needs one (run bench/device-run.sh on a GPU machine)\n");
    return 2;
  }
  FILE* csv = fopen(argc > 1 ? argv[1] : "bench_dda.csv", "w");
  if (!csv) return 1;
  fprintf(csv, "nranks,dtype,algo,bytes,us,empty_us,copy_us,algbw_GBps,busbw_GBps,frac_copy\n");
  const size_t max_bytes = (size_t)64 << 20;
  const size_t sizes[] = {1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 512 << 10, 1 << 20, 4 << 20, 16 << 20, 32 << 20, 64 << 20};
  printf("%-3s %-5s %-5s %10s %10s %8s %8s %9s %7s\n", "N", "dtype", "algo", "bytes", "us", "floor", "copy_us", "busbw", "%copy");
  for (int N : {2, 4, 8}) {
    rank_set rs;
    RK(rs.init(N));
    std::vector<void*> in(N), out(N), scratch(N);
    for (int r = 0; r < N; ++r) {
      CK(hipSetDevice(rs.dev[r]));
      CK(hipMalloc(&in[r], max_bytes));
      CK(hipMalloc(&out[r], max_bytes));
      CK(hipMalloc(&scratch[r], 2 * max_bytes));
      init_kernel<<<256, 256>>>((uint16_t*)in[r], max_bytes / 2, r);
      CK(hipDeviceSynchronize());
    }
    const double empty = time_graph(rs, [&](int r) { empty_kernel<<<1, 32, 0, rs.stream[r]>>>(); });
    for (size_t bytes : sizes) {
      // Unique bytes: each rank's input read once and output written once.
      const double copy = time_graph(rs, [&](int r) {
        CK(hipMemcpyAsync(scratch[r], in[r], bytes, hipMemcpyDeviceToDevice, rs.stream[r]));
      }, 20, 9);
      for (rcclx_dtype dt : {RCCLX_BFLOAT16, RCCLX_FLOAT32}) {
        for (rcclx_algo a : {RCCLX_ALGO_FLAT, RCCLX_ALGO_TREE, RCCLX_ALGO_AUTO}) {
          const size_t count = bytes / rcclx_dtype_size(dt);
          const double us = time_graph(rs, [&](int r) {
            RK(rcclx_allreduce(&rs.comm[r], in[r], out[r], count, dt, RCCLX_SUM, a, rs.stream[r]));
          });
          for (int r = 0; r < N; ++r) RK(rcclx_comm_check(&rs.comm[r], nullptr));
          const double algbw = bytes / us / 1e3, busbw = algbw * 2.0 * (N - 1) / N;
          const double frac = copy / us;
          fprintf(csv, "%d,%s,%s,%zu,%.3f,%.3f,%.3f,%.2f,%.2f,%.3f\n", N, rcclx_dtype_name(dt), rcclx_algo_name(a), bytes,
                  us, empty, copy, algbw, busbw, frac);
          printf("%-3d %-5s %-5s %10zu %10.2f %8.2f %8.2f %9.1f %6.0f%%\n", N, rcclx_dtype_name(dt), rcclx_algo_name(a),
                 bytes, us, empty, copy, busbw, 100 * frac);
          fflush(stdout);
        }
      }
    }
    for (int r = 0; r < N; ++r) {
      (void)hipFree(in[r]); (void)hipFree(out[r]); (void)hipFree(scratch[r]);
    }
  }
  fclose(csv);
  return 0;
}
