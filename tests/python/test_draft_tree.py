"""GrammarMatcher.traverse_draft_tree and BatchGrammarMatcher.batch_traverse_draft_tree.

XGrammar's contract (python/xgrammar/matcher.py and its C++ traversal): node
0 is the current state, always visited unless the matcher has terminated; a
node is visited when its parent's row allows its token and the matcher
accepts it without terminating; visited rows hold the mask after the node's
path, every other row is zero; the matcher is left as it was; False when
time_threshold runs out. Checked by hand on a small vocabulary, and against
the naive walk (a fork fed each node's path, its mask filled) on random trees
drafted from json-docs states with Llama 3, with torch, numpy and list inputs;
the batch form against one call per matcher.
"""

import json
import random
import sys
import threading
import time

import pytest

import zapgram
from conftest import DATA, SMALL_TOKENS, allowed_ids

numpy = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

VOCAB = 40


def tid(piece):
    return SMALL_TOKENS.index(piece)


def tree(first_child, next_sibling, tokens):
    return (torch.tensor(first_child, dtype=torch.int64), torch.tensor(next_sibling, dtype=torch.int64),
            torch.tensor(tokens, dtype=torch.int64))


@pytest.fixture
def json_grammar(small_compiler):
    return small_compiler.compile_builtin_json_grammar()


def traverse(matcher, t, vocab_size=VOCAB, **kwargs):
    bitmask = zapgram.allocate_token_bitmask(len(t[2]), vocab_size)
    done = matcher.traverse_draft_tree(*t, bitmask, **kwargs)
    return done, bitmask


def rows(bitmask, vocab_size=VOCAB):
    return [allowed_ids(row, vocab_size) for row in bitmask]


def mask_after(compiled, path, vocab_size=VOCAB):
    m = zapgram.GrammarMatcher(compiled)
    for token in path:
        assert m.accept_token(token)
    bitmask = zapgram.allocate_token_bitmask(1, vocab_size)
    m.fill_next_token_bitmask(bitmask, 0)
    return allowed_ids(bitmask[0], vocab_size)


# ---- XGrammar's contract, by hand ----

def test_linear_tree(json_grammar):
    m = zapgram.GrammarMatcher(json_grammar)
    # 0 -> 1 "{" -> 2 '"a"'  (node 0's token is never read)
    done, bitmask = traverse(m, tree([1, 2, -1], [-1, -1, -1], [tid(b"x"), tid(b"{"), tid(b'"a"')]))
    assert done is True
    got = rows(bitmask)
    assert got[0] == mask_after(json_grammar, [])
    assert got[1] == mask_after(json_grammar, [tid(b"{")])
    assert got[2] == mask_after(json_grammar, [tid(b"{"), tid(b'"a"')])
    assert tid(b":") in got[2] and tid(b"}") not in got[2]


def test_siblings_refused_nodes_and_their_subtrees(json_grammar):
    m = zapgram.GrammarMatcher(json_grammar)
    #   0 -> 1 "}" (refused) -> 2 "{"        rows 1, 2 zero
    #     -> 3 99 (no such id) -> 4 "["     rows 3, 4 zero
    #     -> 5 "[" -> 6 "1"
    #              -> 7 "]"
    done, bitmask = traverse(m, tree([1, 2, -1, 4, -1, 6, -1, -1], [-1, 3, -1, 5, -1, -1, 7, -1],
                                     [0, tid(b"}"), tid(b"{"), 99, tid(b"["), tid(b"["), tid(b"1"), tid(b"]")]))
    assert done
    got = rows(bitmask)
    assert got[1] == got[2] == got[3] == got[4] == []
    assert got[5] == mask_after(json_grammar, [tid(b"[")])
    assert got[6] == mask_after(json_grammar, [tid(b"["), tid(b"1")])
    assert got[7] == mask_after(json_grammar, [tid(b"["), tid(b"]")])
    assert 0 in got[7] and tid(b"1") not in got[7]  # "[]" is a document
    assert not bool(bitmask[1].any()) and not bool(bitmask[4].any())


