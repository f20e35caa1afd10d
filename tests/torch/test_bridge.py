"""rcclx_torch bridge test, one process per rank:

    torchrun --nproc-per-node=N tests/torch/test_bridge.py

N processes may share one GPU (IPC between processes on the same device;
the GPU time-slices them).  The group is gloo (handles travel through
all_gather_object).  Every rank generates every rank's input from seeds, so
each checks its result against a host reference computed the way the
kernels compute: fp32 in rank order 0..N-1, rounded once (bitwise), and
against float64 (bound); results are compared bitwise across ranks.
On several real GPUs (RCCLX_TEST_NCCL=1, backend nccl available) the
AllReduce is also checked against torch.distributed.all_reduce.
Exits non-zero on the first failure (torchrun reports it)."""
import hashlib
import os
import sys

os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import rcclx_torch as rt  # noqa: E402

dist.init_process_group("gloo")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
DEV = torch.device("cuda", int(os.environ.get("LOCAL_RANK", RANK)) % torch.cuda.device_count())
torch.cuda.set_device(DEV)
REGION = 1 << 20  # small, so big messages run in chunks
comm = rt.new_comm("rcclx", DEV, name="test", buffer_bytes=REGION,
                   watchdog_ms=int(os.environ.get("RCCLX_WATCHDOG_MS", "60000")))
assert comm.get_rank() == RANK and comm.get_size() == WORLD
checks = 0


def say(msg):
    print("[rank %d] %s" % (RANK, msg), flush=True)


def expect(cond, what):
    global checks
    checks += 1
    if not cond:
        say("FAIL: " + what)
        sys.exit(1)


def inputs(case, n, dtype, scale=1.0):
    """Every rank's input for `case`, on the host, fresh random normals."""
    out = []
    for q in range(WORLD):
        seed = int.from_bytes(hashlib.sha256(repr((case, q)).encode()).digest()[:4], "little")  # same in every process
        g = torch.Generator().manual_seed(seed)
        out.append((torch.randn(n, generator=g) * scale).to(dtype))
    return out


def same_on_all_ranks(t, what):
    h = hashlib.sha256(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()
    hs = [None] * WORLD
    dist.all_gather_object(hs, h)
    expect(len(set(hs)) == 1, what + ": results differ across ranks")


def bits_equal(a, b):
    return a.dtype == b.dtype and torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def rank_order_sum(xs):
    acc = xs[0].float()
    for x in xs[1:]:
        acc = acc + x.float()
    return acc


def check_reduce(got, xs, op, what):
    dtype = xs[0].dtype
    if op == rt.ReduceOp.SUM:
        want = rank_order_sum(xs).to(dtype)
        exact = sum(x.double() for x in xs)
        eps = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}[dtype]
        bound = 2 * eps * exact.abs() + WORLD * 2.0 ** -24 * sum(x.double().abs() for x in xs) + 1e-30
        expect(bool(((got.double() - exact).abs() <= bound).all()), what + ": beyond the float64 bound")
    else:
        want = xs[0]
        for x in xs[1:]:
            want = torch.maximum(want, x) if op == rt.ReduceOp.MAX else torch.minimum(want, x)
    expect(bits_equal(got, want), what + ": not bitwise equal to the fp32 rank-order reference")


