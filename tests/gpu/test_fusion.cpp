// The fusion examples on the GPU, 2 and 8 ranks (virtual ranks on one GPU or
// real GPUs: ranks.h): GEMM + AllReduce three ways (fused persistent kernel
// with tile publish/wait, epilogue into the registered buffer + zero-copy
// AllReduce, unfused) and AllReduce + residual + RMSNorm (fused vs
// unfused).  float64 references on fresh random inputs, poisoned outputs,
// bitwise equality across ranks and across the ways.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include "../../examples/allreduce_rmsnorm.h"
#include "../../examples/gemm_allreduce.h"
#include "../../examples/gemm_allreduce_fp8.h"
#include "gpu_check.h"
#include "ll_state.h"
#include "ranks.h"

namespace {
std::vector<rcclx_bf16> random_bf16(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<rcclx_bf16> v(n);
  for (auto& x : v) x = rcclx_from_f32<rcclx_bf16>(nd(rng));
  return v;
}
template <typename T>
T* to_device(const std::vector<T>& h) {
  T* p = nullptr;
  GPU_REQUIRE(hipMalloc((void**)&p, h.size() * sizeof(T) + 64));
  GPU_REQUIRE(hipMemcpy(p, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice));
  GPU_REQUIRE(hipDeviceSynchronize());  // a pageable copy may return before its DMA lands
  return p;
}
template <typename T>
T* poisoned(size_t n) {
  T* p = nullptr;
  GPU_REQUIRE(hipMalloc((void**)&p, n * sizeof(T) + 64));
  GPU_REQUIRE(hipMemset(p, 0xFF, n * sizeof(T) + 64));
  GPU_REQUIRE(hipDeviceSynchronize());  // the rank streams do not wait for the null stream
  return p;
}
template <typename T>
std::vector<T> to_host(const T* p, size_t n) {
  std::vector<T> h(n);
  GPU_REQUIRE(hipMemcpy(h.data(), p, n * sizeof(T), hipMemcpyDeviceToHost));
  return h;
}
bool same_bits(const std::vector<rcclx_bf16>& a, const std::vector<rcclx_bf16>& b) {
  return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * 2) == 0;
}
// Every rank's kernels finished (checked) and recorded no error; a watchdog
// record (RCCLX_WATCHDOG_MS) is printed: which rank's slot / tile waited on
// which peer at which epoch.
void require_clean(rank_set& rs) {
  GPU_REQUIRE(rs.sync());
  int bad = 0;
  for (int r = 0; r < rs.n; ++r) {
    rcclx_error_record e{};
    const rcclx_status st = rcclx_comm_check(&rs.comm[r], &e);
    INFO("rank " << r << ": " << rcclx_status_string(st) << " (rank " << e.rank << ", slot/tile " << e.block << ", waited on "
                 << e.peer << ", epoch " << e.epoch << ")");
    CHECK(st == RCCLX_SUCCESS);
    bad += st != RCCLX_SUCCESS;
  }
  REQUIRE(bad == 0);
}
// Where a hang or a watchdog stop happened, in the log as it happens.
void progress(const char* what, int R, long a, long b, long c) {
  fprintf(stderr, "[fusion] %s R=%d %ld %ld %ld\n", what, R, a, b, c);
  fflush(stderr);
}

void gemm_case(rank_set& rs, int M, int N, int K, int repeat, std::mt19937& rng,
               rcclx_wire w = rcclx_wire_make(RCCLX_FP8_E4M3FN, 64, RCCLX_SCALE_F32)) {
  const int R = rs.n;
  std::vector<std::vector<rcclx_bf16>> X(R), W(R);
  std::vector<rcclx_bf16*> dX(R), dW(R), y(R), o_fused(R), o_epi(R), o_unf(R), o_f8(R), o_lp(R);
  for (int it = 0; it < repeat; ++it) {
    progress("gemm M N K", R, M, N, K);
    for (int r = 0; r < R; ++r) {
      X[r] = random_bf16((size_t)M * K, rng, 1.0f);
      W[r] = random_bf16((size_t)K * N, rng, 0.05f);
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      dX[r] = to_device(X[r]);
      dW[r] = to_device(W[r]);
      y[r] = poisoned<rcclx_bf16>((size_t)M * N);
      o_fused[r] = poisoned<rcclx_bf16>((size_t)M * N);
      o_epi[r] = poisoned<rcclx_bf16>((size_t)M * N);
      o_unf[r] = poisoned<rcclx_bf16>((size_t)M * N);
      o_f8[r] = poisoned<rcclx_bf16>((size_t)M * N);
      o_lp[r] = poisoned<rcclx_bf16>((size_t)M * N);
    }
    const size_t n = (size_t)M * N;
    for (int r = 0; r < R; ++r)  // fused
      REQUIRE(gemm_allreduce_fused(&rs.comm[r], dX[r], dW[r], o_fused[r], M, N, K, rs.stream[r]) == RCCLX_SUCCESS);
    for (int r = 0; r < R; ++r) {  // epilogue into the registered input, zero-copy AllReduce
      rcclx_bf16* in = (rcclx_bf16*)rcclx_comm_input(&rs.comm[r]);
      REQUIRE(gemm_bf16(dX[r], dW[r], in, M, N, K, rs.on(r)) == RCCLX_SUCCESS);
      REQUIRE(rcclx_allreduce(&rs.comm[r], in, o_epi[r], n, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[r]) ==
              RCCLX_SUCCESS);
    }
    for (int r = 0; r < R; ++r) {  // unfused: GEMM to its own buffer, AllReduce copies it in
      REQUIRE(gemm_bf16(dX[r], dW[r], y[r], M, N, K, rs.on(r)) == RCCLX_SUCCESS);
      REQUIRE(rcclx_allreduce(&rs.comm[r], y[r], o_unf[r], n, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[r]) ==
              RCCLX_SUCCESS);
    }
    for (int r = 0; r < R; ++r)  // FP8 fused: the epilogue quantizes its tile into the registered buffer
      REQUIRE(gemm_allreduce_fused_fp8(&rs.comm[r], dX[r], dW[r], o_f8[r], M, N, K, w, rs.stream[r]) == RCCLX_SUCCESS);
    for (int r = 0; r < R; ++r) {  // its unfused twin: the same GEMM, then the low-precision AllReduce
      REQUIRE(gemm_bf16(dX[r], dW[r], y[r], M, N, K, rs.on(r)) == RCCLX_SUCCESS);
      REQUIRE(rcclx_lowp_allreduce(&rs.comm[r], y[r], o_lp[r], n, RCCLX_BFLOAT16, RCCLX_ALGO_FLAT, w, rs.stream[r]) ==
              RCCLX_SUCCESS);
    }
    require_clean(rs);
    // float64 reference; bound: Y_r rounded once to bf16 (2^-8 |Y_r|) after
    // K fp32 additions of exact products on the matrix unit (K 2^-23 sum|x w|:
    // its adds may truncate rather than round), fp32 sum of R terms (R 2^-24),
    // one final rounding.
    const std::vector<rcclx_bf16> ref0 = to_host(o_unf[0], n);
    size_t bad = 0;
    for (size_t i = 0; i < n && bad < 5; ++i) {
      const size_t row = i / N, col = i % N;
      double exact = 0, lim = 0;
      for (int r = 0; r < R; ++r) {
        double yr = 0, ar = 0;
        for (int k = 0; k < K; ++k) {
          const double p = (double)rcclx_to_f32(X[r][row * K + k]) * rcclx_to_f32(W[r][(size_t)k * N + col]);
          yr += p;
          ar += std::fabs(p);
        }
        exact += yr;
        lim += std::ldexp(1.0, -8) * std::fabs(yr) + (2.0 * K + R) * std::ldexp(1.0, -24) * ar;
      }
      lim += std::ldexp(1.0, -8) * (std::fabs(exact) + lim) + 1e-30;
      if (!(std::fabs(rcclx_to_f32(ref0[i]) - exact) <= lim)) {
        WARN("M " << M << " i " << i << " got " << rcclx_to_f32(ref0[i]) << " want " << exact << " lim " << lim);
        ++bad;
      }
    }
    INFO("R " << R << " M " << M << " N " << N << " K " << K << " iteration " << it);
    CHECK(bad == 0);
    // FP8: bitwise the unfused low-precision result on every rank, and within
    // the quantization bound: each rank's group loses at most 2^-4 of its
    // absmax (e4m3; 2^-3 covers e5m2's 2^-3 too with the bf16 roundings),
    // plus the final rounding.
    const std::vector<rcclx_bf16> lp0 = to_host(o_lp[0], n);
    size_t bad8 = 0;
    const int B = w.block_size;
    const double q = w.format == RCCLX_FP8_E5M2 || w.format == RCCLX_FP8_E5M2FNUZ ? std::ldexp(1.0, -2) : std::ldexp(1.0, -3);
    for (size_t g0 = 0; g0 < n && bad8 < 5; g0 += B) {
      std::vector<double> exact(B, 0.0);
      double amax_sum = 0;
      for (int r = 0; r < R; ++r) {
        double amax = 0;
        for (int i = 0; i < B; ++i) {
          const size_t row = (g0 + i) / N, col = (g0 + i) % N;
          double yr = 0;
          for (int k = 0; k < K; ++k)
            yr += (double)rcclx_to_f32(X[r][row * K + k]) * rcclx_to_f32(W[r][(size_t)k * N + col]);
          exact[i] += yr;
          amax = std::max(amax, std::fabs(yr));
        }
        amax_sum += amax;
      }
      for (int i = 0; i < B; ++i) {
        const double lim = q * amax_sum * 1.01 + std::ldexp(1.0, -7) * std::fabs(exact[i]) + 1e-30;
        if (!(std::fabs(rcclx_to_f32(lp0[g0 + i]) - exact[i]) <= lim)) {
          WARN("fp8 M " << M << " i " << g0 + i << " got " << rcclx_to_f32(lp0[g0 + i]) << " want " << exact[i]);
          ++bad8;
        }
      }
    }
    CHECK(bad8 == 0);
    for (int r = 0; r < R; ++r) {
      CHECK(same_bits(to_host(o_unf[r], n), ref0));
      CHECK(same_bits(to_host(o_epi[r], n), ref0));
      CHECK(same_bits(to_host(o_fused[r], n), ref0));
      CHECK(same_bits(to_host(o_lp[r], n), lp0));
      CHECK(same_bits(to_host(o_f8[r], n), lp0));
      for (auto p : {dX[r], dW[r], y[r], o_fused[r], o_epi[r], o_unf[r], o_f8[r], o_lp[r]}) (void)hipFree(p);
    }
  }
}

// Host mirror of the fused kernel's exactly reproducible parts.
struct rms_ref {
  std::vector<rcclx_bf16> residual;  // bitwise: bf16(bf16(fp32 rank-order sum) + residual)
  std::vector<double> out;           // float64 of RMSNorm(new residual) * weight
  std::vector<double> tol;
};
rms_ref rmsnorm_reference(const std::vector<std::vector<rcclx_bf16>>& x, const std::vector<rcclx_bf16>& res,
                          const std::vector<rcclx_bf16>& w, size_t T, size_t H, float eps) {
  const int R = (int)x.size();
  rms_ref ref;
  ref.residual.resize(T * H);
  ref.out.resize(T * H);
  ref.tol.resize(T * H);
  for (size_t t = 0; t < T; ++t) {
    double ss_exact = 0, err2 = 0;
    std::vector<double> rn(H), e_r(H);
    for (size_t h = 0; h < H; ++h) {
      const size_t i = t * H + h;
      float s = rcclx_to_f32(x[0][i]);
      double exact = s, abs_sum = std::fabs(s);
      for (int r = 1; r < R; ++r) {
        s = s + rcclx_to_f32(x[r][i]);
        exact += rcclx_to_f32(x[r][i]);
        abs_sum += std::fabs(rcclx_to_f32(x[r][i]));
      }
      const float sb = rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(s));
      ref.residual[i] = rcclx_from_f32<rcclx_bf16>(sb + rcclx_to_f32(res[i]));
      const double r_exact = exact + rcclx_to_f32(res[i]);
      rn[h] = r_exact;
      e_r[h] = std::ldexp(1.0, -8) * (std::fabs(exact) + std::fabs(r_exact)) * 1.01 + R * std::ldexp(1.0, -24) * abs_sum;
      ss_exact += r_exact * r_exact;
      err2 += e_r[h] * e_r[h];
    }
    const double inv = 1.0 / std::sqrt(ss_exact / H + eps);
    const double d_inv = std::sqrt(err2) / std::sqrt(ss_exact + 1e-30) * 1.01 + 1e-5;  // relative error of inv
    for (size_t h = 0; h < H; ++h) {
      const double wv = rcclx_to_f32(w[h]);
      ref.out[t * H + h] = rn[h] * inv * wv;
      ref.tol[t * H + h] = std::fabs(wv) * inv * (e_r[h] + std::fabs(rn[h]) * d_inv) +
                           std::ldexp(1.0, -8) * std::fabs(ref.out[t * H + h]) * 1.01 + 1e-6;
    }
  }
  return ref;
}

