// rcclx/mma_layout.h: every lane map covers its 16 x 16 matrix exactly
// once, operand elements come in aligned k runs (the shared-memory words
// rcclx/mma.h reads), and spot values match the vendors' tables.
#include <catch2/catch.hpp>
#include <rcclx/mma_layout.h>

namespace {
typedef void (*lane_map)(int, int, int, int*, int*);

// Every (row, col) of the 16 x 16 matrix is named by exactly one (lane, j).
bool covers_once(int layout, lane_map at) {
  int hits[16][16] = {};
  for (int lane = 0; lane < rcclx_mma_lanes(layout); ++lane)
    for (int j = 0; j < rcclx_mma_elems(layout); ++j) {
      int r = -1, c = -1;
      at(layout, lane, j, &r, &c);
      if (r < 0 || r >= 16 || c < 0 || c >= 16) return false;
      ++hits[r][c];
    }
  for (auto& row : hits)
    for (int h : row)
      if (h != 1) return false;
  return true;
}
}  // namespace

TEST_CASE("mma layout: each map is a bijection onto the 16 x 16 tile", "[mma_layout]") {
  for (int layout : {RCCLX_MMA_LAYOUT_CDNA, RCCLX_MMA_LAYOUT_NV}) {
    INFO("layout " << layout);
    CHECK(rcclx_mma_lanes(layout) * rcclx_mma_elems(layout) == 256);
    CHECK(covers_once(layout, rcclx_mma_a_at));
    CHECK(covers_once(layout, rcclx_mma_b_at));
    CHECK(covers_once(layout, rcclx_mma_d_at));
  }
}

TEST_CASE("mma layout: operand elements come in aligned k runs", "[mma_layout]") {
  for (int layout : {RCCLX_MMA_LAYOUT_CDNA, RCCLX_MMA_LAYOUT_NV}) {
    const int run = rcclx_mma_k_run(layout);
    REQUIRE(rcclx_mma_elems(layout) % run == 0);
    for (int lane = 0; lane < rcclx_mma_lanes(layout); ++lane)
      for (int j0 = 0; j0 < rcclx_mma_elems(layout); j0 += run) {
        int m0, k0, kb0, n0;
        rcclx_mma_a_at(layout, lane, j0, &m0, &k0);
        rcclx_mma_b_at(layout, lane, j0, &kb0, &n0);
        INFO("layout " << layout << " lane " << lane << " element " << j0);
        CHECK(k0 % run == 0);  // the run is one aligned word of `run` bf16
        CHECK(kb0 % run == 0);
        for (int i = 1; i < run; ++i) {
          int m, k, kb, n;
          rcclx_mma_a_at(layout, lane, j0 + i, &m, &k);
          rcclx_mma_b_at(layout, lane, j0 + i, &kb, &n);
          CHECK(m == m0);
          CHECK(k == k0 + i);
          CHECK(n == n0);
          CHECK(kb == kb0 + i);
        }
      }
  }
}

TEST_CASE("mma layout: spot values from the vendors' tables", "[mma_layout]") {
  int r, c;
  // CDNA v_mfma_f32_16x16x16_bf16: lane 37 = column 5 of lane group 2.
  rcclx_mma_a_at(RCCLX_MMA_LAYOUT_CDNA, 37, 3, &r, &c);
  CHECK((r == 5 && c == 11));
  rcclx_mma_b_at(RCCLX_MMA_LAYOUT_CDNA, 37, 1, &r, &c);
  CHECK((r == 9 && c == 5));
  rcclx_mma_d_at(RCCLX_MMA_LAYOUT_CDNA, 37, 2, &r, &c);
  CHECK((r == 10 && c == 5));
  // NVIDIA mma.m16n8k16: lane 5 is group 1, thread-in-group 1.
  rcclx_mma_a_at(RCCLX_MMA_LAYOUT_NV, 5, 1, &r, &c);  // a0 high half
  CHECK((r == 1 && c == 3));
  rcclx_mma_a_at(RCCLX_MMA_LAYOUT_NV, 5, 2, &r, &c);  // a1: row + 8
  CHECK((r == 9 && c == 2));
  rcclx_mma_a_at(RCCLX_MMA_LAYOUT_NV, 5, 4, &r, &c);  // a2: k + 8
  CHECK((r == 1 && c == 10));
  rcclx_mma_b_at(RCCLX_MMA_LAYOUT_NV, 5, 3, &r, &c);  // b1 of the first n8 half: k + 8
  CHECK((r == 11 && c == 1));
  rcclx_mma_b_at(RCCLX_MMA_LAYOUT_NV, 5, 4, &r, &c);  // b0 of the second half: n + 8
  CHECK((r == 2 && c == 9));
  rcclx_mma_d_at(RCCLX_MMA_LAYOUT_NV, 5, 3, &r, &c);  // c3: row + 8
  CHECK((r == 9 && c == 3));
  rcclx_mma_d_at(RCCLX_MMA_LAYOUT_NV, 31, 7, &r, &c);  // last lane, second half
  CHECK((r == 15 && c == 15));
}
