// Low-precision collectives, host side (rcclx/fp8/lowp_plan.h): argument
// checks, chunking, environment switches, and the reference results the
// kernels must reproduce bit for bit, checked against float64 within the
// error bound derived in tests/common/lowp_reference.h.
#include <rcclx/fp8/lowp_plan.h>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <random>
#include "../common/lowp_reference.h"
#include "fake_view.h"

namespace {
const rcclx_fp8_format kFormats[] = {RCCLX_FP8_E4M3FN, RCCLX_FP8_E4M3FNUZ, RCCLX_FP8_E5M2, RCCLX_FP8_E5M2FNUZ};

enum data_kind { GAUSSIAN, OUTLIERS, ALL_EQUAL, SMALL };
template <typename T>
std::vector<std::vector<T>> make_inputs(int R, size_t n, data_kind d, uint32_t seed) {
  std::vector<std::vector<T>> in(R, std::vector<T>(n));
  for (int r = 0; r < R; ++r) {
    std::mt19937 rng(seed + 7919u * (uint32_t)r);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) {
      float v = nd(rng);
      if (d == OUTLIERS && rng() % 1000 == 0) v *= 100.0f;  // 1 in 1000 is 100x larger
      if (d == ALL_EQUAL) v = 0.7f;
      if (d == SMALL) v *= 1e-3f;  // activation-sized values: below e4m3's subnormals unscaled
      in[r][i] = rcclx_from_f32<T>(v);
    }
  }
  return in;
}

template <typename T>
void check_allreduce_bound(rcclx_lowp_kind kind, int R, size_t n, rcclx_wire w, data_kind d) {
  auto in = make_inputs<T>(R, n, d, 1234u + (uint32_t)n);
  std::vector<double> exact;
  const std::vector<double> bound = lowp_allreduce_bound(kind, in, n, w, &exact);
  const std::vector<T> out = lowp_ref_output(kind, in, n, w, 0);
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; ++i) {
    const double e = std::fabs((double)rcclx_to_f32(out[i]) - exact[i]);
    if (!(e <= bound[i])) {
      if (first == n) first = i;
      ++bad;
    }
  }
  INFO("kind " << kind << " R " << R << " n " << n << " fmt " << w.format << " B " << w.block_size << " scale "
               << w.scale << " data " << d << " dtype " << rcclx_dtype_name(rcclx_dtype_of<T>::value)
               << " first bad " << first);
  CHECK(bad == 0);
}
}  // namespace

