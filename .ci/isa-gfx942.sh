#!/usr/bin/env bash
# Compile every kernel-bearing source for gfx942 to ISA with Debian's
# clang-19, print VGPR/SGPR per kernel, fail on scratch, spills or calls,
# and grep for the instructions rcclx relies on: system-scope
# release/acquire in the barrier, the v_med3 clamp before v_cvt_pk_fp8_f32,
# and the bf16 MFMA in the example GEMM.
#
# The device libraries are linked as hipcc links them (-mlink-builtin-bitcode
# of Debian's rocm-device-libs: hip, ockl and the oclc controls), so the ISA
# is the one a ROCm build produces: without them every threadIdx / blockIdx
# read, __syncthreads_or and fence is a call into an unlinked function, and
# the calls' register conventions inflated the VGPR counts (the fused GEMM at
# 8 ranks: 252 VGPRs instead of 180).  Debian ships oclc_isa_version files
# up to gfx940; the gfx942 one (one constant, 9402) is generated here.
set -euo pipefail
out=${1:-build-isa}
mkdir -p "$out"
cd "$(dirname "$0")/.."
srcs="tests/gpu/test_fp8.cpp tests/gpu/test_dda.cpp tests/gpu/test_lowp.cpp tests/gpu/test_fusion.cpp
      tests/gpu/test_ipc.cpp tests/gpu/fp8_capi.cpp bench/bench_dda.cpp bench/bench_latency.cpp bench/bench_lowp.cpp bench/bench_fusion.cpp
      examples/allreduce_basic.cpp examples/gemm_allreduce.cpp examples/allreduce_rmsnorm.cpp
      python/rcclx_torch/csrc/bridge.cu"
# The device-library bitcode for gfx942 (code object v5, wave64) into $1;
# prints the clang flags that link it.
isa_device_libs() {
  local dir=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode f flags=""
  [[ -f $dir/ockl.bc ]] || { echo "rocm-device-libs not installed ($dir/ockl.bc)" >&2; return 1; }
  printf '%s\n' 'target triple = "amdgcn-amd-amdhsa"' \
    '@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 9402, align 4' \
    > "$1/oclc_isa_version_942.ll"
  clang-19 --target=amdgcn-amd-amdhsa -nogpulib -c -emit-llvm -x ir "$1/oclc_isa_version_942.ll" \
    -o "$1/oclc_isa_version_942.bc" || return 1
  for f in $dir/hip.bc $dir/ockl.bc $dir/oclc_abi_version_500.bc $dir/oclc_wavefrontsize64_on.bc "$1/oclc_isa_version_942.bc"; do
    flags="$flags -Xclang -mlink-builtin-bitcode -Xclang $f"
  done
  echo "$flags"
}
fail=0
# One source: compile to ISA, list every kernel's VGPR/SGPR, fail on scratch or spills.
isa_one() {
  local s=$1 out=$2
  local asm="$out/$(basename "${s%.*}").s"
  [[ -n ${RCCLX_ISA_LIBS:-} ]] || RCCLX_ISA_LIBS=$(isa_device_libs "$out") || return 1
  clang++-19 -x hip --offload-arch=gfx942 -nogpulib --cuda-device-only -S -O3 -std=c++17 $RCCLX_ISA_LIBS -Werror=linker-warnings \
    -Iinclude -I/usr/include/catch2 -Ithird_party -Wno-unused-command-line-argument "$s" -o "$asm" || return 1
  # Calls: a function the device libraries do not provide, or code that
  # did not inline (its call sequence costs registers on every path).
  if grep -q 's_swappc_b64' "$asm"; then
    echo "$s: calls in the gfx942 ISA:"; grep -B3 's_swappc_b64' "$asm" | grep -o '[A-Za-z_0-9]*@rel32@lo' | sort | uniq -c
    return 1
  fi
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
export -f isa_one isa_device_libs
RCCLX_ISA_LIBS=$(isa_device_libs "$out")
export RCCLX_ISA_LIBS
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
# The example GEMMs keep two k stages in flight: the first wait for global
# loads in each kernel's k loop leaves loads outstanding (s_waitcnt vmcnt(N),
# N > 0).  A load under a branch, or a flat access anywhere in the kernel,
# made the compiler wait for every load there (vmcnt(0)) instead.
awk '
  /^_Z[A-Za-z0-9_]*(gemm_bf16_kernel|gemm_allreduce_fused_kernel|gemm_allreduce_fused_fp8_kernel)[A-Za-z0-9_]*:/ {
    k = $1; sub(":", "", k); inloop = 0; done = 0; n_k++; next }
  /^\.Lfunc_end/ { if (k != "" && !done) { print "gfx942: no pipelined k loop in " k; bad = 1 } k = ""; next }
  k != "" && !done && /Loop Header/ { inloop = 1; next }
  k != "" && !done && inloop && /s_waitcnt vmcnt\(/ {
    n = $0; sub(/.*vmcnt\(/, "", n); sub(/\).*/, "", n)
    if (n + 0 == 0) { inloop = 0; next }  # a loop that waits for every load: not the k loop
    done = 1 }
  END { if (n_k < 4) { print "gfx942: example GEMM kernels not found"; bad = 1 } exit bad }' "$out/test_fusion.s" || fail=1
[[ $fail == 0 ]] && echo "gfx942 ISA (device libraries linked): no calls, no scratch, no spills; the example GEMMs' k loops keep loads in flight; sc0 sc1 release/acquire, the fp8 clamp and the bf16 MFMA present"
exit $fail
