#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: the Release build under ctest,
# then the same tests built with AddressSanitizer + UndefinedBehaviorSanitizer
# (iteration counts of the heavy differential tests are scaled down there).
# Usage: scripts/test.sh [--no-sanitizers]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=${JOBS:-2}

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

if [[ "${1:-}" != "--no-sanitizers" ]]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DZAPGRAM_SANITIZE=ON \
    -DZAPGRAM_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="-O1" >/dev/null
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi
