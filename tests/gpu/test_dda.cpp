// DDA AllReduce on the GPU with 2, 3, 4 and 8 ranks (virtual ranks on one
// GPU, or real GPUs: see ranks.h).  float64 reference on fresh random
// inputs; outputs poisoned first; bitwise equality across ranks and across
// flat / tree / auto.
#include <rcclx/rcclx.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include "gpu_check.h"
#include "ll_state.h"
#include "ranks.h"

namespace {

// The full-precision algorithms (auto, flat, tree, LL); the
// low-precision ones are tested in test_lowp.cpp.
const rcclx_algo kDdaAlgoList[] = {RCCLX_ALGO_AUTO, RCCLX_ALGO_FLAT, RCCLX_ALGO_TREE, RCCLX_ALGO_LL};
const int kDdaAlgos = 4;

template <typename T> double to_d(T x) { return (double)rcclx_to_f32(x); }

// Max |x| of one element's inputs, for the fp32 accumulation term.
template <typename T>
void check_result(const std::vector<std::vector<T>>& in, const std::vector<T>& out, rcclx_op op, size_t& bad) {
  const size_t n = out.size();
  const int N = (int)in.size();
  for (size_t i = 0; i < n; ++i) {
    double ref = to_d(in[0][i]), abs_sum = std::fabs(ref);
    for (int r = 1; r < N; ++r) {
      double x = to_d(in[r][i]);
      ref = op == RCCLX_SUM ? ref + x : op == RCCLX_MAX ? std::fmax(ref, x) : std::fmin(ref, x);
      abs_sum += std::fabs(x);
    }
    const double y = to_d(out[i]);
    // fp32 accumulation error (N-1 roundings) + one rounding to T: one ulp of
    // the result in T (bf16 2^-8, fp16 2^-11, fp32 2^-24 relative).
    const double ulp = sizeof(T) == 4 ? std::ldexp(1.0, -23) : std::is_same<T, rcclx_bf16>::value ? std::ldexp(1.0, -7) : std::ldexp(1.0, -10);
    const double lim = op == RCCLX_SUM ? ulp * std::fabs(ref) + N * std::ldexp(1.0, -24) * abs_sum + 1e-30 : 0.0;
    if (!(std::fabs(y - ref) <= lim)) {
      if (bad < 5) WARN("i=" << i << " got " << y << " want " << ref << " lim " << lim);
      ++bad;
    }
  }
}

// Ways to run the same ranks: staged copies, direct user-buffer access for
// every size, and system-scope barriers (what GPUs over links use).  Their
// results must be bitwise identical.
struct dda_ways {
  rank_set staged, direct, sys;
  std::vector<rank_set*> all{&staged, &direct, &sys};
  const char* names[3] = {"staged", "direct", "system-scope"};
  explicit dda_ways(int N, size_t region_bytes = 0) {
    rcclx_config cfg = {};
    cfg.region_bytes = region_bytes;
    cfg.direct = RCCLX_DIRECT_OFF;
    REQUIRE(staged.init(N, &cfg) == RCCLX_SUCCESS);
    cfg.direct = RCCLX_DIRECT_AUTO;
    REQUIRE(direct.init(N, &cfg) == RCCLX_SUCCESS);
    cfg.system_scope = 1;
    REQUIRE(sys.init(N, &cfg) == RCCLX_SUCCESS);
    for (int r = 0; r < N; ++r) {
      REQUIRE(!(staged.comm[r].view.flags & RCCLX_VIEW_DIRECT));
      REQUIRE(!(sys.comm[r].view.flags & RCCLX_VIEW_ONE_DEVICE));
      if (direct.comm[r].view.flags & RCCLX_VIEW_DIRECT) direct.comm[r].direct_min_bytes = 0;
    }
  }
};

template <typename T>
void run_case(dda_ways& ways, size_t n, rcclx_op op, bool in_place, std::mt19937& rng) {
  const int N = ways.staged.n, W = (int)ways.all.size();
  rank_set& rs = ways.staged;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::vector<T>> in(N, std::vector<T>(n));
  for (auto& v : in)
    for (auto& x : v) x = rcclx_from_f32<T>(nd(rng));
  std::vector<std::vector<T>> outs[3][kDdaAlgos];
  std::vector<T*> send(N), recv(N);
  for (int r = 0; r < N; ++r) {
    GPU_REQUIRE(hipSetDevice(rs.dev[r]));
    GPU_REQUIRE(hipMalloc((void**)&send[r], n * sizeof(T) + 16));
    GPU_REQUIRE(hipMalloc((void**)&recv[r], n * sizeof(T) + 16));
  }
  const rcclx_dtype dt = rcclx_dtype_of<T>::value;
  for (int w = 0; w < W; ++w)
  for (int a = 0; a < kDdaAlgos; ++a) {
    rank_set& ws = *ways.all[w];
    for (int r = 0; r < N; ++r) {
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipMemcpy(send[r], in[r].data(), n * sizeof(T), hipMemcpyHostToDevice));
      GPU_REQUIRE(hipMemset(recv[r], 0xFF, n * sizeof(T) + 16));  // poison (NaN)
    }
    GPU_REQUIRE(ws.settle());
    for (int r = 0; r < N; ++r) {
      T* dst = in_place ? send[r] : recv[r];
      REQUIRE(rcclx_allreduce(&ws.comm[r], send[r], dst, n, dt, op, kDdaAlgoList[a], ws.stream[r]) == RCCLX_SUCCESS);
    }
    GPU_REQUIRE(ws.sync());
    for (int r = 0; r < N; ++r) REQUIRE(rcclx_comm_check(&ws.comm[r], nullptr) == RCCLX_SUCCESS);
    auto& o = outs[w][a];
    o.assign(N, std::vector<T>(n));
    for (int r = 0; r < N; ++r) {
      GPU_REQUIRE(hipMemcpy(o[r].data(), in_place ? send[r] : recv[r], n * sizeof(T), hipMemcpyDeviceToHost));
      if (!in_place) {  // nothing written past n
        T tail;
        GPU_REQUIRE(hipMemcpy(&tail, recv[r] + n, sizeof(T), hipMemcpyDeviceToHost));
        uint16_t b;
        memcpy(&b, &tail, 2);
        CHECK(b == 0xFFFF);
      }
    }
  }
  INFO("N=" << N << " n=" << n << " dtype=" << rcclx_dtype_name(dt) << " op=" << rcclx_op_name(op) << " in_place=" << in_place);
  size_t bad = 0;
  check_result(in, outs[0][0][0], op, bad);
  CHECK(bad == 0);
  for (int w = 0; w < W; ++w)
    for (int a = 0; a < kDdaAlgos; ++a)
      for (int r = 0; r < N; ++r) {
        INFO("way " << ways.names[w] << " algo " << rcclx_algo_name(kDdaAlgoList[a]) << " rank " << r);
        CHECK(memcmp(outs[w][a][r].data(), outs[0][0][0].data(), n * sizeof(T)) == 0);  // bitwise everywhere
      }
  for (int r = 0; r < N; ++r) {
    (void)hipFree(send[r]);
    (void)hipFree(recv[r]);
  }
}

