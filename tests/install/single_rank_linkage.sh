#!/usr/bin/env bash
# What a single-rank run loads: no tenax library or program may need libmpi, libnccl or cuBLAS
# (the communicators are plugins loaded for several ranks, cuBLAS is loaded at the first GPU
# product), so one process starts where those are not installed, and starts fast (libcublasLt's
# initialisers alone took a second). Checks the direct and the transitive needs (ldd) of each
# file. Fails naming each offending file and library.
# Usage: single_rank_linkage.sh <file>...
set -euo pipefail
status=0
for file in "$@"; do
  if offending=$(ldd "$file" | grep -E '^\s*(libmpi|libnccl|libcublas)[^ ]*' -o); then
    echo "$file needs, for a single-rank run: $(echo $offending)" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "checked $# files: none needs libmpi, libnccl or cuBLAS"
exit $status
