"""GrammarMatcher.compute_ff_tokens: canonical fast-forward tokens (Llama 3).

The tokens spell a prefix of find_jump_forward_bytes(), are accepted one by
one, leave the matcher unchanged, and stop before a token that what follows
could respell (llguidance's `order` / `orderId` case). A TokenizerInfo built
from a token list has no merges to encode with: ValueError.
"""

import pytest

import zapgram

ORDER_SCHEMA = {
    "type": "object",
    "properties": {"orderId": {"type": "string"}, "orderName": {"type": "string"}},
    "required": [],
    "additionalProperties": False,
}
PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name_of_the_person": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name_of_the_person", "age"],
    "additionalProperties": False,
}


def spell(info, ids):
    vocab = info.decoded_vocab
    return b"".join(vocab[i] for i in ids)


def test_ff_tokens_are_a_canonical_prefix_of_the_forced_bytes(llama3, llama3_compiler):
    m = zapgram.GrammarMatcher(llama3_compiler.compile_json_schema(PERSON_SCHEMA, any_whitespace=False))
    assert m.accept_string('{"')
    forced = m.find_jump_forward_bytes()
    assert forced.startswith(b'name_of_the_person":')
    ff = m.compute_ff_tokens()
    assert all(isinstance(i, int) for i in ff)
    # The closing quote could become `":` or `":"`: it is not forced as a token.
    assert spell(llama3, ff) == b"name_of_the_person"
    assert m.find_jump_forward_bytes() == forced  # unchanged
    for token in ff:
        assert m.accept_token(token)
    assert m.compute_ff_tokens() == []  # `":` is still open to what follows


def test_ff_tokens_leave_out_a_word_a_longer_token_could_take(llama3, llama3_compiler):
    m = zapgram.GrammarMatcher(llama3_compiler.compile_json_schema(ORDER_SCHEMA, any_whitespace=False))
    assert m.accept_string('{"')
    assert m.find_jump_forward_bytes() == b"order"
    # `order` then `Id` is not how Llama 3 spells `orderId`: nothing is forced.
    assert m.compute_ff_tokens() == []
    assert m.accept_string("orderId")
    assert m.find_jump_forward_bytes() == b'":"'
    assert m.compute_ff_tokens() == []  # a punctuation run the string's first byte may extend


def test_ff_tokens_empty_when_nothing_is_forced_or_terminated(llama3, llama3_compiler):
    m = zapgram.GrammarMatcher(llama3_compiler.compile_builtin_json_grammar())
    assert m.find_jump_forward_bytes() == b""
    assert m.compute_ff_tokens() == []
    assert m.accept_string("[1]")
    assert m.accept_token(llama3.stop_token_ids[0])
    assert m.is_terminated()
    assert m.compute_ff_tokens() == []


def test_ff_tokens_need_a_tokenizer_json(small_compiler):
    m = zapgram.GrammarMatcher(small_compiler.compile_regex("abc"))
    with pytest.raises(ValueError, match="tokenizer.json"):
        m.compute_ff_tokens()
