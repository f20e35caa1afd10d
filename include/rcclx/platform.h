/* rcclx/platform.h - the one file that knows the GPU vendor.
 *
 * Everything else in rcclx is written in HIP's vocabulary (hipMalloc,
 * hipStream_t, __syncthreads, ...) and calls the primitives below; no other
 * header tests a vendor macro.  This file:
 *
 *   - decides the build mode once:
 *       RCCLX_PLATFORM_HIP   clang/hipcc compiling HIP (AMD targets)
 *       RCCLX_PLATFORM_CUDA  nvcc (or clang) compiling CUDA (NVIDIA targets)
 *       RCCLX_PLATFORM_HOST  a plain C++ compiler, no GPU headers at all
 *     and RCCLX_DEVICE_PASS when the current compiler pass emits GPU code;
 *   - gives RCCLX_HOST_DEVICE / RCCLX_DEVICE / RCCLX_GLOBAL, which also work
 *     under g++ (so scalar math builds and is tested on the CPU);
 *   - maps the HIP runtime names rcclx uses to CUDA under nvcc (Debian's
 *     HIP-on-NVIDIA headers predate CUDA 13, so we do not use them);
 *   - pulls in exactly one architecture file for the device pass, which
 *     provides the primitive set documented at the end of this file.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* ---- build mode ------------------------------------------------------- */
#if defined(__HIP__) || defined(__HIPCC__)
#  define RCCLX_PLATFORM_HIP 1
#  include <hip/hip_runtime.h>
#  if defined(__HIP_DEVICE_COMPILE__)
#    define RCCLX_DEVICE_PASS 1
#  endif
#elif defined(__CUDACC__)
#  define RCCLX_PLATFORM_CUDA 1
#  include <cuda_runtime.h>
#  if defined(__CUDA_ARCH__)
#    define RCCLX_DEVICE_PASS 1
#  endif
#else
#  define RCCLX_PLATFORM_HOST 1
#endif

#if defined(RCCLX_PLATFORM_HIP) || defined(RCCLX_PLATFORM_CUDA)
#  define RCCLX_GPU_LANG 1 /* kernels, launches and the runtime are available */
#  define RCCLX_HOST_DEVICE __host__ __device__ __forceinline__
#  define RCCLX_DEVICE __device__ __forceinline__
#  define RCCLX_GLOBAL __global__
#  define RCCLX_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
#  define RCCLX_UNROLL _Pragma("unroll")
#  define RCCLX_NO_UNROLL _Pragma("unroll 1")
/* Register-heavy collective kernels (the low-precision ones): at most 512
 * threads per block.  On CDNA that lifts the cap from 128 to 256 VGPRs; on
 * NVIDIA it still asks for two blocks per SM (64 registers), the
 * co-residency the communicator's grid assumes. */
#  if defined(RCCLX_PLATFORM_CUDA)
#    define RCCLX_LAUNCH_BOUNDS_512 __launch_bounds__(512, 2)
#  else
#    define RCCLX_LAUNCH_BOUNDS_512 __launch_bounds__(512)
#  endif
#else
#  define RCCLX_HOST_DEVICE inline
#  define RCCLX_DEVICE inline
#  define RCCLX_GLOBAL
#  define RCCLX_LAUNCH_BOUNDS(threads)
#  define RCCLX_LAUNCH_BOUNDS_512
#  define RCCLX_UNROLL
#  define RCCLX_NO_UNROLL
#endif

/* Host-only helper functions in headers. */
#define RCCLX_HOST static inline

/* fmaxf / fminf / fabsf / fmaf / sqrtf that lower to the chip's
 * instructions everywhere (HIP's math wrappers call into the device
 * libraries' ocml, which CI's ISA build does not link). */
#if defined(RCCLX_PLATFORM_HIP)
#  define rcclx_fmaxf __builtin_fmaxf
#  define rcclx_fminf __builtin_fminf
#  define rcclx_fabsf __builtin_fabsf
#  define rcclx_fmaf __builtin_fmaf
#  define rcclx_sqrtf __builtin_sqrtf
#else
#  include <math.h>
#  define rcclx_fmaxf fmaxf
#  define rcclx_fminf fminf
#  define rcclx_fabsf fabsf
#  define rcclx_fmaf fmaf
#  define rcclx_sqrtf sqrtf
#endif

