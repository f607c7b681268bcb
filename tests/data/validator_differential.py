"""`zapgram parse schema:PATH` against a real validator (python3-jsonschema).

What it checks. `zapgram parse` with a JSON Schema must give the validation
verdict (SchemaPurpose::kValidation: JSON text as RFC 8259 reads it). This
test takes the instances of the MaskBench trace (traces/llama3/maskbench.jsonl,
one valid and mostly one invalid instance per schema) in three spellings —
as given (`json.dumps(obj, ensure_ascii=False)` with ", " and ": "), compact
(`json.dumps(obj, separators=(",", ":"))`, so non-ASCII text becomes \\uXXXX
escapes) and `json.dumps(obj, indent=4)` — and the instances of the
JSON-Schema-Test-Suite trace (traces/llama3/jsonschema-suite.jsonl) as given,
and asks both zapgram and jsonschema. The validator is the oracle, not the
trace labels: the draft the schema declares ($schema; the suite's draft7
folder; else 2020-12), with format assertion on (zapgram's grammar asserts
formats), the suite's remotes as http://localhost:1234/.

How it runs. One `zapgram parse` process per schema (strict mode) compiles
the schema once and reads all its documents through `--texts` (one JSON
string per line), two schemas at a time. A schema zapgram refuses to compile
is counted by its error ("unsupported: <keyword>", or the message's kind),
not as a disagreement.

Disagreements. Each one must be explained by a reason that is established
for that case, never assumed from the schema alone:
  - oneOf exclusivity: zapgram accepts, the validator rejects, and the
    validator accepts the same instance once every oneOf is read as anyOf
    (the grammar takes oneOf as a union; exclusivity is not context-free).
  - format <f, ...> not checked by the validator: zapgram rejects, the
    validator accepts, the validator has no checker for these formats, and
    zapgram accepts the same text under the schema without them.
  - format date: the validator's checker takes non-RFC 3339 dates: zapgram
    rejects, the validator accepts, the instance has a string that Python's
    date.fromisoformat takes and that is not YYYY-MM-DD, and zapgram accepts
    the text under the schema without `format: date`.
  - format <f> not checked by zapgram: zapgram accepts, the validator
    rejects, and the validator accepts without that format (zapgram ignores
    formats it does not know, as JSON Schema's annotation reading says).
  - validator float arithmetic (multipleOf): the validator rejects, zapgram
    accepts, and exact decimal arithmetic on the instance's own number text
    says every multipleOf holds (Python floats say 0.07 is not a multiple of
    0.01).
  - pattern dialect: zapgram and the validator disagree on a `pattern` /
    `patternProperties`, and the validator gives zapgram's verdict once
    \\d \\w \\s are spelled out as ECMA-262 defines them (Python's `re`
    reads them as Unicode classes; ECMA-262's \\d \\w are ASCII and its \\s
    has U+FEFF).
  - validator contradicts the suite's expected result (suite cases only):
    the JSON-Schema-Test-Suite's own `valid` for the case equals zapgram's
    verdict (jsonschema 4.10's lax `date` and `email` checkers, its 0 ==
    false in arrays, its $ref resolution next to $id in draft-07, ...).
  - number spelling under numeric keywords: zapgram rejects, the validator
    accepts, the schema has minimum/maximum/multipleOf (whose grammars take
    digit-only integers and mostly fixed-point numbers: whether "12e-1" lies
    in [1, 2] compares a digit count with an exponent, not regular), and
    zapgram accepts the same values written in fixed point.
  - member order: zapgram rejects, the validator accepts, and zapgram
    accepts the instance with every object's members sorted into the order
    of the schema's `properties` (the grammar keeps schema order for objects
    whose any-order grammar would not be exact: more than 10 required keys,
    or more than 2^14 rules for the subsets of them times the member counts
    minProperties/maxProperties tell apart).
Anything else is "unexplained" and fails the test, as does a document that
zapgram could not decide (a budget) or that the validator could not.

Scope. By default a fixed, deterministic subsample keeps the run near two
minutes on two cores: every MaskBench schema whose position in the sorted
list of schema paths is a multiple of --every (default 3), and every suite
schema. --every 1 runs the whole set (the issue's closing note gives those
counts). The summary is printed as a table and, with --json FILE, written
as JSON.

Usage: validator_differential.py --cli build/zapgram --data ../shared/data
       [--every N] [--jobs 2] [--json OUT] [--verbose]
Registered in ctest as Validation.JsonSchemaDifferential (CMakeLists.txt).
"""

