"""Parallel layout of a training job and the placement of its ranks on a cluster.

A :class:`Layout` holds the parallel sizes (TP with sequence parallelism, CP, PP
with virtual stages, EP with expert-TP, DP derived), the batch, the precision,
recompute, the pipeline schedule and how optimizer state is sharded. It checks
that the sizes fit together and names the numbers when they do not.

Ranks are numbered as Megatron-Core numbers them (``parallel_state.py``,
``RankGenerator`` with order ``tp-cp-ep-dp-pp``): TP innermost, then CP, then
DP, PP outermost, so a pipeline stage is a contiguous block of ``world / pp``
ranks. MoE layers fold the same ranks differently (Megatron-Core's expert rank
generator): expert-TP innermost, then EP, then expert-DP, PP outermost. Both
foldings cover the same world:

* attention / dense layers: ``tp x cp x dp`` ranks per stage;
* experts: ``etp x ep x edp`` ranks per stage, ``edp = tp*cp*dp / (etp*ep)``.

:func:`place` maps logical ranks to the GPUs of a cluster of NVLink domains:
``megatron`` keeps the numbering (consecutive ranks in one domain, so TP and EP
groups stay on NVLink when the domain holds them), ``spread`` deals ranks round
robin over the domains (every group crosses the scale-out fabric: the what-if
of a job placed without regard to NVLink). :func:`cluster_for` picks the
domains a job needs and the platform's reference scale-out.

Examples
--------
>>> lay = Layout(gpus=256, tp=1, pp=2, vpp=8, ep=32, global_batch=4096, micro_batch=1, seq_len=4096)
>>> lay.dp, lay.edp, lay.microbatches
(128, 4, 32)
>>> pl = place(lay, gpus_per_domain=64)
>>> pl.domains, pl.groups("ep")[1][:3], pl.spans("ep")
(4, (32, 33, 34), 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from topologies import catalog
from topologies.errors import SpecError, brief
from workloads.models import MAX_SEQ_LEN

__all__ = ["PRECISIONS", "RECOMPUTE", "SCHEDULES", "OPTIMIZERS", "PLACEMENTS", "REFERENCE_SCALEOUT", "GROUP_KINDS",
           "LAYER_KINDS", "virtual_stages", "stage_of_virtual",
           "Layout", "Placement", "place", "default_gpus_per_domain", "cluster_for"]

PRECISIONS = ("bf16", "fp8", "mxfp8")
#: ``selective`` = Megatron-Core's ``--recompute-modules layernorm moe_act mla_up_proj``; ``mla_up_proj``
#: recomputes only the MLA up-projections (the DeepSeek-V3 GB200 MXFP8 recipe).
RECOMPUTE = ("none", "selective", "mla_up_proj", "full")
SCHEDULES = ("1f1b", "interleaved", "dualpipe")
#: ``zero1``: Megatron's distributed optimizer (optimizer state sharded over DP);
#: ``fsdp``: parameters, gradients and optimizer state sharded over DP; ``none``: replicated.
OPTIMIZERS = ("zero1", "fsdp", "none")
PLACEMENTS = ("megatron", "spread")

#: The scale-out fabric of each platform's DGX SuperPOD reference architecture
#: (topologies.cluster.SUPERPODS and notes/hardware.md §8.1: H100/B200/GB200 on
#: Quantum-2 NDR, B300 on Quantum-X800 XDR; GB300 NVL72 SuperPODs ship
#: ConnectX-8 on Quantum-X800). The NIC is the platform's (catalog.default_nic).
REFERENCE_SCALEOUT = {"A100": "quantum-2", "H100": "quantum-2", "H200": "quantum-2", "H800": "quantum-2",
                      "B200": "quantum-2", "GB200": "quantum-2", "B300": "quantum-x800",
                      "GB300": "quantum-x800"}


def _pos_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise SpecError(f"{name}: {v!r} must be an integer >= 1")
    return int(v)


@dataclass(frozen=True)
class Layout:
    """Parallel sizes, batch and execution options of one training job.

    Parameters
    ----------
    gpus : int
        World size.
    tp, pp, vpp, ep, etp, cp : int
        Tensor (with sequence parallelism), pipeline, virtual stages per pipeline
        rank, expert, expert-tensor and context parallel sizes. ``etp`` defaults
        to 1 (Megatron-Bridge MoE recipes), ``vpp`` to 1.
    global_batch, micro_batch, seq_len : int
        Sequences per step, per micro-batch, tokens per sequence.
    precision : {"bf16", "fp8", "mxfp8"}
        GEMM precision (attention, norms and the optimizer stay in BF16/FP32).
    recompute : {"none", "selective", "mla_up_proj", "full"}
    schedule : {"1f1b", "interleaved", "dualpipe"}, optional
        Default: ``interleaved`` when ``vpp > 1``, else ``1f1b``.
    optimizer : {"zero1", "fsdp", "none"}
    """

    gpus: int
    tp: int = 1
    pp: int = 1
    vpp: int = 1
    ep: int = 1
    etp: int = 1
    cp: int = 1
    global_batch: int = 1
    micro_batch: int = 1
    seq_len: int = 4096
    precision: str = "bf16"
    recompute: str = "none"
    schedule: str = ""
    optimizer: str = "zero1"

    def __post_init__(self) -> None:
        for name in ("gpus", "tp", "pp", "vpp", "ep", "etp", "cp", "global_batch", "micro_batch", "seq_len"):
            object.__setattr__(self, name, _pos_int(f"--{name.replace('_', '-')}", getattr(self, name)))
        for name, allowed in (("precision", PRECISIONS), ("recompute", RECOMPUTE), ("optimizer", OPTIMIZERS)):
            if getattr(self, name) not in allowed:
                raise SpecError(f"--{name}: {getattr(self, name)!r} is not one of {', '.join(allowed)}")
        sched = self.schedule or ("interleaved" if self.vpp > 1 else "1f1b")
        if sched not in SCHEDULES:
            raise SpecError(f"--schedule: {sched!r} is not one of {', '.join(SCHEDULES)}")
        object.__setattr__(self, "schedule", sched)
        if sched == "interleaved" and self.vpp < 2:
            raise SpecError("--schedule interleaved: needs --vpp >= 2")
        if sched != "interleaved" and self.vpp > 1:
            raise SpecError(f"--vpp {self.vpp}: virtual stages need --schedule interleaved, not {sched}")
        if sched == "dualpipe" and self.pp % 2:
            raise SpecError(f"--schedule dualpipe: needs an even --pp, got {self.pp}")
        model = self.tp * self.cp * self.pp
        if self.gpus % model:
            raise SpecError(f"--gpus {self.gpus}: not divisible by tp*cp*pp = {self.tp}*{self.cp}*{self.pp} = {model}")
        per_stage = self.gpus // self.pp
        if per_stage % (self.etp * self.ep):
            raise SpecError(f"--ep {self.ep} x --etp {self.etp} = {self.ep * self.etp} does not divide the "
                            f"{per_stage} GPUs of a pipeline stage (gpus/pp = {self.gpus}/{self.pp})")
        if self.global_batch % (self.micro_batch * self.dp):
            raise SpecError(f"--global-batch {self.global_batch}: not divisible by micro-batch x dp = "
                            f"{self.micro_batch} x {self.dp} = {self.micro_batch * self.dp}")
        if self.seq_len > MAX_SEQ_LEN:  # as fabric-emu models; 10^21 failed deep inside the compute model
            raise SpecError(f"--seq-len {self.seq_len}: longer than {MAX_SEQ_LEN:,} tokens (16 Mi; published "
                            f"contexts reach 10 M)")
        if self.seq_len % (self.cp * (2 if self.cp > 1 else 1)):
            raise SpecError(f"--seq-len {self.seq_len}: not divisible by 2 x cp = {2 * self.cp} "
                            f"(load-balanced context parallelism)")
        if self.schedule == "interleaved" and self.microbatches % self.pp:
            raise SpecError(f"--schedule interleaved: {self.microbatches} micro-batches per step must be a "
                            f"multiple of pp = {self.pp} (Megatron's interleaved schedule)")

    # ---------------------------------------------------------------- derived sizes
    @property
    def dp(self) -> int:
        """Data-parallel size of attention/dense layers."""
        return self.gpus // (self.tp * self.cp * self.pp)

    @property
    def edp(self) -> int:
        """Expert data-parallel size (ranks holding the same experts)."""
        return self.gpus // (self.pp * self.ep * self.etp)

    @property
    def microbatches(self) -> int:
        """Micro-batches per pipeline per step (gradient accumulation steps)."""
        return self.global_batch // (self.micro_batch * self.dp)

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    @property
    def chunks(self) -> int:
        """Model chunks per pipeline rank in the layer split (virtual stages). DualPipe splits the
        model into ``pp`` stages; rank ``r`` holds stage ``r`` and, for the reverse direction, a copy
        of stage ``pp - 1 - r``."""
        return self.vpp

    def check_model(self, *, layers: int, heads: int, kv_heads: int, experts: int, ffn: int,
                    moe_ffn: int | None = None) -> None:
        """Sizes that must divide the model's (one line naming the numbers)."""
        stages = self.pp * self.chunks
        if layers + 2 < stages:
            raise SpecError(f"--pp {self.pp} x --vpp {self.vpp} = {stages} virtual stages exceed the {layers} layers "
                            f"plus the embedding and the head")
        if heads % self.tp:
            raise SpecError(f"--tp {self.tp}: does not divide the {heads} attention heads")
        if kv_heads % self.tp and self.tp % kv_heads:
            raise SpecError(f"--tp {self.tp}: does not fit the {kv_heads} key/value heads")
        if experts:
            if self.ep > experts:
                raise SpecError(f"--ep {self.ep}: exceeds the model's {experts} experts")
            if experts % self.ep:
                raise SpecError(f"--ep {self.ep}: does not divide the model's {experts} experts")
            if moe_ffn and moe_ffn % self.etp:
                raise SpecError(f"--etp {self.etp}: does not divide the expert FFN size {moe_ffn}")
        elif self.ep > 1:
            raise SpecError(f"--ep {self.ep}: the model is dense (no experts); use --ep 1")
        if ffn and ffn % self.tp:
            raise SpecError(f"--tp {self.tp}: does not divide the FFN size {ffn}")

    def as_dict(self) -> dict:
        return {"gpus": self.gpus, "tp": self.tp, "cp": self.cp, "pp": self.pp, "vpp": self.vpp, "ep": self.ep,
                "etp": self.etp, "dp": self.dp, "edp": self.edp, "global_batch": self.global_batch,
                "micro_batch": self.micro_batch, "microbatches": self.microbatches, "seq_len": self.seq_len,
                "precision": self.precision, "recompute": self.recompute, "schedule": self.schedule,
                "optimizer": self.optimizer}


