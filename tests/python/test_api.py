"""TokenizerInfo, GrammarCompiler and GrammarMatcher: every call and its errors.

Masks are checked as sets of allowed ids on a small vocabulary whose answers
can be worked out by hand; the Llama 3 tests check the real tokenizer.json
path. Errors must be Python exceptions carrying the engine's message (place
and reason), never a crash.
"""

import json

import pytest

import zapgram
from conftest import LLAMA3, SMALL_TOKENS, allowed_ids


def ids_of(*pieces):
    return sorted(SMALL_TOKENS.index(p) for p in pieces)


def mask(matcher, vocab_size=40):
    bitmask = zapgram.allocate_token_bitmask(1, vocab_size, backend="numpy")
    matcher.fill_next_token_bitmask(bitmask, 0)
    return allowed_ids(bitmask[0], vocab_size)


# ---- TokenizerInfo ----

def test_tokenizer_info_from_tokenizer_json(llama3):
    assert llama3.vocab_size == 128256
    assert 128009 in llama3.stop_token_ids  # <|eot_id|>
    assert llama3.decoded_vocab[15339] == b"hello"
    assert 128000 in llama3.special_token_ids and 15339 not in llama3.special_token_ids


def test_tokenizer_info_padding_and_stop_override():
    info = zapgram.TokenizerInfo.from_huggingface(str(LLAMA3), vocab_size=128512, stop_token_ids=[128001])
    assert info.vocab_size == 128512
    assert info.stop_token_ids == [128001]


def test_tokenizer_info_folder_and_object(tmp_path):
    (tmp_path / "tokenizer.json").write_bytes(LLAMA3.read_bytes())
    assert zapgram.TokenizerInfo.from_huggingface(tmp_path).vocab_size == 128256

    class Backend:  # what a Hugging Face fast tokenizer's backend_tokenizer offers
        def to_str(self):
            return LLAMA3.read_text(encoding="utf-8")

    class FastTokenizer:
        backend_tokenizer = Backend()

    assert zapgram.TokenizerInfo.from_huggingface(FastTokenizer()).vocab_size == 128256
    with pytest.raises(TypeError, match="tokenizer.json path or a fast tokenizer"):
        zapgram.TokenizerInfo.from_huggingface(42)
    with pytest.raises(FileNotFoundError):
        zapgram.TokenizerInfo.from_huggingface(str(tmp_path / "missing.json"))


def test_tokenizer_info_from_list(small):
    assert small.vocab_size == 40
    assert small.stop_token_ids == [0]
    assert small.decoded_vocab[28] == "é".encode()
    # Ids past the list are padding: special, never allowed.
    assert set(range(30, 40)) <= set(small.special_token_ids)


def test_tokenizer_info_vocab_types():
    byte_level = zapgram.TokenizerInfo(["<eos>", "Ġhello", "ĊĠ", "Ã©"], zapgram.VocabType.BYTE_LEVEL,
                                       stop_token_ids=0)
    assert byte_level.decoded_vocab[1:] == [b" hello", b"\n ", "é".encode()]
    fallback = zapgram.TokenizerInfo(["</s>", "▁hello", "<0x0A>", "é"], zapgram.VocabType.BYTE_FALLBACK,
                                     stop_token_ids=[0])
    assert fallback.decoded_vocab[1:] == [b" hello", b"\n", "é".encode()]
    with pytest.raises(ValueError, match="EOS id 7"):
        zapgram.TokenizerInfo([b"a"], stop_token_ids=[7])
    with pytest.raises(ValueError, match="smaller"):
        zapgram.TokenizerInfo([b"a", b"b"], vocab_size=1)


# ---- GrammarCompiler ----

def test_compile_each_format(small_compiler):
    compiled = {
        "gbnf": small_compiler.compile_grammar('root ::= "[" ("1" | "2")* "]"'),
        "lark": small_compiler.compile_grammar('start: "[" DIGIT* "]"\n%import common.DIGIT', format="lark"),
        "regex": small_compiler.compile_regex(r"\[[12]*\]"),
    }
    for name, c in compiled.items():
        m = zapgram.GrammarMatcher(c)
        assert mask(m) == ids_of(b"["), name
        assert m.accept_string("[1")
        assert mask(m) == ids_of(b"]", b"1", b"2", b"12"), name
    builtin = small_compiler.compile_builtin_json_grammar()
    m = zapgram.GrammarMatcher(builtin)
    assert m.accept_string('{"a": [true, null]}')
    assert m.is_completed()