TEST_CASE("low-precision argument checks", "[lowp]") {
  const fake_view fv(65536);
  const rcclx_dev_comm& v = fv.v;
  alignas(16) static float a[8192], b[8192];
  const rcclx_wire w = rcclx_wire_make(RCCLX_FP8_E4M3FN, 128, RCCLX_SCALE_F32);
  for (int k = 0; k < RCCLX_LOWP_KIND_COUNT; ++k) {
    const rcclx_lowp_kind kind = (rcclx_lowp_kind)k;
    INFO("kind " << k);
    CHECK(rcclx_lowp_check(&v, kind, a, b, 1000, RCCLX_FLOAT32, &w) == RCCLX_SUCCESS);
    CHECK(rcclx_lowp_check(&v, kind, nullptr, b, 10, RCCLX_FLOAT32, &w) == RCCLX_ERR_NULL_POINTER);
    CHECK(rcclx_lowp_check(&v, kind, a, b, 10, RCCLX_FLOAT32, nullptr) == RCCLX_ERR_NULL_POINTER);
    CHECK(rcclx_lowp_check(&v, kind, a + 1, b, 10, RCCLX_FLOAT32, &w) == RCCLX_ERR_MISALIGNED);
    CHECK(rcclx_lowp_check(&v, kind, a, b, 0, RCCLX_FLOAT32, &w) == RCCLX_ERR_INVALID_COUNT);
    CHECK(rcclx_lowp_check(&v, kind, a, b, 10, (rcclx_dtype)7, &w) == RCCLX_ERR_UNSUPPORTED_DTYPE);
    rcclx_wire bad = w;
    bad.block_size = 48;
    CHECK(rcclx_lowp_check(&v, kind, a, b, 10, RCCLX_FLOAT32, &bad) == RCCLX_ERR_INVALID_ARGUMENT);
    bad = w; bad.format = 9;
    CHECK(rcclx_lowp_check(&v, kind, a, b, 10, RCCLX_FLOAT32, &bad) == RCCLX_ERR_INVALID_ARGUMENT);
    bad = w; bad.scale = (rcclx_scale_kind)5;
    CHECK(rcclx_lowp_check(&v, kind, a, b, 10, RCCLX_FLOAT32, &bad) == RCCLX_ERR_INVALID_ARGUMENT);
    const bool may_alias = kind == RCCLX_LOWP_ALLREDUCE_FLAT || kind == RCCLX_LOWP_ALLREDUCE_TREE;
    CHECK(rcclx_lowp_check(&v, kind, a, a, 16, RCCLX_FLOAT32, &w) ==
          (may_alias ? RCCLX_SUCCESS : RCCLX_ERR_INVALID_ARGUMENT));
    CHECK(rcclx_lowp_check(&v, kind, a, a + 4, 16, RCCLX_FLOAT32, &w) == RCCLX_ERR_INVALID_ARGUMENT);
    // recv inside this rank's registered buffer, which peers read
    CHECK(rcclx_lowp_check(&v, kind, a, fv.input(1), 16, RCCLX_FLOAT32, &w) == RCCLX_ERR_INVALID_ARGUMENT);
    CHECK(rcclx_lowp_check(&v, kind, a, fv.input(2), 16, RCCLX_FLOAT32, &w) == RCCLX_SUCCESS);  // a peer's: not ours to guard
    rcclx_dev_comm x = v;
    x.nranks = 9;
    CHECK(rcclx_lowp_check(&x, kind, a, b, 10, RCCLX_FLOAT32, &w) == RCCLX_ERR_INVALID_NRANKS);
    x = v; x.rank = -1;
    CHECK(rcclx_lowp_check(&x, kind, a, b, 10, RCCLX_FLOAT32, &w) == RCCLX_ERR_INVALID_RANK);
    x = v; x.sigs[2] = nullptr;
    CHECK(rcclx_lowp_check(&x, kind, a, b, 10, RCCLX_FLOAT32, &w) == RCCLX_ERR_NULL_POINTER);
  }
  // AllGather output = nranks * count must not overlap the input either.
  CHECK(rcclx_lowp_check(&v, RCCLX_LOWP_ALLGATHER, a + 3 * 16, a, 16, RCCLX_FLOAT32, &w) == RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_lowp_check(&v, (rcclx_lowp_kind)5, a, b, 16, RCCLX_FLOAT32, &w) == RCCLX_ERR_INVALID_ARGUMENT);
}

TEST_CASE("low-precision chunking: whole groups, fits, maximal", "[lowp]") {
  for (size_t region : {(size_t)4096, (size_t)65536, (size_t)1 << 20, (size_t)32 << 20})
    for (int S : {1, 2, 3, 8})
      for (int f : {RCCLX_WIRE_RAW, (int)RCCLX_FP8_E4M3FN})
        for (int B : {32, 64, 128, 256})
          for (auto k : {RCCLX_SCALE_F32, RCCLX_SCALE_E8M0})
            for (size_t es : {(size_t)2, (size_t)4}) {
              const rcclx_wire w = rcclx_wire_make(f, B, k);
              const size_t m = rcclx_lowp_chunk_elems(region, S, w, es);
              INFO("region " << region << " S " << S << " f " << f << " B " << B << " k " << k << " es " << es);
              if (m == 0) {  // not one block fits: the launchers reject the call
                CHECK(rcclx_lowp_segment_bytes((size_t)B, w, es) * S > region);
                continue;
              }
              CHECK(m % (size_t)B == 0);
              CHECK(rcclx_lowp_segment_bytes(m, w, es) * S <= region);
              CHECK(rcclx_lowp_segment_bytes(m + B, w, es) * S > region);
            }
  // Bytes on the wire: e4m3 with fp32 scales per 128 is 1 + 4/128 per element.
  CHECK(rcclx_lowp_wire_bytes_per_elem(rcclx_wire_make(RCCLX_FP8_E4M3FN, 128, RCCLX_SCALE_F32), 2) == Approx(1.03125));
  CHECK(rcclx_lowp_wire_bytes_per_elem(rcclx_wire_make(RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_E8M0), 2) == Approx(1.03125));
  CHECK(rcclx_lowp_wire_bytes_per_elem(rcclx_wire_raw(), 2) == 2.0);
  CHECK(rcclx_lowp_signature(RCCLX_LOWP_ALLGATHER, 10, RCCLX_BFLOAT16, rcclx_wire_default()) !=
        rcclx_lowp_signature(RCCLX_LOWP_ALLTOALL, 10, RCCLX_BFLOAT16, rcclx_wire_default()));
}