def test_terminated_nodes(small_compiler, json_grammar):
    m = zapgram.GrammarMatcher(json_grammar)
    # 0 -> 1 "1" -> 2 stop -> 3 "2"   the stop token terminates: rows 2 and 3 zero
    done, bitmask = traverse(m, tree([1, 2, 3, -1], [-1, -1, -1, -1], [0, tid(b"1"), 0, tid(b"2")]))
    assert done
    got = rows(bitmask)
    assert 0 in got[1] and got[2] == [] and got[3] == []
    # terminate_without_stop_token: a document terminates the matcher, as in XGrammar.
    t = zapgram.GrammarMatcher(small_compiler.compile_regex("a"), terminate_without_stop_token=True)
    done, bitmask = traverse(t, tree([1, 2, -1], [-1, -1, -1], [0, tid(b"a"), tid(b"b")]))
    assert done and rows(bitmask)[0] == [tid(b"a")] and rows(bitmask)[1] == [] and rows(bitmask)[2] == []
    # A terminated matcher: every row zero, True.
    assert m.accept_token(tid(b"1")) and m.accept_token(0) and m.is_terminated()
    done, bitmask = traverse(m, tree([1, -1], [-1, -1], [0, tid(b"2")]))
    assert done and not bool(bitmask.any())


def test_matcher_is_left_as_it_was(json_grammar):
    m = zapgram.GrammarMatcher(json_grammar)
    assert m.accept_token(tid(b"[")) and m.accept_token(tid(b"1"))
    bitmask = zapgram.allocate_token_bitmask(1, VOCAB)
    m.fill_next_token_bitmask(bitmask, 0)
    before = allowed_ids(bitmask[0], VOCAB)
    done, _ = traverse(m, tree([1, 2, -1, -1], [-1, 3, -1, -1], [0, tid(b"]"), 0, tid(b"2")]))
    assert done
    m.fill_next_token_bitmask(bitmask, 0)
    assert allowed_ids(bitmask[0], VOCAB) == before
    assert not m.is_terminated()
    assert m.accept_token(tid(b"2")) and m.accept_token(tid(b"]")) and m.is_completed()
    m.rollback(4)  # the whole history is still in the rollback window
    m.fill_next_token_bitmask(bitmask, 0)
    assert allowed_ids(bitmask[0], VOCAB) == mask_after(json_grammar, [])


def test_temperatures_are_minus_one(json_grammar):
    m = zapgram.GrammarMatcher(json_grammar)
    temperatures = torch.full((3,), 7.0, dtype=torch.float32)
    done, _ = traverse(m, tree([1, -1, -1], [-1, 2, -1], [0, tid(b"{"), tid(b"}")]), temperatures=temperatures)
    assert done and temperatures.tolist() == [-1.0, -1.0, -1.0]
    array = numpy.zeros(3, dtype=numpy.float32)
    traverse(m, tree([1, -1, -1], [-1, 2, -1], [0, tid(b"{"), tid(b"}")]), temperatures=array)
    assert array.tolist() == [-1.0, -1.0, -1.0]


def test_time_threshold():
    compiler = zapgram.GrammarCompiler(zapgram.TokenizerInfo([b"a", b"</s>"], stop_token_ids=[1]))
    chain = compiler.compile_grammar('root ::= "a" root | "a"')
    m = zapgram.GrammarMatcher(chain)
    n = 5000
    t = (torch.tensor(list(range(1, n)) + [-1], dtype=torch.int64), torch.full((n,), -1, dtype=torch.int64),
         torch.zeros(n, dtype=torch.int64))
    done, bitmask = traverse(m, t, vocab_size=2, time_threshold=1e-7)
    assert done is False
    assert bool(bitmask[0].any())  # the root's row is always computed
    filled = int((bitmask != 0).any(dim=1).sum())
    assert 1 <= filled < n
    assert not bool(bitmask[filled:].any())  # rows past the stop are zero
    for threshold in (-1.0, 0, 100.0):
        done, full = traverse(m, t, vocab_size=2, time_threshold=threshold)
        assert done is True and bool((full != 0).any(dim=1).all())