// One fused call of the given shape (RCCLX_ALGO_FLAT: one-shot, TREE:
// two-shot, AUTO) on fresh inputs, against the unfused sequence (bitwise)
// and float64.
void rmsnorm_case(rank_set& rs, size_t T, size_t H, bool fp8, rcclx_algo algo, std::mt19937& rng) {
  const int R = rs.n;
  const float eps = 1e-6f;
  std::vector<std::vector<rcclx_bf16>> x(R);
  const auto res = random_bf16(T * H, rng, 1.0f), w = random_bf16(H, rng, 1.0f);
  const size_t n = T * H;
  progress(fp8 ? "rmsnorm+fp8 T H algo" : "rmsnorm T H algo", R, (long)T, (long)H, (long)algo);
  std::vector<rcclx_bf16*> d_res(R), d_w(R), res_f(R), out_f(R), res_u(R), out_u(R), s_all(R);
  std::vector<uint8_t*> q_f(R), q_u(R);
  std::vector<float*> sc_f(R), sc_u(R);
  for (int r = 0; r < R; ++r) {
    x[r] = random_bf16(n, rng, 1.0f);
    GPU_REQUIRE(hipSetDevice(rs.dev[r]));
    GPU_REQUIRE(hipMemcpy(rcclx_comm_input(&rs.comm[r]), x[r].data(), n * 2, hipMemcpyHostToDevice));
    d_res[r] = to_device(res);
    d_w[r] = to_device(w);
    res_f[r] = poisoned<rcclx_bf16>(n); out_f[r] = poisoned<rcclx_bf16>(n);
    res_u[r] = poisoned<rcclx_bf16>(n); out_u[r] = poisoned<rcclx_bf16>(n); s_all[r] = poisoned<rcclx_bf16>(n);
    q_f[r] = fp8 ? poisoned<uint8_t>(n) : nullptr; q_u[r] = fp8 ? poisoned<uint8_t>(n) : nullptr;
    sc_f[r] = fp8 ? poisoned<float>(T) : nullptr; sc_u[r] = fp8 ? poisoned<float>(T) : nullptr;
  }
  for (int r = 0; r < R; ++r)
    REQUIRE(allreduce_rmsnorm(&rs.comm[r], T, H, d_res[r], res_f[r], d_w[r], eps, out_f[r], q_f[r], sc_f[r], algo,
                              rs.stream[r]) == RCCLX_SUCCESS);
  for (int r = 0; r < R; ++r) {  // unfused: zero-copy AllReduce, then add + RMSNorm
    REQUIRE(rcclx_allreduce(&rs.comm[r], rcclx_comm_input(&rs.comm[r]), s_all[r], n, RCCLX_BFLOAT16, RCCLX_SUM,
                            RCCLX_ALGO_AUTO, rs.stream[r]) == RCCLX_SUCCESS);
    rmsnorm_unfused_kernel<<<(unsigned)std::min<size_t>(T, 1024), RMSNORM_THREADS, 0, rs.on(r)>>>(
        s_all[r], T, H, d_res[r], res_u[r], d_w[r], eps, out_u[r], q_u[r], sc_u[r]);
    GPU_REQUIRE(hipGetLastError());
  }
  require_clean(rs);
  const rms_ref ref = rmsnorm_reference(x, res, w, T, H, eps);
  INFO("R " << R << " tokens " << T << " hidden " << H << " fp8 " << fp8 << " algo " << rcclx_algo_name(algo));
  const auto out0 = to_host(out_f[0], n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (!(std::fabs(rcclx_to_f32(out0[i]) - ref.out[i]) <= ref.tol[i])) {
      if (bad < 4) WARN("i " << i << " got " << rcclx_to_f32(out0[i]) << " want " << ref.out[i] << " tol " << ref.tol[i]);
      ++bad;
    }
  CHECK(bad == 0);
  CHECK(same_bits(to_host(res_f[0], n), ref.residual));
  for (int r = 0; r < R; ++r) {
    CHECK(same_bits(to_host(out_f[r], n), out0));  // every rank, and fused == unfused
    CHECK(same_bits(to_host(out_u[r], n), out0));
    CHECK(same_bits(to_host(res_f[r], n), ref.residual));
    CHECK(same_bits(to_host(res_u[r], n), ref.residual));
    if (fp8) {  // per-token scale = absmax / 448, codes = encode(out / scale), on every rank
      const auto q = to_host(q_f[r], n), qu = to_host(q_u[r], n);
      const auto sc = to_host(sc_f[r], T);
      size_t badq = memcmp(q.data(), qu.data(), n) != 0;
      for (size_t t = 0; t < T; ++t) {
        float amax = 0;
        for (size_t h = 0; h < H; ++h) amax = std::max(amax, std::fabs(rcclx_to_f32(out0[t * H + h])));
        const rcclx_fp8_scale s = rcclx_fp8_make_scale(amax, RCCLX_FP8_E4M3FN, RCCLX_SCALE_F32);
        badq += sc[t] != s.scale;
        for (size_t h = 0; h < H; ++h)
          badq += q[t * H + h] != rcclx_fp8_encode(rcclx_to_f32(out0[t * H + h]) * s.inv, RCCLX_FP8_E4M3FN);
      }
      CHECK(badq == 0);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (auto p : {d_res[r], d_w[r], res_f[r], out_f[r], res_u[r], out_u[r], s_all[r]}) (void)hipFree(p);
    if (fp8) { (void)hipFree(q_f[r]); (void)hipFree(q_u[r]); (void)hipFree(sc_f[r]); (void)hipFree(sc_u[r]); }
  }
}
}  // namespace

TEST_CASE("fusion: GEMM + AllReduce, fused == epilogue+zero-copy == unfused, vs float64", "[gpu][fusion]") {
  std::mt19937 rng(31);
  for (int R : {2, 8}) {
    rank_set rs;
    REQUIRE(rs.init(R) == RCCLX_SUCCESS);
    gemm_case(rs, 1, 128, 64, 1, rng);
    gemm_case(rs, 5, 320, 96, 1, rng, rcclx_wire_make(RCCLX_FP8_E5M2, 32, RCCLX_SCALE_E8M0));
    gemm_case(rs, 64, 256, 64, 1, rng);
    gemm_case(rs, 100, 192, 32, 1, rng, rcclx_wire_make(RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_F32));  // two row tiles, partial
    gemm_case(rs, 7, 4096, 64, 10, rng);  // 64 tiles per call, 10 calls: tile epochs advance
    gemm_case(rs, 3, 128, 200, 1, rng);   // 4 k stages (both register stages twice), the last 8 deep
    gemm_case(rs, 130, 64, 136, 1, rng, rcclx_wire_make(RCCLX_FP8_E4M3FN, 64, RCCLX_SCALE_E8M0));  // 3 row tiles
    gemm_case(rs, 17, 64, 40, 1, rng);    // one partial k stage
    gemm_case(rs, 130, 4096, 64, 2, rng);  // 192 tiles: blocks of the persistent grid take several
  }
  // Shapes the tile code cannot take are refused before any launch.
  rcclx_bf16* p = poisoned<rcclx_bf16>(1024);
  CHECK(gemm_bf16(p, p, p, 1, 64, 12, 0) == RCCLX_ERR_INVALID_COUNT);  // K not a multiple of 8
  CHECK(gemm_bf16(p, p, p, 1, 96, 64, 0) == RCCLX_ERR_INVALID_COUNT);  // N not a multiple of 64
  CHECK(gemm_bf16(p, p, p, 0, 64, 64, 0) == RCCLX_ERR_INVALID_COUNT);
  CHECK(gemm_bf16(p, p, p, 1, (1 << 24) + 64, 64, 0) == RCCLX_ERR_INVALID_COUNT);  // a stage's offsets past 2^31
  CHECK(gemm_bf16(p, p, p, 1, 64, (1 << 24) + 8, 0) == RCCLX_ERR_INVALID_COUNT);
  CHECK(gemm_bf16(p + 1, p, p, 1, 64, 64, 0) == RCCLX_ERR_MISALIGNED);
  CHECK(gemm_bf16(nullptr, p, p, 1, 64, 64, 0) == RCCLX_ERR_NULL_POINTER);
  (void)hipFree(p);
}

TEST_CASE("fusion: rcclx_comm_persistent_grid stays within the ranks' share of the GPU", "[gpu][fusion]") {
  const void* k = (const void*)gemm_allreduce_fused_kernel<8>;
  for (int R : {2, 8}) {
    rank_set rs;
    REQUIRE(rs.init(R) == RCCLX_SUCCESS);
    int first = 0;
    for (int r = 0; r < R; ++r) {
      const rcclx_comm* c = &rs.comm[r];
      int occ = 0, sms = 0, most = 0, g = 0;
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, GEMM_THREADS, 0));
      GPU_REQUIRE(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, rs.dev[r]));
      REQUIRE(rcclx_comm_persistent_grid(c, k, GEMM_THREADS, 1 << 30, nullptr, &most) == RCCLX_SUCCESS);
      if (c->ranks_on_device > 1)  // the ranks' grids together leave the free multiprocessors alone
        CHECK((long)most * c->ranks_on_device <= (long)occ * (sms - RCCLX_SHARED_GPU_FREE_SMS));
      else
        CHECK(most == occ * sms);  // the whole GPU
      CHECK(most >= c->view.nblocks);  // never less than the communicator's own grid
      CHECK(rcclx_comm_check_coresident(c, k, GEMM_THREADS, most) == RCCLX_SUCCESS);
      if (r == 0) first = most;
      CHECK(most == first);  // every rank the same grid (tile t by block t % grid)
      REQUIRE(rcclx_comm_persistent_grid(c, k, GEMM_THREADS, 3, nullptr, &g) == RCCLX_SUCCESS);
      CHECK(g == 3);  // no more blocks than asked for
      rcclx_occupancy_memo memo{};  // asked once, then read: the same answer
      for (int i = 0; i < 2; ++i) {
        REQUIRE(rcclx_comm_persistent_grid(c, k, GEMM_THREADS, 1 << 30, &memo, &g) == RCCLX_SUCCESS);
        CHECK(g == most);
      }
      CHECK(rcclx_comm_persistent_grid(c, k, GEMM_THREADS, 0, nullptr, &g) == RCCLX_ERR_INVALID_ARGUMENT);
      CHECK(rcclx_comm_persistent_grid(c, k, 0, 4, nullptr, &g) == RCCLX_ERR_INVALID_ARGUMENT);
      CHECK(rcclx_comm_persistent_grid(c, nullptr, GEMM_THREADS, 4, nullptr, &g) == RCCLX_ERR_NULL_POINTER);
      CHECK(rcclx_comm_persistent_grid(c, k, GEMM_THREADS, 4, nullptr, nullptr) == RCCLX_ERR_NULL_POINTER);
      CHECK(rcclx_comm_persistent_grid(nullptr, k, GEMM_THREADS, 4, nullptr, &g) == RCCLX_ERR_NULL_POINTER);
    }
  }
}

