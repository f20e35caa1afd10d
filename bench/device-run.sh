#!/usr/bin/env bash
# The one GPU-machine script: GPU tests, a diagnosis, the benchmark sweeps,
# compute-sanitizer, then a short table last.  Logs, CSVs and the plot go to
# $OUT (few files: the device tool returns at most 8; the logs are packed
# into $OUT/logs.tgz, and past 8 files the CSVs but bench_dda's into
# $OUT/csvs.tgz).
#
# Binaries: prebuilt ones from devbin/ if they run here (bench/pack-devbin.sh
# builds them with nvcc on a machine without a GPU), else a fresh build with
# nvcc (needs Catch2's single header in third_party/catch2: carry it).
# Every step has a time cap inside an overall deadline (RCCLX_DEADLINE_S,
# default 230 s), so a hang costs its cap, never the session.
# Usage: bash bench/device-run.sh [GROUP...], groups: tests sanitize
# fusion latency bench_dda early push bench_lowp bench_fusion fp8_bench torch, or
# all (default); probe and bisect (diagnoses) run only when named.
set -uo pipefail
what=" ${*:-all} "
want() { [[ $what == *" all "* || $what == *" $1 "* ]]; }
OUT=${OUT:-$PWD/out}
LOG=$OUT/logs
mkdir -p "$LOG"
T0=$(date +%s)
DEADLINE=${RCCLX_DEADLINE_S:-230}
export CUDA_DEVICE_MAX_CONNECTIONS=32 GPU_MAX_HW_QUEUES=16 CUDA_MODULE_LOADING=EAGER
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
rc=0
status_lines=()

left() { echo $((DEADLINE - ($(date +%s) - T0))); }
# step NAME MAX_SECONDS CMD...: runs CMD under min(MAX, time left), logs to
# $LOG/NAME.log, records ok/FAIL and the seconds it took.
step() {
  local name=$1 max=$2; shift 2
  local cap; cap=$(left)
  (( cap > max )) && cap=$max
  if (( cap < 5 )); then status_lines+=("SKIP  (no time left)  $name"); return 1; fi
  local s; s=$(date +%s)
  timeout -k 5 "$cap" "$@" > "$LOG/$name.log" 2>&1
  local r=$?
  local took=$(( $(date +%s) - s ))
  if [[ $r == 0 ]]; then status_lines+=("ok    ${took}s  $name");
  else status_lines+=("FAIL:$r ${took}s/${cap}s  $name"); fi
  return $r
}

if ! (nvidia-smi -L 2>/dev/null | grep -q GPU) && ! (rocm-smi --showproductname 2>/dev/null | grep -qi gpu); then
  echo "device-run: no GPU found on this machine (nvidia-smi / rocm-smi see none); the GPU tests and benchmarks need one" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$LOG/gpu.txt" 2>&1
BIN=""
if [[ -f devbin.tgz ]]; then
  # (Probe with a real one-second job: Catch2 v2's --list-* exit with the
  # number of tests listed, which cost the 2026-12-02 run a needless build.)
  tar -xzf devbin.tgz && ./devbin/allreduce_basic > "$LOG/probe.log" 2>&1 && BIN=devbin
fi
if [[ -z $BIN ]]; then
  step build "${RCCLX_BUILD_S:-300}" bash -c 'cmake -S . -B build-gpu -G Ninja -DRCCLX_GPU=cuda -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j16' || rc=1
  mkdir -p devbin
  for f in build-gpu/tests/gpu/rcclx_gpu_tests build-gpu/tests/gpu/rcclx_ipc_test build-gpu/tests/gpu/librcclx_fp8_capi.so \
           build-gpu/bench/bench_dda build-gpu/bench/bench_latency build-gpu/bench/bench_lowp build-gpu/bench/bench_fusion \
           build-gpu/examples/allreduce_basic build-gpu/examples/gemm_allreduce build-gpu/examples/allreduce_rmsnorm; do
    [[ -f $f ]] && cp "$f" devbin/
  done
  BIN=devbin
  status_lines+=("note  prebuilt binaries did not run here: built with nvcc")
else
  status_lines+=("note  prebuilt binaries ran here")
