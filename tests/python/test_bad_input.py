"""Bad input at the Python boundary (issue 31, item 6).

Every public call of the package, given an argument of the wrong type or
out of range, must raise TypeError, ValueError or IndexError (for a bitmask
or logits row) whose message names the argument and says what it takes;
never a crash, a silent misbehaviour (TokenizerInfo("tokenizer.json") used to
build a vocabulary from the path's characters), a bare "Unable to cast" or
pybind11's "incompatible function arguments".

Each case is (call, exception, a regex the message must match). The checks
live in python/src/arguments.h (ids, indices, sizes, lists, text, flags;
exposed to the .py files as _core._int_arg / _int_list_arg),
python/src/tensor_view.cc (bitmasks and logits) and the .py files (token
lists, schemas, tags, the logits processor's tensors). The last tests pin
valid inputs next to the refused ones, which must keep working.
"""

import types

import pytest

import zapgram
from conftest import LLAMA3, SMALL_TOKENS

numpy = pytest.importorskip("numpy")

GRAMMAR = 'root ::= "[" ("1" | "2")* "]"'
VOCAB = 40  # the small vocabulary's vocab_size: masks of 2 words


@pytest.fixture(scope="module")
def env():
    info = zapgram.TokenizerInfo(SMALL_TOKENS, vocab_size=VOCAB, stop_token_ids=[0])
    compiler = zapgram.GrammarCompiler(info)
    compiled = compiler.compile_grammar(GRAMMAR)
    return types.SimpleNamespace(
        info=info, compiler=compiler, compiled=compiled,
        matcher=lambda: zapgram.GrammarMatcher(compiled),
        bitmask=lambda rows=1, words=2, dtype=numpy.int32: numpy.zeros((rows, words), dtype=dtype),
        logits=lambda rows=1, cols=VOCAB, dtype=numpy.float32: numpy.zeros((rows, cols), dtype=dtype),
    )


def case(call, exception, match, id):
    return pytest.param(call, exception, match, id=id)


def check(env, call, exception, match):
    with pytest.raises(exception, match=match) as info:
        call(env)
    # A clear message, not pybind11's dump of the signature.
    assert "incompatible function arguments" not in str(info.value)
    assert "Unable to cast" not in str(info.value)


# ---- TokenizerInfo ----

TOKENIZER_INFO_CASES = [
    case(lambda e: zapgram.TokenizerInfo(str(LLAMA3)), TypeError,
         r"encoded_vocab must be a list of tokens.*got a path-like str.*TokenizerInfo\.from_huggingface", "path-str"),
    case(lambda e: zapgram.TokenizerInfo(LLAMA3), TypeError, r"path-like PosixPath.*from_huggingface", "path-obj"),
    case(lambda e: zapgram.TokenizerInfo(b"abc"), TypeError, r"encoded_vocab must be a list.*got one bytes",
         "bytes-not-list"),
    case(lambda e: zapgram.TokenizerInfo(None), TypeError, r"encoded_vocab must be a list.*got NoneType", "none"),
    case(lambda e: zapgram.TokenizerInfo({"a": 0, "b": 1}), TypeError, r"indexed by id, got a dict", "dict"),
    case(lambda e: zapgram.TokenizerInfo({b"a", b"b"}), TypeError, r"unordered set", "set"),
    case(lambda e: zapgram.TokenizerInfo([b"a", 7]), TypeError, r"encoded_vocab\[1\] must be bytes or str, got int",
         "int-entry"),
    case(lambda e: zapgram.TokenizerInfo([None]), TypeError, r"encoded_vocab\[0\] must be bytes or str, got NoneType",
         "none-entry"),
    case(lambda e: zapgram.TokenizerInfo([b"\xff"], zapgram.VocabType.BYTE_LEVEL), ValueError,
         r"encoded_vocab\[0\] is not UTF-8.*VocabType\.RAW", "byte-level-not-utf8"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], 5), ValueError, r"vocab_type must be VocabType\.RAW.*got 5",
         "vocab-type-5"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], "raw"), TypeError, r"vocab_type must be VocabType.*got str",
         "vocab-type-str"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], True), TypeError, r"vocab_type must be VocabType.*got bool",
         "vocab-type-bool"),
    case(lambda e: zapgram.TokenizerInfo([b"a", b"b"], vocab_size=1), ValueError,
         r"vocab_size 1 is smaller than the 2 tokens given", "vocab-size-small"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], vocab_size=40.0), TypeError, r"vocab_size must be an int, got float",
         "vocab-size-float"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], vocab_size="40"), TypeError, r"vocab_size must be an int, got str",
         "vocab-size-str"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], vocab_size=0), ValueError, r"vocab_size must be between 1 and",
         "vocab-size-0"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], vocab_size=-3), ValueError, r"vocab_size must be between 1 and",
         "vocab-size-negative"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], vocab_size=2**40), ValueError,
         r"vocab_size must be between 1 and 16777216", "vocab-size-huge"),
    case(lambda e: zapgram.TokenizerInfo([]), ValueError, r"encoded_vocab is empty", "empty"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], stop_token_ids="0"), TypeError,
         r"stop_token_ids must be an int or a list of ints, got str", "stop-str"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], stop_token_ids=0.0), TypeError,
         r"stop_token_ids must be an int, got float", "stop-float"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], stop_token_ids=[0.0]), TypeError,
         r"stop_token_ids\[0\] must be an int, got float", "stop-list-float"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], stop_token_ids=[None]), TypeError,
         r"stop_token_ids\[0\] must be an int, got NoneType", "stop-list-none"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], stop_token_ids=-1), ValueError,
         r"stop_token_ids must be between 0 and", "stop-negative"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], stop_token_ids=[2**40]), ValueError,
         r"stop_token_ids\[0\] must be between 0 and 2147483647, got 1099511627776", "stop-huge"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], stop_token_ids=[5]), ValueError, r"EOS id 5 is outside \[0, 1\)",
         "stop-out-of-vocab"),
    case(lambda e: zapgram.TokenizerInfo([b"a"], add_prefix_space=True), ValueError, r"add_prefix_space",
         "add-prefix-space"),
]