import argparse
import collections
import concurrent.futures
import copy
import decimal
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import jsonschema

SPELLINGS = ("given", "compact", "indent4")


def read_trace(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def respell(text, spelling):
    """The instance text in one spelling, or None when Python cannot write
    it back as JSON (a number beyond float range parses as inf)."""
    if spelling == "given":
        return text
    obj = json.loads(text)
    try:
        if spelling == "compact":
            return json.dumps(obj, separators=(",", ":"), allow_nan=False)
        return json.dumps(obj, indent=4, allow_nan=False)
    except ValueError:
        return None


def walk(node):
    """Every value inside a JSON value (itself included), iteratively."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, dict):
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)


def schema_keywords(schema, keyword):
    """The values of `keyword` wherever a dict has it (schema or not)."""
    return [n[keyword] for n in walk(schema) if isinstance(n, dict) and keyword in n]


def rewrite(schema, fn):
    """A deep copy with fn(dict) applied to every dict, iteratively."""
    out = copy.deepcopy(schema)
    for n in walk(out):
        if isinstance(n, dict):
            fn(n)
    return out


def no_network(url):
    raise ValueError("remote reference %s (no network in tests)" % url)


# ECMA-262's \s (WhiteSpace and LineTerminator), as a Python class body.
ECMA_SPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
ECMA_CLASSES = {"d": "0-9", "w": "A-Za-z0-9_", "s": ECMA_SPACE}


def ecma_to_python(pattern):
    """The pattern with ECMA-262's meaning of \\d \\w \\s (and \\D \\W \\S
    outside classes) spelled out for Python's `re`, which reads them as
    Unicode classes; None when a negated shorthand sits inside a class."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            if e.lower() in ECMA_CLASSES:
                body = ECMA_CLASSES[e.lower()]
                if in_class:
                    if e.isupper():
                        return None
                    out.append(body)
                else:
                    out.append("[%s%s]" % ("^" if e.isupper() else "", body))
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


class Validator:
    """python3-jsonschema with the draft the schema declares and format
    assertion on; remote refs served from the suite's remotes folder."""

    def __init__(self, data_root):
        self.store = {}
        remotes = os.path.join(data_root, "jsonschema-suite", "remotes")
        for folder, _, files in os.walk(remotes):
            for name in files:
                if name.endswith(".json"):
                    path = os.path.join(folder, name)
                    url = "http://localhost:1234/" + os.path.relpath(path, remotes).replace(os.sep, "/")
                    with open(path, encoding="utf-8") as f:
                        self.store[url] = json.load(f)

    def cls_for(self, schema, draft7):
        default = jsonschema.Draft7Validator if draft7 else jsonschema.Draft202012Validator
        return jsonschema.validators.validator_for(schema, default=default)

    def valid(self, schema, instance, draft7, format_off=None):
        """True/False, or an exception message when the validator fails."""
        cls = self.cls_for(schema, draft7)
        checker = cls.FORMAT_CHECKER
        if format_off is not None:
            checker = jsonschema.FormatChecker([f for f in checker.checkers if f != format_off])
        try:
            resolver = jsonschema.RefResolver.from_schema(
                schema, store=self.store, handlers={"http": no_network, "https": no_network})
            v = cls(schema, resolver=resolver, format_checker=checker)
            return next(v.iter_errors(instance), None) is None
        except Exception as e:  # a schema the validator cannot use
            message = re.sub(r"(remote reference) \S+", r"\1", str(e).splitlines()[0])
            return "%s: %s" % (type(e).__name__, message[:100])

    def checks_format(self, schema, draft7, fmt):
        return fmt in self.cls_for(schema, draft7).FORMAT_CHECKER.checkers


