#!/usr/bin/env bash
# The GPU check's bundle, rehearsed end to end on this machine (issue 29 §3): scripts/gpu-bundle.sh
# packs the build's GPU tests, examples, tenax and their libraries (the CUDA runtime included;
# never cuBLAS or NCCL, which a device call cannot carry) with the pre-flight, the check and the
# peers' anchors; unpacked elsewhere, every program finds its libraries in the bundle; and
# run-gpu-check.sh runs the pre-flight and the check, which, without a GPU, say so plainly, write
# their summary and archive, and exit 1.
# Usage: tests/scripts/gpu_bundle_test.sh BUILD_DIR
set -uo pipefail
build=$(realpath "$1")
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tenax-gpu-bundle-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$here/scripts/gpu-bundle.sh" "$build" "$work/bundle.tar.xz" || fail "gpu-bundle.sh exited $?"
size=$(stat -c %s "$work/bundle.tar.xz")
((size < 48 * 1024 * 1024)) || fail "the bundle is $size bytes: over 48 MiB leaves too little of a device call's 64 MiB"
mkdir "$work/unpacked" && tar -C "$work/unpacked" -xJf "$work/bundle.tar.xz" || fail "cannot unpack"
b=$work/unpacked/gpu-bundle
for f in run-gpu-check.sh scripts/gpu-check.sh scripts/gpu-preflight.sh bench/peers/gpu_anchors.py \
  bench/peers/train_gpt_reference.py build/bin/tenax build/bin/heat2d build/bin/poisson \
  build/bin/train_mlp build/bin/train_gpt build/bin/gray_scott build/bin/bench_gpu; do
  [[ -e $b/$f ]] || fail "the bundle lacks $f"
done
ls "$b"/build/lib/libcudart.so.* >/dev/null 2>&1 || fail "the bundle lacks the CUDA runtime (every program needs it)"
ls "$b"/build/lib/libtenax_comm_nccl.so* >/dev/null 2>&1 || fail "the bundle lacks the NCCL communicator plugin"
if ls "$b"/build/lib/ | grep -qE '^lib(cublas|cublasLt|nccl)\.so'; then
  fail "the bundle carries cuBLAS or NCCL, which do not fit a device call: $(ls "$b"/build/lib | grep -E 'cublas|nccl' | paste -sd' ' -)"
fi
# Every GPU test program of the build travels.
for exe in "$build"/bin/*_gpu_test; do
  [[ -x $b/build/bin/$(basename "$exe") ]] || fail "the bundle lacks $(basename "$exe")"
done
# Moved away from the build, every program and plugin finds its libraries in the bundle (cuBLAS
# and NCCL are loaded at run time, never linked).
missing=$(for f in "$b"/build/bin/* "$b"/build/lib/libtenax_*.so.0; do
  LD_LIBRARY_PATH=$b/build/lib ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^|$(basename "$f"): |"
done)
[[ -z $missing ]] || fail "libraries not found from the bundle: $missing"

# The rehearsal: no GPU here, so the check must say so, summarise and fail.
out=$work/out
OUT=$out GPU_CHECK_TEST_TIMEOUT=60 "$b/run-gpu-check.sh" >"$work/log.txt" 2>&1
rc=$?
((rc == 1)) || { tail -20 "$work/log.txt"; fail "run-gpu-check.sh exited $rc without a GPU (1 expected)"; }
grep -q 'NO USABLE GPU' "$work/log.txt" || fail "the check did not say that there is no usable GPU"
grep -q '^== Libraries the programs load' "$out/preflight.txt" || fail "no pre-flight in $out"
grep -q 'PREFLIGHT PROBLEM' "$out/preflight.txt" || fail "the pre-flight found no problem on a machine without a GPU"
[[ -s $out/gpu-check-summary.txt && -s $out/gpu-check.tar.gz ]] || fail "no summary or archive in $out"
grep -q '^NO USABLE GPU' "$out/gpu-check-summary.txt" || fail "the summary does not say that there is no usable GPU"
echo "PASS: bundle of $size bytes; the rehearsal without a GPU says so and exits 1"
