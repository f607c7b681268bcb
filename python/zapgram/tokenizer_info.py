"""TokenizerInfo: a model's vocabulary as token id -> bytes, plus its stop ids.

Two ways in, as in XGrammar:

- ``TokenizerInfo.from_huggingface(path_or_tokenizer)``: a Hugging Face
  ``tokenizer.json`` (a file, a folder holding one, or a fast tokenizer object
  whose ``backend_tokenizer`` can be serialized). The C++ loader
  (masks/vocabulary.h) decodes byte-level BPE (Llama 3, Qwen) and
  SentencePiece byte fallback (Gemma), marks special tokens, and finds the
  stop ids (<|eot_id|>, <|im_end|>, </s>, ...) unless ``stop_token_ids`` is
  given.
- ``TokenizerInfo(encoded_vocab, vocab_type, vocab_size=..., stop_token_ids=...)``:
  one entry per id. ``VocabType.RAW`` entries are the token's bytes (``bytes``,
  or ``str`` taken as UTF-8); ``BYTE_LEVEL`` entries are GPT-2 byte-level
  strings (``Ġ`` for a space); ``BYTE_FALLBACK`` entries are SentencePiece
  pieces (``▁`` for a space, ``<0x0A>`` for a byte). Empty entries, and ids
  from ``len(encoded_vocab)`` up to ``vocab_size``, are padding: never
  allowed. There is no stop-token detection for a list: pass
  ``stop_token_ids``.

``vocab_size`` is the model's output width (logits columns, often padded past
the tokenizer); bitmasks have ``ceil(vocab_size / 32)`` int32 words per row.

Bad arguments raise TypeError (a path where the token list goes, an entry
that is neither bytes nor str, a float size) or ValueError (a vocab_size
below the tokenizer's, a stop id outside the vocabulary), naming the argument.

Tests: tests/python/test_api.py (TokenizerInfo*), test_bad_input.py.
"""

import collections.abc
import enum
import os
import tempfile
from typing import List, Optional, Sequence, Union

from . import _core

# The engine's largest vocabulary (masks::VocabularyOptions::max_vocab_size).
MAX_VOCAB_SIZE = 1 << 24


class VocabType(enum.IntEnum):
    """How the entries of ``encoded_vocab`` spell a token's bytes."""

    RAW = 0
    BYTE_FALLBACK = 1
    BYTE_LEVEL = 2


def _byte_level_alphabet():
    """GPT-2's byte-level alphabet: printable Latin-1 bytes stand for
    themselves, the other bytes take the code points from 256 on, in order."""
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAC + 1)) | set(range(0xAE, 0xFF + 1))
    char_to_byte = {}
    extra = 0
    for b in range(256):
        if b in printable:
            char_to_byte[chr(b)] = b
        else:
            char_to_byte[chr(256 + extra)] = b
            extra += 1
    return char_to_byte


def _vocab_type_arg(vocab_type) -> VocabType:
    if isinstance(vocab_type, VocabType):
        return vocab_type
    choices = "VocabType.RAW, VocabType.BYTE_FALLBACK or VocabType.BYTE_LEVEL"
    if isinstance(vocab_type, (bool, float, str)) or not hasattr(vocab_type, "__index__"):
        raise TypeError(f"vocab_type must be {choices}, got {type(vocab_type).__name__} ({vocab_type!r})")
    try:
        return VocabType(vocab_type.__index__())
    except ValueError:
        raise ValueError(f"vocab_type must be {choices} (0, 1 or 2), got {vocab_type}") from None


def _vocab_size_arg(vocab_size) -> Optional[int]:
    """None (the tokenizer's own size) or an int in [1, MAX_VOCAB_SIZE]."""
    if vocab_size is None:
        return None
    return _core._int_arg(vocab_size, "vocab_size", 1, MAX_VOCAB_SIZE)


