"""Shared fixtures of the Python tests (pytest, run by ctest as Python.pytest).

The package is imported from the build tree (PYTHONPATH=build/python, set by
ctest) or from an installed copy. Data comes from ../shared/data
(ZAPGRAM_DATA_DIR overrides); the `zapgram` CLI for the layout test from
build/zapgram (ZAPGRAM_CLI overrides). Loading Llama 3's tokenizer.json takes
a moment, so it is loaded once per session.
"""

import os
import pathlib

import pytest

import zapgram

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("ZAPGRAM_DATA_DIR", REPO.parent / "shared" / "data"))
CLI = pathlib.Path(os.environ.get("ZAPGRAM_CLI", REPO / "build" / "zapgram"))
LLAMA3 = DATA / "tokenizers" / "llama3.tokenizer.json"


@pytest.fixture(scope="session")
def data_dir():
    return DATA


@pytest.fixture(scope="session")
def cli():
    if not CLI.exists():
        pytest.skip(f"no zapgram CLI at {CLI}")
    return CLI


@pytest.fixture(scope="session")
def llama3():
    return zapgram.TokenizerInfo.from_huggingface(str(LLAMA3))


@pytest.fixture(scope="session")
def llama3_compiler(llama3):
    return zapgram.GrammarCompiler(llama3)


# A small vocabulary: id 0 is the stop token, the rest are JSON pieces.
SMALL_TOKENS = [b"</s>", b"{", b"}", b"[", b"]", b'"', b":", b",", b" ", b"a", b"b", b"1", b"2", b"true",
                b"null", b'"a"', b'{"', b'": ', b', "', b"ab", b"12", b"-", b".", b"e", b"x", b"y", b"\\",
                b'"b"', "é".encode(), b"\n"]


@pytest.fixture
def small():
    return zapgram.TokenizerInfo(SMALL_TOKENS, vocab_size=40, stop_token_ids=[0])


@pytest.fixture
def small_compiler(small):
    return zapgram.GrammarCompiler(small)


def allowed_ids(bitmask_row, vocab_size):
    """The ids whose bit is set in one int32 bitmask row (list, numpy or torch)."""
    words = [int(w) & 0xFFFFFFFF for w in list(bitmask_row)]
    return [i for i in range(vocab_size) if (words[i // 32] >> (i % 32)) & 1]
