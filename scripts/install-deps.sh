#!/usr/bin/env bash
# Installs the Debian packages tenax builds with, when any is missing (and the fortunes, the
# text train_gpt learns by default). Non-interactive; needs
# root (or sudo) only when something has to be installed.
#   scripts/install-deps.sh              what the build and the demo need
#   scripts/install-deps.sh --for-tests  also what the tests use beyond the build: Chromium
#                                        (tenax report's pages rendered in a real browser) and
#                                        tmux (tenax watch in a real terminal) and Doxygen
#                                        (the API reference, built by a test) and PyTorch
#                                        (the reference train_gpt is compared with)
set -euo pipefail

packages=(cmake ninja-build g++ ccache pkg-config python3 python3-numpy python3-h5py
          libeigen3-dev libhdf5-dev hdf5-tools libopenmpi-dev openmpi-bin
          libgtest-dev libgmock-dev libbenchmark-dev
          libcli11-dev libfmt-dev nlohmann-json3-dev libopenblas-dev zlib1g-dev
          fortunes)
case "${1:-}" in
  --for-tests) packages+=(chromium tmux doxygen python3-torch) ;;
  "") ;;
  *) echo "install-deps: unknown option '$1'; use --for-tests or nothing" >&2; exit 2 ;;
esac

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
# Quiet: one line per step here, the package manager's full output in a log file.
log=$(mktemp "${TMPDIR:-/tmp}/tenax-install-deps.XXXXXX.log")
step() {
  local what=$1
  shift
  local start=$SECONDS
  if "$@" >>"$log" 2>&1; then
    echo "install-deps: $what: ok ($((SECONDS - start)) s)"
  else
    echo "install-deps: $what: FAILED; the last lines of $log:" >&2
    tail -n 15 "$log" >&2
    exit 1
  fi
}
echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]} (log: $log)"
export DEBIAN_FRONTEND=noninteractive
step "apt-get update" "${sudo_cmd[@]}" apt-get update
step "apt-get install" "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