// Deterministic per-(seed, rank, i) input, generated on the device; the
// verifier regenerates every rank's inputs and sums them in the library's
// order, so it can check bit for bit with no host round trip.
__device__ __host__ inline float gen(uint32_t seed, int rank, size_t i) {
  uint32_t h = (uint32_t)(i * 2654435761u) ^ (seed * 40503u + (uint32_t)rank * 2246822519u);
  h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
  return ((int)(h & 0xffff) - 32768) / 4096.0f;
}
__global__ void fill_kernel(rcclx_bf16* p, size_t n, const uint32_t* seed_ptr, int rank) {
  const uint32_t seed = *seed_ptr;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = rcclx_from_f32<rcclx_bf16>(gen(seed, rank, i));
}
__global__ void verify_kernel(const rcclx_bf16* out, size_t n, uint32_t* seed_ptr, int nranks, int rank,
                              unsigned long long* errors) {
  const uint32_t seed = *seed_ptr;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float acc = rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(gen(seed, 0, i)));
    for (int r = 1; r < nranks; ++r) acc += rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(gen(seed, r, i)));
    if (rcclx_from_f32<rcclx_bf16>(acc).bits != out[i].bits) atomicAdd(errors, 1ull);
  }
}
__global__ void bump_kernel(uint32_t* seed_ptr) { *seed_ptr += 1; }

}  // namespace

TEST_CASE("dda allreduce: every dtype / op / algo; odd sizes; in and out of place", "[gpu][dda]") {
  std::mt19937 rng(2024);
  for (int N : {2, 3, 4, 8}) {
    dda_ways ways(N);
    for (size_t n : {(size_t)1, (size_t)7, (size_t)1023, (size_t)4096, (size_t)1000003}) {
      for (rcclx_op op : {RCCLX_SUM, RCCLX_MAX, RCCLX_MIN}) {
        run_case<rcclx_bf16>(ways, n, op, false, rng);
        run_case<rcclx_f16>(ways, n, op, n % 2 == 1, rng);
        run_case<float>(ways, n, op, n == 7, rng);
      }
    }
  }
}

TEST_CASE("dda allreduce: large messages up to 64 MiB and chunking past the buffer", "[gpu][dda]") {
  std::mt19937 rng(7);
  for (int N : {2, 8}) {
    dda_ways ways(N, (size_t)8 << 20);  // staged: 64 MiB messages run as 8 chunks
    run_case<rcclx_bf16>(ways, (size_t)32 << 20, RCCLX_SUM, false, rng);  // 64 MiB
    run_case<float>(ways, ((size_t)16 << 20) + 3, RCCLX_SUM, true, rng);   // 64 MiB + 12 B
  }
}

