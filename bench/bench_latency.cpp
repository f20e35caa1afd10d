// Where a small AllReduce's time goes (issue #3's latency target): the
// staged one-shot rebuilt from the library's own pieces with stages left
// out, each timed like bench_dda (graph replay of K back-to-back calls,
// fork/join once per graph, median of R), with and without programmatic
// dependent launch; then an in-kernel trace of the full one-shot (block 0
// of every rank: when it started on the global timer, and the cycles of
// each stage on its own multiprocessor's clock).
// Output: CSV (argv[1]) and two tables on stdout.  A diagnosis, not a test.
#include "timing.h"

typedef rcclx_bf16 bf;

__global__ void empty_kernel() {}
// The same grid as the collective, with the dependent-launch calls.
__global__ void empty_grid_kernel() {
  rcclx_grid_dependency_wait();
  rcclx_grid_dependents_launch();
}

// One trace record per (rank, call % TRACE_CALLS): start time (global ns),
// cycles of open / copy-in / barrier / reduce, time the barrier passed.
#define TRACE_CALLS 64
#define TRACE_WORDS 8
struct trace_rec {
  unsigned long long start_ns, open_cyc, copy_cyc, barrier_cyc, reduce_cyc, passed_ns, pad0, pad1;
};

// STEPS: 0 = open and close the call (counters, barrier session); 1 = + the
// staging copy; 2 = + the barrier; 3 = + the reduction: the staged flat
// kernel of rcclx/dda/kernels.h, stage for stage.  4 = 3, but the
// reduction reads this rank's own staging nranks times instead of the
// peers' (same loads, no peer memory): whether peer data costs more.
template <int STEPS>
__global__ void __launch_bounds__(RCCLX_MAX_THREADS)
    probe_kernel(rcclx_dev_comm c, const bf* send, bf* recv, size_t n, uint32_t sig, trace_rec* trace) {
  __shared__ rcclx_call_card cards[RCCLX_MAX_RANKS], own[RCCLX_MAX_RANKS];
  // Stamps in shared memory, written by thread 0 only: no registers held
  // across the stages (the full variant must not spill).
  __shared__ unsigned long long stamp[7];
  const bool t0 = threadIdx.x == 0;
  if (t0) stamp[0] = rcclx_wall_ns(), stamp[1] = clock64();
  rcclx_dda_call k = rcclx_dda_open_call(c);
  k.nvec = (n + 7) / 8;
  if (t0) stamp[2] = clock64();
  if (STEPS >= 1) {
    const size_t off = rcclx_dda_staged_offset(c, k.call);
    rcclx_dda_cards_at(c, off, cards);
    if (STEPS >= 4 && (int)threadIdx.x < c.nranks) {
      own[threadIdx.x].send = (char*)c.bufs[c.rank] + off;
      own[threadIdx.x].recv = NULL;
    }
    rcclx_dda_copy_in(send, (char*)c.bufs[c.rank] + off, n, k.nvec);
  }
  if (t0) stamp[3] = clock64();
  if (STEPS >= 2 && rcclx_dda_first_barrier(c, &k, sig, RCCLX_SRC_STAGED, send, recv, cards)) return;
  if (t0) stamp[4] = clock64(), stamp[5] = rcclx_wall_ns();
  rcclx_dda_done_waiting();
  if (STEPS >= 3) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < k.nvec; v += stride)
      rcclx_store_vec_clipped(recv, v, n,
                              rcclx_dda_reduce_sources<bf, RCCLX_SUM, 8>(STEPS >= 4 ? own : cards, c.nranks, v, n));
  }
  if (t0) stamp[6] = clock64();
  rcclx_dda_finish_call(c, &k);
  if (trace && blockIdx.x == 0 && t0) {
    trace_rec* r = &trace[c.rank * TRACE_CALLS + k.call % TRACE_CALLS];
    r->start_ns = stamp[0];
    r->open_cyc = stamp[2] - stamp[1];
    r->copy_cyc = stamp[3] - stamp[2];
    r->barrier_cyc = stamp[4] - stamp[3];
    r->reduce_cyc = stamp[6] - stamp[4];
    r->passed_ns = stamp[5];
  }
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int main(int argc, char** argv) {
  FILE* csv = bench_start(argc, argv, "bench_latency", "nranks,variant,pdl,bytes,us,floor_us,over_floor_us");
  if (!csv) return 1;
  int clock_khz = 0;
  CK(hipDeviceGetAttribute(&clock_khz, hipDeviceAttributeClockRate, 0));
  const size_t bytes = 16 << 10, n = bytes / 2, max_bytes = 64 << 10;
  printf("%-3s %-28s %-4s %8s %8s %8s\n", "N", "variant", "pdl", "us", "floor", "over");
  for (int N : {2, 8}) {
    // solo_*: the one-stream variants, which run on rank 0 alone, get ranks
    // of their own (the others' call counts must stay in step).
    rank_set on, off, solo_on, solo_off;
    RK(on.init(N));
    RK(solo_on.init(N));
    rcclx_config cfg = {};
    cfg.pdl = RCCLX_PDL_OFF;
    RK(off.init(N, &cfg));
    RK(solo_off.init(N, &cfg));
    std::vector<void*> in(N), out(N);  // 64 KiB: the largest row
    trace_rec* trace = nullptr;
    CK(hipMalloc(&trace, sizeof(trace_rec) * RCCLX_MAX_RANKS * TRACE_CALLS));
    CK(hipMemset(trace, 0, sizeof(trace_rec) * RCCLX_MAX_RANKS * TRACE_CALLS));
    for (int r = 0; r < N; ++r) {
      CK(hipMalloc(&in[r], max_bytes));
      CK(hipMalloc(&out[r], max_bytes));
      bench_fill_kernel<<<16, 256>>>((uint16_t*)in[r], max_bytes / 2, r);
    }
    CK(hipDeviceSynchronize());
    const rcclx_dev_comm& v0 = on.comm[0].view;
    const dim3 grid((unsigned)v0.nblocks), block((unsigned)v0.nthreads);
    const uint32_t sig = rcclx_call_signature(n, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_FLAT, RCCLX_SRC_STAGED);
    const double floor = time_graph(on, [&](int r) { empty_kernel<<<1, 32, 0, on.stream[r]>>>(); });
    auto row = [&](const char* name, int pdl, size_t b, double us) {
      fprintf(csv, "%d,%s,%d,%zu,%.3f,%.3f,%.3f\n", N, name, pdl, b, us, floor, us - floor);
      printf("%-3d %-28s %-4d %8.2f %8.2f %8.2f\n", N, name, pdl, us, floor, us - floor);
      fflush(stdout);
    };
    row("empty<<<1,32>>>", 0, 0, floor);
    for (int pdl : {0, 1}) {
      rank_set& rs = pdl ? on : off;
      rank_set& solo = pdl ? solo_on : solo_off;
      row("empty, comm grid", pdl, 0, time_graph(rs, [&](int r) {
            CK(rcclx_launch(empty_grid_kernel, grid, block, rs.stream[r], pdl));
          }));
      row("one stream: empty, comm grid", pdl, 0, time_graph(solo, [&](int r) {
            if (r == 0) CK(rcclx_launch(empty_grid_kernel, grid, block, solo.stream[r], pdl));
          }));
      row("one stream: open+close", pdl, 0, time_graph(solo, [&](int r) {
            if (r == 0)
              CK(rcclx_launch(probe_kernel<0>, grid, block, solo.stream[r], pdl, solo.comm[r].view,
                              (const bf*)in[r], (bf*)out[r], n, sig, (trace_rec*)nullptr));
          }));
      const char* names[] = {"open+close", "+ copy-in", "+ barrier", "+ reduce (= staged flat)",
                             "  reduce of own data only"};
      for (int s = 0; s < 5; ++s) {
        void (*k)(rcclx_dev_comm, const bf*, bf*, size_t, uint32_t, trace_rec*) =
            s == 0 ? probe_kernel<0> : s == 1 ? probe_kernel<1> : s == 2 ? probe_kernel<2>
                   : s == 3 ? probe_kernel<3> : probe_kernel<4>;
        row(names[s], pdl, bytes, time_graph(rs, [&](int r) {
              CK(rcclx_launch(k, grid, block, rs.stream[r], pdl, rs.comm[r].view, (const bf*)in[r], (bf*)out[r], n,
                              sig, (trace_rec*)nullptr));
            }));
      }
      for (size_t b : {(size_t)1 << 10, bytes, (size_t)64 << 10}) {
        for (rcclx_algo a : {RCCLX_ALGO_FLAT, RCCLX_ALGO_LAMPORT}) {
          char name[64];
          snprintf(name, sizeof name, "library %s %zu KiB", rcclx_algo_name(a), b >> 10);
          row(name, pdl, b, time_graph(rs, [&](int r) {
                RK(rcclx_allreduce(&rs.comm[r], in[r], out[r], b / 2, RCCLX_BFLOAT16, RCCLX_SUM, a, rs.stream[r]));
              }));
        }
      }
      for (int r = 0; r < N; ++r) RK(rcclx_comm_check(&rs.comm[r], nullptr));
    }
    {
      // The same calls on 64 KiB regions: each rank's whole registered
      // buffer then spans a few pages instead of about 50 (32 MiB regions),
      // a test of whether address translation is part of the cost.
      rank_set small;
      rcclx_config sc = {};
      sc.region_bytes = 64 << 10;
      RK(small.init(N, &sc));
      for (size_t b : {(size_t)1 << 10, bytes, (size_t)64 << 10})
        for (rcclx_algo a : {RCCLX_ALGO_FLAT, RCCLX_ALGO_LAMPORT}) {
          char name[64];
          snprintf(name, sizeof name, "64 KiB regions: %s %zu KiB", rcclx_algo_name(a), b >> 10);
          row(name, 1, b, time_graph(small, [&](int r) {
                RK(rcclx_allreduce(&small.comm[r], in[r], out[r], b / 2, RCCLX_BFLOAT16, RCCLX_SUM, a,
                                   small.stream[r]));
              }));
        }
      for (int r = 0; r < N; ++r) RK(rcclx_comm_check(&small.comm[r], nullptr));
    }

    // The trace: the full staged flat, no PDL, 64 calls in one graph.
    hipGraphExec_t ge;
    CK(off.capture(TRACE_CALLS, [&](int r) {
      CK(rcclx_launch(probe_kernel<3>, grid, block, off.stream[r], 0, off.comm[r].view, (const bf*)in[r],
                      (bf*)out[r], n, sig, trace));
    }, &ge));
    for (int w = 0; w < 3; ++w) CK(hipGraphLaunch(ge, off.stream[0]));
    CK(hipStreamSynchronize(off.stream[0]));
    CK(hipGraphExecDestroy(ge));
    std::vector<trace_rec> t(RCCLX_MAX_RANKS * TRACE_CALLS);
    CK(hipMemcpy(t.data(), trace, sizeof(trace_rec) * t.size(), hipMemcpyDeviceToHost));
    // Per call: each rank's start relative to the first rank's; the last
    // starter's stages; the barrier pass relative to the last start.
    std::vector<double> spread, last_open, last_copy, last_bar, last_red, first_bar, pass_after_last, period;
    const double ns_per_cyc = 1e6 / clock_khz;
    for (int k = 1; k < TRACE_CALLS - 1; ++k) {
      unsigned long long lo = ~0ull, hi = 0;
      int last = 0, first = 0;
      for (int r = 0; r < N; ++r) {
        const trace_rec& x = t[r * TRACE_CALLS + k];
        if (x.start_ns < lo) { lo = x.start_ns; first = r; }
        if (x.start_ns > hi) { hi = x.start_ns; last = r; }
      }
      const trace_rec& L = t[last * TRACE_CALLS + k];
      spread.push_back((hi - lo) / 1e3);
      last_open.push_back(L.open_cyc * ns_per_cyc / 1e3);
      last_copy.push_back(L.copy_cyc * ns_per_cyc / 1e3);
      last_bar.push_back(L.barrier_cyc * ns_per_cyc / 1e3);
      last_red.push_back(L.reduce_cyc * ns_per_cyc / 1e3);
      first_bar.push_back(t[first * TRACE_CALLS + k].barrier_cyc * ns_per_cyc / 1e3);
      pass_after_last.push_back(((long long)L.passed_ns - (long long)hi) / 1e3);
      period.push_back(((long long)t[0 * TRACE_CALLS + k + 1].start_ns - (long long)t[0 * TRACE_CALLS + k].start_ns) / 1e3);
    }
    printf("trace N=%d (median over %zu calls, us; cycles at the nominal %d MHz):\n", N, spread.size(), clock_khz / 1000);
    printf("  rank 0 start-to-start period %.2f | start spread first->last rank %.2f\n", median(period), median(spread));
    printf("  last starter: open %.2f  copy-in %.2f  barrier %.2f  reduce %.2f | its barrier passed %.2f after its start\n",
           median(last_open), median(last_copy), median(last_bar), median(last_red), median(pass_after_last));
    printf("  first starter's barrier wait %.2f\n", median(first_bar));
    fprintf(csv, "%d,trace_period,0,%zu,%.3f,%.3f,\n", N, bytes, median(period), floor);
    fprintf(csv, "%d,trace_start_spread,0,%zu,%.3f,%.3f,\n", N, bytes, median(spread), floor);
    fprintf(csv, "%d,trace_last_open,0,%zu,%.3f,%.3f,\n", N, bytes, median(last_open), floor);
    fprintf(csv, "%d,trace_last_copy,0,%zu,%.3f,%.3f,\n", N, bytes, median(last_copy), floor);
    fprintf(csv, "%d,trace_last_barrier,0,%zu,%.3f,%.3f,\n", N, bytes, median(last_bar), floor);
    fprintf(csv, "%d,trace_last_reduce,0,%zu,%.3f,%.3f,\n", N, bytes, median(last_red), floor);
    fprintf(csv, "%d,trace_last_pass_after_start,0,%zu,%.3f,%.3f,\n", N, bytes, median(pass_after_last), floor);
    for (int r = 0; r < N; ++r) {
      (void)hipFree(in[r]);
      (void)hipFree(out[r]);
    }
    (void)hipFree(trace);
  }
  fclose(csv);
  return 0;
}
