// The smallest complete rcclx program: build rank views, run one AllReduce
// per rank, check it, tear down.  With one GPU the ranks are virtual (own
// buffers and streams on the same device); with N GPUs, one rank per GPU.
#include <rcclx/rcclx.h>
#include <cstdio>
#include <vector>

#define CHECK_HIP(x) do { if ((x) != hipSuccess) { fprintf(stderr, "%s failed\n", #x); return 1; } } while (0)

int main() {
  int ngpus = 0;
  if (hipGetDeviceCount(&ngpus) != hipSuccess || ngpus < 1) {
    fprintf(stderr, "allreduce_basic: no GPU found; rcclx needs a HIP or CUDA GPU to run\n");
    return 2;
  }
  const int nranks = 4;
  const size_t count = 1 << 20;  // bf16 elements per rank
  int devices[nranks];
  for (int r = 0; r < nranks; ++r) devices[r] = ngpus >= nranks ? r : 0;  // adapt: your rank -> GPU map

  rcclx_comm comms[nranks];
  rcclx_status st = rcclx_comms_init_local(nranks, devices, nullptr, comms);
  if (st != RCCLX_SUCCESS) { fprintf(stderr, "init: %s\n", rcclx_status_string(st)); return 1; }

  std::vector<uint16_t*> data(nranks);
  std::vector<hipStream_t> streams(nranks);
  std::vector<uint16_t> host(count);
  for (int r = 0; r < nranks; ++r) {
    CHECK_HIP(hipSetDevice(devices[r]));
    CHECK_HIP(hipStreamCreateWithFlags(&streams[r], hipStreamNonBlocking));
    CHECK_HIP(hipMalloc((void**)&data[r], count * 2));
    for (size_t i = 0; i < count; ++i) host[i] = rcclx_f32_to_bf16_rn((float)(r + 1));  // rank r holds r+1
    CHECK_HIP(hipMemcpy(data[r], host.data(), count * 2, hipMemcpyHostToDevice));
    // A copy from pageable memory may return before it lands, and the
    // non-blocking rank stream does not wait for it: wait here.
    CHECK_HIP(hipDeviceSynchronize());
  }
  // Every rank calls with the same count/dtype/op; in place; each on its own stream.
  for (int r = 0; r < nranks; ++r) {
    st = rcclx_allreduce(&comms[r], data[r], data[r], count, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO, streams[r]);
    if (st != RCCLX_SUCCESS) { fprintf(stderr, "allreduce: %s\n", rcclx_status_string(st)); return 1; }
  }
  int bad = 0;
  for (int r = 0; r < nranks; ++r) {
    CHECK_HIP(hipStreamSynchronize(streams[r]));
    if (rcclx_comm_check(&comms[r], nullptr) != RCCLX_SUCCESS) bad++;
    CHECK_HIP(hipMemcpy(host.data(), data[r], count * 2, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) bad += rcclx_bf16_to_f32(host[i]) != 10.0f;  // 1+2+3+4
    CHECK_HIP(hipFree(data[r]));
    CHECK_HIP(hipStreamDestroy(streams[r]));
    rcclx_comm_destroy(&comms[r]);
  }
  printf("allreduce_basic: %d ranks x %zu bf16, sum %s\n", nranks, count, bad ? "WRONG" : "correct (10 everywhere)");
  return bad ? 1 : 0;
}
