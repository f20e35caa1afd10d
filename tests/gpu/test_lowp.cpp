// Low-precision collectives on the GPU with 2, 3, 4 and 8 ranks (virtual
// ranks on one GPU, or real GPUs: see ranks.h).  Every rank's output must
// equal the host reference of tests/common/lowp_reference.h bit for bit
// (which the CPU tests hold within the format's error bound of float64),
// so AllReduce and AllGather outputs are also bitwise equal across ranks.
// Fresh random inputs, outputs poisoned first.
#include <rcclx/rcclx.h>
#include <cmath>
#include <cstring>
#include <random>
#include "../common/lowp_reference.h"
#include "gpu_check.h"
#include "ranks.h"

namespace {

size_t in_elems(rcclx_lowp_kind k, int R, size_t count) { return count * (size_t)rcclx_lowp_input_segments(k, R); }
size_t out_elems(rcclx_lowp_kind k, int R, size_t count) {
  return count * ((k == RCCLX_LOWP_ALLGATHER || k == RCCLX_LOWP_ALLTOALL) ? (size_t)R : 1u);
}

template <typename T>
std::vector<std::vector<T>> random_inputs(int R, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::vector<T>> in(R, std::vector<T>(n));
  for (auto& v : in)
    for (size_t i = 0; i < n; ++i) {
      float x = nd(rng);
      if (rng() % 1000 == 0) x *= 100.0f;  // rare outliers
      v[i] = rcclx_from_f32<T>(x);
    }
  return in;
}

// Device buffers of every rank for one call shape.
template <typename T>
struct rank_bufs {
  std::vector<T*> send, recv;
  size_t ni = 0, no = 0;
  rank_bufs(rank_set& rs, size_t in_n, size_t out_n) : send(rs.n), recv(rs.n), ni(in_n), no(out_n) {
    for (int r = 0; r < rs.n; ++r) {
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipMalloc((void**)&send[r], ni * sizeof(T) + 64));
      GPU_REQUIRE(hipMalloc((void**)&recv[r], no * sizeof(T) + 64));
    }
  }
  ~rank_bufs() {
    for (size_t r = 0; r < send.size(); ++r) {
      (void)hipFree(send[r]);
      (void)hipFree(recv[r]);
    }
  }
  void upload(rank_set& rs, const std::vector<std::vector<T>>& in) {
    for (int r = 0; r < rs.n; ++r) {
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipMemcpy(send[r], in[r].data(), ni * sizeof(T), hipMemcpyHostToDevice));
      GPU_REQUIRE(hipMemset(recv[r], 0xFF, no * sizeof(T) + 64));  // poison (NaN)
    }
    GPU_REQUIRE(rs.settle());  // the rank streams do not wait for the null stream
  }
};

// Every rank's output against the reference; also nothing written past it.
template <typename T>
size_t compare_outputs(rank_set& rs, rank_bufs<T>& b, rcclx_lowp_kind kind, const std::vector<std::vector<T>>& in,
                       size_t count, rcclx_wire w, T* const* out_ptrs) {
  size_t bad = 0;
  for (int r = 0; r < rs.n; ++r) {
    std::vector<T> got(b.no + 1);
    GPU_REQUIRE(hipMemcpy(got.data(), out_ptrs[r], (b.no + 1) * sizeof(T), hipMemcpyDeviceToHost));
    const std::vector<T> want = lowp_ref_output(kind, in, count, w, r);
    for (size_t i = 0; i < b.no; ++i) {
      uint32_t x = 0, y = 0;
      memcpy(&x, &got[i], sizeof(T));
      memcpy(&y, &want[i], sizeof(T));
      if (x != y) {
        if (bad < 4) WARN("rank " << r << " i " << i << " got " << rcclx_to_f32(got[i]) << " want " << rcclx_to_f32(want[i]));
        ++bad;
      }
    }
    if (out_ptrs == b.recv.data()) {  // out of place: the poison past the end survives
      uint32_t tail = 0;
      memcpy(&tail, &got[b.no], sizeof(T));
      bad += tail != (sizeof(T) == 2 ? 0xFFFFu : 0xFFFFFFFFu);
    }
  }
  return bad;
}

