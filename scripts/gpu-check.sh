#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds what is missing (release preset), runs every GPU test
# program (bin/*_gpu_test, each CUDA result compared with the CPU's), the doctor with --strict
# (device GEMM check, pageable vs pinned bandwidth, NCCL, peer access between the GPUs), the GPU
# benchmarks (bench_gpu), CG on a 4096^2 Poisson problem (ms per iteration and the fraction of the
# device's copy bandwidth), the explicit heat step on the device, gray_scott's kernel of its own on
# the device (bitwise the CPU's) and its 4096^2 step, training on the device in each
# precision (train_mlp, and train_gpt against PyTorch's step of the same model), and with two GPUs the doctor on each of 2 ranks, the NCCL communicator and heat2d
# across 2 ranks. Finishes in a few minutes on one GPU.
#
# Every step is one row of the summary: PASS, SKIP (only the 2-rank checks, with fewer than 2
# GPUs) or FAIL with its exit status and why. The script exits 1 when any row failed, and says at
# the top when the machine has no usable GPU (the doctor finds no usable CUDA device, or
# nvidia-smi is there and lists no GPU): then the check cannot pass. A GPU test program fails when it exits
# non-zero, ran no test, or skipped every test (on a GPU machine the tests skip only when CUDA is
# not usable). The programs are run directly, not through CTest, whose test files hold the
# absolute paths of the machine that built them.
#
# Results: $OUT/gpu-check-summary.txt (the table) and $OUT/gpu-check.tar.gz (everything: each
# program's output, gtest XML, the doctor's text and JSON, benchmark JSON, run directories
# without their checkpoints). OUT defaults to $TENAX_BUILD_DIR/gpu-check.
# On a machine where the Debian packages are absent, point TENAX_BUILD_DIR at a build copied
# there (with LD_LIBRARY_PATH set to its bundled libraries); the script then never builds.
# GPU_CHECK_TEST_TIMEOUT (seconds, default 180) bounds each GPU test program.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build_dir=${TENAX_BUILD_DIR:-build}
bin=$build_dir/bin
out=${OUT:-$build_dir/gpu-check}
test_timeout=${GPU_CHECK_TEST_TIMEOUT:-180}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
summary=$out/gpu-check-summary.txt
archive=$out/gpu-check.tar.gz
rm -f "$summary" "$archive"