# -------------------------------------------------------------------- rank groups
def _coords(lay: Layout) -> dict[str, np.ndarray]:
    """Coordinates of every logical rank in both foldings (Megatron-Core order)."""
    r = np.arange(lay.gpus)
    per_stage = lay.gpus // lay.pp
    local = r % per_stage
    return {"pp": r // per_stage,
            "tp": local % lay.tp, "cp": (local // lay.tp) % lay.cp, "dp": local // (lay.tp * lay.cp),
            "etp": local % lay.etp, "ep": (local // lay.etp) % lay.ep, "edp": local // (lay.etp * lay.ep)}


#: For each group kind: the coordinate that varies inside a group (the others fix the group).
_GROUP_AXES = {
    "tp": ("tp", ("pp", "cp", "dp")),
    "cp": ("cp", ("pp", "tp", "dp")),
    "dp": ("dp", ("pp", "tp", "cp")),
    "dpcp": (("dp", "cp"), ("pp", "tp")),    # gradient reduction of dense parameters (Megatron: dp x cp)
    "ep": ("ep", ("pp", "etp", "edp")),
    "etp": ("etp", ("pp", "ep", "edp")),
    "edp": ("edp", ("pp", "etp", "ep")),
    "pp": ("pp", ("tp", "cp", "dp")),
}
GROUP_KINDS = tuple(_GROUP_AXES)


def _groups(lay: Layout, kind: str) -> list[tuple[int, ...]]:
    c = _coords(lay)
    _, fixed = _GROUP_AXES[kind]
    key = np.zeros(lay.gpus, np.int64)
    for name in fixed:
        key = key * (int(c[name].max()) + 1) + c[name]
    order = np.lexsort((np.arange(lay.gpus), key))
    keys = key[order]
    cuts = np.flatnonzero(np.diff(keys)) + 1
    return [tuple(int(x) for x in g) for g in np.split(order, cuts)]


@dataclass(frozen=True)
class Placement:
    """Logical ranks of a layout mapped to the GPUs of a cluster.

    ``gpu_of[r]`` is the fabric rank (GPU index) of logical rank ``r``;
    GPU ``g`` sits in domain ``g // gpus_per_domain``.
    """

    layout: Layout
    gpus_per_domain: int
    domains: int
    mode: str
    gpu_of: np.ndarray = field(compare=False)

    def groups(self, kind: str) -> list[tuple[int, ...]]:
        """Groups of ``kind`` (see ``GROUP_KINDS``) as tuples of *fabric* GPU ranks."""
        if kind not in _GROUP_AXES:
            raise SpecError(f"group: {kind!r} is not one of {', '.join(_GROUP_AXES)}")
        return [tuple(int(self.gpu_of[r]) for r in g) for g in _groups(self.layout, kind)]

    def domain_of(self, gpu: int) -> int:
        return int(gpu) // self.gpus_per_domain

    def spans(self, kind: str) -> int:
        """Most NVLink domains one group of ``kind`` spans."""
        return max(len({self.domain_of(g) for g in grp}) for grp in self.groups(kind))

    def stage_gpus(self, stage: int) -> tuple[int, ...]:
        per = self.layout.gpus // self.layout.pp
        return tuple(int(self.gpu_of[r]) for r in range(stage * per, (stage + 1) * per))

    def as_dict(self) -> dict:
        lay = self.layout
        out = {"mode": self.mode, "domains": self.domains, "gpus_per_domain": self.gpus_per_domain,
               "order": "tp-cp-dp-pp (attention), etp-ep-edp-pp (experts)"}
        for kind in ("tp", "cp", "dp", "ep", "etp", "edp", "pp"):
            size = {"tp": lay.tp, "cp": lay.cp, "dp": lay.dp, "ep": lay.ep, "etp": lay.etp, "edp": lay.edp,
                    "pp": lay.pp}[kind]
            grps = self.groups(kind)
            out[kind] = {"size": size, "groups": len(grps), "domains_spanned": self.spans(kind) if size > 1 else 1,
                         "example": list(grps[0][:8]) + (["..."] if size > 8 else [])}
        return out


def default_gpus_per_domain(gpu_name: str, lay: Layout) -> int:
    """GPUs to use per NVLink domain: the whole board (HGX), or on rack-scale domains the most
    GPUs (a multiple of the 4-GPU tray) that hold whole TP and EP groups, capped by the job.

    Examples
    --------
    >>> default_gpus_per_domain("GB300", Layout(gpus=256, pp=2, ep=32, global_batch=128))
    64
    >>> default_gpus_per_domain("H100", Layout(gpus=16, ep=8, global_batch=16))
    8
    """
    g = catalog.gpu(gpu_name)
    if g.domain_gpus <= 8:
        return g.domain_gpus
    if lay.gpus <= g.domain_gpus:
        return lay.gpus
    span = math.lcm(lay.tp * lay.cp, lay.etp * lay.ep, 4)
    best = (g.domain_gpus // span) * span
    return best if best >= span else g.domain_gpus


def place(lay: Layout, *, gpus_per_domain: int, mode: str = "megatron", ep_in_domain: bool = False) -> Placement:
    """Map the ranks of ``lay`` onto ``ceil(gpus / gpus_per_domain)`` domains.

    Parameters
    ----------
    gpus_per_domain : int
        GPUs used per NVLink domain (e.g. 64 of an NVL72 rack's 72).
    mode : {"megatron", "spread"}
        ``megatron``: GPU = rank. ``spread``: rank ``r`` on domain ``r % domains``
        (groups of consecutive ranks cross domains).
    ep_in_domain : bool
        Refuse a placement where an EP group spans more than one domain.
    """
    if mode not in PLACEMENTS:
        raise SpecError(f"placement: {mode!r} is not one of {', '.join(PLACEMENTS)}")
    gpd = _pos_int("--gpus-per-domain", gpus_per_domain)
    domains = math.ceil(lay.gpus / gpd)
    r = np.arange(lay.gpus)
    if mode == "megatron":
        gpu_of = r
    else:
        if lay.gpus % domains:
            raise SpecError(f"placement spread: {lay.gpus} GPUs do not split evenly over {domains} domains")
        per = lay.gpus // domains
        gpu_of = (r % domains) * gpd + r // domains
        if per > gpd:  # pragma: no cover - guarded by the ceil above
            raise SpecError("placement spread: domains too small")
    pl = Placement(lay, gpd, domains, mode, gpu_of)
    if ep_in_domain and lay.ep * lay.etp > 1 and pl.spans("ep") > 1:
        raise SpecError(f"--ep-in-domain: EP groups of {lay.ep * lay.etp} GPUs span {pl.spans('ep')} domains with "
                        f"{gpd} GPUs per domain; use --gpus-per-domain a multiple of {lay.ep * lay.etp}")
    return pl


def cluster_for(system: str, pl: Placement, sets: dict | None = None) -> tuple[str, dict]:
    """Preset name and overrides that build the cluster of ``pl`` on ``system``.

    ``system`` is a domain preset (``gb300-nvl72``, ``hgx-h100``, ...). The cluster
    has ``pl.domains`` domains of ``pl.gpus_per_domain`` GPUs joined by the
    platform's reference scale-out (:data:`REFERENCE_SCALEOUT`); ``sets`` (the
    user's ``--set``) override any of these.

    Examples
    --------
    >>> lay = Layout(gpus=256, pp=2, ep=32, global_batch=128)
    >>> cluster_for("gb300-nvl72", place(lay, gpus_per_domain=64))
    ('gb300-nvl72', {'domains': 4, 'gpus_per_domain': 64, 'scaleout': 'quantum-x800'})
    """
    from topologies import preset

    p = preset(system)
    names = {x.name for x in p.params}
    if "domains" not in names:
        raise SpecError(f"--system {system!r}: a step needs a domain preset that takes 'domains' "
                        f"(e.g. gb300-nvl72, hgx-h100)")
    gpu_name = _preset_gpu(system)
    out: dict = {"domains": pl.domains}
    if "gpus_per_domain" in names:
        out["gpus_per_domain"] = pl.gpus_per_domain
    elif pl.gpus_per_domain > catalog.gpu(gpu_name).domain_gpus or (
            pl.gpus_per_domain != catalog.gpu(gpu_name).domain_gpus and pl.domains > 1):
        raise SpecError(f"--gpus-per-domain {pl.gpus_per_domain}: {system} domains have "
                        f"{catalog.gpu(gpu_name).domain_gpus} GPUs")
    if pl.domains > 1:
        out["scaleout"] = REFERENCE_SCALEOUT[gpu_name]
    for k, v in (sets or {}).items():
        out[k] = v
    return system, out


def _preset_gpu(system: str) -> str:
    """The GPU of a domain preset (``hgx-h100`` -> H100, ``gb300-nvl72`` -> GB300)."""
    name = system.lower()
    for g in sorted(catalog.GPUS, key=len, reverse=True):
        if g.lower() in name:
            return g
    raise SpecError(f"--system {system!r}: cannot tell its GPU; use a preset named after it (e.g. hgx-h100)")


# -------------------------------------------------------------------- layers per virtual stage
#: Layer kinds of a pipeline layout: embedding, transformer layer (dense or MoE by the model's
#: pattern), MTP module, output head + loss.
LAYER_KINDS = ("embed", "dense", "moe", "mtp", "head")


#: Longest expanded ``--pp-layout`` (symbols): models have at most a few thousand layers
#: (workloads.models.MODEL_LIMITS), so a layout that expands beyond this is a typo or a bomb.
MAX_PP_LAYOUT_CHARS = 1 << 16


def _expand(text: str) -> str:
    """Expand Megatron's pipeline-layout repetitions: ``(tt|)*2`` -> ``tt|tt|``, ``t*3`` -> ``ttt``."""
    import re

    made = [0]  # symbols produced by the current pass: bounded before they are built

    def times(m) -> str:
        n = int(m.group(2)) if len(m.group(2)) < 8 else MAX_PP_LAYOUT_CHARS + 1
        made[0] += len(m.group(1)) * n
        if made[0] > MAX_PP_LAYOUT_CHARS:
            raise SpecError(f"--pp-layout: {m.group(0)[:40]!r} expands to more than {MAX_PP_LAYOUT_CHARS:,} symbols")
        return m.group(1) * n

    prev = None
    while prev != text:
        prev, made[0] = text, 0
        text = re.sub(r"\(([^()]*)\)\*(\d+)", times, text)
        if len(text) > MAX_PP_LAYOUT_CHARS:
            raise SpecError(f"--pp-layout: expands to more than {MAX_PP_LAYOUT_CHARS:,} symbols")
    made[0] = 0
    text = re.sub(r"([EtmL])\*(\d+)", times, text)
    if len(text) > MAX_PP_LAYOUT_CHARS:
        raise SpecError(f"--pp-layout: expands to more than {MAX_PP_LAYOUT_CHARS:,} symbols")
    return text


def virtual_stages(moe_pattern, mtp_layers: int, lay: Layout, pp_layout: str | None = None) -> list[list[str]]:
    """Layer kinds of every virtual stage, in model order (virtual stage ``v`` runs on
    pipeline rank ``v % pp`` as its chunk ``v // pp``).

    ``pp_layout`` is Megatron-Core's ``--pipeline-model-parallel-layout`` string (``E``
    embedding, ``t`` transformer layer, ``m`` MTP, ``L`` loss, ``|`` between stages,
    ``(..)*n`` and ``t*n`` repeat). Default: the embedding with the first stage, the MTP
    modules and the head with the last, and the transformer layers spread so that every stage
    holds the same number of layers counting each MTP module and the head as one.

    Examples
    --------
    >>> lay = Layout(gpus=4, pp=2, vpp=2, global_batch=8)
    >>> virtual_stages([False] * 6, 0, lay)
    [['embed', 'dense', 'dense'], ['dense', 'dense'], ['dense', 'dense'], ['head']]
    >>> virtual_stages([False] * 6, 1, lay, "Et|(tt|)*2tmL")[3]
    ['dense', 'mtp', 'head']
    """
    n_layers = len(moe_pattern)
    kinds = ["moe" if m else "dense" for m in moe_pattern]
    n_virtual = lay.pp * lay.chunks
    if pp_layout is not None and (not isinstance(pp_layout, str) or not pp_layout.strip()):
        raise SpecError(f"--pp-layout: {brief(pp_layout)} is empty; give a layout such as 'Et*4|(t*4|)*14tmL' "
                        f"or leave the option out (layers split evenly)")
    if pp_layout:
        parts = _expand(pp_layout.replace(" ", "")).split("|")
        if len(parts) != n_virtual:
            raise SpecError(f"--pp-layout: {brief(pp_layout)} has {len(parts)} stage(s) ('|' separates them); "
                            f"pp x chunks = {lay.pp} x {lay.chunks} needs {n_virtual}")
        out, i = [], 0
        for part in parts:
            stage = []
            for ch in part:
                if ch == "E":
                    stage.append("embed")
                elif ch == "t":
                    if i >= n_layers:
                        raise SpecError(f"--pp-layout: more 't' than the model's {n_layers} layers")
                    stage.append(kinds[i])
                    i += 1
                elif ch == "m":
                    stage.append("mtp")
                elif ch == "L":
                    stage.append("head")
                else:
                    raise SpecError(f"--pp-layout: unknown symbol {ch!r} (use E, t, m, L, |, (..)*n)")
            out.append(stage)
        if i != n_layers:
            raise SpecError(f"--pp-layout: {i} 't' for the model's {n_layers} layers")
        if sum(s.count("mtp") for s in out) != mtp_layers:
            raise SpecError(f"--pp-layout: {sum(s.count('mtp') for s in out)} 'm' for the model's {mtp_layers} MTP layers")
        return out
    if n_layers + 2 < n_virtual:
        raise SpecError(f"--pp {lay.pp} x chunks {lay.chunks} = {n_virtual} virtual stages exceed the {n_layers} "
                        f"layers plus the embedding and the head")
    # Embedding and head take a stage of their own when there are more stages than layers
    # (Megatron-Core's account_for_embedding/loss_in_pipeline_split).
    own = n_virtual - n_layers if n_virtual > n_layers else 0
    inner = n_virtual - own
    # The MTP modules and the output head weigh like a layer each on the last stage (as NVIDIA's
    # DeepSeek-V3 layout "Et*4|(t*4|)*14tmL" balances them): split layers + those units evenly.
    extra_units = (mtp_layers + 1) if own < 2 and inner > 1 else 0
    base, extra = divmod(n_layers + extra_units, inner)
    counts = [base] * inner
    order = sorted(range(inner), key=lambda v: (v in (0, inner - 1), abs(v - (inner - 1) / 2)))
    for v in order[:extra]:  # extra layers go to the middle stages (the ends hold embedding and head)
        counts[v] += 1
    take = min(extra_units, counts[-1])
    counts[-1] -= take
    for v in range(inner - 2, -1, -1):  # units the last stage could not give up go to its neighbours
        if take == extra_units:
            break
        counts[v] -= 1
        take += 1
    out, i = [], 0
    for c in counts:
        out.append(kinds[i:i + c])
        i += c
    if own >= 1:
        out.insert(0, [])
    if own == 2:
        out.append([])
    out[0].insert(0, "embed")
    out[-1].extend(["mtp"] * mtp_layers + ["head"])
    return out


def stage_of_virtual(v: int, lay: Layout) -> tuple[int, int]:
    """(pipeline rank, chunk) of virtual stage ``v``.

    Examples
    --------
    >>> lay = Layout(gpus=8, pp=2, vpp=2, global_batch=8)
    >>> [stage_of_virtual(v, lay) for v in range(4)]
    [(0, 0), (1, 0), (0, 1), (1, 1)]
    """
    return v % lay.pp, v // lay.pp
