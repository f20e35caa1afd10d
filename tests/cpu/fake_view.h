// A 4-rank device view (this rank: 1) over host memory, for the argument
// checks, which compare pointers and never read the memory behind them.
#pragma once
#include <rcclx/comm.h>
#include <vector>

struct fake_view {
  // 4 ranks x (3 regions, then a polled area: signal and LL areas).
  std::vector<char> mem;
  rcclx_dev_comm v = {};
  explicit fake_view(size_t region_bytes) : mem(4 * stride(region_bytes) + 16) {
    char* base = (char*)(((uintptr_t)mem.data() + 15) & ~(uintptr_t)15);
    v.rank = 1; v.nranks = 4; v.nblocks = 8; v.nthreads = 512; v.region_bytes = region_bytes;
    for (int r = 0; r < 4; ++r) {
      v.bufs[r] = base + r * stride(region_bytes);
      v.sigs[r] = (rcclx_signal*)((char*)v.bufs[r] + 3 * region_bytes);
    }
  }
  static size_t stride(size_t region_bytes) { return 3 * region_bytes + RCCLX_POLLED_BYTES; }
  // Rank r's LL area, in its polled area.
  char* ll(int r) const { return (char*)v.sigs[r] + RCCLX_SIGNAL_BYTES; }
  // Rank r's registered input region.
  char* input(int r) const { return rcclx_input_region(&v, r); }
};