/* ---- HIP runtime names used by rcclx, spelled for CUDA ------------------ */
#if defined(RCCLX_PLATFORM_CUDA)
#  define hipError_t cudaError_t
#  define hipSuccess cudaSuccess
#  define hipErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#  define hipErrorNotReady cudaErrorNotReady
#  define hipGetErrorString cudaGetErrorString
#  define hipGetLastError cudaGetLastError
#  define hipPeekAtLastError cudaPeekAtLastError
#  define hipMalloc cudaMalloc
#  define hipHostMalloc(p, n, f) cudaMallocHost((p), (n))
#  define hipHostFree cudaFreeHost
#  define hipFree cudaFree
#  define hipMemset cudaMemset
#  define hipMemsetAsync cudaMemsetAsync
#  define hipMemcpy cudaMemcpy
#  define hipMemcpyAsync cudaMemcpyAsync
#  define hipMemcpyDefault cudaMemcpyDefault
#  define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#  define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#  define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#  define hipStream_t cudaStream_t
#  define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#  define hipStreamNonBlocking cudaStreamNonBlocking
#  define hipStreamDestroy cudaStreamDestroy
#  define hipStreamSynchronize cudaStreamSynchronize
#  define hipStreamQuery cudaStreamQuery
#  define hipStreamWaitEvent cudaStreamWaitEvent
#  define hipStreamBeginCapture cudaStreamBeginCapture
#  define hipStreamEndCapture cudaStreamEndCapture
#  define hipStreamIsCapturing cudaStreamIsCapturing
#  define hipStreamCaptureStatus cudaStreamCaptureStatus
#  define hipStreamCaptureStatusNone cudaStreamCaptureStatusNone
#  define hipStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#  define hipStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#  define hipEvent_t cudaEvent_t
#  define hipEventCreate cudaEventCreate
#  define hipEventCreateWithFlags cudaEventCreateWithFlags
#  define hipEventDisableTiming cudaEventDisableTiming
#  define hipEventRecord cudaEventRecord
#  define hipEventSynchronize cudaEventSynchronize
#  define hipEventElapsedTime cudaEventElapsedTime
#  define hipEventDestroy cudaEventDestroy
#  define hipGraph_t cudaGraph_t
#  define hipGraphExec_t cudaGraphExec_t
#  define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#  define hipGraphLaunch cudaGraphLaunch
#  define hipGraphExecDestroy cudaGraphExecDestroy
#  define hipGraphDestroy cudaGraphDestroy
#  define hipGetDevice cudaGetDevice
#  define hipSetDevice cudaSetDevice
#  define hipGetDeviceCount cudaGetDeviceCount
#  define hipDeviceSynchronize cudaDeviceSynchronize
#  define hipDeviceCanAccessPeer cudaDeviceCanAccessPeer
#  define hipDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#  define hipDeviceGetAttribute cudaDeviceGetAttribute
#  define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#  define hipDeviceAttributeWarpSize cudaDevAttrWarpSize
#  define hipDeviceAttributePciBusId cudaDevAttrPciBusId
#  define hipDeviceAttributePciDeviceId cudaDevAttrPciDeviceId
#  define hipDeviceAttributePciDomainID cudaDevAttrPciDomainId
#  define hipDeviceAttributeComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#  define hipDeviceAttributeClockRate cudaDevAttrClockRate
#  define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#  define hipIpcMemHandle_t cudaIpcMemHandle_t
#  define hipIpcGetMemHandle cudaIpcGetMemHandle
#  define hipIpcOpenMemHandle cudaIpcOpenMemHandle
#  define hipIpcCloseMemHandle cudaIpcCloseMemHandle
#  define hipIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#endif

