#!/usr/bin/env python3
"""Constrained generation from a Lark grammar: SQL queries with SynCode's sql.lark.

Compiles ../shared/data/grammars/lark/syncode/sql.lark (Lark text; its
`%import common.X` lines resolve to Lark's common grammar) for Llama 3,
samples --samples queries in batches of --batch from a bigram model over the
sql trace's token ids (examples/bigram.py), masked by zapgram.LogitsProcessor,
and checks every finished query with an independent parser: the `lark`
package (python3-lark) parsing the same grammar file.

    PYTHONPATH=build/python /usr/bin/python3 examples/lark_generation.py

Options: --samples N (16), --batch B (8), --max-tokens M (128), --seed S (0),
--data DIR.
"""

import time

import lark

import zapgram
from bigram import generate, setup, summary, text_of


def main():
    args, tokenizer, model, generator = setup(__doc__, "sql", samples=16, max_tokens=128,
                                              more_options=[("--batch", 8)])
    grammar_text = (args.data / "grammars" / "lark" / "syncode" / "sql.lark").read_text(encoding="utf-8")
    stop_ids = tokenizer.stop_token_ids
    started = time.perf_counter()
    compiled = zapgram.GrammarCompiler(tokenizer).compile_grammar(grammar_text, format="lark")
    print(f"compiled sql.lark in {time.perf_counter() - started:.2f} s")
    reference = lark.Lark(grammar_text, parser="earley", lexer="basic")
    vocab = tokenizer.decoded_vocab

    counts = {"samples": 0, "stopped": 0, "parsed by lark": 0}
    done = 0
    while done < args.samples:
        batch = min(args.batch, args.samples - done)
        processor = zapgram.LogitsProcessor(compiled, max_threads=2)
        rows, stopped = generate(model, processor, batch, stop_ids, args.max_tokens, generator,
                                 start_id=stop_ids[0])
        for ids, finished in zip(rows, stopped):
            counts["samples"] += 1
            if not finished:
                continue
            counts["stopped"] += 1
            query = text_of(ids, vocab)
            try:
                reference.parse(query)
                counts["parsed by lark"] += 1
                print(f"  ok: {query!r}")
            except lark.exceptions.LarkError as e:
                print(f"  REJECTED by lark ({type(e).__name__}): {query!r}")
        done += batch
    print(summary("sql.lark", counts) + f" (unstopped rows hit --max-tokens; {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
