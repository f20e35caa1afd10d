// Independent reference for small float formats, written from the format
// tables (not from rcclx's code): decode by ldexp on the fields, encode by
// nearest-value search over the sorted finite values with ties to the even
// code, saturating.  Slow and obviously right; used by the CPU tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

struct oracle_format {
  int mbits, bias;
  bool fnuz;         // 0x80 is the only NaN, no -0, no Inf
  bool e4m3fn;       // OCP E4M3: S.1111.111 is NaN, no Inf
  bool ieee_special; // top exponent is Inf/NaN (E5M2, fp16)
  int bits;          // 8 or 16
};

static inline double oracle_decode(uint32_t c, const oracle_format& f) {
  const uint32_t signbit = 1u << (f.bits - 1);
  const int ebits = f.bits - 1 - f.mbits;
  const uint32_t emax = (1u << ebits) - 1;
  const bool neg = (c & signbit) != 0;
  const uint32_t e = (c >> f.mbits) & emax, m = c & ((1u << f.mbits) - 1);
  if (f.fnuz && c == signbit) return NAN;
  if (f.e4m3fn && e == emax && m == (1u << f.mbits) - 1) return NAN;
  if (f.ieee_special && e == emax) return m ? NAN : (neg ? -INFINITY : INFINITY);
  double v = e == 0 ? std::ldexp((double)m, 1 - f.bias - f.mbits)
                    : std::ldexp(1.0 + std::ldexp((double)m, -f.mbits), (int)e - f.bias);
  return neg ? -v : v;
}

struct oracle_table {
  oracle_format f;
  std::vector<double> vals;   // non-negative finite values, ascending
  std::vector<uint32_t> codes; // their codes
  explicit oracle_table(oracle_format fmt) : f(fmt) {
    const uint32_t half = 1u << (f.bits - 1);
    for (uint32_t c = 0; c < half; ++c) {
      double v = oracle_decode(c, f);
      if (std::isfinite(v)) { vals.push_back(v); codes.push_back(c); }
    }
  }
  double max() const { return vals.back(); }
  // Saturating RNE encode; nan_code for NaN.
  uint32_t encode(float x, uint32_t nan_code, bool saturate = true) const {
    const uint32_t signbit = 1u << (f.bits - 1);
    if (std::isnan(x)) return nan_code;
    const bool neg = std::signbit(x);
    const double a = std::fabs((double)x);
    uint32_t code;
    if (a >= max()) {
      // Between max and the (virtual) next value, RNE may still give max.
      const double next = max() + (max() - vals[vals.size() - 2]);
      const double mid = (max() + next) / 2;
      bool overflow = std::isinf(a) || a > mid || (a == mid && (codes.back() & 1));
      if (overflow && !saturate) return neg ? (signbit | (codes.back() + 1)) : codes.back() + 1;
      code = codes.back();
    } else {
      size_t hi = std::upper_bound(vals.begin(), vals.end(), a) - vals.begin();
      size_t lo = hi - 1;
      double dlo = a - vals[lo], dhi = vals[hi] - a;
      if (dlo < dhi) code = codes[lo];
      else if (dhi < dlo) code = codes[hi];
      else code = (codes[lo] & 1) ? codes[hi] : codes[lo];
    }
    if (code == 0) return (f.fnuz || !neg) ? 0 : signbit;
    return neg ? (code | signbit) : code;
  }
  // Every value, every midpoint, and the float32 neighbours of each.
  std::vector<float> boundary_inputs() const {
    std::vector<float> xs;
    auto add = [&](double d) {
      float v = (float)d;
      xs.push_back(v);
      xs.push_back(std::nextafterf(v, INFINITY));
      xs.push_back(std::nextafterf(v, -INFINITY));
    };
    for (size_t i = 0; i < vals.size(); ++i) {
      add(vals[i]);
      double next = i + 1 < vals.size() ? vals[i + 1] : vals[i] + (vals[i] - vals[i - 1]);
      add((vals[i] + next) / 2);
    }
    size_t n = xs.size();
    for (size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
    return xs;
  }
};

static inline oracle_format oracle_e4m3fn() { return {3, 7, false, true, false, 8}; }
static inline oracle_format oracle_e4m3fnuz() { return {3, 8, true, false, false, 8}; }
static inline oracle_format oracle_e5m2() { return {2, 15, false, false, true, 8}; }
static inline oracle_format oracle_e5m2fnuz() { return {2, 16, true, false, false, 8}; }
static inline oracle_format oracle_fp16() { return {10, 15, false, false, true, 16}; }
