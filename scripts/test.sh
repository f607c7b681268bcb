#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: the Release build under ctest
# (the GoogleTest suites and, as Python.pytest, the Python package's tests
# against build/python), then zapgram installed from build/ into a temporary
# prefix with C and C++ programs built against it (scripts/test_install.sh),
# then the package installed with pip into a venv as
# a user installs it (reusing build/'s module) and its examples run from
# there, then the C++ tests built with AddressSanitizer +
# UndefinedBehaviorSanitizer (iteration counts of the heavy differential tests
# are scaled down there; no Python module: a sanitized library inside the
# interpreter needs the sanitizer runtime preloaded), then the thread test
# under ThreadSanitizer and a short campaign of every libFuzzer target
# (scripts/fuzz.sh --ci).
# Usage: scripts/test.sh [--no-sanitizers]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=${JOBS:-2}

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
scripts/test_install.sh build

# pip install from this checkout into a venv that sees Debian's packages.
/usr/bin/python3 -m venv --system-site-packages build/venv
ZAPGRAM_BUILD_DIR="$PWD/build" build/venv/bin/pip install -q --no-build-isolation --no-deps .
(cd build && venv/bin/python -c 'import zapgram; assert "site-packages" in zapgram.__file__, zapgram.__file__')
build/venv/bin/python examples/json_schema_generation.py --schemas 4 --samples 2 --max-tokens 160 | tail -n 1
build/venv/bin/python examples/lark_generation.py --samples 4 --batch 4 --max-tokens 96 | tail -n 1

if [[ "${1:-}" != "--no-sanitizers" ]]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DZAPGRAM_SANITIZE=ON \
    -DZAPGRAM_BUILD_BENCH=OFF -DZAPGRAM_BUILD_PYTHON=OFF -DCMAKE_CXX_FLAGS="-O1" >/dev/null
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"

  # ThreadSanitizer: the engine and the one test that shares a compiled
  # grammar across threads (tests/threads/); any report fails.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZAPGRAM_TSAN=ON \
    -DZAPGRAM_BUILD_BENCH=OFF -DZAPGRAM_BUILD_PYTHON=OFF -DZAPGRAM_BUILD_SHARED=OFF >/dev/null
  cmake --build build-tsan -j "$jobs" --target zapgram_thread_tests
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/zapgram_thread_tests

  # libFuzzer (clang-19): every target replays its seeds, then fuzzes for
  # 20 s (scripts/fuzz.sh --ci); a crash, hang, leak or sanitizer report fails.
  scripts/fuzz.sh --ci
fi
