// A tiny C ABI over the device encoders/decoders for fp8_torch_check.py
// (ctypes): encode n host floats on the GPU with rcclx_fp8_encode (chip
// converts where they exist), decode all 256 codes.  Returns 0 on success.
#include <rcclx/fp8/format.h>

__global__ void capi_encode(const float* x, size_t n, rcclx_fp8_format f, uint8_t* out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = rcclx_fp8_encode(x[i], f);
}
__global__ void capi_decode(rcclx_fp8_format f, float* out) { out[threadIdx.x] = rcclx_fp8_decode((uint8_t)threadIdx.x, f); }

extern "C" int rcclx_capi_encode(const float* host_x, size_t n, int fmt, uint8_t* host_out) {
  float* dx = nullptr;
  uint8_t* dout = nullptr;
  int rc = 1;
  if (hipMalloc((void**)&dx, n * 4) != hipSuccess || hipMalloc((void**)&dout, n) != hipSuccess) goto done;
  if (hipMemcpy(dx, host_x, n * 4, hipMemcpyHostToDevice) != hipSuccess) goto done;
  capi_encode<<<1024, 256>>>(dx, n, (rcclx_fp8_format)fmt, dout);
  if (hipGetLastError() != hipSuccess || hipDeviceSynchronize() != hipSuccess) goto done;
  if (hipMemcpy(host_out, dout, n, hipMemcpyDeviceToHost) != hipSuccess) goto done;
  rc = 0;
done:
  (void)hipFree(dx);
  (void)hipFree(dout);
  return rc;
}
extern "C" int rcclx_capi_decode(int fmt, float* host_out256) {
  float* d = nullptr;
  if (hipMalloc((void**)&d, 256 * 4) != hipSuccess) return 1;
  capi_decode<<<1, 256>>>((rcclx_fp8_format)fmt, d);
  int rc = (hipGetLastError() == hipSuccess && hipMemcpy(host_out256, d, 1024, hipMemcpyDeviceToHost) == hipSuccess) ? 0 : 1;
  (void)hipFree(d);
  return rc;
}

// Device pointers, on a caller's stream (for bench/fp8_bench.py).
#include <rcclx/fp8/quantize.h>
extern "C" int rcclx_capi_quantize(const void* in_bf16, size_t n, int fmt, int block, int kind, void* chunk, void* stream) {
  return rcclx_fp8_quantize(in_bf16, RCCLX_BFLOAT16, n, (rcclx_fp8_format)fmt, block, (rcclx_scale_kind)kind, chunk,
                            (hipStream_t)stream) == RCCLX_SUCCESS ? 0 : 1;
}
extern "C" int rcclx_capi_dequantize(const void* chunk, size_t n, int fmt, int block, int kind, void* out_bf16, void* stream) {
  return rcclx_fp8_dequantize(chunk, n, (rcclx_fp8_format)fmt, block, (rcclx_scale_kind)kind, out_bf16, RCCLX_BFLOAT16,
                              (hipStream_t)stream) == RCCLX_SUCCESS ? 0 : 1;
}