template <typename T>
void run_lowp(rank_set& rs, rcclx_lowp_kind kind, size_t count, rcclx_wire w, bool in_place, std::mt19937& rng) {
  const int R = rs.n;
  const size_t ni = in_elems(kind, R, count), no = out_elems(kind, R, count);
  auto in = random_inputs<T>(R, ni, rng);
  rank_bufs<T> b(rs, ni, no);
  b.upload(rs, in);
  const rcclx_dtype dt = rcclx_dtype_of<T>::value;
  for (int r = 0; r < R; ++r)
    REQUIRE(rcclx_lowp_collective(&rs.comm[r], kind, b.send[r], in_place ? b.send[r] : b.recv[r], count, dt, w,
                                  rs.stream[r]) == RCCLX_SUCCESS);
  GPU_REQUIRE(rs.sync());
  for (int r = 0; r < R; ++r) REQUIRE(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
  INFO("R " << R << " kind " << kind << " count " << count << " dtype " << rcclx_dtype_name(dt) << " fmt " << w.format
            << " B " << w.block_size << " scale " << w.scale << " in_place " << in_place);
  CHECK(compare_outputs(rs, b, kind, in, count, w, in_place ? b.send.data() : b.recv.data()) == 0);
}

const rcclx_lowp_kind kKinds[] = {RCCLX_LOWP_ALLREDUCE_FLAT, RCCLX_LOWP_ALLREDUCE_TREE, RCCLX_LOWP_REDUCE_SCATTER,
                                  RCCLX_LOWP_ALLGATHER, RCCLX_LOWP_ALLTOALL};
}  // namespace

TEST_CASE("lowp: every collective, dtype and wire == host reference, bitwise; 2/3/4/8 ranks", "[gpu][lowp]") {
  std::mt19937 rng(77);
  const rcclx_wire wires[] = {
      rcclx_wire_make(RCCLX_FP8_E4M3FN, 128, RCCLX_SCALE_F32),   // the default: chip converts on sm_89+
      rcclx_wire_make(RCCLX_FP8_E5M2, 32, RCCLX_SCALE_E8M0),     // chip converts, power-of-two scales
      rcclx_wire_make(RCCLX_FP8_E4M3FNUZ, 256, RCCLX_SCALE_F32), // gfx942's format, software path here
      rcclx_wire_make(RCCLX_FP8_E5M2FNUZ, 64, RCCLX_SCALE_E8M0),
      rcclx_wire_make(RCCLX_WIRE_RAW, 128, RCCLX_SCALE_F32),     // full precision on the same kernels
  };
  for (int R : {2, 3, 4, 8}) {
    rank_set rs;
    REQUIRE(rs.init(R) == RCCLX_SUCCESS);
    for (auto kind : kKinds)
      for (const auto& w : wires)
        for (size_t count : {(size_t)1, (size_t)7, (size_t)1023, (size_t)4099}) {
          run_lowp<rcclx_bf16>(rs, kind, count, w, false, rng);
          if (count == 4099) {
            run_lowp<rcclx_f16>(rs, kind, count, w, false, rng);
            run_lowp<float>(rs, kind, count, w, false, rng);
          }
        }
    for (auto kind : {RCCLX_LOWP_ALLREDUCE_FLAT, RCCLX_LOWP_ALLREDUCE_TREE})
      run_lowp<rcclx_bf16>(rs, kind, 1000003, rcclx_wire_default(), true, rng);  // large, odd, in place
  }
}

TEST_CASE("lowp: messages larger than the region run in whole-group chunks", "[gpu][lowp]") {
  std::mt19937 rng(5);
  rcclx_config cfg = {};
  cfg.region_bytes = 64 << 10;  // 64 KiB: tens of chunks
  rank_set rs;
  REQUIRE(rs.init(4, &cfg) == RCCLX_SUCCESS);
  for (auto kind : kKinds) {
    run_lowp<rcclx_bf16>(rs, kind, 100003, rcclx_wire_default(), false, rng);
    run_lowp<float>(rs, kind, 70001, rcclx_wire_make(RCCLX_FP8_E5M2, 64, RCCLX_SCALE_E8M0), false, rng);
    run_lowp<rcclx_bf16>(rs, kind, 50001, rcclx_wire_raw(), false, rng);
  }
}