def _stop_token_ids_arg(stop_token_ids) -> Optional[List[int]]:
    """None, one id, or a list of ids (each >= 0; the vocabulary checks the top)."""
    if stop_token_ids is None:
        return None
    if isinstance(stop_token_ids, (str, bytes)):
        raise TypeError(f"stop_token_ids must be an int or a list of ints, got {type(stop_token_ids).__name__} "
                        f"({stop_token_ids!r})")
    if isinstance(stop_token_ids, int) or not hasattr(stop_token_ids, "__iter__"):
        return [_core._int_arg(stop_token_ids, "stop_token_ids", 0, 2**31 - 1)]
    return _core._int_list_arg(list(stop_token_ids), "stop_token_ids", 0, 2**31 - 1)


def _encoded_vocab_arg(encoded_vocab) -> list:
    """The token list: a list (or other ordered iterable) of bytes / str, one per id."""
    if isinstance(encoded_vocab, (str, os.PathLike)):
        raise TypeError(
            "encoded_vocab must be a list of tokens (bytes or str), one per id, got a path-like "
            f"{type(encoded_vocab).__name__} ({os.fspath(encoded_vocab)!r}); for a tokenizer.json use "
            "TokenizerInfo.from_huggingface(path)")
    if isinstance(encoded_vocab, (bytes, bytearray, memoryview)):
        raise TypeError(f"encoded_vocab must be a list of tokens (bytes or str), one per id, got one "
                        f"{type(encoded_vocab).__name__} object")
    if isinstance(encoded_vocab, collections.abc.Mapping):
        raise TypeError("encoded_vocab must be a list of tokens indexed by id, got a "
                        f"{type(encoded_vocab).__name__}; for a token -> id mapping pass "
                        "[token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]")
    if isinstance(encoded_vocab, (set, frozenset)):
        raise TypeError(f"encoded_vocab must be a list of tokens indexed by id, got an unordered "
                        f"{type(encoded_vocab).__name__}")
    try:
        return list(encoded_vocab)
    except TypeError:
        raise TypeError("encoded_vocab must be a list of tokens (bytes or str), one per id, got "
                        f"{type(encoded_vocab).__name__}") from None


def _decode_entry(entry: Union[str, bytes], vocab_type: VocabType, alphabet, index: int) -> bytes:
    if not isinstance(entry, (bytes, str)):
        raise TypeError(f"encoded_vocab[{index}] must be bytes or str, got {type(entry).__name__} ({entry!r})")
    if isinstance(entry, bytes):
        if vocab_type == VocabType.RAW:
            return entry
        try:
            entry = entry.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"encoded_vocab[{index}] is not UTF-8 ({e.reason} at byte {e.start}): a "
                             f"{vocab_type.name} entry spells its bytes in text; pass the raw bytes with "
                             "VocabType.RAW") from None
    if vocab_type == VocabType.RAW:
        return entry.encode("utf-8")
    if vocab_type == VocabType.BYTE_LEVEL:
        try:
            return bytes(alphabet[c] for c in entry)
        except KeyError:  # not a byte-level string (an added token such as <|eot_id|>)
            return entry.encode("utf-8")
    if len(entry) == 6 and entry.startswith("<0x") and entry.endswith(">"):
        try:
            return bytes([int(entry[3:5], 16)])
        except ValueError:
            pass
    return entry.replace("\u2581", " ").encode("utf-8")