TEST_CASE("dda allreduce: zero-copy from the registered input region", "[gpu][dda]") {
  const int N = 4;
  const size_t n = 300001;
  rank_set rs;
  REQUIRE(rs.init(N) == RCCLX_SUCCESS);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (int a = 1; a < kDdaAlgos; ++a) {
    std::vector<std::vector<rcclx_bf16>> in(N, std::vector<rcclx_bf16>(n));
    std::vector<rcclx_bf16*> out(N);
    for (int r = 0; r < N; ++r) {
      for (auto& x : in[r]) x = rcclx_from_f32<rcclx_bf16>(nd(rng));
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipMemcpy(rcclx_comm_input(&rs.comm[r]), in[r].data(), n * 2, hipMemcpyHostToDevice));
      GPU_REQUIRE(hipMalloc((void**)&out[r], n * 2));
      GPU_REQUIRE(hipMemset(out[r], 0xFF, n * 2));
    }
    GPU_REQUIRE(rs.settle());
    for (int r = 0; r < N; ++r)  // flat, tree, LL (which copies from the region: not zero-copy, chunked)
      REQUIRE(rcclx_allreduce(&rs.comm[r], rcclx_comm_input(&rs.comm[r]), out[r], n, RCCLX_BFLOAT16, RCCLX_SUM,
                              kDdaAlgoList[a], rs.stream[r]) == RCCLX_SUCCESS);
    GPU_REQUIRE(rs.sync());
    std::vector<rcclx_bf16> h(n), h0(n);
    size_t bad = 0;
    for (int r = 0; r < N; ++r) {
      GPU_REQUIRE(hipMemcpy(h.data(), out[r], n * 2, hipMemcpyDeviceToHost));
      if (r == 0) { h0 = h; check_result(in, h, RCCLX_SUM, bad); }
      CHECK(memcmp(h.data(), h0.data(), n * 2) == 0);
      (void)hipFree(out[r]);
    }
    CHECK(bad == 0);
    // Too large for the region: rejected before any launch (recv: an
    // allocation of its own, so no overlap check answers first).
    void* big = nullptr;
    GPU_REQUIRE(hipMalloc(&big, (size_t)128 << 20));
    CHECK(rcclx_allreduce(&rs.comm[0], rcclx_comm_input(&rs.comm[0]), big, (size_t)64 << 20, RCCLX_BFLOAT16,
                          RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[0]) == RCCLX_ERR_BUFFER_TOO_SMALL);
    GPU_REQUIRE(hipFree(big));
  }
}

// Per rank: input and output of n bf16, the data seed (bumped on the device
// after each call) and the verifier's error count, all zeroed.
struct verify_bufs {
  std::vector<rcclx_bf16*> in, out;
  std::vector<uint32_t*> seed;
  std::vector<unsigned long long*> err;
  verify_bufs(rank_set& rs, size_t n) : in(rs.n), out(rs.n), seed(rs.n), err(rs.n) {
    for (int r = 0; r < rs.n; ++r) {
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipMalloc((void**)&in[r], n * 2));
      GPU_REQUIRE(hipMalloc((void**)&out[r], n * 2));
      GPU_REQUIRE(hipMalloc((void**)&seed[r], 4));
      GPU_REQUIRE(hipMalloc((void**)&err[r], 8));
      GPU_REQUIRE(hipMemset(seed[r], 0, 4));
      GPU_REQUIRE(hipMemset(err[r], 0, 8));
    }
    GPU_REQUIRE(hipDeviceSynchronize());  // the rank streams do not wait for these memsets
  }
  ~verify_bufs() {
    for (size_t r = 0; r < in.size(); ++r) {
      (void)hipFree(in[r]); (void)hipFree(out[r]); (void)hipFree(seed[r]); (void)hipFree(err[r]);
    }
  }
};

// Back-to-back calls with changing data (generated on the device) and no
// reset, then the same in a captured graph replayed 1000 times.
static void repeated(int N, int calls, bool graph, rcclx_algo algo, size_t n, bool direct = false) {
  rank_set rs;
  REQUIRE(rs.init(N) == RCCLX_SUCCESS);
  for (int r = 0; r < N; ++r) rs.comm[r].direct_min_bytes = direct ? 0 : SIZE_MAX;
  verify_bufs vb(rs, n);
  auto &in = vb.in, &out = vb.out;
  auto &seed = vb.seed;
  auto &err = vb.err;
  auto step = [&](int r) {
    hipStream_t s = rs.on(r);
    fill_kernel<<<64, 256, 0, s>>>(in[r], n, seed[r], r);
    REQUIRE(rcclx_allreduce(&rs.comm[r], in[r], out[r], n, RCCLX_BFLOAT16, RCCLX_SUM, algo, s) == RCCLX_SUCCESS);
    verify_kernel<<<64, 256, 0, s>>>(out[r], n, seed[r], N, r, err[r]);
    bump_kernel<<<1, 1, 0, s>>>(seed[r]);
  };
  if (!graph) {
    // One host thread drives every rank, queueing far ahead (a sync every
    // 64 calls bounds it).  Needs eager kernel loading (tests/gpu/ranks.h):
    // under lazy loading the first verify_kernel launch deadlocked here.
    for (int i = 0; i < calls; ++i) {
      for (int r = 0; r < N; ++r) step(r);
      if (i % 64 == 63) GPU_REQUIRE(rs.sync());
    }
    GPU_REQUIRE(rs.sync());
  } else {
    // Fork/join over the rank streams inside one capture on rank 0's stream.
    hipGraphExec_t ge;
    GPU_REQUIRE(rs.capture(1, step, &ge));
    for (int i = 0; i < calls; ++i) GPU_REQUIRE(hipGraphLaunch(ge, rs.stream[0]));
    GPU_REQUIRE(hipStreamSynchronize(rs.stream[0]));
    GPU_REQUIRE(hipGraphExecDestroy(ge));
  }
  for (int r = 0; r < N; ++r) {
    unsigned long long e = 1;
    uint32_t s = 0;
    GPU_REQUIRE(hipMemcpy(&e, err[r], 8, hipMemcpyDeviceToHost));
    GPU_REQUIRE(hipMemcpy(&s, seed[r], 4, hipMemcpyDeviceToHost));
    INFO("rank " << r << " graph " << graph << " algo " << algo << " direct " << direct);
    CHECK(e == 0);
    CHECK(s == (uint32_t)calls);  // every call ran, with new data each time
    CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
  }
}

