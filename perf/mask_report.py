#!/usr/bin/env python3
"""Mask figures for a release note: `zapgram bench` over trace sets, tokenizers
and ablations, printed as Markdown tables (one run each; the machines are
shared, so read ratios within one run rather than absolute times).

usage: perf/mask_report.py [--build DIR] [--data DIR] [--limit N] [--sets a,b]
                           [--tokenizers llama3,qwen2_5] [--ablation SET] [--plots DIR]

Table 1: per (set, tokenizer), all optimizations on: compile ms p50/max,
mask us mean/p50/p99/max, docs accepted vs valid, state-cache hit rate.
Table 2 (ablation, Llama 3, one set): all on / no pruning / no cache / no
context-independent sets, with peak RSS (pruning off also turns the cache off,
since the cache key is the pruned state).
--plots DIR: also keep every run's `bench --per-doc` file in DIR/per-doc/ and
draw from them (perf/mask_plots.py; needs matplotlib, python3-matplotlib on
Debian) DIR/mask_latency_by_config.png (the ablation's configurations),
DIR/mask_latency_by_set.png and DIR/first_mask_by_grammar.png (the sets of
table 1).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(build, data, tokenizer, trace_set, limit, flags, per_doc=None):
    cmd = [os.path.join(build, "zapgram"), "bench",
           "--tokenizer", os.path.join(data, "tokenizers", tokenizer + ".tokenizer.json"),
           "--trace", os.path.join(data, "traces", tokenizer, trace_set + ".jsonl"),
           "--json"] + flags
    if limit:
        cmd += ["--limit", str(limit)]
    if per_doc:
        cmd += ["--per-doc", per_doc]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"bench failed: {' '.join(cmd)}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--sets", default="json-docs,java,go,sql")
    p.add_argument("--tokenizers", default="llama3,qwen2_5")
    p.add_argument("--ablation", default="json-docs")
    p.add_argument("--plots", metavar="DIR", help="draw PNG figures into DIR (needs matplotlib)")
    args = p.parse_args()
    per_doc_dir = os.path.join(args.plots, "per-doc") if args.plots else None
    if per_doc_dir:
        os.makedirs(per_doc_dir, exist_ok=True)

    def per_doc_path(name):
        return os.path.join(per_doc_dir, name + ".jsonl") if per_doc_dir else None

    set_runs, config_runs = [], []

    print("| set | tokenizer | docs | tokens | compile ms p50 / max | mask us mean / p50 / p99 / max"
          " | accepted / valid | cache hit |")
    print("|---|---|---|---|---|---|---|---|")
    for trace_set in args.sets.split(","):
        for tok in args.tokenizers.split(","):
            path = per_doc_path(f"{trace_set}-{tok}")
            r = bench(args.build, args.data, tok, trace_set, args.limit, [], path)
            set_runs.append((f"{trace_set} ({tok})", path))
            c, m = r["compile_ms"], r["mask_us"]
            print(f"| {trace_set} | {tok} | {r['docs']} | {r['tokens']} | {c['p50']:.1f} / {c['max']:.1f}"
                  f" | {m['mean']:.1f} / {m['p50']:.1f} / {m['p99']:.1f} / {m['max']:.0f}"
                  f" | {r['accepted']} / {r['valid']} | {100 * r.get('cache_hit_rate', 0):.1f}% |",
                  flush=True)

    print()
    print(f"Ablation ({args.ablation}, llama3):")
    print()
    print("| configuration | mask us mean / p50 / p99 | vs all on | peak RSS MB |")
    print("|---|---|---|---|")
    base = None
    for name, flags in [("all on", []), ("no pruning (and no cache)", ["--no-pruning"]),
                        ("no cache", ["--no-cache"]), ("no context-independent sets", ["--no-ci-sets"])]:
        path = per_doc_path("ablation-" + (flags[0].lstrip("-") if flags else "all-on"))
        r = bench(args.build, args.data, "llama3", args.ablation, args.limit, flags, path)
        config_runs.append((name, path))
        m = r["mask_us"]
        base = base or m["mean"]
        print(f"| {name} | {m['mean']:.1f} / {m['p50']:.1f} / {m['p99']:.1f} | {m['mean'] / base:.1f}x"
              f" | {r['peak_rss_mb']:.1f} |", flush=True)

    if args.plots:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import mask_plots
        load = lambda runs: [(label, mask_plots.read_per_doc(path)) for label, path in runs]
        try:
            written = mask_plots.draw(args.plots, load(config_runs), load(set_runs),
                                      config_title=f"mask latency by configuration ({args.ablation}, llama3)")
        except ImportError:
            sys.exit("mask_report: --plots needs matplotlib (Debian: python3-matplotlib); "
                     f"the per-doc files are in {per_doc_dir}")
        print()
        for path in written:
            print(f"figure: {path}")


if __name__ == "__main__":
    main()