TEST_CASE("fusion: fused GEMM + AllReduce under graph capture, 20 replays", "[gpu][fusion]") {
  rank_set rs;
  REQUIRE(rs.init(4) == RCCLX_SUCCESS);
  const int M = 16, N = 512, K = 64;
  std::mt19937 rng(37);
  std::vector<rcclx_bf16*> dX(4), dW(4), out(4), y(4), ref(4);
  for (int r = 0; r < 4; ++r) {
    rs.on(r);
    dX[r] = poisoned<rcclx_bf16>((size_t)M * K); dW[r] = poisoned<rcclx_bf16>((size_t)K * N);
    out[r] = poisoned<rcclx_bf16>((size_t)M * N); y[r] = poisoned<rcclx_bf16>((size_t)M * N);
    ref[r] = poisoned<rcclx_bf16>((size_t)M * N);
  }
  hipGraphExec_t ge;
  GPU_REQUIRE(rs.capture(1, [&](int r) {
    REQUIRE(gemm_allreduce_fused(&rs.comm[r], dX[r], dW[r], out[r], M, N, K, rs.stream[r]) == RCCLX_SUCCESS);
  }, &ge));
  size_t bad = 0;
  for (int it = 0; it < 20; ++it) {
    progress("graph replay", 4, it, 0, 0);
    for (int r = 0; r < 4; ++r) {
      auto hx = random_bf16((size_t)M * K, rng, 1.0f), hw = random_bf16((size_t)K * N, rng, 0.1f);
      GPU_REQUIRE(hipMemcpy(dX[r], hx.data(), hx.size() * 2, hipMemcpyHostToDevice));
      GPU_REQUIRE(hipMemcpy(dW[r], hw.data(), hw.size() * 2, hipMemcpyHostToDevice));
    }
    GPU_REQUIRE(rs.settle());
    GPU_REQUIRE(hipGraphLaunch(ge, rs.stream[0]));
    GPU_REQUIRE(hipStreamSynchronize(rs.stream[0]));
    for (int r = 0; r < 4; ++r) {  // the unfused way on the same data
      REQUIRE(gemm_bf16(dX[r], dW[r], y[r], M, N, K, rs.on(r)) == RCCLX_SUCCESS);
      REQUIRE(rcclx_allreduce(&rs.comm[r], y[r], ref[r], (size_t)M * N, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_FLAT,
                              rs.stream[r]) == RCCLX_SUCCESS);
    }
    require_clean(rs);
    const auto want = to_host(ref[0], (size_t)M * N);
    for (int r = 0; r < 4; ++r) bad += !same_bits(to_host(out[r], (size_t)M * N), want);
  }
  GPU_REQUIRE(hipGraphExecDestroy(ge));
  CHECK(bad == 0);
  for (int r = 0; r < 4; ++r)
    for (auto p : {dX[r], dW[r], out[r], y[r], ref[r]}) (void)hipFree(p);
}

