// Low-precision collectives sweep: where FP8 on the wire starts to pay.
// N ranks (virtual on one GPU, or real GPUs: tests/gpu/ranks.h), graph
// replays of K back-to-back calls, median of R, bf16 data.  For each size:
//   AllReduce: the full-precision DDA path (auto) against low-precision flat
//   and tree (default wire: e4m3, 128-element blocks, fp32 scales);
//   ReduceScatter / AllGather / AllToAll: raw wire against FP8 wire.
// Where every rank has a GPU of its own, the AllReduce rows also time NCCL
// on bf16 (nccl_baseline.h; path nccl_bf16), checked first.
// Output: CSV (argv[1]) and a table on stdout; speedups are against the
// full-precision path measured in the same run.
#include "nccl_baseline.h"

int main(int argc, char** argv) {
  FILE* csv = bench_start(argc, argv, "bench_lowp", "nranks,collective,path,bytes_per_rank,us,wire_bytes_per_elem,speedup_vs_full");
  if (!csv) return 1;
  const size_t max_bytes = (size_t)64 << 20;
  const size_t sizes[] = {(size_t)256 << 10, (size_t)1 << 20, (size_t)4 << 20, (size_t)16 << 20, (size_t)64 << 20};
  const rcclx_wire fp8 = rcclx_wire_default(), raw = rcclx_wire_raw();
  const double wire_fp8 = rcclx_lowp_wire_bytes_per_elem(fp8, 2);
  bench_nccl nccl;
  bench_nccl_open(&nccl);
  printf("%-3s %-14s %10s %9s %9s %9s %8s\n", "N", "collective", "bytes", "full_us", "lp_flat", "lp_tree", "best_x");
  for (int N : {2, 4, 8}) {
    rank_set rs;
    RK(rs.init(N));
    std::vector<void*> in(N), out(N);
    for (int r = 0; r < N; ++r) {
      CK(hipSetDevice(rs.dev[r]));
      CK(hipMalloc(&in[r], max_bytes * N));
      CK(hipMalloc(&out[r], max_bytes * N));
      bench_fill_kernel<<<256, 256>>>((uint16_t*)in[r], max_bytes * N / 2, r);
      CK(hipDeviceSynchronize());
    }
    bench_nccl_begin(&nccl, rs);
    auto row = [&](const char* coll, const char* path, size_t bytes, double us, double wire, double full) {
      fprintf(csv, "%d,%s,%s,%zu,%.3f,%.4f,%.3f\n", N, coll, path, bytes, us, wire, full / us);
    };
    for (size_t bytes : sizes) {
      const size_t count = bytes / 2;
      const int K = bytes >= ((size_t)16 << 20) ? 5 : 20;
      const double full = time_graph(rs, [&](int r) {
        RK(rcclx_allreduce(&rs.comm[r], in[r], out[r], count, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[r]));
      }, K, 7);
      double lp[2];
      for (int t = 0; t < 2; ++t)
        lp[t] = time_graph(rs, [&](int r) {
          RK(rcclx_lowp_collective(&rs.comm[r], t ? RCCLX_LOWP_ALLREDUCE_TREE : RCCLX_LOWP_ALLREDUCE_FLAT, in[r], out[r],
                                   count, RCCLX_BFLOAT16, fp8, rs.stream[r]));
        }, K, 7);
      row("allreduce", "full_auto", bytes, full, 2.0, full);
      row("allreduce", "lowp_flat", bytes, lp[0], wire_fp8, full);
      row("allreduce", "lowp_tree", bytes, lp[1], wire_fp8, full);
      printf("%-3d %-14s %10zu %9.2f %9.2f %9.2f %7.2fx\n", N, "allreduce", bytes, full, lp[0], lp[1],
             full / std::min(lp[0], lp[1]));
      const double nccl_us = bench_nccl_point(rs, &nccl, in, out, count, RCCLX_BFLOAT16, K, 7, false);
      if (nccl_us > 0) {  // speedup_vs_full of this row: full / NCCL
        row("allreduce", "nccl_bf16", bytes, nccl_us, 2.0, full);
        printf("%-3d %-14s %10zu nccl bf16 %9.2f: best low precision x%.2f\n", N, "allreduce", bytes, nccl_us,
               nccl_us / std::min(lp[0], lp[1]));
      }
      fflush(stdout);
      if (bytes != ((size_t)16 << 20)) continue;
      // The other collectives at one size: count per peer = bytes / 2 / N.
      const struct { rcclx_lowp_kind k; const char* name; } others[] = {
          {RCCLX_LOWP_REDUCE_SCATTER, "reduce_scatter"}, {RCCLX_LOWP_ALLGATHER, "allgather"},
          {RCCLX_LOWP_ALLTOALL, "alltoall"}};
      for (const auto& o : others) {
        const size_t per = count / N;
        double us[2];
        for (int t = 0; t < 2; ++t)
          us[t] = time_graph(rs, [&](int r) {
            RK(rcclx_lowp_collective(&rs.comm[r], o.k, in[r], out[r], per, RCCLX_BFLOAT16, t ? fp8 : raw, rs.stream[r]));
          }, K, 7);
        row(o.name, "full_raw", bytes, us[0], 2.0, us[0]);
        row(o.name, "lowp", bytes, us[1], wire_fp8, us[0]);
        printf("%-3d %-14s %10zu %9.2f %9.2f %9s %7.2fx\n", N, o.name, bytes, us[0], us[1], "-", us[0] / us[1]);
      }
    }
    for (int r = 0; r < N; ++r) RK(rcclx_comm_check(&rs.comm[r], nullptr));
    bench_nccl_fini(&nccl);
    for (int r = 0; r < N; ++r) {
      (void)hipFree(in[r]);
      (void)hipFree(out[r]);
    }
  }
  fclose(csv);
  return 0;
}
