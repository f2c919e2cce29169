"""``fabric-emu models``: the model catalog with parameter counts and FLOPs per token."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from cli.options import AsciiInt, refuse_repeats
from cli.output import echo_json, handles_errors, stdout_console

if TYPE_CHECKING:  # pragma: no cover - annotations only; rich is imported where it is used
    from rich.table import Table


__all__ = ["models_command", "models_rows", "models_table"]

DEFAULT_SEQ_LEN = 4096


def models_rows(names: list[str], seq_len: int) -> list[dict]:
    """One JSON-ready row per model (parameters in units, FLOPs per token in FLOPs)."""
    from workloads import flops_per_token, get_model, param_counts

    rows = []
    for name in names:
        m = get_model(name)
        pc = param_counts(m)
        rows.append({
            "name": m.name, "source": m.source, "layers": m.n_layers, "dense_layers": m.n_dense_layers,
            "moe_layers": m.n_moe_layers, "mtp_layers": m.mtp_layers, "hidden": m.hidden,
            "attention": m.attention, "heads": m.n_heads, "kv_heads": m.n_kv_heads, "vocab": m.vocab,
            "experts": m.n_experts, "shared_experts": m.n_shared_experts, "topk": m.topk,
            "params_total": pc.total, "params_active": pc.active, "params_mtp": pc.mtp_total,
            "seq_len": seq_len,
            "megatron_flops_per_token": flops_per_token(m, seq_len, convention="megatron"),
            "torchtitan_flops_per_token": flops_per_token(m, seq_len, convention="torchtitan"),
        })
    return rows


def models_table(rows: list[dict], seq_len: int) -> Table:
    from rich.table import Table

    t = Table(title=f"models (training FLOPs per token at seq {seq_len:,}; GF = 1e9 FLOPs)", title_justify="left")
    for col, just in (("name", "left"), ("layers", "right"), ("hidden", "right"), ("attention", "left"),
                      ("experts/topk", "right"), ("params", "right"), ("active", "right"),
                      ("Megatron GF", "right"), ("TorchTitan GF", "right")):
        t.add_column(col, justify=just, style="bold" if col == "name" else None)
    for r in rows:
        layers = f"{r['layers']}" + (f"+{r['mtp_layers']} MTP" if r["mtp_layers"] else "")
        if r["attention"] == "gqa" and r["kv_heads"] == r["heads"]:
            att = f"MHA {r['heads']}"
        else:
            att = f"{r['attention'].upper()} {r['heads']}" + (f"/{r['kv_heads']}" if r["attention"] == "gqa" else "")
        experts = (f"{r['experts']}" + (f"+{r['shared_experts']}" if r["shared_experts"] else "") + f"/{r['topk']}"
                   if r["experts"] else "-")
        t.add_row(r["name"], layers, f"{r['hidden']:,}", att, experts, f"{r['params_total'] / 1e9:,.1f} B",
                  f"{r['params_active'] / 1e9:,.1f} B", f"{r['megatron_flops_per_token'] / 1e9:,.1f}",
                  f"{r['torchtitan_flops_per_token'] / 1e9:,.1f}")
    return t


@click.command("models")
@click.option("--model", "models", multiple=True, metavar="NAME|FILE.toml",
              help="Show only these models (repeatable); a .toml file adds a custom model.")
@click.option("--seq-len", "seq_len", type=AsciiInt(min=1), default=DEFAULT_SEQ_LEN, show_default=True,
              help="Sequence length of the attention term (up to 16 Mi tokens).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")
@handles_errors
def models_command(models: tuple[str, ...], seq_len: int, as_json: bool) -> None:
    """List the built-in models: sizes, parameters and FLOPs per token (Megatron and TorchTitan)."""
    from workloads import list_models

    refuse_repeats("--model", models)
    rows = models_rows(list(models) or list(list_models()), seq_len)
    if as_json:
        echo_json(rows)
    else:
        stdout_console(120).print(models_table(rows, seq_len))