class TokenizerInfo:
    """A vocabulary for GrammarCompiler: ids -> bytes, stop ids, output width."""

    def __init__(
        self,
        encoded_vocab: Sequence[Union[bytes, str]],
        vocab_type: VocabType = VocabType.RAW,
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: Optional[Union[int, List[int]]] = None,
        add_prefix_space: bool = False,
    ) -> None:
        if add_prefix_space:
            raise ValueError("add_prefix_space is not supported: pass the tokens' bytes as decoded")
        entries = _encoded_vocab_arg(encoded_vocab)
        vocab_type = _vocab_type_arg(vocab_type)
        vocab_size = _vocab_size_arg(vocab_size)
        stop_token_ids = _stop_token_ids_arg(stop_token_ids)
        if len(entries) > MAX_VOCAB_SIZE:
            raise ValueError(f"encoded_vocab has {len(entries)} tokens, more than the {MAX_VOCAB_SIZE} supported")
        alphabet = _byte_level_alphabet() if vocab_type == VocabType.BYTE_LEVEL else None
        tokens = [_decode_entry(e, vocab_type, alphabet, i) for i, e in enumerate(entries)]
        if vocab_size is not None:
            if vocab_size < len(tokens):
                raise ValueError(f"vocab_size {vocab_size} is smaller than the {len(tokens)} tokens given")
            tokens.extend([b""] * (vocab_size - len(tokens)))
        if not tokens:
            raise ValueError("encoded_vocab is empty: a vocabulary needs at least one token")
        self._vocab = _core.Vocabulary.from_tokens(tokens, stop_token_ids or [])
        self._vocab_type = vocab_type

    @staticmethod
    def from_huggingface(
        tokenizer,
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: Optional[Union[int, List[int]]] = None,
    ) -> "TokenizerInfo":
        """From a tokenizer.json path, a folder holding tokenizer.json, or a
        Hugging Face fast tokenizer object (its backend_tokenizer is written
        to a temporary tokenizer.json)."""
        vocab_size = _vocab_size_arg(vocab_size)
        stop_token_ids = _stop_token_ids_arg(stop_token_ids)
        if isinstance(tokenizer, (str, os.PathLike)):
            path = os.fspath(tokenizer)
            if os.path.isdir(path):
                path = os.path.join(path, "tokenizer.json")
            return TokenizerInfo._load(path, vocab_size, stop_token_ids)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            hint = ""
            if isinstance(tokenizer, (bytes, bytearray)):
                hint = "; pass a path as str or pathlib.Path"
            elif isinstance(tokenizer, (list, tuple)):
                hint = "; for a list of tokens use TokenizerInfo(encoded_vocab, vocab_type, ...)"
            raise TypeError(
                "from_huggingface needs a tokenizer.json path or a fast tokenizer (with backend_tokenizer), "
                f"got {type(tokenizer).__name__}{hint}"
            )
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "tokenizer.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(backend.to_str())
            return TokenizerInfo._load(path, vocab_size, stop_token_ids)

    @staticmethod
    def _load(path: str, vocab_size: Optional[int], stop_token_ids: Optional[List[int]]) -> "TokenizerInfo":
        info = TokenizerInfo.__new__(TokenizerInfo)
        try:
            info._vocab = _core.Vocabulary.load(path, vocab_size or 0, stop_token_ids)
        except ValueError as e:  # the engine calls vocab_size padded_size
            raise ValueError(str(e).replace("padded_size", "vocab_size")) from None
        info._vocab_type = None
        return info

    @property
    def vocab_size(self) -> int:
        """Ids of a mask: the model's output width."""
        return self._vocab.padded_size

    @property
    def vocab_type(self) -> Optional[VocabType]:
        """The VocabType of the list given; None for a tokenizer.json."""
        return self._vocab_type

    @property
    def stop_token_ids(self) -> List[int]:
        return list(self._vocab.eos_ids)

    @property
    def special_token_ids(self) -> List[int]:
        """Ids the grammar never produces (special, padding and unused ids)."""
        return [i for i in range(self._vocab.padded_size) if not self._vocab.is_normal(i)]

    @property
    def decoded_vocab(self) -> List[bytes]:
        """Each id's bytes (empty for special and unused ids)."""
        return [self._vocab.token_bytes(i) for i in range(self._vocab.padded_size)]

    def __repr__(self) -> str:
        return f"TokenizerInfo(vocab_size={self.vocab_size}, stop_token_ids={self.stop_token_ids})"