// The contract of rcclx/tile.h broken on purpose: rank 1 never runs its
// fused kernel, so no rank's tile is complete.  With the watchdog on, every
// other rank's kernel stops with RCCLX_ERR_PEER_TIMEOUT naming a tile and
// rank 1, instead of hanging.
TEST_CASE("fusion: a rank that never publishes is reported, not hung", "[gpu][fusion]") {
  rcclx_config cfg = {};
  cfg.watchdog_ns = 200ull * 1000 * 1000;
  const int R = 4, M = 8, N = 256, K = 64;
  rank_set rs;
  REQUIRE(rs.init(R, &cfg) == RCCLX_SUCCESS);
  std::mt19937 rng(43);
  std::vector<rcclx_bf16*> dX(R), dW(R), out(R);
  for (int r = 0; r < R; ++r) {
    rs.on(r);
    dX[r] = to_device(random_bf16((size_t)M * K, rng, 1.0f));
    dW[r] = to_device(random_bf16((size_t)K * N, rng, 0.1f));
    out[r] = poisoned<rcclx_bf16>((size_t)M * N);
  }
  for (int r = 0; r < R; ++r)
    if (r != 1) REQUIRE(gemm_allreduce_fused(&rs.comm[r], dX[r], dW[r], out[r], M, N, K, rs.stream[r]) == RCCLX_SUCCESS);
  GPU_REQUIRE(rs.sync());  // returns: no hang
  for (int r = 0; r < R; ++r) {
    rcclx_error_record e{};
    INFO("rank " << r);
    if (r == 1) {
      CHECK(rcclx_comm_check(&rs.comm[r], &e) == RCCLX_SUCCESS);  // it ran nothing
    } else {
      CHECK(rcclx_comm_check(&rs.comm[r], &e) == RCCLX_ERR_PEER_TIMEOUT);
      CHECK(e.peer == 1);
      CHECK(e.block < gemm_tiles(M, N));  // a tile index
    }
  }
  for (int r = 0; r < R; ++r)
    for (auto p : {dX[r], dW[r], out[r]}) (void)hipFree(p);
}