TEST_CASE("lowp: interleaved with DDA calls, 200 back-to-back calls, no reset", "[gpu][lowp]") {
  // The two families share the call counter and the copy-in halves.
  std::mt19937 rng(11);
  rank_set rs;
  REQUIRE(rs.init(8) == RCCLX_SUCCESS);
  const size_t n = 20011;
  rank_bufs<rcclx_bf16> b(rs, n * 8, n * 9);  // low-precision output, then the DDA output at 8n
  for (int it = 0; it < 200; ++it) {
    const rcclx_lowp_kind kind = kKinds[it % 5];
    auto in = random_inputs<rcclx_bf16>(8, in_elems(kind, 8, n), rng);
    for (int r = 0; r < 8; ++r)
      GPU_REQUIRE(hipMemcpy(b.send[r], in[r].data(), in[r].size() * 2, hipMemcpyHostToDevice));
    GPU_REQUIRE(rs.settle());
    for (int r = 0; r < 8; ++r) {
      REQUIRE(rcclx_lowp_collective(&rs.comm[r], kind, b.send[r], b.recv[r], n, RCCLX_BFLOAT16, rcclx_wire_default(),
                                    rs.stream[r]) == RCCLX_SUCCESS);
      // A full-precision AllReduce right behind it, into the same output.
      REQUIRE(rcclx_allreduce(&rs.comm[r], b.send[r], b.recv[r] + 8 * n, n, RCCLX_BFLOAT16, RCCLX_SUM,
                              it % 2 ? RCCLX_ALGO_TREE : RCCLX_ALGO_FLAT, rs.stream[r]) == RCCLX_SUCCESS);
    }
    GPU_REQUIRE(rs.sync());
    if (it % 10 == 0 || it >= 195) {
      const size_t no = out_elems(kind, 8, n);
      size_t bad = 0;
      for (int r = 0; r < 8; ++r) {
        std::vector<rcclx_bf16> got(no), dda(n);
        GPU_REQUIRE(hipMemcpy(got.data(), b.recv[r], no * 2, hipMemcpyDeviceToHost));
        GPU_REQUIRE(hipMemcpy(dda.data(), b.recv[r] + 8 * n, n * 2, hipMemcpyDeviceToHost));
        auto want = lowp_ref_output(kind, in, n, rcclx_wire_default(), r);
        auto exact = lowp_ref_output(RCCLX_LOWP_ALLREDUCE_FLAT, in, n, rcclx_wire_raw(), r);
        for (size_t i = 0; i < no; ++i) bad += got[i].bits != want[i].bits;
        for (size_t i = 0; i < n; ++i) bad += dda[i].bits != exact[i].bits;  // DDA sums the first n
      }
      INFO("iteration " << it << " kind " << kind);
      CHECK(bad == 0);
    }
  }
  for (int r = 0; r < 8; ++r) CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
}

TEST_CASE("lowp: graph capture and 50 replays with the data changed between them", "[gpu][lowp]") {
  std::mt19937 rng(13);
  for (auto kind : {RCCLX_LOWP_ALLREDUCE_TREE, RCCLX_LOWP_ALLTOALL}) {
    rank_set rs;
    REQUIRE(rs.init(4) == RCCLX_SUCCESS);
    const size_t n = 30011;
    rank_bufs<rcclx_bf16> b(rs, in_elems(kind, 4, n), out_elems(kind, 4, n));
    hipGraphExec_t ge;
    GPU_REQUIRE(rs.capture(1, [&](int r) {
      REQUIRE(rcclx_lowp_collective(&rs.comm[r], kind, b.send[r], b.recv[r], n, RCCLX_BFLOAT16, rcclx_wire_default(),
                                    rs.stream[r]) == RCCLX_SUCCESS);
    }, &ge));
    size_t bad = 0;
    for (int it = 0; it < 50; ++it) {
      auto in = random_inputs<rcclx_bf16>(4, b.ni, rng);
      b.upload(rs, in);
      GPU_REQUIRE(hipGraphLaunch(ge, rs.stream[0]));
      GPU_REQUIRE(hipStreamSynchronize(rs.stream[0]));
      bad += compare_outputs(rs, b, kind, in, n, rcclx_wire_default(), b.recv.data());
    }
    GPU_REQUIRE(hipGraphExecDestroy(ge));
    INFO("kind " << kind);
    CHECK(bad == 0);
  }
}

