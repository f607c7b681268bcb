#!/usr/bin/env python3
"""Writes an arithmetic-ish training corpus for the sampler study's n-gram LM.

Target grammar: llama.cpp's grammars/gbnf/llama.cpp/arithmetic.gbnf
    root  ::= (expr "=" ws term "\\n")+
    expr  ::= term ([-+*/] term)*
    term  ::= ident | num | "(" ws expr ")" ws
    ident ::= [a-z] [a-z0-9_]* ws
    num   ::= [0-9]+ ws
    ws    ::= [ \\t\\n]*
Whitespace may follow a term, "=" or "(", never an operator, so the way people
write sums ("3 + 4 = 7") is already outside the language.

The corpus is paragraphs of 1-3 lines separated by empty lines (train with
`zapgram ngram train --per-paragraph`; each paragraph is one document and keeps
its final newline, as the grammar requires). Each line is, with probability
--valid (default 0.5), a sentence of the grammar (random expression of depth
<= 3, random legal spacing), and otherwise the same kind of line with one or
two of these errors: a space after an operator, "==" for "=", a dropped or an
extra parenthesis, a decimal number, an upper-case identifier, a doubled
operator, a missing right-hand side, an unparenthesised expression on the
right, "^" as an operator. Deterministic for a given --seed. Prints the counts
of valid and broken lines on stderr.
"""
import argparse
import random
import sys


def ident(rng):
    first = rng.choice("abcdefghijklmnopqrstuvwxyz")
    rest = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(rng.choice([0, 0, 0, 1, 2, 4])))
    return first + rest


def num(rng):
    return str(rng.choice([rng.randint(0, 9), rng.randint(10, 99), rng.randint(100, 9999)]))


def ws(rng):
    return rng.choice(["", "", " ", " ", " ", "  "])


def term(rng, depth):
    kind = rng.random()
    if depth > 0 and kind < 0.25:
        return "(" + ws(rng) + expr(rng, depth - 1) + ")" + ws(rng)
    return (ident(rng) if kind < 0.6 else num(rng)) + ws(rng)


def expr(rng, depth):
    parts = [term(rng, depth)]
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        parts.append(rng.choice("+-*/"))
        parts.append(term(rng, depth))
    return "".join(parts)


def valid_line(rng):
    return expr(rng, 3) + "=" + ws(rng) + term(rng, 1).rstrip("\n")


def break_line(rng, line):
    kind = rng.randrange(9)
    ops = [i for i, c in enumerate(line) if c in "+-*/"]
    if kind == 0 and ops:  # space after an operator
        i = rng.choice(ops)
        return line[: i + 1] + " " + line[i + 1 :]
    if kind == 1:
        return line.replace("=", " == ", 1)
    if kind == 2 and ")" in line:
        i = line.rindex(")")
        return line[:i] + line[i + 1 :]
    if kind == 3:
        return "(" + line
    if kind == 4:
        return line + "." + str(rng.randint(0, 99)) if line[-1].isdigit() else line.replace("=", "= 0." + str(rng.randint(1, 9)) + "*", 1)
    if kind == 5:
        return ident(rng).upper() + " " + rng.choice("+-*/") + line
    if kind == 6 and ops:
        i = rng.choice(ops)
        return line[: i + 1] + rng.choice("+-*/") + line[i + 1 :]
    if kind == 7:
        return line[: line.index("=") + 1] + rng.choice(["", " "])
    if kind == 8:
        return line + rng.choice(["+", " +", "*"]) + num(rng)
    return line.replace("*", "^", 1) if "*" in line else line + "^2"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--paragraphs", type=int, default=4000)
    parser.add_argument("--valid", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    good = bad = 0
    with open(args.output, "w") as out:
        for _ in range(args.paragraphs):
            lines = []
            for _ in range(rng.choice([1, 1, 2, 3])):
                line = valid_line(rng)
                if rng.random() >= args.valid:
                    for _ in range(rng.choice([1, 1, 2])):
                        line = break_line(rng, line)
                    bad += 1
                else:
                    good += 1
                lines.append(line)
            out.write("\n".join(lines) + "\n\n")
    print(f"{good} lines valid by construction, {bad} lines with injected errors", file=sys.stderr)


if __name__ == "__main__":
    main()
