#!/usr/bin/env bash
# The main job, end to end: installs what is missing, builds tenax (release preset in build/, with
# the CUDA backend where an NVIDIA GPU answers nvidia-smi; without it elsewhere, so that no CUDA
# code is compiled that the machine could not run), checks the environment, then runs heat2d
# twice:
#   1. uninterrupted;
#   2. under the supervisor `tenax run` with a SIGKILL injected part-way: the supervisor restarts
#      it, it resumes from its last checkpoint and finishes;
# and compares the two final fields value by value: they must be bitwise equal.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CCACHE_BASEDIR="$PWD"
cuda=AUTO
if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  cuda=OFF
  echo "demo: no NVIDIA GPU answers nvidia-smi: building without the CUDA backend" \
    "(scripts/test.sh and 'cmake --preset release' build it)"
fi
cmake --preset release -DTENAX_WITH_CUDA=$cuda >/dev/null
# Only what the demo runs (the libraries, heat2d and the tenax tool): scripts/test.sh builds the
# tests and benchmarks. One line on the console, the compiler's output in a log (its end is shown
# when the build fails).
mkdir -p build
build_log=build/demo-build.log
echo "demo: building the libraries, heat2d and the tenax tool (log: $build_log)"
build_start=$(date +%s)
if ! cmake --build --preset release -j "$(nproc)" --target heat2d tenax_cli >"$build_log" 2>&1; then
  echo "demo: the build failed; the end of $build_log:" >&2
  tail -n 40 "$build_log" >&2
  exit 1
fi
echo "demo: built in $(($(date +%s) - build_start)) s"

bin=build/bin
runs=build/demo-runs
rm -rf "$runs"
mkdir -p "$runs"
job=(--device auto --n 512 --steps 2000 --checkpoint-every 250 --progress log)

echo "=== tenax doctor ==="
"$bin/tenax" doctor
echo
echo "=== heat2d, uninterrupted ==="
"$bin/heat2d" "${job[@]}" --run-dir "$runs/uninterrupted" --output "$runs/uninterrupted.h5"
echo
echo "=== heat2d under 'tenax run', killed with SIGKILL before step 1234 ==="
"$bin/tenax" run --restart-delay 1 --run-dir "$runs/killed" -- \
  "$bin/heat2d" "${job[@]}" --run-dir "$runs/killed" --output "$runs/killed.h5" \
  --inject kill@step=1234
echo
echo "=== what happened (events.jsonl, steps omitted) ==="
grep -v '"event":"step"' "$runs/killed/events.jsonl" | cut -c1-150
echo
echo "=== checkpoints of the killed run ==="
"$bin/tenax" ckpt list "$runs/killed" 2>/dev/null || ls "$runs/killed/checkpoints"
echo
echo "=== final fields compared value by value (h5diff, exact) ==="
if h5diff "$runs/uninterrupted.h5" "$runs/killed.h5" /u /u >/dev/null; then
  echo "bitwise equal: the killed and resumed run ended exactly where the uninterrupted run did"
else
  echo "DIFFERENT: the resumed run does not match the uninterrupted run" >&2
  h5diff -r "$runs/uninterrupted.h5" "$runs/killed.h5" /u /u | head -20 >&2
  exit 1
fi
