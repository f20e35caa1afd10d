// Element conversions and packs (rcclx/types.h) against the oracle.
#include <rcclx/types.h>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include "oracle.h"

namespace {
float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
uint32_t to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
}

TEST_CASE("fp16 decode: all 65536 codes", "[types]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    double want = oracle_decode(h, oracle_fp16());
    float got = rcclx_half_to_f32((uint16_t)h);
    if (std::isnan(want)) CHECK(std::isnan(got));
    else CHECK(to_bits(got) == to_bits((float)want));
  }
}

TEST_CASE("fp16 encode: IEEE round to nearest even on every boundary", "[types]") {
  oracle_table t(oracle_fp16());
  int bad = 0;
  std::vector<float> xs = t.boundary_inputs();
  std::mt19937 rng(5);
  for (int i = 0; i < 300000; ++i) xs.push_back(from_bits(rng()));
  for (float x : xs) {
    // IEEE fp16 overflows to Inf (no saturation).
    uint32_t want = t.encode(x, 0x7e00u, /*saturate=*/false);
    if (want == 0x7c00u || want == 0xfc00u || std::isinf(x)) want = std::signbit(x) ? 0xfc00u : 0x7c00u;
    uint32_t got = rcclx_f32_to_half_rn(x);
    bool ok = std::isnan(x) ? ((got & 0x7c00u) == 0x7c00u && (got & 0x3ffu)) : got == want;
    if (!ok && bad++ < 8) WARN("fp16 x=" << x << " got " << got << " want " << want);
  }
  CHECK(bad == 0);
}

TEST_CASE("bf16 encode: round to nearest even", "[types]") {
  std::mt19937 rng(6);
  int bad = 0;
  for (int i = 0; i < 1000000; ++i) {
    float x = from_bits(rng());
    uint16_t b = rcclx_f32_to_bf16_rn(x);
    if (std::isnan(x)) { bad += !std::isnan(rcclx_bf16_to_f32(b)); continue; }
    // The two bf16 candidates around x; the result must be the nearer (ties even).
    uint32_t lo = to_bits(x) & 0xffff0000u;
    double dx = x, dlo = from_bits(lo), dhi = from_bits(lo + 0x10000u);
    double elo = std::fabs(dx - dlo), ehi = std::fabs(dhi - dx);
    uint16_t want = (uint16_t)(lo >> 16);
    if (ehi < elo || (ehi == elo && (want & 1))) want = (uint16_t)(want + 1);
    if ((to_bits(x) & 0x7fffffffu) >= 0x7f7f8000u) continue;  // overflow region checked below
    bad += b != want;
  }
  CHECK(bad == 0);
  CHECK(rcclx_f32_to_bf16_rn(3.0e38f * 10.0f) == 0x7f80);
  CHECK(rcclx_f32_to_bf16_rn(-0.0f) == 0x8000);
}

TEST_CASE("16-byte packs round-trip and reduce ops", "[types]") {
  float in[8] = {1.5f, -2.25f, 3.0f, 1e-3f, -7.0f, 0.0f, 65504.0f, -0.5f}, out[8];
  rcclx_unpack16<rcclx_bf16>(rcclx_pack16<rcclx_bf16>(in), out);
  for (int i = 0; i < 8; ++i) CHECK(out[i] == rcclx_bf16_to_f32(rcclx_f32_to_bf16_rn(in[i])));
  rcclx_unpack16<rcclx_f16>(rcclx_pack16<rcclx_f16>(in), out);
  for (int i = 0; i < 8; ++i) CHECK(out[i] == rcclx_half_to_f32(rcclx_f32_to_half_rn(in[i])));
  rcclx_unpack16<float>(rcclx_pack16<float>(in), out);
  for (int i = 0; i < 4; ++i) CHECK(out[i] == in[i]);
  CHECK(rcclx_reduce_f32<RCCLX_SUM>(1.0f, 2.0f) == 3.0f);
  CHECK(rcclx_reduce_f32<RCCLX_MAX>(1.0f, 2.0f) == 2.0f);
  CHECK(rcclx_reduce_f32<RCCLX_MIN>(1.0f, 2.0f) == 1.0f);
  CHECK(rcclx_dtype_size(RCCLX_BFLOAT16) == 2);
  CHECK(rcclx_dtype_size((rcclx_dtype)7) == 0);
}