@pytest.mark.parametrize("call,exception,match", TOKENIZER_INFO_CASES)
def test_tokenizer_info(env, call, exception, match):
    check(env, call, exception, match)


FROM_HUGGINGFACE_CASES = [
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(bytes(LLAMA3)), TypeError,
         r"tokenizer\.json path or a fast tokenizer.*got bytes; pass a path as str", "bytes-path"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface([b"a"]), TypeError,
         r"got list; for a list of tokens use TokenizerInfo\(encoded_vocab", "list"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(None), TypeError, r"got NoneType", "none"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface("/nonexistent/tokenizer.json"), FileNotFoundError,
         r"/nonexistent/tokenizer\.json: cannot open", "missing"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(str(LLAMA3), vocab_size=1000), ValueError,
         r"vocab_size 1000 is smaller than the tokenizer's 128256 ids", "vocab-size-below-tokenizer"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(str(LLAMA3), vocab_size=0), ValueError,
         r"vocab_size must be between 1 and", "vocab-size-0"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(str(LLAMA3), vocab_size=-1), ValueError,
         r"vocab_size must be between 1 and", "vocab-size-negative"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(str(LLAMA3), vocab_size=128256.0), TypeError,
         r"vocab_size must be an int, got float", "vocab-size-float"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(str(LLAMA3), stop_token_ids="128009"), TypeError,
         r"stop_token_ids must be an int or a list of ints, got str", "stop-str"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(str(LLAMA3), stop_token_ids=[-1]), ValueError,
         r"stop_token_ids\[0\] must be between 0 and", "stop-negative"),
    case(lambda e: zapgram.TokenizerInfo.from_huggingface(str(LLAMA3), stop_token_ids=[10**6]), ValueError,
         r"EOS id 1000000 .*outside \[0, 128256\)", "stop-out-of-vocab"),
]


@pytest.mark.parametrize("call,exception,match", FROM_HUGGINGFACE_CASES)
def test_tokenizer_info_from_huggingface(env, call, exception, match):
    check(env, call, exception, match)


