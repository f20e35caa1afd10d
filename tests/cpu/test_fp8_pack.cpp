// Block-scaled pack/unpack (rcclx/fp8/pack.h) on the host: layout, scale
// rule, defined results for special blocks, and the error bound.
#include <rcclx/fp8/quantize.h>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

namespace {
const rcclx_fp8_format kFormats[] = {RCCLX_FP8_E4M3FN, RCCLX_FP8_E4M3FNUZ, RCCLX_FP8_E5M2, RCCLX_FP8_E5M2FNUZ};
const int kBlocks[] = {32, 64, 128, 256};
const rcclx_scale_kind kKinds[] = {RCCLX_SCALE_F32, RCCLX_SCALE_E8M0};

// Half an ulp relative (normal range) and the absolute subnormal half-step,
// in units of the block scale: the bound the format allows.
double rel_bound(rcclx_fp8_format f) { return std::ldexp(1.0, -(rcclx_fp8_mant_bits(f) + 1)); }
double abs_bound_units(rcclx_fp8_format f) { return std::ldexp(1.0, -rcclx_fp8_bias(f) - rcclx_fp8_mant_bits(f)); }
// The output type's own rounding, relative.
// ... and its absolute half-step in its subnormal range.
template <typename T> double out_abs() { return sizeof(T) == 4 ? 0.0 : (std::is_same<T, rcclx_bf16>::value ? std::ldexp(1.0, -134) : std::ldexp(1.0, -25)); }
template <typename T> double out_rel() { return sizeof(T) == 4 ? 0.0 : (std::is_same<T, rcclx_bf16>::value ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11)); }

template <typename T>
void round_trip(size_t n, rcclx_fp8_format f, int B, rcclx_scale_kind k, std::mt19937& rng, int& bad) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<T> in(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    float v = nd(rng) * std::ldexp(1.0f, (int)(i / B % 9) * 3 - 14);  // blocks span many magnitudes
    in[i] = rcclx_from_f32<T>(v);
  }
  std::vector<uint8_t> chunk(rcclx_fp8_packed_bytes(n, B, k) + 16);
  rcclx_fp8_pack_host(in.data(), n, f, B, k, chunk.data());
  rcclx_fp8_unpack_host(chunk.data(), n, f, B, k, out.data());
  for (size_t i = 0; i < n; ++i) {
    const size_t b = i / B;
    const double s = rcclx_fp8_scale_from_stored(rcclx_fp8_load_scale(chunk.data(), b, k), k);
    const double x = rcclx_to_f32(in[i]), y = rcclx_to_f32(out[i]);
    const double lim = (rel_bound(f) * (1 + std::ldexp(1.0, -22)) + out_rel<T>() * (1 + rel_bound(f))) * std::fabs(x) +
                       abs_bound_units(f) * s * (1 + out_rel<T>()) + out_abs<T>() + 1e-45;
    if (!(std::fabs(y - x) <= lim)) {
      if (bad < 5) WARN("n=" << n << " B=" << B << " fmt=" << rcclx_fp8_format_name(f) << " kind=" << k << " i=" << i
                             << " x=" << x << " y=" << y << " lim=" << lim);
      ++bad;
    }
    // Relative to the block's absmax the error is at most half an ulp of fmax's binade.
  }
}
}  // namespace

TEST_CASE("pack layout", "[fp8_pack]") {
  CHECK(rcclx_fp8_packed_bytes(1, 32, RCCLX_SCALE_F32) == 32);
  CHECK(rcclx_fp8_scales_bytes(1000, 128, RCCLX_SCALE_F32) == 32);  // 8 blocks * 4
  CHECK(rcclx_fp8_scales_bytes(1000, 128, RCCLX_SCALE_E8M0) == 16);
  CHECK(rcclx_fp8_packed_bytes(1000, 128, RCCLX_SCALE_E8M0) == 16 + 1008);
  CHECK(rcclx_fp8_packed_bytes(4096, 32, RCCLX_SCALE_E8M0) == 128 + 4096);
  for (size_t n : {1u, 7u, 33u, 1000003u})
    for (int B : kBlocks)
      for (auto k : kKinds) CHECK(rcclx_fp8_packed_bytes(n, B, k) % 16 == 0);
}

TEST_CASE("scale rule: exact power of two, floor and never NaN", "[fp8_pack]") {
  for (auto f : kFormats) {
    const float fmax = rcclx_fp8_max(f);
    // e8m0: smallest 2^e with fmax * 2^e >= absmax.
    std::mt19937 rng(3);
    for (int i = 0; i < 100000; ++i) {
      float a = std::ldexp(1.0f + (rng() % 1000000) / 1e6f, (int)(rng() % 200) - 100);
      rcclx_fp8_scale s = rcclx_fp8_make_scale(a, f, RCCLX_SCALE_E8M0);
      int e = (int)s.stored - 127;
      if (e > -126 && e < 126) {
        CHECK((double)fmax * std::ldexp(1.0, e) >= a);
        CHECK((double)fmax * std::ldexp(1.0, e - 1) < a);
      }
      CHECK(s.scale * s.inv == 1.0f);
      rcclx_fp8_scale t = rcclx_fp8_make_scale(a, f, RCCLX_SCALE_F32);
      CHECK(std::isfinite(t.scale));
      CHECK(t.scale > 0);
      CHECK(std::fabs(t.scale * fmax - a) <= 1e-6 * a);
    }
    for (auto k : kKinds) {
      for (float a : {0.0f, 1e-45f, 1e-38f, 3.4e38f}) {
        rcclx_fp8_scale s = rcclx_fp8_make_scale(a, f, k);
        CHECK(std::isfinite(s.scale));
        CHECK(std::isfinite(s.inv));
        CHECK(s.scale > 0);
        CHECK(s.inv > 0);
      }
    }
  }
  CHECK(rcclx_fp8_make_scale(448.0f, RCCLX_FP8_E4M3FN, RCCLX_SCALE_E8M0).stored == 127);
  CHECK(rcclx_fp8_make_scale(449.0f, RCCLX_FP8_E4M3FN, RCCLX_SCALE_E8M0).stored == 128);
  CHECK(rcclx_fp8_make_scale(0.0f, RCCLX_FP8_E4M3FN, RCCLX_SCALE_E8M0).stored == 1);
}

