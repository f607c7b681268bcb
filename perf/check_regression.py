#!/usr/bin/env python3
"""Mask-speed and memory regression check: `zapgram bench` on fixed samples
of the dev traces and the stress traces, compared with
perf/regression_baseline.json.

Cases (issue 12's workloads, Llama 3):
  json-docs          a grammar seen many times (builtin:json, 40 documents):
                     the state cache's hit path; and its time to first mask
                     (issue 30: no compile may wait for the vocabulary's trie)
  sql, go, java      SynCode's Lark grammars, 40 documents each (first masks
                     included): lexed grammars, fresh states
  maskbench-64       every 64th MaskBench record (182 documents, --lenient):
                     a fresh JSON Schema per document; also compile time (p50,
                     p90), time to first mask (p50, p90, p99: issue 30), bytes
                     per grammar and peak RSS
  deep-json, ambiguous, wide-schema  perf/make_stress_traces.sh (written when
                     missing; wide-schema: time to first mask of a schema with
                     5,000 required properties, issue 30)
  validation-json    `zapgram parse builtin:json --lines` (-j 1) over the
                     json-docs documents, one per line, 20 times over: the
                     parse path with its transition memo (issue 32), in ms
                     per MB as parse's summary times it (--memo-mb 0: ~3.5x;
                     the first pass learns the states, the others read them)
  json-docs-budget, sql-budget  budget-aware masks (issue 14) at the tightest
                     budget the documents meet (--budget-slack 0; 20 json-docs,
                     5 sql): time, and budget_inexact (tokens masked only
                     because a search budget ran out: a rise is a looser mask)

Each case runs REPEATS times; the minimum of each figure is kept (the
machines are shared: the minimum is the least disturbed run). A case fails
when a figure exceeds its baseline times the tolerance of its kind: TOLERANCE
for means and medians, twice that for tails (p99), MEMORY_TOLERANCE for bytes.

Why 1.5: on the 2-core development machine, two checks back to back (each
the minimum of 3 runs) differed by 11% in mean and 8% in p50 mask time while
another build was running; 1.5 keeps that noise from failing the check,
while the regressions this guards against (a lost cache, lost token sets, an
accidental full trie walk, per-grammar work back on the decode path) cost 3x
to 10x or more (bench --no-cache: 16x the mean on json-docs; MaskBench
without counted terminals: 4.7x the mean, 7x the p99).

usage: perf/check_regression.py [--build DIR] [--update] [--repeats N] [--tolerance X]
                                [--only NAME,...]
exit status: 0 no regression, 1 regression, 2 could not run.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "..", "shared", "data")
BASELINE = os.path.join(HERE, "regression_baseline.json")
MEMORY_TOLERANCE = 1.25
TRACES = os.path.join(DATA, "traces", "llama3")
# name: (trace file, documents (None: all), stride, extra bench arguments, figures)
CASES = {
    "json-docs/llama3": ("json-docs.jsonl", 40, 1, [], ["mask_mean", "mask_p50", "mask_p99", "first_mask_p50"]),
    "sql/llama3": ("sql.jsonl", 40, 1, [], ["mask_mean", "mask_p50", "mask_p99"]),
    "go/llama3": ("go.jsonl", 40, 1, [], ["mask_mean", "mask_p50", "mask_p99"]),
    "java/llama3": ("java.jsonl", 40, 1, [], ["mask_mean", "mask_p50", "mask_p99"]),
    "maskbench-64/llama3": ("maskbench.jsonl", None, 64, ["--lenient"],
                            ["mask_mean", "mask_p50", "mask_p99", "compile_p50", "compile_p90",
                             "first_mask_p50", "first_mask_p90", "first_mask_p99",
                             "bytes_per_grammar_p50", "peak_rss_mb"]),
    # Budget-aware masks at the tightest budget the documents meet (issue 14).
    "json-docs-budget/llama3": ("json-docs.jsonl", 20, 1, ["--budget-slack", "0"],
                                ["mask_mean", "mask_p50", "budget_inexact"]),
    "sql-budget/llama3": ("sql.jsonl", 5, 1, ["--budget-slack", "0"], ["mask_mean", "budget_inexact"]),
    "deep-json/llama3": ("@stress/deep-json.jsonl", None, 1, [], ["mask_mean", "peak_rss_mb"]),
    "ambiguous/llama3": ("@stress/ambiguous.jsonl", None, 1, [], ["mask_mean"]),
    "wide-schema/llama3": ("@stress/wide-schema.jsonl", None, 1, [], ["first_mask_p50", "mask_mean"]),
}


# name: (trace whose texts become the lines, times over, figures)
VALIDATION_CASES = {
    "validation-json/llama3": ("json-docs.jsonl", 20, ["parse_ms_per_mb"]),
}


def run_validation(build, trace, times, tmp):
    """`parse builtin:json --lines` over the trace's texts (compacted to one line
    each, `times` over): (ms per MB, documents accepted)."""
    lines_path = os.path.join(tmp, "validation-" + os.path.basename(trace))
    if not os.path.exists(lines_path):
        with open(os.path.join(TRACES, trace)) as src:
            texts = [json.dumps(json.loads(json.loads(line)["text"]), ensure_ascii=False) for line in src]
        with open(lines_path, "w") as dst:
            for _ in range(times):
                for text in texts:
                    dst.write(text + "\n")
    proc = subprocess.run([os.path.join(build, "zapgram"), "parse", "builtin:json", "--lines", lines_path,
                           "--json", "-j", "1", "--summary"], capture_output=True, text=True, errors="replace")
    timed = re.search(r"([0-9.]+) MB in ([0-9.]+) s", proc.stderr)
    if proc.returncode not in (0, 1) or timed is None:
        raise OSError(f"parse failed: {proc.stderr[-500:]}")
    accepted = sum(1 for line in proc.stdout.splitlines() if line.strip() and json.loads(line)["accepted"])
    return {"parse_ms_per_mb": 1000 * float(timed.group(2)) / max(float(timed.group(1)), 1e-9),
            "accepted": accepted}


def trace_path(build, name, stride, tmp):
    if name.startswith("@stress/"):
        path = os.path.join(build, "stress", "traces", "llama3", name[len("@stress/"):])
        if not os.path.exists(path):
            # The script runs build/zapgram from the repository's root.
            subprocess.run([os.path.join(HERE, "make_stress_traces.sh"), os.path.join(build, "stress")],
                           check=True, capture_output=True, cwd=ROOT)
        return path
    path = os.path.join(TRACES, name)
    if stride == 1:
        return path
    sample = os.path.join(tmp, f"every{stride}-{name}")
    with open(path) as src, open(sample, "w") as dst:
        for k, line in enumerate(src):
            if k % stride == 0:
                dst.write(line)
    return sample


def figures_of(summary):
    return {
        "mask_mean": summary["mask_us"]["mean"],
        "mask_p50": summary["mask_us"]["p50"],
        "mask_p99": summary["mask_us"]["p99"],
        "compile_p50": summary["compile_ms"]["p50"],
        "compile_p90": summary["compile_ms"]["p90"],
        "first_mask_p50": summary.get("first_mask_ms", {}).get("p50", 0),
        "first_mask_p90": summary.get("first_mask_ms", {}).get("p90", 0),
        "first_mask_p99": summary.get("first_mask_ms", {}).get("p99", 0),
        "bytes_per_grammar_p50": summary.get("bytes_per_grammar", {}).get("p50", 0),
        "peak_rss_mb": summary["peak_rss_mb"],
        "budget_inexact": summary.get("budget_inexact", 0),
    }


def run_case(build, trace, limit, extra):
    # Dev traces name grammars under the data folder; the stress traces under
    # their own root (bench's default: two levels above the trace's folder).
    root = ["--data-root", DATA] if trace.startswith(TRACES) or trace.startswith(tempfile.gettempdir()) else []
    cmd = [os.path.join(build, "zapgram"), "bench", "--json", *root,
           "--tokenizer", os.path.join(DATA, "tokenizers", "llama3.tokenizer.json"), "--trace", trace] + extra
    if limit is not None:
        cmd += ["--limit", str(limit)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, errors="replace").stdout
    return json.loads(out)


def tolerance_of(figure, tolerance):
    if figure in ("bytes_per_grammar_p50", "peak_rss_mb"):
        return MEMORY_TOLERANCE
    return 2 * tolerance if figure.endswith("p99") else tolerance


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--update", action="store_true", help="write a new baseline")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=1.5)
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    only = [n for n in args.only.split(",") if n]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (trace, limit, stride, extra, wanted) in CASES.items():
            if only and name not in only:
                continue
            try:
                path = trace_path(args.build, trace, stride, tmp)
                runs = [run_case(args.build, path, limit, extra) for _ in range(args.repeats)]
            except (subprocess.CalledProcessError, OSError) as e:
                print(f"{name}: could not run: {e}", file=sys.stderr)
                return 2
            if any(r["accepted"] != runs[0]["accepted"] for r in runs):
                print(f"{name}: verdicts differ between runs", file=sys.stderr)
                return 2
            figures = [figures_of(r) for r in runs]
            results[name] = {f: min(x[f] for x in figures) for f in wanted}
            results[name]["accepted"] = runs[0]["accepted"]
        for name, (trace, times, wanted) in VALIDATION_CASES.items():
            if only and name not in only:
                continue
            try:
                runs = [run_validation(args.build, trace, times, tmp) for _ in range(args.repeats)]
            except (subprocess.CalledProcessError, OSError, ValueError) as e:
                print(f"{name}: could not run: {e}", file=sys.stderr)
                return 2
            if any(r["accepted"] != runs[0]["accepted"] for r in runs):
                print(f"{name}: verdicts differ between runs", file=sys.stderr)
                return 2
            results[name] = {f: min(r[f] for r in runs) for f in wanted}
            results[name]["accepted"] = runs[0]["accepted"]
    if args.update:
        baseline = {}
        if only and os.path.exists(BASELINE):
            with open(BASELINE) as f:
                baseline = json.load(f)
        baseline.update(results)
        with open(BASELINE, "w") as f:
            json.dump(baseline, f, indent=2, sort_keys=True)
            f.write("\n")
        print(f"baseline written: {BASELINE}")
        return 0
    with open(BASELINE) as f:
        baseline = json.load(f)
    failed = False
    print(f"{'case':<22} {'figure':<22} {'baseline':>10} {'now':>10} {'ratio':>7}")
    for name, now in results.items():
        base = baseline.get(name)
        if base is None:
            print(f"{name}: no baseline (run with --update)")
            failed = True
            continue
        if now["accepted"] != base["accepted"]:
            print(f"{name}: accepted {now['accepted']} != baseline {base['accepted']}")
            failed = True
        for figure, value in now.items():
            if figure == "accepted":
                continue
            if figure not in base:
                print(f"{name}: no baseline for {figure} (run with --update)")
                failed = True
                continue
            limit = tolerance_of(figure, args.tolerance)
            ratio = value / max(base[figure], 1e-9)
            flag = "  WORSE" if ratio > limit else ""
            failed |= ratio > limit
            print(f"{name:<22} {figure:<22} {base[figure]:>10.1f} {value:>10.1f} {ratio:>7.2f}{flag}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
