#!/usr/bin/env python3
"""Writes the validation workloads of issue 32 from the shared data.

  OUT/json-19mb.json    one pretty-printed JSON array (indent 2) of the real
                        JSON documents under DATA/docs/json, repeated until it
                        passes --big-mb (default 19) MB
  OUT/json-2mb.json     the same, to a tenth of that size
  OUT/maskbench/S.jsonl for --schemas (default 40) MaskBench schemas, spread
                        over those with at least 5 instances in
                        maskbench.extra-instances.jsonl.gz whose instances
                        average 64 to 256 bytes (as model outputs for a
                        serving stack's schemas are), --per-schema (default
                        3,000) documents each, one JSON
                        text per line (JSON Lines, for `parse --lines`): the
                        schema's instances, cycled; beside it S.schema (the
                        schema's path relative to DATA) and S.labels (one
                        valid/invalid per line, from the instances' labels)

The repetition is deterministic, so two runs write the same bytes.
Usage: perf/make_validation_data.py [--data ../shared/data] [--out build/validation]
"""
import argparse
import collections
import gzip
import json
import os
import sys


def json_documents(data):
    docs = []
    root = os.path.join(data, "docs", "json")
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as f:
                    docs.append(json.load(f))
            except (ValueError, UnicodeDecodeError):
                continue  # a few files are JSON with comments or templates
    return docs


def write_big(docs, path, megabytes):
    pieces = [json.dumps(d, indent=2, ensure_ascii=False) for d in docs]
    target = int(megabytes * 1e6)
    with open(path, "w", encoding="utf-8") as f:
        f.write("[\n")
        written, i = 2, 0
        while written < target:
            piece = pieces[i % len(pieces)]
            if i:
                f.write(",\n")
                written += 2
            f.write(piece)
            written += len(piece.encode("utf-8"))
            i += 1
        f.write("\n]\n")


def write_maskbench(data, out, schemas, per_schema):
    by_schema = collections.defaultdict(list)
    with gzip.open(os.path.join(data, "jsonschema", "maskbench.extra-instances.jsonl.gz"), "rt") as f:
        for line in f:
            record = json.loads(line)
            grammar = record["grammar"]
            name = os.path.basename(grammar[len("schema:"):])
            by_schema[name].append((record["text"], bool(record["valid"])))
    def mean_bytes(n):
        return sum(len(t.encode("utf-8")) for t, _ in by_schema[n]) / len(by_schema[n])
    candidates = sorted(n for n in by_schema if len(by_schema[n]) >= 5 and 64 <= mean_bytes(n) <= 256)
    step = max(1, len(candidates) // schemas)
    chosen = candidates[::step][:schemas]
    folder = os.path.join(out, "maskbench")
    os.makedirs(folder, exist_ok=True)
    total = 0
    for name in chosen:
        stem = name[: -len(".schema.json")]
        instances = by_schema[name]
        with open(os.path.join(folder, stem + ".jsonl"), "w", encoding="utf-8") as docs, \
             open(os.path.join(folder, stem + ".labels"), "w") as labels:
            for k in range(per_schema):
                text, valid = instances[k % len(instances)]
                # One line per document: a document's own newlines are JSON
                # whitespace, so re-serializing would change its bytes; the
                # instances are single-line already, except a few that are
                # written compact here (same value, same verdict).
                if "\n" in text:
                    try:
                        text = json.dumps(json.loads(text), ensure_ascii=False)
                    except ValueError:
                        text = text.replace("\n", " ")
                docs.write(text + "\n")
                labels.write("valid\n" if valid else "invalid\n")
                total += len(text.encode("utf-8")) + 1
        with open(os.path.join(folder, stem + ".schema"), "w") as f:
            f.write(os.path.join("jsonschema", "maskbench", name) + "\n")
    return len(chosen), total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data"))
    parser.add_argument("--out", default=os.path.join(here, "..", "build", "validation"))
    parser.add_argument("--big-mb", type=float, default=19.0)
    parser.add_argument("--schemas", type=int, default=40)
    parser.add_argument("--per-schema", type=int, default=3000)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    docs = json_documents(args.data)
    if not docs:
        sys.exit(f"no JSON documents under {args.data}/docs/json")
    write_big(docs, os.path.join(args.out, "json-19mb.json"), args.big_mb)
    write_big(docs, os.path.join(args.out, "json-2mb.json"), args.big_mb / 10)
    count, total = write_maskbench(args.data, args.out, args.schemas, args.per_schema)
    print(f"{len(docs)} JSON documents -> json-19mb.json, json-2mb.json; "
          f"{count} schemas x {args.per_schema} documents ({total / 1e6:.1f} MB) -> maskbench/")


if __name__ == "__main__":
    main()
