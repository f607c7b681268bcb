"""The examples run as a user runs them (a subprocess, the package from the
environment), with small counts: every document that stopped must parse
(json / the lark package) and validate (jsonschema)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import DATA, REPO

pytest.importorskip("torch")


def run(script, *args):
    env = dict(os.environ)
    out = subprocess.run([sys.executable, str(REPO / "examples" / script), "--data", str(DATA), *args],
                         check=True, capture_output=True, text=True, env=env).stdout
    return out.strip().splitlines()[-1]


def counts(line):
    return {k.strip(): (int(a), int(b)) for k, a, b in re.findall(r"([a-z -]+?) (\d+)/(\d+)", line)}


def test_json_schema_example():
    pytest.importorskip("jsonschema")
    c = counts(run("json_schema_generation.py", "--schemas", "2", "--samples", "2", "--max-tokens", "160"))
    stopped = c["stopped"][0]
    assert c["stopped"][1] == 4 and stopped > 0
    assert c["json"][0] == stopped and c["schema-valid"][0] == stopped


def test_lark_example():
    pytest.importorskip("lark")
    c = counts(run("lark_generation.py", "--samples", "4", "--batch", "4", "--max-tokens", "96"))
    assert c["stopped"][1] == 4
    assert c["parsed by lark"][0] == c["stopped"][0]
