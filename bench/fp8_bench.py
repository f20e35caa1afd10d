"""FP8 quantize benchmark: bf16 -> e4m3fn, 128-element blocks, fp32 scales,
on 256 MiB of bf16, against (a) a device-to-device copy of the same bytes
measured in the same run (the roofline: bytes read + written at copy speed),
(b) the same per-block quantization in torch, compiled and eager, on the
same tensor.  rcclx runs through tests/gpu/fp8_capi (ctypes).
Usage: python3 fp8_bench.py librcclx_fp8_capi.so out.csv
"""
import ctypes, sys, statistics
import torch

lib = ctypes.CDLL(sys.argv[1])
n = 128 << 20                      # 128 Mi elements = 256 MiB of bf16
B, FMAX = 128, 448.0
x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
packed_bytes = (n // B) * 4 + n
chunk = torch.empty(packed_bytes, device="cuda", dtype=torch.uint8)
back = torch.empty_like(x)
stream = torch.cuda.current_stream().cuda_stream

def timed(fn, iters=20, reps=7):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        b.synchronize()
        res.append(a.elapsed_time(b) / iters)
    return statistics.median(res)

def rcclx_q():
    assert lib.rcclx_capi_quantize(ctypes.c_void_p(x.data_ptr()), ctypes.c_size_t(n), 0, B, 0,
                                   ctypes.c_void_p(chunk.data_ptr()), ctypes.c_void_p(stream)) == 0
def rcclx_dq():
    assert lib.rcclx_capi_dequantize(ctypes.c_void_p(chunk.data_ptr()), ctypes.c_size_t(n), 0, B, 0,
                                     ctypes.c_void_p(back.data_ptr()), ctypes.c_void_p(stream)) == 0

def torch_q(t):
    blocks = t.float().view(-1, B)
    amax = blocks.abs().amax(dim=1, keepdim=True).clamp(min=1e-30)
    scale = amax / FMAX
    q = (blocks / scale).clamp(-FMAX, FMAX).to(torch.float8_e4m3fn)
    return q, scale
torch_qc = torch.compile(torch_q)

copy_src = x.view(torch.uint8)
copy_dst = torch.empty_like(copy_src)
t_copy = timed(lambda: copy_dst.copy_(copy_src))
copy_bw = 2 * copy_src.numel() / t_copy / 1e6          # GB/s, read + write
q_bytes = 2 * n + packed_bytes                          # read bf16, write chunk
t_q = timed(rcclx_q)
t_dq = timed(rcclx_dq)
t_tc = timed(lambda: torch_qc(x))
t_te = timed(lambda: torch_q(x), iters=5, reps=3)
roof_q = q_bytes / (copy_bw * 1e6)
rows = [("copy 256MiB (read+write)", t_copy, 2 * copy_src.numel() / t_copy / 1e6, 1.0),
        ("rcclx quantize", t_q, q_bytes / t_q / 1e6, roof_q / t_q),
        ("rcclx dequantize", t_dq, q_bytes / t_dq / 1e6, roof_q / t_dq),
        ("torch.compile quantize", t_tc, q_bytes / t_tc / 1e6, roof_q / t_tc),
        ("torch eager quantize", t_te, q_bytes / t_te / 1e6, roof_q / t_te)]
with open(sys.argv[2], "w") as f:
    f.write("what,ms,GBps,frac_of_copy_roofline\n")
    for r in rows:
        f.write("%s,%.4f,%.1f,%.3f\n" % r)
print("%-28s %9s %9s %8s" % ("fp8 bf16->e4m3fn B=128", "ms", "GB/s", "%roof"))
for r in rows:
    print("%-28s %9.4f %9.1f %7.1f%%" % (r[0], r[1], r[2], 100 * r[3]))
print("speedup vs torch.compile: %.2fx, vs eager: %.2fx" % (t_tc / t_q, t_te / t_q))
