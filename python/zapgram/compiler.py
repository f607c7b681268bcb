"""GrammarCompiler: grammars and JSON Schemas in, CompiledGrammar out.

A CompiledGrammar joins a grammar with a TokenizerInfo's vocabulary; it is
immutable, shared by any number of GrammarMatchers and threads, and carries
the mask cache its matchers share. Compiling runs in C++ with the GIL
released, so a server can compile on a worker thread while it decodes.

Inputs (XGrammar's method names; the formats zapgram reads):

- ``compile_grammar(text, format="gbnf")``: GBNF / XGrammar EBNF text
  (``root ::= ...``); ``format="lark"`` for Lark text (``start: ...``; only
  ``%import common`` resolves), ``"regex"`` for a pattern, ``"builtin"`` for a
  bundled grammar by name (``"json"``).
- ``compile_json_schema(schema, strict=True, ...)``: a JSON Schema as a str,
  a dict, or a class with ``model_json_schema()`` (pydantic). ``strict``:
  keywords a grammar cannot enforce (``uniqueItems``, ``contains``, ...) are
  errors; ``strict=False`` drops them and lists them in
  ``compiled.warnings``. ``any_whitespace=False`` gives compact JSON; else at
  most ``max_whitespace_cnt`` (default 2) whitespace bytes between tokens.
  This is the generation grammar; ``validation=True`` gives the grammar
  ``zapgram parse`` validates with (any JSON whitespace, any member order
  where exact, every string escape spelling): for checking finished texts,
  not for masks (a model could loop on whitespace).
- ``compile_regex``, ``compile_builtin_json_grammar``, ``compile_lark``.

The cache maps (kind, text, options) to the CompiledGrammar, bounded to
``cache_limit`` entries and, as XGrammar's, to ``cache_limit_bytes`` bytes
(-1: no byte bound) of what its grammars hold (``memory_bytes``: tables,
token sets they built, their share of the vocabulary's mask cache), least
recently used first out; the grammar just compiled always stays. Errors are ValueError with the engine's message, which names
the place (``<text>:LINE:COL``, or a JSON pointer) and the reason; arguments
of the wrong type (bytes for a grammar, a str where a list of tags or
triggers goes, a float size) are TypeError naming the argument.

Persistent compiled grammars (XGrammar's names): ``compiled.serialize_json()``
gives a JSON object as text, ``{"format": "zapgram.CompiledGrammar",
"version": N, "vocabulary_fingerprint": "<16 hex digits>", "bytes": n,
"payload": "<base64>"}``, whose payload is the engine's binary form
(``compiled.serialize()``: a versioned, checksummed form tied to the
vocabulary's fingerprint; format in api/grammar_serializer.cc). JSON text so
that it goes wherever XGrammar's does (a config store, a request); the
binary form is a third smaller and is what ``cache_dir`` files hold.
``CompiledGrammar.deserialize_json(text, tokenizer_info)`` and
``CompiledGrammar.deserialize(data, tokenizer_info)`` read them back: masks
equal the original's; another vocabulary, another format version,
truncated or corrupt input raise ValueError saying which.

``GrammarCompiler(..., cache_dir=PATH)`` keeps compiled grammars in files
under PATH, named by a hash of (format version, vocabulary fingerprint,
grammar kind, text, options), so processes and replicas sharing a
filesystem compile each grammar once: a miss compiles and writes the file
atomically (a temporary file, then a rename: readers never see half a
file); a file that is unreadable, corrupt, of another version or another
vocabulary is ignored, and rewritten by the compile that follows; a
directory that cannot be written only loses the cache, never the compile.
Two processes missing the same grammar at the same moment may both compile
it (the last rename wins; both files are the same).

Tests: tests/python/test_api.py (Compiler*), test_bad_input.py,
test_serialize.py.
"""

import base64
import binascii
import collections
import collections.abc
import hashlib
import json
import os
import threading
import uuid
from typing import Any, Optional, Tuple, Union

from . import _core
from .tokenizer_info import TokenizerInfo

CompiledGrammar = _core.CompiledGrammar

_JSON_FORMAT = "zapgram.CompiledGrammar"


def _tokenizer_vocab(tokenizer_info: Any):
    if not isinstance(tokenizer_info, TokenizerInfo):
        raise TypeError(f"tokenizer_info must be a TokenizerInfo, got {type(tokenizer_info).__name__}")
    return tokenizer_info._vocab


