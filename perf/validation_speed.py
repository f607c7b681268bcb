#!/usr/bin/env python3
"""Validation speed of `zapgram parse` against Python's validators (issue 32).

On the workloads of perf/make_validation_data.py (run it first):
  - builtin:json on json-2mb.json and json-19mb.json: zapgram (one thread)
    against Python's json.load, MB/s and peak RSS;
  - schema validation of maskbench/*.jsonl (each line one document):
    zapgram `parse schema:S --lenient --lines S.jsonl` with -j 1 and -j N
    (its times include compiling each schema and starting the process; the
    "parse only" row sums the seconds parse's summary reports, which start
    after the compile)
    against python-jsonschema (its validator for the schema's draft with its
    format checker, one document at a time, schema compiled once), MB/s over
    the whole set, and verdicts: zapgram's against jsonschema's and against
    the instances' labels, document by document.
Each zapgram row runs with the transition memo (parse's default); the
"--memo-mb 0" rows are the ablation, and the memo column the share of steps
it served. Prints one table. Wall clock, one run each: compare figures of one run only.
Usage: perf/validation_speed.py [--zapgram build/zapgram] [--data ../shared/data]
                                [--work build/validation] [--jobs N]
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time


def run_zapgram(args, zapgram):
    start = time.perf_counter()
    proc = subprocess.run([zapgram, "parse", *args, "--summary", "--json"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    summary = re.search(r"peak RSS (\d+) MB", proc.stderr)
    verdicts = [json.loads(line).get("accepted") for line in proc.stdout.splitlines() if line.strip()]
    return seconds, int(summary.group(1)) if summary else None, verdicts, proc


def summary_fields(proc):
    """The parse seconds and the memo's share of steps (%) of parse's summary line."""
    timed = re.search(r"MB in ([0-9.]+) s", proc.stderr)
    memo = re.search(r"memo: ([0-9.]+)% of steps", proc.stderr)
    return float(timed.group(1)) if timed else 0.0, float(memo.group(1)) if memo else None


def python_json(path):
    """Seconds of Python's json.load on `path`, in a child process: Linux keeps a
    process's peak RSS across fork and exec, so a 19 MB document loaded here
    would show as the peak RSS of every zapgram run started after it."""
    code = ("import json, sys, time\nstart = time.perf_counter()\n"
            "with open(sys.argv[1], 'rb') as f:\n    json.load(f)\nprint(time.perf_counter() - start)")
    return float(subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                                check=True).stdout)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zapgram", default=os.path.join(here, "..", "build", "zapgram"))
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data"))
    parser.add_argument("--work", default=os.path.join(here, "..", "build", "validation"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    rows = []
    for name in ("json-2mb.json", "json-19mb.json"):
        path = os.path.join(args.work, name)
        if not os.path.exists(path):
            sys.exit(f"{path} missing: run perf/make_validation_data.py first")
        mb = os.path.getsize(path) / 1e6
        for memo in (None, "0"):
            extra = ["--memo-mb", memo] if memo else []
            seconds, rss, verdicts, proc = run_zapgram(["builtin:json", path, "-j", "1", *extra], args.zapgram)
            if verdicts != [True]:
                sys.exit(f"zapgram did not accept {path}: {proc.stdout} {proc.stderr}")
            label = f"builtin:json {name}" + (" --memo-mb 0" if memo else "")
            if memo:
                rows.append((label, mb, mb / seconds, rss, None, "", 0))
            else:
                py = python_json(path)
                rows.append((label, mb, mb / seconds, rss, summary_fields(proc)[1], "python json.load", mb / py))

    import jsonschema  # Debian's python3-jsonschema
    folder = os.path.join(args.work, "maskbench")
    stems = sorted(f[: -len(".jsonl")] for f in os.listdir(folder) if f.endswith(".jsonl"))
    total_mb = 0.0
    zap_seconds = {1: 0.0, args.jobs: 0.0}
    parse_seconds = 0.0  # -j 1, as parse's summaries time it
    memo_share = []      # -j 1, per schema
    no_memo_seconds = 0.0
    py_seconds = 0.0
    disagreements = 0
    label_misses = 0
    documents = 0
    peak = 0
    for stem in stems:
        lines_path = os.path.join(folder, stem + ".jsonl")
        with open(os.path.join(folder, stem + ".schema")) as f:
            schema_path = f.read().strip()
        total_mb += os.path.getsize(lines_path) / 1e6
        verdicts = None
        for jobs in zap_seconds:
            seconds, rss, got, proc = run_zapgram(
                [f"schema:{schema_path}", "--data-root", args.data, "--lenient", "--lines", lines_path,
                 "-j", str(jobs)], args.zapgram)
            zap_seconds[jobs] += seconds
            peak = max(peak, rss or 0)
            if jobs == 1:
                parsed, share = summary_fields(proc)
                parse_seconds += parsed
                memo_share.append(share or 0.0)
                verdicts = got
            elif got != verdicts:
                sys.exit(f"-j {jobs} changed verdicts on {stem}")
        seconds, _, got, _ = run_zapgram(
            [f"schema:{schema_path}", "--data-root", args.data, "--lenient", "--lines", lines_path,
             "-j", "1", "--memo-mb", "0"], args.zapgram)
        no_memo_seconds += seconds
        if got != verdicts:
            sys.exit(f"--memo-mb 0 changed verdicts on {stem}")
        with open(os.path.join(args.data, schema_path)) as f:
            schema = json.load(f)
        with open(lines_path, encoding="utf-8") as f:
            texts = [line.rstrip("\n") for line in f if line.strip()]
        start = time.perf_counter()
        cls = jsonschema.validators.validator_for(schema)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)  # MaskBench's labels check formats
        reference = []
        for text in texts:
            try:
                reference.append(validator.is_valid(json.loads(text)))
            except ValueError:
                reference.append(False)
        py_seconds += time.perf_counter() - start
        with open(os.path.join(folder, stem + ".labels")) as f:
            labels = [line.strip() == "valid" for line in f]
        documents += len(texts)
        disagreements += sum(1 for a, b in zip(verdicts, reference) if a != b)
        label_misses += sum(1 for a, b in zip(verdicts, labels) if a != b)
    share = sum(memo_share) / len(memo_share) if memo_share else None
    rows.append((f"{len(stems)} schemas x --lines, -j 1", total_mb, total_mb / zap_seconds[1], peak, share,
                 "python-jsonschema", total_mb / py_seconds))
    rows.append((f"the same, -j {args.jobs}", total_mb, total_mb / zap_seconds[args.jobs], peak, None, "", 0))
    rows.append(("the same, -j 1, --memo-mb 0", total_mb, total_mb / no_memo_seconds, None, None, "", 0))
    rows.append(("the same, -j 1, parse only (no compiles)", total_mb,
                 total_mb / parse_seconds if parse_seconds else 0.0, None, None, "", 0))
    print(f"{'workload':44} {'MB':>7} {'zapgram MB/s':>13} {'peak MB':>8} {'memo %':>7}  reference MB/s")
    for name, mb, speed, rss, share, ref, ref_speed in rows:
        print(f"{name:44} {mb:7.1f} {speed:13.2f} {rss if rss is not None else '-':>8} "
              f"{format(share, '.1f') if share is not None else '-':>7}  " + (f"{ref} {ref_speed:.2f}" if ref else ""))
    print(f"schema verdicts: {documents} documents; zapgram differs from python-jsonschema (formats "
          f"checked) on {disagreements}, from MaskBench's labels on {label_misses}")
    print(f"-j scaling: {zap_seconds[1] / zap_seconds[args.jobs]:.2f}x on {args.jobs} threads")


if __name__ == "__main__":
    main()
