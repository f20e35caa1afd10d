// Host reference of the low-precision collectives (rcclx/fp8/collectives.h):
// the exact bits every rank must output, built from the scalar/pack pieces
// of rcclx/fp8/pack.h, and the error bound against the exact (float64)
// result that the format allows.  Shared by the CPU tests (bounds), the GPU
// tests (bitwise equality with the kernels) and the accuracy report.
#pragma once
#include <rcclx/fp8/lowp_plan.h>
#include <cmath>
#include <cstdint>
#include <vector>

// What a rank publishes for a segment of m elements, as the floats a reader
// decodes: raw -> the values; fp8 -> decode(code) * scale (one float
// multiply, as rcclx_mul_rn on the device).
template <typename T>
std::vector<float> lowp_ref_wire(const T* x, size_t m, rcclx_wire w) {
  std::vector<float> out(m);
  if (w.format == RCCLX_WIRE_RAW) {
    for (size_t i = 0; i < m; ++i) out[i] = rcclx_to_f32(x[i]);
    return out;
  }
  const rcclx_fp8_format f = (rcclx_fp8_format)w.format;
  std::vector<uint8_t> chunk(rcclx_fp8_packed_bytes(m, w.block_size, w.scale));
  rcclx_fp8_pack_host(x, m, f, w.block_size, w.scale, chunk.data());
  const uint8_t* payload = chunk.data() + rcclx_fp8_scales_bytes(m, w.block_size, w.scale);
  for (size_t i = 0; i < m; ++i) {
    const float s = rcclx_fp8_scale_from_stored(rcclx_fp8_load_scale(chunk.data(), i / w.block_size, w.scale), w.scale);
    out[i] = rcclx_fp8_decode(payload[i], f) * s;
  }
  return out;
}

// Sum in rank order 0..R-1 in float, as the kernels do.
static inline std::vector<float> lowp_ref_sum(const std::vector<std::vector<float>>& parts) {
  std::vector<float> acc = parts[0];
  for (size_t r = 1; r < parts.size(); ++r)
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = acc[i] + parts[r][i];
  return acc;
}

// Tree: the owner re-publishes the fp32 sum on the wire (raw: rounded to T).
template <typename T>
std::vector<float> lowp_ref_republish(const std::vector<float>& s, rcclx_wire w) {
  if (w.format == RCCLX_WIRE_RAW) {
    std::vector<float> out(s.size());
    for (size_t i = 0; i < s.size(); ++i) out[i] = rcclx_to_f32(rcclx_from_f32<T>(s[i]));
    return out;
  }
  return lowp_ref_wire<float>(s.data(), s.size(), w);
}

template <typename T>
std::vector<T> lowp_ref_round(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = rcclx_from_f32<T>(v[i]);
  return out;
}

// Expected output of rank `r` for one collective; in[q] is rank q's input
// (count * S elements), count as in rcclx_lowp_collective.  Rank r matters
// only for ReduceScatter and AllToAll.
template <typename T>
std::vector<T> lowp_ref_output(rcclx_lowp_kind kind, const std::vector<std::vector<T>>& in, size_t count,
                               rcclx_wire w, int r) {
  const int R = (int)in.size();
  std::vector<std::vector<float>> parts(R);
  switch (kind) {
    case RCCLX_LOWP_ALLREDUCE_FLAT:
    case RCCLX_LOWP_ALLREDUCE_TREE: {
      for (int q = 0; q < R; ++q) parts[q] = lowp_ref_wire(in[q].data(), count, w);
      std::vector<float> s = lowp_ref_sum(parts);
      if (kind == RCCLX_LOWP_ALLREDUCE_TREE) s = lowp_ref_republish<T>(s, w);
      return lowp_ref_round<T>(s);
    }
    case RCCLX_LOWP_REDUCE_SCATTER:
      for (int q = 0; q < R; ++q) parts[q] = lowp_ref_wire(in[q].data() + (size_t)r * count, count, w);
      return lowp_ref_round<T>(lowp_ref_sum(parts));
    default: {  // ALLGATHER: segment q from rank q; ALLTOALL: rank q's segment r
      std::vector<T> out;
      for (int q = 0; q < R; ++q) {
        const T* src = in[q].data() + (kind == RCCLX_LOWP_ALLTOALL ? (size_t)r * count : 0);
        std::vector<T> seg = lowp_ref_round<T>(lowp_ref_wire(src, count, w));
        out.insert(out.end(), seg.begin(), seg.end());
      }
      return out;
    }
  }
}