TEST_CASE("dda allreduce: 10 000 back-to-back calls / no reset", "[gpu][dda]") {
  repeated(8, 10000, false, RCCLX_ALGO_FLAT, 4099);
  repeated(8, 10000, false, RCCLX_ALGO_AUTO, 4099, true);  // tree, direct
  repeated(8, 10000, false, RCCLX_ALGO_LL, 4099);
  repeated(4, 2000, false, RCCLX_ALGO_TREE, 70001);
  repeated(4, 2000, false, RCCLX_ALGO_TREE, 70001, true);
}

TEST_CASE("dda allreduce: graph capture and 1000 replays with changing data", "[gpu][dda]") {
  repeated(8, 1000, true, RCCLX_ALGO_FLAT, 4099);
  repeated(8, 1000, true, RCCLX_ALGO_LL, 4099);
  repeated(8, 1000, true, RCCLX_ALGO_TREE, 70001);
  repeated(8, 1000, true, RCCLX_ALGO_AUTO, 4099, true);
  repeated(8, 1000, true, RCCLX_ALGO_TREE, 70001, true);
  repeated(3, 1000, true, RCCLX_ALGO_AUTO, 1 << 20);
  repeated(3, 1000, true, RCCLX_ALGO_AUTO, 1 << 20, true);
}

// Collectives back to back, nothing between them on a rank's stream, so
// with programmatic dependent launch each kernel is scheduled while the
// previous one runs (RCCLX_PDL_EARLY: as soon as it starts, its blocks then
// wait resident).  Each call reduces the previous call's output, cycling
// through flat, LL, tree and auto; with N a power of two every call
// after the first multiplies exactly by N, so the chain's last output is
// N^(L-1) times the first call's result, bit for bit.  Eager (3 chains with
// fresh inputs, no sync between calls) and as one graph replayed 3 times
// with fresh inputs between replays.
static void chain(int N, int pdl_mode, bool graph) {
  rcclx_config cfg = {};
  cfg.pdl = pdl_mode;
  rank_set rs;
  REQUIRE(rs.init(N, &cfg) == RCCLX_SUCCESS);
  rcclx_config used;  // cfg as the environment completes it (RCCLX_PDL)
  REQUIRE(rcclx_config_resolve(&cfg, &used) == RCCLX_SUCCESS);
  // Early only when asked for, where the device has dependent launch.
  CHECK(((rs.comm[0].view.flags & RCCLX_VIEW_LAUNCH_EARLY) != 0) ==
        (used.pdl == RCCLX_PDL_EARLY && rcclx_pdl_supported(rs.dev[0]) != 0));
  const size_t n = 5003;  // odd: a partial last vector
  const int L = 12;       // N^11 <= 2^33: exact in bf16
  const rcclx_algo algos[] = {RCCLX_ALGO_FLAT, RCCLX_ALGO_LL, RCCLX_ALGO_TREE, RCCLX_ALGO_AUTO};
  std::vector<rcclx_bf16*> in(N), a(N), b(N);
  for (int r = 0; r < N; ++r) {
    GPU_REQUIRE(hipSetDevice(rs.dev[r]));
    GPU_REQUIRE(hipMalloc((void**)&in[r], n * 2));
    GPU_REQUIRE(hipMalloc((void**)&a[r], n * 2));
    GPU_REQUIRE(hipMalloc((void**)&b[r], n * 2));
  }
  rcclx_bf16** last = (L - 1) % 2 ? b.data() : a.data();
  auto step = [&](int r) {
    for (int i = 0; i < L; ++i) {
      const rcclx_bf16* src = i == 0 ? in[r] : i % 2 ? a[r] : b[r];
      rcclx_bf16* dst = i % 2 ? b[r] : a[r];
      REQUIRE(rcclx_allreduce(&rs.comm[r], src, dst, n, RCCLX_BFLOAT16, RCCLX_SUM, algos[i % 4], rs.stream[r]) ==
              RCCLX_SUCCESS);
    }
  };
  hipGraphExec_t ge = nullptr;
  if (graph) GPU_REQUIRE(rs.capture(1, step, &ge));
  std::mt19937 rng(41 + N);
  std::normal_distribution<float> nd;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::vector<rcclx_bf16>> x(N, std::vector<rcclx_bf16>(n));
    for (int r = 0; r < N; ++r) {
      for (auto& e : x[r]) e = rcclx_from_f32<rcclx_bf16>(nd(rng));
      GPU_REQUIRE(hipSetDevice(rs.dev[r]));
      GPU_REQUIRE(hipMemcpy(in[r], x[r].data(), n * 2, hipMemcpyHostToDevice));
      GPU_REQUIRE(hipMemset(last[r], 0xFF, n * 2));  // poison
    }
    GPU_REQUIRE(rs.settle());
    if (graph) {
      GPU_REQUIRE(hipGraphLaunch(ge, rs.stream[0]));
    } else {
      for (int r = 0; r < N; ++r) {
        GPU_REQUIRE(hipSetDevice(rs.dev[r]));
        step(r);
      }
    }
    GPU_REQUIRE(rs.sync());
    const double scale = std::pow((double)N, L - 1);
    size_t bad = 0;
    std::vector<rcclx_bf16> h(n);
    for (int r = 0; r < N; ++r) {
      GPU_REQUIRE(hipMemcpy(h.data(), last[r], n * 2, hipMemcpyDeviceToHost));
      for (size_t i = 0; i < n; ++i) {
        float acc = rcclx_to_f32(x[0][i]);
        for (int q = 1; q < N; ++q) acc += rcclx_to_f32(x[q][i]);
        const double want = (double)rcclx_to_f32(rcclx_from_f32<rcclx_bf16>(acc)) * scale;
        if ((double)rcclx_to_f32(h[i]) != want && bad++ < 3)
          WARN("rank " << r << " i=" << i << " got " << rcclx_to_f32(h[i]) << " want " << want);
      }
      CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
    }
    INFO("N=" << N << " pdl=" << pdl_mode << " graph=" << graph << " rep " << rep);
    CHECK(bad == 0);
  }
  if (ge) GPU_REQUIRE(hipGraphExecDestroy(ge));
  for (int r = 0; r < N; ++r) {
    (void)hipFree(in[r]);
    (void)hipFree(a[r]);
    (void)hipFree(b[r]);
  }
}

