#!/usr/bin/env bash
# Sets up, builds and runs zapgram's main job on a bundled default: checks the
# bundled RFC 8259 JSON grammar, parses real JSON documents with it (printing
# acceptance and the retained Earley items with and without pruning), parses a
# real Java file with SynCode's Lark grammar, then computes token masks with
# the Llama 3 tokenizer: one mask after a prefix, and the teacher-forced mask
# benchmark over the first 40 documents of the json-docs trace.
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
data=../shared/data
java=$(find "$data/docs/java" -name '*.java' | sort | head -n 1)
build/zapgram parse "$data/grammars/lark/syncode/java.lark" "$java"
build/zapgram mask builtin:json --tokenizer "$data/tokenizers/llama3.tokenizer.json" \
  --prefix '{"name": "zap' --show 8
build/zapgram bench --tokenizer "$data/tokenizers/llama3.tokenizer.json" \
  --trace "$data/traces/llama3/json-docs.jsonl" --limit 40