TEST_CASE("low-precision switches: RCCL_LOW_PRECISION_ENABLE and friends", "[lowp]") {
  const char* vars[] = {"RCCL_LOW_PRECISION_ENABLE", "RCCLX_LOW_PRECISION_ENABLE", "RCCLX_LOW_PRECISION_ALLREDUCE",
                        "RCCLX_LOW_PRECISION_ALLGATHER", "RCCLX_LOW_PRECISION_MIN_BYTES",
                        "RCCLX_LOW_PRECISION_FORMAT", "RCCLX_LOW_PRECISION_BLOCK"};
  for (const char* v : vars) unsetenv(v);
  const size_t big = (size_t)64 << 20, small = 4096;
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLREDUCE, big) == 0);  // off by default
  setenv("RCCL_LOW_PRECISION_ENABLE", "1", 1);
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLREDUCE, big) == 1);
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLTOALL, big) == 1);
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLREDUCE, small) == 0);  // below the threshold
  setenv("RCCLX_LOW_PRECISION_MIN_BYTES", "1024", 1);
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLREDUCE, small) == 1);
  setenv("RCCLX_LOW_PRECISION_ALLGATHER", "0", 1);  // one collective off
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLGATHER, big) == 0);
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLREDUCE, big) == 1);
  unsetenv("RCCL_LOW_PRECISION_ENABLE");
  setenv("RCCLX_LOW_PRECISION_ALLREDUCE", "1", 1);  // one collective on, alone
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLREDUCE, big) == 1);
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_REDUCE_SCATTER, big) == 0);
  setenv("RCCLX_LOW_PRECISION_ENABLE", "1", 1);
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_REDUCE_SCATTER, big) == 1);
  CHECK(rcclx_wire_for(RCCLX_COLL_REDUCE_SCATTER, big).format == rcclx_wire_from_env().format);  // FP8 wire
  CHECK(rcclx_wire_for(RCCLX_COLL_ALLGATHER, big).format == RCCLX_WIRE_RAW);  // switched off above
  CHECK(rcclx_wire_from_env().format == RCCLX_FP8_E4M3FN);  // host/CUDA build default: OCP
  CHECK(rcclx_wire_from_env().block_size == 128);
  setenv("RCCLX_LOW_PRECISION_FORMAT", "e5m2", 1);
  setenv("RCCLX_LOW_PRECISION_BLOCK", "32", 1);
  CHECK(rcclx_wire_from_env().format == RCCLX_FP8_E5M2);
  CHECK(rcclx_wire_from_env().block_size == 32);
  setenv("RCCLX_LOW_PRECISION_BLOCK", "33", 1);  // invalid: default kept
  CHECK(rcclx_wire_from_env().block_size == 128);
  // A snapshot (what a communicator keeps from its creation) does not move
  // with the environment.
  setenv("RCCLX_LOW_PRECISION_BLOCK", "64", 1);
  const rcclx_lowp_switches snap = rcclx_lowp_switches_from_env();
  CHECK(snap.on == ((1u << RCCLX_COLL_ALLREDUCE) | (1u << RCCLX_COLL_REDUCE_SCATTER) | (1u << RCCLX_COLL_ALLTOALL)));
  CHECK(snap.min_bytes == 1024);
  for (const char* v : vars) unsetenv(v);
  CHECK(rcclx_lowp_enabled(RCCLX_COLL_ALLREDUCE, big) == 0);  // the environment: off now
  CHECK(rcclx_lowp_switches_on(&snap, RCCLX_COLL_ALLREDUCE, big) == 1);
  CHECK(rcclx_lowp_switches_on(&snap, RCCLX_COLL_ALLGATHER, big) == 0);
  CHECK(rcclx_lowp_switches_on(&snap, RCCLX_COLL_ALLREDUCE, 1023) == 0);
  CHECK(rcclx_lowp_switches_on(&snap, (rcclx_collective)4, big) == 0);
  CHECK(rcclx_lowp_switches_wire(&snap, RCCLX_COLL_ALLTOALL, big).format == RCCLX_FP8_E5M2);
  CHECK(rcclx_lowp_switches_wire(&snap, RCCLX_COLL_ALLTOALL, big).block_size == 64);
  CHECK(rcclx_lowp_switches_wire(&snap, RCCLX_COLL_ALLGATHER, big).format == RCCLX_WIRE_RAW);
  const rcclx_lowp_switches off = rcclx_lowp_switches_from_env();
  CHECK(off.on == 0u);
  CHECK(off.min_bytes == rcclx_lowp_default_min_bytes());
  CHECK(rcclx_lowp_switches_fp8(&off).format == rcclx_wire_default().format);
}

