"""Bitmask layout and apply_token_bitmask_inplace.

The layout test compares fill_next_token_bitmask with what the `zapgram mask`
CLI prints for the same grammar, tokenizer and prefix (every allowed id, via
--show with a large N): the Python path writes exactly the engine's mask, in
XGrammar's int32 layout, whether the bitmask is a torch tensor or a numpy
array. apply_token_bitmask_inplace is checked against a plain Python
reference on every dtype, with indices, vocab_size, 1-D inputs and strided
logits, and for its errors.
"""

import random
import re
import subprocess

import pytest

import zapgram
from conftest import LLAMA3, allowed_ids

numpy = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")


def cli_allowed(cli, spec, prefix, data_dir):
    out = subprocess.run(
        [str(cli), "mask", spec, "--tokenizer", str(LLAMA3), "--prefix", prefix, "--show", "1000000",
         "--data-root", str(data_dir)],
        check=True, capture_output=True, text=True).stdout
    count = int(re.match(r"(\d+) of \d+ tokens allowed", out).group(1))
    ids = [int(m.group(1)) for m in re.finditer(r"^  (\d+) ", out, re.M)]
    assert len(ids) == count
    return ids


SCHEMA = "jsonschema/maskbench/Github_easy---o90448.schema.json"


@pytest.mark.parametrize("spec,prefix", [
    ("builtin:json", ""),
    ("builtin:json", '{"name": "zap'),
    ("builtin:json", "[1, 2"),
    ("schema:" + SCHEMA, '{"onLoad": '),
    ("regex:[a-z]+@[a-z]+\\.(com|org)", "me@exa"),
])
def test_layout_matches_the_cli(cli, llama3, llama3_compiler, data_dir, spec, prefix):
    expected = cli_allowed(cli, spec, prefix, data_dir)
    if spec.startswith("schema:"):
        compiled = llama3_compiler.compile_json_schema((data_dir / spec[7:]).read_text())
    elif spec.startswith("regex:"):
        compiled = llama3_compiler.compile_regex(spec[6:])
    else:
        compiled = llama3_compiler.compile_builtin_json_grammar()
    matcher = zapgram.GrammarMatcher(compiled)
    assert matcher.accept_string(prefix)
    for backend in ("torch", "numpy"):
        bitmask = zapgram.allocate_token_bitmask(3, llama3.vocab_size, backend=backend)
        assert tuple(bitmask.shape) == (3, 4008)
        matcher.fill_next_token_bitmask(bitmask, 1)
        assert allowed_ids(bitmask[1], llama3.vocab_size) == expected, backend
        assert int((bitmask[0] != -1).sum()) == 0 and int((bitmask[2] != -1).sum()) == 0


def test_allocate_and_reset():
    t = zapgram.allocate_token_bitmask(2, 100)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.int32 and tuple(t.shape) == (2, 4)
    assert bool((t == -1).all())
    a = zapgram.allocate_token_bitmask(2, 64, backend="numpy")
    assert a.dtype == numpy.int32 and a.shape == (2, 2)
    t.zero_()
    a.fill(0)
    zapgram.reset_token_bitmask(t)
    zapgram.reset_token_bitmask(a)
    assert bool((t == -1).all()) and bool((a == -1).all())
    assert zapgram.get_bitmask_shape(5, 33) == (5, 2)
    with pytest.raises(ValueError):
        zapgram.allocate_token_bitmask(1, 10, backend="jax")