class Zapgram:
    """`zapgram parse schema:PATH --texts F --json` (strict, validation mode)."""

    def __init__(self, cli, data_root, tmp):
        self.cli, self.data_root, self.tmp = cli, data_root, tmp
        self.seconds = {}  # schema spec -> wall seconds of its parse run

    def parse(self, schema_spec, texts, tag):
        """(verdicts, error): verdicts[i] True/False/str (undecided), or
        error = the compile error when the schema has no grammar."""
        path = os.path.join(self.tmp, "texts-%s.jsonl" % tag)
        with open(path, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps(t) + "\n")
        r = subprocess.run([self.cli, "parse", schema_spec, "--texts", path, "--json",
                            "--data-root", self.data_root], capture_output=True, text=True)
        lines = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
        if not lines and r.returncode == 2:
            return None, r.stderr.strip()
        if len(lines) != len(texts):
            return None, "zapgram parse printed %d verdicts for %d texts: %s" % (
                len(lines), len(texts), r.stderr.strip()[:300])
        verdicts = []
        for line in lines:
            verdicts.append(line["accepted"] if line["accepted"] is not None
                            else "undecided: %s" % line.get("error"))
        return verdicts, None

    def parse_schema_text(self, schema, text, draft7, tag):
        """One text under a schema given as a value (for ablations)."""
        folder = os.path.join(self.tmp, "draft7" if draft7 else "draft2020-12")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "ablation-%s.schema.json" % tag)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(schema, f)
        verdicts, error = self.parse("schema:" + path, [text], tag)
        return None if error else verdicts[0]


def compile_error_kind(message):
    m = re.search(r"unsupported: ([^ ]+)", message)
    if m:
        return "unsupported: " + m.group(1)
    for kind in ("leaves the schema document", "max_rules", "max_dfa_states", "max_nfa_states",
                 "names nothing", "no anchor", "not valid JSON"):
        if kind in message:
            return kind
    return message.split(": ", 1)[-1][:80]