def test_from_huggingface_needs_a_tokenizer_json(env, tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        zapgram.TokenizerInfo.from_huggingface(tmp_path)  # a folder without one
    not_json = tmp_path / "tokenizer.json"
    not_json.write_text("# not JSON\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        zapgram.TokenizerInfo.from_huggingface(not_json)


# ---- GrammarCompiler ----

COMPILER_CASES = [
    case(lambda e: zapgram.GrammarCompiler(str(LLAMA3)), TypeError,
         r"tokenizer_info must be a TokenizerInfo, got str.*from_huggingface", "tokenizer-info-str"),
    case(lambda e: zapgram.GrammarCompiler(None), TypeError, r"tokenizer_info must be a TokenizerInfo, got NoneType",
         "tokenizer-info-none"),
    case(lambda e: zapgram.GrammarCompiler(e.info, max_threads=0), ValueError, r"max_threads must be >= 1, got 0",
         "max-threads-0"),
    case(lambda e: zapgram.GrammarCompiler(e.info, max_threads="8"), TypeError, r"max_threads must be an int",
         "max-threads-str"),
    case(lambda e: zapgram.GrammarCompiler(e.info, cache_limit=-1), ValueError, r"cache_limit must be >= 0, got -1",
         "cache-limit-negative"),
    case(lambda e: zapgram.GrammarCompiler(e.info, cache_limit=2.5), TypeError, r"cache_limit must be an int",
         "cache-limit-float"),
    case(lambda e: zapgram.GrammarCompiler(e.info, cache_limit_bytes=-2), ValueError,
         r"cache_limit_bytes must be >= -1, got -2", "cache-limit-bytes-negative"),
    case(lambda e: zapgram.GrammarCompiler(e.info, cache_limit_bytes=1.5), TypeError,
         r"cache_limit_bytes must be an int, got float", "cache-limit-bytes-float"),
    case(lambda e: e.compiler.compile_grammar(GRAMMAR.encode()), TypeError, r"grammar must be a str, got bytes",
         "grammar-bytes"),
    case(lambda e: e.compiler.compile_grammar(None), TypeError, r"grammar must be a str, got NoneType",
         "grammar-none"),
    case(lambda e: e.compiler.compile_grammar(GRAMMAR, format=None), TypeError, r"format must be a str",
         "format-none"),
    case(lambda e: e.compiler.compile_grammar(GRAMMAR, format="yaml"), ValueError,
         r"unknown grammar format 'yaml' \(gbnf, ebnf, lark, llguidance, regex or builtin", "format-unknown"),
    case(lambda e: e.compiler.compile_grammar(GRAMMAR, root_rule_name="start"), ValueError, r"root_rule_name",
         "root-rule-name"),
    case(lambda e: e.compiler.compile_regex(b"a+"), TypeError, r"grammar must be a str, got bytes", "regex-bytes"),
    case(lambda e: e.compiler.compile_lark(None), TypeError, r"grammar must be a str, got NoneType", "lark-none"),
    case(lambda e: e.compiler.compile_json_schema(b'{"type": "string"}'), TypeError,
         r"schema must be a JSON Schema: a str of JSON, a dict, a bool or a pydantic model class, got bytes",
         "schema-bytes"),
    case(lambda e: e.compiler.compile_json_schema(None), TypeError, r"schema must be a JSON Schema.*got NoneType",
         "schema-none"),
    case(lambda e: e.compiler.compile_json_schema(["string"]), TypeError, r"schema must be a JSON Schema.*got list",
         "schema-list"),
    case(lambda e: e.compiler.compile_json_schema({"enum": [{1, 2}]}), TypeError,
         r"schema cannot be written as JSON.*set", "schema-not-json-serializable"),
    case(lambda e: e.compiler.compile_json_schema('{"type": '), ValueError, r"<text>: not valid JSON",
         "schema-text-not-json"),
    case(lambda e: e.compiler.compile_json_schema({"type": "string"}, max_whitespace_cnt=-1), ValueError,
         r"max_whitespace_cnt must be between 0 and", "max-whitespace-negative"),
    case(lambda e: e.compiler.compile_json_schema({"type": "string"}, max_whitespace_cnt=1.5), TypeError,
         r"max_whitespace_cnt must be an int, got float", "max-whitespace-float"),
    case(lambda e: e.compiler.compile_json_schema({"type": "string"}, indent=2), ValueError, r"indent",
         "indent"),
]


@pytest.mark.parametrize("call,exception,match", COMPILER_CASES)
def test_grammar_compiler(env, call, exception, match):
    check(env, call, exception, match)


TAG = {"begin": "<f>", "schema": {"type": "string"}, "end": "</f>"}
TOOL = {"name": "weather", "parameters": {"type": "object"}}

STRUCTURAL_TAG_CASES = [
    case(lambda e: e.compiler.compile_structural_tag(TAG, ["<f>"]), TypeError,
         r"tags must be a list of StructuralTagItem or dicts.*got dict", "tags-one-dict"),
    case(lambda e: e.compiler.compile_structural_tag("<f>", ["<f>"]), TypeError,
         r"tags must be a list.*got str", "tags-str"),
    case(lambda e: e.compiler.compile_structural_tag(None, ["<f>"]), TypeError, r"tags must be a list.*got NoneType",
         "tags-none"),
    case(lambda e: e.compiler.compile_structural_tag([TAG], "<f>"), TypeError,
         r"triggers must be a list of strings.*one trigger is \[trigger\].*got str", "triggers-str"),
    case(lambda e: e.compiler.compile_structural_tag([TAG], None), TypeError, r"triggers must be a list.*NoneType",
         "triggers-none"),
    case(lambda e: e.compiler.compile_structural_tag(["<f>"], ["<f>"]), TypeError,
         r"a tag must be a StructuralTagItem or a dict, got str", "tag-str"),
    case(lambda e: e.compiler.compile_structural_tag([{"begin": "<f>", "end": "</f>"}], ["<f>"]), ValueError,
         r'tags\[0\] has no "schema" \(a JSON Schema\) nor "grammar"', "tag-no-schema"),
    case(lambda e: e.compiler.compile_structural_tag([dict(TAG, schema=object())], ["<f>"]), TypeError,
         r"tags\[0\] schema must be a JSON Schema.*got object", "tag-schema-object"),
    case(lambda e: e.compiler.compile_structural_tag([dict(TAG, begin=5)], ["<f>"]), ValueError,
         r"/tags/0/begin: expected a string", "tag-begin-int"),
    case(lambda e: e.compiler.compile_structural_tag_format("llama3", TOOL), TypeError,
         r"tools must be a list of dicts.*got dict", "tools-one-dict"),
    case(lambda e: e.compiler.compile_structural_tag_format("llama3", "weather"), TypeError,
         r"tools must be a list of dicts.*got str", "tools-str"),
    case(lambda e: e.compiler.compile_structural_tag_format("llama3", ["weather"]), TypeError,
         r"tools\[0\] must be a dict", "tool-str"),
    case(lambda e: e.compiler.compile_structural_tag_format("llama3", [{"parameters": {}}]), ValueError,
         r'tools\[0\] has no "name"', "tool-no-name"),
    case(lambda e: e.compiler.compile_structural_tag_format("llama3", [{"name": "f"}]), ValueError,
         r'tools\[0\] has no "parameters"', "tool-no-parameters"),
    case(lambda e: e.compiler.compile_structural_tag_format("llama3", [{"name": 3, "parameters": {}}]), TypeError,
         r'tools\[0\]\["name"\] must be a str, got int', "tool-name-int"),
    case(lambda e: e.compiler.compile_structural_tag_format("llama3", [dict(TOOL, parameters=3)]), TypeError,
         r'tools\[0\]\["parameters"\] must be a JSON Schema', "tool-parameters-int"),
    case(lambda e: e.compiler.compile_structural_tag_format(None, [TOOL]), TypeError,
         r"format must be a str \(llama3, qwen2_5 or hermes\), got NoneType", "format-none"),
    case(lambda e: e.compiler.compile_structural_tag_format("gpt", [TOOL]), ValueError, r"unknown format 'gpt'",
         "format-unknown"),
]


@pytest.mark.parametrize("call,exception,match", STRUCTURAL_TAG_CASES)
def test_structural_tags(env, call, exception, match):
    check(env, call, exception, match)


def test_compiled_grammar_is_made_by_the_compiler(env):
    with pytest.raises(TypeError, match=r"CompiledGrammar is made by GrammarCompiler"):
        zapgram.CompiledGrammar("root ::= \"a\"", env.info)


# ---- GrammarMatcher ----

MATCHER_CASES = [
    case(lambda e: zapgram.GrammarMatcher(GRAMMAR), TypeError,
         r"compiled_grammar must be a CompiledGrammar \(from GrammarCompiler.*got str", "grammar-str"),
    case(lambda e: zapgram.GrammarMatcher(None), TypeError, r"compiled_grammar must be a CompiledGrammar.*NoneType",
         "grammar-none"),
    case(lambda e: zapgram.GrammarMatcher(e.compiler), TypeError, r"got GrammarCompiler", "grammar-compiler"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, override_stop_tokens="0"), TypeError,
         r"override_stop_tokens must be an int or a list of ints, got str", "override-str"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, override_stop_tokens=[0.0]), TypeError,
         r"override_stop_tokens\[0\] must be an int, got float", "override-float"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, override_stop_tokens=-1), ValueError,
         r"override_stop_tokens must be between 0 and 39, got -1", "override-negative"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, override_stop_tokens=[0, 40]), ValueError,
         r"override_stop_tokens\[1\] must be between 0 and 39, got 40", "override-out-of-vocab"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, max_rollback_tokens=-5), ValueError,
         r"max_rollback_tokens must be >= -1, got -5", "max-rollback-tokens-negative"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, max_rollback_tokens=1.5), TypeError,
         r"max_rollback_tokens must be an int, got float", "max-rollback-tokens-float"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, max_rollback_bytes=-1), ValueError,
         r"max_rollback_bytes must be between 0 and 4294967295, got -1", "max-rollback-bytes-negative"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, max_rollback_bytes=2**40), ValueError,
         r"max_rollback_bytes must be between 0 and 4294967295", "max-rollback-bytes-huge"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, max_rollback_bytes="512"), TypeError,
         r"max_rollback_bytes must be an int, got str", "max-rollback-bytes-str"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, cache="no"), TypeError, r"cache must be a bool, got str",
         "cache-str"),
    case(lambda e: zapgram.GrammarMatcher(e.compiled, terminate_without_stop_token=[]), TypeError,
         r"terminate_without_stop_token must be a bool, got list", "terminate-list"),
    # accept_token: ids outside [0, vocab_size) raise; padding and refused ids return False.
    case(lambda e: e.matcher().accept_token(-1), ValueError,
         r"token_id is -1: not a token id of this vocabulary \(ids are 0 <= id < 40\)", "accept-negative"),
    case(lambda e: e.matcher().accept_token(40), ValueError, r"token_id is 40: not a token id", "accept-vocab-size"),
    case(lambda e: e.matcher().accept_token(2**70), ValueError, r"token_id is 1180591620717411303424: not a token id",
         "accept-huge"),
    case(lambda e: e.matcher().accept_token("3"), TypeError, r"token_id must be an int, got str", "accept-str"),
    case(lambda e: e.matcher().accept_token(3.0), TypeError, r"token_id must be an int, got float", "accept-float"),
    case(lambda e: e.matcher().accept_token(None), TypeError, r"token_id must be an int, got NoneType",
         "accept-none"),
    case(lambda e: e.matcher().accept_token(True), TypeError, r"token_id must be an int, got bool", "accept-bool"),
    case(lambda e: e.matcher().accept_token([3]), TypeError, r"token_id must be an int, got list", "accept-list"),
    case(lambda e: e.matcher().accept_string(None), TypeError, r"input_str must be a str or bytes, got NoneType",
         "accept-string-none"),
    case(lambda e: e.matcher().accept_string(5), TypeError, r"input_str must be a str or bytes, got int",
         "accept-string-int"),
    case(lambda e: e.matcher().accept_string(["["]), TypeError, r"input_str must be a str or bytes, got list",
         "accept-string-list"),
    case(lambda e: e.matcher().rollback(-1), ValueError, r"num_tokens must be >= 0, got -1", "rollback-negative"),
    case(lambda e: e.matcher().rollback(1.5), TypeError, r"num_tokens must be an int, got float", "rollback-float"),
    case(lambda e: e.matcher().rollback(None), TypeError, r"num_tokens must be an int, got NoneType",
         "rollback-none"),
    case(lambda e: e.matcher().rollback(1), RuntimeError, r"cannot roll back 1 tokens", "rollback-too-far"),
    case(lambda e: e.matcher().validate_tokens("123"), TypeError, r"tokens must be a list of token ids, got str",
         "validate-str"),
    case(lambda e: e.matcher().validate_tokens(3), TypeError, r"tokens must be a list of token ids, got int",
         "validate-int"),
    case(lambda e: e.matcher().validate_tokens(None), TypeError, r"tokens must be a list of token ids, got NoneType",
         "validate-none"),
    case(lambda e: e.matcher().validate_tokens([3, -1]), ValueError, r"tokens\[1\] is -1: not a token id",
         "validate-negative"),
    case(lambda e: e.matcher().validate_tokens([3, 40]), ValueError, r"tokens\[1\] is 40: not a token id",
         "validate-vocab-size"),
    case(lambda e: e.matcher().validate_tokens([3.0]), TypeError, r"tokens\[0\] must be an int, got float",
         "validate-float"),
]


