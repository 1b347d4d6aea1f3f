#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, then configures, builds and runs the consumer
# project against it: proves find_package(tenax) + tenax::tenax work from an installed prefix,
# and that a user's job written on the installed app layer (consumer/job.cpp) gets the standard
# flags, --help, --print-config, checked values, fault injection, a bitwise resume after a kill
# and the configuration check on resume.
# The tutorials' programs (docs/tutorial) are built the same way and run briefly: a training job
# and a solve with the solver's settings by name, from the installed headers alone; and
# examples/gray_scott.cpp, a kernel of the user's own on a grid; plate.cpp, a heat job on the
# library's DiffusionSimulation, killed and resumed to the same line; the model tutorial (a
# module and a loss on the training workload), killed and resumed to the same loss; and
# examples/train_gpt.cpp, examples/train_mlp.cpp and examples/poisson.cpp (its systems from the
# installed solvers and runtime headers).
# Usage: consumer_test.sh <build dir> <source dir of the consumer> <scratch dir>
set -euo pipefail
build_dir=$1
consumer_src=$2
scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$consumer_src" -B "$scratch/build" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  -DCMAKE_BUILD_TYPE=Release -DTENAX_TUTORIAL_DIR="$(cd "$consumer_src/../../../docs/tutorial" && pwd)" \
  -DTENAX_EXAMPLES_DIR="$(cd "$consumer_src/../../../examples" && pwd)" \
  >/dev/null
cmake --build "$scratch/build"
# Run from outside both trees so nothing but the installed libraries can be picked up.
cd /
"$scratch/build/consumer"

job="$scratch/build/oscillators"
runs="$scratch/runs"
fail() { echo "consumer_test: $*" >&2; exit 1; }
# expect <exit code> <text the output must hold> -- <command...>
expect() {
  local want=$1 text=$2
  shift 3
  local out code=0
  out=$("$@" 2>&1) || code=$?
  [ "$code" = "$want" ] || fail "'$*' exited $code, expected $want: $out"
  grep -qF -- "$text" <<<"$out" || fail "'$*' did not say '$text': $out"
  printf '%s\n' "$out"
}

expect 0 "--checkpoint-every N" -- "$job" --help >/dev/null
expect 0 "--omega X" -- "$job" --help >/dev/null
expect 0 "n = 10" -- "$job" --print-config --n 10 >/dev/null
expect 1 "--n 0: expected an integer >= 1" -- "$job" --n 0 --run-dir "$runs/bad"
expect 1 "did you mean --steps?" -- "$job" --stesp 3 --run-dir "$runs/bad"
expect 1 "--omega nan: 'nan' is not a finite number" -- "$job" --omega nan --run-dir "$runs/bad"

whole=$(expect 0 "oscillators: energy" -- "$job" --run-dir "$runs/whole" --progress quiet |
          grep "oscillators: energy")
code=0
"$job" --run-dir "$runs/killed" --inject kill@step=23 --progress quiet >/dev/null 2>&1 || code=$?
[ "$code" = 137 ] || fail "kill@step=23 did not kill the job (exit $code)"
resumed=$(expect 0 "resumed from the checkpoint of step 20" -- \
            "$job" --run-dir "$runs/killed" --progress quiet | grep "oscillators: energy")
[ "$whole" = "$resumed" ] || fail "the resumed run ended at '$resumed', the whole run at '$whole'"

expect 1 "omega: 2.0 -> 3.0" -- "$job" --run-dir "$runs/killed" --steps 50 --omega 3 >/dev/null
expect 1 "pass --allow-config-change dt" -- "$job" --run-dir "$runs/killed" --steps 50 \
  --dt 0.02 >/dev/null
expect 0 "completed at step 50" -- "$job" --run-dir "$runs/killed" --steps 50 --dt 0.02 \
  --allow-config-change dt >/dev/null

# The tutorials, from the installed package.
expect 0 "--solver.tol" -- "$scratch/build/tutorial_membrane" --help >/dev/null
expect 0 "completed at step" -- "$scratch/build/tutorial_membrane" --run-dir "$runs/membrane" \
  --n 15 --solver gmres --pc jacobi --solver.tol 1e-6 --device cpu >/dev/null
