#!/usr/bin/env python3
"""What the Python layer adds to a mask: fill_next_token_bitmask and
apply_token_bitmask_inplace against the same work done in C++.

States: Llama 3 (128,256 ids), builtin:json, after every --stride-th token of
the first --docs documents of the json-docs trace (real token ids), plus a
MaskBench schema's states the same way from the maskbench trace. On each
state, after one fill that warms the mask cache:

  fill (torch)   matcher.fill_next_token_bitmask(torch bitmask, 0), timed in
                 Python: blocks of --per-block calls, median block mean
  fill (numpy)   the same with a numpy bitmask
  ComputeMask    Matcher::ComputeMask in a C++ loop on the same state
                 (GrammarMatcher._time_compute_mask, same block scheme)
  overhead       fill - ComputeMask: Python and C++ blocks interleaved, the
                 median difference per state, then the median over states
                 (a cache hit copies 16 KB of mask)

apply_token_bitmask_inplace on a (1, 128256) float32 logits row with each
state's mask, timed in Python and as the C++ kernel alone (_core._time_apply,
views taken once).

Batch scaling: --batch matchers on distinct states filled by
BatchGrammarMatcher with 1 and 2 threads, with the cache off (every mask
computed: the work threads share) and on (hits: the pool's wake-up cost
shows). "cores used" is the process's CPU time over the wall time of the
calls: on a machine shared with other work, 2 threads cannot help when it
stays near 1; the split of CPU time between the pool's two threads shows
whether both work.

    PYTHONPATH=build/python /usr/bin/python3 perf/python_overhead.py [--json]
"""

import argparse
import json
import os
import pathlib
import resource
import statistics
import time

import numpy
import torch

import zapgram
from zapgram import _core

REPO = pathlib.Path(__file__).resolve().parents[1]


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def thread_ticks():
    """CPU ticks (user + system) per thread of this process (Linux)."""
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks[tid] = int(fields[11]) + int(fields[12])
    return ticks


def median_ns(f, blocks, per_block):
    means = []
    for _ in range(blocks):
        start = time.perf_counter_ns()
        for _ in range(per_block):
            f()
        means.append((time.perf_counter_ns() - start) / per_block)
    return statistics.median(means)


def paired(f, cpp_block, blocks, per_block):
    """(median Python ns/call, median C++ ns/call, median of their differences),
    blocks of the two interleaved so that drift (other load, frequency) hits
    both alike; cpp_block(per_block) times one C++ block."""
    py, cpp, diff = [], [], []
    for _ in range(blocks):
        start = time.perf_counter_ns()
        for _ in range(per_block):
            f()
        py.append((time.perf_counter_ns() - start) / per_block)
        cpp.append(cpp_block(per_block))
        diff.append(py[-1] - cpp[-1])
    return statistics.median(py), statistics.median(cpp), statistics.median(diff)


def place(compiled, tokens, cache=True):
    """A matcher after `tokens`, or None when the grammar refuses them."""
    m = zapgram.GrammarMatcher(compiled, cache=cache)
    return m if all(m.accept_token(t) for t in tokens) else None