# Results are gathered outside $OUT (a device runner may bring back only a few files) and packed
# into one archive at the end.
stage=$(mktemp -d "${TMPDIR:-/tmp}/tenax-gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$stage"' EXIT
res=$stage/gpu-check
mkdir -p "$res/tests"
t_start=$SECONDS

# cuBLAS is loaded at run time (TENAX_CUBLAS_LIBRARY, else by name through the loader, else the
# build's toolkit folder). Where the CUDA libraries are Python wheels and the loader does not
# know them, point TENAX_CUBLAS_LIBRARY at the wheel's copy; the doctor (--strict) reports the
# library it loaded.
cublas_known_by_name() {
  ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13 ' && return 0
  local dir
  IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
  for dir in "${dirs[@]}"; do [[ -n $dir && -e $dir/libcublas.so.13 ]] && return 0; done
  return 1
}
if [[ -z ${TENAX_CUBLAS_LIBRARY:-} ]] && ! cublas_known_by_name; then
  for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    # nvidia/cublas/lib (CUDA 12 wheels) or nvidia/cu13/lib (CUDA 13 wheels).
    wheel=$(ls "$site"/nvidia/*/lib/libcublas.so.13 2>/dev/null | head -n 1)
    if [[ -n $wheel ]]; then
      export TENAX_CUBLAS_LIBRARY=$wheel
      echo "cuBLAS from the Python wheel: $TENAX_CUBLAS_LIBRARY"
      break
    fi
  done
fi

names=() statuses=() reasons=()
# record NAME STATUS REASON: one row of the summary (the reason cut at 200 characters; the full
# output is in the archive), printed as it happens with the reason cut at 80 (the summary at the
# end repeats it whole).
record() {
  names+=("$1")
  statuses+=("$2")
  reasons+=("${3:0:200}")
  printf '%-36s %-9s %s\n' "$1" "$2" "${3:0:80}"
}
fail_status() { echo "FAIL($1)"; }
# The last line of a file that is not blank or a rule of dashes, shortened.
last_line() { grep -vE '^[[:space:]-]*$' "$1" 2>/dev/null | tail -n 1 | cut -c1-300; }
# Why a program failed: its first error line (tenax prints "PROGRAM: tenax ... error: cause --
# fix"; under mpirun the launcher's own lines come after it), else its last line.
why_failed() {
  local line
  line=$(grep -m1 -E 'error:|[Ee]rror [a-z]+:|terminate called|Assertion|Abort' "$1" 2>/dev/null)
  if [[ -n $line ]]; then echo "${line:0:300}"; else last_line "$1"; fi
}

# run_program NAME SECONDS COMMAND...: output in $res/NAME.txt; FAIL on a non-zero exit.
run_program() {
  local name=$1 seconds=$2
  shift 2
  timeout -k 10 "$seconds" "$@" >"$res/$name.txt" 2>&1
  local rc=$?
  if ((rc == 0)); then
    record "$name" PASS ""
  elif ((rc == 124 || rc == 137)); then
    record "$name" "$(fail_status "$rc")" "timed out after ${seconds}s"
  else
    record "$name" "$(fail_status "$rc")" "$(why_failed "$res/$name.txt")"
  fi
}

# record_gtest NAME LOG RC SECONDS: a GoogleTest program's row. FAIL when it exited non-zero, ran
# no test, or skipped every test (the skip reason is given); PASS says how many passed/skipped.
record_gtest() {
  local name=$1 log=$2 rc=$3 seconds=$4 ran passed skipped n_failed why
  ran=$(count '^\[==========\] ([0-9]+) tests? from .* ran\..*' "$log")
  passed=$(count '^\[  PASSED  \] ([0-9]+) tests?\..*' "$log")
  skipped=$(count '^\[  SKIPPED \] ([0-9]+) tests?, listed below:.*' "$log")
  n_failed=$(count '^\[  FAILED  \] ([0-9]+) tests?, listed below:.*' "$log")
  if ((rc == 124 || rc == 137)); then
    record "$name" "$(fail_status "$rc")" "timed out after ${seconds}s"
  elif [[ -z $ran ]]; then
    record "$name" "$(fail_status "$rc")" "no gtest summary (crashed?): $(why_failed "$log")"
  elif ((ran == 0)); then
    record "$name" "$(fail_status "$rc")" "ran 0 tests"
  elif ((rc != 0 || ${n_failed:-0} > 0)); then
    why=$(grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sed -E 's/^\[  FAILED  \] ([^ ]+).*/\1/' |
      sort -u | head -n 3 | paste -sd' ' -)
    record "$name" "$(fail_status "$rc")" "${n_failed:-?} of $ran failed: $why"
  elif ((${passed:-0} == 0)); then
    why=$(grep -m1 -A1 ': Skipped$' "$log" | tail -n 1)
    record "$name" FAIL "all $ran tests skipped: ${why:-no reason given}"
  elif [[ -n $(skipped_names "$log" | grep -i nccl) ]]; then
    # On a GPU machine NCCL's tests run (one rank, no launcher needed): a skip hides a failure.
    record "$name" FAIL "NCCL tests skipped: $(skipped_names "$log" | grep -i nccl | head -n 2 |
      paste -sd' ' -) ($(grep -m1 -A1 ': Skipped$' "$log" | tail -n 1))"
  else
    record "$name" PASS "$passed passed${skipped:+, $skipped skipped: $(skipped_names "$log" |
      head -n 3 | paste -sd' ' -)}"
  fi
}
# skipped_names LOG: the tests a GoogleTest log lists as skipped, one a line.
skipped_names() { sed -nE 's/^\[  SKIPPED \] ([A-Za-z][^ ,]*).*/\1/p' "$1" | sort -u; }
# count REGEX FILE: the number captured by REGEX on its last matching line.
count() { sed -nE "s/$1/\\1/p" "$2" | tail -n 1; }
# Stopped from outside (a device call's time limit, ^C): the rows so far still make the summary
# and the archive, and the row says where it stopped.
trap 'record gpu-check "FAIL(signal)" "stopped by a signal after $((SECONDS - t_start)) s: the checks after the row above did not run"; finish' TERM INT