/* ---- memory that peer GPUs write while its owner's kernel polls it -------
 * rcclx_malloc_polled(&p, bytes): device memory on the current device for
 * the words ranks exchange while their kernels run: flags a peer stores
 * and the owner spins on (barrier arrivals, call cards, tile flags), and
 * lines the owner stores while peers spin on them (the LL buffers).  Free
 * with hipFree; an IPC handle can be taken from it.
 * AMD: hipMalloc memory is coarse-grained, which HIP keeps coherent
 * between GPUs only at kernel boundaries: the owner's L2 may keep serving
 * its old copy of a line that a peer GPU's store changed in memory, so a
 * kernel spinning on its own memory may never see the peer's flag, and
 * fences do not help (they order, they do not make another GPU's store
 * reach this L2).  So these words live in uncached memory
 * (hipExtMallocWithFlags with hipDeviceMallocUncached, 3; Debian's HIP 5.2
 * headers lack the name), as vLLM's custom AllReduce allocates its signal
 * buffers ("uncached for signal on MI200") and QuickReduce its peer
 * buffers.  The data regions stay ordinary memory: only their owner writes
 * them, and peers read them after a barrier whose system-scope release
 * writes the owner's L2 back (`buffer_wbl2 sc0 sc1`) and whose acquire
 * drops the reader's stale copies (`buffer_inv sc0 sc1`).  Not run on AMD
 * hardware: on one GPU (virtual ranks) it cannot show, and no AMD GPU is
 * reachable here.
 * NVIDIA: a peer's store over NVLink lands in the owner's L2, which serves
 * the owner's loads: ordinary cudaMalloc memory. */
#if defined(RCCLX_PLATFORM_CUDA)
static inline cudaError_t rcclx_malloc_polled(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
#elif defined(RCCLX_PLATFORM_HIP)
#  define RCCLX_HIP_MALLOC_UNCACHED 0x3u /* hipDeviceMallocUncached */
static inline hipError_t rcclx_malloc_polled(void** p, size_t bytes) {
  return hipExtMallocWithFlags(p, bytes, RCCLX_HIP_MALLOC_UNCACHED);
}
#endif

/* ---- kernel launches ----------------------------------------------------
 * rcclx_launch(kernel, grid, block, stream, pdl, args...) launches
 * kernel<<<grid, block, 0, stream>>>(args...) and returns the launch's
 * error.  pdl != 0 asks for a programmatic dependent launch where the
 * device has one (rcclx_pdl_supported): the kernel may be scheduled while
 * the stream's previous kernel is still finishing, so it MUST call
 * rcclx_grid_dependency_wait() before it touches memory that earlier work
 * in the stream wrote, and should call rcclx_grid_dependents_launch() as
 * soon as it no longer waits on other kernels (rcclx_dda_done_waiting in
 * rcclx/signal.h says why not earlier).  Elsewhere pdl is ignored and both calls are no-ops.
 * Graph capture records the programmatic edge.
 * rcclx_pdl_supported(device): 1 on NVIDIA compute capability 9.0 and up,
 * 0 elsewhere (AMD has no such launch). */
#if defined(RCCLX_PLATFORM_CUDA)
template <typename... P, typename... A>
static inline cudaError_t rcclx_launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t stream, int pdl,
                                       A... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}
static inline int rcclx_pdl_supported(int device) {
  int major = 0;
  return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9;
}
#elif defined(RCCLX_PLATFORM_HIP)
template <typename... P, typename... A>
static inline hipError_t rcclx_launch(void (*kernel)(P...), dim3 grid, dim3 block, hipStream_t stream, int pdl,
                                      A... args) {
  (void)pdl;
  hipLaunchKernelGGL(kernel, grid, block, 0, stream, args...);
  return hipGetLastError();
}
static inline int rcclx_pdl_supported(int device) {
  (void)device;
  return 0;
}
#endif

