#!/usr/bin/env bash
# Build every GPU binary with nvcc here (no GPU needed) and pack them into
# devbin.tgz, which bench/device-run.sh runs on the GPU machine (carried;
# git-ignored), saving the build's minutes of device time.  The GPU machine
# falls back to building itself if these do not run there.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
# The flags of the variant builds below (the CMake build's, for sm_90).
nvcc_sm90=(nvcc -x cu -arch=sm_90 -O3 -std=c++17 --expt-relaxed-constexpr -Iinclude)
mkdir -p devbin
cmake -S . -B build-cuda -G Ninja -DRCCLX_GPU=cuda -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build-cuda -j"$(nproc)" > build-cuda.log 2>&1 || { grep -E 'error' build-cuda.log | head -30; exit 1; }
cp build-cuda/tests/gpu/rcclx_gpu_tests build-cuda/tests/gpu/rcclx_ipc_test build-cuda/tests/gpu/librcclx_fp8_capi.so \
   build-cuda/bench/bench_dda build-cuda/bench/bench_latency build-cuda/bench/bench_lowp build-cuda/bench/bench_fusion \
   build-cuda/examples/allreduce_basic build-cuda/examples/gemm_allreduce build-cuda/examples/allreduce_rmsnorm \
   build-cuda/python/librcclx_torch_bridge.so devbin/
# Tuning variants of the FP8 ready kernels, timed by device-run.sh's
# fp8_variants step against the default build (librcclx_fp8_capi.so); only
# with RCCLX_FP8_VARIANTS=1 (minutes of build for a settled question).
# Every variant build runs in the background; each is waited for by its
# pid below, so a variant that fails to build fails the pack.
pids=()
if [[ ${RCCLX_FP8_VARIANTS:-0} == 1 ]]; then
  for v in "u4:-DRCCLX_FP8_UNROLL=4" "u1:-DRCCLX_FP8_UNROLL=1" "dq2:-DRCCLX_FP8_DEQUANT_UNROLL=2"; do
    "${nvcc_sm90[@]}" -shared -Xcompiler -fPIC ${v#*:} \
      tests/gpu/fp8_capi.cpp -o "devbin/fp8v_${v%%:*}.so" &
    pids+=($!)
  done
fi
# Build-time variants of bench_latency, timed by device-run.sh's latency
# step beside the default build: RCCLX_LATENCY_VARIANTS="name:-DA=1,-DB=0 ..."
# gives devbin/bench_latency_<name> (A/B of a library change in one run).
for v in ${RCCLX_LATENCY_VARIANTS:-}; do
  f=${v#*:}
  "${nvcc_sm90[@]}" -Ibench ${f//,/ } \
    bench/bench_latency.cpp -o "devbin/bench_latency_${v%%:*}" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
tar -czf devbin.tgz devbin && rm -rf devbin
ls -la devbin.tgz
