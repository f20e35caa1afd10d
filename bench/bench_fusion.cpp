// Fusion examples timed against their unfused sequences, same run, graph
// replays (median), at 2, 4 and 8 ranks: GEMM + AllReduce three ways at
// decode shapes (M = 1..64 tokens) and one prefill shape, and the vendor
// GEMM (cuBLAS) alone and followed by the zero-copy rcclx AllReduce (its
// output written straight into the registered buffer); AllReduce + residual
// + RMSNorm fused (each shape, and AUTO's pick) vs zero-copy AllReduce +
// RMSNorm kernel, 1 to 1024 tokens.  Speedups are against the unfused
// sequence.  Output: CSV (argv[1]) and a table on stdout.
#include "../examples/allreduce_rmsnorm.h"
#include "../examples/gemm_allreduce.h"
#include "../examples/gemm_allreduce_fp8.h"
#include "timing.h"
#include "vendor_gemm.h"

int main(int argc, char** argv) {
  FILE* csv = bench_start(argc, argv, "bench_fusion", "nranks,what,M,N,K,way,us,speedup_vs_unfused");
  if (!csv) return 1;
  printf("%-3s %-14s %6s %6s %6s %10s %10s %10s %10s %10s %10s %10s %10s\n", "N", "what", "M", "N", "K", "gemm_only",
         "unfused", "epilogue", "fused", "fused_fp8", "unf_fp8", "vendor", "vendor+AR");
  const int Nf = 4096, Kf = 2048;  // per-rank K (row-parallel: K split across ranks)
  for (int R : {2, 4, 8}) {
    rank_set rs;
    RK(rs.init(R));
    std::vector<vendor_gemm_handle> vh(R);
    const bool vendor = vendor_gemm_available();
    for (int r = 0; r < R && vendor; ++r) {
      CK(hipSetDevice(rs.dev[r]));
      if (vendor_gemm_create(&vh[r])) { fprintf(stderr, "bench_fusion: vendor GEMM handle failed\n"); return 1; }
    }
    std::vector<rcclx_bf16*> X(R), W(R), Y(R), out(R);
    const size_t maxM = 512;
    for (int r = 0; r < R; ++r) {
      CK(hipSetDevice(rs.dev[r]));
      CK(hipMalloc((void**)&X[r], maxM * Kf * 2));
      CK(hipMalloc((void**)&W[r], (size_t)Kf * Nf * 2));
      CK(hipMalloc((void**)&Y[r], maxM * Nf * 2));
      CK(hipMalloc((void**)&out[r], maxM * Nf * 2));
      bench_fill_kernel<<<256, 256>>>((uint16_t*)X[r], maxM * Kf, r);
      bench_fill_kernel<<<256, 256>>>((uint16_t*)W[r], (size_t)Kf * Nf, r + 1);
      CK(hipDeviceSynchronize());
    }
    for (int M : {1, 16, 64, 512}) {
      const size_t n = (size_t)M * Nf;
      const int K = M == 512 ? 5 : 20;
      const double g = time_graph(rs, [&](int r) { RK(gemm_bf16(X[r], W[r], Y[r], M, Nf, Kf, rs.stream[r])); }, K, 9);
      const double unf = time_graph(rs, [&](int r) {
        RK(gemm_bf16(X[r], W[r], Y[r], M, Nf, Kf, rs.stream[r]));
        RK(rcclx_allreduce(&rs.comm[r], Y[r], out[r], n, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[r]));
      }, K, 9);
      const double epi = time_graph(rs, [&](int r) {
        rcclx_bf16* in = (rcclx_bf16*)rcclx_comm_input(&rs.comm[r]);
        RK(gemm_bf16(X[r], W[r], in, M, Nf, Kf, rs.stream[r]));
        RK(rcclx_allreduce(&rs.comm[r], in, out[r], n, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[r]));
      }, K, 9);
      const double fus = time_graph(rs, [&](int r) {
        RK(gemm_allreduce_fused(&rs.comm[r], X[r], W[r], out[r], M, Nf, Kf, rs.stream[r]));
      }, K, 9);
      double vg = 0, var = 0;
      if (vendor) {
        auto vgemm = [&](int r, rcclx_bf16* y) {
          if (vendor_gemm_bf16(vh[r], X[r], W[r], y, M, Nf, Kf, rs.stream[r])) { fprintf(stderr, "vendor GEMM failed\n"); exit(1); }
        };
        vg = time_graph(rs, [&](int r) { vgemm(r, Y[r]); }, K, 9);
        var = time_graph(rs, [&](int r) {
          rcclx_bf16* in = (rcclx_bf16*)rcclx_comm_input(&rs.comm[r]);
          vgemm(r, in);
          RK(rcclx_allreduce(&rs.comm[r], in, out[r], n, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_AUTO, rs.stream[r]));
        }, K, 9);
      }
      // FP8 on the wire: the fused form and its unfused twin (GEMM, then the
      // low-precision AllReduce).
      const rcclx_wire w8 = rcclx_wire_make(RCCLX_FP8_E4M3FN, 64, RCCLX_SCALE_F32);
      const double f8 = time_graph(rs, [&](int r) {
        RK(gemm_allreduce_fused_fp8(&rs.comm[r], X[r], W[r], out[r], M, Nf, Kf, w8, rs.stream[r]));
      }, K, 9);
      const double u8 = time_graph(rs, [&](int r) {
        RK(gemm_bf16(X[r], W[r], Y[r], M, Nf, Kf, rs.stream[r]));
        RK(rcclx_lowp_allreduce(&rs.comm[r], Y[r], out[r], n, RCCLX_BFLOAT16, RCCLX_ALGO_FLAT, w8, rs.stream[r]));
      }, K, 9);
      const char* ways[] = {"gemm_only", "unfused", "epilogue", "fused", "fused_fp8", "unfused_fp8",
                            "vendor_gemm_only", "vendor_gemm_zero_copy_ar"};
      const double us[] = {g, unf, epi, fus, f8, u8, vg, var};
      for (int w = 0; w < (vendor ? 8 : 6); ++w)
        fprintf(csv, "%d,gemm_allreduce,%d,%d,%d,%s,%.3f,%.3f\n", R, M, Nf, Kf, ways[w], us[w], unf / us[w]);
      printf("%-3d %-14s %6d %6d %6d %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n", R, "gemm_allreduce", M, Nf,
             Kf, g, unf, epi, fus, f8, u8, vg, var);
      fflush(stdout);
    }
    // AllReduce + residual + RMSNorm, hidden 8192.
    const size_t H = 8192;
    // Per rank, on its device: the residual and weight inputs (the same
    // values on every rank), outputs.
    std::vector<rcclx_bf16*> res(R), wt(R), res_out(R), o(R), s_all(R);
    for (int r = 0; r < R; ++r) {
      rs.on(r);
      CK(hipMalloc((void**)&res[r], 1024 * H * 2));
      CK(hipMalloc((void**)&wt[r], H * 2));
      bench_fill_kernel<<<256, 256>>>((uint16_t*)res[r], 1024 * H, 3);
      bench_fill_kernel<<<256, 256>>>((uint16_t*)wt[r], H, 4);
      bench_fill_kernel<<<256, 256>>>((uint16_t*)rcclx_comm_input(&rs.comm[r]), 1024 * H, r);
      CK(hipMalloc((void**)&res_out[r], 1024 * H * 2));
      CK(hipMalloc((void**)&o[r], 1024 * H * 2));
      CK(hipMalloc((void**)&s_all[r], 1024 * H * 2));
    }
    CK(rs.settle());
    for (size_t T : {(size_t)1, (size_t)4, (size_t)8, (size_t)16, (size_t)32, (size_t)64, (size_t)128, (size_t)1024}) {
      const double unf = time_graph(rs, [&](int r) {
        RK(rcclx_allreduce(&rs.comm[r], rcclx_comm_input(&rs.comm[r]), s_all[r], T * H, RCCLX_BFLOAT16, RCCLX_SUM,
                           RCCLX_ALGO_AUTO, rs.stream[r]));
        rmsnorm_unfused_kernel<<<(unsigned)(T < 1024 ? T : 1024), RMSNORM_THREADS, 0, rs.stream[r]>>>(
            s_all[r], T, H, res[r], res_out[r], wt[r], 1e-6f, o[r], nullptr, nullptr);
      });
      // The fused call in each shape: LL (where one LL launch holds it),
      // one-shot (FLAT), two-shot (TREE), and what AUTO picks.
      const rcclx_algo shapes[4] = {RCCLX_ALGO_AUTO, RCCLX_ALGO_LL, RCCLX_ALGO_FLAT, RCCLX_ALGO_TREE};
      const char* shape_names[4] = {"fused", "fused_ll", "fused_one_shot", "fused_two_shot"};
      double fus[4] = {0, 0, 0, 0};
      for (int k = 0; k < 4; ++k) {
        if (shapes[k] == RCCLX_ALGO_LL && !rmsnorm_ll_warps(T, H, rs.comm[0].view.nblocks)) continue;
        fus[k] = time_graph(rs, [&](int r) {
          RK(allreduce_rmsnorm(&rs.comm[r], T, H, res[r], res_out[r], wt[r], 1e-6f, o[r], nullptr, nullptr, shapes[k],
                               rs.stream[r]));
        });
      }
      fprintf(csv, "%d,allreduce_rmsnorm,%zu,%zu,0,unfused,%.3f,1.000\n", R, T, H, unf);
      for (int k = 0; k < 4; ++k)
        if (fus[k] > 0)
          fprintf(csv, "%d,allreduce_rmsnorm,%zu,%zu,0,%s,%.3f,%.3f\n", R, T, H, shape_names[k], fus[k], unf / fus[k]);
      printf("%-3d %-14s %6zu %6zu %6s %10s %10.2f %10s %10.2f  (LL %.2f, one-shot %.2f, two-shot %.2f)\n", R,
             "ar_rmsnorm", T, H, "-", "-", unf, "-", fus[0], fus[1], fus[2], fus[3]);
      fflush(stdout);
    }
    for (int r = 0; r < R; ++r) RK(rcclx_comm_check(&rs.comm[r], nullptr));
    for (int r = 0; r < R && vendor; ++r) vendor_gemm_destroy(vh[r]);
    for (int r = 0; r < R; ++r)
      for (auto p : {X[r], W[r], Y[r], out[r], res[r], wt[r], res_out[r], o[r], s_all[r]}) (void)hipFree(p);
  }
  fclose(csv);
  return 0;
}
