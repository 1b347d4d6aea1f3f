#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, then configures, builds and runs the consumer
# project against it: proves find_package(tenax) + tenax::tenax work from an installed prefix.
# Usage: consumer_test.sh <build dir> <source dir of the consumer> <scratch dir>
set -euo pipefail
build_dir=$1
consumer_src=$2
scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$consumer_src" -B "$scratch/build" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/build"
# Run from outside both trees so nothing but the installed libraries can be picked up.
cd /
"$scratch/build/consumer"
