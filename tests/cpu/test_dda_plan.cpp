// DDA host planning and argument checks (rcclx/dda/plan.h), no GPU needed.
#include <cstring>
#include <rcclx/dda/plan.h>
#include <rcclx/dda/tree.h>
#include <catch2/catch.hpp>
#include "fake_view.h"
#include <cstdlib>

TEST_CASE("allreduce argument checks", "[dda_plan]") {
  const fake_view fv(4096);
  const rcclx_dev_comm& v = fv.v;
  alignas(16) static float a[2048], b[2048];
  CHECK(rcclx_allreduce_check(&v, a, b, 256, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_SUCCESS);
  CHECK(rcclx_allreduce_check(&v, a, a, 256, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_TREE) == RCCLX_SUCCESS);
  CHECK(rcclx_allreduce_check(&v, a, a + 4, 64, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT) == RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_allreduce_check(&v, nullptr, b, 256, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_NULL_POINTER);
  CHECK(rcclx_allreduce_check(&v, a + 1, b, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_MISALIGNED);
  CHECK(rcclx_allreduce_check(&v, a, b, 0, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_INVALID_COUNT);
  CHECK(rcclx_allreduce_check(&v, a, b, 16, (rcclx_dtype)3, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_UNSUPPORTED_DTYPE);
  CHECK(rcclx_allreduce_check(&v, a, b, 16, RCCLX_FLOAT32, (rcclx_op)3, RCCLX_ALGO_AUTO) == RCCLX_ERR_UNSUPPORTED_OP);
  CHECK(rcclx_allreduce_check(&v, a, b, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_COUNT) == RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_allreduce_check(&v, a, b, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_LOWP_FLAT) == RCCLX_SUCCESS);
  CHECK(rcclx_allreduce_check(&v, a, b, 16, RCCLX_FLOAT32, RCCLX_MAX, RCCLX_ALGO_LOWP_TREE) == RCCLX_ERR_UNSUPPORTED_OP);
  char* input = fv.input(1);  // rank 1's registered input region
  CHECK(rcclx_allreduce_check(&v, input, b, 1024, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_SUCCESS);
  CHECK(rcclx_allreduce_check(&v, input, b, 1025, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_BUFFER_TOO_SMALL);
  // Output inside this rank's registered buffer, which peers read during the
  // call: in-place zero-copy, or a copy-in half or the input region as recv.
  CHECK(rcclx_allreduce_check(&v, input, input, 1024, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_allreduce_check(&v, a, (char*)v.bufs[1] + 4096, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT) ==
        RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_allreduce_check(&v, a, input + 4096 - 64, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT) ==
        RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_allreduce_check(&v, a, (char*)v.bufs[1] - 64, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT) ==
        RCCLX_SUCCESS);  // ends right where the buffer starts
  // The polled area: peers write its signals and read its LL lines.
  CHECK(rcclx_allreduce_check(&v, a, fv.ll(1) + RCCLX_LL_BYTES - 16, 4, RCCLX_FLOAT32, RCCLX_SUM,
                              RCCLX_ALGO_LL) == RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_allreduce_check(&v, a, (char*)v.sigs[1] + 256, 4, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT) ==
        RCCLX_ERR_INVALID_ARGUMENT);
  CHECK(rcclx_allreduce_check(&v, a, fv.ll(1) + RCCLX_LL_BYTES, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT) ==
        RCCLX_SUCCESS);  // starts right where the polled area ends
  CHECK(rcclx_allreduce_check(&v, a, b, 16, RCCLX_FLOAT32, RCCLX_MAX, RCCLX_ALGO_LL) == RCCLX_SUCCESS);
  rcclx_dev_comm w = v;
  w.nranks = 9;
  CHECK(rcclx_allreduce_check(&w, a, b, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_INVALID_NRANKS);
  w = v; w.nranks = 1;
  CHECK(rcclx_allreduce_check(&w, a, b, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_INVALID_NRANKS);
  w = v; w.rank = 4;
  CHECK(rcclx_allreduce_check(&w, a, b, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_INVALID_RANK);
  w = v; w.bufs[3] = nullptr;
  CHECK(rcclx_allreduce_check(&w, a, b, 16, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_AUTO) == RCCLX_ERR_NULL_POINTER);
}

TEST_CASE("algorithm choice, chunking, signatures, config", "[dda_plan]") {
  CHECK(rcclx_allreduce_choose(RCCLX_ALGO_AUTO, 1000, 4096) == RCCLX_ALGO_FLAT);
  CHECK(rcclx_allreduce_choose(RCCLX_ALGO_AUTO, 5000, 4096) == RCCLX_ALGO_TREE);
  CHECK(rcclx_allreduce_choose(RCCLX_ALGO_TREE, 10, 4096) == RCCLX_ALGO_TREE);
  // AUTO with the LL one-shot below its threshold; explicit algos stay.
  CHECK(rcclx_dda_choose(RCCLX_ALGO_AUTO, 1024, 1024, 4096) == RCCLX_ALGO_LL);
  CHECK(rcclx_dda_choose(RCCLX_ALGO_AUTO, 1025, 1024, 4096) == RCCLX_ALGO_FLAT);
  CHECK(rcclx_dda_choose(RCCLX_ALGO_AUTO, 5000, 1024, 4096) == RCCLX_ALGO_TREE);
  CHECK(rcclx_dda_choose(RCCLX_ALGO_AUTO, 16, 0, 4096) == RCCLX_ALGO_FLAT);  // threshold 0: off
  CHECK(rcclx_dda_choose(RCCLX_ALGO_FLAT, 16, 1024, 4096) == RCCLX_ALGO_FLAT);
  CHECK(rcclx_dda_choose(RCCLX_ALGO_LL, 1 << 20, 1024, 4096) == RCCLX_ALGO_LL);
  unsetenv("RCCLX_LL_MAX_BYTES");  // measured defaults (bench/RESULTS.md run 42)
  for (int n = 2; n <= 8; ++n) CHECK(rcclx_default_ll_max_bytes(n) == (n <= 4 ? (size_t)64 << 10 : (size_t)16 << 10));
  setenv("RCCLX_LL_MAX_BYTES", "1000000000", 1);  // capped at what a launch holds
  CHECK(rcclx_default_ll_max_bytes(8) == RCCLX_LL_MAX_BYTES);
  setenv("RCCLX_LL_MAX_BYTES", "0", 1);
  CHECK(rcclx_default_ll_max_bytes(8) == 0);
  unsetenv("RCCLX_LL_MAX_BYTES");
  // The LL grid: one block per nthreads / 4 lines of 8 bytes, within
  // 1..nblocks, the fewest blocks that hold every line (or all of them).
  CHECK(rcclx_ll_blocks(1, 16, 512) == 1);
  CHECK(rcclx_ll_blocks(1024, 16, 512) == 1);
  CHECK(rcclx_ll_blocks(1025, 16, 512) == 2);
  CHECK(rcclx_ll_blocks((size_t)16 << 10, 16, 512) == 16);
  CHECK(rcclx_ll_blocks((size_t)16 << 10, 64, 512) == 16);
  CHECK(rcclx_ll_blocks((size_t)64 << 10, 64, 512) == 64);
  CHECK(rcclx_ll_blocks((size_t)64 << 10, 16, 512) == 16);
  CHECK(rcclx_ll_blocks(RCCLX_LL_MAX_BYTES, 1, 64) == 1);
  for (int nb = 1; nb <= RCCLX_MAX_BLOCKS; nb += 7)
    for (int nt = 64; nt <= RCCLX_MAX_THREADS; nt += 64)
      for (size_t bytes = 1; bytes <= RCCLX_LL_MAX_BYTES; bytes += 997) {
        const int g = rcclx_ll_blocks(bytes, nb, nt);
        const size_t lines = (bytes + 7) / 8, per = (size_t)nt / 4;
        if (g < 1 || g > nb || (g < nb && (size_t)g * per < lines) || (size_t)(g - 1) * per >= lines)
          FAIL("rcclx_ll_blocks(" << bytes << ", " << nb << ", " << nt << ") = " << g);
      }
  // The LL block: the warps that hold lines and one header warp, at most
  // nthreads.  With warp-sized runs of lines dealt to the g blocks in turn
  // (rcclx_grid_first_vector), a block below nthreads holds every line of
  // the message at its first pass, none in its last warp, some in the warp
  // before (or it is one warp of lines and the header warp).
  CHECK(rcclx_ll_threads((size_t)16 << 10, 16, 512, 32) == 160);
  CHECK(rcclx_ll_threads((size_t)16 << 10, 16, 512, 64) == 192);
  CHECK(rcclx_ll_threads(1024, 1, 512, 32) == 160);
  CHECK(rcclx_ll_threads(20, 1, 512, 32) == 64);
  CHECK(rcclx_ll_threads(20, 1, 512, 64) == 128);
  CHECK(rcclx_ll_threads((size_t)64 << 10, 32, 512, 32) == 288);
  CHECK(rcclx_ll_threads((size_t)64 << 10, 8, 512, 32) == 512);
  CHECK(rcclx_ll_threads(1, 1, 64, 64) == 64);
  for (int W : {32, 64})
    for (int nt = 64; nt <= RCCLX_MAX_THREADS; nt += 64)
      for (int nb : {1, 7, 16, 64})
        for (size_t bytes = 1; bytes <= RCCLX_LL_MAX_BYTES; bytes += 4093) {
          const int g = rcclx_ll_blocks(bytes, nb, nt), t = rcclx_ll_threads(bytes, g, nt, W);
          const size_t lines = (bytes + 7) / 8, last = lines - 1, warp = last / (size_t)W / (size_t)g;
          if (t < W || t > nt || t % W) FAIL("rcclx_ll_threads(" << bytes << ", " << g << ", " << nt << ") = " << t);
          if (t < nt && (warp != (size_t)(t / W - 2) || last >= (size_t)g * (size_t)t))
            FAIL("LL line " << last << " of " << bytes << " bytes on " << g << " blocks of " << t);
        }
  // Fingerprints are never 0 (none) or all-ones.
  for (uint64_t i = 0; i < 100000; ++i) {
    const uint32_t f = rcclx_call_signature(i, RCCLX_BFLOAT16, RCCLX_SUM, RCCLX_ALGO_LL, 0);
    if (f == 0u || f == 0xFFFFFFFFu) FAIL("fingerprint " << f);
  }
  CHECK(rcclx_allreduce_chunk_elems((size_t)32 << 20, RCCLX_BFLOAT16) == (size_t)16 << 20);
  // A chunk's fingerprint carries the call's whole count: a first chunk of
  // two calls of different counts differs.
  const uint32_t first = rcclx_call_signature(1 << 20, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT, 0);
  CHECK(rcclx_chunk_signature(first, 1 << 20) != rcclx_chunk_signature(first, 3 << 20));
  CHECK(rcclx_chunk_signature(first, 1 << 20) == rcclx_chunk_signature(first, 1 << 20));
  for (uint32_t i = 0; i < 100000; ++i) {
    const uint32_t f = rcclx_chunk_signature(i * 2654435761u, i);
    if (f == 0u || f == 0xFFFFFFFFu) FAIL("chunk fingerprint " << f);
  }
  CHECK(rcclx_call_signature(10, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT, 0) !=
        rcclx_call_signature(11, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT, 0));
  CHECK(rcclx_call_signature(10, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT, 0) !=
        rcclx_call_signature(10, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_TREE, 0));
  rcclx_config in = {}, out;
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_SUCCESS);
  CHECK(out.nthreads == 512);
  in.region_bytes = 1000;
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.region_bytes = (size_t)1 << 36;  // vector and group indices must fit 32 bits
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.region_bytes = 0; in.max_blocks = RCCLX_MAX_BLOCKS + 1;
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.max_blocks = 0; in.nthreads = 1024;  // above the DDA kernels' launch bounds
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.nthreads = 0; in.system_scope = 2;
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.system_scope = 0; in.direct = RCCLX_DIRECT_ON + 1;
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.direct = 0; in.pdl = RCCLX_PDL_EARLY + 1;
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.pdl = 0; in.ll_push = RCCLX_LL_PUSH_ON + 1;
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.ll_push = -1;
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  in.ll_push = 0;
  unsetenv("RCCLX_DIRECT");
  unsetenv("RCCLX_SYSTEM_SCOPE");
  unsetenv("RCCLX_PDL");
  unsetenv("RCCLX_LL_PUSH");
  REQUIRE(rcclx_config_resolve(&in, &out) == RCCLX_SUCCESS);
  CHECK(out.direct == RCCLX_DIRECT_AUTO);
  CHECK(out.system_scope == 0);
  CHECK(out.pdl == RCCLX_PDL_AUTO);
  CHECK(out.ll_push == RCCLX_LL_PUSH_AUTO);
  setenv("RCCLX_DIRECT", "1", 1);
  setenv("RCCLX_SYSTEM_SCOPE", "1", 1);
  setenv("RCCLX_PDL", "1", 1);
  setenv("RCCLX_LL_PUSH", "1", 1);
  REQUIRE(rcclx_config_resolve(&in, &out) == RCCLX_SUCCESS);
  CHECK(out.direct == RCCLX_DIRECT_OFF);
  CHECK(out.system_scope == 1);
  CHECK(out.pdl == RCCLX_PDL_OFF);
  CHECK(out.ll_push == RCCLX_LL_PUSH_OFF);
  setenv("RCCLX_PDL", "2", 1);
  setenv("RCCLX_LL_PUSH", "2", 1);
  REQUIRE(rcclx_config_resolve(&in, &out) == RCCLX_SUCCESS);
  CHECK(out.pdl == RCCLX_PDL_EARLY);
  CHECK(out.ll_push == RCCLX_LL_PUSH_ON);
  CHECK(rcclx_config_ll_push_flag(&out, 1) == RCCLX_VIEW_LL_PUSH);
  CHECK(rcclx_config_ll_push_flag(&out, 0) == RCCLX_VIEW_LL_PUSH);
  in.ll_push = RCCLX_LL_PUSH_OFF;  // a config field wins over the environment
  REQUIRE(rcclx_config_resolve(&in, &out) == RCCLX_SUCCESS);
  CHECK(out.ll_push == RCCLX_LL_PUSH_OFF);
  CHECK(rcclx_config_ll_push_flag(&out, 1) == 0u);
  CHECK(rcclx_config_ll_push_flag(&out, 0) == 0u);
  in.ll_push = RCCLX_LL_PUSH_AUTO;  // by default: pull on one GPU, push across GPUs
  unsetenv("RCCLX_LL_PUSH");
  REQUIRE(rcclx_config_resolve(&in, &out) == RCCLX_SUCCESS);
  CHECK(rcclx_config_ll_push_flag(&out, 1) == 0u);
  CHECK(rcclx_config_ll_push_flag(&out, 0) == RCCLX_VIEW_LL_PUSH);
  in.ll_push = 0;
  setenv("RCCLX_LL_PUSH", "3", 1);
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  unsetenv("RCCLX_LL_PUSH");
  setenv("RCCLX_PDL", "3", 1);  // out of range from the environment too
  CHECK(rcclx_config_resolve(&in, &out) == RCCLX_ERR_INVALID_ARGUMENT);
  unsetenv("RCCLX_DIRECT");
  unsetenv("RCCLX_SYSTEM_SCOPE");
  unsetenv("RCCLX_PDL");
  CHECK(rcclx_tree_shard_vectors(10, 4) == 3);
}

TEST_CASE("IPC ranks share a GPU only at the same PCI domain, bus and device", "[dda_plan]") {
  // Two GPUs at bus 0x0c, device 0 of domains 0 and 1 (as on hosts with
  // several PCI segments), two ranks on each, and one rank alone.
  const rcclx_pci_location all[5] = {{0, 0x0c, 0}, {1, 0x0c, 0}, {0, 0x0c, 0}, {1, 0x0c, 0}, {0, 0x0d, 0}};
  CHECK(rcclx_ranks_on_gpu(all, 5, &all[0]) == 2);
  CHECK(rcclx_ranks_on_gpu(all, 5, &all[1]) == 2);
  CHECK(rcclx_ranks_on_gpu(all, 5, &all[4]) == 1);
  const rcclx_pci_location other_device = {0, 0x0c, 1};
  CHECK(rcclx_ranks_on_gpu(all, 5, &other_device) == 0);
  CHECK(rcclx_ranks_on_gpu(all, 2, &all[2]) == 1);  // only the first nranks count
  const rcclx_pci_location one_gpu[3] = {{2, 0x41, 0}, {2, 0x41, 0}, {2, 0x41, 0}};
  CHECK(rcclx_ranks_on_gpu(one_gpu, 3, &one_gpu[1]) == 3);  // every rank on one GPU: device scope
}

TEST_CASE("where peers read a call's message", "[dda_plan]") {
  static char buffer[4 * 4096];
  rcclx_comm c;
  memset(&c, 0, sizeof c);
  c.view.rank = 0;
  c.view.nranks = 4;
  c.view.bufs[0] = buffer;
  c.view.region_bytes = 4096;
  c.flat_max_bytes = 512 << 10;
  c.ll_max_bytes = 0;
  c.direct_min_bytes = 1 << 20;
  c.view.flags = RCCLX_VIEW_DIRECT | RCCLX_VIEW_ONE_DEVICE;
  const void* user = (const void*)0x1000;
  int src = -1;
  // A direct view: AUTO and TREE from direct_min_bytes read the user's buffers.
  CHECK(rcclx_dda_resolve(&c, user, 1 << 20, RCCLX_ALGO_AUTO, &src) == RCCLX_ALGO_TREE);
  CHECK(src == RCCLX_SRC_DIRECT);
  CHECK(rcclx_dda_resolve(&c, user, 64 << 20, RCCLX_ALGO_TREE, &src) == RCCLX_ALGO_TREE);
  CHECK(src == RCCLX_SRC_DIRECT);
  // Below it, and for the one-shot at any size (in place it would overwrite
  // what peers read): staged.
  CHECK(rcclx_dda_resolve(&c, user, (1 << 20) - 16, RCCLX_ALGO_AUTO, &src) == RCCLX_ALGO_TREE);
  CHECK(src == RCCLX_SRC_STAGED);
  CHECK(rcclx_dda_resolve(&c, user, 4096, RCCLX_ALGO_AUTO, &src) == RCCLX_ALGO_FLAT);
  CHECK(src == RCCLX_SRC_STAGED);
  CHECK(rcclx_dda_resolve(&c, user, 64 << 20, RCCLX_ALGO_FLAT, &src) == RCCLX_ALGO_FLAT);
  CHECK(src == RCCLX_SRC_STAGED);
  // The registered input region is zero-copy, with the size rule of flat/tree.
  const void* input = rcclx_comm_input(&c);
  CHECK(rcclx_dda_resolve(&c, input, 4096, RCCLX_ALGO_AUTO, &src) == RCCLX_ALGO_FLAT);
  CHECK(src == RCCLX_SRC_REGISTERED);
  CHECK(rcclx_dda_resolve(&c, input, 2 << 20, RCCLX_ALGO_AUTO, &src) == RCCLX_ALGO_TREE);
  CHECK(src == RCCLX_SRC_REGISTERED);
  // LL copies from wherever send is.
  c.ll_max_bytes = 64 << 10;
  CHECK(rcclx_dda_resolve(&c, input, 4096, RCCLX_ALGO_AUTO, &src) == RCCLX_ALGO_LL);
  CHECK(src == RCCLX_SRC_STAGED);
  // No direct view (one process per rank, or RCCLX_DIRECT_OFF): never direct.
  c.view.flags = RCCLX_VIEW_ONE_DEVICE;
  CHECK(rcclx_dda_resolve(&c, user, 64 << 20, RCCLX_ALGO_AUTO, &src) == RCCLX_ALGO_TREE);
  CHECK(src == RCCLX_SRC_STAGED);
  CHECK(rcclx_dda_resolve(&c, user, 256 << 10, RCCLX_ALGO_AUTO, &src) == RCCLX_ALGO_FLAT);
  // Ranks that pick different sources disagree in the fingerprint.
  CHECK(rcclx_call_signature(10, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT, RCCLX_SRC_STAGED) !=
        rcclx_call_signature(10, RCCLX_FLOAT32, RCCLX_SUM, RCCLX_ALGO_FLAT, RCCLX_SRC_DIRECT));
  // One launch's vector count stays below 2^32 for every dtype.
  for (rcclx_dtype d : {RCCLX_FLOAT32, RCCLX_FLOAT16, RCCLX_BFLOAT16})
    CHECK(rcclx_dda_max_launch_elems(d) * rcclx_dtype_size(d) / 16 < ((size_t)1 << 32));
  unsetenv("RCCLX_DIRECT_MIN_BYTES");
  CHECK(rcclx_default_direct_min_bytes(8) == (size_t)1 << 20);
  CHECK(rcclx_default_direct_min_bytes(4) == (size_t)2 << 20);
  CHECK(rcclx_default_direct_min_bytes(2) == (size_t)4 << 20);
  setenv("RCCLX_DIRECT_MIN_BYTES", "0", 1);
  CHECK(rcclx_default_direct_min_bytes(8) == 0);
  unsetenv("RCCLX_DIRECT_MIN_BYTES");
}

TEST_CASE("default flat/tree switch points are the measured ones", "[dda_plan]") {
  unsetenv("RCCLX_FLAT_MAX_BYTES");
  CHECK(rcclx_default_flat_max_bytes(2) == (size_t)256 << 20);  // flat won at every size with 2 and 4 ranks
  CHECK(rcclx_default_flat_max_bytes(4) == (size_t)256 << 20);
  CHECK(rcclx_default_flat_max_bytes(8) == (size_t)512 << 10);  // tree from 1 MiB with 8
  setenv("RCCLX_FLAT_MAX_BYTES", "4096", 1);
  CHECK(rcclx_default_flat_max_bytes(8) == 4096);
  unsetenv("RCCLX_FLAT_MAX_BYTES");
}
