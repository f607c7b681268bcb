#!/usr/bin/env bash
# Installs the Debian packages zapgram builds with, when any is missing.
# Idempotent; needs root (or sudo) only when something must be installed.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libabsl-dev libre2-dev libmimalloc-dev nlohmann-json3-dev libicu-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # The Python package (python/) and its tests and examples.
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-torch python3-pytest
  python3-jsonschema python3-lark python3-setuptools python3-pip python3-venv
  # The libFuzzer targets (fuzz/, scripts/fuzz.sh): clang 19, its libFuzzer and
  # sanitizer runtimes, llvm-symbolizer for readable reports.
  clang-19 libfuzzer-19-dev libclang-rt-19-dev llvm-19
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