@pytest.mark.parametrize("call,exception,match", MATCHER_CASES)
def test_grammar_matcher(env, call, exception, match):
    check(env, call, exception, match)


def test_refused_calls_leave_the_matcher_alone(env):
    """A call refused for its arguments changes nothing: the matcher goes on as before."""
    m = env.matcher()
    assert m.accept_string("[1")
    for bad in (lambda: m.accept_token(-1), lambda: m.accept_token(3.0), lambda: m.accept_string(None),
                lambda: m.rollback(-1), lambda: m.validate_tokens([11, 99])):
        with pytest.raises((TypeError, ValueError)):
            bad()
    assert m.accept_token(SMALL_TOKENS.index(b"]")) and m.is_completed()


# ---- fill_next_token_bitmask: bitmask and index ----

def _readonly(array):
    array.setflags(write=False)
    return array


FILL_CASES = [
    case(lambda e: e.matcher().fill_next_token_bitmask([[0, 0]]), TypeError,
         r"bitmask must be a torch\.Tensor or a numpy\.ndarray, got list", "bitmask-list"),
    case(lambda e: e.matcher().fill_next_token_bitmask(None), TypeError, r"bitmask must be a torch\.Tensor.*NoneType",
         "bitmask-none"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(dtype=numpy.int64)), TypeError,
         r"bitmask must have dtype int32, got int64", "dtype-int64"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(dtype=numpy.uint32)), TypeError,
         r"bitmask must have dtype int32, got uint32", "dtype-uint32"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(dtype=numpy.float32)), TypeError,
         r"bitmask must have dtype int32, got float32", "dtype-float32"),
    case(lambda e: e.matcher().fill_next_token_bitmask(numpy.zeros((1, 2), dtype=">i4")), TypeError,
         r"bitmask must have dtype int32, got >i4 \(not in native byte order\)", "dtype-byte-swapped"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(words=3)), ValueError,
         r"bitmask rows must be 2 contiguous int32 words \(ceil\(vocab_size / 32\)\), got 3", "shape-wide"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(words=1)), ValueError,
         r"bitmask rows must be 2 contiguous int32 words.*got 1", "shape-narrow"),
    case(lambda e: e.matcher().fill_next_token_bitmask(numpy.zeros((1, 1, 2), numpy.int32)), ValueError,
         r"bitmask must have 1 or 2 dimensions, got 3", "shape-3d"),
    case(lambda e: e.matcher().fill_next_token_bitmask(numpy.zeros((), numpy.int32)), ValueError,
         r"bitmask must have 1 or 2 dimensions, got 0", "shape-0d"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(words=4)[:, ::2]), ValueError,
         r"bitmask rows must be 2 contiguous int32 words.*with stride 2", "non-contiguous"),
    case(lambda e: e.matcher().fill_next_token_bitmask(numpy.zeros((2, 2), numpy.int32, order="F")), ValueError,
         r"contiguous int32 words.*with stride 2", "fortran-order"),
    case(lambda e: e.matcher().fill_next_token_bitmask(_readonly(e.bitmask())), ValueError,
         r"bitmask must be a writable array", "read-only"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(rows=2), 2), IndexError,
         r"bitmask row 2 is out of range: the bitmask has 2 rows", "index-past-end"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(rows=2), -1), IndexError,
         r"bitmask row -1 is out of range", "index-negative"),
    case(lambda e: e.matcher().fill_next_token_bitmask(numpy.zeros(2, numpy.int32), 1), IndexError,
         r"bitmask row 1 is out of range: the bitmask has 1 row \(1-D\)", "index-1d"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(rows=2), 1.0), TypeError,
         r"index must be an int, got float", "index-float"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(rows=2), None), TypeError,
         r"index must be an int, got NoneType", "index-none"),
    case(lambda e: e.matcher().fill_next_token_bitmask(e.bitmask(), 0, tokens_left=1.5), TypeError,
         r"tokens_left must be an int, got float", "tokens-left-float"),
]