TEST_CASE("low-precision AllReduce reference: within the format's bound of float64", "[lowp]") {
  for (auto kind : {RCCLX_LOWP_ALLREDUCE_FLAT, RCCLX_LOWP_ALLREDUCE_TREE})
    for (auto f : kFormats)
      for (int B : {32, 64, 128, 256})
        for (auto k : {RCCLX_SCALE_F32, RCCLX_SCALE_E8M0})
          for (auto d : {GAUSSIAN, OUTLIERS, ALL_EQUAL, SMALL}) {
            const rcclx_wire w = rcclx_wire_make(f, B, k);
            check_allreduce_bound<rcclx_bf16>(kind, 4, 4099, w, d);
            check_allreduce_bound<rcclx_f16>(kind, 3, 1023, w, d);
            check_allreduce_bound<float>(kind, 8, 777, w, d);
          }
  // One large odd count, 2 and 8 ranks.
  check_allreduce_bound<rcclx_bf16>(RCCLX_LOWP_ALLREDUCE_FLAT, 8, 100003, rcclx_wire_default(), OUTLIERS);
  check_allreduce_bound<rcclx_bf16>(RCCLX_LOWP_ALLREDUCE_TREE, 2, 100003, rcclx_wire_default(), GAUSSIAN);
}

TEST_CASE("low-precision reference: raw wire is exact; gather and all-to-all move segments", "[lowp]") {
  const int R = 3;
  const size_t n = 301;
  auto in = make_inputs<rcclx_bf16>(R, n * R, GAUSSIAN, 99u);
  const rcclx_wire raw = rcclx_wire_raw();
  for (int r = 0; r < R; ++r) {
    auto ag = lowp_ref_output(RCCLX_LOWP_ALLGATHER, in, n, raw, r);
    auto a2a = lowp_ref_output(RCCLX_LOWP_ALLTOALL, in, n, raw, r);
    auto rs = lowp_ref_output(RCCLX_LOWP_REDUCE_SCATTER, in, n, raw, r);
    REQUIRE(ag.size() == n * R);
    REQUIRE(a2a.size() == n * R);
    REQUIRE(rs.size() == n);
    size_t bad = 0;
    for (int q = 0; q < R; ++q)
      for (size_t i = 0; i < n; ++i) {
        bad += ag[q * n + i].bits != in[q][i].bits;
        bad += a2a[q * n + i].bits != in[q][r * n + i].bits;
      }
    for (size_t i = 0; i < n; ++i) {
      float s = 0.0f;
      for (int q = 0; q < R; ++q) s = q ? s + rcclx_to_f32(in[q][r * n + i]) : rcclx_to_f32(in[q][r * n + i]);
      bad += rs[i].bits != rcclx_from_f32<rcclx_bf16>(s).bits;
    }
    CHECK(bad == 0);
  }
  // An fp8 AllGather returns each rank's quantized data: within its bound.
  const rcclx_wire w = rcclx_wire_default();
  auto ag = lowp_ref_output(RCCLX_LOWP_ALLGATHER, in, n, w, 0);
  for (int q = 0; q < R; ++q) {
    std::vector<double> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = rcclx_to_f32(in[q][i]);
    auto qb = lowp_quant_bound(x, w);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
      bad += !(std::fabs(rcclx_to_f32(ag[q * n + i]) - x[i]) <= qb[i] + std::ldexp(1.0, -8) * (std::fabs(x[i]) + qb[i]));
    CHECK(bad == 0);
  }
}
