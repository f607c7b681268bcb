"""Persistent compiled grammars from Python: serialize()/deserialize(),
XGrammar's serialize_json()/deserialize_json(), and GrammarCompiler's
cache_dir (zapgram/compiler.py; the format: api/grammar_serializer.cc)."""

import base64
import json
import os

import numpy as np
import pytest

import zapgram

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                            "n": {"type": "integer"}}, "required": ["name", "n"]}


def masks_along(compiled, tokenizer_info, text_tokens):
    """The bitmask before each token of the walk and at its end."""
    matcher = zapgram.GrammarMatcher(compiled)
    bitmask = zapgram.allocate_token_bitmask(1, tokenizer_info.vocab_size)
    rows = []
    for token in text_tokens:
        matcher.fill_next_token_bitmask(bitmask, 0)
        rows.append(np.array(bitmask[0]).copy())
        assert matcher.accept_token(token)
    matcher.fill_next_token_bitmask(bitmask, 0)
    rows.append(np.array(bitmask[0]).copy())
    return rows


def walk(compiled, tokenizer_info, steps=25):
    """Tokens of a walk that always takes the lowest allowed normal id."""
    matcher = zapgram.GrammarMatcher(compiled)
    bitmask = zapgram.allocate_token_bitmask(1, tokenizer_info.vocab_size)
    vocab = tokenizer_info._vocab
    tokens = []
    for _ in range(steps):
        matcher.fill_next_token_bitmask(bitmask, 0)
        bits = np.unpackbits(np.array(bitmask[0]).view(np.uint8), bitorder="little")
        allowed = np.nonzero(bits[:tokenizer_info.vocab_size])[0]
        start = len(tokens) * 7919 % max(len(allowed), 1)
        picks = [int(i) for i in np.concatenate([allowed[start:], allowed[:start]]) if vocab.is_normal(int(i))][:1]
        if not picks:
            break
        tokens.append(picks[0])
        assert matcher.accept_token(tokens[-1])
    return tokens


@pytest.fixture(scope="module")
def compiled(llama3):
    return zapgram.GrammarCompiler(llama3).compile_json_schema(SCHEMA)


def test_round_trips_give_equal_masks(llama3, compiled):
    tokens = walk(compiled, llama3)
    expected = masks_along(compiled, llama3, tokens)
    for loaded in (zapgram.CompiledGrammar.deserialize(compiled.serialize(), llama3),
                   zapgram.CompiledGrammar.deserialize_json(compiled.serialize_json(), llama3)):
        assert loaded.tokenizer_info is llama3
        assert loaded.warnings == compiled.warnings
        got = masks_along(loaded, llama3, tokens)
        assert all((a == b).all() for a, b in zip(expected, got))
        assert loaded.serialize() == compiled.serialize()


def test_json_form(llama3, compiled):
    obj = json.loads(compiled.serialize_json())
    assert obj["format"] == "zapgram.CompiledGrammar"
    assert obj["version"] == zapgram._core.SERIAL_FORMAT_VERSION
    assert obj["vocabulary_fingerprint"] == f"{llama3._vocab.fingerprint:016x}"
    assert base64.b64decode(obj["payload"]) == compiled.serialize()
    assert obj["bytes"] == len(compiled.serialize())


def test_lark_and_warnings_travel(llama3):
    compiler = zapgram.GrammarCompiler(llama3)
    lark = compiler.compile_lark('start: NAME ("," NAME)*\nNAME: /[a-z]+/\n')
    loaded = zapgram.CompiledGrammar.deserialize(lark.serialize(), llama3)
    tokens = walk(lark, llama3, 12)
    assert all((a == b).all() for a, b in zip(masks_along(lark, llama3, tokens), masks_along(loaded, llama3, tokens)))
    lenient = compiler.compile_json_schema({"type": "array", "uniqueItems": True}, strict=False)
    assert lenient.warnings
    assert zapgram.CompiledGrammar.deserialize_json(lenient.serialize_json(), llama3).warnings == lenient.warnings