@pytest.mark.parametrize("call,exception,match", FILL_CASES)
def test_fill_next_token_bitmask(env, call, exception, match):
    check(env, call, exception, match)


def test_fill_leaves_a_refused_bitmask_untouched(env):
    bitmask = numpy.full((2, 2), 7, dtype=numpy.int32)
    with pytest.raises(IndexError):
        env.matcher().fill_next_token_bitmask(bitmask, 2)
    with pytest.raises(TypeError):
        env.matcher().fill_next_token_bitmask(bitmask, 0, tokens_left="3")
    assert (bitmask == 7).all()


# ---- apply_token_bitmask_inplace ----

APPLY_CASES = [
    case(lambda e: zapgram.apply_token_bitmask_inplace([[0.0] * VOCAB], e.bitmask()), TypeError,
         r"logits must be a torch\.Tensor or a numpy\.ndarray, got list", "logits-list"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), [[-1, -1]]), TypeError,
         r"bitmask must be a torch\.Tensor or a numpy\.ndarray, got list", "bitmask-list"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(dtype=numpy.int32), e.bitmask()), TypeError,
         r"logits must have dtype float32, float16, bfloat16 or float64, got int32", "logits-int"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(dtype=numpy.complex64), e.bitmask()), TypeError,
         r"logits must have dtype .*got complex64", "logits-complex"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(numpy.zeros((1, VOCAB), ">f4"), e.bitmask()), TypeError,
         r"logits must have dtype .*got >f4 \(not in native byte order\)", "logits-byte-swapped"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(dtype=numpy.int64)), TypeError,
         r"bitmask must have dtype int32, got int64", "bitmask-int64"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(rows=2), e.bitmask(rows=1)), ValueError,
         r"logits have 2 rows but the bitmask has 1 \(pass indices= to mask some rows\)", "rows-mismatch"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(numpy.zeros((1, 1, VOCAB), numpy.float32), e.bitmask()),
         ValueError, r"logits must have 1 or 2 dimensions, got 3", "logits-3d"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(_readonly(e.logits()), e.bitmask()), ValueError,
         r"logits must be a writable array", "logits-read-only"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(words=4)[:, ::2]), ValueError,
         r"bitmask rows must be contiguous", "bitmask-non-contiguous"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(), vocab_size=-1), ValueError,
         r"vocab_size must be >= 0, got -1", "vocab-size-negative"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(), vocab_size=100), ValueError,
         r"vocab_size 100 exceeds the logits \(40 columns\) or the bitmask \(64 bits per row\)", "vocab-size-wide"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(), vocab_size=1.5), TypeError,
         r"vocab_size must be an int, got float", "vocab-size-float"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(), indices=[1]), IndexError,
         r"row index 1 is out of range \(logits 1 rows, bitmask 1\)", "indices-past-end"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(), indices=[-1]), IndexError,
         r"row index -1 is out of range", "indices-negative"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(), indices=0), TypeError,
         r"indices must be a list of ints, got int", "indices-int"),
    case(lambda e: zapgram.apply_token_bitmask_inplace(e.logits(), e.bitmask(), indices=[0.0]), TypeError,
         r"indices\[0\] must be an int, got float", "indices-float"),
]