// The switches are read when the communicator is created: set before, and
// cleared right after, they still hold for its calls; a communicator made
// without them keeps full precision.
TEST_CASE("lowp: RCCL_LOW_PRECISION_ENABLE switches rcclx_allreduce; explicit algo wins", "[gpu][lowp]") {
  std::mt19937 rng(17);
  rank_set rs, plain;
  setenv("RCCL_LOW_PRECISION_ENABLE", "1", 1);
  setenv("RCCLX_LOW_PRECISION_MIN_BYTES", "1024", 1);
  REQUIRE(rs.init(4) == RCCLX_SUCCESS);
  unsetenv("RCCL_LOW_PRECISION_ENABLE");
  unsetenv("RCCLX_LOW_PRECISION_MIN_BYTES");
  REQUIRE(plain.init(4) == RCCLX_SUCCESS);
  const size_t n = 65537;
  auto in = random_inputs<rcclx_bf16>(4, n, rng);
  rank_bufs<rcclx_bf16> b(rs, n, n);
  struct { rcclx_algo algo; rcclx_lowp_kind ref_kind; rcclx_wire ref_wire; } cases[] = {
      {RCCLX_ALGO_AUTO, RCCLX_LOWP_ALLREDUCE_FLAT, rcclx_wire_default()},  // 128 KiB: low-precision flat
      {RCCLX_ALGO_FLAT, RCCLX_LOWP_ALLREDUCE_FLAT, rcclx_wire_raw()},      // explicit: full precision
      {RCCLX_ALGO_LOWP_TREE, RCCLX_LOWP_ALLREDUCE_TREE, rcclx_wire_default()},
  };
  for (const auto& c : cases) {
    b.upload(rs, in);
    for (int r = 0; r < 4; ++r)
      REQUIRE(rcclx_allreduce(&rs.comm[r], b.send[r], b.recv[r], n, RCCLX_BFLOAT16, RCCLX_SUM, c.algo, rs.stream[r]) ==
              RCCLX_SUCCESS);
    GPU_REQUIRE(rs.sync());
    INFO("algo " << c.algo);
    CHECK(compare_outputs(rs, b, c.ref_kind, in, n, c.ref_wire, b.recv.data()) == 0);
  }
  b.upload(rs, in);
  for (int r = 0; r < 4; ++r)
    REQUIRE(rcclx_allreduce(&plain.comm[r], b.send[r], b.recv[r], n, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO,
                            plain.stream[r]) == RCCLX_SUCCESS);
  GPU_REQUIRE(plain.sync());
  INFO("a communicator created without the switch");
  CHECK(compare_outputs(plain, b, RCCLX_LOWP_ALLREDUCE_FLAT, in, n, rcclx_wire_raw(), b.recv.data()) == 0);
  // Max is not a low-precision op: AUTO keeps full precision, LOWP is refused.
  CHECK(rcclx_allreduce(&rs.comm[0], b.send[0], b.recv[0], n, RCCLX_BFLOAT16, RCCLX_MAX, RCCLX_ALGO_LOWP_FLAT,
                        rs.stream[0]) == RCCLX_ERR_UNSUPPORTED_OP);
}

TEST_CASE("lowp: ranks that disagree are reported, bad input refused before launch", "[gpu][lowp]") {
  rank_set rs;
  REQUIRE(rs.init(2) == RCCLX_SUCCESS);
  rank_bufs<rcclx_bf16> b(rs, 8192, 8192);
  for (int r = 0; r < 2; ++r)  // rank 1 asks for a different count
    REQUIRE(rcclx_lowp_collective(&rs.comm[r], RCCLX_LOWP_ALLGATHER, b.send[r], b.recv[r], r ? 1000 : 1001,
                                  RCCLX_BFLOAT16, rcclx_wire_default(), rs.stream[r]) == RCCLX_SUCCESS);
  GPU_REQUIRE(rs.sync());
  rcclx_status s0 = rcclx_comm_check(&rs.comm[0], nullptr), s1 = rcclx_comm_check(&rs.comm[1], nullptr);
  CHECK((s0 == RCCLX_ERR_RANK_MISMATCH || s1 == RCCLX_ERR_RANK_MISMATCH));
  rcclx_wire bad = rcclx_wire_default();
  bad.block_size = 100;
  CHECK(rcclx_lowp_collective(&rs.comm[0], RCCLX_LOWP_ALLGATHER, b.send[0], b.recv[0], 10, RCCLX_BFLOAT16, bad,
                              rs.stream[0]) == RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_lowp_collective(&rs.comm[0], RCCLX_LOWP_ALLGATHER, b.send[0] + 1, b.recv[0], 10, RCCLX_BFLOAT16,
                              rcclx_wire_default(), rs.stream[0]) == RCCLX_ERR_MISALIGNED);
  CHECK(rcclx_lowp_collective(&rs.comm[0], RCCLX_LOWP_ALLGATHER, b.send[0], b.recv[0], 0, RCCLX_BFLOAT16,
                              rcclx_wire_default(), rs.stream[0]) == RCCLX_SUCCESS);  // no-op
  CHECK(rcclx_comm_check(&rs.comm[0], nullptr) == RCCLX_SUCCESS);
}
