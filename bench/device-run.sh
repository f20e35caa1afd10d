#!/usr/bin/env bash
# The one GPU-machine script: build with nvcc, run the GPU tests, run the
# benchmark sweeps, print a short table last.  Logs and CSVs go to $OUT.
# Needs Catch2's single header in third_party/catch2 (carried: the GPU
# machine has no package registry).  Usage: bash bench/device-run.sh [tests|bench|all]
set -uo pipefail
what=${1:-all}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export CUDA_DEVICE_MAX_CONNECTIONS=32 GPU_MAX_HW_QUEUES=16
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
cmake -S . -B build-gpu -G Ninja -DRCCLX_GPU=cuda -DCMAKE_BUILD_TYPE=Release > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build-gpu -j16 > "$OUT/build.log" 2>&1 || { grep -E 'error' "$OUT/build.log" | head -30; exit 1; }
rc=0
if [[ $what == tests || $what == all ]]; then
  # Each DDA case on its own, under a watchdog, so a deadlock is an error with a name.
  export RCCLX_WATCHDOG_MS=${RCCLX_WATCHDOG_MS:-20000}
  ./build-gpu/tests/gpu/rcclx_gpu_tests --list-test-names-only "[dda]" | grep -v '^$' | while read -r name; do
    s=$(date +%s.%N)
    timeout 60 ./build-gpu/tests/gpu/rcclx_gpu_tests "$name" > "$OUT/case.log" 2>&1; r=$?
    printf '%-4s %6.1fs  %s\n' "$([[ $r == 0 ]] && echo ok || echo FAIL:$r)" "$(awk "BEGIN{print $(date +%s.%N) - $s}")" "$name"
    [[ $r == 0 ]] || tail -30 "$OUT/case.log"
    cat "$OUT/case.log" >> "$OUT/dda_cases.log"
  done | tee "$OUT/dda_cases.txt"
  ctest --test-dir build-gpu --output-on-failure --timeout 240 -j1 -E 'gpu.dda' 2>&1 | tee "$OUT/ctest.log" | grep -vE '^\s*$' | tail -15
  [[ ${PIPESTATUS[0]} == 0 ]] || rc=1
  grep -q FAIL "$OUT/dda_cases.txt" && rc=1
fi
if [[ $what == bench || $what == all ]]; then
  python3 bench/fp8_bench.py build-gpu/tests/gpu/librcclx_fp8_capi.so "$OUT/fp8_bench.csv" > "$OUT/fp8_bench.txt" 2>&1 || rc=1
  timeout 240 ./build-gpu/bench/bench_dda "$OUT/bench_dda.csv" > "$OUT/bench_dda.txt" 2>&1 || rc=1
  ./build-gpu/examples/allreduce_basic | tee "$OUT/example.txt" || rc=1
  python3 bench/summary.py "$OUT" || rc=1
fi
exit $rc
