"""BatchGrammarMatcher and threads.

The batch fill (a persistent C++ pool, GIL released) must write exactly the
masks that one-by-one fills write, into the rows that `indices` names; a
compiled grammar shared by many matchers must give the same masks when they
are filled from several Python threads and pool threads at once (its token
sets are built lazily and its mask cache is shared). Misuse (a matcher twice
in one batch, a matcher used while a batch holds it, mismatched lengths) is
an exception.
"""

import threading
import time

import pytest

import zapgram

torch = pytest.importorskip("torch")

PREFIXES = ["", '{"a": ', "[1, 2", '{"k": "v', "[tr", '{"x": [{"y": 1.5e', "  ", '["\\u00', "[", '{"', "[-",
            "[null, {}"]


def fresh_matchers(compiled, prefixes=PREFIXES):
    matchers = [zapgram.GrammarMatcher(compiled) for _ in prefixes]
    for m, p in zip(matchers, prefixes):
        assert m.accept_string(p), p
    return matchers


def one_by_one(compiled, vocab_size, prefixes=PREFIXES):
    bitmask = zapgram.allocate_token_bitmask(len(prefixes), vocab_size)
    for k, m in enumerate(fresh_matchers(compiled, prefixes)):
        m.fill_next_token_bitmask(bitmask, k)
    return bitmask


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_batch_equals_one_by_one(llama3, llama3_compiler, threads):
    compiled = llama3_compiler.compile_builtin_json_grammar()
    expected = one_by_one(compiled, llama3.vocab_size)
    batch = zapgram.BatchGrammarMatcher(threads)
    assert batch.max_threads == threads
    matchers = fresh_matchers(compiled)
    for _ in range(3):  # the pool is reused across calls
        bitmask = zapgram.allocate_token_bitmask(len(PREFIXES), llama3.vocab_size)
        batch.batch_fill_next_token_bitmask(matchers, bitmask)
        assert torch.equal(bitmask, expected)
    # indices: matcher k fills row indices[k]; other rows are untouched.
    bitmask = zapgram.allocate_token_bitmask(len(PREFIXES) + 2, llama3.vocab_size)
    indices = [len(PREFIXES) + 1 - k for k in range(len(PREFIXES))]
    batch.batch_fill_next_token_bitmask(matchers, bitmask, indices)
    for k, row in enumerate(indices):
        assert torch.equal(bitmask[row], expected[k])
    assert bool((bitmask[0] == -1).all())


def test_batch_accept_helpers(small_compiler):
    compiled = small_compiler.compile_regex("[ab]+")
    matchers = [zapgram.GrammarMatcher(compiled) for _ in range(3)]
    a, b, x = 9, 10, 24
    assert zapgram.BatchGrammarMatcher.batch_accept_token(matchers, [a, x, b]) == [True, False, True]
    assert zapgram.BatchGrammarMatcher.batch_accept_string(matchers, ["b", "x", b"ab"]) == [True, False, True]
    with pytest.raises(ValueError, match="one token or string per matcher"):
        zapgram.BatchGrammarMatcher.batch_accept_token(matchers, [a])


def test_batch_misuse(small_compiler):
    compiled = small_compiler.compile_regex("[ab]+")
    m = zapgram.GrammarMatcher(compiled)
    n = zapgram.GrammarMatcher(compiled)
    batch = zapgram.BatchGrammarMatcher(2)
    bitmask = zapgram.allocate_token_bitmask(2, 40)
    with pytest.raises(RuntimeError, match="twice"):
        batch.batch_fill_next_token_bitmask([m, m], bitmask)
    with pytest.raises(ValueError, match="same bitmask row"):
        batch.batch_fill_next_token_bitmask([m, n], bitmask, [1, 1])
    with pytest.raises(ValueError, match="indices has 1 entries"):
        batch.batch_fill_next_token_bitmask([m, n], bitmask, [1])
    with pytest.raises(IndexError):
        batch.batch_fill_next_token_bitmask([m, n], bitmask, [0, 2])
    with pytest.raises(TypeError):
        batch.batch_fill_next_token_bitmask([m, "matcher"], bitmask)
    with pytest.raises(ValueError):
        zapgram.BatchGrammarMatcher(0)
    # After every failure above the matchers are free again.
    batch.batch_fill_next_token_bitmask([m, n], bitmask)
    assert m.accept_string("ab")
    m.accept_token(0) if m.is_completed() else None
    assert m.is_terminated()
    with pytest.raises(RuntimeError, match="terminated"):
        batch.batch_fill_next_token_bitmask([n, m], bitmask)
    assert n.accept_string("a")  # n was released too


