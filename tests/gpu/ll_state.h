// The LL protocol's per-slot state (rcclx/dda/ll.h), set and read from the
// host by the tests of its re-tagging and call-count wrap: test_dda.cpp
// (the library's LL kernel) and test_fusion.cpp (the fused LL RMSNorm).
#pragma once
#include <rcclx/rcclx.h>
#include <vector>
#include "gpu_check.h"
#include "ranks.h"

// Sets the LL counters of every block slot of every rank (written into the
// signal areas; nothing may run on the rank streams).
static inline void set_ll_counters(rank_set& rs, uint32_t calls, uint32_t cleaned0, uint32_t cleaned1) {
  for (int r = 0; r < rs.n; ++r) {
    GPU_REQUIRE(hipSetDevice(rs.dev[r]));
    for (int b = 0; b < rs.comm[r].view.nblocks; ++b) {
      rcclx_slot_counters* sc = &rs.comm[r].view.sigs[r]->slot[b];
      const uint32_t v[3] = {calls, cleaned0, cleaned1};
      GPU_REQUIRE(hipMemcpy(&sc->ll_calls, &v[0], 4, hipMemcpyHostToDevice));
      GPU_REQUIRE(hipMemcpy(&sc->ll_cleaned[0], &v[1], 8, hipMemcpyHostToDevice));
    }
  }
  GPU_REQUIRE(rs.settle());
}
static inline uint32_t ll_calls_of(rank_set& rs, int r, int b) {
  uint32_t v = 0;
  GPU_REQUIRE(hipMemcpy(&v, &rs.comm[r].view.sigs[r]->slot[b].ll_calls, 4, hipMemcpyDeviceToHost));
  return v;
}
// Every block slot of every rank records buffer 0's last re-tagging at
// call c0 and buffer 1's at c1 (ll_cleaned).
static inline void check_ll_cleaned(rank_set& rs, uint32_t c0, uint32_t c1) {
  for (int r = 0; r < rs.n; ++r)
    for (int b = 0; b < rs.comm[r].view.nblocks; ++b) {
      uint32_t v[2] = {0, 0};
      GPU_REQUIRE(hipMemcpy(v, &rs.comm[r].view.sigs[r]->slot[b].ll_cleaned[0], 8, hipMemcpyDeviceToHost));
      INFO("rank " << r << " slot " << b);
      CHECK(v[0] == c0);
      CHECK(v[1] == c1);
    }
}
static __global__ void delay_kernel(long long cycles) {
  const long long t = clock64();
  while (clock64() - t < cycles) {
  }
}

// The tags (high words) of every 64-bit word of rank r's LL buffer `buf`:
// the data slot of source `slot`, in rank r's own polled area.
static inline std::vector<uint32_t> ll_slot_tags(rank_set& rs, int r, uint32_t buf, int slot) {
  const size_t words = RCCLX_LL_SLOT_BYTES / 8;
  std::vector<uint64_t> w(words);
  const char* base = (const char*)rs.comm[r].view.sigs[r] + rcclx_ll_line_offset(buf, slot, 0);
  GPU_REQUIRE(hipSetDevice(rs.dev[r]));
  GPU_REQUIRE(hipMemcpy(w.data(), base, RCCLX_LL_SLOT_BYTES, hipMemcpyDeviceToHost));
  std::vector<uint32_t> t(words);
  for (size_t i = 0; i < words; ++i) t[i] = (uint32_t)(w[i] >> 32);
  return t;
}