def test_compile_json_schema_text_dict_and_options(small_compiler):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
              "additionalProperties": False}
    from_dict = small_compiler.compile_json_schema(schema)
    from_text = small_compiler.compile_json_schema(json.dumps(schema))
    for c in (from_dict, from_text):
        m = zapgram.GrammarMatcher(c)
        assert m.accept_string('{"a": 12}')
        assert not zapgram.GrammarMatcher(c).accept_string('{"b": 1}')
    # any_whitespace=False: no space after the colon.
    compact = zapgram.GrammarMatcher(small_compiler.compile_json_schema(schema, any_whitespace=False))
    assert not compact.accept_string('{"a": 1}')
    assert compact.accept_string('{"a":1}')

    # max_whitespace_cnt bounds the whitespace run; any_order lets members swap.
    two = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
           "required": ["a", "b"], "additionalProperties": False}
    assert zapgram.GrammarMatcher(small_compiler.compile_json_schema(two)).accept_string('{"a":  1')
    bounded = small_compiler.compile_json_schema(two, max_whitespace_cnt=1)
    assert not zapgram.GrammarMatcher(bounded).accept_string('{"a":  1')
    assert zapgram.GrammarMatcher(bounded).accept_string('{"a": 1')
    assert not zapgram.GrammarMatcher(small_compiler.compile_json_schema(two)).accept_string('{"b": 1, "a": 2}')
    assert zapgram.GrammarMatcher(small_compiler.compile_json_schema(two, any_order=True)).accept_string(
        '{"b": 1, "a": 2}')
    # validation=True: JSON text as a validator reads it (pretty, reordered, escaped).
    pretty = '\n{\n    "b": 1,\n    "\\u0061": 2\n}\n'
    validating = small_compiler.compile_json_schema(two, validation=True)
    v = zapgram.GrammarMatcher(validating)
    assert v.accept_string(pretty) and v.is_completed()
    assert not zapgram.GrammarMatcher(small_compiler.compile_json_schema(two)).accept_string(pretty)
    assert not zapgram.GrammarMatcher(validating).accept_string('{\n    "b": 1,\n    "a": "2"')

    class Model:  # a pydantic-style class
        @staticmethod
        def model_json_schema():
            return {"type": "array", "items": {"type": "boolean"}}

    m = zapgram.GrammarMatcher(small_compiler.compile_json_schema(Model))
    assert m.accept_string("[true]") and m.is_completed()


def test_compile_json_schema_strict_and_lenient(small_compiler):
    schema = {"type": "array", "uniqueItems": True}
    with pytest.raises(ValueError, match="uniqueItems"):
        small_compiler.compile_json_schema(schema)
    lenient = small_compiler.compile_json_schema(schema, strict=False)
    assert any("uniqueItems" in w for w in lenient.warnings)
    with pytest.raises(ValueError, match="indent"):
        small_compiler.compile_json_schema(schema, indent=2)


def test_compile_errors_name_place_and_reason(small_compiler):
    with pytest.raises(ValueError, match=r"<text>:2:\d+"):
        small_compiler.compile_grammar('root ::= "a" b\nb ::= (')
    with pytest.raises(ValueError, match="undefined|not defined|unknown"):
        small_compiler.compile_grammar("root ::= missing")
    with pytest.raises(ValueError, match=r"<text>:1:"):
        small_compiler.compile_grammar('start: "a" (', format="lark")
    with pytest.raises(ValueError):
        small_compiler.compile_regex("(ab")
    with pytest.raises(ValueError):
        small_compiler.compile_json_schema('{"type": ')
    with pytest.raises(ValueError, match="strin"):
        small_compiler.compile_json_schema({"type": "strin"})
    with pytest.raises(ValueError, match="unknown grammar format"):
        small_compiler.compile_grammar("x", format="yaml")
    with pytest.raises(FileNotFoundError):
        small_compiler.compile_grammar("nope", format="builtin")
    with pytest.raises(TypeError):
        small_compiler.compile_grammar(b"root ::= \"a\"")


