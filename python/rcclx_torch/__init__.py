"""rcclx from PyTorch: intra-node AllReduce (DDA flat / tree, optional FP8
wire), ReduceScatter, AllGather and AllToAll on torch tensors, the way
torchcomms users call RCCLX.

    import torch.distributed as dist, rcclx_torch
    dist.init_process_group("gloo")                  # any group with all_gather_object
    comm = rcclx_torch.new_comm("rcclx", torch.device("cuda", local_rank))
    comm.all_reduce(x, rcclx_torch.ReduceOp.SUM)     # in place, current stream
    comm.close()

One process per rank; the ranks' registered buffers are shared through IPC
handles exchanged over the process group (``all_gather_object``, so gloo
works, also for several processes sharing one GPU).  Calls are stream-ordered
on PyTorch's current stream and capturable in ``torch.cuda.graph``: the
kernels keep their barrier epochs in device memory, nothing on the host is
frozen into the graph.  ``RCCL_LOW_PRECISION_ENABLE=1`` (and the other
switches of include/rcclx/fp8/lowp_plan.h) is read when a communicator is
created, as in the C API (set it before ``new_comm``).

The native part is python/rcclx_torch/csrc/bridge.cu, a C ABI loaded with
ctypes.  By default it is built on first use with
torch.utils.cpp_extension (nvcc on CUDA, hipcc after hipify on ROCm);
``RCCLX_TORCH_LIB=/path/librcclx_torch_bridge.so`` uses a library built by
this project's CMake instead.
"""
import ctypes
import enum
import os

import torch

__all__ = ["ReduceOp", "RcclxError", "Communicator", "LocalGroup", "new_comm", "load_library"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_ABI = 2


class ReduceOp(enum.IntEnum):
    SUM = 0
    MAX = 1
    MIN = 2


class RcclxError(RuntimeError):
    """An rcclx status other than success; ``.status`` holds its code."""

    def __init__(self, status, what):
        self.status = status
        super().__init__("rcclx: %s: %s (status %d)" % (what, _lib().rcclx_torch_status_string(status).decode(), status))


_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_ALGOS = {"auto": 0, "flat": 1, "tree": 2, "ll": 5}
_PRECISION = {None: -1, False: 0, True: 1}
_REDUCE_SCATTER, _ALLGATHER, _ALLTOALL = 0, 1, 2
_ALLGATHER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)

_LIB = None


