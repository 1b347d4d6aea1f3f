#!/usr/bin/env bash
# Installs what is missing, then builds and tests every configuration CI checks:
#   build/       release, CUDA backend when the toolkit is present (GPU tests skip without a GPU)
#   build-cpu/   release, CPU only (TENAX_WITH_CUDA=OFF)
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer: core, kernels and io tests (not slow)
# Usage: scripts/test.sh [preset...]   (default: release cpu asan)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --for-tests

jobs=$(nproc)
# Compiler cache keyed on paths relative to the checkout, so fresh clones reuse earlier builds.
# The asan preset compiles with debug info (-g), for which ccache also hashes the build
# directory unless told not to: without CCACHE_NOHASHDIR every fresh clone rebuilt it from
# nothing. (Its debug info may then name the checkout that filled the cache; lines are right.)
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(release cpu asan)

for preset in "${presets[@]}"; do
  echo "=== tenax: configure, build and test preset '$preset' ==="
  start=$(date +%s)
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
  echo "=== preset '$preset' passed in $(( $(date +%s) - start )) s ==="
done