fi
T=./$BIN/rcclx_gpu_tests
# The NCCL baseline of the benchmarks (bench/nccl_baseline.h): PyTorch's
# bundled libnccl unless RCCLX_NCCL_LIB names a library.
if [[ -z ${RCCLX_NCCL_LIB:-} ]]; then
  RCCLX_NCCL_LIB=$(python3 -c 'import os, nvidia.nccl as m; print(os.path.join(list(m.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  if [[ ! -f $RCCLX_NCCL_LIB ]]; then
    sp=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
    RCCLX_NCCL_LIB=$(find $sp -name 'libnccl.so.2' 2>/dev/null | head -1)
  fi
fi
if [[ -f ${RCCLX_NCCL_LIB:-} ]]; then
  export RCCLX_NCCL_LIB
  status_lines+=("note  NCCL baseline: $RCCLX_NCCL_LIB")
else
  unset RCCLX_NCCL_LIB
  status_lines+=("note  no libnccl.so.2 beside PyTorch: the loader's default search")
fi
# The vendor GEMM of bench_fusion: cuBLAS from the toolkit or PyTorch's wheel.
if ldd ./$BIN/bench_fusion 2>/dev/null | grep -q "libcublas.*not found"; then
  d=$(dirname "$(find /usr/local/cuda*/ /opt/torch /usr/lib -name 'libcublas.so.13*' 2>/dev/null | head -1)")
  export LD_LIBRARY_PATH=$d:${LD_LIBRARY_PATH:-}
  status_lines+=("note  cuBLAS from $d")
fi

if want torch; then
  # The bridge as users build it (torch.utils.cpp_extension JIT): CPU-bound,
  # in the background while the GPU tests run.
  ( timeout 240 python3 tests/torch/jit_check.py /tmp/rcclx_torch_jit > "$LOG/torch_jit.log" 2>&1; echo $? > "$LOG/torch_jit.rc" ) &
  jit_pid=$!
fi
if want fusion || want tests; then
  # Alone on the GPU (run 2 shared it with the fp8 tests' process), with a
  # 3 s watchdog: a hang becomes a recorded rank / tile / peer / epoch.
  step gpu_fusion 90 env RCCLX_WATCHDOG_MS=3000 $T "[fusion]" -d yes || rc=1
fi
if want tests; then
  # fp8 tests are host-heavy and need no co-residency: in the background.
  ( timeout 120 $T "[fp8]" -d yes > "$LOG/gpu_fp8.log" 2>&1; echo $? > "$LOG/gpu_fp8.rc" ) &
  fp8_pid=$!
  export RCCLX_WATCHDOG_MS=20000
  step gpu_dda 170 $T "[dda]" -d yes || rc=1
  # The same with the LL one-shot pushing (rcclx_config.ll_push; the
  # default across GPUs, off on one).
  step gpu_dda_push 170 env RCCLX_LL_PUSH=2 $T "[dda]" -d yes || rc=1
  step gpu_lowp 60 $T "[lowp]" -d yes || rc=1
  # Diagnosis of the 2026-12-02 eager deadlock: the same test with CUDA's
  # lazy loading forced back on must trip the watchdog (3 s).
  if step lazy_loading_repro 25 env RCCLX_WATCHDOG_MS=3000 CUDA_MODULE_LOADING=LAZY \
       $T "dda allreduce: 10 000 back-to-back calls / no reset"; then
    status_lines+=("NOTE  lazy loading did NOT reproduce the deadlock")
  else
    grep -q "peer timeout\|PEER_TIMEOUT\|== 0" "$LOG/lazy_loading_repro.log" && status_lines+=("note  lazy loading reproduces the eager deadlock (expected)")
  fi
  unset RCCLX_WATCHDOG_MS
  step ipc_2procs 30 ./$BIN/rcclx_ipc_test 2 || rc=1
  step ipc_4procs 30 ./$BIN/rcclx_ipc_test 4 || rc=1
  step ipc_2procs_push 30 ./$BIN/rcclx_ipc_test 2 push || rc=1
  step ipc_3procs_mismatch 30 ./$BIN/rcclx_ipc_test 3 mismatch || rc=1
  for ex in allreduce_basic gemm_allreduce allreduce_rmsnorm; do step "example_$ex" 15 ./$BIN/$ex || rc=1; done
  # The NCCL baseline's plumbing, as far as one GPU allows (one rank), and
  # its enum values against the nccl.h shipped beside the library.
  step nccl_selftest 60 ./$BIN/bench_dda --nccl-selftest || rc=1
  h=$(dirname "$(dirname "${RCCLX_NCCL_LIB:-/none/lib/x}")")/include/nccl.h
  if [[ -f $h ]]; then
    step nccl_abi 5 bash -c "grep -E 'ncclFloat32 *= *7' '$h' && grep -E 'ncclBfloat16 *= *9' '$h' &&
      grep -E 'ncclSum *= *0' '$h'" || rc=1
  else
    status_lines+=("note  no nccl.h beside the library: enum values not checked against it")
  fi
  wait $fp8_pid
  if [[ $(cat "$LOG/gpu_fp8.rc" 2>/dev/null) == 0 ]]; then status_lines+=("ok    (bg) gpu_fp8"); else status_lines+=("FAIL:$(cat "$LOG/gpu_fp8.rc" 2>/dev/null) (bg) gpu_fp8"); rc=1; fi
fi
if want torch; then
  export RCCLX_TORCH_LIB=$PWD/$BIN/librcclx_torch_bridge.so GLOO_SOCKET_IFNAME=lo
  for n in 2 4; do
    step "torch_bridge_${n}procs" 120 python3 -m torch.distributed.run --standalone --nproc-per-node=$n tests/torch/test_bridge.py || rc=1
  done
  step bench_torch 60 python3 bench/bench_torch.py "$OUT/bench_torch.csv" || rc=1
  unset RCCLX_TORCH_LIB
  wait $jit_pid
  if [[ $(cat "$LOG/torch_jit.rc" 2>/dev/null) == 0 ]]; then status_lines+=("ok    (bg) torch_jit (cpp_extension build + AllReduce)"); else status_lines+=("FAIL:$(cat "$LOG/torch_jit.rc" 2>/dev/null) (bg) torch_jit"); rc=1; fi
fi
want bench_fusion && { step bench_fusion 150 ./$BIN/bench_fusion "$OUT/bench_fusion.csv" || rc=1; }
want fp8_bench && { step fp8_bench 90 python3 bench/fp8_bench.py ./$BIN/librcclx_fp8_capi.so "$OUT/fp8_bench.csv" || rc=1; }
if want fp8_variants; then  # tuning variants of the FP8 kernels (bench/pack-devbin.sh), same bench
  for lib in ./$BIN/fp8v_*.so; do
    [[ -f $lib ]] || continue
    v=$(basename "$lib" .so)
    step "$v" 60 python3 bench/fp8_bench.py "$lib" "$LOG/$v.csv" || rc=1
  done
fi
want bench_lowp && { step bench_lowp 45 ./$BIN/bench_lowp "$OUT/bench_lowp.csv" || rc=1; }
if want latency; then
  step bench_latency 60 ./$BIN/bench_latency "$OUT/bench_latency.csv" || rc=1
  for b in ./$BIN/bench_latency_*; do  # build-time variants (bench/pack-devbin.sh), logs only
    [[ -x $b ]] && { step "$(basename "$b")" 60 "$b" "$LOG/$(basename "$b").csv" || rc=1; }
  done
fi
want bench_dda && { step bench_dda 150 ./$BIN/bench_dda "$OUT/bench_dda.csv" || rc=1; }
if want early; then
  # RCCLX_PDL=2 (rcclx_config.pdl): with virtual ranks the next call's
  # kernel is scheduled as soon as this one starts.  Its tests (with a
  # watchdog: a co-residency deadlock becomes an error), then the sweep.
  step gpu_dda_early 170 env RCCLX_PDL=2 RCCLX_WATCHDOG_MS=20000 $T "[dda]" -d yes || rc=1
  step bench_dda_early 150 env RCCLX_PDL=2 ./$BIN/bench_dda "$OUT/bench_dda_early.csv" || rc=1
fi
# The sweep with the LL one-shot pushing (RCCLX_LL_PUSH=2), against the
# default sweep of the same run (pull on one GPU).
want push && { step bench_dda_push 150 env RCCLX_LL_PUSH=2 ./$BIN/bench_dda "$OUT/bench_dda_push.csv" || rc=1; }
if [[ $what == *" probe "* ]]; then  # the DDA sweep on smaller fixed grids (RCCLX_NBLOCKS), logs only
  for nb in 1 4; do step "bench_dda_nblocks$nb" 90 env RCCLX_NBLOCKS=$nb ./$BIN/bench_dda "$LOG/bench_dda_nblocks$nb.csv" || rc=1; done
fi
if [[ $what == *" bisect "* ]]; then  # bench_fusion binaries of earlier commits (third_party/bis/, carried), logs only
  for b in third_party/bis/bench_fusion_*; do
    [[ -x $b ]] && { step "$(basename "$b")" 60 "$b" "$LOG/$(basename "$b").csv" || rc=1; }
  done
fi
want tests && { step fp8_vs_torch 30 python3 tests/gpu/fp8_torch_check.py ./$BIN/librcclx_fp8_capi.so || rc=1; }
if want sanitize; then
  # compute-sanitizer: kernels that need no co-residency (the sanitizer
  # serialises launches, so virtual-rank barriers cannot meet under it), and
  # the IPC test (one process per rank, time-sliced).
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  step sanitize_memcheck 30 "$CS" --tool memcheck --error-exitcode 9 $T "[sanitize]" || rc=1
  step sanitize_racecheck 30 "$CS" --tool racecheck --error-exitcode 9 $T "[sanitize]" || rc=1
  step sanitize_memcheck_ipc 30 "$CS" --tool memcheck --error-exitcode 9 --target-processes all ./$BIN/rcclx_ipc_test 2 || rc=1
  step sanitize_racecheck_ipc 30 "$CS" --tool racecheck --error-exitcode 9 --target-processes all ./$BIN/rcclx_ipc_test 2 || rc=1
fi
{
  cat "$LOG/gpu.txt"
  printf '%s\n' "${status_lines[@]}"
  for f in gpu_dda gpu_dda_push gpu_dda_early gpu_lowp gpu_fusion gpu_fp8 ipc_2procs ipc_4procs ipc_2procs_push ipc_3procs_mismatch; do
    [[ -f $LOG/$f.log ]] && { echo "--- $f"; grep -E "passed|failed|FAILED|test cases|assertions" "$LOG/$f.log" | tail -4; }
  done
  [[ -f $LOG/nccl_selftest.log ]] && { echo "--- nccl_selftest"; grep "nccl-selftest" "$LOG/nccl_selftest.log"; }
  [[ -f $LOG/nccl_abi.log ]] && { echo "--- nccl_abi (nccl.h)"; cat "$LOG/nccl_abi.log"; }
  [[ -f $LOG/bench_dda.log ]] && grep -q "NCCL baseline" "$LOG/bench_dda.log" && { echo "--- bench_dda: NCCL"; grep "NCCL" "$LOG/bench_dda.log" | head -6; }
  for f in torch_bridge_2procs torch_bridge_4procs torch_jit; do
    [[ -f $LOG/$f.log ]] && { echo "--- $f"; grep -E "PASS|FAIL|Error|error:|build \+ load" "$LOG/$f.log" | tail -6; }
  done
  [[ -f $OUT/bench_torch.csv ]] && { echo "--- bench_torch (us per round)"; cat "$OUT/bench_torch.csv"; }
  [[ -f $LOG/gpu_fusion.log ]] && { echo "--- gpu_fusion progress"; grep -E "^\[fusion\]|waited on" "$LOG/gpu_fusion.log" | tail -3; }
  for f in sanitize_memcheck sanitize_racecheck sanitize_memcheck_ipc sanitize_racecheck_ipc; do
    [[ -f $LOG/$f.log ]] && { echo "--- $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rror|not supported" "$LOG/$f.log" | tail -3; }
  done
  [[ -f $LOG/lazy_loading_repro.log ]] && { echo "--- lazy_loading_repro"; grep -E "timeout|FAILED|e == 0|test cases" "$LOG/lazy_loading_repro.log" | head -4; }
  for f in "$LOG"/fp8v_*.csv; do
    [[ -f $f ]] && { echo "--- $(basename "$f" .csv): quantize / dequantize % of copy roofline"; grep -E "^rcclx" "$f"; }
  done
  [[ -f $LOG/bench_latency.log ]] && { echo "--- bench_latency"; cat "$LOG/bench_latency.log"; }
  for f in "$LOG"/bench_latency_*.csv; do
    [[ -f $f ]] && { echo "--- $(basename "$f" .csv): library rows and traces, PDL 1"; grep -E "library|trace" "$f" | awk -F, '$3==1'; }
  done
  python3 bench/summary.py "$OUT" 2>&1
  for f in "$LOG"/bench_dda_nblocks*.csv; do
    [[ -f $f ]] && { echo "--- $(basename "$f" .csv): N,algo,bytes,us (bf16, <= 64 KiB and 32 MiB)"; awk -F, '$2=="bf16" && ($4<=65536 || $4==33554432) {print $1","$3","$4","$5}' "$f"; }
  done
  for f in "$LOG"/bench_fusion_*.csv; do
    [[ -f $f ]] && { echo "--- $(basename "$f" .csv): fused ways, us"; grep -E "fused|unfused" "$f" | head -40; }
  done
  echo "total $(( $(date +%s) - T0 ))s, exit $rc"
} > "$OUT/summary.txt" 2>&1
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$LOG"
# The device tool returns at most 8 files from $OUT and drops the rest
# (a full run writes 11): past 8, every CSV but bench_dda's goes into
# csvs.tgz, so summary.txt and logs.tgz always come back.
shopt -s nullglob
kept=("$OUT"/*)
if (( ${#kept[@]} > 8 )); then
  extra=()
  for f in "$OUT"/*.csv; do [[ $(basename "$f") != bench_dda.csv ]] && extra+=("$(basename "$f")"); done
  tar -C "$OUT" -czf "$OUT/csvs.tgz" "${extra[@]}" && (cd "$OUT" && rm -f "${extra[@]}")
fi
cat "$OUT/summary.txt"
exit $rc