def _declare(lib):
    P, I, Z, U64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64
    sig = {
        "rcclx_torch_abi": (I, []),
        "rcclx_torch_status_string": (ctypes.c_char_p, [I]),
        "rcclx_torch_init_ipc": (I, [I, I, I, Z, U64, _ALLGATHER_FN, P, ctypes.POINTER(P)]),
        "rcclx_torch_init_local": (I, [I, ctypes.POINTER(I), Z, U64, ctypes.POINTER(P)]),
        "rcclx_torch_destroy": (None, [P]),
        "rcclx_torch_destroy_local": (None, [I, ctypes.POINTER(P)]),
        "rcclx_torch_info": (I, [P, ctypes.POINTER(I), ctypes.POINTER(I), ctypes.POINTER(I), ctypes.POINTER(Z)]),
        "rcclx_torch_input": (P, [P]),
        "rcclx_torch_overlaps_registered": (I, [P, P, Z]),
        "rcclx_torch_allreduce": (I, [P, P, P, Z, I, I, I, I, P]),
        "rcclx_torch_collective": (I, [P, I, P, P, Z, I, I, P]),
        "rcclx_torch_check": (I, [P, ctypes.POINTER(I)]),
        "rcclx_torch_time_local_c": (I, [I, ctypes.POINTER(P), ctypes.POINTER(P), ctypes.POINTER(P), Z, I, I,
                                         ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    if lib.rcclx_torch_abi() != _ABI:
        raise RuntimeError("rcclx_torch: the native library speaks ABI %d, this module %d" % (lib.rcclx_torch_abi(), _ABI))
    return lib


def load_library(path=None, build_directory=None, verbose=False):
    """Load the native bridge: ``path`` (or $RCCLX_TORCH_LIB) if given, else
    build bridge.cu with torch.utils.cpp_extension (cached in
    ``build_directory``, default $RCCLX_TORCH_BUILD_DIR or
    ~/.cache/rcclx_torch).  Idempotent."""
    global _LIB
    if _LIB is not None:
        return _LIB
    path = path or os.environ.get("RCCLX_TORCH_LIB")
    if not path:
        from torch.utils import cpp_extension
        include = os.environ.get("RCCLX_INCLUDE", os.path.join(_HERE, "..", "..", "include"))
        build_directory = build_directory or os.environ.get(
            "RCCLX_TORCH_BUILD_DIR", os.path.join(os.path.expanduser("~"), ".cache", "rcclx_torch"))
        os.makedirs(build_directory, exist_ok=True)
        cpp_extension.load(name="rcclx_torch_bridge", sources=[os.path.join(_HERE, "csrc", "bridge.cu")],
                           extra_include_paths=[os.path.abspath(include)],
                           extra_cuda_cflags=["-O3", "-std=c++17", "--expt-relaxed-constexpr"],
                           build_directory=build_directory, is_python_module=False, verbose=verbose)
        path = os.path.join(build_directory, "rcclx_torch_bridge.so")
    _LIB = _declare(ctypes.CDLL(path))
    return _LIB


def _lib():
    return _LIB if _LIB is not None else load_library()


def _ok(status, what):
    if status != 0:
        raise RcclxError(status, what)


def _raw_stream(device_index, stream):
    """The CUDA/HIP stream handle to launch on: `stream` (a torch.cuda.Stream)
    if given, else PyTorch's current stream of the device."""
    if stream is not None:
        return stream.cuda_stream
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # cheap path (what Triton uses)
    return raw(device_index) if raw is not None else torch.cuda.current_stream(device_index).cuda_stream


def _device_index(device):
    if device is None:
        return torch.cuda.current_device()
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError("rcclx_torch: a communicator lives on a GPU, not %s" % device)
    return device.index if device.index is not None else torch.cuda.current_device()


class Communicator:
    """One rank's communicator.  Every rank of the group makes one, with the
    same ``buffer_bytes`` (per region; 0: 32 MiB or $RCCLX_BUFFER_BYTES) and
    ``watchdog_ms`` (0: off or $RCCLX_WATCHDOG_MS).  Collectives: every rank
    calls the same sequence with the same shapes and dtypes; a rank that
    disagrees is caught on the GPU and reported by :meth:`check`."""

    def __init__(self, group=None, device=None, buffer_bytes=0, watchdog_ms=0, _handle=None, _shape=None):
        lib = _lib()
        if _handle is not None:  # a rank of a LocalGroup
            self._h, self._owned = _handle, False
        else:
            import torch.distributed as dist
            group = group if group is not None else dist.group.WORLD
            rank, size = dist.get_rank(group), dist.get_world_size(group)
            dev = _device_index(device)
            failure = []

            def allgather(ctx, mine, all_, n):
                try:
                    parts = [None] * size
                    dist.all_gather_object(parts, ctypes.string_at(mine, n), group=group)
                    for r, b in enumerate(parts):
                        if len(b) != n:
                            return 1
                        ctypes.memmove(all_ + r * n, b, n)
                    return 0
                except Exception as e:  # reported below; C sees a failed exchange
                    failure.append(e)
                    return 1

            cb = _ALLGATHER_FN(allgather)
            h = ctypes.c_void_p()
            st = lib.rcclx_torch_init_ipc(rank, size, dev, buffer_bytes, watchdog_ms, cb, None, ctypes.byref(h))
            if failure:
                raise RuntimeError("rcclx_torch: handle exchange over the process group failed") from failure[0]
            _ok(st, "communicator init (rank %d of %d, cuda:%d)" % (rank, size, dev))
            self._h, self._owned = h, True
        r, n, d, z = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_size_t()
        _ok(lib.rcclx_torch_info(self._h, ctypes.byref(r), ctypes.byref(n), ctypes.byref(d), ctypes.byref(z)), "info")
        self._rank, self._size, self.device, self.buffer_bytes = r.value, n.value, torch.device("cuda", d.value), z.value
        self._dev = d.value
        self._input = lib.rcclx_torch_input(self._h)

    # ---- torchcomms-style surface -------------------------------------------
    def get_rank(self):
        return self._rank

    def get_size(self):
        return self._size

    def all_reduce(self, tensor, op=ReduceOp.SUM, async_op=False, *, out=None, algorithm="auto", low_precision=None,
                   stream=None):
        """In place on ``tensor`` (or into ``out``), on the current stream
        (or ``stream``, a torch.cuda.Stream).
        ``low_precision``: None = the environment decides, as it was when
        the communicator was created (RCCL_LOW_PRECISION_ENABLE, sum only),
        True = FP8 wire, False = never.
        ``algorithm``: auto / flat / tree / ll (the same bits whichever
        runs).
        Returns None, or with ``async_op`` a handle whose ``wait()`` orders
        the current stream after the call."""
        dst = tensor if out is None else out
        self._check_tensor(tensor, "tensor")
        if out is not None:
            self._check_tensor(out, "out")
            if out.numel() != tensor.numel() or out.dtype != tensor.dtype:
                raise ValueError("rcclx_torch: out must match tensor's numel and dtype")
        if algorithm not in _ALGOS:
            raise ValueError("rcclx_torch: algorithm must be one of %s" % sorted(_ALGOS))
        if tensor.numel() == 0:
            return _Work(self.device) if async_op else None
        src, dst_ptr = tensor.data_ptr(), dst.data_ptr()
        if self._in_registered(dst):
            raise ValueError("rcclx_torch: an AllReduce cannot write into the registered buffer (peers read it "
                             "during the call); pass an ordinary out=")
        st = _LIB.rcclx_torch_allreduce(self._h, src, dst_ptr, tensor.numel(), _DTYPES[tensor.dtype], int(op),
                                        _ALGOS[algorithm], _PRECISION[low_precision], _raw_stream(self._dev, stream))
        if st:
            raise RcclxError(st, "all_reduce")
        return _Work(self.device) if async_op else None

    def reduce_scatter(self, output, input, op=ReduceOp.SUM, async_op=False, *, low_precision=None):
        """Sum of every rank's ``input`` (size * n elements); rank r receives
        segment r in ``output`` (n elements)."""
        if ReduceOp(op) != ReduceOp.SUM:
            raise ValueError("rcclx_torch: reduce_scatter supports SUM only")
        return self._collective(_REDUCE_SCATTER, output, input, output.numel(), self._size, 1, async_op, low_precision)

    def all_gather(self, output, input, async_op=False, *, low_precision=None):
        """``output`` (size * n elements) receives every rank's ``input`` (n),
        rank r's at segment r."""
        return self._collective(_ALLGATHER, output, input, input.numel(), 1, self._size, async_op, low_precision)

    def all_to_all(self, output, input, async_op=False, *, low_precision=None):
        """Segment s of ``input`` (size * n elements) goes to rank s; segment
        s of ``output`` came from rank s."""
        if input.numel() % self._size:
            raise ValueError("rcclx_torch: all_to_all input numel must be a multiple of the group size")
        n = input.numel() // self._size
        return self._collective(_ALLTOALL, output, input, n, self._size, self._size, async_op, low_precision)

    def input_tensor(self, numel, dtype):
        """A tensor aliasing this rank's registered input region: a producer
        (a matmul with ``out=``, a Triton kernel) writes its result here and
        ``all_reduce(t, out=...)`` then reads every rank's copy with no
        copy-in.  Valid until :meth:`close`."""
        if dtype not in _DTYPES:
            raise TypeError("rcclx_torch: dtype must be one of float32, float16, bfloat16, not %s" % dtype)
        es = torch.empty((), dtype=dtype).element_size()
        if numel < 1 or numel * es > self.buffer_bytes:
            raise ValueError("rcclx_torch: %d elements of %s do not fit the registered region of %d bytes "
                             "(zero-copy cannot chunk; use a plain tensor, which is copied in chunks)"
                             % (numel, dtype, self.buffer_bytes))
        ptr = _lib().rcclx_torch_input(self._h)
        typestr = {4: "<f4", 2: "<i2"}[es]
        view = torch.as_tensor(_CudaArray(ptr, numel, typestr), device=self.device)
        return view.view(dtype) if dtype != torch.float32 else view

    def check(self):
        """Synchronises this rank's device and raises RcclxError if a kernel
        recorded an error (watchdog timeout, ranks that disagreed).  Until
        it is read here, this rank's later collectives are skipped (their
        outputs untouched), so none waits for peers that are not coming."""
        torch.cuda.synchronize(self.device)
        d = (ctypes.c_int * 4)()
        st = _lib().rcclx_torch_check(self._h, d)
        if st != 0:
            raise RcclxError(st, "rank %d: slot %d waited on rank %d at epoch %d" % (d[0], d[1], d[2], d[3]))

    def close(self):
        if self._h is not None and self._owned:
            torch.cuda.synchronize(self.device)
            _lib().rcclx_torch_destroy(self._h)
        self._h = None

    # ---- helpers ---------------------------------------------------------------
    def _check_tensor(self, t, name):
        if not isinstance(t, torch.Tensor):
            raise TypeError("rcclx_torch: %s must be a torch.Tensor" % name)
        if self._h is None:
            raise RuntimeError("rcclx_torch: communicator is closed")
        if not t.is_cuda or t.get_device() != self._dev:
            raise ValueError("rcclx_torch: %s is on %s, the communicator on %s" % (name, t.device, self.device))
        if t.dtype not in _DTYPES:
            raise TypeError("rcclx_torch: %s dtype %s is not float32, float16 or bfloat16" % (name, t.dtype))
        if not t.is_contiguous():
            raise ValueError("rcclx_torch: %s must be contiguous" % name)
        if t.numel() and t.data_ptr() % 16:
            raise ValueError("rcclx_torch: %s must start 16-byte aligned (storage offset %d)" % (name, t.storage_offset()))

    def _in_registered(self, t):
        # The C library owns the buffer layout (regions + LL area).
        return bool(_lib().rcclx_torch_overlaps_registered(self._h, t.data_ptr(), t.numel() * t.element_size()))

    def _collective(self, kind, output, input, n, in_segments, out_segments, async_op, low_precision):
        self._check_tensor(input, "input")
        self._check_tensor(output, "output")
        if input.dtype != output.dtype:
            raise TypeError("rcclx_torch: input and output dtypes differ")
        if n < 1 or input.numel() != n * in_segments or output.numel() != n * out_segments:
            raise ValueError("rcclx_torch: sizes do not match the collective: input %d, output %d, group %d"
                             % (input.numel(), output.numel(), self._size))
        _ok(_lib().rcclx_torch_collective(self._h, kind, input.data_ptr(), output.data_ptr(), n, _DTYPES[input.dtype],
                                          _PRECISION[low_precision], _raw_stream(self._dev, None)),
            ("reduce_scatter", "all_gather", "all_to_all")[kind])
        return _Work(self.device) if async_op else None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class LocalGroup:
    """Several ranks driven by THIS process: virtual ranks on one GPU (the
    test and benchmark setting here) or one GPU each.  ``comms[r]`` is rank
    r's Communicator; issue each rank's call on its own stream
    (``streams[r]``) and issue every rank's call before waiting on any.
    Needs CUDA_MODULE_LOADING=EAGER and CUDA_DEVICE_MAX_CONNECTIONS >= ranks
    (include/rcclx/comm.h says why), set before CUDA starts."""

    def __init__(self, nranks, devices=None, buffer_bytes=0, watchdog_ms=0):
        lib = _lib()
        devices = list(devices) if devices is not None else [torch.cuda.current_device()] * nranks
        if len(devices) != nranks:
            raise ValueError("rcclx_torch: one device per rank")
        self._handles = (ctypes.c_void_p * nranks)()
        _ok(lib.rcclx_torch_init_local(nranks, (ctypes.c_int * nranks)(*devices), buffer_bytes, watchdog_ms,
                                       self._handles), "local group init")
        self.comms = [Communicator(_handle=ctypes.c_void_p(self._handles[r])) for r in range(nranks)]
        self.devices = devices
        self.streams = []
        for d in devices:
            with torch.cuda.device(d):
                self.streams.append(torch.cuda.Stream())

    def close(self):
        if self._handles is not None:
            for d in sorted(set(self.devices)):  # every GPU a rank runs on, not only the current one
                torch.cuda.synchronize(d)
            _lib().rcclx_torch_destroy_local(len(self.comms), self._handles)
            for c in self.comms:
                c._h = None
            self._handles = None


def new_comm(backend="rcclx", device=None, name=None, group=None, **options):
    """torchcomms' ``new_comm`` shape: ``new_comm("rcclx", device)``.  The
    group defaults to torch.distributed's world group; ``name`` is kept for
    the caller's bookkeeping."""
    if backend != "rcclx":
        raise ValueError("rcclx_torch: only the 'rcclx' backend is provided here")
    c = Communicator(group=group, device=device, **options)
    c.name = name
    return c


class _Work:
    """What an async call returns: the call is already ordered on the
    current stream; ``wait()`` makes the then-current stream wait for it."""

    def __init__(self, device):
        self._event = torch.cuda.Event()
        self._event.record(torch.cuda.current_stream(device))

    def wait(self):
        torch.cuda.current_stream().wait_event(self._event)
        return True

    def is_completed(self):
        return self._event.query()


class _CudaArray:
    """__cuda_array_interface__ around a raw device pointer (no ownership)."""

    def __init__(self, ptr, numel, typestr):
        self.__cuda_array_interface__ = {"shape": (numel,), "typestr": typestr, "data": (ptr, False), "version": 2,
                                         "strides": None}
