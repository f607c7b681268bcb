#!/usr/bin/env python3
"""Constrained JSON-Schema generation with zapgram in a torch sampling loop.

For --schemas MaskBench schemas spread evenly over ../shared/data/jsonschema/
maskbench (sorted by name; a schema zapgram refuses in strict mode is
skipped, counted, and the next one taken), samples --samples documents as one batch from a bigram
model over Llama 3 token ids (examples/bigram.py: no model weights here),
masked by zapgram.LogitsProcessor. Every output is parsed with Python's json
and validated with the jsonschema package against the schema; the counts are
printed per schema and in total.

    PYTHONPATH=build/python /usr/bin/python3 examples/json_schema_generation.py
    (or, after installing the package, python3 examples/json_schema_generation.py)

Options: --schemas N (10), --samples K (4), --max-tokens M (256), --seed S (0),
--data DIR (../shared/data next to the repo).
"""

import json
import time

import jsonschema

import zapgram
from bigram import generate, setup, summary, text_of


def main():
    args, tokenizer, model, generator = setup(__doc__, "json-docs", samples=4, max_tokens=256,
                                              more_options=[("--schemas", 10)])
    stop_ids = tokenizer.stop_token_ids
    vocab = tokenizer.decoded_vocab
    compiler = zapgram.GrammarCompiler(tokenizer)

    total = {"samples": 0, "stopped": 0, "json": 0, "schema-valid": 0}
    refused = 0
    started = time.perf_counter()
    paths = sorted((args.data / "jsonschema" / "maskbench").glob("*.schema.json"))
    step = max(1, len(paths) // max(1, args.schemas))
    paths = paths[::step] + [p for i, p in enumerate(paths) if i % step]
    used = 0
    for path in paths:
        if used == args.schemas:
            break
        schema_text = path.read_text(encoding="utf-8")
        try:
            compiled = compiler.compile_json_schema(schema_text)
        except ValueError as e:
            refused += 1
            print(f"{path.name}: not compiled: {str(e).splitlines()[0][:120]}")
            continue
        used += 1
        schema = json.loads(schema_text)
        validator = jsonschema.validators.validator_for(schema)(schema)
        processor = zapgram.LogitsProcessor(compiled, max_threads=2)
        rows, stopped = generate(model, processor, args.samples, stop_ids, args.max_tokens, generator,
                                 start_id=stop_ids[0])
        counts = {"samples": len(rows), "stopped": sum(stopped), "json": 0, "schema-valid": 0}
        for ids, done in zip(rows, stopped):
            text = text_of(ids, vocab)
            try:
                doc = json.loads(text)
            except ValueError:
                if done:
                    print(f"  NOT JSON: {text[:200]!r}")
                continue
            counts["json"] += 1
            errors = list(validator.iter_errors(doc))
            if errors:
                print(f"  INVALID ({errors[0].message[:100]}): {text[:200]!r}")
            else:
                counts["schema-valid"] += 1
        print(summary(path.name, counts) + f"   e.g. {text_of(rows[0], vocab)[:100]!r}")
        for k in total:
            total[k] += counts[k]
    print(summary(f"total over {used} schemas", total) +
          f" (unstopped rows hit --max-tokens; {refused} schemas refused in strict mode;"
          f" {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
