#!/usr/bin/env bash
# Sets up, builds and runs zapgram's main job on a bundled default: checks the
# bundled RFC 8259 JSON grammar and parses real JSON documents with it,
# printing acceptance and the retained Earley items with and without pruning.
# Usage: scripts/run.sh [GRAMMAR FILE...]   (default: builtin:json on ../shared/data docs)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${JOBS:-2}" --target zapgram
if (($#)); then
  exec build/zapgram parse --stats "$@"
fi
build/zapgram check builtin:json
# The four largest real JSON documents of the shared data.
mapfile -t docs < <(find ../shared/data/docs/json -name '*.json' -printf '%s %p\n' | sort -k1,1nr -k2 | head -n 4 | cut -d' ' -f2-)
# The last file is bundled and deliberately broken (a trailing comma): it is
# rejected with its line, column and the bytes expected there.
build/zapgram parse builtin:json --stats "${docs[@]}" tests/testdata/demo/broken.json || true
