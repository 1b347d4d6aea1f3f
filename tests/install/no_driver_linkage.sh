#!/usr/bin/env bash
# A build with CUDA must start on machines without an NVIDIA driver, so no tenax library or
# program may link the driver (libcuda) or NVML (libnvidia-ml) directly: the driver API is reached
# through the runtime and NVML is loaded at run time. Fails naming each offending file.
# Usage: no_driver_linkage.sh <file>...
set -euo pipefail
status=0
for file in "$@"; do
  if readelf -d "$file" | grep -E 'NEEDED.*\[(libcuda\.so|libnvidia-ml\.so)' ; then
    echo "$file links the NVIDIA driver directly" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "checked $# files: none links libcuda or libnvidia-ml"
exit $status