def test_argument_errors(json_grammar):
    m = zapgram.GrammarMatcher(json_grammar)
    good = tree([1, -1], [-1, -1], [0, tid(b"{")])
    bitmask = zapgram.allocate_token_bitmask(2, VOCAB)
    with pytest.raises(TypeError, match="retrieve_next_sibling must have dtype int64, got float32"):
        m.traverse_draft_tree(good[0], torch.tensor([-1.0, -1.0]), good[2], bitmask)
    with pytest.raises(ValueError, match="retrieve_next_token must have 1 dimension"):
        m.traverse_draft_tree(good[0].reshape(1, 2), *good[1:], bitmask)
    with pytest.raises(ValueError, match="differ in length"):
        m.traverse_draft_tree(good[0], torch.tensor([-1], dtype=torch.int64), good[2], bitmask)
    with pytest.raises(ValueError, match="root .node 0. has a sibling"):
        m.traverse_draft_tree(good[0], torch.tensor([1, -1], dtype=torch.int64), good[2], bitmask)
    with pytest.raises(ValueError, match="reached twice"):
        m.traverse_draft_tree(torch.tensor([1, 0], dtype=torch.int64), *good[1:], bitmask)
    with pytest.raises(ValueError, match=r"retrieve_next_token\[1\] is 5"):
        m.traverse_draft_tree(torch.tensor([1, 5], dtype=torch.int64), *good[1:], bitmask)
    with pytest.raises(ValueError, match="one row per draft tree node: 2 rows, got 3"):
        m.traverse_draft_tree(*good, zapgram.allocate_token_bitmask(3, VOCAB))
    with pytest.raises(TypeError, match="token_bitmask must have dtype int32"):
        m.traverse_draft_tree(*good, torch.zeros((2, 2), dtype=torch.int64))
    with pytest.raises(ValueError, match="empty"):
        m.traverse_draft_tree([], [], [], bitmask)
    with pytest.raises(TypeError, match="temperatures must have dtype float32"):
        m.traverse_draft_tree(*good, bitmask, temperatures=torch.zeros(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="temperatures must have one float32 entry per draft tree node"):
        m.traverse_draft_tree(*good, bitmask, temperatures=torch.zeros(3, dtype=torch.float32))
    with pytest.raises(TypeError, match="time_threshold must be a float"):
        m.traverse_draft_tree(*good, bitmask, time_threshold="1")
    with pytest.raises(TypeError, match="list of ints"):
        m.traverse_draft_tree("01", *good[1:], bitmask)
    # Lists and numpy arrays are trees too; the bitmask may be numpy.
    array = zapgram.allocate_token_bitmask(2, VOCAB, backend="numpy")
    assert m.traverse_draft_tree([1, -1], numpy.array([-1, -1]), numpy.array([0, tid(b"{")], dtype=numpy.int32), array)
    assert rows(array)[1] == mask_after(json_grammar, [tid(b"{")])


# ---- against the naive walk, Llama 3 ----

def json_docs(count):
    docs = []
    with open(DATA / "traces" / "llama3" / "json-docs.jsonl") as f:
        for n, line in enumerate(f):
            if n % 37 == 0:
                docs.append(json.loads(line)["tokens"])
            if len(docs) == count:
                break
    return docs


def draft(matcher, truth, nodes, rng, vocab_size):
    """A random tree: the true path first, random allowed tokens beside it,
    a few random ids (refused)."""
    first_child, next_sibling, tokens, paths = [-1], [-1], [0], [[]]
    frontier = [(0, matcher.fork(), 0, True)]
    bitmask = zapgram.allocate_token_bitmask(1, vocab_size)
    while len(tokens) < nodes and frontier:
        parent, state, depth, on_truth = frontier.pop(0)
        state.fill_next_token_bitmask(bitmask, 0)
        allowed = allowed_ids(bitmask[0], vocab_size)
        previous = -1
        for c in range(rng.randint(2, 6)):
            if len(tokens) >= nodes:
                break
            true_next = on_truth and c == 0 and depth < len(truth)
            if true_next:
                token = truth[depth]
            elif rng.random() < 0.15:
                token = rng.randrange(vocab_size)
            else:
                token = rng.choice(allowed)
            index = len(tokens)
            tokens.append(token)
            first_child.append(-1)
            next_sibling.append(-1)
            paths.append(paths[parent] + [token])
            if previous < 0:
                first_child[parent] = index
            else:
                next_sibling[previous] = index
            previous = index
            child = state.fork()
            if child.accept_token(token) and not child.is_terminated():
                frontier.append((index, child, depth + 1, true_next))
    return (first_child, next_sibling, tokens), paths


def naive(matcher, paths, vocab_size):
    out = []
    bitmask = zapgram.allocate_token_bitmask(1, vocab_size)
    for path in paths:
        m = matcher.fork()
        ok = not m.is_terminated()
        for token in path:
            ok = ok and m.accept_token(token) and not m.is_terminated()
        if ok:
            m.fill_next_token_bitmask(bitmask, 0)
            out.append(bitmask[0].clone())
        else:
            out.append(torch.zeros_like(bitmask[0]))
    return torch.stack(out)


def test_rows_equal_the_naive_walk(llama3, llama3_compiler):
    compiled = llama3_compiler.compile_builtin_json_grammar()
    rng = random.Random(5)
    checked = 0
    for tokens in json_docs(3):
        for cut in (0, len(tokens) // 2):
            m = zapgram.GrammarMatcher(compiled)
            for token in tokens[:cut]:
                assert m.accept_token(token)
            (first_child, next_sibling, draft_tokens), paths = draft(m, tokens[cut:], 24, rng, llama3.vocab_size)
            expected = naive(m, paths, llama3.vocab_size)
            for kind in ("torch", "numpy", "list"):
                if kind == "torch":
                    args = [torch.tensor(a, dtype=torch.int64) for a in (first_child, next_sibling, draft_tokens)]
                elif kind == "numpy":
                    args = [numpy.array(a, dtype=numpy.int64) for a in (first_child, next_sibling, draft_tokens)]
                else:
                    args = [first_child, next_sibling, draft_tokens]
                bitmask = zapgram.allocate_token_bitmask(len(draft_tokens), llama3.vocab_size)
                assert m.traverse_draft_tree(*args, bitmask) is True
                assert torch.equal(bitmask, expected), kind
                checked += len(draft_tokens)
            # Still where it was: the rest of the document goes through.
            assert all(m.accept_token(token) for token in tokens[cut:]) and m.is_completed()
    assert checked >= 3 * 2 * 3 * 10


# ---- the batch form ----

def test_batch_equals_one_call_each(llama3, llama3_compiler):
    compiled = llama3_compiler.compile_builtin_json_grammar()
    rng = random.Random(9)
    matchers, trees, prefixes = [], [], []
    for tokens in json_docs(4):
        m = zapgram.GrammarMatcher(compiled)
        prefixes.append(tokens[: len(tokens) // 3])
        for token in prefixes[-1]:
            assert m.accept_token(token)
        t, _ = draft(m, tokens[len(tokens) // 3:], 16, rng, llama3.vocab_size)
        # Trees of one size for the 2-D form: pad with unreached nodes.
        while len(t[2]) < 16:
            for a, v in zip(t, (-1, -1, 0)):
                a.append(v)
        matchers.append(m)
        trees.append(t)
    expected = []
    for m, t in zip(matchers, trees):
        bitmask = zapgram.allocate_token_bitmask(16, llama3.vocab_size)
        assert m.traverse_draft_tree(*t, bitmask)
        expected.append(bitmask)
    expected = torch.cat(expected)
    batch = zapgram.BatchGrammarMatcher(2)
    stacked = [torch.tensor([t[i] for t in trees], dtype=torch.int64) for i in range(3)]
    for form in (stacked, [[t[i] for t in trees] for i in range(3)]):
        bitmask = zapgram.allocate_token_bitmask(16 * len(matchers), llama3.vocab_size)
        temperatures = torch.zeros((len(matchers), 16), dtype=torch.float32)
        done = batch.batch_traverse_draft_tree(matchers, *form, bitmask, temperatures=temperatures)
        assert done == [True] * len(matchers)
        assert torch.equal(bitmask, expected)
        assert bool((temperatures == -1).all())
    with pytest.raises(ValueError, match="3 trees for 4 matchers"):
        batch.batch_traverse_draft_tree(matchers, *[s[:3] for s in stacked], bitmask)
    with pytest.raises(RuntimeError, match="twice"):
        batch.batch_traverse_draft_tree([matchers[0]] * 4, *stacked, bitmask)
    with pytest.raises(ValueError, match="tree 2: .*reached twice"):
        bad = stacked[0].clone()
        bad[2, 1] = 0
        batch.batch_traverse_draft_tree(matchers, bad, *stacked[1:], bitmask)
    # The GIL is released while the trees are walked: another Python thread
    # runs inside the calls. With a switch interval far longer than the
    # test, this thread never yields the GIL while it runs Python code, so
    # the other one (which waits between stamps, without the GIL) can stamp
    # only while a call has released it.
    uncached = [zapgram.GrammarMatcher(compiled, cache=False) for _ in matchers]
    for m, prefix in zip(uncached, prefixes):
        assert all(m.accept_token(token) for token in prefix)
    stamps, calls = [], []
    stop = threading.Event()

    def tick():
        while not stop.wait(0.0002):
            stamps.append(time.perf_counter())

    interval = sys.getswitchinterval()
    sys.setswitchinterval(60)
    try:
        thread = threading.Thread(target=tick)
        thread.start()
        for _ in range(20):
            start = time.perf_counter()
            batch.batch_traverse_draft_tree(uncached, *stacked, bitmask)
            calls.append((start, time.perf_counter()))
        stop.set()
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert any(start < stamp < end for start, end in calls for stamp in stamps)
