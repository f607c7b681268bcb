"""zapgram: grammar-constrained decoding masks for Python serving stacks.

The names and shapes follow XGrammar's Python API, so that a serving framework
can swap engines with little glue:

    tokenizer_info = zapgram.TokenizerInfo.from_huggingface("tokenizer.json")
    compiler = zapgram.GrammarCompiler(tokenizer_info)
    compiled = compiler.compile_json_schema(schema)        # or compile_grammar(...)
    matcher = zapgram.GrammarMatcher(compiled)
    bitmask = zapgram.allocate_token_bitmask(1, tokenizer_info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask, 0)
    zapgram.apply_token_bitmask_inplace(logits, bitmask)   # disallowed logits -> -inf
    matcher.accept_token(next_token)

Bitmasks are int32 rows of ceil(vocab_size / 32) words; token i is allowed
iff bit i % 32 of word i // 32 is set (XGrammar's and vLLM's layout). Torch
CPU tensors and numpy arrays are both accepted wherever a bitmask or logits
go; torch is imported only when asked for (allocate_token_bitmask).

Where it lives: the C++ engine is the extension module zapgram._core
(python/src/module.cc); TokenizerInfo (tokenizer_info.py), GrammarCompiler
(compiler.py), the bitmask helpers (bitmask.py) and LogitsProcessor
(logits_processor.py) are Python. Differences from XGrammar are listed in the
README's Python section.
"""

from ._core import BatchGrammarMatcher, CompiledGrammar, GrammarMatcher, apply_token_bitmask_inplace
from .bitmask import allocate_token_bitmask, get_bitmask_shape, reset_token_bitmask
from .compiler import GrammarCompiler, StructuralTagItem
from .logits_processor import LogitsProcessor
from .tokenizer_info import TokenizerInfo, VocabType

__all__ = [
    "StructuralTagItem",
    "BatchGrammarMatcher",
    "CompiledGrammar",
    "GrammarCompiler",
    "GrammarMatcher",
    "LogitsProcessor",
    "TokenizerInfo",
    "VocabType",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "get_bitmask_shape",
    "reset_token_bitmask",
]