# finish: the summary file, the archive, the verdict; exits 1 when any row failed.
finish() {
  local failed=() i
  for i in "${!names[@]}"; do
    [[ ${statuses[$i]} == PASS || ${statuses[$i]} == SKIP ]] || failed+=("${names[$i]}")
  done
  {
    echo "=== tenax gpu-check summary ($(date -u '+%Y-%m-%d %H:%M:%S UTC'), ${HOSTNAME:-?}," \
      "build $build_dir, $((SECONDS - t_start)) s) ==="
    [[ -n ${no_gpu_reason:-} ]] && echo "NO USABLE GPU: $no_gpu_reason"
    for i in "${!names[@]}"; do
      printf '%-36s %-9s %s\n' "${names[$i]}" "${statuses[$i]}" "${reasons[$i]}"
    done
    grep -h '^{' "$res"/poisson-*.txt "$res"/heat2d.txt "$res"/gray_scott-4096.txt "$res"/train-*.txt "$res"/anchors.txt 2>/dev/null
    fractions
    grep -h '_median' "$res"/bench_gpu.txt 2>/dev/null |
      awk '{printf "  %-60s %s %s\n", $1, $2, $3}'
    if ((${#failed[@]} == 0)); then
      echo "gpu-check: PASS (${#names[@]} checks)"
    else
      echo "gpu-check: FAIL: ${#failed[@]} of ${#names[@]} checks failed: ${failed[*]}"
    fi
  } >"$summary"
  cp "$summary" "$res/summary.txt"
  # Checkpoints are large (4096^2 doubles per rank) and not needed to read the results: list them.
  find "$res" -path '*/checkpoints/*' -type f -printf '%s %P\n' >"$res/checkpoints-omitted.txt"
  local tar_rc=0
  tar -czf "$archive" --exclude=checkpoints -C "$stage" gpu-check || tar_rc=$?
  echo
  cat "$summary"
  if ((tar_rc != 0)); then
    echo "gpu-check: FAIL: could not write $archive (tar exit $tar_rc)"
    exit 1
  fi
  echo "results: $summary, $archive"
  if ((${#failed[@]} > 0)); then
    [[ -n ${no_gpu_reason:-} ]] && echo "gpu-check: NO USABLE GPU: $no_gpu_reason"
    exit 1
  fi
  exit 0
}

# CG and the heat step as fractions of the device's copy bandwidth (BM_CudaCopy, same run).
fractions() {
  command -v python3 >/dev/null || return 0
  python3 - "$res" <<'PY' || true
import glob, json, os, sys
res = sys.argv[1]
try:
    bench = json.load(open(os.path.join(res, "bench_gpu.json")))
    copy = max(b["bytes_per_second"] for b in bench["benchmarks"]
               if b["name"].startswith("BM_CudaCopy/67108864") and "bytes_per_second" in b)
except (OSError, ValueError, KeyError):
    sys.exit(0)  # no BM_CudaCopy figure (its row in the table says why)
# The device's copy bandwidth is the faster of tenax's copy and PyTorch's (the anchors, same run):
# a slow copy kernel of ours must not flatter the fractions.
source = "tenax BM_CudaCopy"
try:
    for line in open(os.path.join(res, "anchors.txt")):
        row = json.loads(line) if line.startswith("{") else {}
        if row.get("figure") == "copy" and row.get("gbps", 0) * 1e9 > copy:
            copy, source = row["gbps"] * 1e9, "torch copy_"
except (OSError, ValueError):
    pass
print(f"device copy bandwidth: {copy / 1e9:.1f} GB/s ({source})")
paths = sorted(glob.glob(os.path.join(res, "poisson-*.txt"))) + [os.path.join(res, "heat2d.txt"), os.path.join(res, "gray_scott-4096.txt")]
for path in paths:
    if not os.path.exists(path):
        continue
    for line in open(path):
        if line.startswith("{"):
            row = json.loads(line)
            gbps = row.get("gbps", 0.0)
            per = row.get("ms_per_iteration", row.get("ms_per_step"))
            print(f"  {os.path.basename(path)[:-4]:16s} {per:.3f} ms  {gbps:.1f} GB/s"
                  f"  {100 * gbps * 1e9 / copy:.0f} % of copy")
# CG's kernels one by one (bench_gpu BM_CudaCg*, 4096^2 f64): where an iteration's time goes.
for b in bench["benchmarks"]:
    if b["name"].startswith("BM_CudaCg") and b["name"].endswith("_median") and "bytes_per_second" in b:
        unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        print(f"  {b['name'].split('/')[0][7:]:16s} {b['real_time'] * unit:.3f} ms"
              f"  {b['bytes_per_second'] / 1e9:.1f} GB/s  {100 * b['bytes_per_second'] / copy:.0f} % of copy")
PY
  python3 - "$res" <<'PY' || true
# tenax against the peers on the same device (bench/peers/gpu_anchors.py): > 1 is faster.
import json, os, sys
res = sys.argv[1]
def lines(name):
    try:
        return [json.loads(l) for l in open(os.path.join(res, name)) if l.startswith("{")]
    except (OSError, ValueError):
        return []
peers = {r["figure"]: r for r in lines("anchors.txt") if "figure" in r and "error" not in r}
if not peers:
    sys.exit(0)
print("tenax / peer on this device (> 1: tenax faster):")
try:
    bench = {b["name"]: b for b in json.load(open(os.path.join(res, "bench_gpu.json")))["benchmarks"]}
except (OSError, ValueError, KeyError):
    bench = {}
for ours, theirs in (("BM_CudaGemmF32/4096/real_time_median", "gemm-f32"),
                     ("BM_CudaGemmF16/4096/real_time_median", "gemm-f16-f32out"),
                     ("BM_CudaGemmF16/4096/real_time_median", "gemm-f16")):
    if ours in bench and theirs in peers and "TFLOP/s" in bench[ours]:
        t = bench[ours]["TFLOP/s"] / 1e12 if bench[ours]["TFLOP/s"] > 1e6 else bench[ours]["TFLOP/s"]
        print(f"  {theirs:18s} {t:8.1f} vs torch {peers[theirs]['tflops']:8.1f} TFLOP/s"
              f"  {t / peers[theirs]['tflops']:.2f}x")
for size in ("1048576", "67108864"):
    ours = bench.get(f"BM_CudaPoolCachedPair/{size}_median")
    theirs = bench.get(f"BM_CudaMallocAsyncPair/{size}_median")
    if ours and theirs:
        print(f"  {'pool pair ' + str(int(size) >> 20) + ' MiB':18s} {ours['real_time']:8.0f} vs "
              f"cudaMallocAsync {theirs['real_time']:8.0f} ns  {theirs['real_time'] / ours['real_time']:.2f}x")
for kind in ("Pageable", "Pinned"):
    ours = bench.get(f"BM_CudaHostToDevice{kind}/268435456/real_time_median")
    theirs = peers.get(f"h2d-{kind.lower()}")
    if ours and theirs and "bytes_per_second" in ours:
        gbps = ours["bytes_per_second"] / 1e9
        print(f"  {'h2d ' + kind.lower():18s} {gbps:8.1f} vs torch {theirs['gbps']:8.1f} GB/s"
              f"  {gbps / theirs['gbps']:.2f}x")
cg = [r for r in lines("poisson-csr.txt") if "ms_per_iteration" in r]
if cg and "cg" in peers:
    ours, theirs = cg[-1]["ms_per_iteration"], peers["cg"]["ms_per_iteration"]
    print(f"  {'cg csr 4096^2':18s} {ours:8.3f} vs cupy  {theirs:8.3f} ms/iteration  {theirs / ours:.2f}x")
for precision in ("f32", "bf16", "f16"):
    run = [r for r in lines(f"train-{precision}.txt") if "seconds" in r and "steps" in r]
    peer = peers.get(f"train-{precision}")
    if run and peer:
        ours = 1e3 * run[-1]["seconds"] / run[-1]["steps"]
        print(f"  {'train-' + precision:18s} {ours:8.3f} vs torch {peer['ms_per_step']:8.3f} ms/step"
              f"  {peer['ms_per_step'] / ours:.2f}x")
for precision in ("f32", "bf16", "f16"):
    try:
        seconds = [json.loads(l)["seconds"] for l in open(os.path.join(res, f"gpt-{precision}", "events.jsonl"))
                   if '"event":"step"' in l]
    except (OSError, ValueError, KeyError):
        continue
    if len(seconds) <= 5:
        continue
    steady = sorted(seconds[5:])
    ours = 1e3 * steady[len(steady) // 2]
    peer = peers.get(f"gpt-{precision}")
    if peer:
        print(f"  {'gpt-' + precision:18s} {ours:8.3f} vs torch {peer['ms_per_step']:8.3f} ms/step"
              f"  {peer['ms_per_step'] / ours:.2f}x")
    else:
        print(f"  {'gpt-' + precision:18s} {ours:8.3f} ms/step (no peer figure)")
PY
}

# --- The GPU itself: the driver's view (nvidia-smi) and tenax's (the doctor). -------------------
no_gpu_reason="" smi_reason=""
if ! command -v nvidia-smi >/dev/null; then
  smi_reason="nvidia-smi not found (no NVIDIA driver installed?)"
  echo "nvidia-smi: not found" >"$res/nvidia-smi.txt"
  gpus=0
else
  timeout -k 5 30 nvidia-smi >"$res/nvidia-smi.txt" 2>&1
  timeout -k 5 30 nvidia-smi -L >>"$res/nvidia-smi.txt" 2>&1
  gpus=$(grep -c '^GPU [0-9]' "$res/nvidia-smi.txt")
  ((gpus > 0)) || smi_reason="nvidia-smi lists no GPU: $(last_line "$res/nvidia-smi.txt")"
fi

if [[ ! -x $bin/tenax ]]; then
  if [[ -n ${TENAX_BUILD_DIR:-} ]]; then
    record build FAIL "no $bin/tenax: TENAX_BUILD_DIR names no build (only build/ is built here)"
    finish
  fi
  echo "gpu-check: building (cmake --preset release; log in the archive: build.log)"
  if ! { cmake --preset release && cmake --build --preset release -j "$(nproc)"; } \
    >"$res/build.log" 2>&1; then
    record build FAIL "$(last_line "$res/build.log")"
    finish
  fi
  record build PASS ""
fi

timeout -k 10 60 "$bin/tenax" doctor --strict >"$res/doctor.txt" 2>&1
doctor_rc=$?
timeout -k 10 60 "$bin/tenax" doctor --strict --json >"$res/doctor.json" 2>"$res/doctor.err"
cuda_ok=0
grep -qE '^OK +cuda-devices:' "$res/doctor.txt" && cuda_ok=1
# No usable GPU: nvidia-smi lists none, or the doctor finds no usable CUDA device. (nvidia-smi
# alone missing, in a container that has the driver's libraries but not its tools, is not one.)
if [[ -n $smi_reason ]] && ! [[ $smi_reason == "nvidia-smi not found"* && $cuda_ok == 1 ]]; then
  no_gpu_reason=$smi_reason
fi
if ((cuda_ok == 0)); then
  why=$(grep -E '^(PROBLEM|SKIP) +cuda-(driver|devices):' "$res/doctor.txt" | head -n 1 |
    sed -E 's/^[A-Z]+ +//' | cut -c1-300)
  why="the doctor finds no usable CUDA device: ${why:-see doctor.txt}"
  no_gpu_reason="${no_gpu_reason:+$no_gpu_reason; }$why"
fi

if [[ -n $no_gpu_reason ]]; then
  echo "################################################################################"
  echo "gpu-check: NO USABLE GPU: $no_gpu_reason"
  echo "gpu-check: the device checks below will fail and the script exits 1"
  echo "################################################################################"
fi
printf '%-36s %-9s %s\n' CHECK STATUS "WHY IT FAILED / DETAIL"
if ((gpus > 0)); then
  record nvidia-smi PASS "$gpus GPU(s): $(grep -m1 '^GPU 0' "$res/nvidia-smi.txt" | cut -c1-120)"
elif [[ -z $no_gpu_reason ]]; then
  record nvidia-smi SKIP "$smi_reason; the doctor finds a usable CUDA device (2-rank checks off)"
else
  record nvidia-smi FAIL "$smi_reason"
fi
if ((doctor_rc == 0)); then
  record "doctor --strict" PASS ""
else
  problems=$(grep -E '^PROBLEM ' "$res/doctor.txt" | sed -E 's/^PROBLEM +([^:]+):.*/\1/' |
    paste -sd, -)
  first=$(grep -m1 -E '^PROBLEM ' "$res/doctor.txt" | sed -E 's/^PROBLEM +[^:]+: *//')
  [[ -n $problems ]] && problems="PROBLEM $problems: $first"
  record "doctor --strict" "$(fail_status "$doctor_rc")" \
    "${problems:-$(last_line "$res/doctor.txt")}"
fi

# --- GPU test programs: each must run tests, pass them, and not skip them all. ------------------
shopt -s nullglob
test_programs=()
# NCCL's test last: a hang there (a driver or NCCL fault, bounded by the timeout) comes after
# every other result is in.
for exe in "$bin"/*_gpu_test; do [[ $exe == *communicator* ]] || test_programs+=("$exe"); done
for exe in "$bin"/*communicator*_gpu_test; do test_programs+=("$exe"); done
shopt -u nullglob
if ((${#test_programs[@]} == 0)); then
  record "gpu tests" FAIL "no test program $bin/*_gpu_test"
fi
for exe in "${test_programs[@]}"; do
  name=$(basename "$exe")
  # The MPI communicator's device test runs as a singleton (this build carries Open MPI).
  TENAX_TEST_MPI_SINGLETON=1 timeout -k 10 "$test_timeout" "$exe" --gtest_color=no --gtest_output="xml:$res/tests/$name.xml" \
    >"$res/tests/$name.txt" 2>&1
  record_gtest "$name" "$res/tests/$name.txt" $? "$test_timeout"
done

# --- GPU benchmarks. Google Benchmark exits 0 when a benchmark reports an error: look for it. ---
if [[ -x $bin/bench_gpu ]]; then
  timeout -k 10 120 "$bin/bench_gpu" --benchmark_filter='[Cc]uda|GPU|Gpu' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$res/bench_gpu.json" --benchmark_out_format=json >"$res/bench_gpu.txt" 2>&1
  rc=$?
  error=$(grep -m1 'ERROR OCCURRED' "$res/bench_gpu.txt" | tr -s ' ' | cut -c1-300)
  errors=$(grep -c 'ERROR OCCURRED' "$res/bench_gpu.txt")
  if ((rc != 0)); then
    record bench_gpu "$(fail_status "$rc")" "$(last_line "$res/bench_gpu.txt")"
  elif [[ -n $error ]]; then
    record bench_gpu FAIL "$errors benchmark error(s): $error"
  elif ! grep -q '_median' "$res/bench_gpu.txt"; then
    record bench_gpu FAIL "no benchmark ran (filter '[Cc]uda|GPU|Gpu' matched nothing?)"
  else
    record bench_gpu PASS ""
  fi
else
  record bench_gpu FAIL "no $bin/bench_gpu (benchmarks off in this build?)"
fi

# --- CG, 2-D Poisson 4096^2, 200 iterations (assembled and matrix-free), and the FTCS heat step.
for op in csr stencil; do
  run_program "poisson-$op" 120 "$bin/poisson" --device cuda --n 4096 --operator "$op" --tol 0 \
    --max-iters 200 --iterations-per-step 100 --checkpoint-every 0 --progress quiet --json \
    --run-dir "$res/poisson-$op"
done
run_program heat2d 120 "$bin/heat2d" --device cuda --n 4096 --steps 200 --checkpoint-every 0 \
  --anomaly-check-every 0 --progress quiet --json --run-dir "$res/heat2d"

# --- Kernels of the user's own (gray_scott, compiled by nvcc): u and v computed on the device are
# the CPU's bit for bit (the output files, written alike, compare equal byte for byte), and the
# step at 4096^2 (32 bytes per point: u and v read and written).
run_program gray_scott-cpu 120 "$bin/gray_scott" --device cpu --n 256 --steps 200 \
  --checkpoint-every 0 --progress quiet --run-dir "$res/gray_scott-cpu" --output "$res/gs-cpu.h5"
run_program gray_scott-cuda 120 "$bin/gray_scott" --device cuda --n 256 --steps 200 \
  --checkpoint-every 0 --progress quiet --run-dir "$res/gray_scott-cuda" --output "$res/gs-cuda.h5"
if [[ -f $res/gs-cpu.h5 && -f $res/gs-cuda.h5 ]]; then
  if cmp -s "$res/gs-cpu.h5" "$res/gs-cuda.h5"; then
    record gray_scott-bits PASS "u and v on cuda are the cpu's bit for bit (256^2, 200 steps)"
  else
    record gray_scott-bits FAIL "gs-cuda.h5 differs from gs-cpu.h5 (cmp: $(cmp "$res/gs-cpu.h5" "$res/gs-cuda.h5" 2>&1 | head -c 150))"
  fi
else
  record gray_scott-bits FAIL "an output file is missing (see the gray_scott-cpu/-cuda rows)"
fi
run_program gray_scott-4096 120 "$bin/gray_scott" --device cuda --n 4096 --steps 300 \
  --checkpoint-every 0 --anomaly-check-every 0 --digest-every 0 --progress quiet --json \
  --run-dir "$res/gray_scott-4096"

# --- Telemetry on the device: a heat2d run sampling every 0.2 s must log NVML's fields (GPU
# utilisation, temperature, power, SM clock, throttle reasons) beside the pool's figures.
run_program telemetry 60 "$bin/heat2d" --device cuda --n 2048 --steps 400 --checkpoint-every 0 \
  --telemetry-seconds 0.2 --progress quiet --json --run-dir "$res/telemetry"
if [[ -f $res/telemetry/events.jsonl ]]; then
  grep '"event":"telemetry"' "$res/telemetry/events.jsonl" | tail -2 >"$res/telemetry-lines.txt"
  missing=""
  for field in gpu_utilization gpu_temperature gpu_power_watts gpu_sm_clock_mhz \
    gpu_throttle_reasons gpu_memory_used pool_allocated host_rss; do
    grep -q "\"$field\"" "$res/telemetry-lines.txt" || missing+=" $field"
  done
  if [[ -n $missing ]]; then
    record telemetry-nvml FAIL "telemetry lines lack:$missing ($(head -c 300 "$res/telemetry-lines.txt"))"
  else
    record telemetry-nvml PASS "$(head -c 300 "$res/telemetry-lines.txt")"
  fi
else
  record telemetry-nvml FAIL "no events.jsonl in $res/telemetry"
fi
# The run report of that run must draw the GPU's charts from those fields.
if timeout -k 10 60 "$bin/tenax" report "$res/telemetry" -o "$res/telemetry-report.html" \
  >"$res/telemetry-report.txt" 2>&1; then
  missing=""
  for chart in telemetry-gpu_utilization telemetry-gpu_temperature telemetry-gpu_power_watts \
    telemetry-gpu_sm_clock_mhz telemetry-memory step-time; do
    grep -q "id=\"chart-$chart\"" "$res/telemetry-report.html" || missing+=" $chart"
  done
  if [[ -n $missing ]]; then
    record report-gpu FAIL "the report lacks the charts:$missing"
  else
    record report-gpu PASS "$(tr '\n' ' ' <"$res/telemetry-report.txt" | head -c 300)"
  fi
else
  record report-gpu FAIL "tenax report failed: $(tail -c 300 "$res/telemetry-report.txt")"
fi

# --- Training on the device: each precision, and f16 with an injected overflow (skipped step,
# scale halved).
for precision in f32 f16 bf16; do
  run_program "train-$precision" 60 "$bin/train_mlp" --device cuda --precision "$precision" \
    --layers 256,256 --batch 1024 --steps 200 --lr 0.01 --checkpoint-every 0 --progress quiet \
    --json --run-dir "$res/train-$precision"
done
run_program train-overflow 60 "$bin/train_mlp" --device cuda --precision f16 --steps 20 \
  --checkpoint-every 0 --progress quiet --json --inject overflow@step=5 \
  --run-dir "$res/train-overflow"

# --- train_gpt on the device in each precision, at the sizes its CPU peer uses (d 256, 4 layers,
# 4 heads, T 128, batch 32): its step time (the median of the Runner's step times after the first
# five, from events.jsonl) is read against PyTorch's step of the same model below. The text: the
# example's default, else the copy the bundle carries, else this script (any bytes will do).
gpt_text=/usr/share/games/fortunes/songs-poems
[[ -f $gpt_text ]] || gpt_text=bench/peers/gpt-text.txt
[[ -f $gpt_text ]] || gpt_text=scripts/gpu-check.sh
if [[ -x $bin/train_gpt ]]; then
  for precision in f32 bf16 f16; do
    run_program "gpt-$precision" 120 "$bin/train_gpt" --device cuda --precision "$precision" \
      --layers 4 --d-model 256 --heads 4 --context 128 --batch 32 --steps 30 \
      --checkpoint-every 0 --eval-every 0 --val-fraction 0 --progress quiet --data "$gpt_text" \
      --run-dir "$res/gpt-$precision"
  done
else
  record gpt FAIL "no $bin/train_gpt (examples off in this build?)"
fi

# --- The peers on the same device (PyTorch, CuPy): the figures the rows above are read against.
anchors=bench/peers/gpu_anchors.py
[[ -f $anchors ]] || anchors=$(dirname "$0")/gpu_anchors.py
if command -v python3 >/dev/null && [[ -f $anchors ]]; then
  run_program anchors 240 python3 "$anchors" --repeats 5
  if grep -q '"error"' "$res/anchors.txt"; then
    record anchors-peers FAIL "$(grep -m1 '"error"' "$res/anchors.txt")"
  fi
else
  record anchors SKIP "no python3 or no $anchors: the peers' figures are not measured"
fi

# --- Many ranks on devices: the communicators' device test at world size 1 ran above (NCCL, and
# CUDA tensors staged through MPI); with 2 GPUs or more the doctor runs on 2 ranks (launch, each
# rank's GPU, peer access), the test runs again as 2 ranks under mpirun (NCCL across GPUs), and
# heat2d runs its rows across the GPUs.
if ((gpus >= 2)) && command -v mpirun >/dev/null; then
  # shellcheck disable=SC2016 # expanded by the shell of each rank
  timeout -k 10 60 mpirun --allow-run-as-root -np 2 sh -c \
    '"$0" doctor --strict >"$1/doctor-rank-${OMPI_COMM_WORLD_RANK:-0}.txt" 2>&1' "$bin/tenax" \
    "$res" >"$res/doctor-2ranks.txt" 2>&1
  rc=$?
  if ((rc == 0)); then
    record doctor-2ranks PASS ""
  else
    problems=$(grep -HE '^PROBLEM ' "$res"/doctor-rank-*.txt 2>/dev/null |
      sed -E 's|^.*/doctor-(rank-[0-9]+)\.txt:PROBLEM +([^:]+):.*|\1 \2|' | paste -sd, -)
    [[ -n $problems ]] && problems="PROBLEM: $problems"
    record doctor-2ranks "$(fail_status "$rc")" \
      "${problems:-$(why_failed "$res/doctor-2ranks.txt")}"
  fi
  timeout -k 10 120 mpirun --allow-run-as-root -np 2 "$bin/runtime_communicator_gpu_test" \
    --gtest_color=no >"$res/nccl-2ranks.txt" 2>&1
  record_gtest nccl-2ranks "$res/nccl-2ranks.txt" $? 120
  run_program train-2ranks 120 mpirun --allow-run-as-root -np 2 "$bin/train_mlp" --device cuda \
    --layers 256,256 --batch 1024 --steps 100 --checkpoint-every 50 --progress quiet --json \
    --comm nccl --run-dir "$res/train-2ranks"
  run_program heat2d-2ranks 120 mpirun --allow-run-as-root -np 2 "$bin/heat2d" --device cuda \
    --n 4096 --steps 200 --checkpoint-every 100 --progress quiet --json --comm nccl \
    --run-dir "$res/heat2d-2ranks"
else
  record "2 ranks" SKIP \
    "$gpus GPU(s)$(command -v mpirun >/dev/null || echo ', no mpirun'): needs 2 GPUs and mpirun"
fi

finish
