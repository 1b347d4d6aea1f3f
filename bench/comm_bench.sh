#!/usr/bin/env bash
# The communicator against raw MPI (agreement, all-reduce sizes, agreement share of a heat2d
# step, a dot split across ranks) and the gradient exchanges (exact, fast, raw MPI) at -np 2, then -np 4 (oversubscribed on a 2-core machine). Usage: bench/comm_bench.sh
# [build-dir]
set -euo pipefail
build=${1:-build}
for np in 2 4; do
  mpirun --allow-run-as-root --oversubscribe -np "$np" "$build/bin/bench_comm"
  mpirun --allow-run-as-root --oversubscribe -np "$np" "$build/bin/bench_gradients"
done