def test_compiler_cache_is_bounded(small):
    compiler = zapgram.GrammarCompiler(small, cache_limit=2)
    a = compiler.compile_regex("a")
    assert compiler.compile_regex("a") is a
    compiler.compile_regex("b")
    compiler.compile_regex("ab")
    assert compiler.cache_size == 2
    assert compiler.compile_regex("a") is not a  # evicted, compiled again
    uncached = zapgram.GrammarCompiler(small, cache_enabled=False)
    assert uncached.compile_regex("a") is not uncached.compile_regex("a")


def test_compiler_cache_is_bounded_in_bytes(small):
    sizes = [zapgram.GrammarCompiler(small).compile_regex(p).memory_bytes for p in ("a+", "b+c", "(ab)*d")]
    assert all(size > 0 for size in sizes)
    limit = max(sizes) + min(sizes) // 2  # room for one grammar, not two
    compiler = zapgram.GrammarCompiler(small, cache_limit_bytes=limit)
    first = compiler.compile_regex("a+")
    compiler.compile_regex("b+c")
    compiler.compile_regex("(ab)*d")
    assert compiler.cache_size == 1  # the newest stays, the others went
    assert compiler.compile_regex("a+") is not first
    unbounded = zapgram.GrammarCompiler(small)  # cache_limit_bytes=-1
    for p in ("a+", "b+c", "(ab)*d"):
        unbounded.compile_regex(p)
    assert unbounded.cache_size == 3


# ---- GrammarMatcher ----

@pytest.fixture
def list_matcher(small_compiler):
    return zapgram.GrammarMatcher(small_compiler.compile_grammar('root ::= "[" ("1" | "2")* "]"'))


def test_accept_token_and_stop_token(list_matcher):
    m = list_matcher
    assert m.stop_token_ids == [0]
    assert not m.accept_token(0)  # the grammar does not accept yet
    assert m.accept_token(SMALL_TOKENS.index(b"["))
    assert not m.accept_token(SMALL_TOKENS.index(b"a"))  # refused: state unchanged
    assert m.accept_token(SMALL_TOKENS.index(b"12"))
    assert m.accept_token(SMALL_TOKENS.index(b"]"))
    assert m.is_completed() and not m.is_terminated()
    assert mask(m) == [0]  # only the stop token
    assert m.accept_token(0)
    assert m.is_terminated()
    assert not m.accept_token(SMALL_TOKENS.index(b"1"))
    with pytest.raises(RuntimeError, match="terminated"):
        mask(m)
    m.rollback(1)  # un-accepts the stop token
    assert not m.is_terminated() and mask(m) == [0]
    m.reset()
    assert mask(m) == ids_of(b"[")


def test_out_of_range_and_special_ids_are_refused(list_matcher):
    # Padding (35) and the stop token before the end are refused; ids outside
    # the vocabulary are a caller's bug and raise (test_bad_input.py has more).
    for refused in (35, 0):
        assert not list_matcher.accept_token(refused)
    for bad in (-1, 40, 10**6):
        with pytest.raises(ValueError, match="not a token id"):
            list_matcher.accept_token(bad)
    with pytest.raises(ValueError, match=r"tokens\[1\] is 1000000"):
        list_matcher.validate_tokens([SMALL_TOKENS.index(b"["), 10**6])
    with pytest.raises(TypeError):
        list_matcher.accept_token("1")
    with pytest.raises(ValueError, match="not a token id"):
        list_matcher.validate_tokens([2**40])


def test_accept_string_rollback_and_validate(list_matcher):
    m = list_matcher
    assert m.accept_string("[1")
    assert not m.accept_string("x")
    assert m.accept_string(b"2")
    assert mask(m) == ids_of(b"]", b"1", b"2", b"12")
    m.rollback(2)  # both byte runs
    assert mask(m) == ids_of(b"[")
    with pytest.raises(RuntimeError, match="cannot roll back"):
        m.rollback(1)
    with pytest.raises(ValueError):
        m.rollback(-1)
    ids = [SMALL_TOKENS.index(p) for p in (b"[", b"1", b"]", b"2")]
    assert m.validate_tokens(ids) == 3
    assert m.validate_tokens(ids[:3] + [0]) == 4  # the stop token after a sentence
    assert mask(m) == ids_of(b"[")  # validate_tokens leaves the state alone


