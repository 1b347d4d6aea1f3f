#!/usr/bin/env bash
# heat2d measurements that need whole processes (results in bench/RESULTS.md):
#
#   bench/async_overhead.sh overhead [BUILD_DIR]
#     Step time with asynchronous checkpoints every CKPT_SECONDS (10) s against no checkpoints,
#     same grid (N, default 2048: a 32 MiB field), RUNS (3) runs of each, alternated, each about
#     SECONDS_PER_RUN (35) s long. The step time of a run is the mean interval between its first
#     and last "step" events in events.jsonl, so the synchronous checkpoints of step 0 and of the
#     end are outside it and every asynchronous one is inside. Prints each run and the medians.
#
#   bench/async_overhead.sh resume [BUILD_DIR]
#     Resume time with a 1 GiB state (N, default 11585: 11585^2 f64 = 0.99996 GiB): writes a
#     checkpoint once, then RUNS times starts heat2d on it and reports the seconds from just
#     before exec to the "resumed" event (checkpoint found, verified, loaded and handed to the
#     workload) and to the first "step" event. COLD=1 (the default when root) drops the page
#     cache before each start, so the checkpoint is read from the disk.
#
# DIR (default /tmp/tenax-bench) holds the run directories; put it on the filesystem to measure.
set -euo pipefail

mode=${1:-overhead}
build=${2:-build-bench}
heat2d="$build/bin/heat2d"
dir=${DIR:-/tmp/tenax-bench}/heat2d-$$
runs=${RUNS:-3}
[[ -x $heat2d ]] || { echo "no $heat2d: cmake --build $build --target heat2d" >&2; exit 1; }
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT

# Prints: <mean step seconds> <steps in the window> <async checkpoints written in it>
#         <median step seconds> <seconds above the median summed over the window's steps>
step_stats() {
  python3 - "$1" <<'EOF'
import json, sys
steps, ckpts = [], 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == "step":
        steps.append(e["time"])
    elif e["event"] == "checkpoint_written" and e.get("async") and steps:
        ckpts += 1
gaps = sorted(b - a for a, b in zip(steps, steps[1:]))
median = gaps[len(gaps) // 2]
excess = sum(g - median for g in gaps if g > median)
print(f"{(steps[-1] - steps[0]) / len(gaps):.6f} {len(steps)} {ckpts} {median:.6f} {excess:.3f}")
EOF
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

drop_cache() { sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; }

overhead() {
  local n=${N:-2048} seconds=${SECONDS_PER_RUN:-35} every=${CKPT_SECONDS:-10}
  # Calibrate the step count to the wanted run length (also warms the binary and the disk).
  "$heat2d" --n "$n" --steps 100 --checkpoint-every 0 --device cpu --progress quiet --run-dir "$dir/calib" \
    >/dev/null
  local t steps
  t=$(step_stats "$dir/calib/events.jsonl" | cut -d' ' -f1)
  steps=$(python3 -c "print(int($seconds / $t))")
  echo "n=$n, ${t}s per step in calibration -> $steps steps per run; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  : >"$dir/plain.txt"
  : >"$dir/async.txt"
  for ((r = 1; r <= runs; ++r)); do
    local order=(plain async)
    ((r % 2 == 0)) && order=(async plain)
    for kind in "${order[@]}"; do
      rm -rf "$dir/run"
      local flags=(--checkpoint-every 0)
      [[ $kind == async ]] && flags+=(--async --checkpoint-seconds "$every")
      "$heat2d" --n "$n" --steps "$steps" "${flags[@]}" --device cpu --progress quiet --run-dir "$dir/run" \
        >/dev/null
      read -r mean count ckpts p50 excess < <(step_stats "$dir/run/events.jsonl")
      echo "$mean" >>"$dir/$kind.txt"
      printf '%-5s run %d: %.3f ms/step (median step %.3f ms, %s s above it in all) over %d steps, %d async checkpoints, load %s\n' \
        "$kind" "$r" "$(python3 -c "print($mean * 1e3)")" "$(python3 -c "print($p50 * 1e3)")" \
        "$excess" "$count" "$ckpts" "$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
  local plain async
  plain=$(median <"$dir/plain.txt")
  async=$(median <"$dir/async.txt")
  python3 -c "p, a = $plain, $async; print(f'median: plain {p*1e3:.3f} ms/step, async every ${every}s {a*1e3:.3f} ms/step, overhead {100*(a/p-1):+.2f} %')"
}

resume() {
  local n=${N:-11585} cold=${COLD:-1}
  echo "writing the initial checkpoint of n=$n ($(python3 -c "print(f'{$n*$n*8/2**30:.5f}')") GiB)"
  "$heat2d" --n "$n" --steps 1 --checkpoint-every 0 --device cpu --progress quiet --run-dir "$dir/run" \
    >/dev/null
  du -sh "$dir/run/checkpoints"
  for ((r = 1; r <= runs; ++r)); do
    local note=warm
    if [[ $cold == 1 ]]; then drop_cache && note=cold || note="warm (cannot drop the cache)"; fi
    local before lines
    lines=$(wc -l <"$dir/run/events.jsonl")
    before=$(date +%s.%N)
    "$heat2d" --n "$n" --steps $((r + 1)) --checkpoint-every 0 --device cpu --progress quiet \
      --run-dir "$dir/run" >/dev/null
    tail -n +$((lines + 1)) "$dir/run/events.jsonl" | python3 -c "
import json, sys
first = {}
for line in sys.stdin:
    e = json.loads(line)
    first.setdefault(e['event'], e['time'])
b = $before
print(f'run $r ($note): resumed after {first[\"resumed\"] - b:.3f} s, first step done after '
      f'{first[\"step\"] - b:.3f} s (the step itself {first[\"step\"] - first[\"resumed\"]:.3f} s)')
"
  done
}

case $mode in
  overhead) overhead ;;
  resume) resume ;;
  *) echo "usage: $0 overhead|resume [BUILD_DIR]" >&2; exit 2 ;;
esac
