"""Bad input, round 2: malformed and extreme inputs that the first round (test_bad_input.py) did not try.

Every invocation goes through the same contract check as round 1 (exit 0 or 2, no traceback, one
``error:`` line on failure, no control or format character in the output). Each table row is one
defect that round 2 found and fixed; docs/robustness.md lists them by class.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.test_bad_input import check, refused

TINY = ("--topo", "nvl", "--set", "n=4")

# ---------------------------------------------------------------- models --model FILE.toml

_MODEL = {"name": '"tiny"', "source": '"t"', "n_layers": "2", "hidden": "64", "n_heads": "4", "n_kv_heads": "2",
          "head_dim": "16", "ffn_hidden": "128", "gated": "true", "vocab": "1000"}
_MOE = {"n_experts": "8", "topk": "2", "moe_ffn_hidden": "64"}


def _model_file(tmp_path, **fields) -> str:
    doc = {**_MODEL, **fields}
    p = tmp_path / "m.toml"
    p.write_text("".join(f"{k} = {v}\n" for k, v in doc.items() if v is not None))
    return str(p)


@pytest.mark.parametrize("fields, needle", [
    ({"n_layers": str(10**18)}, "n_layers"),          # was MemoryError (one layer-pattern entry per layer)
    ({"n_layers": "100000000"}, "n_layers"),          # was 15 s
    ({"hidden": str(10**30)}, "hidden"),              # was accepted: 3e33 parameters
    ({"ffn_hidden": "1" + "0" * 300}, "ffn_hidden"),  # was accepted: 2e303 FLOPs per token
    ({"vocab": str(10**40)}, "vocab"),
    ({"n_heads": "100000", "n_kv_heads": "100000"}, "n_heads"),
    ({"head_dim": str(1 << 40)}, "head_dim"),
    ({**_MOE, "n_experts": str(1 << 40)}, "n_experts"),
    ({**_MOE, "first_dense_layers": "1", "moe_layer_freq": "5"}, "no MoE layer"),  # was an MoE model without MoE
    ({**_MOE, "topk": "9"}, "topk"),
    ({"n_layers": "0"}, "n_layers"),
])
def test_bad_model_files(tmp_path, fields, needle):
    path = _model_file(tmp_path, **fields)
    refused("models", "--model", path, needle=needle)
    refused("models", "--model", path, "--json", needle=needle)


def test_deeply_nested_model_file_is_one_line(tmp_path):
    p = tmp_path / "deep.toml"
    p.write_text("a = " + "[" * 5000 + "]" * 5000)  # was RecursionError
    refused("models", "--model", str(p), needle="TOML")
    p.write_text('name = "tiny"\n[x]\n' + "a = " + "{b = " * 60 + "1" + "}" * 60)
    refused("models", "--model", str(p), needle="nested")


@pytest.mark.parametrize("value", ["\u0663", "1_000", " 7", str(10**30), "0"])
def test_models_seq_len_is_ascii_and_bounded(value):
    refused("models", "--seq-len", value, needle="--seq-len")  # '٣' and '1_000' were read as 3 and 1000


def test_models_given_twice_is_listed_once_and_json_is_finite():
    rows = json.loads(check("models", "--model", "llama3-8b", "--model", "llama3-8b", "--json", ok=(0,)).stdout)
    assert [r["name"] for r in rows] == ["llama3-8b"]
    err = refused("models", "--model", "x/\u202e[red]y\\[b].toml", needle="cannot read")
    assert "\\u202e[red]y" in err  # markup shown as typed, the override escaped
