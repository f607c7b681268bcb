#!/usr/bin/env bash
# The budget study of issue 14 (docs/sampling.md, "Budgets and SMC"): with
# the Llama 3 tokenizer and order-4 n-gram LMs trained on real documents
# (scripts/train_study_models.sh: json.zgngram on the JSON files of
# docs/json, sql.zgngram on the SQL statements of docs/sql; trained into
# OUT_DIR/models when missing), at several token budgets k (= --max-tokens):
#   json   builtin:json (json model)                     k = 16 32
#   schema schema:jsonschema/maskbench/Github_easy---o90448.schema.json  k = 24
#   sql    grammars/lark/syncode/sql.lark (sql model)     k = 16 (code: a
#          lexed Lark grammar)
#   tiny   regex:\{"a": (true|false|null|[0-9])\}         k = 8 (--exact: the
#          target is enumerated, so the distance to it is reported)
# methods: gcd (locally masked), gcd --budget-aware, smc K = 4, 16, 64
# (budget-aware proposals), cars. GCD draws N samples, SMC runs N_SMC runs
# (one sample each), CARS wants N samples within MAX_LM_CALLS model calls;
# each run is cut at RUN_TIMEOUT seconds (then it has no row).
# Prints a Markdown table (also OUT_DIR/budget_table.md): constraint
# satisfaction (valid / draws, or valid particles / particles for SMC), LM
# calls per valid sample, TV to the exact target (tiny only), seconds.
# Usage: scripts/run_budget_study.sh OUT_DIR [ZAPGRAM_BINARY]
# Environment: N (20), N_SMC (10), MAX_LM_CALLS (20000), RUN_TIMEOUT (60), ZAPGRAM_DATA_DIR.
set -euo pipefail
source "$(dirname "$0")/study_args.sh"
n=${N:-20}
n_smc=${N_SMC:-10}
max_lm_calls=${MAX_LM_CALLS:-20000}
run_timeout=${RUN_TIMEOUT:-60}
models=$out/models
for model in json sql; do
  if [[ ! -f $models/$model.zgngram ]]; then
    MODELS=$model ZAPGRAM_DATA_DIR=$data "$repo/scripts/train_study_models.sh" "$models" "$zapgram"
  fi
done

run() {  # NAME SPEC K EXACT METHOD-ARGS... (the model: sql for sql, else json)
  local name=$1 spec=$2 k=$3 exact=$4
  shift 4
  local model=json
  [[ $name == sql ]] && model=sql
  local tag
  tag=$(echo "$*" | tr ' ' '_' | tr -d '-')
  local base=$out/$name.k$k.$tag
  local status=0 count=$n
  [[ $* == *smc* ]] && count=$n_smc
  timeout "$run_timeout" nice "$zapgram" sample "$spec" --tokenizer "$tokenizer" \
    --lm "ngram:$models/$model.zgngram" -n "$count" --seed 1 --max-tokens "$k" \
    --max-lm-calls "$max_lm_calls" --jsonl --quiet --stats-json "$base.stats.json" $exact "$@" \
    >"$base.samples.jsonl" 2>"$base.log" || status=$?
  if [[ $status -gt 1 ]]; then
    echo "   $name k=$k $*: exit status $status (see $base.log)" >&2
    rm -f "$base.stats.json"
  fi
}

methods=("--method gcd" "--method gcd --budget-aware" "--method smc --particles 4 --budget-aware"
         "--method smc --particles 16 --budget-aware" "--method smc --particles 64 --budget-aware"
         "--method cars")
for k in 16 32; do
  for m in "${methods[@]}"; do run json builtin:json "$k" "" $m; done
done
for k in 24; do
  for m in "${methods[@]}"; do
    run schema "schema:$data/jsonschema/maskbench/Github_easy---o90448.schema.json" "$k" "" $m
  done
done
for m in "${methods[@]}"; do run sql "$data/grammars/lark/syncode/sql.lark" 16 "" $m; done
for m in "${methods[@]}"; do run tiny 'regex:\{"a": (true|false|null|[0-9])\}' 8 --exact $m; done

python3 - "$out" <<'EOF' | tee "$out/budget_table.md"
import glob, json, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "*.stats.json"))):
    s = json.load(open(path))
    name, k, tag = os.path.basename(path)[:-len(".stats.json")].split(".", 2)
    method = tag.replace("_", " ").replace("method ", "")
    if s["method"] == "smc":
        sat = f"{s['particles_valid']}/{s['particles_total']} particles"
        rate = s["particles_valid"] / max(1, s["particles_total"])
    else:
        sat = f"{s['valid']}/{s['draws']} draws"
        rate = s["valid"] / max(1, s["draws"])
    calls = s["lm_calls"] / s["valid"] if s["valid"] else float("inf")
    tv = s.get("exact", {}).get("tv")
    rows.append((name, int(k[1:]), method, sat, rate, s["valid"], calls, tv, s["seconds"]))
order = {"json": 0, "schema": 1, "sql": 2, "tiny": 3}
rows.sort(key=lambda r: (order.get(r[0], 9), r[1], r[2]))
print("| grammar | k | method | satisfied | rate | samples | LM calls / sample | TV to exact | s |")
print("|---|---|---|---|---|---|---|---|---|")
for name, k, method, sat, rate, valid, calls, tv, sec in rows:
    tv_text = "—" if tv is None else f"{tv:.3f}"
    print(f"| {name} | {k} | {method} | {sat} | {rate:.3f} | {valid} | {calls:.1f} | {tv_text} | {sec:.1f} |")
EOF