def states(compiled, trace, docs, stride, grammar_filter=None):
    """(compiled, token prefix) at every stride-th token of the trace's first docs."""
    out = []
    with open(trace, encoding="utf-8") as f:
        taken = 0
        for line in f:
            record = json.loads(line)
            if grammar_filter is not None and record["grammar"] != grammar_filter:
                continue
            if not record.get("valid", True):
                continue
            tokens = record["tokens"]
            for cut in range(0, len(tokens), stride):
                if place(compiled, tokens[:cut]) is not None:
                    out.append((compiled, tokens[:cut]))
            taken += 1
            if taken == docs:
                break
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=pathlib.Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--stride", type=int, default=37)
    parser.add_argument("--blocks", type=int, default=21)
    parser.add_argument("--per-block", type=int, default=200)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    tokenizer = zapgram.TokenizerInfo.from_huggingface(str(args.data / "tokenizers" / "llama3.tokenizer.json"))
    compiler = zapgram.GrammarCompiler(tokenizer)
    json_grammar = compiler.compile_builtin_json_grammar()
    schema = "jsonschema/maskbench/Github_easy---o90448.schema.json"
    schema_grammar = compiler.compile_json_schema((args.data / schema).read_text())
    placed = states(json_grammar, args.data / "traces/llama3/json-docs.jsonl", args.docs, args.stride)
    placed += states(schema_grammar, args.data / "traces/llama3/maskbench.jsonl", 1, 3, "schema:" + schema)
    matchers = [place(c, t) for c, t in placed]

    torch_mask = zapgram.allocate_token_bitmask(1, tokenizer.vocab_size)
    numpy_mask = zapgram.allocate_token_bitmask(1, tokenizer.vocab_size, backend="numpy")
    logits = torch.zeros((1, tokenizer.vocab_size))
    rows = {k: [] for k in ("fill_torch", "fill_numpy", "compute_mask", "apply_py", "apply_cpp", "noop",
                            "over_torch", "over_numpy", "over_apply")}
    b, p = args.blocks, args.per_block
    for m in matchers:
        m.fill_next_token_bitmask(torch_mask, 0)  # warms the cache
        fill_cpp = lambda n: m._time_compute_mask(1, n)  # noqa: E731
        py, cpp, over = paired(lambda: m.fill_next_token_bitmask(torch_mask, 0), fill_cpp, b, p)
        rows["fill_torch"].append(py), rows["compute_mask"].append(cpp), rows["over_torch"].append(over)
        py, cpp, over = paired(lambda: m.fill_next_token_bitmask(numpy_mask, 0), fill_cpp, b, p)
        rows["fill_numpy"].append(py), rows["over_numpy"].append(over)
        rows["noop"].append(median_ns(m.is_completed, b, p))
        py, cpp, over = paired(lambda: zapgram.apply_token_bitmask_inplace(logits, torch_mask),
                               lambda n: _core._time_apply(logits, torch_mask, 1, n), b, 20)
        rows["apply_py"].append(py), rows["apply_cpp"].append(cpp), rows["over_apply"].append(over)
    result = {
        "states": len(matchers),
        "median_ns": {k: statistics.median(v) for k, v in rows.items() if not k.startswith("over_")},
        "overhead_ns": {
            "fill_torch": statistics.median(rows["over_torch"]),
            "fill_numpy": statistics.median(rows["over_numpy"]),
            "apply_torch": statistics.median(rows["over_apply"]),
        },
    }

    # Batch scaling: distinct states, cache off (every mask computed) and on.
    batch_states = placed[:: max(1, len(placed) // args.batch)][: args.batch]
    batch = {}
    for cache in (False, True):
        groups = {t: [place(c, tk, cache=cache) for c, tk in batch_states] for t in (1, 2)}
        pools = {t: zapgram.BatchGrammarMatcher(t) for t in (1, 2)}
        mask = zapgram.allocate_token_bitmask(len(batch_states), tokenizer.vocab_size)
        times = {1: [], 2: []}
        cpu = {1: 0.0, 2: 0.0}
        calls = {1: 0, 2: 0}
        for t in (1, 2):
            pools[t].batch_fill_next_token_bitmask(groups[t], mask)  # warm: token sets, cache
        reps = 5 if not cache else 50
        for _ in range(15):  # 1 and 2 threads interleaved: drift hits both alike
            for t in (1, 2):
                before = cpu_seconds()
                times[t].append(median_ns(lambda: pools[t].batch_fill_next_token_bitmask(groups[t], mask), 1, reps))
                cpu[t] += cpu_seconds() - before
                calls[t] += reps
        kind = "hit" if cache else "computed"
        for t in (1, 2):
            batch[f"{kind}_{t}t_us"] = statistics.median(times[t]) / 1000
            # CPU time of the process per batch / wall time per batch: how
            # many cores the call actually had (other load on the machine
            # shows here).
            batch[f"{kind}_{t}t_cores"] = cpu[t] / calls[t] * 1e9 / statistics.median(times[t])
        if not cache:
            # The split of the 2-thread pool's CPU time between the calling
            # thread and the worker, over a second of computed batches.
            before, start = thread_ticks(), time.perf_counter()
            while time.perf_counter() - start < 1.0:
                pools[2].batch_fill_next_token_bitmask(groups[2], mask)
            used = sorted((t - before.get(tid, 0) for tid, t in thread_ticks().items()), reverse=True)
            batch["computed_2t_thread_share"] = [round(u / max(1, sum(used)), 2) for u in used if u > 0]
    result["batch"] = {"size": len(batch_states), **batch}

    if args.json:
        print(json.dumps(result, indent=1))
        return
    med = result["median_ns"]
    over = result["overhead_ns"]
    print(f"{len(matchers)} states (Llama 3, 128,256 ids; builtin:json + one MaskBench schema), medians per call:")
    print(f"  C++ ComputeMask (cache hit)           {med['compute_mask'] / 1000:7.2f} us")
    print(f"  fill_next_token_bitmask, torch        {med['fill_torch'] / 1000:7.2f} us   overhead {over['fill_torch']:6.0f} ns")
    print(f"  fill_next_token_bitmask, numpy        {med['fill_numpy'] / 1000:7.2f} us   overhead {over['fill_numpy']:6.0f} ns")
    print(f"  a no-op bound method (is_completed)   {med['noop']:7.0f} ns")
    print(f"  apply_token_bitmask_inplace (torch)   {med['apply_py'] / 1000:7.2f} us   C++ kernel {med['apply_cpp'] / 1000:.2f} us,"
          f" overhead {over['apply_torch']:6.0f} ns")
    print(f"batch of {result['batch']['size']} distinct states, batch_fill_next_token_bitmask:")
    for kind in ("computed", "hit"):
        one, two = batch[f"{kind}_1t_us"], batch[f"{kind}_2t_us"]
        print(f"  {kind:8s} 1 thread {one:9.1f} us   2 threads {two:9.1f} us   speedup {one / two:.2f}x"
              f"   (cores used: {batch[kind + '_1t_cores']:.2f}, {batch[kind + '_2t_cores']:.2f})")
    print(f"  CPU time of the 2-thread pool's threads on computed batches: {batch['computed_2t_thread_share']}")


if __name__ == "__main__":
    main()
