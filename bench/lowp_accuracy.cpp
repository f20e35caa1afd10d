// Accuracy report of the low-precision AllReduce (host only: the kernels
// reproduce tests/common/lowp_reference.h bit for bit, which the GPU tests
// check).  For every FP8 format, block size and scale kind: normwise RMS and
// max error against the float64 sum, flat and tree, next to an unscaled
// direct cast (RCCLX's low-precision path: x cast to fp8 with no scale),
// on the same data.  The direct cast is shown saturating (kinder than RCCLX,
// which does not clamp); "ovf" counts inputs beyond the format's max, which
// an unclamped cast turns into NaN/Inf, "uf0" inputs it flushes to zero.
// Usage: lowp_accuracy [ranks] [count]  (markdown table on stdout)
#include <cstdio>
#include <cstdlib>
#include <random>
#include "../tests/common/lowp_reference.h"

namespace {
enum data_kind { GAUSSIAN, OUTLIERS, SMALL };
const char* data_name(data_kind d) { return d == GAUSSIAN ? "gaussian" : d == OUTLIERS ? "outliers" : "small(1e-3)"; }

std::vector<std::vector<rcclx_bf16>> inputs(int R, size_t n, data_kind d) {
  std::vector<std::vector<rcclx_bf16>> in(R, std::vector<rcclx_bf16>(n));
  for (int r = 0; r < R; ++r) {
    std::mt19937 rng(1000u + (uint32_t)r);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) {
      float v = nd(rng);
      if (d == OUTLIERS && rng() % 1000 == 0) v *= 100.0f;
      if (d == SMALL) v *= 1e-3f;
      in[r][i] = rcclx_from_f32<rcclx_bf16>(v);
    }
  }
  return in;
}

struct err_stats { double rms, max; };
err_stats errors(const std::vector<double>& exact, const std::vector<float>& got) {
  double se = 0, sx = 0, me = 0, mx = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double e = (double)got[i] - exact[i];
    se += e * e;
    sx += exact[i] * exact[i];
    me = std::max(me, std::fabs(e));
    mx = std::max(mx, std::fabs(exact[i]));
  }
  return {std::sqrt(se / sx), me / mx};
}
}  // namespace

int main(int argc, char** argv) {
  const int R = argc > 1 ? std::atoi(argv[1]) : 8;
  const size_t n = argc > 2 ? (size_t)std::atoll(argv[2]) : (size_t)1 << 18;
  const rcclx_fp8_format formats[] = {RCCLX_FP8_E4M3FN, RCCLX_FP8_E4M3FNUZ, RCCLX_FP8_E5M2, RCCLX_FP8_E5M2FNUZ};
  printf("Low-precision AllReduce, %d ranks, %zu bf16 elements per rank, per-rank different data.\n", R, n);
  printf("Errors are normwise vs the float64 sum: rms = ||out - exact||_2 / ||exact||_2, max = max|out - exact| / max|exact|.\n\n");
  printf("| data | format | direct cast rms / max (ovf, uf0) | B | scale | flat rms | flat max | tree rms | tree max |\n");
  printf("|---|---|---|---|---|---|---|---|---|\n");
  for (data_kind d : {GAUSSIAN, OUTLIERS, SMALL}) {
    auto in = inputs(R, n, d);
    std::vector<double> exact(n, 0.0);
    for (int r = 0; r < R; ++r)
      for (size_t i = 0; i < n; ++i) exact[i] += rcclx_to_f32(in[r][i]);
    for (auto f : formats) {
      // Direct cast: every rank's value encoded with no scale, summed in fp32.
      std::vector<float> direct(n, 0.0f);
      size_t ovf = 0, uf0 = 0;
      for (int r = 0; r < R; ++r)
        for (size_t i = 0; i < n; ++i) {
          const float x = rcclx_to_f32(in[r][i]);
          const float q = rcclx_fp8_decode(rcclx_fp8_encode(x, f), f);
          ovf += std::fabs(x) > rcclx_fp8_max(f);
          uf0 += x != 0.0f && q == 0.0f;
          direct[i] = r ? direct[i] + q : q;
        }
      const err_stats dc = errors(exact, direct);
      for (int B : {32, 64, 128, 256})
        for (auto k : {RCCLX_SCALE_F32, RCCLX_SCALE_E8M0}) {
          const rcclx_wire w = rcclx_wire_make(f, B, k);
          err_stats es[2];
          for (int t = 0; t < 2; ++t) {
            auto out = lowp_ref_output(t ? RCCLX_LOWP_ALLREDUCE_TREE : RCCLX_LOWP_ALLREDUCE_FLAT, in, n, w, 0);
            std::vector<float> o(n);
            for (size_t i = 0; i < n; ++i) o[i] = rcclx_to_f32(out[i]);
            es[t] = errors(exact, o);
          }
          printf("| %s | %s | %.2e / %.2e (%zu, %zu) | %d | %s | %.2e | %.2e | %.2e | %.2e |\n", data_name(d),
                 rcclx_fp8_format_name(f), dc.rms, dc.max, ovf, uf0, B, k == RCCLX_SCALE_F32 ? "fp32" : "e8m0",
                 es[0].rms, es[0].max, es[1].rms, es[1].max);
        }
    }
  }
  // The full-precision path on the same data, for scale: one bf16 rounding.
  auto in = inputs(R, n, GAUSSIAN);
  std::vector<double> exact(n, 0.0);
  for (int r = 0; r < R; ++r)
    for (size_t i = 0; i < n; ++i) exact[i] += rcclx_to_f32(in[r][i]);
  auto out = lowp_ref_output(RCCLX_LOWP_ALLREDUCE_FLAT, in, n, rcclx_wire_raw(), 0);
  std::vector<float> o(n);
  for (size_t i = 0; i < n; ++i) o[i] = rcclx_to_f32(out[i]);
  const err_stats full = errors(exact, o);
  printf("\nFull precision (bf16 wire, fp32 sum, one rounding), gaussian: rms %.2e, max %.2e\n", full.rms, full.max);
  return 0;
}