@pytest.mark.parametrize("call,exception,match", APPLY_CASES)
def test_apply_token_bitmask_inplace(env, call, exception, match):
    check(env, call, exception, match)


# ---- allocate / reset / get_bitmask_shape ----

BITMASK_HELPER_CASES = [
    case(lambda e: zapgram.allocate_token_bitmask(-1, VOCAB, backend="numpy"), ValueError,
         r"batch_size must be >= 0, got -1", "allocate-batch-negative"),
    case(lambda e: zapgram.allocate_token_bitmask(1.5, VOCAB, backend="numpy"), TypeError,
         r"batch_size must be an int, got float", "allocate-batch-float"),
    case(lambda e: zapgram.allocate_token_bitmask(None, VOCAB, backend="numpy"), TypeError,
         r"batch_size must be an int, got NoneType", "allocate-batch-none"),
    case(lambda e: zapgram.allocate_token_bitmask(1, 0, backend="numpy"), ValueError,
         r"vocab_size must be >= 1, got 0", "allocate-vocab-0"),
    case(lambda e: zapgram.allocate_token_bitmask(1, 40.5, backend="numpy"), TypeError,
         r"vocab_size must be an int, got float", "allocate-vocab-float"),
    case(lambda e: zapgram.allocate_token_bitmask(1, "40", backend="numpy"), TypeError,
         r"vocab_size must be an int, got str", "allocate-vocab-str"),
    case(lambda e: zapgram.allocate_token_bitmask(1, VOCAB, backend="jax"), ValueError,
         r"backend must be None, 'torch' or 'numpy', got 'jax'", "allocate-backend"),
    case(lambda e: zapgram.get_bitmask_shape(-2, VOCAB), ValueError, r"batch_size must be >= 0, got -2",
         "shape-batch-negative"),
    case(lambda e: zapgram.get_bitmask_shape(1, -5), ValueError, r"vocab_size must be >= 1, got -5",
         "shape-vocab-negative"),
    case(lambda e: zapgram.reset_token_bitmask([[0, 0]]), TypeError,
         r"bitmask must be a torch\.Tensor or a numpy\.ndarray, got list", "reset-list"),
    case(lambda e: zapgram.reset_token_bitmask(None), TypeError, r"bitmask must be a torch\.Tensor.*NoneType",
         "reset-none"),
    case(lambda e: zapgram.reset_token_bitmask(e.bitmask(dtype=numpy.float32)), TypeError,
         r"bitmask must have dtype int32, got float32", "reset-float"),
    case(lambda e: zapgram.reset_token_bitmask(e.bitmask(dtype=numpy.int64)), TypeError,
         r"bitmask must have dtype int32, got int64", "reset-int64"),
]


@pytest.mark.parametrize("call,exception,match", BITMASK_HELPER_CASES)
def test_bitmask_helpers(env, call, exception, match):
    check(env, call, exception, match)


# ---- BatchGrammarMatcher ----

def batch():
    return zapgram.BatchGrammarMatcher(1)


BATCH_CASES = [
    case(lambda e: zapgram.BatchGrammarMatcher(0), ValueError, r"max_threads must be between 1 and", "threads-0"),
    case(lambda e: zapgram.BatchGrammarMatcher("many"), ValueError,
         r'max_threads must be an int >= 1 or "auto", got str', "threads-str"),
    case(lambda e: zapgram.BatchGrammarMatcher(1.5), TypeError, r'max_threads must be an int >= 1 or "auto", got float',
         "threads-float"),
    case(lambda e: zapgram.BatchGrammarMatcher(None), TypeError, r'max_threads must be an int >= 1 or "auto"',
         "threads-none"),
    case(lambda e: batch().batch_fill_next_token_bitmask(e.matcher(), e.bitmask()), TypeError,
         r"matchers must be a list of GrammarMatcher objects, got GrammarMatcher", "fill-one-matcher"),
    case(lambda e: batch().batch_fill_next_token_bitmask("ab", e.bitmask()), TypeError,
         r"matchers must be a list of GrammarMatcher objects, got str", "fill-matchers-str"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher(), 3], e.bitmask(rows=2)), TypeError,
         r"matchers\[1\] must be a GrammarMatcher, got int", "fill-matcher-int"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(dtype=numpy.int64)), TypeError,
         r"bitmask must have dtype int32, got int64", "fill-dtype"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(words=3)), ValueError,
         r"bitmask rows must be 2 contiguous int32 words", "fill-shape"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher(), e.matcher()], e.bitmask(rows=1)),
         IndexError, r"bitmask row 1 is out of range: the bitmask has 1 rows", "fill-too-few-rows"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(), [1]), IndexError,
         r"bitmask row 1 is out of range", "fill-index-past-end"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(), [-1]), IndexError,
         r"bitmask row -1 is out of range", "fill-index-negative"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(), 0), TypeError,
         r"indices must be a list of ints, got int", "fill-indices-int"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(), [0.0]), TypeError,
         r"indices\[0\] must be an int, got float", "fill-indices-float"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(), [0, 1]), ValueError,
         r"indices has 2 entries for 1 matchers", "fill-indices-count"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(), tokens_left="3"), TypeError,
         r"tokens_left must be an int, got str", "fill-tokens-left-str"),
    case(lambda e: batch().batch_fill_next_token_bitmask([e.matcher()], e.bitmask(), tokens_left=[1.5]), TypeError,
         r"tokens_left\[0\] must be an int, got float", "fill-tokens-left-float"),
    case(lambda e: zapgram.BatchGrammarMatcher.batch_accept_token([e.matcher()], 3), TypeError,
         r"tokens must be a list of token ids, one per matcher, got int", "accept-token-int"),
    case(lambda e: zapgram.BatchGrammarMatcher.batch_accept_token([e.matcher()], "3"), TypeError,
         r"tokens must be a list of token ids, one per matcher, got str", "accept-token-str"),
    case(lambda e: zapgram.BatchGrammarMatcher.batch_accept_token([e.matcher()], [3.0]), TypeError,
         r"tokens\[0\] must be an int, got float", "accept-token-float"),
    case(lambda e: zapgram.BatchGrammarMatcher.batch_accept_token([e.matcher(), e.matcher()], [3, -1]), ValueError,
         r"tokens\[1\] is -1: not a token id of this vocabulary", "accept-token-negative"),
    case(lambda e: zapgram.BatchGrammarMatcher.batch_accept_token([e.matcher()], [40]), ValueError,
         r"tokens\[0\] is 40: not a token id", "accept-token-vocab-size"),
    case(lambda e: zapgram.BatchGrammarMatcher.batch_accept_token([7], [3]), TypeError,
         r"matchers\[0\] must be a GrammarMatcher, got int", "accept-token-matcher-int"),
    case(lambda e: zapgram.BatchGrammarMatcher.batch_accept_string([e.matcher()], "["), TypeError,
         r"strings must be a list of str or bytes, one per matcher, got str", "accept-string-str"),
    case(lambda e: zapgram.BatchGrammarMatcher.batch_accept_string([e.matcher()], [None]), TypeError,
         r"strings\[0\] must be a str or bytes, got NoneType", "accept-string-none"),
]


