// The LL protocol's per-slot state (rcclx/dda/ll.h), set and read from the
// host by the tests of its re-tagging and call-count wrap: test_dda.cpp
// (the library's LL kernel) and test_fusion.cpp (the fused LL RMSNorm).
#pragma once
#include <rcclx/rcclx.h>
#include <vector>
#include "gpu_check.h"
#include "ranks.h"

// Sets the LL count records of every warp of every block slot of every
// rank (written into the signal areas; nothing may run on the rank streams).
static inline void set_ll_counters(rank_set& rs, uint32_t calls, uint32_t cleaned0, uint32_t cleaned1) {
  for (int r = 0; r < rs.n; ++r) {
    GPU_REQUIRE(hipSetDevice(rs.dev[r]));
    std::vector<rcclx_ll_count> v(RCCLX_MAX_BLOCKS * RCCLX_LL_WARPS, rcclx_ll_count{calls, {cleaned0, cleaned1}, 0});
    GPU_REQUIRE(hipMemcpy(&rs.comm[r].view.sigs[r]->ll_count[0][0], v.data(), v.size() * sizeof(v[0]),
                          hipMemcpyHostToDevice));
  }
  GPU_REQUIRE(rs.settle());
}
// Count records per block slot that the device's warps use.
static inline int ll_warps_of(rank_set& rs, int r) {
  int ws = 0;
  GPU_REQUIRE(hipDeviceGetAttribute(&ws, hipDeviceAttributeWarpSize, rs.dev[r]));
  REQUIRE(ws > 0);
  return RCCLX_MAX_THREADS / ws;
}
// Rank r's count records of the block slots its grid has, [slot][warp].
static inline std::vector<rcclx_ll_count> ll_counts_of(rank_set& rs, int r) {
  std::vector<rcclx_ll_count> v((size_t)rs.comm[r].view.nblocks * RCCLX_LL_WARPS);
  GPU_REQUIRE(hipSetDevice(rs.dev[r]));
  GPU_REQUIRE(hipMemcpy(v.data(), &rs.comm[r].view.sigs[r]->ll_count[0][0], v.size() * sizeof(v[0]),
                        hipMemcpyDeviceToHost));
  return v;
}
// Every record of block slot b of rank r holds one call count (every call
// advances every warp's record): that count, or ~0u and a failed check.
static inline uint32_t ll_calls_of(rank_set& rs, int r, int b) {
  const std::vector<rcclx_ll_count> v = ll_counts_of(rs, r);
  const int warps = ll_warps_of(rs, r);
  for (int w = 1; w < warps; ++w) {
    INFO("rank " << r << " slot " << b << " warp " << w);
    CHECK(v[(size_t)b * RCCLX_LL_WARPS + w].calls == v[(size_t)b * RCCLX_LL_WARPS].calls);
  }
  return v[(size_t)b * RCCLX_LL_WARPS].calls;
}
// Every record of every block slot of every rank notes buffer 0's last
// re-tagging at call c0 and buffer 1's at c1.
static inline void check_ll_cleaned(rank_set& rs, uint32_t c0, uint32_t c1) {
  for (int r = 0; r < rs.n; ++r) {
    const std::vector<rcclx_ll_count> v = ll_counts_of(rs, r);
    const int warps = ll_warps_of(rs, r);
    for (int b = 0; b < rs.comm[r].view.nblocks; ++b)
      for (int w = 0; w < warps; ++w) {
        INFO("rank " << r << " slot " << b << " warp " << w);
        CHECK(v[(size_t)b * RCCLX_LL_WARPS + w].cleaned[0] == c0);
        CHECK(v[(size_t)b * RCCLX_LL_WARPS + w].cleaned[1] == c1);
      }
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
