#!/usr/bin/env bash
# Installs what is missing, builds tenax (release preset, CUDA backend when the toolkit is
# present) and runs the main job: the environment check, then the example solver on the best
# available device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CCACHE_BASEDIR="$PWD"
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"

echo "=== tenax doctor ==="
build/bin/tenax doctor
echo
echo "=== example: 2-D heat equation ==="
build/bin/heat_equation --device auto --grid 256 --steps 200
