#!/usr/bin/env bash
# The communicator plugins are loaded only for several ranks: with tenax's libraries copied
# without them (as on a machine without MPI), one process still runs, and --comm mpi ends with
# the environment error that names the missing file and the fix, not with a loader crash.
# Usage: missing_comm_plugin.sh <heat2d> <tenax lib folder> <scratch folder>
set -euo pipefail
heat2d=$1 libs=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch/lib"
for lib in "$libs"/libtenax_*.so*; do
  case $(basename "$lib") in libtenax_comm_*) ;; *) cp -P "$lib" "$scratch/lib/" ;; esac
done
# LD_LIBRARY_PATH comes before the programs' RUNPATH, so the copied libtenax_runtime is loaded
# and looks for its plugins in its own (plugin-less) folder.
export LD_LIBRARY_PATH=$scratch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$heat2d" --device cpu --n 16 --steps 3 --progress quiet --run-dir "$scratch/single" --comm single
set +e
output=$("$heat2d" --device cpu --n 16 --steps 3 --progress quiet --run-dir "$scratch/mpi" \
  --comm mpi 2>&1)
status=$?
set -e
echo "$output"
[ $status -ne 0 ] || { echo "--comm mpi without its plugin exited 0" >&2; exit 1; }
grep -q "the MPI communicator could not be loaded: $scratch/lib/libtenax_comm_mpi.so.0" <<<"$output" ||
  { echo "the error does not name the missing plugin" >&2; exit 1; }
grep -q -- "fix: .*reinstall tenax" <<<"$output" || { echo "the error has no fix" >&2; exit 1; }
echo "one process ran without the plugins; --comm mpi named the missing one (exit $status)"
