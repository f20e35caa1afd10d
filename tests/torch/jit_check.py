"""The bridge as a PyTorch user gets it by default: bridge.cu built by
torch.utils.cpp_extension (JIT), then one AllReduce over two virtual ranks
on this GPU checked bitwise against the fp32 rank-order sum.
Usage: python3 tests/torch/jit_check.py [BUILD_DIR]"""
import os
import sys
import time

os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
os.environ.pop("RCCLX_TORCH_LIB", None)
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import rcclx_torch as rt  # noqa: E402

t0 = time.time()
rt.load_library(build_directory=sys.argv[1] if len(sys.argv) > 1 else None, verbose=True)
print("cpp_extension build + load: %.1f s" % (time.time() - t0), flush=True)
grp = rt.LocalGroup(2)
xs = [torch.randn(100003, device="cuda").to(torch.bfloat16) for _ in range(2)]
want = (xs[0].float() + xs[1].float()).to(torch.bfloat16)
torch.cuda.synchronize()
for r in range(2):
    with torch.cuda.stream(grp.streams[r]):
        grp.comms[r].all_reduce(xs[r])
torch.cuda.synchronize()
for c in grp.comms:
    c.check()
ok = all(torch.equal(x.view(torch.int16), want.view(torch.int16)) for x in xs)
grp.close()
print("JIT-built bridge AllReduce: %s" % ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
