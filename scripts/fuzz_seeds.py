#!/usr/bin/env python3
"""Seed corpora for the libFuzzer targets in fuzz/, made from the shared data.

Writes OUT/<target>/<n> files (nothing goes into the repository; hand-made
seeds and crash regressions live in fuzz/seeds/<target>/):

  gbnf_reader_fuzzer     llama.cpp GBNF grammars and XGrammar EBNF grammars,
                         the latter with the labelled strings of the
                         xgrammar-ebnf trace as recognizer input
  lark_reader_fuzzer     every Lark grammar (Lark's own, SynCode's, examples),
                         SynCode's sql/json with a document of their trace
  regex_compiler_fuzzer  `pattern` / `patternProperties` regexes of the
                         MaskBench schemas, each with a string of the instance
  json_schema_fuzzer     MaskBench and JSON-Schema-Test-Suite schemas, each with
                         an option byte (cycling through the 16 option sets)
                         and one instance of its trace
  vocabulary_fuzzer      the shared tokenizer.json files cut to their first
                         --vocab ids (merges, added tokens and decoder kept)
  matcher_fuzzer         pseudo-random operation sequences (fixed seed)
  compiled_grammar_fuzzer  none generated: its seeds are serialized compiled
                         grammars (fuzz/seeds/compiled_grammar_fuzzer/, written
                         by the fuzzer's source built with -DZAPGRAM_WRITE_SEEDS,
                         see its file comment), as they depend on the format
                         version and the fuzzer's vocabulary

The input format is fuzz/fuzz_support.h's: TEXT, then \\xff\\xfe and the
recognizer input. Files larger than --max-bytes are skipped; --max N keeps N
seeds per target (evenly spread over what was found), so CI replays a small
set and the long campaign a large one.

Usage: fuzz_seeds.py --data ../shared/data --out build-fuzz/seeds [--max N]
"""

import argparse
import glob
import json
import os
import random

SEP = b"\xff\xfe"


def read(path):
    with open(path, "rb") as f:
        return f.read()


def trace(path):
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def spread(items, n):
    """n items evenly spread over the list (all when n is 0 or larger)."""
    if n <= 0 or len(items) <= n:
        return items
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, dict):
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)


def first_string(node):
    for n in walk(node):
        if isinstance(n, str):
            return n
    return ""


def gbnf_seeds(data):
    out = []
    for path in sorted(glob.glob(os.path.join(data, "grammars/gbnf/**/*.gbnf"), recursive=True)):
        out.append(read(path))
    inputs = {}
    for r in trace(os.path.join(data, "traces/llama3/xgrammar-ebnf.jsonl")):
        inputs.setdefault(r["grammar"], r["text"].encode("utf-8"))
    for path in sorted(glob.glob(os.path.join(data, "grammars/ebnf/xgrammar/**/*.ebnf"), recursive=True)):
        rel = os.path.relpath(path, data)
        text = read(path)
        out.append(text + SEP + inputs[rel] if rel in inputs else text)
    return out


def lark_seeds(data):
    out = []
    docs = {}
    for name in ("sql", "json"):
        for r in trace(os.path.join(data, "traces/llama3/%s.jsonl" % name)):
            if r.get("valid"):
                docs[r["grammar"]] = r["text"].encode("utf-8")
                break
    for path in sorted(glob.glob(os.path.join(data, "grammars/lark/**/*.lark"), recursive=True)):
        rel = os.path.relpath(path, data)
        text = read(path)
        out.append(text + SEP + docs[rel] if rel in docs else text)
    return out


def schema_files(data):
    return sorted(glob.glob(os.path.join(data, "jsonschema/maskbench/*.schema.json")))


def maskbench_instances(data):
    out = {}
    for r in trace(os.path.join(data, "traces/llama3/maskbench.jsonl")):
        out.setdefault(r["grammar"][len("schema:"):], r["text"])
    return out


def regex_seeds(data):
    out, seen = [], set()
    instances = maskbench_instances(data)
    for path in schema_files(data):
        try:
            schema = json.loads(read(path))
        except ValueError:
            continue
        sample = first_string(json.loads(instances[os.path.relpath(path, data)])) \
            if os.path.relpath(path, data) in instances else ""
        patterns = []
        for n in walk(schema):
            if isinstance(n, dict):
                if isinstance(n.get("pattern"), str):
                    patterns.append(n["pattern"])
                if isinstance(n.get("patternProperties"), dict):
                    patterns.extend(k for k in n["patternProperties"])
        for p in patterns:
            if p not in seen:
                seen.add(p)
                out.append(p.encode("utf-8") + SEP + sample.encode("utf-8"))
    return out


def schema_seeds(data):
    out = []
    instances = maskbench_instances(data)
    for i, path in enumerate(schema_files(data)):
        rel = os.path.relpath(path, data)
        text = read(path)
        out.append(text + SEP + bytes([i % 16]) + instances.get(rel, "").encode("utf-8"))
    suite = sorted(glob.glob(os.path.join(data, "jsonschema-suite/draft*/**/*.json"), recursive=True))
    for i, path in enumerate(suite):
        out.append(read(path) + SEP + bytes([(i % 8) * 2 + 1]))
    return out


def vocabulary_seeds(data, keep):
    out = []
    for path in sorted(glob.glob(os.path.join(data, "tokenizers/*.json"))):
        t = json.loads(read(path))
        model = t["model"]
        vocab = model["vocab"]
        if isinstance(vocab, dict):
            kept = {k: v for k, v in vocab.items() if v < keep}
            model["vocab"] = kept
        else:
            kept = {v[0]: i for i, v in enumerate(vocab[:keep])}
            model["vocab"] = vocab[:keep]
        if "merges" in model:
            merges = []
            for m in model["merges"]:
                parts = m.split(" ") if isinstance(m, str) else m
                if len(parts) == 2 and all(p in kept for p in parts) and "".join(parts) in kept:
                    merges.append(m)
            model["merges"] = merges
        added = []
        for j, a in enumerate(t.get("added_tokens", [])[:8]):
            a = dict(a)
            a["id"] = keep + j
            added.append(a)
        t["added_tokens"] = added
        out.append(json.dumps(t, ensure_ascii=False).encode("utf-8"))
    return out


def matcher_seeds(count):
    rng = random.Random(16)
    return [bytes(rng.randrange(256) for _ in range(rng.randrange(16, 400))) for _ in range(count)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max", type=int, default=0, help="seeds per target (0: all)")
    ap.add_argument("--max-bytes", type=int, default=16384)
    ap.add_argument("--vocab", type=int, default=400, help="ids kept per tokenizer")
    args = ap.parse_args()
    targets = {
        "gbnf_reader_fuzzer": gbnf_seeds(args.data),
        "lark_reader_fuzzer": lark_seeds(args.data),
        "regex_compiler_fuzzer": regex_seeds(args.data),
        "json_schema_fuzzer": schema_seeds(args.data),
        "vocabulary_fuzzer": vocabulary_seeds(args.data, args.vocab),
        "matcher_fuzzer": matcher_seeds(64),
        "compiled_grammar_fuzzer": [],
    }
    for name, seeds in targets.items():
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        for old in os.listdir(folder):
            os.remove(os.path.join(folder, old))
        seeds = spread([s for s in seeds if len(s) <= args.max_bytes or name == "vocabulary_fuzzer"],
                       args.max)
        for i, s in enumerate(seeds):
            with open(os.path.join(folder, "seed-%05d" % i), "wb") as f:
                f.write(s)
        print("%-22s %5d seeds" % (name, len(seeds)))


if __name__ == "__main__":
    main()
