#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds what is missing (release preset), runs every test
# labelled `gpu`, the doctor (device GEMM check, pageable vs pinned bandwidth, NCCL, peer access
# between the GPUs), the GPU benchmarks, CG on a 4096^2 Poisson problem (ms per iteration and the
# fraction of the device's copy bandwidth, from bench_gpu), the explicit heat step on the device,
# and with two GPUs the doctor on each of 2 ranks, the NCCL communicator and heat2d across 2
# ranks, then prints a short table. Finishes in a few minutes on one GPU.
# On a machine where the Debian packages are absent, point TENAX_BUILD_DIR at a build copied
# there (with LD_LIBRARY_PATH set to its bundled libraries); the script then skips building.
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir=${TENAX_BUILD_DIR:-build}
out=${OUT:-$build_dir/gpu-check}
mkdir -p "$out"

if [ ! -x "$build_dir/bin/tenax" ]; then
  cmake --preset release >/dev/null && cmake --build --preset release -j "$(nproc)" || exit 1
fi

status() { [ "$1" -eq 0 ] && echo PASS || echo "FAIL($1)"; }

timeout 60 "$build_dir/bin/tenax" doctor --json >"$out/doctor.json" 2>"$out/doctor.err"
doctor_rc=$?
timeout 60 "$build_dir/bin/tenax" doctor | tee "$out/doctor.txt"

if command -v ctest >/dev/null && [ -f "$build_dir/CTestTestfile.cmake" ]; then
  (cd "$build_dir" && timeout 240 ctest -L gpu --output-on-failure) | tee "$out/gpu-tests.txt"
  tests_rc=${PIPESTATUS[0]}
else
  tests_rc=0
  for exe in "$build_dir"/bin/*_gpu_test; do
    [ -x "$exe" ] || continue
    timeout 120 "$exe" | tee -a "$out/gpu-tests.txt" || tests_rc=$?
  done
fi

bench_rc=0
for bench in "$build_dir"/bin/bench_*; do
  [ -x "$bench" ] || continue
  name=$(basename "$bench")
  timeout 90 "$bench" --benchmark_filter='[Cc]uda|GPU|Gpu' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_out="$out/$name.json" \
    --benchmark_out_format=json | tee "$out/$name.txt" || bench_rc=$?
done

# CG, 2-D Poisson 4096^2, 200 iterations (assembled and matrix-free), and the FTCS heat step.
solver_rc=0
for op in csr stencil; do
  timeout 120 "$build_dir/bin/poisson" --device cuda --n 4096 --operator "$op" --tol 0 \
    --max-iters 200 --iterations-per-step 100 --checkpoint-every 0 --progress quiet --json \
    --run-dir "$out/poisson-$op" | tee "$out/poisson-$op.txt" || solver_rc=$?
done
timeout 120 "$build_dir/bin/heat2d" --device cuda --n 4096 --steps 200 --checkpoint-every 0 \
  --anomaly-check-every 0 --progress quiet --json --run-dir "$out/heat2d" |
  tee "$out/heat2d.txt" || solver_rc=$?

# Training on the device: each precision, and f16 with an injected overflow (skipped, scale halved).
train_rc=0
for precision in f32 f16 bf16; do
  timeout 60 "$build_dir/bin/train_mlp" --device cuda --precision "$precision" --layers 256,256 \
    --batch 1024 --steps 200 --lr 0.01 --checkpoint-every 0 --progress quiet --json \
    --run-dir "$out/train-$precision" | tee "$out/train-$precision.txt" || train_rc=$?
done
timeout 60 "$build_dir/bin/train_mlp" --device cuda --precision f16 --steps 20 \
  --checkpoint-every 0 --progress quiet --json --inject overflow@step=5 \
  --run-dir "$out/train-overflow" | tee "$out/train-overflow.txt" || train_rc=$?

# Many ranks on devices: the communicators' device test at world size 1 ran with the gpu label
# above (NCCL, and CUDA tensors staged through MPI); with 2 GPUs or more the doctor runs on 2
# ranks (launch, each rank's GPU, peer access), the test runs again as 2 ranks under mpirun (NCCL
# across GPUs), and heat2d runs its rows across the GPUs.
ranks_rc=0
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -ge 2 ] && command -v mpirun >/dev/null; then
  # The doctor on each of 2 ranks: the launch, the GPU each rank gets, the peer access matrix.
  timeout 60 mpirun --allow-run-as-root -np 2 sh -c \
    '"$0" doctor >"$1/doctor-rank-${OMPI_COMM_WORLD_RANK:-0}.txt"' "$build_dir/bin/tenax" "$out" ||
    ranks_rc=$?
  grep -hE '^[A-Z]+ +(nccl|launch|launch:device|peer-access):' "$out"/doctor-rank-*.txt
  timeout 120 mpirun --allow-run-as-root -np 2 "$build_dir/bin/runtime_communicator_gpu_test" |
    tee "$out/nccl-2ranks.txt" || ranks_rc=$?
  timeout 120 mpirun --allow-run-as-root -np 2 "$build_dir/bin/heat2d" --device cuda --n 4096 \
    --steps 200 --checkpoint-every 100 --progress quiet --json --comm nccl \
    --run-dir "$out/heat2d-2ranks" | tee "$out/heat2d-2ranks.txt" || ranks_rc=$?
else
  echo "gpu-check: $gpus GPU(s) or no mpirun: the 2-rank NCCL checks are skipped"
fi

echo
echo "=== tenax gpu-check summary ==="
printf '%-14s %s\n' "doctor" "$(status $doctor_rc)"
printf '%-14s %s\n' "gpu tests" "$(status $tests_rc)"
printf '%-14s %s\n' "gpu benches" "$(status $bench_rc)"
printf '%-14s %s\n' "cg / heat" "$(status $solver_rc)"
printf '%-14s %s\n' "train_mlp" "$(status $train_rc)"
printf '%-14s %s\n' "2 ranks" "$(status $ranks_rc)"
grep -h '^{' "$out"/poisson-*.txt "$out"/heat2d.txt "$out"/train-*.txt 2>/dev/null
# CG and the heat step as fractions of the device's copy bandwidth (BM_CudaCopy, same run).
python3 - "$out" <<'PY' || true
import glob, json, os, sys
out = sys.argv[1]
try:
    bench = json.load(open(os.path.join(out, "bench_gpu.json")))
    copy = max(b["bytes_per_second"] for b in bench["benchmarks"]
               if b["name"].startswith("BM_CudaCopy") and "bytes_per_second" in b)
except (OSError, ValueError, KeyError):
    sys.exit("no BM_CudaCopy figure: fractions not computed")
print(f"device copy bandwidth: {copy / 1e9:.1f} GB/s")
for path in sorted(glob.glob(os.path.join(out, "poisson-*.txt")) + [os.path.join(out, "heat2d.txt")]):
    for line in open(path):
        if line.startswith("{"):
            row = json.loads(line)
            gbps = row.get("gbps", 0.0)
            what = os.path.basename(path)[:-4]
            per = row.get("ms_per_iteration", row.get("ms_per_step"))
            print(f"  {what:16s} {per:.3f} ms  {gbps:.1f} GB/s  {100 * gbps * 1e9 / copy:.0f} % of copy")
PY
grep -h '_median' "$out"/bench_*.txt 2>/dev/null | awk '{printf "  %-60s %s %s\n", $1, $2, $3}'
[ $doctor_rc -eq 0 ] && [ $tests_rc -eq 0 ] && [ $bench_rc -eq 0 ] && [ $solver_rc -eq 0 ] &&
  [ $ranks_rc -eq 0 ]
