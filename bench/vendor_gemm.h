// The vendor GEMM the fusion benchmark compares against: Y = X W, bf16 in,
// fp32 accumulate, bf16 out, row-major X [M, K], W [K, N], Y [M, N].
// Built only when CMake found the vendor BLAS and defined
// RCCLX_BENCH_CUBLAS (CUDA: cuBLAS).  Without it (HIP builds, for now:
// hipBLASLt is not wired in; the comparison is for an AMD machine)
// vendor_gemm_available() is 0 and the benchmark prints "-".
#pragma once
#include <rcclx/platform.h>

#if defined(RCCLX_BENCH_CUBLAS)
#include <cublas_v2.h>
typedef cublasHandle_t vendor_gemm_handle;

static inline int vendor_gemm_available(void) { return 1; }
static inline int vendor_gemm_create(vendor_gemm_handle* h) { return cublasCreate(h) == CUBLAS_STATUS_SUCCESS ? 0 : -1; }
static inline void vendor_gemm_destroy(vendor_gemm_handle h) { (void)cublasDestroy(h); }

// Row-major Y = X W is column-major Y^T = W^T X^T: cuBLAS sees W as an
// N x K column-major matrix (ld N) and X as K x M (ld K).  Returns 0 on
// success; safe under stream capture.
static inline int vendor_gemm_bf16(vendor_gemm_handle h, const rcclx_bf16* X, const rcclx_bf16* W, rcclx_bf16* Y, int M,
                                   int N, int K, hipStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) return -1;
  return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_16BF, N, X, CUDA_R_16BF, K, &zero, Y,
                      CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS
             ? 0
             : -1;
}
#else
typedef void* vendor_gemm_handle;
static inline int vendor_gemm_available(void) { return 0; }
static inline int vendor_gemm_create(vendor_gemm_handle* h) { *h = 0; return -1; }
static inline void vendor_gemm_destroy(vendor_gemm_handle) {}
static inline int vendor_gemm_bf16(vendor_gemm_handle, const rcclx_bf16*, const rcclx_bf16*, rcclx_bf16*, int, int, int,
                                   hipStream_t) { return -1; }
#endif