// ---- error bound of the AllReduce against the exact sum ---------------------
// Quantizing x with block scale s (rcclx/fp8/pack.h): the encode rounds
// x * inv to nearest in the format, so in the normal range the error is at
// most half an ulp, 2^-(M+1) |x|; below it, half the subnormal step,
// 2^-(bias+M) in the scaled domain, i.e. 2^-(bias+M) * s.  The three float
// roundings around it (x * inv, inv vs 1/s, decode * s) add < 2^-21 |x|.
// So  |q(x) - x| <= (2^-(M+1) + 2^-21) |x| + 2^-(bias+M) s,  with
// s <= max(absmax / fmax, 2^-126) (fp32 scales, rounded: +2^-23) or
// s < 2 absmax / fmax (E8M0, a power of two >= absmax / fmax).
// The fp32 sum of R terms adds <= R 2^-24 sum|q(x_r)|; the tree's second
// quantization adds the same bound for the sum S (its block absmax taken
// over S); the final rounding to T adds half an ulp of T (2^-8 bf16, 2^-11
// fp16 plus 2^-25 absolute for its subnormals, 2^-24 fp32).
struct lowp_bound_params {
  double rel, abs_per_scale;  // 2^-(M+1) + 2^-21, 2^-(bias+M)
  double fmax;
  bool e8m0;
};
static inline lowp_bound_params lowp_bound_params_of(rcclx_wire w) {
  lowp_bound_params p{};
  if (w.format == RCCLX_WIRE_RAW) return p;
  const rcclx_fp8_format f = (rcclx_fp8_format)w.format;
  p.rel = std::ldexp(1.0, -(rcclx_fp8_mant_bits(f) + 1)) + std::ldexp(1.0, -21);
  p.abs_per_scale = std::ldexp(1.0, -(rcclx_fp8_bias(f) + rcclx_fp8_mant_bits(f)));
  p.fmax = rcclx_fp8_max(f);
  p.e8m0 = w.scale == RCCLX_SCALE_E8M0;
  return p;
}
// Per-element bound of quantizing v (grouped in blocks of B).
static inline std::vector<double> lowp_quant_bound(const std::vector<double>& v, rcclx_wire w) {
  std::vector<double> b(v.size(), 0.0);
  if (w.format == RCCLX_WIRE_RAW) return b;
  const lowp_bound_params p = lowp_bound_params_of(w);
  for (size_t g = 0; g < v.size(); g += (size_t)w.block_size) {
    const size_t e = std::min(v.size(), g + (size_t)w.block_size);
    double amax = 0.0;
    for (size_t i = g; i < e; ++i) amax = std::max(amax, std::fabs(v[i]));
    const double s = std::max(p.e8m0 ? 2.0 * amax / p.fmax : amax / p.fmax * (1 + 1e-6), std::ldexp(1.0, -126));
    for (size_t i = g; i < e; ++i) b[i] = p.rel * std::fabs(v[i]) + p.abs_per_scale * s;
  }
  return b;
}
template <typename T> double lowp_out_rel() { return sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -8); }
template <> inline double lowp_out_rel<rcclx_f16>() { return std::ldexp(1.0, -11); }

// Bound on |out[i] - exact[i]| for an AllReduce of inputs in[q] (as T).
template <typename T>
std::vector<double> lowp_allreduce_bound(rcclx_lowp_kind kind, const std::vector<std::vector<T>>& in, size_t count,
                                         rcclx_wire w, std::vector<double>* exact_out) {
  const int R = (int)in.size();
  std::vector<double> exact(count, 0.0), err(count, 0.0), mag(count, 0.0);
  for (int q = 0; q < R; ++q) {
    std::vector<double> x(count);
    for (size_t i = 0; i < count; ++i) x[i] = rcclx_to_f32(in[q][i]);
    std::vector<double> qb = lowp_quant_bound(x, w);
    for (size_t i = 0; i < count; ++i) {
      exact[i] += x[i];
      err[i] += qb[i];
      mag[i] += std::fabs(x[i]) + qb[i];
    }
  }
  for (size_t i = 0; i < count; ++i) err[i] += R * std::ldexp(1.0, -24) * mag[i];
  if (kind == RCCLX_LOWP_ALLREDUCE_TREE) {
    std::vector<double> s(count);
    for (size_t i = 0; i < count; ++i) s[i] = std::fabs(exact[i]) + err[i];
    std::vector<double> qb = lowp_quant_bound(s, w);
    for (size_t i = 0; i < count; ++i) err[i] += qb[i];
  }
  const double sub = sizeof(T) == 2 ? std::ldexp(1.0, -25) : std::ldexp(1.0, -150);
  for (size_t i = 0; i < count; ++i) err[i] += lowp_out_rel<T>() * (std::fabs(exact[i]) + err[i]) + sub;
  if (exact_out) *exact_out = exact;
  return err;
}
