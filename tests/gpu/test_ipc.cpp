// One process per rank, IPC handles exchanged through files in a temporary
// directory (the library carries no transport: this is the caller's
// all-gather).  Forks N processes before any GPU runtime call; all may share
// one GPU.  Each rank runs flat, tree and LL AllReduces on device-independent
// deterministic data and checks the float64-free exact expectation: inputs
// are small integers, so every sum is exact in bf16 and fp32.
// Usage: rcclx_ipc_test N [push|mismatch]   (exit 0 and "N passed, 0 failed"
// on success).  push: the LL one-shot pushes its lines into the peers'
// mapped areas (rcclx_config.ll_push), as it does by default across GPUs.
// mismatch: rank 0 asks for pull and the others for push, so every rank's
// init must fail with RCCLX_ERR_RANK_MISMATCH (and release what it took).
#include <rcclx/rcclx.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

struct file_allgather {
  std::string dir;
  int rank, nranks, round;
};

static int allgather_files(void* ctx, const void* mine, void* all, size_t bytes) {
  file_allgather* fa = (file_allgather*)ctx;
  const int round = fa->round++;
  auto path = [&](int r) { return fa->dir + "/r" + std::to_string(round) + "_" + std::to_string(r); };
  std::string tmp = path(fa->rank) + ".tmp";
  FILE* f = fopen(tmp.c_str(), "wb");
  if (!f || fwrite(mine, 1, bytes, f) != bytes) return 1;
  fclose(f);
  if (rename(tmp.c_str(), path(fa->rank).c_str()) != 0) return 1;
  for (int r = 0; r < fa->nranks; ++r) {
    for (int tries = 0;; ++tries) {
      FILE* g = fopen(path(r).c_str(), "rb");
      if (g) {
        size_t got = fread((char*)all + r * bytes, 1, bytes, g);
        fclose(g);
        if (got == bytes) break;
      }
      if (tries > 60000) return 1;  // 60 s
      usleep(1000);
    }
  }
  return 0;
}

template <typename T>
static int run(rcclx_comm* c, hipStream_t s, size_t n, rcclx_algo algo, int iter) {
  const int N = c->view.nranks, me = c->view.rank;
  std::vector<T> h(n), out(n);
  for (size_t i = 0; i < n; ++i) h[i] = rcclx_from_f32<T>((float)((i * 7 + me * 3 + iter) % 17) - 8.0f);
  T* d = nullptr;
  if (hipMalloc((void**)&d, n * sizeof(T)) != hipSuccess) return 1;
  if (hipMemcpy(d, h.data(), n * sizeof(T), hipMemcpyHostToDevice) != hipSuccess) return 1;
  if (hipDeviceSynchronize() != hipSuccess) return 1; /* s does not wait for the null stream */
  if (rcclx_allreduce(c, d, d, n, rcclx_dtype_of<T>::value, RCCLX_SUM, algo, s) != RCCLX_SUCCESS) return 1;
  if (hipStreamSynchronize(s) != hipSuccess || rcclx_comm_check(c, nullptr) != RCCLX_SUCCESS) return 1;
  if (hipMemcpy(out.data(), d, n * sizeof(T), hipMemcpyDeviceToHost) != hipSuccess) return 1;
  (void)hipFree(d);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    float want = 0;
    for (int r = 0; r < N; ++r) want += (float)((i * 7 + r * 3 + iter) % 17) - 8.0f;
    bad += rcclx_to_f32(out[i]) != want;
  }
  if (bad) fprintf(stderr, "rank %d: %zu wrong of %zu (algo %d)\n", me, bad, n, (int)algo);
  return bad != 0;
}

enum ipc_mode { IPC_DEFAULT, IPC_PUSH, IPC_MISMATCH };

static int child(int rank, int nranks, const std::string& dir, ipc_mode mode) {
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess || ndev < 1) return 2;
  const int device = rank % ndev;
  if (hipSetDevice(device) != hipSuccess) return 2;
  file_allgather fa = {dir, rank, nranks, 0};
  rcclx_config cfg = {};
  cfg.region_bytes = (size_t)4 << 20;
  cfg.watchdog_ns = 20ull * 1000 * 1000 * 1000;  // processes time-slice one GPU: be patient
  if (mode == IPC_PUSH) cfg.ll_push = RCCLX_LL_PUSH_ON;
  if (mode == IPC_MISMATCH) cfg.ll_push = rank == 0 ? RCCLX_LL_PUSH_OFF : RCCLX_LL_PUSH_ON;
  rcclx_comm c = {};
  rcclx_status st = rcclx_comm_init_ipc(rank, nranks, device, &cfg, allgather_files, &fa, &c);
  if (mode == IPC_MISMATCH) {
    if (st == RCCLX_ERR_RANK_MISMATCH && !c.kind && !c.alloc && !c.polled) return 0;
    fprintf(stderr, "rank %d: init with disagreeing ll_push gave %s\n", rank, rcclx_status_string(st));
    if (st == RCCLX_SUCCESS) rcclx_comm_destroy(&c);
    return 1;
  }
  if (st == RCCLX_SUCCESS && mode == IPC_PUSH && !(c.view.flags & RCCLX_VIEW_LL_PUSH)) {
    fprintf(stderr, "rank %d: ll_push asked for, view does not push\n", rank);
    rcclx_comm_destroy(&c);
    return 1;
  }
  if (st != RCCLX_SUCCESS) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, rcclx_status_string(st));
    return 1;
  }
  hipStream_t s;
  if (hipStreamCreateWithFlags(&s, hipStreamNonBlocking) != hipSuccess) return 1;
  int fails = 0;
  for (int iter = 0; iter < 3; ++iter) {
    fails += run<rcclx_bf16>(&c, s, 1000003, RCCLX_ALGO_FLAT, iter);
    fails += run<float>(&c, s, 70001, RCCLX_ALGO_TREE, iter);
    fails += run<rcclx_bf16>(&c, s, 3 * ((size_t)4 << 20) / 2 + 5, RCCLX_ALGO_AUTO, iter);  // chunked
    fails += run<rcclx_bf16>(&c, s, 5003 + iter * 1000, RCCLX_ALGO_LL, iter);  // a new size each iteration
  }
  (void)hipStreamDestroy(s);
  rcclx_comm_destroy(&c);
  return fails ? 1 : 0;
}

int main(int argc, char** argv) {
  const int nranks = argc > 1 ? atoi(argv[1]) : 2;
  const std::string m = argc > 2 ? argv[2] : "";
  const ipc_mode mode = m == "push" ? IPC_PUSH : m == "mismatch" ? IPC_MISMATCH : IPC_DEFAULT;
  if (nranks < 2 || nranks > RCCLX_MAX_RANKS || (!m.empty() && mode == IPC_DEFAULT)) {
    fprintf(stderr, "usage: rcclx_ipc_test N [push|mismatch], 2 <= N <= %d\n", RCCLX_MAX_RANKS);
    return 2;
  }
  char tmpl[] = "/tmp/rcclx_ipc_XXXXXX";
  if (!mkdtemp(tmpl)) return 2;
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    pid_t p = fork();
    if (p == 0) _exit(child(r, nranks, tmpl, mode));
    pids.push_back(p);
  }
  int passed = 0, failed = 0;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? ++passed : ++failed;
  }
  std::string rm = std::string("rm -rf ") + tmpl;
  if (system(rm.c_str()) != 0) fprintf(stderr, "could not remove %s\n", tmpl);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