TEST_CASE("dda allreduce: collectives back to back, each launched while the previous runs", "[gpu][dda]") {
  for (int N : {2, 4, 8})
    for (int mode : {RCCLX_PDL_AUTO, RCCLX_PDL_EARLY, RCCLX_PDL_OFF})
      for (bool graph : {false, true}) chain(N, mode, graph);
}

// LL buffers alternate and are never cleared: a word left by an earlier,
// larger call carries an older tag.  Calls of changing sizes (up to the
// largest launch, and beyond it in chunks), interleaved with barrier-based
// calls, must each see only their own data.
TEST_CASE("dda allreduce: LL with changing sizes, interleaved with flat and tree", "[gpu][dda]") {
  const int N = 4;
  rank_set rs;
  REQUIRE(rs.init(N) == RCCLX_SUCCESS);
  const size_t maxn = RCCLX_LL_MAX_BYTES / 2 + 1001;  // one bf16 launch and a bit: two chunks
  const size_t sizes[] = {4099, 7, RCCLX_LL_MAX_BYTES / 2 - 2741, 1, RCCLX_LL_MAX_BYTES / 2, 300, 33000, 8, maxn, 2};
  verify_bufs vb(rs, maxn);
  auto &in = vb.in, &out = vb.out;
  auto &seed = vb.seed;
  auto &err = vb.err;
  const int calls = 300;
  for (int i = 0; i < calls; ++i) {
    const size_t n = sizes[i % 10];
    const rcclx_algo a = i % 7 == 3 ? RCCLX_ALGO_FLAT : i % 7 == 5 ? RCCLX_ALGO_TREE : RCCLX_ALGO_LL;
    for (int r = 0; r < N; ++r) {
      hipStream_t s = rs.on(r);
      fill_kernel<<<64, 256, 0, s>>>(in[r], n, seed[r], r);
      REQUIRE(rcclx_allreduce(&rs.comm[r], in[r], out[r], n, RCCLX_BFLOAT16, RCCLX_SUM, a, s) == RCCLX_SUCCESS);
      verify_kernel<<<64, 256, 0, s>>>(out[r], n, seed[r], N, r, err[r]);
      bump_kernel<<<1, 1, 0, s>>>(seed[r]);
    }
  }
  GPU_REQUIRE(rs.sync());
  for (int r = 0; r < N; ++r) {
    unsigned long long e = 1;
    GPU_REQUIRE(hipMemcpy(&e, err[r], 8, hipMemcpyDeviceToHost));
    INFO("rank " << r);
    CHECK(e == 0);
    CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
  }
}

// The LL tags' wrap-around rule (rcclx/dda/ll.h).  A: a buffer whose words
// still carry the tag this call expects, left by a call 2^32 calls earlier
// (counters set to that state), must be re-tagged before any peer polls:
// rank 0 starts late (a delay kernel before its call), so without the
// re-tagging its peers would read the old call's data.  B: 2^30 calls after
// the last re-tagging of both buffers, across the 32-bit wrap of the call
// count and of the tags.  Every result is checked against its own inputs.
TEST_CASE("dda allreduce: LL re-tagging and the wrap of its call count", "[gpu][dda]") {
  const int N = 4;
  const size_t big = RCCLX_LL_MAX_BYTES / 2;  // bf16: every word of a rank's slot
  rank_set rs;
  REQUIRE(rs.init(N) == RCCLX_SUCCESS);
  verify_bufs vb(rs, big);
  auto run = [&](size_t n, bool late) {
    for (int r = 0; r < N; ++r) {
      hipStream_t s = rs.on(r);
      fill_kernel<<<64, 256, 0, s>>>(vb.in[r], n, vb.seed[r], r);
      if (late && r == 0) delay_kernel<<<1, 1, 0, s>>>(20ll * 1000 * 1000);  // ~10 ms
      REQUIRE(rcclx_allreduce(&rs.comm[r], vb.in[r], vb.out[r], n, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_LL, s) ==
              RCCLX_SUCCESS);
      verify_kernel<<<64, 256, 0, s>>>(vb.out[r], n, vb.seed[r], N, r, vb.err[r]);
      bump_kernel<<<1, 1, 0, s>>>(vb.seed[r]);
    }
    GPU_REQUIRE(rs.sync());
  };
  // A: call 0 fills buffer 0 with tag 1; then the state of call 2^32 (count
  // 0 again, buffer 0 last re-tagged 2^30 calls ago).
  run(big, false);
  set_ll_counters(rs, 0u, 0u - RCCLX_LL_RETAG_CALLS, 1u);
  run(big, true);
  CHECK(ll_calls_of(rs, 0, 0) == 1u);
  check_ll_cleaned(rs, 0u, 1u);  // buffer 0 re-tagged by call 0, buffer 1 untouched
  // B: both buffers due, 6 calls before the wrap; 12 calls of changing sizes.
  const uint32_t k0 = 0u - 6u;
  set_ll_counters(rs, k0, k0 - RCCLX_LL_RETAG_CALLS, k0 + 1u - RCCLX_LL_RETAG_CALLS);
  const size_t sizes[] = {big, 7, 4099, big, 1, big - 2741};
  for (int i = 0; i < 12; ++i) run(sizes[i % 6], i % 4 == 1);
  // Every call advanced every block slot, whatever its grid (1 block for
  // 7 and 1 elements, all of them for `big`; rcclx_ll_blocks).
  for (int r = 0; r < N; ++r)
    for (int b = 0; b < rs.comm[r].view.nblocks; ++b) {
      INFO("rank " << r << " slot " << b);
      CHECK(ll_calls_of(rs, r, b) == k0 + 12u);
    }
  // Each buffer re-tagged once, by its first call (k0, k0 + 1), not again.
  check_ll_cleaned(rs, k0, k0 + 1u);
  for (int r = 0; r < N; ++r) {
    unsigned long long e = 1;
    GPU_REQUIRE(hipMemcpy(&e, vb.err[r], 8, hipMemcpyDeviceToHost));
    INFO("rank " << r);
    CHECK(e == 0);
    CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
  }
}