TEST_CASE("fusion: AllReduce + residual + RMSNorm (+FP8), LL == one-shot == two-shot == unfused, vs float64",
          "[gpu][fusion]") {
  std::mt19937 rng(41);
  for (int R : {2, 8}) {
    rank_set rs;
    REQUIRE(rs.init(R) == RCCLX_SUCCESS);
    const int nb = rs.comm[0].view.nblocks;
    // LL only where the message fits one LL launch and its grid the
    // communicator's (else the launcher refuses it: checked below).
    const auto run = [&](size_t T, size_t H, bool fp8, rcclx_algo algo) {
      if (algo != RCCLX_ALGO_LL || rmsnorm_ll_warps(T, H, nb)) rmsnorm_case(rs, T, H, fp8, algo, rng);
    };
    for (rcclx_algo algo : {RCCLX_ALGO_LL, RCCLX_ALGO_FLAT, RCCLX_ALGO_TREE}) {
      run(1, 4096, false, algo);
      run(7, 520, true, algo);  // 65 vectors per row: partial thread coverage, uneven pieces; LL: 2 blocks a row
      run(64, 4096, true, algo);
      run(200, 1024, false, algo);  // more rows than blocks
      run(3, 104, false, algo);     // 13 vectors per row: at 8 ranks the last piece is empty
      run(5, 8, true, algo);        // one vector per row: one rank owns every piece
      run(1, 8192, true, algo);     // LL: 16 blocks a row, the FP8 maximum traded between them
      run(4, 8192, false, algo);    // LL at 2 ranks: 64 KiB, the whole LL buffer and 64 blocks
    }
    rmsnorm_case(rs, 33, 8192, false, RCCLX_ALGO_AUTO, rng);  // 528 KiB: two-shot at 8 ranks, one-shot at 2
    rmsnorm_case(rs, 2, 8192, false, RCCLX_ALGO_AUTO, rng);   // LL (at 8 ranks 4 warps a block)
    rmsnorm_case(rs, 1, 8192, false, RCCLX_ALGO_AUTO, rng);   // LL
    rmsnorm_case(rs, 16, 8192, false, RCCLX_ALGO_AUTO, rng);  // beyond one LL launch: two-shot at 8, one-shot at 2
  }
  // AUTO's one-shot / two-shot switch: the measured sizes, capped by the
  // communicator's flat / tree switch.
  CHECK(rmsnorm_one_shot_max_bytes(2, (size_t)256 << 20) == (size_t)256 << 20);
  CHECK(rmsnorm_one_shot_max_bytes(4, (size_t)256 << 20) == (size_t)1 << 20);
  CHECK(rmsnorm_one_shot_max_bytes(8, (size_t)512 << 10) == (size_t)64 << 10);
  CHECK(rmsnorm_one_shot_max_bytes(4, (size_t)512 << 10) == (size_t)512 << 10);
  CHECK(rmsnorm_one_shot_max_bytes(8, (size_t)4 << 10) == (size_t)4 << 10);
  rank_set rs;
  REQUIRE(rs.init(2) == RCCLX_SUCCESS);
  rcclx_bf16* p = poisoned<rcclx_bf16>(64);
  CHECK(allreduce_rmsnorm(&rs.comm[0], 1, 12, p, p, p, 1e-6f, p, nullptr, nullptr, RCCLX_ALGO_AUTO, rs.stream[0]) ==
        RCCLX_ERR_INVALID_COUNT);
  CHECK(allreduce_rmsnorm(&rs.comm[0], 1, 8, p, p, p, 1e-6f, p, (uint8_t*)p, nullptr, RCCLX_ALGO_AUTO, rs.stream[0]) ==
        RCCLX_ERR_INVALID_ARGUMENT);
  // LL beyond one LL launch (512 KiB), and a shape that is no algorithm here.
  CHECK(allreduce_rmsnorm(&rs.comm[0], 64, 4096, p, p, p, 1e-6f, p, nullptr, nullptr, RCCLX_ALGO_LL, rs.stream[0]) ==
        RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(allreduce_rmsnorm(&rs.comm[0], 1, 8, p, p, p, 1e-6f, p, nullptr, nullptr, RCCLX_ALGO_LOWP_FLAT,
                          rs.stream[0]) == RCCLX_ERR_INVALID_ARGUMENT);
  (void)hipFree(p);
}

// What the LL RMSNorm tests below share: a residual and a weight (the same
// on every rank), the fused call's outputs, and the unfused sequence's (s
// all-reduced by the library, then the norm kernel), poisoned.
struct ll_norm_bufs {
  int R;
  size_t T, H, n;
  std::vector<rcclx_bf16*> res, w, ro, o, s_all, ro_u, o_u;
  ll_norm_bufs(rank_set& rs, size_t T_, size_t H_, std::mt19937& rng)
      : R(rs.n), T(T_), H(H_), n(T_ * H_), res(R), w(R), ro(R), o(R), s_all(R), ro_u(R), o_u(R) {
    const auto res_h = random_bf16(n, rng, 1.0f), w_h = random_bf16(H, rng, 1.0f);
    for (int r = 0; r < R; ++r) {
      rs.on(r);
      res[r] = to_device(res_h);
      w[r] = to_device(w_h);
      for (auto* q : {&ro[r], &o[r], &s_all[r], &ro_u[r], &o_u[r]}) *q = poisoned<rcclx_bf16>(n);
    }
  }
  ~ll_norm_bufs() {
    for (int r = 0; r < R; ++r)
      for (auto q : {res[r], w[r], ro[r], o[r], s_all[r], ro_u[r], o_u[r]}) (void)hipFree(q);
  }
  // Fresh random x in every rank's input region (nothing runs on the streams).
  void new_x(rank_set& rs, std::mt19937& rng) {
    for (int r = 0; r < R; ++r) {
      const auto x = random_bf16(n, rng, 1.0f);
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipMemcpy(rcclx_comm_input(&rs.comm[r]), x.data(), n * 2, hipMemcpyHostToDevice));
    }
    GPU_REQUIRE(rs.settle());
  }
  void fused(rank_set& rs, int r, hipStream_t st) {
    REQUIRE(allreduce_rmsnorm(&rs.comm[r], T, H, res[r], ro[r], w[r], 1e-6f, o[r], nullptr, nullptr, RCCLX_ALGO_LL,
                              st) == RCCLX_SUCCESS);
  }
  // The unfused sequence's second half, on s_all.
  void unfused_norm(int r, hipStream_t st) {
    rmsnorm_unfused_kernel<<<(unsigned)T, RMSNORM_THREADS, 0, st>>>(s_all[r], T, H, res[r], ro_u[r], w[r], 1e-6f,
                                                                   o_u[r], nullptr, nullptr);
    GPU_REQUIRE(hipGetLastError());
  }
  // Outputs (fused or unfused, on any rank) that differ from rank 0's
  // unfused ones, bit for bit.
  size_t mismatches() {
    const auto want = to_host(o_u[0], n), want_res = to_host(ro_u[0], n);
    size_t bad = 0;
    for (int r = 0; r < R; ++r)
      bad += !same_bits(to_host(o[r], n), want) + !same_bits(to_host(ro[r], n), want_res) +
             !same_bits(to_host(o_u[r], n), want);
    return bad;
  }
};

