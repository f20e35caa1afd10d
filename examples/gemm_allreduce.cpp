// Lesson: a tensor-parallel row-parallel linear layer whose AllReduce is
// fused into the GEMM (gemm_allreduce.h), on N ranks (virtual ranks on one
// GPU when only one exists), checked against the unfused sequence.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include "gemm_allreduce.h"

#define CHECK_HIP(x) do { if ((x) != hipSuccess) { fprintf(stderr, "%s failed\n", #x); return 1; } } while (0)

int main() {
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);  // one thread drives every rank (rcclx/comm.h)
  setenv("HIP_ENABLE_DEFERRED_LOADING", "0", 0);
  int ngpus = 0;
  if (hipGetDeviceCount(&ngpus) != hipSuccess || ngpus < 1) {
    fprintf(stderr, "gemm_allreduce: no GPU found; rcclx needs a HIP or CUDA GPU to run\n");
    return 2;
  }
  const int nranks = 4;
  const int M = 8, N = 4096, K = 1024;  // ADAPT: tokens, output features, this rank's input features
  int devices[nranks];
  for (int r = 0; r < nranks; ++r) devices[r] = ngpus >= nranks ? r : 0;
  rcclx_comm comms[nranks];
  if (rcclx_comms_init_local(nranks, devices, nullptr, comms) != RCCLX_SUCCESS) return 1;

  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 0.1f);
  std::vector<hipStream_t> streams(nranks);
  std::vector<rcclx_bf16*> X(nranks), W(nranks), Y(nranks), fused(nranks), unfused(nranks);
  for (int r = 0; r < nranks; ++r) {
    std::vector<rcclx_bf16> x((size_t)M * K), w((size_t)K * N);
    for (auto& v : x) v = rcclx_from_f32<rcclx_bf16>(nd(rng));
    for (auto& v : w) v = rcclx_from_f32<rcclx_bf16>(nd(rng));
    CHECK_HIP(hipSetDevice(devices[r]));
    CHECK_HIP(hipStreamCreateWithFlags(&streams[r], hipStreamNonBlocking));
    CHECK_HIP(hipMalloc((void**)&X[r], x.size() * 2));
    CHECK_HIP(hipMalloc((void**)&W[r], w.size() * 2));
    CHECK_HIP(hipMalloc((void**)&Y[r], (size_t)M * N * 2));
    CHECK_HIP(hipMalloc((void**)&fused[r], (size_t)M * N * 2));
    CHECK_HIP(hipMalloc((void**)&unfused[r], (size_t)M * N * 2));
    CHECK_HIP(hipMemcpy(X[r], x.data(), x.size() * 2, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(W[r], w.data(), w.size() * 2, hipMemcpyHostToDevice));
    CHECK_HIP(hipDeviceSynchronize());  // the uploads land before the non-blocking rank stream runs
  }
  // Fused: one persistent kernel per rank computes, publishes and reduces tiles.
  for (int r = 0; r < nranks; ++r)
    if (gemm_allreduce_fused(&comms[r], X[r], W[r], fused[r], M, N, K, streams[r]) != RCCLX_SUCCESS) return 1;
  // Unfused: GEMM into a buffer, then the AllReduce copies it in.
  for (int r = 0; r < nranks; ++r) {
    CHECK_HIP(hipSetDevice(devices[r]));  // the plain GEMM launches on the current device
    if (gemm_bf16(X[r], W[r], Y[r], M, N, K, streams[r]) != RCCLX_SUCCESS) return 1;
    if (rcclx_allreduce(&comms[r], Y[r], unfused[r], (size_t)M * N, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO,
                        streams[r]) != RCCLX_SUCCESS)
      return 1;
  }
  int bad = 0;
  std::vector<rcclx_bf16> a((size_t)M * N), b((size_t)M * N), first((size_t)M * N);
  for (int r = 0; r < nranks; ++r) {
    CHECK_HIP(hipStreamSynchronize(streams[r]));
    if (rcclx_comm_check(&comms[r], nullptr) != RCCLX_SUCCESS) bad++;
    CHECK_HIP(hipMemcpy(a.data(), fused[r], a.size() * 2, hipMemcpyDeviceToHost));
    CHECK_HIP(hipMemcpy(b.data(), unfused[r], b.size() * 2, hipMemcpyDeviceToHost));
    if (r == 0) first = a;
    bad += memcmp(a.data(), b.data(), a.size() * 2) != 0;      // fused == unfused, bit for bit
    bad += memcmp(a.data(), first.data(), a.size() * 2) != 0;  // and the same on every rank
    for (auto p : {X[r], W[r], Y[r], fused[r], unfused[r]}) CHECK_HIP(hipFree(p));
    CHECK_HIP(hipStreamDestroy(streams[r]));
    rcclx_comm_destroy(&comms[r]);
  }
  printf("gemm_allreduce: %d ranks, Y[%d x %d] = sum_r X_r[%d x %d] W_r: fused %s unfused\n", nranks, M, N, M, K,
         bad ? "DIFFERS FROM" : "== (bitwise, every rank)");
  return bad ? 1 : 0;
}
