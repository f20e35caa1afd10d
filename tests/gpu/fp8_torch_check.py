"""rcclx fp8 on the GPU vs PyTorch's float8 conversions (all four formats).

PyTorch does not saturate (overflow -> NaN/Inf); rcclx does.  Inside the
finite range (|x| <= max) both round to nearest even and must agree bit for
bit; NaN must map to NaN.  Decoding must agree on all 256 codes.
Usage: python3 fp8_torch_check.py path/to/librcclx_fp8_capi.so
"""
import ctypes, sys
import numpy as np
import torch

lib = ctypes.CDLL(sys.argv[1])
FORMATS = [(0, torch.float8_e4m3fn, 448.0), (1, torch.float8_e4m3fnuz, 240.0),
           (2, torch.float8_e5m2, 57344.0), (3, torch.float8_e5m2fnuz, 57344.0)]
rng = np.random.default_rng(1)
bits = rng.integers(0, 2**32, size=1 << 22, dtype=np.uint64).astype(np.uint32)
x_all = bits.view(np.float32)
failures = 0
for fmt, tdt, fmax in FORMATS:
    # in range: random bit patterns that land inside +-fmax, plus a dense sweep
    x = x_all[np.abs(x_all) <= fmax]
    dense = (rng.standard_normal(1 << 20) * fmax / 4).astype(np.float32)
    x = np.concatenate([x, dense, np.array([0.0, -0.0, fmax, -fmax], np.float32)])
    x = np.ascontiguousarray(x[np.abs(x) <= fmax])  # torch overflows to NaN/Inf where rcclx saturates
    out = np.empty(x.size, np.uint8)
    assert lib.rcclx_capi_encode(x.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(x.size), fmt,
                                 out.ctypes.data_as(ctypes.c_void_p)) == 0
    ref = torch.from_numpy(x).to(tdt).view(torch.uint8).numpy()
    bad = np.count_nonzero(out != ref)
    for i in np.nonzero(out != ref)[0][:6]:
        print(f"  {tdt}: x={x[i]!r} bits=0x{x[i:i+1].view(np.uint32)[0]:08x} rcclx=0x{out[i]:02x} torch=0x{ref[i]:02x}")
    dec = np.empty(256, np.float32)
    assert lib.rcclx_capi_decode(fmt, dec.ctypes.data_as(ctypes.c_void_p)) == 0
    tdec = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(tdt).float().numpy()
    dbad = np.count_nonzero(~((dec == tdec) | (np.isnan(dec) & np.isnan(tdec))))
    nan_out = np.empty(1, np.uint8)
    nanx = np.array([np.nan], np.float32)
    lib.rcclx_capi_encode(nanx.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(1), fmt, nan_out.ctypes.data_as(ctypes.c_void_p))
    nan_ok = np.isnan(torch.from_numpy(nan_out).view(tdt).float().numpy()[0])
    print(f"{tdt}: {x.size} in-range inputs, {bad} encode mismatches; decode mismatches {dbad}; NaN->NaN {nan_ok}")
    failures += bad + dbad + (0 if nan_ok else 1)
print("1 passed, 0 failed" if failures == 0 else "0 passed, 1 failed")
sys.exit(1 if failures else 0)
