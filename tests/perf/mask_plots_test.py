"""perf/mask_plots.py: reading `zapgram bench --per-doc` files (always), and
drawing the PNG figures (only where matplotlib imports: it is optional).
Run by ctest as Perf.mask_plots with ZAPGRAM_CLI (the built tool) and
ZAPGRAM_DATA_DIR set."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "perf"))
import mask_plots  # noqa: E402

RECORDS = [
    {"id": "a", "grammar": "schema:jsonschema/maskbench/Github_easy---o1.schema.json", "valid": True,
     "accepted": True, "rejected_at_token": None, "error": None, "compile_ms": 5.0,
     "first_mask_ms": 5.25, "mask_us_total": 260.0, "mask_us_max": 250.0, "mask_us_each": [250.0, 4.0, 6.0]},
    {"id": "b", "grammar": "schema:jsonschema/maskbench/Github_easy---o1.schema.json", "valid": False,
     "accepted": False, "rejected_at_token": 1, "error": None, "mask_us_total": 3.0, "mask_us_max": 2.0,
     "mask_us_each": [2.0, 1.0]},
    {"id": "c", "grammar": "grammars/lark/syncode/go.lark", "valid": True, "accepted": False,
     "rejected_at_token": None, "error": "unsupported: uniqueItems at /", "compile_ms": 1.0},
]


def write_records(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return str(path)


def test_reads_every_mask_and_the_first_mask_of_each_compiled_grammar(tmp_path):
    records = mask_plots.read_per_doc(write_records(tmp_path / "d.jsonl", RECORDS))
    assert mask_plots.mask_latencies_us(records) == [1.0, 2.0, 4.0, 6.0, 250.0]
    # c did not compile: it has no first mask.
    assert mask_plots.first_mask_ms_by_grammar(records) == {
        "schema:jsonschema/maskbench/Github_easy---o1.schema.json": 5.25}


def test_records_of_an_older_bench_are_refused():
    old = [{k: v for k, v in RECORDS[0].items() if k != "mask_us_each"}]
    with pytest.raises(ValueError, match="mask_us_each"):
        mask_plots.mask_latencies_us(old)


def test_cdf_percentiles_and_names():
    assert mask_plots.cdf_points([1.0, 2.0, 4.0, 8.0]) == ([1.0, 2.0, 4.0, 8.0], [0.25, 0.5, 0.75, 1.0])
    values = list(range(1, 101))
    assert mask_plots.percentile(values, 0.5) == 51  # nearest rank, as bench computes it
    assert mask_plots.percentile(values, 0.99) == 99
    assert mask_plots.percentile([], 0.5) == 0.0
    assert mask_plots.short_grammar_name("schema:jsonschema/maskbench/Github_easy---o1.schema.json") == \
        "Github_easy---o1"
    assert mask_plots.short_grammar_name("grammars/lark/syncode/go.lark") == "go"
    assert mask_plots.short_grammar_name("builtin:json") == "json"
    assert mask_plots.parse_labelled(["all on=x.jsonl"]) == [("all on", "x.jsonl")]
    with pytest.raises(ValueError):
        mask_plots.parse_labelled(["x.jsonl"])


def test_slowest_grammars_keep_every_set():
    entries = [(500.0, "maskbench", "s1"), (300.0, "maskbench", "s2"), (200.0, "maskbench", "s3"),
               (60.0, "json-docs", "builtin:json")]
    assert mask_plots.slowest_grammars(entries, 2) == [
        (500.0, "maskbench", "s1"), (300.0, "maskbench", "s2"), (60.0, "json-docs", "builtin:json")]
    assert mask_plots.slowest_grammars(entries, 10) == sorted(entries, reverse=True)


def run_bench(tmp_path, trace, name, *flags):
    cli = os.environ.get("ZAPGRAM_CLI")
    data = os.environ.get("ZAPGRAM_DATA_DIR")
    if not cli or not data:
        pytest.skip("ZAPGRAM_CLI and ZAPGRAM_DATA_DIR are set by ctest")
    per_doc = tmp_path / f"{name}.jsonl"
    out = subprocess.run([cli, "bench", "--tokenizer", os.path.join(data, "tokenizers/llama3.tokenizer.json"),
                          "--trace", os.path.join(data, "traces/llama3", trace), "--limit", "4", "--json",
                          "--per-doc", str(per_doc), *flags], capture_output=True, text=True, check=True)
    return json.loads(out.stdout), str(per_doc)


def test_reads_real_bench_output(tmp_path):
    summary, per_doc = run_bench(tmp_path, "sql.jsonl", "sql")
    records = mask_plots.read_per_doc(per_doc)
    latencies = mask_plots.mask_latencies_us(records)
    assert len(latencies) == summary["tokens"]
    assert mask_plots.percentile(latencies, 0.5) == pytest.approx(summary["mask_us"]["p50"], abs=0.01)
    assert list(mask_plots.first_mask_ms_by_grammar(records)) == ["grammars/lark/syncode/sql.lark"]


def test_draws_the_three_figures(tmp_path):
    pytest.importorskip("matplotlib")
    _, sql = run_bench(tmp_path, "sql.jsonl", "sql")
    _, sql_no_cache = run_bench(tmp_path, "sql.jsonl", "sql-no-cache", "--no-cache")
    _, json_docs = run_bench(tmp_path, "json-docs.jsonl", "json-docs")
    out = tmp_path / "figures"
    mask_plots.main(["--out", str(out), "--config", f"all on={sql}", "--config", f"no cache={sql_no_cache}",
                     "--set", f"sql={sql}", "--set", f"json-docs={json_docs}"])
    for name in ("mask_latency_by_config.png", "mask_latency_by_set.png", "first_mask_by_grammar.png"):
        with open(out / name, "rb") as f:
            data = f.read()
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), name
        assert len(data) > 10_000, name  # axes, curves and labels, not an empty canvas
