// DDA AllReduce sweep: N ranks (virtual on one GPU, or real GPUs: see
// tests/gpu/ranks.h), graph replays of K back-to-back calls, median of R.
// Baselines measured in the same run: an empty kernel per rank with the same
// fork/join graph (the launch floor) and a device-to-device copy of the
// unique bytes (each rank's input read once + output written once).
// Where every rank has a GPU of its own, NCCL (PyTorch's bundled libnccl,
// loaded at run time: nccl_baseline.h) is timed the same way in the same
// process, after a check of its result; with virtual ranks it cannot run
// (NCCL refuses two ranks on one GPU) and the output says so.
// Output: CSV on stdout's file (argv[1]) and a table on stdout.
// `bench_dda --nccl-selftest`: the NCCL baseline's plumbing on one GPU.
#include "nccl_baseline.h"

__global__ void empty_kernel() {}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--nccl-selftest") == 0) {
    bench_require_gpu("bench_dda --nccl-selftest");
    return bench_nccl_selftest();
  }
  FILE* csv = bench_start(argc, argv, "bench_dda", "nranks,dtype,algo,bytes,us,empty_us,copy_us,algbw_GBps,busbw_GBps,frac_copy");
  if (!csv) return 1;
  bench_nccl nccl;
  bench_nccl_open(&nccl);
  const size_t max_bytes = (size_t)64 << 20;
  const size_t sizes[] = {1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 2 << 20, 4 << 20, 32 << 20, 64 << 20};
  printf("%-3s %-5s %-5s %10s %10s %8s %8s %9s %7s\n", "N", "dtype", "algo", "bytes", "us", "floor", "copy_us", "busbw", "%copy");
  for (int N : {2, 4, 8}) {
    // rs: the defaults (virtual ranks: device-scope barriers, direct access
    // from RCCLX_DIRECT_MIN_BYTES up); staged: never direct; sys: barriers
    // at system scope, as GPUs over links need (what they cost here).
    rank_set rs, staged, sys;
    RK(rs.init(N));
    rcclx_config cfg = {};
    cfg.direct = RCCLX_DIRECT_OFF;
    RK(staged.init(N, &cfg));
    cfg.direct = RCCLX_DIRECT_AUTO;
    cfg.system_scope = 1;
    RK(sys.init(N, &cfg));
    std::vector<void*> in(N), out(N), scratch(N);
    for (int r = 0; r < N; ++r) {
      CK(hipSetDevice(rs.dev[r]));
      CK(hipMalloc(&in[r], max_bytes));
      CK(hipMalloc(&out[r], max_bytes));
      CK(hipMalloc(&scratch[r], 2 * max_bytes));
      bench_fill_kernel<<<256, 256>>>((uint16_t*)in[r], max_bytes / 2, r);
      bench_fill_kernel<<<256, 256>>>((uint16_t*)rcclx_comm_input(&rs.comm[r]), rs.comm[r].view.region_bytes / 2, r);
      CK(hipDeviceSynchronize());
    }
    bench_nccl_begin(&nccl, rs);
    // One CSV row and table line.
    auto row = [&](rcclx_dtype dt, const char* name, size_t bytes, double us, double floor, double copy) {
      const double algbw = bytes / us / 1e3, busbw = algbw * 2.0 * (N - 1) / N;
      fprintf(csv, "%d,%s,%s,%zu,%.3f,%.3f,%.3f,%.2f,%.2f,%.3f\n", N, rcclx_dtype_name(dt), name, bytes, us, floor, copy,
              algbw, busbw, copy / us);
      printf("%-3d %-5s %-7s %10zu %10.2f %8.2f %8.2f %9.1f %6.0f%%\n", N, rcclx_dtype_name(dt), name, bytes, us, floor,
             copy, busbw, 100 * copy / us);
      fflush(stdout);
    };
    // NCCL at one point, while it has communicators (bench_nccl_point).
    auto nccl_point = [&](rcclx_dtype dt, const char* name, size_t bytes, int K, bool join_each, double floor,
                          double copy) {
      const double us = bench_nccl_point(rs, &nccl, in, out, bytes / rcclx_dtype_size(dt), dt, K, 9, join_each);
      if (us > 0) row(dt, name, bytes, us, floor, copy);
    };
    const auto empty_body = [&](int r) { empty_kernel<<<1, 32, 0, rs.stream[r]>>>(); };
    const double empty = time_graph(rs, empty_body);
    // The floor as issue #3 defines it: fork/join around every call (every
    // rank's call must finish before any rank's next starts), for the
    // empty kernel and the small-message AllReduce alike; timed beside each
    // fork/join point (time_graph_with_floor).
    // (How the floor timed alone, once, compares: the method before.)
    printf("N=%d fork/join floor timed alone at the start: %.2f us\n", N, time_graph(rs, empty_body, 20, 15, true));
    for (size_t bytes : sizes) {
      // Unique bytes: each rank's input read once and output written once.
      const double copy = time_graph(rs, [&](int r) {
        CK(hipMemcpyAsync(scratch[r], in[r], bytes, hipMemcpyDeviceToDevice, rs.stream[r]));
      }, bytes >= (16u << 20) ? 5 : 20, 9);
      for (rcclx_dtype dt : {RCCLX_BFLOAT16, RCCLX_FLOAT32}) {
        if (dt == RCCLX_FLOAT32 && bytes != (16u << 10) && bytes != (32u << 20)) continue;
        // auto_zc: the input already sits in the registered region (what a
        // fused producer does): no copy-in pass.
        // -1: auto zero-copy (the input already sits in the registered
        // region, what a fused producer does); -2: auto, never direct;
        // -3 / -4: flat / auto with system-scope barriers.
        for (int a : {(int)RCCLX_ALGO_FLAT, (int)RCCLX_ALGO_TREE, (int)RCCLX_ALGO_LL, (int)RCCLX_ALGO_AUTO, -1, -2,
                      -3, -4}) {
          const size_t count = bytes / rcclx_dtype_size(dt);
          const bool zc = a == -1;
          if (a == RCCLX_ALGO_LL && bytes > RCCLX_LL_MAX_BYTES) continue;
          if (zc && bytes > rs.comm[0].view.region_bytes) continue;
          if (a == -3 && bytes > (64u << 10)) continue;
          rank_set& set = a == -2 ? staged : a <= -3 ? sys : rs;
          const rcclx_algo algo = a == -3 ? RCCLX_ALGO_FLAT : a < 0 ? RCCLX_ALGO_AUTO : (rcclx_algo)a;
          const int K = bytes >= (16u << 20) ? 5 : 20;
          const double us = time_graph(set, [&](int r) {
            const void* src = zc ? rcclx_comm_input(&set.comm[r]) : in[r];
            RK(rcclx_allreduce(&set.comm[r], src, out[r], count, dt, RCCLX_SUM, algo, set.stream[r]));
          }, K, 9);
          for (int r = 0; r < N; ++r) RK(rcclx_comm_check(&set.comm[r], nullptr));
          const char* names[] = {"auto_zc", "auto_staged", "flat_sys", "auto_sys"};
          row(dt, a < 0 ? names[-a - 1] : rcclx_algo_name(algo), bytes, us, empty, copy);
        }
        nccl_point(dt, "nccl", bytes, bytes >= (16u << 20) ? 5 : 20, false, empty, copy);
        if (bytes <= (64u << 10)) {  // small messages, fork/join per call, each against its own floor
          for (rcclx_algo algo : {RCCLX_ALGO_FLAT, RCCLX_ALGO_AUTO}) {
            const size_t count = bytes / rcclx_dtype_size(dt);
            double floor_fj = 0;
            const double us = time_graph_with_floor(rs, [&](int r) {
              RK(rcclx_allreduce(&rs.comm[r], in[r], out[r], count, dt, RCCLX_SUM, algo, rs.stream[r]));
            }, empty_body, &floor_fj, 20, 15, true);
            for (int r = 0; r < N; ++r) RK(rcclx_comm_check(&rs.comm[r], nullptr));
            row(dt, algo == RCCLX_ALGO_FLAT ? "flat_fj" : "auto_fj", bytes, us, floor_fj, copy);
          }
          if (nccl.n) nccl_point(dt, "nccl_fj", bytes, 20, true, time_graph(rs, empty_body, 20, 15, true), copy);
        }
      }
    }
    bench_nccl_fini(&nccl);
    for (int r = 0; r < N; ++r) {
      (void)hipFree(in[r]); (void)hipFree(out[r]); (void)hipFree(scratch[r]);
    }
  }
  fclose(csv);
  return 0;
}
