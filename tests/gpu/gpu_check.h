// Shared by the GPU tests: runtime-call checking, poisoning, device buffers.
#pragma once
#include <rcclx/platform.h>
#include <catch2/catch.hpp>
#include <vector>

#define GPU_REQUIRE(call)                                                      \
  do {                                                                         \
    hipError_t e_ = (call);                                                    \
    INFO(#call << " -> " << hipGetErrorString(e_));                           \
    REQUIRE(e_ == hipSuccess);                                                 \
  } while (0)

// Launch check: the launch itself and the kernel's completion.
#define GPU_REQUIRE_LAUNCH()                                                   \
  do {                                                                         \
    GPU_REQUIRE(hipGetLastError());                                            \
    GPU_REQUIRE(hipDeviceSynchronize());                                       \
  } while (0)

template <typename T>
struct dev_buf {
  T* p = nullptr;
  size_t n = 0;
  explicit dev_buf(size_t count) : n(count) {
    GPU_REQUIRE(hipMalloc((void**)&p, count * sizeof(T) + 64));
    GPU_REQUIRE(hipMemset(p, 0xA5, count * sizeof(T) + 64));  // poison
  }
  ~dev_buf() { if (p) (void)hipFree(p); }
  dev_buf(const dev_buf&) = delete;
  dev_buf& operator=(const dev_buf&) = delete;
  void upload(const std::vector<T>& h) { GPU_REQUIRE(hipMemcpy(p, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice)); }
  std::vector<T> download(size_t count) const {
    std::vector<T> h(count);
    GPU_REQUIRE(hipMemcpy(h.data(), p, count * sizeof(T), hipMemcpyDeviceToHost));
    return h;
  }
};
