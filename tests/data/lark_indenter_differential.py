"""`zapgram parse` with SynCode's python.lark against Lark itself.

What it checks. zapgram runs Lark's Indenter post-lexer (parser/indenter.h)
for grammars that %declare _INDENT/_DEDENT. The oracle is Debian's
python3-lark: LALR(1), the basic lexer, and an Indenter configured as SynCode
configures it (newline _NL, brackets LPAR/LSQB/LBRACE and RPAR/RSQB/RBRACE,
_INDENT/_DEDENT, tab_len 8). Inputs: every Python file under
docs/python of the shared data, and mutated copies of each (made with a
fixed seed): a line's indentation changed (one space more, one space less,
its spaces replaced by a tab, or the line moved to column 0), a bracket
deleted, a bracket inserted, a blank line with odd indentation inserted, a
line joined into a bracket. Lark's verdict is "parsed without an exception".

Disagreements. zapgram parses the grammar's context-free language; Lark's
LALR(1) tables resolve conflicts and reject some derivable texts. A case
where zapgram accepts and Lark's LALR parser rejects with an Unexpected...
error counts as an LALR artifact only when Lark's own Earley parser (same
basic lexer, same Indenter) accepts the text. Any other disagreement fails.

Exit status 0 when every disagreement is explained, 1 otherwise, 77 (ctest's
skip code) when python3-lark is not installed.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile


def make_parsers(grammar_path):
    from lark import Lark
    from lark.indenter import Indenter

    class SynCodeIndenter(Indenter):
        NL_type = "_NL"
        OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
        CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
        INDENT_type = "_INDENT"
        DEDENT_type = "_DEDENT"
        tab_len = 8

    with open(grammar_path) as f:
        text = f.read()
    lalr = Lark(text, parser="lalr", lexer="basic", postlex=SynCodeIndenter(), start="start")
    earley = Lark(text, parser="earley", lexer="basic", postlex=SynCodeIndenter(), start="start")
    return lalr, earley


def lark_verdict(parser, text):
    try:
        parser.parse(text)
        return True, ""
    except Exception as e:  # any failure is a rejection (DedentError, IndexError, ...)
        return False, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:120] if str(e) else "")


def mutations(text, rng):
    """A few deterministic mutations of `text` (name, mutated text)."""
    lines = text.split("\n")
    out = []
    indented = [i for i, l in enumerate(lines) if l.startswith(" ") and l.strip()]
    if indented:
        i = rng.choice(indented)
        for name, f in (("indent+1", lambda l: " " + l),
                        ("indent-1", lambda l: l[1:]),
                        ("indent-tab", lambda l: "\t" + l.lstrip(" ")),
                        ("indent-0", lambda l: l.lstrip(" \t"))):
            copy = list(lines)
            copy[i] = f(copy[i])
            out.append(("%s@%d" % (name, i + 1), "\n".join(copy)))
    brackets = [k for k, c in enumerate(text) if c in "()[]{}"]
    if brackets:
        k = rng.choice(brackets)
        out.append(("drop-bracket@%d" % k, text[:k] + text[k + 1:]))
        k = rng.randrange(len(text))
        out.append(("add-bracket@%d" % k, text[:k] + rng.choice("([{)]}") + text[k:]))
    if lines:
        i = rng.randrange(len(lines))
        copy = list(lines)
        copy.insert(i, " " * rng.randrange(1, 7))
        out.append(("blank-line@%d" % (i + 1), "\n".join(copy)))
    opens = [k for k, c in enumerate(text) if c in "([{"]
    if opens:
        k = rng.choice(opens)
        out.append(("newline-in-bracket@%d" % k, text[:k + 1] + "\n" + " " * rng.randrange(0, 9) + text[k + 1:]))
    return out


def zapgram_verdicts(cli, grammar, paths):
    """accepted flag per path, from one `zapgram parse --json` run."""
    verdicts = {}
    for start in range(0, len(paths), 200):
        chunk = paths[start:start + 200]
        proc = subprocess.run([cli, "parse", grammar, *chunk, "--json", "-j", "2"],
                              capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            raise SystemExit("zapgram parse failed: " + proc.stderr)
        for line in proc.stdout.splitlines():
            r = json.loads(line)
            verdicts[r["file"]] = r["accepted"]
    return verdicts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--mutations-every", type=int, default=1, help="mutate every Nth document")
    args = ap.parse_args()
    try:
        lalr, earley = make_parsers(os.path.join(args.data, "grammars/lark/syncode/python.lark"))
    except ImportError:
        print("python3-lark is not installed: skipped")
        return 77
    docs = []
    for root, _, files in os.walk(os.path.join(args.data, "docs/python")):
        for f in sorted(files):
            if f.endswith(".py"):
                docs.append(os.path.join(root, f))
    docs.sort()
    rng = random.Random(args.seed)
    cases = []  # (name, text)
    for n, path in enumerate(docs):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        name = os.path.relpath(path, args.data)
        cases.append((name, text))
        if n % args.mutations_every == 0:
            for m, mutated in mutations(text, rng):
                cases.append((name + "#" + m, mutated))
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, (_, text) in enumerate(cases):
            p = os.path.join(tmp, "%05d.py" % i)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
            paths.append(p)
        got = zapgram_verdicts(args.cli, os.path.join(args.data, "grammars/lark/syncode/python.lark"), paths)
        counts = {"cases": 0, "originals": 0, "mutated": 0, "agree": 0, "both_accept": 0, "both_reject": 0,
                  "lalr_artifacts": 0, "unexplained": 0}
        unexplained = []
        for (name, text), p in zip(cases, paths):
            counts["cases"] += 1
            counts["mutated" if "#" in name else "originals"] += 1
            z = got[p]
            ok, why = lark_verdict(lalr, text)
            if z == ok:
                counts["agree"] += 1
                counts["both_accept" if ok else "both_reject"] += 1
                continue
            if z and not ok and "Unexpected" in why and lark_verdict(earley, text)[0]:
                counts["lalr_artifacts"] += 1
                print("LALR artifact: %s: Lark LALR %s; Lark Earley accepts" % (name, why))
                continue
            counts["unexplained"] += 1
            unexplained.append("%s: zapgram %s, Lark %s" % (name, "accepts" if z else "rejects",
                                                             "accepts" if ok else "rejects (" + why + ")"))
    print(json.dumps(counts))
    for u in unexplained:
        print("UNEXPLAINED " + u)
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