def test_fork_goes_its_own_way(list_matcher):
    m = list_matcher
    assert m.accept_string("[1")
    f = m.fork()
    assert mask(f) == mask(m)
    assert m.accept_string("]")  # the original closes the list
    assert m.is_completed() and not f.is_completed()
    assert f.accept_string(b"2")  # the fork goes on inside it
    assert mask(f) == ids_of(b"]", b"1", b"2", b"12")
    assert mask(m) == [0]  # the stop token only
    f.rollback(1)
    assert mask(f) == ids_of(b"]", b"1", b"2", b"12")
    f.rollback(1)  # back to the fork point: the original's "]" is not there
    assert mask(f) == ids_of(b"[")
    g = m.fork()  # a fork of a completed matcher is completed
    assert g.is_completed()
    assert g.accept_token(0) and g.is_terminated() and not m.is_terminated()


def test_rollback_budget_is_in_bytes(small_compiler):
    m = zapgram.GrammarMatcher(small_compiler.compile_regex("1*"), max_rollback_bytes=4)
    for _ in range(10):
        assert m.accept_token(SMALL_TOKENS.index(b"1"))
    m.rollback(4)
    with pytest.raises(RuntimeError, match="max_rollback_bytes"):
        m.rollback(5)


def test_find_jump_forward_string(small_compiler):
    m = zapgram.GrammarMatcher(small_compiler.compile_json_schema(
        {"type": "object", "properties": {"name": {"const": "zé"}}, "required": ["name"],
         "additionalProperties": False}, any_whitespace=False))
    assert m.find_jump_forward_string() == '{"name":"zé"}'
    assert m.accept_string('{"name":"z')
    assert m.find_jump_forward_string() == 'é"}'
    assert m.accept_string(b'\xc3')  # half of é: the jump string holds whole characters only
    assert m.find_jump_forward_string() == ""
    assert m.find_jump_forward_bytes() == b'\xa9"}'


def test_terminate_without_stop_token(small_compiler):
    m = zapgram.GrammarMatcher(small_compiler.compile_regex("ab"), terminate_without_stop_token=True)
    assert not m.is_terminated()
    assert m.accept_string("ab")
    assert m.is_terminated()
    assert mask(m) == [0]


def test_override_stop_tokens(small_compiler):
    c = small_compiler.compile_regex("a")
    zapgram.GrammarMatcher(c, override_stop_tokens=0)  # the vocabulary's own: fine
    with pytest.raises(ValueError, match="override_stop_tokens"):
        zapgram.GrammarMatcher(c, override_stop_tokens=[5])


def test_matcher_needs_a_compiled_grammar():
    with pytest.raises(TypeError):
        zapgram.GrammarMatcher("root ::= \"a\"")


def test_fill_checks_the_bitmask(list_matcher):
    numpy = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="int32"):
        list_matcher.fill_next_token_bitmask(numpy.zeros((1, 2), dtype=numpy.int64))
    with pytest.raises(TypeError, match="int32"):
        list_matcher.fill_next_token_bitmask(torch.zeros((1, 2), dtype=torch.float32))
    with pytest.raises(ValueError, match="2 contiguous int32 words"):
        list_matcher.fill_next_token_bitmask(numpy.zeros((1, 3), dtype=numpy.int32))
    with pytest.raises(ValueError, match="2 contiguous int32 words"):
        list_matcher.fill_next_token_bitmask(torch.zeros((2, 1), dtype=torch.int32))
    with pytest.raises(ValueError, match="contiguous"):
        list_matcher.fill_next_token_bitmask(torch.zeros((2, 4), dtype=torch.int32)[:, ::2])
    with pytest.raises(ValueError, match="dimensions"):
        list_matcher.fill_next_token_bitmask(numpy.zeros((1, 1, 2), dtype=numpy.int32))
    with pytest.raises(IndexError, match="row 3"):
        list_matcher.fill_next_token_bitmask(numpy.zeros((2, 2), dtype=numpy.int32), 3)
    with pytest.raises(IndexError):
        list_matcher.fill_next_token_bitmask(numpy.zeros((2, 2), dtype=numpy.int32), -1)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        list_matcher.fill_next_token_bitmask([[0, 0]])
    readonly = numpy.zeros((1, 2), dtype=numpy.int32)
    readonly.setflags(write=False)
    with pytest.raises(ValueError, match="writable"):
        list_matcher.fill_next_token_bitmask(readonly)
    # 1-D bitmasks and row views work.
    row = numpy.zeros(2, dtype=numpy.int32)
    assert list_matcher.fill_next_token_bitmask(row)
    assert allowed_ids(row, 40) == ids_of(b"[")
    big = torch.zeros((3, 2), dtype=torch.int32)
    list_matcher.fill_next_token_bitmask(big[1:], 1)
    assert allowed_ids(big[2], 40) == ids_of(b"[") and int(big[1].abs().sum()) == 0


