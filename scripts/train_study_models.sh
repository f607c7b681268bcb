#!/usr/bin/env bash
# Trains the four n-gram LMs of the sampler study (issue 6), all with the
# Llama 3 tokenizer, into OUT_DIR (never into the repo):
#   json.zgngram        order 4, every docs/json/**/*.json file as a document
#                       (real JSON files: most violate any given schema, and
#                       the smoothed model's samples often are not JSON at all)
#   arithmetic.zgngram  order 3, a generated corpus of arithmetic lines, about
#                       half with injected errors (scripts/make_arithmetic_corpus.py;
#                       the corpus is written to OUT_DIR/arithmetic.txt), one
#                       document per paragraph; target grammar
#                       grammars/gbnf/llama.cpp/arithmetic.gbnf
#   go.zgngram          order 4, every docs/go/**/*.go file as a document
#                       (target grammar grammars/lark/syncode/go.lark)
#   sql.zgngram         order 4, every statement of docs/sql/statements.jsonl
#                       as a document (written to OUT_DIR/sql.txt, blank-line
#                       separated; target grammar grammars/lark/syncode/sql.lark)
# Usage: scripts/train_study_models.sh OUT_DIR [ZAPGRAM_BINARY]
# ZAPGRAM_DATA_DIR overrides the data folder (default: ../shared/data next to the repo).
# MODELS picks some of them (default "json arithmetic go sql").
set -euo pipefail
source "$(dirname "$0")/study_args.sh"

train() {  # NAME ORDER [OPTIONS...] FILES...
  local name=$1 order=$2
  shift 2
  echo "== $name"
  "$zapgram" ngram train --tokenizer "$tokenizer" --order "$order" -o "$out/$name.zgngram" "$@"
}

models=" ${MODELS:-json arithmetic go sql} "
if [[ $models == *" json "* ]]; then
  mapfile -d '' json_files < <(find "$data/docs/json" -type f -name '*.json' -print0 | sort -z)
  train json 4 "${json_files[@]}"
fi
if [[ $models == *" arithmetic "* ]]; then
  python3 "$repo/scripts/make_arithmetic_corpus.py" "$out/arithmetic.txt" --paragraphs 4000 --seed 1
  train arithmetic 3 --per-paragraph "$out/arithmetic.txt"
fi
if [[ $models == *" go "* ]]; then
  mapfile -d '' go_files < <(find "$data/docs/go" -type f -name '*.go' -print0 | sort -z)
  train go 4 "${go_files[@]}"
fi

if [[ $models == *" sql "* ]]; then
  python3 - "$data/docs/sql/statements.jsonl" "$out/sql.txt" <<'EOF'
import json, sys
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as dst:
    for line in src:
        text = json.loads(line)["text"].strip()
        if text:
            dst.write(text.replace("\n\n", "\n") + "\n\n")
EOF
  train sql 4 --per-paragraph "$out/sql.txt"
fi

ls -l "$out"/*.zgngram
