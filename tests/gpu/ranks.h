// Rank set-up shared by GPU tests, benches and examples: N ranks on the
// devices listed in RCCLX_DEVICES (e.g. "0,1,2,3"), else one rank per GPU
// when enough GPUs exist, else N virtual ranks on GPU 0.
#pragma once
#include <rcclx/rcclx.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

// Driving several ranks from one host thread needs two runtime settings,
// made here before the runtime starts (an explicit environment value wins):
//  - eager module loading.  CUDA (12.2+) loads a kernel lazily at its first
//    launch, and that load may wait for the context to go idle; if a rank's
//    collective is already spinning for a peer whose launch comes later from
//    this same thread, that wait never ends.  This was the cause of the
//    8-rank eager deadlock seen on the H200 on 2026-12-02 (bench/RESULTS.md):
//    the test's first verify_kernel launch came right after rank 0's
//    AllReduce.  HIP's deferred code-object loading is the same hazard.
//  - one hardware queue per stream (CUDA default 8, HIP 4), so no two ranks'
//    streams share a FIFO.
static const int rcclx_test_env_ = (setenv("CUDA_MODULE_LOADING", "EAGER", 0),
                                    setenv("HIP_ENABLE_DEFERRED_LOADING", "0", 0),
                                    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0),
                                    setenv("GPU_MAX_HW_QUEUES", "16", 0), 0);

static inline std::vector<int> rcclx_test_devices(int nranks) {
  std::vector<int> d(nranks, 0);
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess || ndev < 1) return {};
  if (const char* env = std::getenv("RCCLX_DEVICES")) {
    std::vector<int> list;
    for (const char* p = env; *p;) {
      list.push_back(std::atoi(p));
      while (*p && *p != ',') ++p;
      if (*p == ',') ++p;
    }
    for (int r = 0; r < nranks && !list.empty(); ++r) d[r] = list[r % list.size()];
    return d;
  }
  if (ndev >= nranks)
    for (int r = 0; r < nranks; ++r) d[r] = r;
  return d;
}

struct rank_set {
  int n = 0;
  std::vector<int> dev;
  std::vector<rcclx_comm> comm;
  std::vector<hipStream_t> stream;
  rcclx_status init(int nranks, const rcclx_config* cfg = nullptr) {
    n = nranks;
    dev = rcclx_test_devices(nranks);
    if ((int)dev.size() != nranks) return RCCLX_ERR_NO_DEVICE;
    comm.assign(nranks, rcclx_comm{});
    rcclx_status st = rcclx_comms_init_local(nranks, dev.data(), cfg, comm.data());
    if (st != RCCLX_SUCCESS) return st;
    stream.assign(nranks, nullptr);
    for (int r = 0; r < nranks; ++r) {
      if (hipSetDevice(dev[r]) != hipSuccess || hipStreamCreateWithFlags(&stream[r], hipStreamNonBlocking) != hipSuccess)
        return RCCLX_ERR_RUNTIME;
    }
    (void)hipSetDevice(dev[0]);
    return RCCLX_SUCCESS;
  }
  // Waits for every device the ranks use: host-side hipMemcpy/hipMemset of
  // test data run on the null stream, which the ranks' non-blocking streams
  // do not wait for (a pageable hipMemcpy may even return before its DMA
  // lands); call it between preparing data and launching on rank streams.
  hipError_t settle() {
    hipError_t e = hipSuccess;
    for (int r = 0; r < n; ++r) {
      hipError_t x = hipSetDevice(dev[r]);
      if (x == hipSuccess) x = hipDeviceSynchronize();
      if (x != hipSuccess) e = x;
    }
    return e;
  }
  // Makes rank r's device current and returns rank r's stream: what a
  // kernel launch, an allocation or an occupancy query for rank r needs
  // first.  (With virtual ranks every rank is on device 0, so a missing
  // switch shows only on several GPUs: a launch into another device's
  // stream fails there.)  Aborts if the device cannot be made current.
  hipStream_t on(int r) {
    if (hipSetDevice(dev[r]) != hipSuccess) {
      fprintf(stderr, "rank_set: hipSetDevice(%d) failed for rank %d\n", dev[r], r);
      abort();
    }
    return stream[r];
  }
  hipError_t sync() {
    hipError_t e = hipSuccess;
    for (int r = 0; r < n; ++r) {
      hipError_t x = hipStreamSynchronize(stream[r]);
      if (x != hipSuccess) e = x;
    }
    return e;
  }
  // Captures `body(r)` for every rank, `repeat` times, into one graph on rank
  // 0's stream that forks to every rank's stream and joins back (once
  // around all repetitions, or around each with join_each); *exec is
  // launched on stream[0] and destroyed by the caller.  body(r) runs with
  // rank r's device current (it may launch into stream[r] directly); device
  // 0's is current on return.  Each join event lives on its rank's device
  // (an event is recorded only on a stream of its own device).
  hipError_t capture(int repeat, const std::function<void(int)>& body, hipGraphExec_t* exec, bool join_each = false) {
    std::vector<hipEvent_t> ev(n + 1, nullptr);
    hipGraph_t g = nullptr;
    hipError_t e = hipSuccess;
    for (int r = 0; r <= n && e == hipSuccess; ++r) {
      e = hipSetDevice(dev[r < n ? r : 0]);  // ev[n], the fork, is recorded on stream[0]
      if (e == hipSuccess) e = hipEventCreateWithFlags(&ev[r], hipEventDisableTiming);
    }
    if (e == hipSuccess) e = hipSetDevice(dev[0]);
    if (e == hipSuccess) e = hipStreamBeginCapture(stream[0], hipStreamCaptureModeRelaxed);
    auto fork = [&] {
      if (e == hipSuccess) e = hipEventRecord(ev[n], stream[0]);
      for (int r = 1; r < n && e == hipSuccess; ++r) e = hipStreamWaitEvent(stream[r], ev[n], 0);
    };
    auto join = [&] {
      for (int r = 1; r < n && e == hipSuccess; ++r) {
        e = hipEventRecord(ev[r], stream[r]);
        if (e == hipSuccess) e = hipStreamWaitEvent(stream[0], ev[r], 0);
      }
    };
    fork();
    for (int k = 0; k < repeat && e == hipSuccess; ++k) {
      if (join_each && k > 0) { join(); fork(); }
      for (int r = 0; r < n && e == hipSuccess; ++r) {
        e = hipSetDevice(dev[r]);
        if (e == hipSuccess) body(r);
      }
    }
    if (e == hipSuccess) e = hipSetDevice(dev[0]);
    join();
    hipError_t end = hipStreamEndCapture(stream[0], &g);
    if (e == hipSuccess) e = end;
    if (e == hipSuccess) e = hipGraphInstantiateWithFlags(exec, g, 0);
    if (g) (void)hipGraphDestroy(g);
    for (auto& x : ev)
      if (x) (void)hipEventDestroy(x);
    return e;
  }
  ~rank_set() {
    for (int r = 0; r < (int)stream.size(); ++r)
      if (stream[r]) (void)hipStreamDestroy(stream[r]);
    for (auto& c : comm) rcclx_comm_destroy(&c);
  }
};
