#!/usr/bin/env bash
# Writes the stress traces of issue 12 under OUT (default build/stress):
#   OUT/traces/llama3/deep-json.jsonl   builtin:json, 5,000 levels of nesting
#                                       (objects and arrays alternating, a number
#                                       at the bottom), one document;
#   OUT/traces/llama3/ambiguous.jsonl   s: s s | "a" over 200 bytes of "a", twice:
#                                       as Lark (lexed, OUT/grammars/ambiguous.lark)
#                                       and as GBNF (byte level, ambiguous.gbnf);
#   OUT/traces/llama3/wide-schema.jsonl a JSON Schema of one object with WIDE
#                                       (5,000) required string properties
#                                       (OUT/grammars/wide.schema.json) and a
#                                       document that fills it (issue 30: a big
#                                       schema's time to first mask).
# Token ids are the Llama 3 encodings (`zapgram trace`). Replay with e.g.
#   build/zapgram bench --tokenizer ../shared/data/tokenizers/llama3.tokenizer.json \
#       --trace build/stress/traces/llama3/deep-json.jsonl --json
# Usage: perf/make_stress_traces.sh [OUT] [LEVELS] [BYTES] [WIDE]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/stress}
levels=${2:-5000}
bytes=${3:-200}
wide=${4:-5000}
tokenizer=${ZAPGRAM_TOKENIZER:-../shared/data/tokenizers/llama3.tokenizer.json}
mkdir -p "$out/docs" "$out/grammars" "$out/traces/llama3"
python3 - "$out/docs" "$levels" "$bytes" "$wide" "$out/grammars" <<'PY'
import json, sys
out, levels, n, wide, grammars = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
names = [f"field_{i:05d}" for i in range(wide)]
schema = {"type": "object", "properties": {k: {"type": "string"} for k in names},
          "required": names, "additionalProperties": False}
with open(f"{grammars}/wide.schema.json", "w") as f:
    json.dump(schema, f)
with open(f"{out}/wide.json", "w") as f:
    f.write(json.dumps({k: f"value {i}" for i, k in enumerate(names)}))
opens, closes = [], []
for i in range(levels):
    if i % 2 == 0:
        opens.append('{"a": '); closes.append('}')
    else:
        opens.append('['); closes.append(']')
open(f"{out}/deep.json", "w").write("".join(opens) + "1" + "".join(reversed(closes)))
open(f"{out}/ambiguous.txt", "w").write("a" * n)
PY
printf 'start: s\ns: s s | "a"\n' > "$out/grammars/ambiguous.lark"
printf 'root ::= s\ns ::= s s | "a"\n' > "$out/grammars/ambiguous.gbnf"
build/zapgram trace --tokenizer "$tokenizer" --grammar builtin:json "$out/docs/deep.json" \
    > "$out/traces/llama3/deep-json.jsonl"
for ext in lark gbnf; do
  build/zapgram trace --tokenizer "$tokenizer" --grammar grammars/ambiguous.$ext "$out/docs/ambiguous.txt"
done > "$out/traces/llama3/ambiguous.jsonl"
build/zapgram trace --tokenizer "$tokenizer" --grammar schema:grammars/wide.schema.json "$out/docs/wide.json" \
    > "$out/traces/llama3/wide-schema.jsonl"
echo "wrote $out/traces/llama3/deep-json.jsonl, ambiguous.jsonl and wide-schema.jsonl"