# ---- AllReduce: every dtype and op, odd sizes, chunked, in and out of place
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    es = torch.empty((), dtype=dtype).element_size()
    for op in (rt.ReduceOp.SUM, rt.ReduceOp.MAX, rt.ReduceOp.MIN):
        for n in (1, 7, 1023, 196613, 3 * REGION // es + 11):
            for algo in (("auto", "flat", "tree", "ll") if op == rt.ReduceOp.SUM else ("auto",)):
                case = ("ar", str(dtype), int(op), n, algo)
                xs = inputs(case, n, dtype)
                x = xs[RANK].to(DEV)
                if n % 2:  # in place
                    comm.all_reduce(x, op, algorithm=algo)
                    got = x
                else:
                    got = torch.full_like(x, float("nan"))  # poisoned output
                    comm.all_reduce(x, op, out=got, algorithm=algo)
                got = got.cpu()
                check_reduce(got, xs, op, "all_reduce %s" % (case,))
                same_on_all_ranks(got, "all_reduce %s" % (case,))
say("all_reduce: every dtype / op / algorithm, sizes 1 .. %d (chunked), bitwise" % (3 * REGION // 2 + 11))

# ---- ReduceScatter, AllGather, AllToAll, full precision
for dtype in (torch.float32, torch.bfloat16):
    for n in (1000, 70001):
        xs = inputs(("rs", str(dtype), n), WORLD * n, dtype)
        out = torch.full((n,), float("nan"), dtype=dtype, device=DEV)
        comm.reduce_scatter(out, xs[RANK].to(DEV), low_precision=False)
        check_reduce(out.cpu(), [x[RANK * n:(RANK + 1) * n] for x in xs], rt.ReduceOp.SUM, "reduce_scatter %d" % n)
        xs = inputs(("ag", str(dtype), n), n, dtype)
        out = torch.full((WORLD * n,), float("nan"), dtype=dtype, device=DEV)
        comm.all_gather(out, xs[RANK].to(DEV), low_precision=False)
        expect(bits_equal(out.cpu(), torch.cat(xs)), "all_gather %d" % n)
        xs = inputs(("a2a", str(dtype), n), WORLD * n, dtype)
        out = torch.full((WORLD * n,), float("nan"), dtype=dtype, device=DEV)
        comm.all_to_all(out, xs[RANK].to(DEV), low_precision=False)
        expect(bits_equal(out.cpu(), torch.cat([x[RANK * n:(RANK + 1) * n] for x in xs])), "all_to_all %d" % n)
say("reduce_scatter / all_gather / all_to_all: exact")


# ---- Low precision: FP8 wire.  Bound per element: each rank's group is
# quantized with at most 2^-4 of its absmax as error (e4m3, in range), the
# tree's re-publication adds as much of the sum's; with groups of at most 256
# elements, 2^-3 of the summed 256-element absmaxes covers both.
def lowp_bound(xs, exact):
    n = exact.numel()
    pad = (-n) % 256
    amax = sum(torch.nn.functional.pad(x.double().abs(), (0, pad)).view(-1, 256).amax(dim=1) for x in xs)
    return 2.0 ** -3 * amax.repeat_interleave(256)[:n] + 2.0 ** -7 * exact.abs()


for n, algo in ((300001, "flat"), (300001, "tree"), (1 << 20, "auto")):
    xs = inputs(("lp", n, algo), n, torch.bfloat16)
    x = xs[RANK].to(DEV)
    low = torch.empty_like(x)
    comm.all_reduce(x, out=low, algorithm=algo, low_precision=True)
    low = low.cpu()
    exact = sum(v.double() for v in xs)
    expect(bool(((low.double() - exact).abs() <= lowp_bound(xs, exact)).all()), "low-precision all_reduce bound")
    same_on_all_ranks(low, "low-precision all_reduce")
# The environment switch, as RCCLX users set it: read when a communicator
# is created, so it holds for the one made while it was set (even after it
# is cleared), and not for `comm`, made before.
n = 1 << 18
xs = inputs(("lpenv", n), n, torch.bfloat16)
x = xs[RANK].to(DEV)
explicit, by_env, full = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
comm.all_reduce(x, out=explicit, low_precision=True)
os.environ["RCCL_LOW_PRECISION_ENABLE"] = "1"
os.environ["RCCLX_LOW_PRECISION_MIN_BYTES"] = "0"
comm_env = rt.new_comm("rcclx", DEV, name="test-env", buffer_bytes=REGION,
                       watchdog_ms=int(os.environ.get("RCCLX_WATCHDOG_MS", "60000")))
os.environ.pop("RCCL_LOW_PRECISION_ENABLE")
os.environ.pop("RCCLX_LOW_PRECISION_MIN_BYTES")
comm_env.all_reduce(x, out=by_env)
comm.all_reduce(x, out=full)
expect(bits_equal(explicit, by_env), "RCCL_LOW_PRECISION_ENABLE=1 does not give the FP8 result")
expect(not bits_equal(explicit, full), "the FP8 and full-precision results are identical (switch had no effect?)")
check_reduce(full.cpu(), xs, rt.ReduceOp.SUM, "full precision on the communicator made before the switch")
torch.cuda.synchronize()
comm_env.close()
# FP8 ReduceScatter and AllGather.
n = 50000
xs = inputs(("lprs", n), WORLD * n, torch.bfloat16)
out = torch.empty(n, dtype=torch.bfloat16, device=DEV)
comm.reduce_scatter(out, xs[RANK].to(DEV), low_precision=True)
seg = [x[RANK * n:(RANK + 1) * n] for x in xs]
exact = sum(v.double() for v in seg)
expect(bool(((out.cpu().double() - exact).abs() <= lowp_bound(seg, exact)).all()), "low-precision reduce_scatter")
xs = inputs(("lpag", n), n, torch.bfloat16)
out = torch.empty(WORLD * n, dtype=torch.bfloat16, device=DEV)
comm.all_gather(out, xs[RANK].to(DEV), low_precision=True)
for q in range(WORLD):
    got = out[q * n:(q + 1) * n].cpu().double()
    expect(bool(((got - xs[q].double()).abs() <= lowp_bound([xs[q]], xs[q].double())).all()), "low-precision all_gather")
same_on_all_ranks(out, "low-precision all_gather")
say("low precision: all_reduce flat/tree/auto, env switch, reduce_scatter, all_gather within bounds")

# ---- Zero-copy: the producer writes into the registered input region.
n = 100003
xs = inputs(("zc", n), n, torch.bfloat16)
inp = comm.input_tensor(n, torch.bfloat16)
torch.add(xs[RANK].to(DEV), 0.0, out=inp)  # the producer (a GEMM's out=, a Triton kernel) writes here
out = torch.empty(n, dtype=torch.bfloat16, device=DEV)
comm.all_reduce(inp, out=out)
check_reduce(out.cpu(), xs, rt.ReduceOp.SUM, "zero-copy all_reduce")
say("zero-copy from the registered input: bitwise")

# ---- CUDA graph: capture an out-of-place and an in-place AllReduce, replay
# 20 times with new data; nothing on the host changes between replays.
n = 4099
x = torch.empty(n, dtype=torch.bfloat16, device=DEV)
y = torch.empty_like(x)
x.copy_(inputs(("warm", n), n, torch.bfloat16)[RANK].to(DEV))
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):  # warm-up outside the capture, as torch asks
    comm.all_reduce(x, out=y)
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    comm.all_reduce(x, out=y)
    comm.all_reduce(y, algorithm="tree")
for it in range(20):
    xs = inputs(("graph", it), n, torch.bfloat16)
    x.copy_(xs[RANK].to(DEV))
    y.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    first = rank_order_sum(xs).to(torch.bfloat16)
    check_reduce(y.cpu(), [first] * WORLD, rt.ReduceOp.SUM, "graph replay %d" % it)
    same_on_all_ranks(y, "graph replay %d" % it)
say("CUDA graph: 20 replays with changing data, bitwise")

# ---- Bad input: clear Python exceptions, nothing launched.
x = torch.randn(64, device=DEV)


def raises(exc, fn, what):
    try:
        fn()
    except exc:
        expect(True, what)
        return
    except Exception as e:  # the wrong kind
        expect(False, "%s raised %r, not %s" % (what, e, exc.__name__))
    expect(False, what + " raised nothing")


raises(ValueError, lambda: comm.all_reduce(x[::2]), "non-contiguous")
raises(ValueError, lambda: comm.all_reduce(torch.randn(64)), "CPU tensor")
raises(TypeError, lambda: comm.all_reduce(torch.ones(64, dtype=torch.int32, device=DEV)), "int32")
raises(ValueError, lambda: comm.all_reduce(x[1:]), "misaligned view")
raises(ValueError, lambda: comm.all_reduce(x, out=torch.empty(63, device=DEV)), "out of another size")
raises(ValueError, lambda: comm.all_reduce(x, algorithm="ring"), "unknown algorithm")
raises(ValueError, lambda: comm.input_tensor(REGION // 2 + 1, torch.bfloat16), "larger than the registered buffer")
raises(ValueError, lambda: comm.all_reduce(comm.input_tensor(64, torch.float32)), "in place on the registered buffer")
raises(ValueError, lambda: comm.all_reduce(x[:64], out=comm.input_tensor(64, x.dtype)), "out= in the registered buffer")
raises(rt.RcclxError, lambda: comm.all_reduce(x, rt.ReduceOp.MAX, low_precision=True), "FP8 max")
raises(ValueError, lambda: comm.reduce_scatter(torch.empty(7, device=DEV), x), "reduce_scatter sizes")
# ---- Against NCCL, where every rank has a GPU of its own.
if os.environ.get("RCCLX_TEST_NCCL") == "1" and torch.cuda.device_count() >= WORLD:
    nccl = dist.new_group(backend="nccl")
    for dtype in (torch.float32, torch.bfloat16):
        xs = inputs(("nccl", str(dtype)), 1 << 20, dtype)
        a, b = xs[RANK].to(DEV), xs[RANK].to(DEV)
        comm.all_reduce(a)
        dist.all_reduce(b, group=nccl)
        exact = sum(v.double() for v in xs)
        eps = 2.0 ** -24 if dtype == torch.float32 else 2.0 ** -8
        bound = 2 * eps * (exact.abs() + WORLD * sum(v.double().abs() for v in xs)) + 1e-30
        expect(bool(((a.cpu().double() - b.cpu().double()).abs() <= 2 * bound).all()), "rcclx vs NCCL %s" % dtype)
    say("against torch.distributed.all_reduce (NCCL): within bounds")
comm.check()
dist.barrier()
comm.close()
say("PASS (%d checks)" % checks)
dist.destroy_process_group()