expect 1 "--pc nope" -- "$scratch/build/tutorial_membrane" --run-dir "$runs/membrane-bad" \
  --pc nope --device cpu >/dev/null
expect 0 "completed at step 3" -- "$scratch/build/tutorial_fit" --run-dir "$runs/fit" \
  --steps 3 --batch 64 --width 8 --device cpu >/dev/null
expect 0 "completed at step 5" -- "$scratch/build/tutorial_cooling" --run-dir "$runs/cooling" \
  --steps 5 --device cpu >/dev/null
# A stencil kernel of the user's own on a grid, from the installed headers alone.
# The plate (DiffusionSimulation): killed and resumed, it ends where a whole run ends.
plate="$scratch/build/plate"
plate_whole=$(expect 0 "plate: t = " -- "$plate" --run-dir "$runs/plate" --n 31 --steps 12 \
                --checkpoint-every 4 --progress quiet | grep "plate: t = ")
code=0
"$plate" --run-dir "$runs/plate-killed" --n 31 --steps 12 --checkpoint-every 4 --progress quiet \
  --inject kill@step=7 >/dev/null 2>&1 || code=$?
[ "$code" -ne 0 ] || fail "plate --inject kill@step=7 exited 0"
plate_resumed=$(expect 0 "plate: t = " -- "$plate" --run-dir "$runs/plate-killed" --n 31 \
                  --steps 12 --checkpoint-every 4 --progress quiet | grep "plate: t = ")
[ "$plate_whole" = "$plate_resumed" ] ||
  fail "the resumed plate ended at '$plate_resumed', the whole run at '$plate_whole'"
expect 1 "--scheme leapfrog" -- "$plate" --run-dir "$runs/plate-bad" --scheme leapfrog
expect 0 "gray_scott: 20 steps on cpu, grid 32 x 32, periodic" -- "$scratch/build/gray_scott" \
  --run-dir "$runs/gray_scott" --n 32 --steps 20 --device cpu --progress quiet >/dev/null
# A model of the user's own on the training workload (docs/tutorial/model.cpp): killed and
# resumed, it ends with the loss of a whole run; and the bundled GPT, built the same way.
model="$scratch/build/tutorial_model"
model_whole=$(expect 0 "model: loss " -- "$model" --run-dir "$runs/model" --steps 12 \
                --checkpoint-every 5 --device cpu --progress quiet | grep "model: loss ")
code=0
"$model" --run-dir "$runs/model-killed" --steps 12 --checkpoint-every 5 --device cpu \
  --progress quiet --inject kill@step=8 >/dev/null 2>&1 || code=$?
[ "$code" -ne 0 ] || fail "tutorial_model --inject kill@step=8 exited 0"
model_resumed=$(expect 0 "resumed from the checkpoint of step 5" -- "$model" \
                  --run-dir "$runs/model-killed" --steps 12 \
                  --checkpoint-every 5 --device cpu --progress quiet | grep "model: loss ")
[ "$model_whole" = "$model_resumed" ] ||
  fail "the resumed model ended at '$model_resumed', the whole run at '$model_whole'"
expect 0 "completed at step 2" -- "$scratch/build/train_gpt" --run-dir "$runs/gpt" --layers 1 \
  --d-model 16 --heads 2 --context 8 --batch 4 --steps 2 --val-fraction 0 --device cpu >/dev/null
expect 0 "completed at step 3" -- "$scratch/build/train_mlp" --run-dir "$runs/mlp" --steps 3 \
  --batch 16 --device cpu >/dev/null
expect 0 "poisson: error against the known solution" -- "$scratch/build/poisson" \
  --run-dir "$runs/poisson" --problem convdiff --n 16 --solver gmres --device cpu >/dev/null
echo "consumer_test: the installed job got its flags, checks, kill and bitwise resume; the" \
  "tutorials, the GPT, the MLP and the sparse solve built and ran"