@pytest.mark.parametrize("call,exception,match", BATCH_CASES)
def test_batch_grammar_matcher(env, call, exception, match):
    check(env, call, exception, match)


# ---- torch tensors ----

def test_torch_bitmasks_and_logits(env):
    torch = pytest.importorskip("torch")
    m = env.matcher()
    bitmask = torch.zeros((1, 2), dtype=torch.int32)
    logits = torch.zeros((1, VOCAB))
    cases = [
        (lambda: m.fill_next_token_bitmask(torch.zeros((1, 2), dtype=torch.int64)), TypeError,
         r"bitmask must have dtype int32, got torch\.int64"),
        (lambda: m.fill_next_token_bitmask(torch.zeros((1, 2), dtype=torch.float32)), TypeError,
         r"bitmask must have dtype int32, got float32"),
        (lambda: m.fill_next_token_bitmask(torch.zeros((1, 3), dtype=torch.int32)), ValueError,
         r"bitmask rows must be 2 contiguous int32 words.*got 3"),
        (lambda: m.fill_next_token_bitmask(torch.zeros((4, 2), dtype=torch.int32).t()), ValueError,
         r"bitmask rows must be 2 contiguous int32 words.*got 4"),
        (lambda: m.fill_next_token_bitmask(torch.zeros((2, 4), dtype=torch.int32)[:, ::2]), ValueError,
         r"contiguous int32 words.*with stride 2"),
        (lambda: m.fill_next_token_bitmask(torch.zeros((1, 2), dtype=torch.int32, device="meta")), ValueError,
         r"bitmask must be a CPU tensor, got one on device meta"),
        (lambda: m.fill_next_token_bitmask(torch.zeros((1, 2), dtype=torch.int32).to_sparse()), ValueError,
         r"bitmask must be a dense tensor \(layout torch\.strided\), got layout torch\.sparse_coo"),
        (lambda: m.fill_next_token_bitmask(torch.zeros((0, 2), dtype=torch.int32)), IndexError,
         r"bitmask row 0 is out of range: the bitmask has 0 rows"),
        (lambda: m.fill_next_token_bitmask(bitmask, torch.tensor(0.0)), TypeError, r"index must be an int, got Tensor"),
        (lambda: m.accept_token(torch.tensor(3.0)), TypeError, r"token_id must be an int, got Tensor"),
        (lambda: m.accept_token(torch.tensor(40)), ValueError, r"token_id is 40: not a token id"),
        (lambda: zapgram.apply_token_bitmask_inplace(torch.zeros((1, VOCAB), dtype=torch.int64), bitmask), TypeError,
         r"logits must have dtype float32, float16, bfloat16 or float64, got torch\.int64"),
        (lambda: zapgram.apply_token_bitmask_inplace(torch.zeros((1, VOCAB), device="meta"), bitmask), ValueError,
         r"logits must be a CPU tensor, got one on device meta"),
        (lambda: zapgram.apply_token_bitmask_inplace(logits, torch.zeros((1, 2), dtype=torch.int16)), TypeError,
         r"bitmask must have dtype int32, got torch\.int16"),
        (lambda: zapgram.apply_token_bitmask_inplace(logits.to_sparse(), bitmask), ValueError,
         r"logits must be a dense tensor"),
        (lambda: zapgram.apply_token_bitmask_inplace(torch.zeros((2, VOCAB)), bitmask), ValueError,
         r"logits have 2 rows but the bitmask has 1"),
        (lambda: zapgram.reset_token_bitmask(torch.zeros((1, 2))), TypeError,
         r"bitmask must have dtype int32, got torch\.float32"),
    ]
    for call, exception, match in cases:
        with pytest.raises(exception, match=match):
            call()
    assert int(bitmask.abs().sum()) == 0 and bool((logits == 0).all())  # nothing was written


# ---- LogitsProcessor ----

