// FP8 on the GPU: chip converts vs the software path on all 2^32 inputs,
// device software path vs the CPU, quantize kernels vs the host reference.
#include <rcclx/fp8/fp8.h>
#include <cmath>
#include <cstring>
#include <random>
#include "gpu_check.h"

namespace {
const rcclx_fp8_format kFormats[] = {RCCLX_FP8_E4M3FN, RCCLX_FP8_E4M3FNUZ, RCCLX_FP8_E5M2, RCCLX_FP8_E5M2FNUZ};

struct mismatch_log {
  unsigned long long count;
  uint32_t first[8];  // input bits of the first mismatches
};

// Every float32 bit pattern: the typed/dispatched encoder (chip converts
// where they exist) against rcclx_fp8_encode_sw, on the device.
template <rcclx_fp8_format F>
__global__ void all_inputs_kernel(mismatch_log* log) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x * 2;
  for (uint64_t u = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) * 2; u < (1ull << 32); u += stride) {
    const float a = rcclx_bits_f32((uint32_t)u), b = rcclx_bits_f32((uint32_t)u + 1);
    const uint32_t fast = rcclx_fp8_encode2(a, b, F);
    const uint32_t ref = rcclx_fp8_encode_sw(a, F) | ((uint32_t)rcclx_fp8_encode_sw(b, F) << 8);
    if (fast != ref) {
      unsigned long long i = atomicAdd(&log->count, 1ull);
      if (i < 8) log->first[i] = (uint32_t)u;
    }
  }
}
__global__ void decode_kernel(rcclx_fp8_format f, float* fast, float* sw) {
  const int c = threadIdx.x;
  fast[c] = rcclx_fp8_decode((uint8_t)c, f);
  sw[c] = rcclx_fp8_decode_sw((uint8_t)c, f);
}
__global__ void encode_sw_kernel(const float* x, size_t n, rcclx_fp8_format f, uint8_t* out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = rcclx_fp8_encode_sw(x[i], f);
}

template <rcclx_fp8_format F>
unsigned long long count_all_inputs() {
  dev_buf<mismatch_log> log(1);
  GPU_REQUIRE(hipMemset(log.p, 0, sizeof(mismatch_log)));
  all_inputs_kernel<F><<<132 * 8, 256>>>(log.p);
  GPU_REQUIRE_LAUNCH();
  mismatch_log h = log.download(1)[0];
  for (unsigned long long i = 0; i < h.count && i < 8; ++i) {
    float x;
    std::memcpy(&x, &h.first[i], 4);
    WARN(rcclx_fp8_format_name(F) << ": chip vs software differ at 0x" << std::hex << h.first[i] << " (" << x
                                   << "), software path gives 0x" << (int)rcclx_fp8_encode_sw(x, F));
  }
  return h.count;
}

bool same_float(float a, float b) {
  if (a != a || b != b) return (a != a) && (b != b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}
}  // namespace

TEST_CASE("gpu fp8: chip encode == software encode on all 2^32 inputs", "[gpu][fp8]") {
  CHECK(count_all_inputs<RCCLX_FP8_E4M3FN>() == 0);
  CHECK(count_all_inputs<RCCLX_FP8_E4M3FNUZ>() == 0);
  CHECK(count_all_inputs<RCCLX_FP8_E5M2>() == 0);
  CHECK(count_all_inputs<RCCLX_FP8_E5M2FNUZ>() == 0);
}

TEST_CASE("gpu fp8: decode, chip and software, equals the CPU for all codes", "[gpu][fp8]") {
  dev_buf<float> fast(256), sw(256);
  for (auto f : kFormats) {
    decode_kernel<<<1, 256>>>(f, fast.p, sw.p);
    GPU_REQUIRE_LAUNCH();
    auto hf = fast.download(256), hs = sw.download(256);
    for (int c = 0; c < 256; ++c) {
      INFO(rcclx_fp8_format_name(f) << " code " << c);
      CHECK(same_float(hf[c], rcclx_fp8_decode_sw((uint8_t)c, f)));
      CHECK(same_float(hs[c], rcclx_fp8_decode_sw((uint8_t)c, f)));
    }
  }
}

__global__ void decode2_kernel(rcclx_fp8_format f, unsigned long long* bad) {
  const uint32_t two = blockIdx.x * blockDim.x + threadIdx.x;  // every pair of codes
  float lo, hi;
  rcclx_fp8_decode2(two | 0xabcd0000u, f, &lo, &hi);  // bits above 15 are ignored
  const float wlo = rcclx_fp8_decode_sw((uint8_t)two, f), whi = rcclx_fp8_decode_sw((uint8_t)(two >> 8), f);
  const bool ok_lo = (lo != lo) ? (wlo != wlo) : rcclx_f32_bits(lo) == rcclx_f32_bits(wlo);
  const bool ok_hi = (hi != hi) ? (whi != whi) : rcclx_f32_bits(hi) == rcclx_f32_bits(whi);
  if (!ok_lo || !ok_hi) atomicAdd(bad, 1ull);
}

