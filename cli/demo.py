"""``fabric-emu demo``: the step-time estimator on the DeepSeek-V3 record scenario and its neighbours.

The story: DeepSeek-V3 pre-training on GB300 NVL72 racks (NVIDIA's published record, 1,648
TFLOPs/GPU on 256 GPUs), the same model on GB200 NVL72 (less HBM: the published recipe needs
more pipeline stages, EP64 and recompute), and the GB300 job grown to 1,024 GPUs with the
global batch (NVIDIA: 98.5 % of the per-GPU throughput kept).
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.step_cmd import breakdown_table
from workloads.layout import Layout
from workloads.models import get_model
from workloads.step import estimate_step

__all__ = ["run_demo", "DEMO_SCENARIOS"]

#: (label, system, layout keyword arguments, published TFLOPs/GPU or None, source)
DEMO_SCENARIOS = (
    ("GB300 x 256", "gb300-nvl72",
     dict(gpus=256, pp=2, vpp=8, ep=32, global_batch=4096), 1648,
     "Megatron-Bridge performance summary 26.06; NVIDIA GB300 record blog"),
    ("GB200 x 256", "gb200-nvl72",
     dict(gpus=256, pp=4, vpp=4, ep=64, global_batch=4096, recompute="selective"), 1292,
     "Megatron-Bridge performance summary 26.06"),
    ("GB300 x 1,024", "gb300-nvl72",
     dict(gpus=1024, pp=2, vpp=8, ep=32, global_batch=16384), None,
     "NVIDIA: 98.5 % of the 256-GPU per-GPU throughput"),
)


def run_demo(out: Console, err: Console) -> None:
    spec = get_model("deepseek-v3")
    results = []
    for label, system, kw, published, source in DEMO_SCENARIOS:
        err.print(f"estimating {label} ...")
        lay = Layout(micro_batch=1, seq_len=4096, precision="mxfp8", **kw)
        results.append((label, estimate_step(spec, lay, system, report=len(results) == 0), published, source))
    t = Table(title="DeepSeek-V3 pre-training step on NVL72 racks, MXFP8, sequence 4096 (fabric-emu step)",
              title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name, just in (("scenario", "left"), ("layout", "left"), ("step s", "right"), ("tok/s", "right"),
                       ("TFLOPs", "right"), ("publ.", "right"), ("MFU8", "right"), ("EP s", "right"),
                       ("GiB", "right")):
        t.add_column(name, justify=just, no_wrap=True)
    for label, r, published, _ in results:
        lay = r.layout
        t.add_row(label, f"PP{lay.pp}/{lay.vpp} EP{lay.ep} B{lay.global_batch}",
                  f"{r.step_time_s:.2f}", f"{r.tokens_per_s_per_gpu:,.0f}", f"{r.tflops_per_gpu:,.0f}",
                  "-" if published is None else f"{published:,}", f"{r.mfu_fp8:.1%}",
                  f"{r.breakdown_s['ep_exposed']:.2f}", f"{r.memory.total_bytes / 2**30:.0f}")
    t.caption = ("PPp/v: pipeline x virtual stages, B: global batch; tok/s: tokens/s per GPU; TFLOPs: model TFLOPs/GPU (Megatron count); MFU8: of the FP8 dense peak; EP s: exposed EP "
                 "all-to-all per step; GiB: memory per GPU. Published: " +
                 "; ".join(f"{lbl}: {src}" for lbl, _, _, src in results))
    out.print(t)
    ref, gb200, big = (r for _, r, _, _ in results)
    keep = big.tokens_per_s_per_gpu / ref.tokens_per_s_per_gpu
    out.print(Text(f"GB300 vs GB200: {ref.tflops_per_gpu / gb200.tflops_per_gpu:.2f}x the TFLOPs per GPU "
                   f"(288 GB of HBM run PP2 without recompute; 186 GB need PP4, EP64 and recompute). "
                   f"256 -> 1,024 GPUs keeps {keep:.1%} of the per-GPU throughput (published 98.5 %).",
                   style="bold"))
    out.print(breakdown_table(ref))
    hot = ref.hottest_links(3)
    if hot:
        h = Table(title="hottest links of the record step's traffic", title_justify="left")
        for name in ("phase", "link", "tier", "utilization", "groups crossing"):
            h.add_column(name)
        for row in hot[:6]:
            h.add_row(row["phase"], row["link"], row["tier"], f"{row['utilization']:.0%}", ", ".join(row["groups"]))
        out.print(h)