/* ---- device primitives -------------------------------------------------
 * Each architecture file defines, for the device pass only (the memory
 * primitives take pointers to global memory, this GPU's or a peer's, never
 * to shared memory):
 *
 *   RCCLX_WARP_SIZE                      64 on CDNA, 32 on NVIDIA
 *   rcclx_st_release_sys_u32(p, v)       store, release, system scope
 *   rcclx_ld_acquire_sys_u32(p)          load, acquire, system scope
 *   rcclx_ld_relaxed_sys_u32(p)          load, relaxed (volatile), system scope
 *   rcclx_fence_acq_rel_sys()            acquire+release fence, system scope
 *   rcclx_ld_volatile_u32(p)             load afresh, no ordering (a counter
 *                                        this rank's earlier kernel wrote)
 *   rcclx_st_u32(p, v)                   plain store (such a counter)
 *   rcclx_st_release_dev_u32(p, v)       the same at device (agent) scope,
 *   rcclx_ld_acquire_dev_u32(p)          for ranks that all share one GPU
 *   rcclx_st_release_{sys,dev}_u64       the same orderings and scopes on
 *   rcclx_ld_acquire_{sys,dev}_u64       8-byte aligned 64-bit words
 *   rcclx_ld16(p) / rcclx_st16(p, v)     plain 16-byte load / store
 *   rcclx_sched_barrier()                the compiler schedules nothing across
 *                                        it (instruction order only, no
 *                                        memory ordering)
 *   rcclx_ld16_or_zero(base, off, ok)    the 16 bytes at base + off where ok,
 *                                        else zero, with no branch (a tile's
 *                                        edge); base the same in every lane
 *                                        of the warp, off a multiple of 16
 *                                        below 2^31
 *   rcclx_ld16_volatile(p)               16-byte load that is never cached
 *                                        or merged (spin-on-data protocols)
 *   rcclx_ld16_relaxed_dev(p)            the same, coherent at device scope
 *                                        only (every writer on this GPU)
 *   rcclx_ld16_nt(p)                     16-byte streaming load (peer data
 *                                        read once); only after an acquire
 *   rcclx_st_relaxed_{sys,dev}_u64(p, v) relaxed 64-bit store / load, single-
 *   rcclx_ld_relaxed_{sys,dev}_u64(p)    copy atomic (the LL protocol's
 *                                        tagged words, rcclx/dda/ll.h)
 *   rcclx_st_relaxed_{sys,dev}_u64x2     the same for two words at a 16-byte
 *   rcclx_ld_relaxed_{sys,dev}_u64x2     aligned address (each word atomic)
 *   rcclx_shfl_xor_f32(v, mask, width)   butterfly exchange inside a warp
 *   rcclx_wall_ns()                      a wall clock in nanoseconds
 *   rcclx_f16_to_f32 / rcclx_f32_to_f16_rn   hardware half conversions
 *   rcclx_clampf(x, lo, hi)              clamp of a non-NaN float
 *   rcclx_mul_rn(a, b)                   a * b, never fused into an add
 *   rcclx_grid_dependency_wait()         programmatic dependent launch: wait
 *                                        until the stream's previous kernel
 *                                        completed and its writes are visible
 *   rcclx_grid_dependents_launch()       let the stream's next kernel be
 *                                        scheduled (no-ops where a kernel was
 *                                        not launched that way, and on AMD)
 *   RCCLX_MMA_LAYOUT, RCCLX_MMA_ELEMS    the chip's warp matrix unit, its lane
 *   rcclx_mma_frag, rcclx_mma_bf16(d,a,b) layout (rcclx/mma_layout.h) and one
 *                                        16 x 16 x 16 bf16 step, d += a b
 *                                        (rcclx/mma.h loads the operands)
 *   RCCLX_HW_<FMT> (E4M3FN, E5M2, E4M3FNUZ, E5M2FNUZ) where the chip
 *   converts that fp8 format, with rcclx_hw_encode2_<fmt>(a, b) and
 *   rcclx_hw_decode_<fmt>(byte), bit-identical to the software path in
 *   rcclx/fp8/format.h (a NaN decodes to some NaN)
 *
 * Plain host builds define none of these.
 */
typedef struct __attribute__((aligned(16))) rcclx_vec16 {
  uint32_t w[4];
} rcclx_vec16;

/* Both passes see the declarations (device bodies are parsed in the host
 * pass too); the chip files, and so the RCCLX_HW_* fp8 macros, appear only in
 * the device pass of their target. */
#if defined(RCCLX_PLATFORM_HIP)
#  include <rcclx/arch/amdgcn.h>
#elif defined(RCCLX_PLATFORM_CUDA)
#  include <rcclx/arch/cuda.h>
#endif
