#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a GPU machine that has the CUDA toolkit (or its Python
# wheels) but none of the Debian packages: the release build's programs (the GPU tests, the
# examples, bench_gpu, tenax), tenax's libraries with the communicator plugins, and every other
# library they need except the C library, the NVIDIA driver, cuBLAS (~600 MB) and NCCL (~218 MB),
# which cannot travel within the 64 MiB a device call carries: the machine has them, as the
# toolkit's or as Python wheels (nvidia-cublas, nvidia-nccl-cu13), and run-gpu-check.sh finds
# them there (cuBLAS is loaded at run time: TENAX_CUBLAS_LIBRARY). The CUDA runtime (cudart,
# 0.7 MB), which every program needs, travels: the one the programs were built against.
# The result is one compressed archive, gpu-bundle.tar.xz (about 20 MB, under the 64 MiB a
# device call may carry), git-ignored. On the GPU machine:
#   tar xf gpu-bundle.tar.xz && gpu-bundle/run-gpu-check.sh
# Usage: scripts/gpu-bundle.sh [build folder, default build] [archive, default gpu-bundle.tar.xz]
set -euo pipefail
archive=$(realpath -m "${2:-$(dirname "$0")/../gpu-bundle.tar.xz}")
cd "$(dirname "$0")/.."
build=${1:-build}
[ -x "$build/bin/tenax" ] || { echo "gpu-bundle: $build/bin/tenax is missing: build the release preset first (scripts/test.sh release)" >&2; exit 1; }
ls "$build"/lib/libtenax_kernels.so* >/dev/null 2>&1 || { echo "gpu-bundle: $build has no CUDA-enabled shared libraries" >&2; exit 1; }
grep -q 'TENAX_CUDA_ENABLED:INTERNAL=ON\|TENAX_WITH_CUDA:STRING=\(ON\|AUTO\)' "$build/CMakeCache.txt" ||
  { echo "gpu-bundle: $build was configured without CUDA" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
bundle=$stage/gpu-bundle
mkdir -p "$bundle/build/bin" "$bundle/build/lib" "$bundle/scripts"
programs=("$build"/bin/*_gpu_test "$build"/bin/bench_gpu "$build"/bin/tenax "$build"/bin/heat2d
          "$build"/bin/gray_scott
          "$build"/bin/poisson "$build"/bin/train_mlp "$build"/bin/train_gpt)
cp "${programs[@]}" "$bundle/build/bin/"
cp -P "$build"/lib/libtenax_*.so* "$bundle/build/lib/"
cp scripts/gpu-check.sh "$bundle/scripts/"
# Every other library the programs and plugins need, found by ldd here.
ldd "${programs[@]}" "$build"/lib/libtenax_*.so.0 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libgcc_s|ld-linux[^/]*)\.so|/libcuda\.so|/libnvidia-|/libnccl\.so|/libcublas(Lt)?\.so|/work/|'"$PWD"'/' |
  while read -r lib; do cp -L "$lib" "$bundle/build/lib/"; done
ls "$bundle"/build/lib/libcudart.so.* >/dev/null 2>&1 ||
  { echo "gpu-bundle: no libcudart among the programs' libraries (ldd found none)" >&2; exit 1; }
cp scripts/gpu-preflight.sh "$bundle/scripts/"
mkdir -p "$bundle/bench/peers" && cp bench/peers/gpu_anchors.py "$bundle/bench/peers/"
# train_gpt's PyTorch model (the gpt-* anchors) and a text for it to read (the GPU machine has no
# Debian packages, so not the example's default file).
cp tests/examples/train_gpt_reference.py "$bundle/bench/peers/"
if [ -f /usr/share/games/fortunes/songs-poems ]; then
  cp /usr/share/games/fortunes/songs-poems "$bundle/bench/peers/gpt-text.txt"
fi
cat >"$bundle/run-gpu-check.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled pre-flight, then gpu-check: the bundle's libraries first, then the machine's
# CUDA libraries.
here=$(cd "$(dirname "$0")" && pwd)
cuda_libs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/lib 2>/dev/null | paste -sd: -)
for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  for dir in "$site"/nvidia/*/lib; do [ -d "$dir" ] && cuda_libs=$cuda_libs:$dir; done
done
export LD_LIBRARY_PATH=$here/build/lib:$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${OUT:-$here/build/gpu-check}
mkdir -p "$out"
cd "$here" && TENAX_BUILD_DIR=build scripts/gpu-preflight.sh 2>&1 | tee "$out/preflight.txt"
TENAX_BUILD_DIR=build exec scripts/gpu-check.sh "$@"
RUN
chmod +x "$bundle/run-gpu-check.sh"
tar -C "$stage" -cJf "$archive" gpu-bundle
echo "$archive: $(du -h "$archive" | cut -f1) ($(ls "$bundle/build/bin" | wc -l) programs, $(ls "$bundle/build/lib" | wc -l) libraries)"
