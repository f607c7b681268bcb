#!/bin/bash
# Compile-time instruction counts (noise-free on a shared machine):
#   scripts/compile_callgrind.sh BIN TRACE.jsonl [OUT.callgrind]
# runs `BIN bench --lenient` on TRACE under callgrind, collecting only inside
# zapgram::Grammar::Load* and zapgram::CompiledGrammar::Compile*, and prints
# the total. Cut the documents to a token or two (the masks are not counted
# anyway) and put a warm-up document first (e.g. builtin:json, whose compile
# also builds the vocabulary's shared token trie, ~225 M on Llama 3); report
# "net" = total minus a run of the warm-up document alone. Inspect with
# callgrind_annotate --inclusive=yes OUT.
set -euo pipefail
BIN=$1
TRACE=$2
OUT=${3:-/tmp/compile.callgrind}
ROOT=$(cd "$(dirname "$0")/.." && pwd)/../shared/data
valgrind --tool=callgrind --callgrind-out-file="$OUT" \
  --toggle-collect='zapgram::Grammar::Load*' --toggle-collect='zapgram::CompiledGrammar::Compile*' \
  "$BIN" bench --json --quiet --lenient --data-root "$ROOT" \
  --tokenizer "$ROOT/tokenizers/llama3.tokenizer.json" --trace "$TRACE" > /dev/null 2> "$OUT.stderr"
grep -E '^(summary|totals):' "$OUT" | head -1
