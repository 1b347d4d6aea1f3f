#!/usr/bin/env bash
# The pre-flight of a GPU check, in seconds: what the machine is (the GPU, the driver and the CUDA
# version it supports), which CUDA runtime, cuBLAS and NCCL the programs will load and from where,
# any library a program or plugin cannot find, and the peers (PyTorch, CuPy) the anchors need.
# It changes nothing and always exits 0; each thing that will stop the check is a line beginning
# "PREFLIGHT PROBLEM:" (grep for it). scripts/gpu-bundle.sh runs it before scripts/gpu-check.sh.
# Usage: [TENAX_BUILD_DIR=build] scripts/gpu-preflight.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 0
build_dir=${TENAX_BUILD_DIR:-build}
problem() { echo "PREFLIGHT PROBLEM: $*"; }
section() { printf '\n== %s\n' "$*"; }

echo "tenax gpu pre-flight: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on ${HOSTNAME:-?} ($(uname -srm))"
echo "CPUs: $(nproc), memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"

section "GPU and driver (nvidia-smi)"
if command -v nvidia-smi >/dev/null; then
  timeout -k 5 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,clocks.max.sm,compute_mode \
    --format=csv 2>&1 || problem "nvidia-smi --query-gpu failed"
  timeout -k 5 20 nvidia-smi 2>&1 | grep -m1 'CUDA Version' | sed 's/^[| ]*//'
else
  problem "nvidia-smi not found: no NVIDIA driver on this machine, or its tools are not on PATH"
fi
ls /dev/nvidia* >/dev/null 2>&1 && echo "device files: $(ls /dev/nvidia* | paste -sd' ' -)" ||
  problem "no /dev/nvidia* device files"

section "Libraries the programs load"
bin=$build_dir/bin
lib=$build_dir/lib
if [[ ! -x $bin/tenax ]]; then
  problem "$bin/tenax is missing: TENAX_BUILD_DIR=$build_dir names no build"
else
  # cudart is linked: ldd says which file each program gets.
  ldd "$bin/tenax" | grep -E 'cudart' | sed 's/^[[:space:]]*/tenax: /'
  missing=$(for f in "$bin"/* "$lib"/libtenax_*.so.0; do
    [[ -f $f ]] || continue
    ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^[[:space:]]*|$(basename "$f"): |"
  done | sort -u)
  if [[ -n $missing ]]; then
    while read -r line; do problem "a library is not found: $line"; done <<<"$missing"
  else
    echo "every program and plugin finds its libraries (ldd)"
  fi
fi
# cuBLAS and NCCL are loaded at run time: where they are.
echo "TENAX_CUBLAS_LIBRARY=${TENAX_CUBLAS_LIBRARY:-(unset)}"
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-(unset)}"
found_cublas="" found_nccl=""
dirs=()
IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
for dir in "${dirs[@]}" /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [[ -n $dir && -d $dir ]] || continue
  for f in "$dir"/libcublas.so.1[0-9] "$dir"/libnccl.so.2 "$dir"/libcudart.so.1[0-9]; do
    [[ -e $f ]] || continue
    echo "found: $f -> $(readlink -f "$f")"
    case $f in *cublas*) found_cublas=1 ;; *nccl*) found_nccl=1 ;; esac
  done
done
ldconfig -p 2>/dev/null | grep -E 'lib(cublas|nccl|cudart|cuda|nvidia-ml)\.so' | sed 's/^[[:space:]]*/ldconfig: /'
ldconfig -p 2>/dev/null | grep -q 'libcublas\.so' && found_cublas=1
ldconfig -p 2>/dev/null | grep -q 'libnccl\.so' && found_nccl=1
[[ -n ${TENAX_CUBLAS_LIBRARY:-} ]] && found_cublas=1
[[ -n $found_cublas ]] || problem "no cuBLAS on the library path, in ldconfig or TENAX_CUBLAS_LIBRARY (GEMM on the GPU will fail)"
[[ -n $found_nccl ]] || echo "no NCCL on the library path or in ldconfig (only multi-rank device runs need it)"

section "Peers (the anchors)"
if command -v python3 >/dev/null; then
  timeout -k 5 60 python3 - <<'PY' 2>&1
import importlib
for name in ("torch", "cupy", "numpy"):
    try:
        m = importlib.import_module(name)
        extra = ""
        if name == "torch":
            extra = f" cuda {m.version.cuda}, sees a GPU: {m.cuda.is_available()}"
        print(f"{name} {m.__version__}{extra}")
    except Exception as e:  # noqa: BLE001 - reported
        print(f"{name}: not importable ({type(e).__name__}: {e})")
PY
else
  echo "no python3: the anchors (bench/peers/gpu_anchors.py) cannot run"
fi
exit 0