def test_logits_processor(env):
    torch = pytest.importorskip("torch")
    ids = torch.zeros((1, 1), dtype=torch.long)
    scores = torch.zeros((1, VOCAB))
    cases = [
        (lambda: zapgram.LogitsProcessor(GRAMMAR), TypeError,
         r"compiled_grammar must be a CompiledGrammar or a list of them \(one per row\), got str"),
        (lambda: zapgram.LogitsProcessor([env.compiled, "x"]), TypeError,
         r"compiled_grammar\[1\] must be a CompiledGrammar, got str"),
        (lambda: zapgram.LogitsProcessor([]), ValueError, r"at least one compiled grammar"),
        (lambda: zapgram.LogitsProcessor(env.compiled, max_threads=0), ValueError, r"max_threads must be between 1"),
        (lambda: zapgram.LogitsProcessor(env.compiled)(ids.numpy(), scores), TypeError,
         r"input_ids must be a torch\.Tensor, got ndarray"),
        (lambda: zapgram.LogitsProcessor(env.compiled)([[0]], scores), TypeError,
         r"input_ids must be a torch\.Tensor, got list"),
        (lambda: zapgram.LogitsProcessor(env.compiled)(ids, scores.numpy()), TypeError,
         r"scores must be a torch\.Tensor, got ndarray"),
        (lambda: zapgram.LogitsProcessor(env.compiled)(torch.zeros(1, dtype=torch.long), scores), ValueError,
         r"input_ids must have shape \(batch, length\), got \(1,\)"),
        (lambda: zapgram.LogitsProcessor(env.compiled)(ids.float(), scores), TypeError,
         r"input_ids must hold integer token ids, got dtype torch\.float32"),
        (lambda: zapgram.LogitsProcessor(env.compiled)(ids, torch.zeros((1, 1, VOCAB))), ValueError,
         r"scores must have shape \(batch, vocab_size\), got \(1, 1, 40\)"),
        (lambda: zapgram.LogitsProcessor(env.compiled)(ids, torch.zeros((1, VOCAB), dtype=torch.int32)), TypeError,
         r"scores must be floating-point logits, got dtype torch\.int32"),
        (lambda: zapgram.LogitsProcessor(env.compiled)(torch.zeros((2, 1), dtype=torch.long), torch.zeros((3, VOCAB))),
         ValueError, r"scores has 3 rows but input_ids has 2"),
    ]
    for call, exception, match in cases:
        with pytest.raises(exception, match=match):
            call()

    def second_step(last_ids, width=1):
        processor = zapgram.LogitsProcessor(env.compiled)
        processor(torch.zeros((1, width), dtype=torch.long), torch.zeros((1, VOCAB)))
        return processor(last_ids, torch.zeros((1, VOCAB)))

    with pytest.raises(ValueError, match=r"row 0: the sampled token -1 is not a token id \(0 <= id < 40\)"):
        second_step(torch.tensor([[-1]]))
    with pytest.raises(ValueError, match=r"row 0: the sampled token 40 is not a token id"):
        second_step(torch.tensor([[40]]))
    with pytest.raises(ValueError, match=r"input_ids has no columns"):
        second_step(torch.zeros((1, 0), dtype=torch.long), width=0)


# ---- valid inputs next to the refused ones keep working ----

def test_valid_inputs_beside_the_refused_ones(env):
    # Token lists: tuples, bytes and str mixed, numpy sizes and ids, a generator of stop ids.
    info = zapgram.TokenizerInfo((b"</s>", "a"), vocab_size=numpy.int64(33), stop_token_ids=(i for i in [0]))
    assert info.vocab_size == 33 and info.stop_token_ids == [0]
    assert zapgram.TokenizerInfo([b"a", b"b"], stop_token_ids=numpy.array([1])).stop_token_ids == [1]
    assert zapgram.TokenizerInfo([b"a", b"b"], stop_token_ids=numpy.int64(1)).stop_token_ids == [1]
    assert zapgram.TokenizerInfo([b"a"], 0).vocab_type == zapgram.VocabType.RAW  # an int for the enum
    compiler = zapgram.GrammarCompiler(env.info, max_threads=numpy.int32(2), cache_limit=0, cache_limit_bytes=-1)
    assert compiler.compile_json_schema(True) is not None  # a bool schema
    assert compiler.compile_json_schema({"type": "string"}, max_whitespace_cnt=0) is not None
    # A tag given as a dict with "grammar" instead of "schema".
    tagged = compiler.compile_structural_tag([{"begin": "<f>", "grammar": 'root ::= "1"', "end": "</f>"}], ["<f>"])
    assert zapgram.GrammarMatcher(tagged).accept_string("x<f>1</f>")

    # Matchers: XGrammar's max_rollback_tokens=-1 and ignored positive values, numpy ids and indices.
    zapgram.GrammarMatcher(env.compiled, max_rollback_tokens=-1)
    zapgram.GrammarMatcher(env.compiled, max_rollback_tokens=10, max_rollback_bytes=0, cache=False,
                           terminate_without_stop_token=None, override_stop_tokens=[0])
    m = env.matcher()
    assert not m.accept_token(35)  # padding: refused, not an error
    assert m.accept_token(numpy.int64(SMALL_TOKENS.index(b"[")))
    assert m.accept_string(bytearray(b"1"))
    assert m.validate_tokens(numpy.array([SMALL_TOKENS.index(b"]")])) == 1
    rows = numpy.zeros((3, 2), numpy.int32)
    assert m.fill_next_token_bitmask(rows, numpy.int64(2))
    assert m.fill_next_token_bitmask(rows[::-1], 1, tokens_left=numpy.int64(2))  # rows counted backwards
    m.rollback(numpy.int64(1))
    assert zapgram.get_bitmask_shape(0, 1) == (0, 1)
    assert zapgram.get_bitmask_shape(numpy.int64(2), 33) == (2, 2)
    logits = numpy.zeros((3, VOCAB), numpy.float32)
    zapgram.apply_token_bitmask_inplace(logits, rows, indices=numpy.array([2]), vocab_size=numpy.int64(VOCAB))
    assert numpy.isinf(logits[2]).any() and not numpy.isinf(logits[:2]).any()
    zapgram.BatchGrammarMatcher(numpy.int64(1)).batch_fill_next_token_bitmask(
        (env.matcher(),), rows, numpy.array([0]), tokens_left=[None])