def decimal_multiples_hold(schema, text):
    """Does every multipleOf in the schema divide every number of the
    instance that a float check could get wrong? Exact decimals on the
    number texts (a conservative check: all numbers against all divisors of
    the schema must agree with zapgram's acceptance)."""
    divisors = [decimal.Decimal(str(d)) for d in schema_keywords(schema, "multipleOf")
                if isinstance(d, (int, float)) and not isinstance(d, bool)]
    if not divisors:
        return False
    numbers = [decimal.Decimal(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", text)]
    float_fails = 0
    for n in numbers:
        for d in divisors:
            q = float(n) / float(d)
            if int(q) != q and (n % d) == 0:
                float_fails += 1
    return float_fails > 0


def fixed_point_spelling(text):
    """The instance text with every number in plain digits (an integral
    value as an integer, others in fixed point: 1e308 -> 1000...0, 1.0 -> 1,
    1e-05 -> 0.00001); None when that changes nothing."""
    numbers = []

    def keep(token):
        numbers.append(decimal.Decimal(token))
        return "\x00%d\x00" % (len(numbers) - 1)

    obj = json.loads(text, parse_float=keep, parse_int=keep)
    out = json.dumps(obj, ensure_ascii=False)
    for i, d in enumerate(numbers):
        plain = str(int(d)) if d == d.to_integral_value() else format(d.normalize(), "f")
        out = out.replace('"\\u0000%d\\u0000"' % i, plain, 1)
    return None if out == json.dumps(json.loads(text), ensure_ascii=False) else out


def lax_date(text):
    """Does the validator's `date` checker (Python's date.fromisoformat)
    take a text that RFC 3339's full-date (YYYY-MM-DD) refuses?"""
    import datetime
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text, re.ASCII) is None


def reorder_to_schema(instance, schema):
    """The instance with each object's members in the order of the
    `properties` lists of the schema (all of them, in document order), keys
    not listed last: a canonical-order rewrite, iterative."""
    order = {}
    for props in schema_keywords(schema, "properties"):
        if isinstance(props, dict):
            for k in props:
                order.setdefault(k, len(order))
    out = copy.deepcopy(instance)
    for n in walk(out):
        if isinstance(n, dict):
            items = sorted(n.items(), key=lambda kv: order.get(kv[0], len(order)))
            n.clear()
            n.update(items)
    return out


class Case:
    def __init__(self, source, spelling, record, text, schema, draft7):
        self.source, self.spelling, self.record = source, spelling, record
        self.text, self.schema, self.draft7 = text, schema, draft7


def explain(case, zap, val, validator, zapgram, tag):
    """The established reason of a disagreement, or None."""
    schema, draft7, text = case.schema, case.draft7, case.text
    instance = json.loads(text)
    if zap is True and val is False:
        if schema_keywords(schema, "oneOf"):
            as_any = rewrite(schema, lambda d: d.__setitem__("anyOf", d.pop("oneOf")) if
                             "oneOf" in d and "anyOf" not in d else None)
            if validator.valid(as_any, instance, draft7) is True:
                return "oneOf exclusivity"
        for fmt in sorted(set(f for f in schema_keywords(schema, "format") if isinstance(f, str))):
            if validator.valid(schema, instance, draft7, format_off=fmt) is True:
                return "format %s not checked by zapgram" % fmt
    if zap is False and val is True:
        formats = sorted(set(f for f in schema_keywords(schema, "format") if isinstance(f, str)))
        unchecked = [f for f in formats if not validator.checks_format(schema, draft7, f)]
        def accepted_without(removed):
            without = rewrite(schema, lambda d: d.pop("format") if d.get("format") in removed else None)
            return zapgram.parse_schema_text(without, text, draft7, tag) is True
        if unchecked and accepted_without(unchecked):
            # Name a smallest set: put back each format the text does not need removed.
            needed = list(unchecked)
            for f in unchecked:
                if len(needed) > 1 and accepted_without([g for g in needed if g != f]):
                    needed.remove(f)
            return "format %s not checked by the validator" % ", ".join(needed)
        if "date" in formats and any(isinstance(v, str) and lax_date(v) for v in walk(instance)):
            without = rewrite(schema, lambda d: d.pop("format") if d.get("format") == "date" else None)
            if zapgram.parse_schema_text(without, text, draft7, tag) is True:
                return "format date: the validator's checker takes non-RFC 3339 dates"
        numeric = any(schema_keywords(schema, k) for k in
                      ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"))
        plain = fixed_point_spelling(text) if numeric else None
        if plain is not None and zapgram.parse_schema_text(schema, plain, draft7, tag) is True:
            return "number spelling under numeric keywords (accepted in fixed point)"
        falls_back = schema_keywords(schema, "maxProperties") or schema_keywords(schema, "minProperties") \
            or any(isinstance(r, list) and len(r) > 10 for r in schema_keywords(schema, "required"))
        reordered = json.dumps(reorder_to_schema(instance, schema), ensure_ascii=False)
        if falls_back and reordered != json.dumps(instance, ensure_ascii=False) and \
                zapgram.parse_schema_text(schema, reordered, draft7, tag) is True:
            return "member order (schema order kept where any order is not exact)"
    if val is False and zap is True and decimal_multiples_hold(schema, text):
        return "validator float arithmetic (multipleOf)"
    patterns = schema_keywords(schema, "pattern") + [
        k for p in schema_keywords(schema, "patternProperties") if isinstance(p, dict) for k in p]
    if patterns and all(isinstance(p, str) and ecma_to_python(p) is not None for p in patterns):
        def to_ecma(d):
            if isinstance(d.get("pattern"), str):
                d["pattern"] = ecma_to_python(d["pattern"])
            if isinstance(d.get("patternProperties"), dict):
                d["patternProperties"] = {ecma_to_python(k): v for k, v in d["patternProperties"].items()}
        if validator.valid(rewrite(schema, to_ecma), instance, draft7) is zap:
            return "pattern dialect (Python re's Unicode \\d \\w \\s vs ECMA-262's)"
    if case.source == "suite" and case.record["valid"] is zap:
        group = case.record["id"].split("/", 2)[2].rsplit("#", 2)[0]
        return "validator contradicts the suite's expected result (%s)" % group
    return None


def run_schema(spec_and_records, args, validator, zapgram, tag):
    """All cases of one schema: (results, compile_error)."""
    spec, source, records = spec_and_records
    path = os.path.join(args.data, spec[len("schema:"):])
    with open(path, encoding="utf-8") as f:
        schema = json.load(f)
    draft7 = "/draft7/" in path
    cases = []
    for r in records:
        spellings = SPELLINGS if source == "maskbench" else ("given",)
        for s in spellings:
            text = respell(r["text"], s)
            if text is not None:
                cases.append(Case(source, s, r, text, schema, draft7))
    started = time.time()
    verdicts, error = zapgram.parse(spec, [c.text for c in cases], tag)
    zapgram.seconds[spec] = time.time() - started
    if error is not None:
        return [(c, "not compiled", compile_error_kind(error)) for c in cases], error
    results = []
    oracle = {}
    for c, zap in zip(cases, verdicts):
        key = c.record["id"]
        if key not in oracle:
            oracle[key] = validator.valid(schema, json.loads(c.record["text"]), draft7)
        val = oracle[key]
        if isinstance(val, str):
            results.append((c, "validator error", val))
        elif isinstance(zap, str):
            results.append((c, "zapgram undecided", zap))
        elif zap == val:
            results.append((c, "agree", "valid" if val else "invalid"))
        else:
            reason = explain(c, zap, val, validator, zapgram, tag)
            direction = "zapgram %s, validator %s" % ("accepts" if zap else "rejects",
                                                       "accepts" if val else "rejects")
            results.append((c, "disagree", reason) if reason else
                           (c, "unexplained", direction))
    return results, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    start = time.time()

    groups = collections.OrderedDict()
    for source, trace in (("maskbench", "maskbench.jsonl"), ("suite", "jsonschema-suite.jsonl")):
        for r in read_trace(os.path.join(args.data, "traces", "llama3", trace)):
            groups.setdefault((r["grammar"], source), []).append(r)
    maskbench_specs = sorted(spec for spec, source in groups if source == "maskbench")
    chosen_maskbench = set(maskbench_specs[::args.every])
    work = [(spec, source, records) for (spec, source), records in groups.items()
            if source == "suite" or spec in chosen_maskbench]

    validator = Validator(args.data)
    counts = collections.defaultdict(collections.Counter)  # row -> outcome -> n
    unexplained = []
    with tempfile.TemporaryDirectory(prefix="zapgram-validator-diff-") as tmp:
        zapgram = Zapgram(args.cli, args.data, tmp)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(run_schema, w, args, validator, zapgram, str(i))
                       for i, w in enumerate(work)]
            for f in futures:
                results, _ = f.result()
                for case, outcome, detail in results:
                    row = "maskbench " + case.spelling if case.source == "maskbench" else "suite given"
                    counts[row]["%s: %s" % (outcome, detail) if outcome != "agree" else "agree"] += 1
                    if outcome in ("unexplained", "zapgram undecided", "validator error"):
                        unexplained.append((row, case.record["id"], outcome, detail, case.text[:200]))
                    elif args.verbose and outcome == "disagree":
                        print("disagree (%s): %s %s" % (detail, row, case.record["id"]))

    elapsed = time.time() - start
    if args.verbose:
        for spec, sec in sorted(zapgram.seconds.items(), key=lambda kv: -kv[1])[:15]:
            print("slowest: %.2f s %s" % (sec, spec))
        print("zapgram parse total %.0f s over %d runs" % (sum(zapgram.seconds.values()), len(zapgram.seconds)))
    schemas = len(work)
    print("zapgram parse vs python3-jsonschema %s: %d schemas (MaskBench every %d of %d, suite all), "
          "%.0f s" % (jsonschema.__name__, schemas, args.every, len(maskbench_specs), elapsed))
    for row in sorted(counts):
        c = counts[row]
        total = sum(c.values())
        compiled = total - sum(n for k, n in c.items() if k.startswith("not compiled"))
        print("\n%s: %d documents, %d compiled, agree %d (%.2f%% of compiled)" % (
            row, total, compiled, c["agree"], 100.0 * c["agree"] / max(compiled, 1)))
        for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])):
            if k != "agree":
                print("    %6d  %s" % (n, k))
    validator_errors = [u for u in unexplained if u[2] == "validator error"]
    failures = [u for u in unexplained if u[2] != "validator error"]
    for row, rid, outcome, detail, text in failures[:40]:
        print("FAIL %s %s: %s (%s): %r" % (row, rid, outcome, detail, text))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump({"seconds": elapsed, "schemas": schemas, "every": args.every,
                       "counts": {r: dict(c) for r, c in counts.items()},
                       "failures": failures}, f, indent=1)
    print("\n%d unexplained disagreements or undecided documents; %d validator errors (not counted)"
          % (len(failures), len(validator_errors)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
