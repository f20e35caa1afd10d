#!/usr/bin/env bash
# Compile every kernel-bearing source for gfx942 to ISA with Debian's
# clang-19 (device only, no device libraries), print VGPR/SGPR per kernel,
# fail on scratch or spills, and grep for the instructions rcclx relies on:
# system-scope release/acquire in the barrier, the v_med3 clamp before
# v_cvt_pk_fp8_f32, and the bf16 MFMA in the example GEMM.
set -euo pipefail
out=${1:-build-isa}
mkdir -p "$out"
cd "$(dirname "$0")/.."
srcs="tests/gpu/test_fp8.cpp tests/gpu/test_dda.cpp tests/gpu/test_lowp.cpp tests/gpu/test_fusion.cpp
      tests/gpu/test_ipc.cpp tests/gpu/fp8_capi.cpp bench/bench_dda.cpp bench/bench_latency.cpp bench/bench_lowp.cpp bench/bench_fusion.cpp
      examples/allreduce_basic.cpp examples/gemm_allreduce.cpp examples/allreduce_rmsnorm.cpp
      python/rcclx_torch/csrc/bridge.cu"
fail=0
# One source: compile to ISA, list every kernel's VGPR/SGPR, fail on scratch or spills.
isa_one() {
  local s=$1 out=$2
  local asm="$out/$(basename "${s%.*}").s"
  clang++-19 -x hip --offload-arch=gfx942 -nogpulib --cuda-device-only -S -O3 -std=c++17 \
    -Iinclude -I/usr/include/catch2 -Ithird_party -Wno-unused-command-line-argument "$s" -o "$asm" || return 1
  awk -v src="$s" '
    /^[ \t]+\.name:[ \t]+_Z/ { name=$2 }
    /^[ \t]+\.private_segment_fixed_size:/ { scratch=$2 }
    /^[ \t]+\.sgpr_count:/ { sgpr=$2 }
    /^[ \t]+\.vgpr_count:/ { vgpr=$2 }
    # .vgpr_spill_count is the last of a kernel'"'"'s counters (keys are sorted).
    /^[ \t]+\.vgpr_spill_count:/ { spill=$2; printf "%-30s vgpr %3d sgpr %3d scratch %d spill %d  %s\n", src, vgpr, sgpr, scratch, spill, substr(name,1,70);
                                    if (scratch > 0 || spill > 0) bad=1 }
    END { exit bad }' "$asm" > "$asm.kernels.unsorted" || { sort -u "$asm.kernels.unsorted" | grep -v 'scratch 0 spill 0'; return 1; }
  sort -u "$asm.kernels.unsorted" > "$asm.kernels"
}
export -f isa_one
# Two at a time (CI has 2 cores); each source's summary is printed after.
printf '%s\n' $srcs | xargs -P 2 -I{} bash -c 'isa_one "$@" || { echo "FAILED: $1"; exit 255; }' _ {} "$out" || fail=1
for s in $srcs; do
  k="$out/$(basename "${s%.*}").s.kernels"
  [[ -f $k ]] || { echo "no ISA for $s"; fail=1; continue; }
  head -6 "$k"; echo "   ($(wc -l < "$k") kernels in $s)"
done
grep -q 'buffer_wbl2 sc0 sc1' "$out/test_dda.s" || { echo "missing system-scope release (buffer_wbl2 sc0 sc1)"; fail=1; }
grep -q 'buffer_inv sc0 sc1' "$out/test_dda.s" || { echo "missing system-scope acquire (buffer_inv sc0 sc1)"; fail=1; }
# (grep -q on a pipe would end the first grep early: SIGPIPE fails the
# pipeline under pipefail.  Go through a file.)
grep -B12 'v_cvt_pk_fp8_f32' "$out/test_fp8.s" > "$out/cvt_context.s" || true
grep -q 'v_med3_f32' "$out/cvt_context.s" || { echo "no v_med3 clamp before v_cvt_pk_fp8_f32"; fail=1; }
# The example GEMM runs on the matrix cores (rcclx/mma.h).
grep -q 'v_mfma_f32_16x16x16_bf16' "$out/test_fusion.s" || { echo "no v_mfma_f32_16x16x16_bf16 in the fused GEMM"; fail=1; }
[[ $fail == 0 ]] && echo "gfx942 ISA: no scratch, no spills; sc0 sc1 release/acquire, the fp8 clamp and the bf16 MFMA present"
exit $fail
