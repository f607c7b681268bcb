#!/usr/bin/env python3
"""Figures of mask latency from `zapgram bench --json --per-doc OUT` files.

Each per-document line carries "mask_us_each" (the time of every mask the
benchmark computed for that document), "grammar", and, on the document that
compiled its grammar, "first_mask_ms" (compile + first mask: what a server
pays before the first token of a request with a new grammar). This file turns
such files into three PNG figures:

  mask_latency_by_config.png  CDF of per-mask latency (log x) for one trace set
                              under several configurations (all on, no cache,
                              no context-independent sets, no pruning, ...);
                              curves to the left are faster, a long flat tail
                              on the right is the slow masks.
  mask_latency_by_set.png     the same CDF, one curve per trace set.
  first_mask_by_grammar.png   time to first mask per grammar: left, the CDF
                              over the grammars of each set; right, the
                              slowest grammars as bars.

Plotting needs matplotlib (Debian: python3-matplotlib) and is optional: the
reading and summarizing below do not import it, and `perf/mask_report.py
--plots DIR` says so and goes on without figures when it is missing.

usage: perf/mask_plots.py --out DIR [--config LABEL=PER_DOC ...]
                          [--set LABEL=PER_DOC ...] [--config-title TEXT]
(first_mask_by_grammar.png is drawn from the --set files.)

Tests: tests/perf/mask_plots_test.py.
"""
import argparse
import json
import math
import os
import sys

SLOWEST_GRAMMARS_SHOWN = 20