def _loaded(compiled: CompiledGrammar, tokenizer_info: TokenizerInfo) -> CompiledGrammar:
    """The Python attributes a compile sets, on a loaded grammar."""
    compiled.tokenizer_info = tokenizer_info
    compiled.warnings = list(compiled._warnings)
    return compiled


def _serialize(self) -> bytes:
    """The grammar's binary form (see the module docstring)."""
    return self._serialize()


def _serialize_json(self) -> str:
    """The grammar as JSON text (XGrammar's name; see the module docstring)."""
    data = self._serialize()
    return json.dumps({
        "format": _JSON_FORMAT,
        "version": _core.SERIAL_FORMAT_VERSION,
        "vocabulary_fingerprint": f"{self.vocabulary.fingerprint:016x}",
        "bytes": len(data),
        "payload": base64.b64encode(data).decode("ascii"),
    })


def _deserialize(data: Union[bytes, bytearray, memoryview], tokenizer_info: TokenizerInfo) -> CompiledGrammar:
    """A grammar from serialize()'s bytes, for `tokenizer_info` (the
    vocabulary it was compiled with). ValueError when the bytes are not a
    compiled grammar, of another format version, of another vocabulary,
    truncated or corrupt."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes (from CompiledGrammar.serialize()), got {type(data).__name__}"
                        + (" (deserialize_json reads the JSON text)" if isinstance(data, str) else ""))
    vocab = _tokenizer_vocab(tokenizer_info)
    return _loaded(CompiledGrammar._deserialize(bytes(data), vocab), tokenizer_info)


def _deserialize_json(json_str: str, tokenizer_info: TokenizerInfo) -> CompiledGrammar:
    """A grammar from serialize_json()'s text (XGrammar's name)."""
    if not isinstance(json_str, (str, bytes, bytearray)):
        raise TypeError(f"json_str must be a str (from CompiledGrammar.serialize_json()), "
                        f"got {type(json_str).__name__}")
    vocab = _tokenizer_vocab(tokenizer_info)
    try:
        obj = json.loads(json_str)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"not a serialized compiled grammar: not JSON ({e})") from None
    if not isinstance(obj, dict) or obj.get("format") != _JSON_FORMAT:
        raise ValueError(f'not a serialized compiled grammar: no "format": "{_JSON_FORMAT}"')
    version = obj.get("version")
    if version != _core.SERIAL_FORMAT_VERSION:
        raise ValueError(f"serialized compiled grammar of format version {version!r}, this build reads version "
                         f"{_core.SERIAL_FORMAT_VERSION} (compile the grammar again)")
    fingerprint = f"{vocab.fingerprint:016x}"
    if obj.get("vocabulary_fingerprint") != fingerprint:
        raise ValueError(f"serialized compiled grammar of another vocabulary (fingerprint "
                         f"{obj.get('vocabulary_fingerprint')!r}, this tokenizer_info {fingerprint!r})")
    payload = obj.get("payload")
    if not isinstance(payload, str):
        raise ValueError('serialized compiled grammar without a "payload" string')
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"serialized compiled grammar: the payload is not base64 ({e})") from None
    return _loaded(CompiledGrammar._deserialize(data, vocab), tokenizer_info)


CompiledGrammar.serialize = _serialize
CompiledGrammar.serialize_json = _serialize_json
CompiledGrammar.deserialize = staticmethod(_deserialize)
CompiledGrammar.deserialize_json = staticmethod(_deserialize_json)


class _DiskCache:
    """Compiled grammars in files under one directory (GrammarCompiler's
    cache_dir; the module docstring says what is guaranteed)."""

    def __init__(self, directory: Any, tokenizer_info: TokenizerInfo):
        if not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"cache_dir must be a path (str or os.PathLike) or None, got {type(directory).__name__}")
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.tokenizer_info = tokenizer_info
        self._prefix = ["zapgram", _core.SERIAL_FORMAT_VERSION, f"{tokenizer_info._vocab.fingerprint:016x}"]
        # Counters, for tests and monitoring.
        self.hits = self.misses = self.rejected = self.write_errors = 0

    def path(self, key: Tuple) -> str:
        text = json.dumps(self._prefix + [list(k) if isinstance(k, tuple) else k for k in key])
        return os.path.join(self.directory, hashlib.sha256(text.encode("utf-8")).hexdigest()[:40] + ".zgc")

    def load(self, key: Tuple) -> Optional[CompiledGrammar]:
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.misses += 1
            return None
        try:
            compiled = _deserialize(data, self.tokenizer_info)
        except (ValueError, RuntimeError):
            self.rejected += 1  # corrupt, another version or vocabulary: compiled and rewritten
            return None
        self.hits += 1
        return compiled

    def store(self, key: Tuple, compiled: CompiledGrammar) -> None:
        path = self.path(key)
        temporary = f"{path}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        try:
            with open(temporary, "wb") as f:
                f.write(compiled._serialize())
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        except OSError:
            self.write_errors += 1
            try:
                os.unlink(temporary)
            except OSError:
                pass


class StructuralTagItem:
    """One structural tag (XGrammar's name): `begin`, a body under `schema`
    (a JSON Schema as dict, str or pydantic class), `end`."""

    def __init__(self, *, begin: Any, schema: Any, end: Any):
        self.begin, self.schema, self.end = begin, schema, end


_SCHEMA_KINDS = "a JSON Schema: a str of JSON, a dict, a bool or a pydantic model class"


def _schema_object(schema: Any, name: str = "schema") -> Any:
    """A JSON Schema as a JSON value: dicts and bools as they are, JSON text
    parsed, pydantic classes through model_json_schema()."""
    if hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    if isinstance(schema, str):
        try:
            return json.loads(schema)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name} is not JSON: {e}") from None
    if not isinstance(schema, (dict, bool)):
        raise TypeError(f"{name} must be {_SCHEMA_KINDS}, got {type(schema).__name__}")
    return schema


def _json_text(value: Any, name: str) -> str:
    """json.dumps, its errors naming the argument."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as e:  # an object json cannot write, a circular reference
        raise TypeError(f"{name} cannot be written as JSON: {e}") from None


def _list_arg(value: Any, name: str, of: str) -> list:
    """A list argument: any iterable but a str, bytes or a dict (one item
    passed for the list), or None."""
    if not isinstance(value, (str, bytes, bytearray, dict)):
        try:
            return list(value)
        except TypeError:
            pass
    raise TypeError(f"{name} must be a list of {of}, got {type(value).__name__} ({value!r:.60})")


# compile_grammar's formats; json_schema and structural_tags are read too
# (compile_json_schema and compile_structural_tag pass them).
_FORMATS = ("gbnf", "ebnf", "lark", "llguidance", "regex", "builtin", "json_schema", "structural_tags")


class GrammarCompiler:
    """Compiles grammars for one TokenizerInfo."""

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        max_threads: int = 8,
        cache_enabled: bool = True,
        cache_limit: int = 64,
        cache_limit_bytes: int = -1,
        cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> None:
        if not isinstance(tokenizer_info, TokenizerInfo):
            hint = " (TokenizerInfo.from_huggingface(path) reads a tokenizer.json)" if isinstance(
                tokenizer_info, str) else ""
            raise TypeError(f"tokenizer_info must be a TokenizerInfo, got {type(tokenizer_info).__name__}{hint}")
        self.tokenizer_info = tokenizer_info
        # Compiling is single-threaded; max_threads is kept for XGrammar's signature.
        self.max_threads = _core._int_arg(max_threads, "max_threads", 1)
        self._cache_enabled = cache_enabled
        self._cache_limit = _core._int_arg(cache_limit, "cache_limit", 0)
        self._cache_limit_bytes = _core._int_arg(cache_limit_bytes, "cache_limit_bytes", -1)
        self._cache: "collections.OrderedDict[Tuple, CompiledGrammar]" = collections.OrderedDict()
        self._lock = threading.Lock()
        # Compiled grammars shared through files (see the module docstring).
        self._disk = None if cache_dir is None else _DiskCache(cache_dir, tokenizer_info)

    def compile_grammar(self, grammar: str, *, format: str = "gbnf", root_rule_name: str = "root") -> CompiledGrammar:
        """GBNF/EBNF text (format "gbnf" or "ebnf"), Lark text ("lark"; llguidance's
        dialect when it uses that dialect's syntax), llguidance's Lark ("llguidance",
        always; docs/llguidance-lark.md), a regex ("regex"), or a builtin grammar's
        name ("builtin", e.g. "json")."""
        if not isinstance(grammar, str):
            raise TypeError(f"grammar must be a str, got {type(grammar).__name__}")
        if not isinstance(format, str):
            raise TypeError(f"format must be a str (gbnf, ebnf, lark, llguidance, regex or builtin), "
                            f"got {type(format).__name__}")
        if format not in _FORMATS:
            raise ValueError(f"unknown grammar format {format!r} (gbnf, ebnf, lark, llguidance, regex or builtin; "
                             "compile_json_schema and compile_structural_tag take the others)")
        if root_rule_name != "root":
            raise ValueError("root_rule_name: zapgram's GBNF grammars start at `root`")
        if format == "builtin":
            return self._compile(("builtin", grammar), lambda: _core.Grammar.load("builtin:" + grammar))
        return self._compile((format, grammar), lambda: _core.Grammar.from_text(format, grammar))

    def compile_structural_tag(self, tags, triggers) -> CompiledGrammar:
        """XGrammar's structural tags: free text until one of `triggers`
        occurs, then one of the tags whose begin starts with it, exactly:
        the rest of its begin, its body (a JSON Schema: dict, str or pydantic
        class; or {"grammar": GBNF text}), its end; then free text again.
        `tags` are StructuralTagItem(begin=, schema=, end=) or dicts with the
        same keys (docs/structural_tags.md). A begin, an end or a trigger may
        be one token, {"token": id or text} (a list of strings and tokens for
        a begin or an end); trigger tokens make the free part free tokens
        (XGrammar's TokenTagDispatch)."""
        items = []
        tags = _list_arg(tags, "tags", "StructuralTagItem or dicts (begin, schema, end)")
        triggers = _list_arg(triggers, "triggers", 'strings or {"token": ...} (one trigger is [trigger])')
        for k, tag in enumerate(tags):
            if isinstance(tag, StructuralTagItem):
                begin, schema, end = tag.begin, tag.schema, tag.end
            elif isinstance(tag, dict):
                if "schema" not in tag and "grammar" not in tag:
                    raise ValueError(f'tags[{k}] has no "schema" (a JSON Schema) nor "grammar" (GBNF text)')
                begin, schema, end = tag.get("begin"), tag.get("schema", tag.get("grammar")), tag.get("end")
            else:
                raise TypeError(f"a tag must be a StructuralTagItem or a dict, got {type(tag).__name__}")
            item = {"begin": begin, "end": end}
            if isinstance(schema, dict) and set(schema) == {"grammar"}:
                item["grammar"] = schema["grammar"]
            elif isinstance(tag, dict) and "schema" not in tag:
                item["grammar"] = schema
            else:
                item["schema"] = _schema_object(schema, f"tags[{k}] schema")
            items.append(item)
        text = _json_text({"tags": items, "triggers": triggers}, "tags")
        return self._compile(("structural_tags", text), lambda: _core.Grammar.from_text("structural_tags", text))

    def compile_structural_tag_format(self, format: str, tools) -> CompiledGrammar:
        """A ready-made tool-call format ("llama3", "qwen2_5", "hermes") for
        `tools`, a list of {"name": ..., "parameters": JSON Schema}."""
        if not isinstance(format, str):
            raise TypeError(f"format must be a str (llama3, qwen2_5 or hermes), got {type(format).__name__}")
        items = []
        for k, tool in enumerate(_list_arg(tools, "tools", 'dicts {"name": ..., "parameters": JSON Schema}')):
            if not isinstance(tool, collections.abc.Mapping):
                raise TypeError(f'tools[{k}] must be a dict {{"name": ..., "parameters": ...}}, '
                                f"got {type(tool).__name__}")
            for key in ("name", "parameters"):
                if key not in tool:
                    raise ValueError(f'tools[{k}] has no "{key}"')
            if not isinstance(tool["name"], str):
                raise TypeError(f'tools[{k}]["name"] must be a str, got {type(tool["name"]).__name__}')
            items.append({"name": tool["name"], "parameters": _schema_object(tool["parameters"],
                                                                             f'tools[{k}]["parameters"]')})
        text = _json_text({"format": format, "tools": items}, "tools")
        return self._compile(("structural_tags", text), lambda: _core.Grammar.from_text("structural_tags", text))

    def compile_lark(self, grammar: str, *, indenter: str = "auto") -> CompiledGrammar:
        """Lark text. `indenter`: Lark's Indenter post-lexer (Python's
        _INDENT/_DEDENT): "auto" (on when the grammar %declares _INDENT and
        _DEDENT and uses _NL or _NEWLINE), "on" or "off"."""
        if indenter not in ("auto", "on", "off"):
            raise ValueError(f"indenter must be 'auto', 'on' or 'off', not {indenter!r}")
        if indenter == "auto":
            return self.compile_grammar(grammar, format="lark")
        return self._compile(("lark", grammar, indenter),
                             lambda: _core.Grammar.from_text("lark", grammar, indenter=indenter))

    def compile_regex(self, regex: str) -> CompiledGrammar:
        return self.compile_grammar(regex, format="regex")

    def compile_builtin_json_grammar(self) -> CompiledGrammar:
        return self.compile_grammar("json", format="builtin")

    def compile_json_schema(
        self,
        schema: Union[str, dict, Any],
        *,
        any_whitespace: bool = True,
        indent: Optional[int] = None,
        separators: Optional[Tuple[str, str]] = None,
        strict_mode: bool = True,
        strict: bool = True,
        max_whitespace_cnt: Optional[int] = None,
        any_order: bool = False,
        validation: bool = False,
    ) -> CompiledGrammar:
        """A JSON Schema (str, dict, or a pydantic model class).

        strict: unsupported keywords are errors (False: dropped, see
        compiled.warnings). max_whitespace_cnt: whitespace bytes allowed
        between JSON tokens when any_whitespace (None: 2, zapgram's bound; models
        loop on unbounded whitespace). any_order: object members in any order
        (default: the order of `properties`). validation: the grammar of
        JSON text as RFC 8259 reads it (whitespace, order and spelling
        options are then not used; see the module docstring). strict_mode is XGrammar's (extra
        properties refused unless the schema allows them) and is not applied:
        zapgram follows the schema's own additionalProperties. indent and
        separators are not supported (ValueError).
        """
        del strict_mode  # see the docstring
        if indent is not None or separators is not None:
            raise ValueError("indent and separators are not supported; use any_whitespace / max_whitespace")
        if hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        if not isinstance(schema, (str, dict, bool)):
            raise TypeError(f"schema must be {_SCHEMA_KINDS}, got {type(schema).__name__}")
        text = schema if isinstance(schema, str) else _json_text(schema, "schema")
        compact = not any_whitespace
        max_whitespace = 2 if max_whitespace_cnt is None else _core._int_arg(
            max_whitespace_cnt, "max_whitespace_cnt", 0, 2**32 - 1)
        options = (not strict, compact, max_whitespace, any_order, validation)
        return self._compile(
            ("json_schema", text, options),
            lambda: _core.Grammar.from_text(
                "json_schema",
                text,
                lenient=not strict,
                compact=compact,
                max_whitespace=max_whitespace,
                any_order=any_order,
                validation=validation,
            ),
        )

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    @property
    def cache_size(self) -> int:
        """Compiled grammars held by the cache."""
        return len(self._cache)

    def _compile(self, key: Tuple, read) -> CompiledGrammar:
        if self._cache_enabled:
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    return hit
        compiled = self._disk.load(key) if self._disk is not None else None
        if compiled is None:
            grammar = read()
            compiled = CompiledGrammar(grammar, self.tokenizer_info._vocab)
            compiled.tokenizer_info = self.tokenizer_info
            compiled.warnings = list(grammar.warnings)
            if self._disk is not None:
                self._disk.store(key, compiled)
        if self._cache_enabled and self._cache_limit > 0:
            with self._lock:
                self._cache[key] = compiled
                self._cache.move_to_end(key)
                while len(self._cache) > self._cache_limit:
                    self._cache.popitem(last=False)
                if self._cache_limit_bytes >= 0:
                    held = sum(g.memory_bytes for g in self._cache.values())
                    while held > self._cache_limit_bytes and len(self._cache) > 1:
                        held -= self._cache.popitem(last=False)[1].memory_bytes
        return compiled
