#!/usr/bin/env bash
# The sampler study of issue 6's closing note: every method (cars, ars,
# rsft, rs, gcd) on three grammars with the Llama 3 tokenizer and n-gram
# models trained on text that often violates the grammar
# (scripts/train_study_models.sh):
#   arithmetic  grammars/gbnf/llama.cpp/arithmetic.gbnf   arithmetic model, M = 64
#   json        schema:jsonschema/maskbench/Github_easy---o90448.schema.json
#               (an object whose optional comment / onContentLoad / onLoad
#               keys are typed; other keys allowed)     json model, M = 64
#   go          grammars/lark/syncode/go.lark             go model, M = 32
# Each run wants 100 valid samples with at most MAX_DRAWS draws and
# MAX_LM_CALLS model calls (a work cap that still writes the stats), a trie
# budget of TRIE_MB, seed 1; runs go one at a time under nice, each capped
# at RUN_TIMEOUT seconds of wall time. Writes OUT_DIR/<grammar>.<method>.stats.json,
# .samples.jsonl and .log, and prints a Markdown table (also OUT_DIR/table.md).
# Usage: scripts/run_sampler_study.sh OUT_DIR [ZAPGRAM_BINARY]
# Environment: ZAPGRAM_DATA_DIR (default ../shared/data next to the repo),
# MAX_DRAWS (4000), MAX_LM_CALLS (150000), TRIE_MB (512), RUN_TIMEOUT (900),
# METHODS ("cars ars rsft rs gcd"), GRAMMARS ("arithmetic json go").
# The models are trained into OUT_DIR/models when missing.
set -euo pipefail
source "$(dirname "$0")/study_args.sh"
max_draws=${MAX_DRAWS:-4000}
max_lm_calls=${MAX_LM_CALLS:-150000}
trie_mb=${TRIE_MB:-512}
run_timeout=${RUN_TIMEOUT:-900}
methods=${METHODS:-cars ars rsft rs gcd}
grammars=${GRAMMARS:-arithmetic json go}

models=$out/models
if [[ ! -f $models/arithmetic.zgngram || ! -f $models/json.zgngram || ! -f $models/go.zgngram ]]; then
  ZAPGRAM_DATA_DIR=$data "$repo/scripts/train_study_models.sh" "$models" "$zapgram"
fi

for grammar in $grammars; do
  case $grammar in
    arithmetic) spec=$data/grammars/gbnf/llama.cpp/arithmetic.gbnf; max_tokens=64 ;;
    json) spec=schema:$data/jsonschema/maskbench/Github_easy---o90448.schema.json; max_tokens=64 ;;
    go) spec=$data/grammars/lark/syncode/go.lark; max_tokens=32 ;;
    *) echo "unknown grammar $grammar" >&2; exit 2 ;;
  esac
  for method in $methods; do
    base=$out/$grammar.$method
    echo "== $grammar $method" >&2
    status=0
    timeout "$run_timeout" nice "$zapgram" sample "$spec" --tokenizer "$tokenizer" \
      --lm "ngram:$models/$grammar.zgngram" --method "$method" -n 100 --seed 1 \
      --max-tokens "$max_tokens" --max-draws "$max_draws" --max-lm-calls "$max_lm_calls" \
      --max-trie-mb "$trie_mb" --jsonl --stats-json "$base.stats.json" \
      >"$base.samples.jsonl" 2>"$base.log" || status=$?
    if [[ $status -gt 1 ]]; then
      echo "   exit status $status (see $base.log)" >&2
      rm -f "$base.stats.json"
    fi
    tail -n 1 "$base.log" >&2
  done
done

python3 - "$out" "$grammars" "$methods" <<'EOF' | tee "$out/table.md"
import json, os, sys
out, grammars, methods = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
print("| grammar | method | valid / draws | LM calls | trie nodes | trie MB (peak) | KB / node | "
      "stripped nodes | B / stripped node | evictions | strips | refetches | trie reuse | p_root | frozen at | s | "
      "valid per 100 draws |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for g in grammars:
    for m in methods:
        path = os.path.join(out, f"{g}.{m}.stats.json")
        if not os.path.exists(path):
            print(f"| {g} | {m} | (no stats: see {g}.{m}.log) |||||||||||||||")
            continue
        s = json.load(open(path))
        blocks = s["acceptance_blocks"]["valid"]
        curve = " ".join(str(v) for v in blocks)
        trie = m != "gcd"
        def t(x):
            return x if trie else "—"
        print(f"| {g} | {m} | {s['valid']} / {s['draws']} ({s['stop']}) | {s['lm_calls']} | {t(s['trie_nodes'])} | "
              f"{t('%.0f (%.0f)' % (s['trie_bytes'] / 2**20, s['trie_peak_bytes'] / 2**20))} | "
              f"{t('%.0f' % (s['trie_bytes_per_node'] / 1024))} | {t(s['trie_stripped_nodes'])} | "
              f"{t('%.0f' % (s['trie_stripped_bytes'] / max(1, s['trie_stripped_nodes'])))} | "
              f"{t(s['trie_evictions'])} | {t(s['trie_strips'])} | "
              f"{t(s['trie_refetches'])} | {t('%.3f' % s['trie_reuse'])} | {t('%.3g' % s['root_mass'])} | "
              f"{t(s['frozen_at_draw'] if s['trie_frozen'] else '—')} | {s['seconds']:.0f} | {curve} |")
EOF