TEST_CASE("gpu fp8: pair decode == software decode for all 65536 code pairs", "[gpu][fp8]") {
  dev_buf<unsigned long long> bad(1);
  for (auto f : kFormats) {
    GPU_REQUIRE(hipMemset(bad.p, 0, 8));
    decode2_kernel<<<256, 256>>>(f, bad.p);
    GPU_REQUIRE_LAUNCH();
    INFO(rcclx_fp8_format_name(f));
    CHECK(bad.download(1)[0] == 0);
  }
}

TEST_CASE("gpu fp8: device software encode == CPU encode on 2^24 inputs", "[gpu][fp8]") {
  const size_t n = (size_t)1 << 24;
  std::vector<float> x(n);
  std::mt19937 rng(42);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = (i & 1) ? (uint32_t)rng() : (uint32_t)(i * 257u);  // random and a sweep of every exponent
    std::memcpy(&x[i], &u, 4);
  }
  dev_buf<float> dx(n);
  dev_buf<uint8_t> out(n);
  dx.upload(x);
  for (auto f : kFormats) {
    encode_sw_kernel<<<1024, 256>>>(dx.p, n, f, out.p);
    GPU_REQUIRE_LAUNCH();
    auto h = out.download(n);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += h[i] != rcclx_fp8_encode_sw(x[i], f);
    INFO(rcclx_fp8_format_name(f));
    CHECK(bad == 0);
  }
}

template <typename T>
void quantize_matches_host(size_t n, rcclx_fp8_format f, int B, rcclx_scale_kind k, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<T> in(n);
  for (size_t i = 0; i < n; ++i) {
    float v = nd(rng) * std::ldexp(1.0f, (int)((i / B) % 7) * 2 - 6);
    if (i % 9973 == 5) v *= 100.0f;  // rare outliers
    if (i % 50021 == 7) v = (i & 8) ? -INFINITY : INFINITY;  // non-finite: stored as NaN,
    if (i % 70001 == 11) v = NAN;                            // the block's others as usual
    if ((i / B) % 997 == 3) v = 0.0f;                        // all-zero blocks
    in[i] = rcclx_from_f32<T>(v);
  }
  const size_t bytes = rcclx_fp8_packed_bytes(n, B, k);
  std::vector<uint8_t> ref(bytes, 0);
  rcclx_fp8_pack_host(in.data(), n, f, B, k, ref.data());
  std::vector<T> back_ref(n);
  rcclx_fp8_unpack_host(ref.data(), n, f, B, k, back_ref.data());

  dev_buf<T> din(n), dout(n);
  dev_buf<uint8_t> chunk(bytes);
  din.upload(in);
  const rcclx_dtype dt = rcclx_dtype_of<T>::value;
  REQUIRE(rcclx_fp8_quantize(din.p, dt, n, f, B, k, chunk.p, 0) == RCCLX_SUCCESS);
  GPU_REQUIRE(hipDeviceSynchronize());
  auto got = chunk.download(bytes);
  const size_t sb = rcclx_fp8_nblocks(n, B) * rcclx_fp8_scale_size(k), pay = rcclx_fp8_scales_bytes(n, B, k);
  INFO("n=" << n << " B=" << B << " fmt=" << rcclx_fp8_format_name(f) << " kind=" << k << " dtype=" << rcclx_dtype_name(dt));
  CHECK(std::memcmp(got.data(), ref.data(), sb) == 0);             // scales
  CHECK(std::memcmp(got.data() + pay, ref.data() + pay, n) == 0);  // payload
  REQUIRE(rcclx_fp8_dequantize(chunk.p, n, f, B, k, dout.p, dt, 0) == RCCLX_SUCCESS);
  GPU_REQUIRE(hipDeviceSynchronize());
  auto back = dout.download(n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += !same_float(rcclx_to_f32(back[i]), rcclx_to_f32(back_ref[i]));
  CHECK(bad == 0);
}

TEST_CASE("gpu fp8: quantize/dequantize kernels == host reference, bitwise", "[gpu][fp8]") {
  std::mt19937 rng(17);
  for (auto f : kFormats)
    for (int B : {32, 64, 128, 256})
      for (auto k : {RCCLX_SCALE_F32, RCCLX_SCALE_E8M0})
        for (size_t n : {(size_t)1, (size_t)7, (size_t)B + 3, (size_t)1000003}) {
          quantize_matches_host<rcclx_bf16>(n, f, B, k, rng);
          quantize_matches_host<rcclx_f16>(n, f, B, k, rng);
          quantize_matches_host<float>(n, f, B, k, rng);
        }
}