def read_per_doc(path):
    """The per-document records of one `bench --per-doc` file."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def mask_latencies_us(records):
    """Every mask time (microseconds) of the records, sorted."""
    values = [us for r in records for us in r.get("mask_us_each") or []]
    if any("mask_us_each" not in r for r in records if r.get("error") is None):
        raise ValueError("per-doc records without mask_us_each: written by an older zapgram bench?")
    return sorted(values)


def first_mask_ms_by_grammar(records):
    """{grammar: compile + first mask in ms} for the grammars that compiled and
    were walked (a grammar that failed to compile has no first mask)."""
    out = {}
    for r in records:
        if "first_mask_ms" in r:
            out[r["grammar"]] = r["first_mask_ms"]
    return out


def cdf_points(sorted_values):
    """(x, y) of the empirical CDF: y[i] = fraction of values <= x[i]."""
    n = len(sorted_values)
    return sorted_values, [(i + 1) / n for i in range(n)]


def percentile(sorted_values, q):
    """The q-quantile (0..1) by nearest rank, as `zapgram bench` computes it."""
    if not sorted_values:
        return 0.0
    k = int(q * (len(sorted_values) - 1) + 0.5)
    return sorted_values[min(k, len(sorted_values) - 1)]


def short_grammar_name(spec):
    """`schema:jsonschema/maskbench/Github_easy---o1234.schema.json` -> `Github_easy---o1234`."""
    name = spec.split(":", 1)[1] if spec.startswith(("schema:", "regex:", "builtin:")) else spec
    name = os.path.basename(name)
    for suffix in (".schema.json", ".json", ".lark", ".gbnf", ".ebnf"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def slowest_grammars(entries, count):
    """The `count` slowest of [(ms, set label, grammar)], plus the slowest of
    every set not among them (so a set with one grammar still shows), slowest
    first."""
    ranked = sorted(entries, reverse=True)
    chosen = ranked[:count]
    for label in dict.fromkeys(label for _, label, _ in ranked):
        if not any(l == label for _, l, _ in chosen):
            chosen.append(next(e for e in ranked if e[1] == label))
    return sorted(chosen, reverse=True)


def parse_labelled(items):
    """["LABEL=PATH", ...] -> [(label, path)]."""
    out = []
    for item in items or []:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            raise ValueError(f"expected LABEL=PER_DOC_FILE, got {item!r}")
        out.append((label, path))
    return out


def _latency_figure(plt, series, title, path):
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, values in series:
        if not values:
            continue
        x, y = cdf_points(values)
        ax.step(x, y, where="post", label=f"{label} (p50 {percentile(values, 0.5):.1f}, "
                f"p99 {percentile(values, 0.99):.0f} us; {len(values)} masks)")
    ax.set_xscale("log")
    ax.set_xlabel("mask latency (us, log scale)")
    ax.set_ylabel("fraction of masks <= x")
    ax.set_ylim(0, 1.005)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _first_mask_figure(plt, per_set, path):
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [1, 1.2]})
    everything = []
    for label, by_grammar in per_set:
        values = sorted(by_grammar.values())
        if not values:
            continue
        x, y = cdf_points(values)
        left.step(x, y, where="post", marker="." if len(values) < 30 else None,
                  label=f"{label} ({len(values)} grammars, p50 {percentile(values, 0.5):.1f} ms)")
        everything += [(ms, label, grammar) for grammar, ms in by_grammar.items()]
    left.set_xscale("log")
    left.set_xlabel("compile + first mask (ms, log scale)")
    left.set_ylabel("fraction of grammars <= x")
    left.set_ylim(0, 1.005)
    left.grid(True, which="both", alpha=0.3)
    left.legend(loc="lower right", fontsize=8)
    left.set_title("time to first mask, per grammar")
    slowest = slowest_grammars(everything, SLOWEST_GRAMMARS_SHOWN)[::-1]
    bars = right.barh(range(len(slowest)), [ms for ms, _, _ in slowest], color="tab:orange")
    right.bar_label(bars, labels=[f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms" for ms, _, _ in slowest],
                    fontsize=7, padding=2)
    right.set_yticks(range(len(slowest)))
    right.set_yticklabels([f"{label.split(' (')[0]}: {short_grammar_name(g)[:40]}" for _, label, g in slowest],
                          fontsize=7)
    right.set_xscale("log")
    right.set_xlabel("compile + first mask (ms, log scale)")
    right.set_title("the slowest grammars (and each set's slowest)")
    right.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw(out_dir, configs, sets, config_title="mask latency by configuration"):
    """Writes the figures for [(label, records)] lists; returns their paths.
    Raises ImportError when matplotlib is missing."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    written = []
    if configs:
        path = os.path.join(out_dir, "mask_latency_by_config.png")
        _latency_figure(plt, [(label, mask_latencies_us(r)) for label, r in configs], config_title, path)
        written.append(path)
    if sets:
        path = os.path.join(out_dir, "mask_latency_by_set.png")
        _latency_figure(plt, [(label, mask_latencies_us(r)) for label, r in sets],
                        "mask latency by trace set", path)
        written.append(path)
        per_set = [(label, first_mask_ms_by_grammar(r)) for label, r in sets]
        if any(per_set_values for _, per_set_values in per_set):
            path = os.path.join(out_dir, "first_mask_by_grammar.png")
            _first_mask_figure(plt, per_set, path)
            written.append(path)
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for the PNG files")
    p.add_argument("--config", action="append", metavar="LABEL=PER_DOC",
                   help="one configuration's per-doc file (same trace set for all)")
    p.add_argument("--set", action="append", metavar="LABEL=PER_DOC", help="one trace set's per-doc file")
    p.add_argument("--config-title", default="mask latency by configuration",
                   help="title of the by-configuration figure (name the trace set there)")
    args = p.parse_args(argv)
    try:
        configs = [(label, read_per_doc(path)) for label, path in parse_labelled(args.config)]
        sets = [(label, read_per_doc(path)) for label, path in parse_labelled(args.set)]
    except (OSError, ValueError) as e:
        sys.exit(f"mask_plots: {e}")
    if not configs and not sets:
        sys.exit("mask_plots: give at least one --config or --set")
    try:
        written = draw(args.out, configs, sets, config_title=args.config_title)
    except ImportError:
        sys.exit("mask_plots: matplotlib is not installed (Debian: apt-get install python3-matplotlib)")
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
