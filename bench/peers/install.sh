#!/usr/bin/env bash
# Installs the peer codes that bench/peers/run.py compares tenax against (Debian 12 packages):
# PETSc 3.18 through petsc4py, mpi4py, Open MPI, SciPy 1.10, NumPy, Eigen 3.4, PyTorch 1.13 (the
# training peer, bench/peers/torch_mlp.py) and OpenBLAS (without it PyTorch and NumPy use the
# reference BLAS).
# Only what is missing is installed; run as root (or with sudo available).
set -euo pipefail

packages=(python3-petsc4py python3-mpi4py python3-scipy python3-numpy libeigen3-dev openmpi-bin
          python3-torch libopenblas0-pthread)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install.sh: all peer packages are installed (${packages[*]})"
  exit 0
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

echo "install.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
