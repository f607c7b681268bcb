#!/usr/bin/python3
"""Synthetic tool-calling traces for `zapgram bench` (issue 17).

For every N-th valid MaskBench record (a real JSON instance under its real
schema) it writes a structural-tag spec (docs/structural_tags.md, format
qwen2_5 or llama3, one tool whose parameters are the schema) and three texts:

  mixed  prose, the tool call (begin, the instance, end), prose
  prose  the same prose only (free text: the mask cost outside tags)
  call   the tool call only (mostly inside the tag)

then tokenizes each set with `zapgram trace` into OUT/{mixed,prose,call}.jsonl
(grammar = structural:OUT/specs/K.json, absolute). Prose is real English: the
paragraphs of ../shared/DESIGN.md, in turn. Instances the generation grammar
does not take as written (member order, whitespace) are dropped after a
`zapgram bench --per-doc` check of the call set, so every kept document is
accepted.

  perf/make_tool_call_trace.py --zapgram build/zapgram --out build/tool_calls \\
      --tokenizer ../shared/data/tokenizers/llama3.tokenizer.json --every 64
  build/zapgram bench --tokenizer ... --trace build/tool_calls/mixed.jsonl --json
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

FORMATS = {
    "qwen2_5": ('<tool_call>\n{{"name": {name}, "arguments": ', "}\n</tool_call>"),
    "llama3": ('{{"name": {name}, "parameters": ', "}"),
}


def prose_paragraphs(design):
    out = []
    for block in design.read_text().split("\n\n"):
        lines = [l.strip() for l in block.splitlines()]
        if not lines or any(l.startswith(("|", "#", "`", "-")) for l in lines):
            continue
        text = " ".join(lines)
        if len(text) > 200 and "<tool_call>" not in text and '{"name": ' not in text:
            out.append(text[:600])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zapgram", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default=str(pathlib.Path(__file__).resolve().parents[1] / "../shared/data"))
    ap.add_argument("--every", type=int, default=64)
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--format", choices=sorted(FORMATS), default="qwen2_5")
    args = ap.parse_args()

    data = pathlib.Path(args.data).resolve()
    out = pathlib.Path(args.out).resolve()
    for sub in ("specs", "texts/mixed", "texts/prose", "texts/call"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    prose = prose_paragraphs(data.parent / "DESIGN.md")
    tokenizer_name = pathlib.Path(args.tokenizer).name.split(".")[0]
    records = [json.loads(l) for l in open(data / "traces" / tokenizer_name / "maskbench.jsonl")]
    records = [r for r in records if r.get("valid") and not r.get("roundtrip_mismatch")]
    begin_fmt, end = FORMATS[args.format]
    docs = []
    for k, rec in enumerate(records[:: args.every][: args.limit]):
        schema = json.load(open(data / rec["grammar"][len("schema:"):]))
        name = "tool_%d" % k
        spec = {"format": args.format, "tools": [{"name": name, "parameters": schema}]}
        spec_path = out / "specs" / ("%d.json" % k)
        spec_path.write_text(json.dumps(spec))
        before, after = prose[(2 * k) % len(prose)], prose[(2 * k + 1) % len(prose)]
        call = begin_fmt.format(name=json.dumps(name)) + rec["text"] + end
        texts = {"mixed": before + " " + call + " " + after, "prose": before + " " + after, "call": call}
        for kind, text in texts.items():
            (out / "texts" / kind / ("%d.txt" % k)).write_text(text)
        docs.append((k, spec_path))

    def trace(kind, keep):
        lines = []
        for k, spec_path in docs:
            if keep is not None and k not in keep:
                continue
            r = subprocess.run([args.zapgram, "trace", "--tokenizer", args.tokenizer, "--grammar",
                                "structural:" + str(spec_path), "--quiet",
                                str(out / "texts" / kind / ("%d.txt" % k))],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(r.stderr)
            line = json.loads(r.stdout)
            line["id"] = "%s/%d" % (kind, k)
            lines.append(json.dumps(line, ensure_ascii=False))
        (out / (kind + ".jsonl")).write_text("\n".join(lines) + "\n")

    # Keep the instances the generation grammar takes as written.
    trace("call", None)
    per_doc = out / "call.per-doc.jsonl"
    subprocess.run([args.zapgram, "bench", "--tokenizer", args.tokenizer, "--trace",
                    str(out / "call.jsonl"), "--quiet", "--json", "--per-doc", str(per_doc)],
                   check=True, capture_output=True)
    keep = {int(json.loads(l)["id"].split("/")[1]) for l in open(per_doc)
            if json.loads(l).get("accepted")}
    for kind in ("mixed", "prose", "call"):
        trace(kind, keep)
    print("%d of %d documents kept (%s format) in %s" % (len(keep), len(docs), args.format, out))


if __name__ == "__main__":
    main()
