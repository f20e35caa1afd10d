// Scalar FP8 (rcclx/fp8/format.h) against the independent oracle.
#include <rcclx/fp8/format.h>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cstring>
#include <random>
#include "oracle.h"

namespace {
struct fmt_case { rcclx_fp8_format f; oracle_format o; };
const fmt_case kFormats[] = {
    {RCCLX_FP8_E4M3FN, oracle_e4m3fn()},
    {RCCLX_FP8_E4M3FNUZ, oracle_e4m3fnuz()},
    {RCCLX_FP8_E5M2, oracle_e5m2()},
    {RCCLX_FP8_E5M2FNUZ, oracle_e5m2fnuz()},
};
float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
uint32_t to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

// Compare one input; count mismatches and report the first few.
void check_encode(const oracle_table& t, rcclx_fp8_format f, float x, int& bad) {
  const uint32_t want = t.encode(x, rcclx_fp8_nan_code(f));
  const uint32_t got = rcclx_fp8_encode(x, f);
  if (got != want) {
    if (bad < 8) WARN(rcclx_fp8_format_name(f) << ": x=" << x << " (0x" << std::hex << to_bits(x)
                      << ") got 0x" << got << " want 0x" << want);
    ++bad;
  }
}
}  // namespace

TEST_CASE("fp8 format facts", "[fp8_format]") {
  CHECK(rcclx_fp8_max(RCCLX_FP8_E4M3FN) == 448.0f);
  CHECK(rcclx_fp8_max(RCCLX_FP8_E4M3FNUZ) == 240.0f);
  CHECK(rcclx_fp8_max(RCCLX_FP8_E5M2) == 57344.0f);
  CHECK(rcclx_fp8_max(RCCLX_FP8_E5M2FNUZ) == 57344.0f);
  for (const auto& c : kFormats) {
    oracle_table t(c.o);
    CHECK(t.max() == (double)rcclx_fp8_max(c.f));
    CHECK(t.codes.back() == rcclx_fp8_max_code(c.f));
    CHECK(std::isnan(oracle_decode(rcclx_fp8_nan_code(c.f), c.o)));
  }
}

TEST_CASE("fp8 decode2: every pair of codes decodes as two single codes", "[fp8_format]") {
  for (const auto& c : kFormats) {
    int bad = 0;
    for (uint32_t two = 0; two < 65536; ++two) {
      float lo, hi;
      rcclx_fp8_decode2(two | 0x5a5a0000u, c.f, &lo, &hi);
      const float wlo = rcclx_fp8_decode_sw((uint8_t)two, c.f), whi = rcclx_fp8_decode_sw((uint8_t)(two >> 8), c.f);
      bad += std::isnan(wlo) ? !std::isnan(lo) : to_bits(lo) != to_bits(wlo);
      bad += std::isnan(whi) ? !std::isnan(hi) : to_bits(hi) != to_bits(whi);
    }
    INFO(rcclx_fp8_format_name(c.f));
    CHECK(bad == 0);
  }
}

TEST_CASE("fp8 decode: all 256 codes of every format", "[fp8_format]") {
  for (const auto& c : kFormats) {
    for (uint32_t v = 0; v < 256; ++v) {
      const double want = oracle_decode(v, c.o);
      const float got = rcclx_fp8_decode((uint8_t)v, c.f);
      const float got_sw = rcclx_fp8_decode_sw((uint8_t)v, c.f);
      INFO(rcclx_fp8_format_name(c.f) << " code " << v);
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
        CHECK(std::isnan(got_sw));
      } else {
        CHECK(to_bits(got) == to_bits((float)want));  // bitwise: -0 stays -0
        CHECK(to_bits(got_sw) == to_bits((float)want));
      }
    }
  }
}

