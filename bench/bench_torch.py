"""Bridge overhead: the same in-place bf16 AllReduce issued through the
Python bridge (rcclx_torch) and through the C launcher (rcclx_allreduce,
called in a loop inside the bridge library), one process driving N virtual
ranks on one GPU, eager.  issue = host microseconds per round to issue
every rank's call; total = per round until all streams finished.  "py" passes
each rank's stream as stream=; "py_ctx" enters `with torch.cuda.stream(s)`
around each call, as code that relies on the current stream does.
Usage: python3 bench/bench_torch.py OUT.csv"""
import ctypes
import os
import statistics
import sys
import time

os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import rcclx_torch as rt  # noqa: E402

lib = rt.load_library()
rows = []
print("%-3s %9s %12s %12s %12s %12s %8s %12s" % ("N", "bytes", "py_issue_us", "c_issue_us", "py_total_us",
                                                "c_total_us", "py/c", "py_ctx_total"))
for nranks in (2, 4, 8):
    grp = rt.LocalGroup(nranks)
    for nbytes in (16 << 10, 1 << 20):
        n = nbytes // 2
        bufs = [torch.randn(n, device="cuda").to(torch.bfloat16) for _ in range(nranks)]
        want = bufs[0].float()
        for b in bufs[1:]:
            want = want + b.float()
        torch.cuda.synchronize()
        for r in range(nranks):  # sanity: one call, against the fp32 rank-order sum
            with torch.cuda.stream(grp.streams[r]):
                grp.comms[r].all_reduce(bufs[r])
        torch.cuda.synchronize()
        assert all(torch.equal(b, want.to(torch.bfloat16)) for b in bufs), "bridge result wrong"
        iters = 200

        def py_round():
            for r in range(nranks):
                grp.comms[r].all_reduce(bufs[r], stream=grp.streams[r])

        def py_ctx_round():
            for r in range(nranks):
                with torch.cuda.stream(grp.streams[r]):
                    grp.comms[r].all_reduce(bufs[r])

        def timed(fn):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            return (t1 - t0) * 1e6 / iters, (t2 - t0) * 1e6 / iters

        py_i, py_t, c_i, c_t, x_t = [], [], [], [], []
        for rep in range(7):
            a, b = timed(py_round)
            py_i.append(a)
            py_t.append(b)
            x_t.append(timed(py_ctx_round)[1])
            ci, ct = ctypes.c_double(), ctypes.c_double()
            P = ctypes.c_void_p * nranks
            st = lib.rcclx_torch_time_local_c(nranks, P(*[c._h.value for c in grp.comms]),
                                              P(*[b.data_ptr() for b in bufs]),
                                              P(*[s.cuda_stream for s in grp.streams]), n, 2, iters,
                                              ctypes.byref(ci), ctypes.byref(ct))
            assert st == 0, "C timing failed: %d" % st
            c_i.append(ci.value)
            c_t.append(ct.value)
        m = statistics.median
        row = (nranks, nbytes, m(py_i), m(c_i), m(py_t), m(c_t), m(py_t) / m(c_t), m(x_t))
        rows.append(row)
        print("%-3d %9d %12.2f %12.2f %12.2f %12.2f %7.2fx %12.2f" % row, flush=True)
    for c in grp.comms:
        c.check()
    grp.close()
with open(sys.argv[1] if len(sys.argv) > 1 else "bench_torch.csv", "w") as f:
    f.write("nranks,bytes,py_issue_us,c_issue_us,py_total_us,c_total_us,total_ratio,py_ctx_total_us\n")
    for r in rows:
        f.write("%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n" % r)