def test_errors(llama3, compiled):
    data = compiled.serialize()
    small = zapgram.TokenizerInfo(["a", "b", "{", "}"], stop_token_ids=[])
    with pytest.raises(ValueError, match="another vocabulary"):
        zapgram.CompiledGrammar.deserialize(data, small)
    with pytest.raises(ValueError, match="another vocabulary"):
        zapgram.CompiledGrammar.deserialize_json(compiled.serialize_json(), small)
    with pytest.raises(ValueError, match="truncated"):
        zapgram.CompiledGrammar.deserialize(data[:-5], llama3)
    corrupt = bytearray(data)
    corrupt[len(corrupt) // 2] ^= 0x41
    with pytest.raises(ValueError, match="checksum"):
        zapgram.CompiledGrammar.deserialize(bytes(corrupt), llama3)
    with pytest.raises(ValueError, match="not a zapgram compiled grammar"):
        zapgram.CompiledGrammar.deserialize(b"root ::= 'a'", llama3)
    obj = json.loads(compiled.serialize_json())
    with pytest.raises(ValueError, match="format version 99"):
        zapgram.CompiledGrammar.deserialize_json(json.dumps(dict(obj, version=99)), llama3)
    with pytest.raises(ValueError, match="not base64"):
        zapgram.CompiledGrammar.deserialize_json(json.dumps(dict(obj, payload="@@@")), llama3)
    with pytest.raises(ValueError, match="not JSON"):
        zapgram.CompiledGrammar.deserialize_json("{", llama3)
    with pytest.raises(TypeError, match="deserialize_json"):
        zapgram.CompiledGrammar.deserialize(compiled.serialize_json(), llama3)
    with pytest.raises(TypeError, match="TokenizerInfo"):
        zapgram.CompiledGrammar.deserialize(data, "tokenizer.json")


def test_cache_dir_compiles_once_and_shares(llama3, tmp_path):
    first = zapgram.GrammarCompiler(llama3, cache_dir=tmp_path)
    a = first.compile_json_schema(SCHEMA, strict=False)
    assert first._disk.misses == 1 and first._disk.hits == 0
    files = [p for p in os.listdir(tmp_path) if p.endswith(".zgc")]
    assert len(files) == 1
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    # Another process (a fresh compiler, its memory cache empty) loads it.
    second = zapgram.GrammarCompiler(llama3, cache_dir=str(tmp_path))
    b = second.compile_json_schema(SCHEMA, strict=False)
    assert second._disk.hits == 1 and second._disk.misses == 0
    tokens = walk(a, llama3)
    assert all((x == y).all() for x, y in zip(masks_along(a, llama3, tokens), masks_along(b, llama3, tokens)))
    # Other options, another file.
    second.compile_json_schema(SCHEMA, strict=False, any_whitespace=False)
    second.compile_grammar('root ::= "x"')
    assert len([p for p in os.listdir(tmp_path) if p.endswith(".zgc")]) == 3


def test_cache_dir_ignores_and_rewrites_bad_files(llama3, tmp_path):
    compiler = zapgram.GrammarCompiler(llama3, cache_dir=tmp_path, cache_enabled=False)
    good = compiler.compile_grammar('root ::= "ab"+')
    (path,) = [tmp_path / p for p in os.listdir(tmp_path)]
    original = path.read_bytes()
    for bad in (b"", b"garbage", original[:-1], original[:60] + bytes([original[60] ^ 1]) + original[61:]):
        path.write_bytes(bad)
        again = compiler.compile_grammar('root ::= "ab"+')
        assert again.serialize() == good.serialize()
        assert path.read_bytes() == original  # rewritten
    assert compiler._disk.rejected >= 3
    # A file of another vocabulary under the same name is rejected too.
    small = zapgram.TokenizerInfo(["a", "b"], stop_token_ids=[])
    path.write_bytes(zapgram.GrammarCompiler(small).compile_grammar('root ::= "ab"+').serialize())
    assert compiler.compile_grammar('root ::= "ab"+').serialize() == original


def test_cache_dir_unwritable_still_compiles(llama3, tmp_path):
    compiler = zapgram.GrammarCompiler(llama3, cache_dir=tmp_path, cache_enabled=False)
    os.chmod(tmp_path, 0o500)
    try:
        compiled = compiler.compile_grammar('root ::= "q"')
        assert compiled.mask_words > 0
    finally:
        os.chmod(tmp_path, 0o700)
    if os.geteuid() != 0:  # root writes anyway
        assert compiler._disk.write_errors == 1


def test_cache_dir_argument_type(llama3):
    with pytest.raises(TypeError, match="cache_dir"):
        zapgram.GrammarCompiler(llama3, cache_dir=3)
