#!/usr/bin/env bash
# Installs zapgram from an existing build into a temporary prefix and builds
# and runs the two consumer programs against that installed tree only:
#   tests/consumers/c    C, found with pkg-config (zapgram.pc), linked with
#                        libzapgram.so and with libzapgram.a
#   tests/consumers/cpp  C++, found with find_package(zapgram) (the CMake
#                        package), linked with zapgram::zapgram and
#                        zapgram::zapgram_static
# Each loads the Llama 3 tokenizer, compiles a grammar, fills masks and accepts
# tokens until EOS. Also checks the installed file list and the shared
# library's exports (scripts/check_exports.sh), and that the shared-library
# consumers load the installed libzapgram.so. The consumer sources are copied
# out of the tree so no build output lands in it.
# Usage: scripts/test_install.sh [BUILD_DIR]   (default: build, already built)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
data=${ZAPGRAM_DATA_DIR:-../shared/data}
tokenizer=$(realpath "$data/tokenizers/llama3.tokenizer.json")
work=$(mktemp -d "${TMPDIR:-/tmp}/zapgram-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
echo "== installed into $prefix:"
(cd "$prefix" && find . \( -type f -o -type l \) | sort | sed 's|^\./|  |')
libdir=$(dirname "$(find "$prefix" -name libzapgram.a)")
for expected in include/zapgram/zapgram.h include/zapgram/matcher.h include/zapgram/grammar.h \
                bin/zapgram; do
  [[ -e "$prefix/$expected" ]] || { echo "test_install: $expected not installed" >&2; exit 1; }
done
for expected in libzapgram.so libzapgram.a pkgconfig/zapgram.pc cmake/zapgram/zapgramConfig.cmake \
                cmake/zapgram/zapgramConfigVersion.cmake cmake/zapgram/zapgramTargets.cmake; do
  [[ -e "$libdir/$expected" ]] || { echo "test_install: $libdir/$expected not installed" >&2; exit 1; }
done
if find "$prefix/include" -type f | grep -v '/zapgram/' | grep -q .; then
  echo "test_install: headers outside include/zapgram/ were installed" >&2
  exit 1
fi
scripts/check_exports.sh "$libdir/libzapgram.so"

# The shared-library consumers must load the installed library.
# $1: the program; $2: LD_LIBRARY_PATH to run it with (empty: its RUNPATH).
check_loads_installed() {
  local resolved
  resolved=$(LD_LIBRARY_PATH=${2:-} ldd "$1" | awk '/libzapgram\.so/ { print $3 }')
  if [[ "$resolved" != "$libdir"/libzapgram.so.* ]]; then
    echo "test_install: $1 loads libzapgram from '$resolved', not from $libdir" >&2
    exit 1
  fi
}
check_static() {
  if ldd "$1" | grep -q libzapgram; then
    echo "test_install: $1 should not need libzapgram.so" >&2
    exit 1
  fi
}

cp -r tests/consumers "$work/src"
echo "== C consumer (pkg-config: $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --modversion zapgram))"
PKG_CONFIG_PATH=$libdir/pkgconfig make -s -C "$work/src/c"
check_loads_installed "$work/src/c/consumer" "$libdir"
check_static "$work/src/c/consumer-static"
LD_LIBRARY_PATH=$libdir "$work/src/c/consumer" "$tokenizer" | tee "$work/c.out"
"$work/src/c/consumer-static" "$tokenizer" | cmp -s - "$work/c.out" ||
  { echo "test_install: the static C consumer printed something else" >&2; exit 1; }

echo "== C++ consumer (find_package)"
cmake -S "$work/src/cpp" -B "$work/cpp-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cpp-build" >/dev/null
check_loads_installed "$work/cpp-build/consumer"
check_static "$work/cpp-build/consumer-static"
"$work/cpp-build/consumer" "$tokenizer" | tee "$work/cpp.out"
"$work/cpp-build/consumer-static" "$tokenizer" | cmp -s - "$work/cpp.out" ||
  { echo "test_install: the static C++ consumer printed something else" >&2; exit 1; }
echo "test_install: ok"