TEST_CASE("fusion: LL AllReduce + RMSNorm under graph capture, 20 replays, between library LL calls",
          "[gpu][fusion]") {
  // Each replay runs the fused LL call, then rcclx_allreduce's own LL
  // kernel, on the same communicators: they share the LL state (call
  // counts, buffers, tags).  x changes between replays.
  rank_set rs;
  REQUIRE(rs.init(4) == RCCLX_SUCCESS);
  std::mt19937 rng(43);
  ll_norm_bufs b(rs, 2, 2048, rng);
  hipGraphExec_t ge;
  GPU_REQUIRE(rs.capture(1, [&](int r) {
    b.fused(rs, r, rs.stream[r]);
    REQUIRE(rcclx_allreduce(&rs.comm[r], rcclx_comm_input(&rs.comm[r]), b.s_all[r], b.n, RCCLX_BFLOAT16, RCCLX_SUM,
                            RCCLX_ALGO_LL, rs.stream[r]) == RCCLX_SUCCESS);
  }, &ge));
  size_t bad = 0;
  for (int it = 0; it < 20; ++it) {
    progress("LL rmsnorm graph replay", b.R, it, 0, 0);
    b.new_x(rs, rng);
    GPU_REQUIRE(hipGraphLaunch(ge, rs.stream[0]));
    GPU_REQUIRE(hipStreamSynchronize(rs.stream[0]));
    for (int r = 0; r < b.R; ++r) b.unfused_norm(r, rs.on(r));
    require_clean(rs);
    bad += b.mismatches();
  }
  GPU_REQUIRE(hipGraphExecDestroy(ge));
  CHECK(bad == 0);
}

// The LL shape re-tags what it reads (rcclx/dda/ll.h): across the 32-bit
// wrap of the LL call count, with both buffers due for re-tagging, every
// call matches the unfused sequence (the library's flat AllReduce, which
// leaves the LL state alone, then the norm kernel), one of them with rank
// 0 starting late; each re-tagging call leaves every word of a rank's data
// slot and of its spare slot (the row partials) with the re-tagging's tag
// or its own, so the fused mapping's owners cover both slots; every call
// advances every block slot.
TEST_CASE("fusion: LL AllReduce + RMSNorm re-tags its words, across the wrap of the LL call count", "[gpu][fusion]") {
  const int R = 4;
  rank_set rs;
  REQUIRE(rs.init(R) == RCCLX_SUCCESS);
  REQUIRE(!(rs.comm[0].view.flags & RCCLX_VIEW_LL_PUSH));  // pull: rank r's data slot r, spare slot r + 1
  std::mt19937 rng(53);
  ll_norm_bufs b(rs, 3, 1040, rng);  // 130 vectors a row: 3 blocks a row, the last one partial
  const uint32_t k0 = 0u - 4u;
  set_ll_counters(rs, k0, k0 - RCCLX_LL_RETAG_CALLS, k0 + 1u - RCCLX_LL_RETAG_CALLS);
  for (uint32_t i = 0; i < 6; ++i) {
    const uint32_t k = k0 + i;
    progress("LL rmsnorm re-tagging, call", R, (long)i, 0, 0);
    b.new_x(rs, rng);
    for (int r = 0; r < R; ++r) {
      hipStream_t st = rs.on(r);
      if (i == 2 && r == 0) delay_kernel<<<1, 1, 0, st>>>(20ll * 1000 * 1000);  // ~10 ms
      b.fused(rs, r, st);
      REQUIRE(rcclx_allreduce(&rs.comm[r], rcclx_comm_input(&rs.comm[r]), b.s_all[r], b.n, RCCLX_BFLOAT16, RCCLX_SUM,
                              RCCLX_ALGO_FLAT, st) == RCCLX_SUCCESS);
      b.unfused_norm(r, st);
    }
    require_clean(rs);
    INFO("call k0 + " << i);
    CHECK(b.mismatches() == 0);
    if (i < 2)  // calls k0 and k0 + 1 re-tagged buffers 0 and 1
      for (int r = 0; r < R; ++r)
        for (int slot : {r, (r + 1) % R}) {
          const auto tags = ll_slot_tags(rs, r, k & 1u, slot);
          size_t stray = 0;
          for (uint32_t t : tags) stray += t != k - 1u && t != k + 1u;
          INFO("rank " << r << " slot " << slot);
          CHECK(stray == 0);
        }
  }
  check_ll_cleaned(rs, k0, k0 + 1u);
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < rs.comm[r].view.nblocks; ++s) {
      INFO("rank " << r << " slot " << s);
      CHECK(ll_calls_of(rs, r, s) == k0 + 6u);
    }
}

TEST_CASE("fusion: AllReduce + RMSNorm ranks that disagree stop with RANK_MISMATCH, then run again",
          "[gpu][fusion]") {
  std::mt19937 rng(47);
  const int R = 4;
  const size_t T = 6, H = 256, n = T * H;
  rank_set rs;
  REQUIRE(rs.init(R) == RCCLX_SUCCESS);
  std::vector<rcclx_bf16*> res(R), w(R), ro(R), o(R);
  const auto res_h = random_bf16(n, rng, 1.0f), w_h = random_bf16(H, rng, 1.0f);  // the same on every rank
  for (int r = 0; r < R; ++r) {
    GPU_REQUIRE(hipSetDevice(rs.dev[r]));
    const auto x = random_bf16(n, rng, 1.0f);
    GPU_REQUIRE(hipMemcpy(rcclx_comm_input(&rs.comm[r]), x.data(), n * 2, hipMemcpyHostToDevice));
    res[r] = to_device(res_h);
    w[r] = to_device(w_h);
    ro[r] = poisoned<rcclx_bf16>(n);
    o[r] = poisoned<rcclx_bf16>(n);
  }
  GPU_REQUIRE(rs.settle());
  const auto untouched = to_host(o[0], n);
  const auto restore_o = [&] {  // every rank's output back to the poison
    for (int r = 0; r < R; ++r) {
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipMemcpy(o[r], untouched.data(), n * 2, hipMemcpyHostToDevice));
    }
  };
  // Rank 0 asks for the one-shot, the others for the two-shot; then rank 2
  // passes another token count, to the two-shot and then to the LL shape
  // (different grids: every block still sees the others' fingerprint).
  // Nobody hangs; every rank reports it.
  for (int round = 0; round < 3; ++round) {
    for (int r = 0; r < R; ++r) {
      const rcclx_algo a = round == 0 && r == 0 ? RCCLX_ALGO_FLAT : round == 2 ? RCCLX_ALGO_LL : RCCLX_ALGO_TREE;
      const size_t t = round >= 1 && r == 2 ? T - 1 : T;
      REQUIRE(allreduce_rmsnorm(&rs.comm[r], t, H, res[r], ro[r], w[r], 1e-6f, o[r], nullptr, nullptr, a,
                                rs.stream[r]) == RCCLX_SUCCESS);
    }
    GPU_REQUIRE(rs.settle());
    for (int r = 0; r < R; ++r) CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_ERR_RANK_MISMATCH);
    for (int r = 0; r < R; ++r) CHECK(same_bits(to_host(o[r], n), untouched));  // nothing written
  }
  // The barrier epochs and the LL call counts stayed in step: agreeing
  // calls of both kinds work again.
  for (rcclx_algo a : {RCCLX_ALGO_TREE, RCCLX_ALGO_LL}) {
    restore_o();
    for (int r = 0; r < R; ++r)
      REQUIRE(allreduce_rmsnorm(&rs.comm[r], T, H, res[r], ro[r], w[r], 1e-6f, o[r], nullptr, nullptr, a,
                                rs.stream[r]) == RCCLX_SUCCESS);
    GPU_REQUIRE(rs.settle());
    INFO("agreeing call, algo " << rcclx_algo_name(a));
    const auto o0 = to_host(o[0], n);
    CHECK(!same_bits(o0, untouched));
    for (int r = 0; r < R; ++r) {
      CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
      CHECK(same_bits(to_host(o[r], n), o0));
    }
  }
  // The LL shape on rank 0 against the one-shot on the others (an LL
  // kernel against barrier kernels): every rank stops with RANK_MISMATCH
  // and writes nothing.  (After this the LL call counts are out of step:
  // the communicators would have to be rebuilt, rcclx/dda/ll.h.)
  restore_o();
  for (int r = 0; r < R; ++r)
    REQUIRE(allreduce_rmsnorm(&rs.comm[r], T, H, res[r], ro[r], w[r], 1e-6f, o[r], nullptr, nullptr,
                              r == 0 ? RCCLX_ALGO_LL : RCCLX_ALGO_FLAT, rs.stream[r]) == RCCLX_SUCCESS);
  GPU_REQUIRE(rs.settle());
  for (int r = 0; r < R; ++r) {
    INFO("LL against one-shot, rank " << r);
    CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_ERR_RANK_MISMATCH);
    CHECK(same_bits(to_host(o[r], n), untouched));
  }
  for (int r = 0; r < R; ++r)
    for (auto q : {res[r], w[r], ro[r], o[r]}) (void)hipFree(q);
}

// Single-stream kernels only (no cross-rank barrier), for compute-sanitizer
// memcheck / racecheck (bench/device-run.sh): the sanitizer serialises
// launches, which virtual ranks' barriers cannot survive.  Run twice, same
// bits; the numbers themselves are checked by the cases above.
TEST_CASE("sanitize: GEMM, RMSNorm and FP8 kernels on one stream", "[sanitize]") {
  std::mt19937 rng(43);
  const int M = 9, N = 128, K = 64;
  const size_t T = 3, H = 520;
  const auto hx = random_bf16((size_t)M * K, rng, 1.0f), hw = random_bf16((size_t)K * N, rng, 0.1f);
  const auto hs = random_bf16(T * H, rng, 1.0f), hres = random_bf16(T * H, rng, 1.0f), hwt = random_bf16(H, rng, 1.0f);
  rcclx_bf16 *X = to_device(hx), *W = to_device(hw), *s = to_device(hs), *res = to_device(hres), *wt = to_device(hwt);
  std::vector<rcclx_bf16> first[3];
  for (int run = 0; run < 2; ++run) {
    rcclx_bf16 *Y = poisoned<rcclx_bf16>((size_t)M * N), *ro = poisoned<rcclx_bf16>(T * H), *o = poisoned<rcclx_bf16>(T * H);
    uint8_t* q = poisoned<uint8_t>(T * H);
    float* sc = poisoned<float>(T);
    const size_t nq = 1000;
    uint8_t* chunk = poisoned<uint8_t>(rcclx_fp8_packed_bytes(nq, 32, RCCLX_SCALE_E8M0));
    rcclx_bf16* back = poisoned<rcclx_bf16>(nq);
    REQUIRE(gemm_bf16(X, W, Y, M, N, K, 0) == RCCLX_SUCCESS);
    rmsnorm_unfused_kernel<<<2, RMSNORM_THREADS>>>(s, T, H, res, ro, wt, 1e-6f, o, q, sc);
    GPU_REQUIRE(hipGetLastError());
    REQUIRE(rcclx_fp8_quantize(s, RCCLX_BFLOAT16, nq, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_E8M0, chunk, 0) == RCCLX_SUCCESS);
    REQUIRE(rcclx_fp8_dequantize(chunk, nq, RCCLX_FP8_E4M3FN, 32, RCCLX_SCALE_E8M0, back, RCCLX_BFLOAT16, 0) == RCCLX_SUCCESS);
    GPU_REQUIRE(hipDeviceSynchronize());
    std::vector<rcclx_bf16> got[3] = {to_host(Y, (size_t)M * N), to_host(o, T * H), to_host(back, nq)};
    for (int i = 0; i < 3; ++i) {
      if (run == 0) first[i] = got[i];
      else CHECK(same_bits(got[i], first[i]));
    }
    for (void* p : {(void*)Y, (void*)ro, (void*)o, (void*)q, (void*)sc, (void*)chunk, (void*)back}) (void)hipFree(p);
  }
  for (void* p : {(void*)X, (void*)W, (void*)s, (void*)res, (void*)wt}) (void)hipFree(p);
}
