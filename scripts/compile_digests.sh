#!/bin/bash
# Compiled-table digests of every JSON Schema of a trace, to show a compile-time
# change left the tables alone:
#   scripts/compile_digests.sh BIN TRACE.jsonl OUT.txt [DATA_ROOT]
# writes, per distinct schema, a `== SPEC` line and `zapgram check --lenient
# --dump --digest` output (the grammar as read, each transform's counts, the
# compiled counts and the tables digest; no timings). Compare two builds with
# `cmp A.txt B.txt` (or diff to see which schemas differ).
set -euo pipefail
BIN=$1
TRACE=$2
OUT=$3
ROOT=${4:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}
python3 -c '
import json, sys
seen = set()
for line in open(sys.argv[1]):
    g = json.loads(line)["grammar"]
    if g.startswith("schema:") and g not in seen:
        seen.add(g)
        print(g)
' "$TRACE" > "$OUT.specs"
: > "$OUT"
while read -r spec; do
  echo "== $spec" >> "$OUT"
  "$BIN" check --lenient --dump --digest --data-root "$ROOT" "$spec" >> "$OUT" 2>&1 || true
done < "$OUT.specs"
rm -f "$OUT.specs"
echo "$(grep -c '^== ' "$OUT") schemas, $(grep -c '^tables digest' "$OUT") digests -> $OUT"