TEST_CASE("pack/unpack round trip within the format's bound, every block size, dtype, kind, odd counts", "[fp8_pack]") {
  std::mt19937 rng(11);
  int bad = 0;
  for (auto f : kFormats)
    for (int B : kBlocks)
      for (auto k : kKinds)
        for (size_t n : {(size_t)1, (size_t)7, (size_t)B - 1, (size_t)B, (size_t)B + 1, (size_t)1000, (size_t)4099}) {
          round_trip<float>(n, f, B, k, rng, bad);
          round_trip<rcclx_bf16>(n, f, B, k, rng, bad);
          round_trip<rcclx_f16>(n, f, B, k, rng, bad);
        }
  CHECK(bad == 0);
}

TEST_CASE("special blocks have defined results", "[fp8_pack]") {
  for (auto f : kFormats)
    for (auto k : kKinds) {
      const int B = 32;
      std::vector<float> x(B, 0.0f), y(B);
      std::vector<uint8_t> c(rcclx_fp8_packed_bytes(B, B, k));
      // All zeros (and -0): zeros back, finite scale.
      x[3] = -0.0f;
      rcclx_fp8_pack_host(x.data(), B, f, B, k, c.data());
      rcclx_fp8_unpack_host(c.data(), B, f, B, k, y.data());
      for (float v : y) CHECK(v == 0.0f);
      CHECK(std::isfinite(rcclx_fp8_scale_from_stored(rcclx_fp8_load_scale(c.data(), 0, k), k)));
      // NaN and Inf: non-finite back (NaN); the rest quantized as if absent.
      for (int i = 0; i < B; ++i) x[i] = 0.5f + i;
      x[5] = NAN;
      x[9] = INFINITY;
      x[10] = -INFINITY;
      rcclx_fp8_pack_host(x.data(), B, f, B, k, c.data());
      rcclx_fp8_unpack_host(c.data(), B, f, B, k, y.data());
      CHECK(std::isnan(y[5]));
      CHECK(std::isnan(y[9]));
      CHECK(std::isnan(y[10]));
      CHECK(std::fabs(y[B - 1] - x[B - 1]) <= 0.125 * x[B - 1]);
      // Tiny and huge blocks: finite, within bounds.
      for (float mag : {1e-40f, 1e-30f, 1e30f, 2.5e38f}) {
        for (int i = 0; i < B; ++i) x[i] = mag * (i % 2 ? -1.0f : 1.0f) * (1.0f + i / 256.0f);
        rcclx_fp8_pack_host(x.data(), B, f, B, k, c.data());
        rcclx_fp8_unpack_host(c.data(), B, f, B, k, y.data());
        for (int i = 0; i < B; ++i) {
          CHECK(std::isfinite(y[i]));
          if (mag >= 1e-30f) CHECK(std::fabs(y[i] - x[i]) <= 0.125 * std::fabs(x[i]));
        }
      }
    }
}

TEST_CASE("quantize argument checks", "[fp8_pack]") {
  alignas(16) static float buf[64];
  alignas(16) static uint8_t chunk[256];
  auto q = [&](const void* d, rcclx_dtype t, size_t n, rcclx_fp8_format f, int B, rcclx_scale_kind k, const void* c) {
    return rcclx_fp8_quantize_check(d, t, n, f, B, k, c);
  };
  CHECK(q(buf, RCCLX_FLOAT32, 64, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_F32, chunk) == RCCLX_SUCCESS);
  CHECK(q(nullptr, RCCLX_FLOAT32, 64, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_F32, chunk) == RCCLX_ERR_NULL_POINTER);
  CHECK(q(buf, RCCLX_FLOAT32, 64, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_F32, nullptr) == RCCLX_ERR_NULL_POINTER);
  CHECK(q((const char*)buf + 4, RCCLX_FLOAT32, 60, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_F32, chunk) == RCCLX_ERR_MISALIGNED);
  CHECK(q(buf, RCCLX_FLOAT32, 64, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_F32, chunk + 8) == RCCLX_ERR_MISALIGNED);
  CHECK(q(buf, RCCLX_FLOAT32, 0, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_F32, chunk) == RCCLX_ERR_INVALID_COUNT);
  CHECK(q(buf, (rcclx_dtype)9, 64, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_F32, chunk) == RCCLX_ERR_UNSUPPORTED_DTYPE);
  CHECK(q(buf, RCCLX_FLOAT32, 64, (rcclx_fp8_format)4, 32, RCCLX_SCALE_F32, chunk) == RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(q(buf, RCCLX_FLOAT32, 64, RCCLX_FP8_E4M3FN, 48, RCCLX_SCALE_F32, chunk) == RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(q(buf, RCCLX_FLOAT32, 64, RCCLX_FP8_E4M3FN, 32, (rcclx_scale_kind)2, chunk) == RCCLX_ERR_INVALID_ARGUMENT);
  for (int s = 0; s < RCCLX_STATUS_COUNT; ++s) CHECK(std::string(rcclx_status_string((rcclx_status)s)).size() > 3);
}
