"""``fabric-emu models`` through click's CliRunner."""

import json

from click.testing import CliRunner

from cli.app import cli
from workloads import flops_per_token, get_model, list_models, param_counts


def _run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_models_json_lists_the_catalog_with_both_conventions():
    r = _run("models", "--json")
    assert r.exit_code == 0
    rows = {row["name"]: row for row in json.loads(r.output)}
    assert set(rows) == set(list_models())
    v3 = rows["deepseek-v3"]
    assert v3["attention"] == "mla" and (v3["experts"], v3["topk"], v3["mtp_layers"]) == (256, 8, 1)
    assert round(v3["megatron_flops_per_token"] / 1e9, 1) == 260.0
    assert round(v3["torchtitan_flops_per_token"] / 1e9, 1) == 281.2
    assert v3["params_total"] == param_counts(get_model("deepseek-v3")).total


def test_models_table_renders_every_model():
    r = _run("models")
    assert r.exit_code == 0
    for name in list_models():
        assert name in r.output
    assert "260.0" in r.output and "281.2" in r.output and "671.0 B" in r.output
    assert "MLA 128" in r.output and "GQA 64/8" in r.output and "MHA 96" in r.output


def test_models_seq_len_and_custom_file(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text('name = "tiny"\nn_layers = 2\nhidden = 64\nn_heads = 4\nn_kv_heads = 4\nhead_dim = 16\n'
                 'ffn_hidden = 256\ngated = false\nvocab = 1000\n')
    r = _run("models", "--model", str(p), "--model", "llama3.1-405b", "--seq-len", "8192", "--json")
    assert r.exit_code == 0
    rows = json.loads(r.output)
    assert [x["name"] for x in rows] == ["tiny", "llama3.1-405b"]
    assert rows[1]["megatron_flops_per_token"] == flops_per_token(get_model("llama3.1-405b"), 8192)
    assert round(rows[1]["megatron_flops_per_token"] / 1e9) == 2524


def test_models_bad_input_is_one_line_exit_2(tmp_path):
    r = CliRunner().invoke(cli, ["models", "--model", "gpt-9"])
    assert r.exit_code == 2 and "not a built-in model" in r.output
    p = tmp_path / "bad.toml"
    p.write_text('name = "bad"\nn_layers = -1\n')
    r = CliRunner().invoke(cli, ["models", "--model", str(p)])
    assert r.exit_code == 2 and "missing key 'hidden'" in r.output and len(r.output.strip().splitlines()) == 1
