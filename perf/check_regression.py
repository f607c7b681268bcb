#!/usr/bin/env python3
"""Mask-speed regression check: `zapgram bench` on a fixed sample of the dev
traces, compared with perf/regression_baseline.json.

Each case runs REPEATS times; the minimum of each figure is kept (the
machines are shared: the minimum is the least disturbed run). A case fails
when its minimum mean or p50 mask time exceeds the baseline times TOLERANCE.

Why 1.5: on the 2-core development machine, two checks back to back (each
the minimum of 3 runs) differed by 11% in mean and 8% in p50 mask time while
another build was running; 1.5 keeps that noise from failing the check,
while the regressions this guards against (a lost cache, lost token sets, an
accidental full trie walk) cost 10x or more (bench --no-cache: 16x the mean).

usage: perf/check_regression.py [--build DIR] [--update] [--repeats N] [--tolerance X]
exit status: 0 no regression, 1 regression, 2 could not run.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "..", "shared", "data")
BASELINE = os.path.join(HERE, "regression_baseline.json")
# (name, tokenizer, trace set, documents)
CASES = [
    ("json-docs/llama3", "llama3", "json-docs", 40),
    ("sql/llama3", "llama3", "sql", 40),
]


def run_case(build, tokenizer, trace, limit):
    cmd = [os.path.join(build, "zapgram"), "bench", "--json", "--limit", str(limit),
           "--tokenizer", os.path.join(DATA, "tokenizers", tokenizer + ".tokenizer.json"),
           "--trace", os.path.join(DATA, "traces", tokenizer, trace + ".jsonl")]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--update", action="store_true", help="write a new baseline")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=1.5)
    args = parser.parse_args()
    results = {}
    for name, tokenizer, trace, limit in CASES:
        runs = [run_case(args.build, tokenizer, trace, limit) for _ in range(args.repeats)]
        if any(r["accepted"] != runs[0]["accepted"] for r in runs):
            print(f"{name}: verdicts differ between runs", file=sys.stderr)
            return 2
        results[name] = {
            "mask_us_mean": min(r["mask_us"]["mean"] for r in runs),
            "mask_us_p50": min(r["mask_us"]["p50"] for r in runs),
            "accepted": runs[0]["accepted"],
        }
    if args.update:
        with open(BASELINE, "w") as f:
            json.dump(results, f, indent=2, sort_keys=True)
            f.write("\n")
        print(f"baseline written: {BASELINE}")
        return 0
    with open(BASELINE) as f:
        baseline = json.load(f)
    failed = False
    print(f"{'case':<20} {'figure':<14} {'baseline':>10} {'now':>10} {'ratio':>7}")
    for name, now in results.items():
        base = baseline.get(name)
        if base is None:
            print(f"{name}: no baseline (run with --update)")
            failed = True
            continue
        if now["accepted"] != base["accepted"]:
            print(f"{name}: accepted {now['accepted']} != baseline {base['accepted']}")
            failed = True
        for figure in ("mask_us_mean", "mask_us_p50"):
            ratio = now[figure] / max(base[figure], 1e-9)
            flag = "  SLOWER" if ratio > args.tolerance else ""
            failed |= ratio > args.tolerance
            print(f"{name:<20} {figure:<14} {base[figure]:>10.1f} {now[figure]:>10.1f} {ratio:>7.2f}{flag}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