TEST_CASE("fp8 encode: every value, midpoint and neighbour; specials", "[fp8_format]") {
  for (const auto& c : kFormats) {
    oracle_table t(c.o);
    int bad = 0;
    for (float x : t.boundary_inputs()) check_encode(t, c.f, x, bad);
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN,
                              from_bits(0x7f800001u), from_bits(0xffc12345u),
                              FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
                              from_bits(1u), from_bits(0x80000001u), from_bits(0x007fffffu),
                              from_bits(0x807fffffu), 1e-30f, -1e-30f, 464.0f, 248.0f,
                              61440.0f, -61440.0f, 449.0f, 480.0f, 1e10f};
    for (float x : specials) check_encode(t, c.f, x, bad);
    CHECK(bad == 0);
  }
  // Facts from FP8.md.
  CHECK(rcclx_fp8_encode(464.0f, RCCLX_FP8_E4M3FN) == 0x7e);
  CHECK(rcclx_fp8_encode(248.0f, RCCLX_FP8_E4M3FNUZ) == 0x7f);  // saturates
  CHECK(rcclx_fp8_encode(INFINITY, RCCLX_FP8_E5M2) == 0x7b);
  CHECK(rcclx_fp8_encode(-INFINITY, RCCLX_FP8_E4M3FNUZ) == 0xff);
  CHECK(rcclx_fp8_encode(-0.0f, RCCLX_FP8_E4M3FN) == 0x80);
  CHECK(rcclx_fp8_encode(-0.0f, RCCLX_FP8_E4M3FNUZ) == 0x00);
  CHECK(rcclx_fp8_encode(-1e-30f, RCCLX_FP8_E5M2FNUZ) == 0x00);
  CHECK(rcclx_fp8_encode(NAN, RCCLX_FP8_E5M2FNUZ) == 0x80);
}

TEST_CASE("fp8 encode: float32 subnormals exactly", "[fp8_format]") {
  for (const auto& c : kFormats) {
    oracle_table t(c.o);
    int bad = 0;
    std::mt19937 rng(7);
    for (int i = 0; i < 100000; ++i) {
      uint32_t u = rng() & 0x807fffffu;  // exponent field 0
      check_encode(t, c.f, from_bits(u), bad);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("fp8 encode: 10^6 random floats over the whole exponent range", "[fp8_format]") {
  for (const auto& c : kFormats) {
    oracle_table t(c.o);
    int bad = 0;
    std::mt19937 rng(1234 + (int)c.f);
    for (int i = 0; i < 1000000; ++i) {
      float x;
      if (i & 1) {
        x = from_bits(rng());  // uniform over bit patterns: every exponent
      } else {                 // dense inside the format's range
        std::uniform_real_distribution<float> d(-1.2f * rcclx_fp8_max(c.f), 1.2f * rcclx_fp8_max(c.f));
        x = d(rng) * std::ldexp(1.0f, -(int)(rng() % 24));
      }
      check_encode(t, c.f, x, bad);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("fp8 round trip and OCP = 2 x FNUZ for every finite nonzero code", "[fp8_format]") {
  for (const auto& c : kFormats) {
    for (uint32_t v = 0; v < 256; ++v) {
      float x = rcclx_fp8_decode((uint8_t)v, c.f);
      if (std::isnan(x) || std::isinf(x)) continue;
      INFO(rcclx_fp8_format_name(c.f) << " code " << v);
      CHECK(rcclx_fp8_encode(x, c.f) == v);
    }
  }
  for (uint32_t v = 1; v < 256; ++v) {
    if (v == 0x80) continue;
    float ocp = rcclx_fp8_decode((uint8_t)v, RCCLX_FP8_E4M3FN), fnuz = rcclx_fp8_decode((uint8_t)v, RCCLX_FP8_E4M3FNUZ);
    if (!std::isnan(ocp)) CHECK(ocp == 2.0f * fnuz);
    float ocp5 = rcclx_fp8_decode((uint8_t)v, RCCLX_FP8_E5M2), fnuz5 = rcclx_fp8_decode((uint8_t)v, RCCLX_FP8_E5M2FNUZ);
    if (std::isfinite(ocp5)) CHECK(ocp5 == 2.0f * fnuz5);
  }
}

TEST_CASE("fp8 typed and packed encoders agree with the generic one", "[fp8_format]") {
  std::mt19937 rng(99);
  for (int i = 0; i < 20000; ++i) {
    float a = from_bits(rng()), b = from_bits(rng());
    for (const auto& c : kFormats) {
      uint32_t two = rcclx_fp8_encode2(a, b, c.f);
      CHECK((two & 0xff) == rcclx_fp8_encode(a, c.f));
      CHECK((two >> 8) == rcclx_fp8_encode(b, c.f));
    }
    CHECK(rcclx_fp8_encode_e4m3fn(a) == rcclx_fp8_encode_sw(a, RCCLX_FP8_E4M3FN));
    CHECK(rcclx_fp8_encode_e5m2fnuz(a) == rcclx_fp8_encode_sw(a, RCCLX_FP8_E5M2FNUZ));
  }
}