def test_shared_grammar_across_python_threads(llama3):
    # A fresh compiler: the token sets and the mask cache start empty, so the
    # threads race to build them.
    compiled = zapgram.GrammarCompiler(llama3).compile_builtin_json_grammar()
    expected = one_by_one(zapgram.GrammarCompiler(llama3).compile_builtin_json_grammar(), llama3.vocab_size)
    errors = []

    def worker(seed):
        try:
            batch = zapgram.BatchGrammarMatcher(2)
            order = PREFIXES[seed:] + PREFIXES[:seed]
            matchers = fresh_matchers(compiled, order)
            for _ in range(3):
                bitmask = zapgram.allocate_token_bitmask(len(order), llama3.vocab_size)
                batch.batch_fill_next_token_bitmask(matchers, bitmask)
                for k in range(len(order)):
                    if not torch.equal(bitmask[k], expected[(k + seed) % len(PREFIXES)]):
                        errors.append((seed, k))
            # Single fills from this thread too.
            single = zapgram.allocate_token_bitmask(1, llama3.vocab_size)
            for k, m in enumerate(matchers):
                m.fill_next_token_bitmask(single, 0)
                if not torch.equal(single[0], expected[(k + seed) % len(PREFIXES)]):
                    errors.append((seed, "single", k))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert compiled.cache_stats["hits"] > 0


def test_matcher_in_a_running_batch_refuses_calls(llama3):
    # A batch of cache-less matchers on a large grammar runs long enough for
    # another thread to try one of them while the GIL is released.
    compiled = zapgram.GrammarCompiler(llama3).compile_builtin_json_grammar()
    matchers = [zapgram.GrammarMatcher(compiled, cache=False) for _ in range(64)]
    for m in matchers:
        m.accept_string('{"a": [1, {"b": "')
    batch = zapgram.BatchGrammarMatcher(1)
    bitmask = zapgram.allocate_token_bitmask(len(matchers), llama3.vocab_size)
    done = threading.Event()
    refused = []

    def other():
        while not done.is_set():
            try:
                matchers[-1].accept_string("\x01")  # refused by the grammar: the state never changes
            except RuntimeError as e:
                refused.append(str(e))
                return

    t = threading.Thread(target=other)
    t.start()
    deadline = time.monotonic() + 20
    while not refused and time.monotonic() < deadline:
        batch.batch_fill_next_token_bitmask(matchers, bitmask)
    done.set()
    t.join()
    assert refused and "batch" in refused[0]
    assert not matchers[-1].accept_string("\x01")  # free again


def test_batch_budgets_equal_one_by_one(small_compiler):
    """tokens_left: one int for all rows, or an int or None per matcher, as the single fill."""
    compiled = small_compiler.compile_grammar('root ::= "[" ("1" | "2")* "]"')
    prefixes = ["[", "[1", "[12", "[2"]
    batch = zapgram.BatchGrammarMatcher(2)
    for tokens_left in (2, [2, None, 3, 1]):
        per_row = tokens_left if isinstance(tokens_left, list) else [tokens_left] * len(prefixes)
        expected = zapgram.allocate_token_bitmask(len(prefixes), 40)
        for k, m in enumerate(fresh_matchers(compiled, prefixes)):
            m.fill_next_token_bitmask(expected, k, tokens_left=per_row[k])
        bitmask = zapgram.allocate_token_bitmask(len(prefixes), 40)
        batch.batch_fill_next_token_bitmask(fresh_matchers(compiled, prefixes), bitmask, tokens_left=tokens_left)
        assert torch.equal(bitmask, expected)
    plain = zapgram.allocate_token_bitmask(len(prefixes), 40)
    batch.batch_fill_next_token_bitmask(fresh_matchers(compiled, prefixes), plain)
    assert not torch.equal(plain, expected)  # the budgets changed some rows
    with pytest.raises(ValueError, match="tokens_left has 2 entries for 4 matchers"):
        batch.batch_fill_next_token_bitmask(fresh_matchers(compiled, prefixes), plain, tokens_left=[1, 2])