def test_compile_structural_tag(small_compiler):
    schema = {"type": "object", "properties": {"city": {"type": "string"}},
              "required": ["city"], "additionalProperties": False}
    compiled = small_compiler.compile_structural_tag(
        [zapgram.StructuralTagItem(begin="<function=weather>", schema=schema, end="</function>")],
        ["<function="])
    ok = zapgram.GrammarMatcher(compiled)
    assert ok.accept_string('I will call it: <function=weather>{"city": "Paris"}</function> done')
    bad = zapgram.GrammarMatcher(compiled)
    assert not bad.accept_string('<function=weather>{"town": "Paris"}')
    qwen = small_compiler.compile_structural_tag_format(
        "qwen2_5", [{"name": "weather", "parameters": schema}])
    m = zapgram.GrammarMatcher(qwen)
    assert m.accept_string('Sure.<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo"}}\n</tool_call>')
    with pytest.raises(ValueError, match="starts with no trigger"):
        small_compiler.compile_structural_tag(
            [{"begin": "<x>", "schema": schema, "end": "</x>"}], ["<function="])


def test_structural_tag_with_token_triggers(small_compiler):
    # Trigger, begin and end as single tokens ({"token": id or text}): id 9
    # ("a") opens the tag, id 10 ("b") closes it; "a" is never free text.
    compiled = small_compiler.compile_structural_tag(
        [{"begin": {"token": "a"}, "schema": {"grammar": "root ::= [0-9]+"}, "end": {"token": 10}}], [{"token": "a"}])
    m = zapgram.GrammarMatcher(compiled)
    assert m.accept_token(24)  # "x": a free token
    assert m.accept_token(9)  # the trigger
    assert not m.accept_token(24)  # inside: digits only
    assert m.accept_token(20) and m.accept_token(10)  # "12", then the end token
    assert m.accept_token(0) and m.is_terminated()
    with pytest.raises(ValueError, match='unknown token "zz"'):
        small_compiler.compile_structural_tag(
            [{"begin": {"token": "zz"}, "schema": {"grammar": "root ::= [0-9]+"}, "end": ""}], [{"token": "zz"}])
    # The EBNF macros, by id and by text.
    tokens = small_compiler.compile_grammar('root ::= Token("x") ExcludeToken(9, 10)* Token(25)', format="ebnf")
    m = zapgram.GrammarMatcher(tokens)
    assert not m.accept_string("x")  # text never matches a token
    assert m.accept_token(24) and m.accept_token(13) and not m.accept_token(9) and m.accept_token(25)


def test_budget_aware_mask(small_compiler):
    """tokens_left=n: only tokens after which the text can end within n tokens (EOS counted)."""
    m = zapgram.GrammarMatcher(small_compiler.compile_grammar('root ::= "[" ("1" | "2")* "]"'))
    assert m.accept_string("[1")
    bitmask = zapgram.allocate_token_bitmask(1, 40, backend="numpy")
    m.fill_next_token_bitmask(bitmask, 0)
    assert allowed_ids(bitmask[0], 40) == ids_of(b"]", b"1", b"2", b"12")
    m.fill_next_token_bitmask(bitmask, 0, tokens_left=2)  # "]" then EOS
    assert allowed_ids(bitmask[0], 40) == ids_of(b"]")
    m.fill_next_token_bitmask(bitmask, 0, tokens_left=1)  # only EOS, not a sentence yet
    assert allowed_ids(bitmask[0], 40) == []
    m.fill_next_token_bitmask(bitmask, 0, tokens_left=3)
    assert allowed_ids(bitmask[0], 40) == ids_of(b"]", b"1", b"2", b"12")