// LL carries every bit pattern as it is: NaNs with any payload (all-ones,
// signalling, negative) and -0.0 give the flat kernel's bits exactly.
TEST_CASE("dda allreduce: LL on NaN payloads and -0.0, bitwise the flat kernel's", "[gpu][dda]") {
  const int N = 4;
  const size_t n = 1000;
  rank_set rs;
  REQUIRE(rs.init(N) == RCCLX_SUCCESS);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::vector<rcclx_bf16>> h(N, std::vector<rcclx_bf16>(n));
  for (auto& v : h)
    for (auto& x : v) x = rcclx_from_f32<rcclx_bf16>(nd(rng));
  h[1][5].bits = 0xFFFF;
  h[2][7].bits = 0x7F81;  // a signalling NaN's payload
  h[3][8].bits = 0xFFC1;  // a negative quiet NaN with a payload
  for (int r = 0; r < N; ++r) h[r][9].bits = 0x8000;  // -0.0 everywhere: the sum is -0.0
  std::vector<rcclx_bf16*> in(N), out(N);
  for (int r = 0; r < N; ++r) {
    rs.on(r);
    GPU_REQUIRE(hipMalloc((void**)&in[r], n * 2));
    GPU_REQUIRE(hipMalloc((void**)&out[r], n * 2));
    GPU_REQUIRE(hipMemcpy(in[r], h[r].data(), n * 2, hipMemcpyHostToDevice));
  }
  GPU_REQUIRE(rs.settle());
  for (rcclx_op op : {RCCLX_SUM, RCCLX_MAX}) {
    std::vector<rcclx_bf16> res[2];
    const rcclx_algo algos[2] = {RCCLX_ALGO_FLAT, RCCLX_ALGO_LL};
    for (int k = 0; k < 2; ++k) {
      for (int r = 0; r < N; ++r) GPU_REQUIRE(hipMemset(out[r], 0x11, n * 2));
      GPU_REQUIRE(rs.settle());
      for (int r = 0; r < N; ++r)
        REQUIRE(rcclx_allreduce(&rs.comm[r], in[r], out[r], n, RCCLX_BFLOAT16, op, algos[k], rs.stream[r]) ==
                RCCLX_SUCCESS);
      GPU_REQUIRE(rs.sync());
      for (int r = 0; r < N; ++r) REQUIRE(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
      res[k].resize(n);
      GPU_REQUIRE(hipMemcpy(res[k].data(), out[N - 1], n * 2, hipMemcpyDeviceToHost));
    }
    INFO("op " << rcclx_op_name(op));
    for (size_t i = 0; i < n; ++i) {
      if (res[0][i].bits != res[1][i].bits) FAIL_CHECK("i " << i << " flat " << res[0][i].bits << " ll " << res[1][i].bits);
      if (op == RCCLX_SUM && (i == 5 || i == 7 || i == 8)) CHECK(std::isnan(rcclx_to_f32(res[1][i])));
    }
    if (op == RCCLX_SUM) CHECK(res[1][9].bits == 0x8000);
  }
  for (int r = 0; r < N; ++r) { (void)hipFree(in[r]); (void)hipFree(out[r]); }
}

// One zeroed buffer of `count` floats per rank of rs, on the rank's device,
// in place before anything runs on the rank streams.  Free with free_all.
static std::vector<float*> zeroed_floats(rank_set& rs, size_t count) {
  std::vector<float*> b(rs.n);
  for (int r = 0; r < rs.n; ++r) {
    GPU_REQUIRE(hipSetDevice(rs.dev[r]));
    GPU_REQUIRE(hipMalloc((void**)&b[r], count * sizeof(float)));
    GPU_REQUIRE(hipMemset(b[r], 0, count * sizeof(float)));
  }
  GPU_REQUIRE(rs.settle());
  return b;
}
static void free_all(const std::vector<float*>& b) {
  for (auto p : b) (void)hipFree(p);
}

// After a reported disagreement (both errors read): the next call on which
// the ranks agree (`count` floats of 0.25 in buf, in place) records no
// error and gives 0.25 * nranks everywhere.
static void agreeing_call_is_right(rank_set& rs, const std::vector<float*>& buf, size_t count, rcclx_algo algo) {
  std::vector<float> h(count, 0.25f), got(count);
  for (int r = 0; r < rs.n; ++r) GPU_REQUIRE(hipMemcpy(buf[r], h.data(), count * 4, hipMemcpyHostToDevice));
  GPU_REQUIRE(rs.settle());
  for (int r = 0; r < rs.n; ++r)
    REQUIRE(rcclx_allreduce(&rs.comm[r], buf[r], buf[r], count, RCCLX_FLOAT32, RCCLX_SUM, algo, rs.stream[r]) ==
            RCCLX_SUCCESS);
  GPU_REQUIRE(rs.sync());
  for (int r = 0; r < rs.n; ++r) {
    CHECK(rcclx_comm_check(&rs.comm[r], nullptr) == RCCLX_SUCCESS);
    GPU_REQUIRE(hipMemcpy(got.data(), buf[r], count * 4, hipMemcpyDeviceToHost));
    CHECK((size_t)std::count(got.begin(), got.end(), 0.25f * (float)rs.n) == count);
  }
}

TEST_CASE("dda allreduce: watchdog turns a rank that never launches into an error", "[gpu][dda]") {
  rcclx_config cfg = {};
  cfg.watchdog_ns = 200ull * 1000 * 1000;
  const int N = 4;
  rank_set rs;
  REQUIRE(rs.init(N, &cfg) == RCCLX_SUCCESS);
  const std::vector<float*> buf = zeroed_floats(rs, 4096);
  for (rcclx_algo algo : {RCCLX_ALGO_FLAT, RCCLX_ALGO_LL}) {
    rank_set rs2;  // a fresh communicator per algorithm: a timeout leaves the old one out of step
    REQUIRE(rs2.init(N, &cfg) == RCCLX_SUCCESS);
    for (int r = 1; r < N; ++r)  // rank 0 never calls
      REQUIRE(rcclx_allreduce(&rs2.comm[r], buf[r], buf[r], 4096, RCCLX_FLOAT32, RCCLX_SUM, algo, rs2.stream[r]) ==
              RCCLX_SUCCESS);
    GPU_REQUIRE(rs2.sync());  // returns: no hang
    for (int r = 1; r < N; ++r) {
      rcclx_error_record rec;
      INFO("algo " << rcclx_algo_name(algo) << " rank " << r);
      CHECK(rcclx_comm_check(&rs2.comm[r], &rec) == RCCLX_ERR_PEER_TIMEOUT);
      CHECK(rec.rank == r);
      CHECK(rec.peer == 0);
      CHECK(rcclx_comm_check(&rs2.comm[r], nullptr) == RCCLX_SUCCESS);  // cleared
    }
  }
  free_all(buf);
}

TEST_CASE("dda allreduce: ranks that disagree are reported / not hung", "[gpu][dda]") {
  const int N = 2;
  rank_set rs;
  REQUIRE(rs.init(N) == RCCLX_SUCCESS);
  const std::vector<float*> buf = zeroed_floats(rs, 8192);
  // LL counts give different grids (rcclx_ll_blocks: 16 and 32 blocks;
  // 1 and 16): the larger grid's blocks find their slots' headers written
  // by the smaller grid, with the other fingerprint.
  const struct { rcclx_algo algo; size_t n0, n1; } pairs[] = {
      {RCCLX_ALGO_FLAT, 4096, 8192}, {RCCLX_ALGO_LL, 4096, 8192}, {RCCLX_ALGO_LL, 3, 4096}};
  for (const auto& p : pairs) {
    rank_set rs2;  // fresh: an LL mismatch leaves a communicator out of step
    REQUIRE(rs2.init(N) == RCCLX_SUCCESS);
    REQUIRE(rcclx_allreduce(&rs2.comm[0], buf[0], buf[0], p.n0, RCCLX_FLOAT32, RCCLX_SUM, p.algo, rs2.stream[0]) ==
            RCCLX_SUCCESS);
    REQUIRE(rcclx_allreduce(&rs2.comm[1], buf[1], buf[1], p.n1, RCCLX_FLOAT32, RCCLX_SUM, p.algo, rs2.stream[1]) ==
            RCCLX_SUCCESS);
    GPU_REQUIRE(rs2.sync());
    INFO("algo " << rcclx_algo_name(p.algo) << ", counts " << p.n0 << " and " << p.n1);
    CHECK(rcclx_comm_check(&rs2.comm[0], nullptr) == RCCLX_ERR_RANK_MISMATCH);
    CHECK(rcclx_comm_check(&rs2.comm[1], nullptr) == RCCLX_ERR_RANK_MISMATCH);
  }
  // Counts on both sides of the LL threshold: AUTO runs LL on some ranks
  // and the flat kernel on the others.  Each side reports the mismatch
  // (the LL ranks arrive at the others' barrier with their fingerprint, at
  // every block slot, also those beyond the LL launch's smaller grid)
  // instead of waiting forever.  The watchdog (2 s) only turns a
  // regression into PEER_TIMEOUT instead of a hung test.
  for (int n : {2, 4})
    for (int lo : {4096, 5}) {
      rcclx_config cfg = {};
      cfg.watchdog_ns = 2000ull * 1000 * 1000;
      rank_set rs2;
      REQUIRE(rs2.init(n, &cfg) == RCCLX_SUCCESS);
      for (int r = 0; r < n; ++r) rs2.comm[r].ll_max_bytes = 64 << 10;
      const std::vector<float*> b = zeroed_floats(rs2, 32768);
      for (int r = 0; r < n; ++r)  // the lower half: 16 KiB or 20 bytes (LL); the upper: 128 KiB (flat)
        REQUIRE(rcclx_allreduce(&rs2.comm[r], b[r], b[r], r < n / 2 ? lo : 32768, RCCLX_FLOAT32, RCCLX_SUM,
                                RCCLX_ALGO_AUTO, rs2.stream[r]) == RCCLX_SUCCESS);
      GPU_REQUIRE(rs2.sync());
      for (int r = 0; r < n; ++r) {
        INFO("LL (" << lo << " elements) against flat, " << n << " ranks, rank " << r);
        CHECK(rcclx_comm_check(&rs2.comm[r], nullptr) == RCCLX_ERR_RANK_MISMATCH);
      }
      free_all(b);
    }
  // Counts that agree in the first chunk but not in total (64 KiB regions:
  // 128 KiB is two chunks on rank 0, 64 KiB one on rank 1): the first
  // chunk's fingerprints differ, and rank 0 skips its second chunk (its
  // error is unread) instead of waiting for rank 1.  Once both errors are
  // read, an agreeing call is right.
  {
    rcclx_config cfg = {};
    cfg.watchdog_ns = 2000ull * 1000 * 1000;
    cfg.region_bytes = 64 << 10;
    rank_set rs2;
    REQUIRE(rs2.init(N, &cfg) == RCCLX_SUCCESS);
    const std::vector<float*> b = zeroed_floats(rs2, 32768);
    for (int r = 0; r < N; ++r)
      REQUIRE(rcclx_allreduce(&rs2.comm[r], b[r], b[r], r == 0 ? 32768 : 16384, RCCLX_FLOAT32, RCCLX_SUM,
                              RCCLX_ALGO_FLAT, rs2.stream[r]) == RCCLX_SUCCESS);
    GPU_REQUIRE(rs2.sync());
    for (int r = 0; r < N; ++r) {
      INFO("chunked counts, rank " << r);
      CHECK(rcclx_comm_check(&rs2.comm[r], nullptr) == RCCLX_ERR_RANK_MISMATCH);
    }
    agreeing_call_is_right(rs2, b, 32768, RCCLX_ALGO_FLAT);
    free_all(b);
  }
  // Barrier kernels end a mismatched call on every rank at the first
  // barrier, even when the ranks' kernels have different barrier counts
  // (AUTO: rank 0 runs the direct tree, 3 barriers, rank 1 the staged
  // flat, 1; TREE: direct 3 vs staged 2), and the communicator stays
  // usable: the next agreeing call is correct.
  for (rcclx_algo algo : {RCCLX_ALGO_AUTO, RCCLX_ALGO_TREE}) {
    rank_set rs2;
    REQUIRE(rs2.init(N) == RCCLX_SUCCESS);
    rs2.comm[0].direct_min_bytes = 0;         // rank 0 reads directly,
    rs2.comm[1].direct_min_bytes = SIZE_MAX;  // rank 1 stages: they disagree
    for (int r = 0; r < N; ++r) rs2.comm[r].ll_max_bytes = 0;  // barrier kernels only
    for (int r = 0; r < N; ++r)
      REQUIRE(rcclx_allreduce(&rs2.comm[r], buf[r], buf[r], 4096, RCCLX_FLOAT32, RCCLX_SUM, algo, rs2.stream[r]) ==
              RCCLX_SUCCESS);
    GPU_REQUIRE(rs2.sync());
    INFO("algo " << rcclx_algo_name(algo));
    for (int r = 0; r < N; ++r) CHECK(rcclx_comm_check(&rs2.comm[r], nullptr) == RCCLX_ERR_RANK_MISMATCH);
    for (int r = 0; r < N; ++r) rs2.comm[r].direct_min_bytes = 0;
    agreeing_call_is_right(rs2, buf, 4096, algo);
  }
  free_all(buf);
}

TEST_CASE("dda allreduce: bad input is rejected before launch", "[gpu][dda]") {
  rank_set rs;
  REQUIRE(rs.init(2) == RCCLX_SUCCESS);
  float* p = nullptr;
  GPU_REQUIRE(hipMalloc((void**)&p, 4096));
  CHECK(rcclx_allreduce(&rs.comm[0], p, p, 0, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[0]) == RCCLX_SUCCESS);
  CHECK(rcclx_allreduce(&rs.comm[0], nullptr, p, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[0]) == RCCLX_ERR_NULL_POINTER);
  CHECK(rcclx_allreduce(&rs.comm[0], p + 1, p + 1, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[0]) == RCCLX_ERR_MISALIGNED);
  CHECK(rcclx_allreduce(&rs.comm[0], p, p, 16, (rcclx_dtype)5, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[0]) == RCCLX_ERR_UNSUPPORTED_DTYPE);
  CHECK(rcclx_allreduce(&rs.comm[0], p, p, 16, RCCLX_FLOAT32, (rcclx_op)7, RCCLX_ALGO_AUTO, rs.stream[0]) == RCCLX_ERR_UNSUPPORTED_OP);
  CHECK(rcclx_allreduce(nullptr, p, p, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[0]) == RCCLX_ERR_NULL_POINTER);
  GPU_REQUIRE(hipFree(p));
  int dev0 = 0;
  rcclx_comm c[9];
  int devs[9] = {0};
  CHECK(rcclx_comms_init_local(9, devs, nullptr, c) == RCCLX_ERR_INVALID_NRANKS);
  CHECK(rcclx_comms_init_local(1, &dev0, nullptr, c) == RCCLX_ERR_INVALID_NRANKS);
}
