#!/usr/bin/env bash
# Installs the peer codes that bench/peers/run.py compares tenax against (Debian 12 packages):
# PETSc 3.18 through petsc4py, mpi4py, Open MPI, SciPy 1.10, NumPy, Eigen 3.4, PyTorch 1.13 (the
# training peer, bench/peers/torch_mlp.py), OpenBLAS (without it PyTorch and NumPy use the
# reference BLAS) and h5py (gray_scott_numpy.py --compare-h5 reads tenax's gray_scott output).
# petsc-dev also gives the C peer bench/peers/gray_scott_petsc.c its headers and `pkg-config
# PETSc` (the CMake target peer_gray_scott_petsc). Then checks that the system interpreter
# (/usr/bin/python3, the one run.py uses) imports petsc4py (and initialises PETSc), mpi4py,
# SciPy, NumPy, PyTorch and h5py.
#
# Why petsc-dev: Debian's python3-petsc4py lives under /usr/lib/petscdir/petsc3.18/<arch>-real
# and is found through the /usr/lib/petsc alternative or PETSC_DIR; only the PETSc -dev package
# (libpetsc-real3.18-dev, pulled in by petsc-dev) registers that alternative. Without it
# `import petsc4py` fails with "No module named 'petsc4py'" unless PETSC_DIR is set (run.py
# sets it). petsc-dev brings tens of -dev packages (42, 145 MB on the 2-core VM: MPI HDF5,
# hypre, MUMPS, ...); it does not change the HDF5 tenax builds against (CMake finds the serial
# h5cc).
#
# Only what is missing is installed; run as root (or with sudo available). Quiet: one line per
# step; apt's output goes to a log whose path is printed when a step fails.
#   bench/peers/install.sh           install what is missing, then check the imports
#   bench/peers/install.sh --check   only check the imports (exit 1 when one fails)
set -euo pipefail

packages=(python3-petsc4py petsc-dev python3-mpi4py python3-scipy python3-numpy libeigen3-dev
          openmpi-bin python3-torch libopenblas0-pthread python3-h5py)
python=/usr/bin/python3

# Each import is checked in its own interpreter, as run.py's peers run, and without PETSC_DIR:
# the check proves that a plain `import petsc4py` finds PETSc through /usr/lib/petsc.
check_imports() {
  local failed=0 name code err
  local -a checks=(
    "petsc4py|import petsc4py; petsc4py.init(); from petsc4py import PETSc"
    "mpi4py|import mpi4py"
    "scipy|import scipy, scipy.sparse.linalg"
    "numpy|import numpy"
    "torch|import torch"
    "h5py|import h5py"
  )
  local ok=()
  for entry in "${checks[@]}"; do
    name=${entry%%|*}
    code=${entry#*|}
    if err=$(env -u PETSC_DIR "$python" -c "$code" 2>&1); then
      ok+=("$name")
      continue
    fi
    failed=1
    echo "install.sh: FAIL: $python cannot import $name: $(printf '%s\n' "$err" | tail -n 1)" >&2
    case $name in
      petsc4py)
        if [[ ! -e /usr/lib/petsc ]]; then
          echo "  cause: /usr/lib/petsc is missing; Debian's petsc4py is found only through that" \
            "alternative (created by petsc-dev, i.e. libpetsc-real3.18-dev) or PETSC_DIR" >&2
          if PETSC_DIR=$(petsc_dir_hint) "$python" -c "$code" >/dev/null 2>&1; then
            echo "  (it imports with PETSC_DIR=$(petsc_dir_hint), which run.py sets by itself)" >&2
          fi
          echo "  fix: apt-get install petsc-dev (this script does, as root), or" \
            "export PETSC_DIR=$(petsc_dir_hint)" >&2
        else
          echo "  cause: /usr/lib/petsc -> $(readlink -f /usr/lib/petsc) holds no petsc4py for" \
            "$python" >&2
          echo "  fix: apt-get install --reinstall python3-petsc4py python3-petsc4py-real," \
            "or select a PETSc build with petsc4py: update-alternatives --config petsc" >&2
        fi
        ;;
      *)
        echo "  fix: apt-get install python3-$name (Debian's $name is visible to $python only," \
          "not to a pyenv or venv interpreter)" >&2
        ;;
    esac
  done
  if ((failed == 0)); then
    echo "install.sh: imports ok under $python: ${ok[*]}"
  else
    echo "install.sh: imports ok under $python: ${ok[*]:-none}; the others failed (above)" >&2
  fi
  return "$failed"
}

# The newest Debian PETSc real build, as run.py finds it.
petsc_dir_hint() {
  local dirs=(/usr/lib/petscdir/petsc3.*/x86_64-linux-gnu-real)
  if [[ -d ${dirs[-1]} ]]; then
    echo "${dirs[-1]}"
  else
    echo /usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real
  fi
}

if [[ ${1:-} == --check ]]; then
  check_imports
  exit
elif [[ $# -gt 0 ]]; then
  echo "usage: bench/peers/install.sh [--check]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install.sh: all peer packages are installed (${packages[*]})"
  check_imports
  exit
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "install.sh: missing ${missing[*]}; run this script as root" >&2
    exit 1
  fi
fi

log=$(mktemp "${TMPDIR:-/tmp}/peers-install.XXXXXX.log")
# step NAME COMMAND...: runs COMMAND with its output in the log; one line saying how it went.
step() {
  local name=$1 t0=$SECONDS
  shift
  echo "== $name: $*" >>"$log"
  if "$@" >>"$log" 2>&1; then
    echo "install.sh: $name: ok ($((SECONDS - t0)) s)"
  else
    local rc=$?
    echo "install.sh: $name: FAILED (exit $rc); last lines of the log:" >&2
    tail -n 15 "$log" | sed 's/^/  | /' >&2
    echo "install.sh: full log: $log" >&2
    exit 1
  fi
}

echo "install.sh: installing ${missing[*]} (log: $log)"
export DEBIAN_FRONTEND=noninteractive
step "apt-get update" "${sudo[@]}" apt-get update
step "apt-get install (${#missing[@]} missing package(s) and their dependencies)" \
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
if ! check_imports; then
  echo "install.sh: the packages are installed but an import fails (above); apt log: $log" >&2
  exit 1
fi