def reference_apply(logits, bitmask, vocab_size, rows):
    out = logits.clone()
    for r in rows:
        for j in range(vocab_size):
            if not (int(bitmask[r][j // 32]) >> (j % 32)) & 1:
                out[r, j] = float("-inf")
    return out


def random_bitmask(rows, words, rng):
    values = []
    for _ in range(rows * words):
        values.append(rng.choice([0, -1, rng.randrange(-2**31, 2**31)]))
    return torch.tensor(values, dtype=torch.int32).reshape(rows, words)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_apply_matches_reference(dtype):
    rng = random.Random(7)
    bitmask = random_bitmask(3, 4, rng)
    logits = torch.randn(3, 100, dtype=torch.float32).to(dtype)
    expected = reference_apply(logits, bitmask, 100, range(3))
    zapgram.apply_token_bitmask_inplace(logits, bitmask)
    assert torch.equal(logits, expected)
    # numpy arrays of the same values (bfloat16 has no numpy dtype).
    if dtype != torch.bfloat16:
        logits_np = torch.randn(3, 100).to(dtype).numpy()
        expected_np = reference_apply(torch.from_numpy(logits_np.copy()), bitmask, 100, range(3)).numpy()
        zapgram.apply_token_bitmask_inplace(logits_np, bitmask.numpy())
        assert numpy.array_equal(logits_np, expected_np)


def test_apply_indices_vocab_size_and_views():
    rng = random.Random(3)
    bitmask = random_bitmask(4, 3, rng)
    logits = torch.randn(4, 96)
    expected = reference_apply(logits, bitmask, 90, [1, 3])
    zapgram.apply_token_bitmask_inplace(logits, bitmask, vocab_size=90, indices=[1, 3])
    assert torch.equal(logits, expected)
    # Default vocab_size: min(logits width, 32 * words); 1-D inputs are one row.
    row = torch.randn(70)
    expected = reference_apply(row.unsqueeze(0), bitmask[0:1], 70, [0])[0]
    zapgram.apply_token_bitmask_inplace(row, bitmask[0, :3])
    assert torch.equal(row, expected)
    # Strided logits (a column slice of a wider buffer, a transposed view).
    wide = torch.randn(4, 200)
    view = wide[:, 10:106]
    expected_wide = wide.clone()
    expected_wide[:, 10:106] = reference_apply(view, bitmask, 96, range(4))
    zapgram.apply_token_bitmask_inplace(view, bitmask)
    assert torch.equal(wide, expected_wide)
    transposed = torch.randn(96, 4).t()
    expected = reference_apply(transposed, bitmask, 96, range(4))
    zapgram.apply_token_bitmask_inplace(transposed, bitmask)
    assert torch.equal(transposed, expected)


def test_apply_errors():
    bitmask = torch.full((2, 4), -1, dtype=torch.int32)
    logits = torch.zeros(2, 128)
    with pytest.raises(TypeError, match="bitmask must have dtype int32"):
        zapgram.apply_token_bitmask_inplace(logits, bitmask.to(torch.int64))
    with pytest.raises(TypeError, match="logits must have dtype"):
        zapgram.apply_token_bitmask_inplace(logits.to(torch.int32), bitmask)
    with pytest.raises(ValueError, match="rows"):
        zapgram.apply_token_bitmask_inplace(torch.zeros(3, 128), bitmask)
    with pytest.raises(IndexError, match="row index 5"):
        zapgram.apply_token_bitmask_inplace(logits, bitmask, indices=[5])
    with pytest.raises(IndexError):
        zapgram.apply_token_bitmask_inplace(logits, bitmask, indices=[-1])
    with pytest.raises(ValueError, match="vocab_size 200"):
        zapgram.apply_token_bitmask_inplace(logits, bitmask, vocab_size=200)
    with pytest.raises(ValueError, match="dimensions"):
        zapgram.apply_token_bitmask_inplace(torch.zeros(1, 2, 128), bitmask)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        zapgram.apply_token_bitmask_inplace([0.0] * 128, bitmask)
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="CPU"):
            zapgram.apply_token_bitmask_inplace(logits.cuda(), bitmask)
    meta = torch.zeros(2, 128, device="meta")
    with pytest.raises(ValueError, match="CPU"):
        zapgram.apply_token_bitmask_inplace(meta, bitmask)
