"""The hardware catalog: GPUs, NICs and switches, every number with its source.

All values are SI floats (bytes, seconds, bytes/second, FLOP/s). Link and port
bandwidths are **per direction**: vendors quote NVLink as a bidirectional sum
(H100 "900 GB/s" = 450 GB/s per direction = 18 links x 25 GB/s) and NICs in bits
(400 Gb/s = 50e9 B/s). FLOP/s are dense (no sparsity), per GPU.

Every entry carries ``sources`` (short citations; :data:`SOURCES` maps each tag
to the full citation of ``notes/hardware.md``) and ``notes``, which say which
values are DERIVED (our arithmetic), UNVERIFIED (second-hand) or MODEL (a
constant of NCCL's cost model) rather than SPEC or MEAS.

Examples
--------
>>> gpu("h100").nvlink_Bps
450000000000.0
>>> nic("cx8").line_rate_Bps
100000000000.0
>>> switch("quantum-x800").name
'Q3400'
>>> peak_flops("GB300", "mxfp8") / 1e15
5.0
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Optional

from topologies.errors import SpecError

__all__ = [
    "GPU",
    "NIC",
    "Switch",
    "GPUS",
    "NICS",
    "SWITCHES",
    "SCALEOUT_FABRICS",
    "CLOUD_NIC_FABRICS",
    "FORWARDING",
    "PRECISIONS",
    "SOURCES",
    "gpu",
    "nic",
    "switch",
    "scaleout_switch",
    "default_nic",
    "peak_flops",
]

#: Full citations of notes/hardware.md, by tag, for every tag this module uses.
SOURCES: dict[str, str] = {
    "S1": "stas00/ml-engineering, compute/accelerator/README.md @ 744d01e (2026-08-22): TFLOPS / memory / MAMF tables; per-row NVIDIA datasheet links",
    "S1-net": "stas00/ml-engineering, network/README.md @ 744d01e: NVLink generation table, nvbandwidth measurements, NVLS sweeps, IB latency row, SuperPOD notes",
    "S2": "Hugging Face / ml-engineering H100 and A100 specs (989 TF BF16, 3.35 TB/s); scaleway docs H100-SXM (900 GB/s NVLink, 3.35 TB/s)",
    "S3": "MLCommons inference v4.1 NVIDIA H200-SXM-141GBx8_TRT_MaxQ.json (18x 4th Gen NVLink, 900GB/s, 141 GB HBM3e)",
    "S4": "philisun.com 'NVIDIA H800 vs H100' and tumgag summary (H800 NVLink 400 GB/s bidir, FP64 ~1 TF); aiwiki.ai NVIDIA H800",
    "S5": "Tom's Hardware / TechPowerUp / Fudzilla on H800 (Reuters: chip-to-chip ~300 GB/s vs 600 GB/s PCIe H100)",
    "S6": "MLCommons inference v6.0 Nebius nebius_b200_n1.json (18x 5th Gen NVLink, 14.4 TB/s aggregated, 180 GB, 8 x CX-7 NDR)",
    "S7": "MLCommons inference v6.1 Crusoe GB200-NVL72_GB200-186GB_aarch64x16_Dynamo.json (186 GB, 4 x CX-7 per 4-GPU node)",
    "S8": "verda.com/blog/gb300-nvl72-architecture (per-GPU GB300 / GB200 / B300 / B200 table; GB300 rack 130 TB/s NVLink)",
    "S9": "docs.nvidia.com DGX BasePOD RA 'Core Components' (DGX H100/H200: four NVSwitch chips, 8 x CX-7 via 4 OSFP; DGX B200 8 x CX-7)",
    "S10": "ml-engineering on HGX B200 / B300 platform specs (14.4 TB/s total NVLink per 8-GPU board)",
    "S11": "docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-gb200/latest/network-fabrics.html (18 compute trays, 9 NVLink switch trays x 2 chips, 1 link per chip per GPU)",
    "S12": "nvidia.com/en-au/data-center/nvlink/ (NVLink5 1.8 TB/s, 18 x 100 GB/s; NVLink Switch 144 ports, 14.4 TB/s; SHARP engines in each NVLink switch)",
    "S13": "NVIDIA/nccl @ 5067397c (NCCL 2.30.7, 2026-06-11): src/graph/topo.h l.17-35, 274-281; src/graph/topo.cc l.405-421; docs/userguide/source/env.rst",
    "S14": "docs.nvidia.com QM97X0 user manual (OSFP twin-port, 64 x NDR); ml-engineering network/README.md Quantum-2 section (64 x 400G or 128 x 200G)",
    "S15": "ziash NCA study guide (Q3400-RA 144 x 800G, SHARPv4, 115.2 Tb/s; CX-8 800G, PCIe Gen6 48 lanes); ml-engineering network/README.md (DGX B300 8 x CX-8, Quantum-X800 XDR)",
    "S16": "docs.nvidia.com/dgx/dgxgb200-user-guide/hardware.html (compute tray: 2 Grace + 4 Blackwell, 4 x CX-7 single-port 400G OSFP, 2 x BF-3)",
    "S17": "docs.nvidia.com/networking/display/sn5000/data+interfaces (SN5600: 64 x 800GbE at 100 Gb/s per lane; 128 x 400G; 256 x 200G)",
    "S20": "deepseek-ai/DeepEP @ dd758ca: README.md, docs/legacy.md; hybrid-ep branch README (adaptive routing guidance)",
    "S23-ent": "docs.nvidia.com/enterprise-reference-architectures/{hgx-ai-factory, hgx-ai-factory-h100-h200-b200, nvl72-ai-factory}/latest/networking-physical-topologies.html",
    "S24": "NVIDIA/nccl-tests GitHub issues #212, #119, #130, #196, #267, #272, #290, #309, #366",
    "S25": "NVIDIA/nccl issue #1264 (H100 p2p 749-783 GB/s bidir, ~380 uni)",
    "S26": "Azure/AI-benchmarking-guide issue #7 (GB200 nvbandwidth p2p ~770 GB/s)",
    "S27": "fridayswithfaraday.com 'NVSwitch fabric topology' (NVSwitch3 64 NVLink4 ports, 3.2 TB/s); fibermall / naddod SuperPOD articles",
    "S28": "ServeTheHome via kontronn.com / vuink.com: 'Ingrasys shows big NVIDIA NVLink Switch chips change to the HGX B200' (4 -> 2 chips)",
    "S29": "NVIDIA/nccl GitHub issues #583, #828, #1031, #1083, #1211, #1218, #1221, #1244, #1259, #1374, #1442, #1455, #1506, #1649, #1801, #2140, #2409",
    "S30": "Spectrum-X SuperNIC reordering text (NVIDIA documentation quoted on dumpsmate.com NCP-AIN page); NVIDIA Spectrum-X overview pages",
    "S31": "yobitel.com 'NVIDIA Quantum-2' (~330 ns, 51.2 Tb/s, SHARPv3); router-switch.com QM9700 vs SN5400 (<150 ns); systemspecbase.com (<400 ns). All third-party",
    "S32": "quantum-computing.news 'What is NVIDIA Quantum-X800' (144 x 800G, 200 Gb/s SerDes); gdroofing/fibermall snippets (two-level fat tree 10,368 endpoints)",
    "S35": "Zhao et al., 'Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware for AI Architectures', ISCA 2025, arXiv 2505.09343",
    "S38": "kentino.com 'Latency dissection ...' (cut-through switch hop: IB < 100 ns, Ethernet 400-600 ns; secondary, unverified)",
    "S46": "NVIDIA press release on xAI Colossus / Spectrum-X, as reported by Fierce Electronics, StorageReview and thebeat.tech",
    "S-IBLFT": "InfiniBand Architecture Specification vol. 1 ch. 18 (switch forwarding: the linear forwarding table maps a destination LID to an output port, set by the subnet manager); linux-rdma/opensm doc/current-routing.txt ('Fat-tree Unicast routing algorithm - this algorithm optimizes routing of fat-trees for congestion-free \"shift\" communication pattern'); NVIDIA UFM Enterprise User Manual v6.17.5 'Network Management' (same routing engines)",
    "S-IBAR": "NVIDIA InfiniBand Cluster Bring-up Procedure v1.0, 'Adaptive Routing' (the SM configures AR groups and AR LFTs per destination LID; 'AR is enabled by default in the opensm.conf file', routing_engine ar_updn)",
    "S-SRD": "Shalev et al., 'A Cloud-Optimized Transport Protocol for Elastic and Scalable HPC', IEEE Micro 40(6), 2020 (AWS SRD: packets of one flow sprayed over many paths, reordered at the receiver)",
    "S-ECMP": "RFC 2991 / RFC 2992 (equal-cost multipath: next hop chosen by a hash of the packet's flow header, so one flow keeps one path)",
    "S-H20": "willitrunai.com/es/gpus/h20-96gb (H20: 96 GB HBM3 at 4.0 TB/s, 148 TFLOPS FP16 dense, 296 INT8 TOPS, NVLink 4.0 900 GB/s, 400 W); huggingface.co/hardware/h20 (96 GB, 148 TFLOPS, 400 W). Third-party: no NVIDIA datasheet for H20 in the sources",
    "S-DGXA100": "geektopia.es 2020-05-14 'Nvidia anuncia el servidor DGX A100' (eight Mellanox NICs at 200 Gb/s, six NVSwitch, NVLink3 600 GB/s); besthub.dev 'Inside the High-Performance GPU Server: A100/A800 & H100 Topologies' (8 GPU-dedicated NICs, 4 PCIe Gen4 switches, 6 NVSwitch); alpha-one-index.github.io/ai-infra-index/specs/networking-interconnects.html (ConnectX-6: HDR 200G, A100 clusters); devblogs.nvidia.com 'Introducing NVIDIA HGX A100' (6 NVSwitch, 12 NVLink ports per GPU). Secondary sources",
}

_SHORT: dict[str, str] = {
    "S1": "stas00/ml-engineering compute/accelerator/README.md @744d01e",
    "S1-net": "stas00/ml-engineering network/README.md @744d01e",
    "S2": "HF/ml-engineering H100, A100 specs; scaleway H100-SXM docs",
    "S3": "MLCommons inference v4.1 H200-SXM-141GBx8 system json",
    "S4": "philisun.com / tumgag / aiwiki.ai on H800",
    "S5": "Tom's Hardware / TechPowerUp / Fudzilla on H800",
    "S6": "MLCommons inference v6.0 nebius_b200_n1.json",
    "S7": "MLCommons inference v6.1 Crusoe GB200-NVL72 system json",
    "S8": "verda.com/blog/gb300-nvl72-architecture",
    "S9": "NVIDIA DGX BasePOD RA, Core Components",
    "S10": "ml-engineering HGX B200/B300 platform specs",
    "S11": "NVIDIA DGX SuperPOD GB200 RA, network-fabrics",
    "S12": "nvidia.com data-center/nvlink",
    "S13": "NVIDIA/nccl @5067397c (2.30.7) src/graph/topo.h, topo.cc",
    "S14": "NVIDIA QM97X0 user manual",
    "S15": "ziash NCA study guide (Q3400-RA, CX-8)",
    "S16": "NVIDIA DGX GB200 user guide, hardware",
    "S17": "NVIDIA SN5000 user manual, data interfaces",
    "S20": "deepseek-ai/DeepEP @dd758ca README",
    "S23-ent": "NVIDIA enterprise RAs, networking-physical-topologies",
    "S24": "NVIDIA/nccl-tests issues (#212, #290, ...)",
    "S25": "NVIDIA/nccl issue #1264",
    "S26": "Azure/AI-benchmarking-guide issue #7",
    "S27": "fridayswithfaraday.com NVSwitch fabric topology",
    "S28": "ServeTheHome: Ingrasys HGX B200 NVLink switch chips",
    "S29": "NVIDIA/nccl issues (#828, #1455, #2140, ...)",
    "S30": "NVIDIA Spectrum-X SuperNIC docs (quoted)",
    "S31": "yobitel / router-switch / systemspecbase on Quantum-2 (third-party)",
    "S32": "quantum-computing.news on Quantum-X800",
    "S35": "Zhao et al., ISCA 2025, arXiv 2505.09343",
    "S38": "kentino.com latency dissection (secondary)",
    "S46": "NVIDIA xAI Colossus / Spectrum-X press release (reported)",
    "S-IBLFT": "IBTA spec vol. 1 ch. 18 (LFT by destination LID); opensm current-routing.txt (ftree)",
    "S-IBAR": "NVIDIA IB Cluster Bring-up Procedure v1.0, Adaptive Routing",
    "S-SRD": "Shalev et al., AWS SRD, IEEE Micro 2020",
    "S-ECMP": "RFC 2991 / RFC 2992 (ECMP flow hashing)",
    "S-H20": "willitrunai.com H20 page; huggingface.co/hardware/h20 (third-party)",
    "S-DGXA100": "geektopia.es DGX A100 announcement; besthub.dev A100 server topology; ai-infra-index networking page; NVIDIA HGX A100 devblog",
}


def _src(*tags: str) -> tuple[str, ...]:
    return tuple(f"[{t}] {_SHORT[t]}" for t in tags)


def _key(name: object, field: str, known: Mapping[str, object]) -> str:
    if not isinstance(name, str):
        raise SpecError(f"{field}: {name!r} is not a name; known: {', '.join(known)}")
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def _lookup(name: object, field: str, table: Mapping[str, object], aliases: Mapping[str, str]):
    k = _key(name, field, table)
    canonical = aliases.get(k, {n.lower(): n for n in table}.get(k))
    if canonical is None:
        raise SpecError(f"{field}: {name!r} is not in the catalog; known: {', '.join(table)}")
    return table[canonical]


_ARCHS = ("ampere", "hopper", "blackwell")


@dataclass(frozen=True)
class GPU:
    """One GPU model and the standard NVLink domain it lives in.

    FLOP/s are dense peaks per GPU; ``None`` means the GPU has no such tensor
    path. ``links_per_chip[i]`` is the number of the GPU's NVLink links going to
    NVSwitch chip ``i`` of its domain, so ``sum(links_per_chip) == nvlink_links``.

    Examples
    --------
    >>> g = gpu("H800")
    >>> g.nvlink_links, g.nvlink_Bps, g.links_per_chip
    (8, 200000000000.0, (2, 2, 2, 2))
    """

    name: str
    arch: str
    sm: int  #: NCCL compute-capability class x10 (80, 90, 100)
    peak_bf16_flops: float
    peak_fp8_flops: Optional[float]
    peak_fp4_flops: Optional[float]
    hbm_bytes: float
    hbm_Bps: float
    nvlink_gen: int
    nvlink_links: int
    nvlink_link_Bps: float  #: per link, per direction (SPEC)
    nccl_nvlink_link_Bps: float  #: NCCL topo.h per-link constant (MODEL)
    domain: str  #: standard NVLink domain, e.g. "HGX H100", "GB200 NVL72"
    domain_gpus: int
    nvswitch_chips: int
    links_per_chip: tuple[int, ...]
    peak_nvfp4_flops: Optional[float] = None  #: when a source quotes NVFP4 apart from FP4
    mamf_bf16_flops: Optional[float] = None  #: measured best-shape matmul (MEAS)
    mamf_fp8_flops: Optional[float] = None
    nvlink_measured_Bps: Optional[float] = None  #: measured effective, one direction (MEAS)
    sources: tuple[str, ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        if self.arch not in _ARCHS:
            raise SpecError(f"arch: {self.arch!r} is not allowed; known: {', '.join(_ARCHS)}")
        if len(self.links_per_chip) != self.nvswitch_chips or sum(self.links_per_chip) != self.nvlink_links:
            raise SpecError(
                f"links_per_chip: {self.links_per_chip} must have nvswitch_chips={self.nvswitch_chips} "
                f"entries summing to nvlink_links={self.nvlink_links}"
            )
        if not self.sources:
            raise SpecError(f"sources: GPU {self.name!r} needs at least one source")

    @property
    def nvlink_Bps(self) -> float:
        """NVLink bandwidth per GPU per direction: links x per-link (SPEC)."""
        return self.nvlink_links * self.nvlink_link_Bps

    @property
    def nccl_nvlink_Bps(self) -> float:
        """NVLink bandwidth per GPU as NCCL's topology model sees it (MODEL)."""
        return self.nvlink_links * self.nccl_nvlink_link_Bps


@dataclass(frozen=True)
class NIC:
    """A scale-out NIC; one per GPU in all the reference designs.

    Examples
    --------
    >>> n = nic("ConnectX-7")
    >>> n.line_rate_Bps, round(n.host_Bps / 1e9, 1)
    (50000000000.0, 63.0)
    """

    name: str
    line_rate_Bps: float  #: per direction
    host_interface: str
    host_Bps: float  #: raw host link per direction (after line encoding)
    measured_goodput_Bps: Optional[float] = None
    sources: tuple[str, ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.sources:
            raise SpecError(f"sources: NIC {self.name!r} needs at least one source")


_FAMILIES = ("nvswitch", "infiniband", "ethernet")
_REDUCTIONS = (None, "nvls", "sharpv3", "sharpv4")
#: How a scale-out switch picks the next hop of a packet (``Switch.forwarding``):
#: ``destination`` (InfiniBand: the subnet manager's linear forwarding table by destination LID, fat-tree
#: routing ~ d-mod-k [S-IBLFT]), ``hash`` (Ethernet ECMP: a hash of the flow's header, one path per
#: flow [S-ECMP]), ``adaptive-spray`` (packets of one flow over every next hop by load, reordered at the
#: receiver: Spectrum-X [S30], AWS SRD [S-SRD]). NVSwitch crossbars have none (one hop).
FORWARDING = ("destination", "hash", "adaptive-spray")


@dataclass(frozen=True)
class Switch:
    """A switch ASIC (one chip), with its per-hop latency parameter.

    ``hop_latency_s`` is a model parameter, not a measurement: no vendor
    publishes port-to-port latency for NDR/XDR, Spectrum-4 or NVSwitch.

    Examples
    --------
    >>> s = switch("QM9700")
    >>> s.ports, s.port_Bps, s.in_network_reduction
    (64, 50000000000.0, 'sharpv3')
    """

    name: str
    family: str
    ports: int
    port_Bps: float  #: per port, per direction
    hop_latency_s: float
    in_network_reduction: Optional[str]
    adaptive_routing: bool
    sources: tuple[str, ...] = ()
    notes: str = ""
    #: next-hop choice of a scale-out switch (one of FORWARDING; None for NVSwitch crossbars)
    forwarding: Optional[str] = None

    def __post_init__(self) -> None:
        if self.family not in _FAMILIES:
            raise SpecError(f"family: {self.family!r} is not allowed; known: {', '.join(_FAMILIES)}")
        if self.in_network_reduction not in _REDUCTIONS:
            raise SpecError(
                f"in_network_reduction: {self.in_network_reduction!r} is not allowed; known: None, nvls, sharpv3, sharpv4"
            )
        if not self.sources:
            raise SpecError(f"sources: switch {self.name!r} needs at least one source")
        if (self.forwarding is None) != (self.family == "nvswitch") or self.forwarding not in (None, *FORWARDING):
            raise SpecError(f"forwarding: {self.forwarding!r} for {self.family} switch {self.name!r}: a scale-out "
                            f"switch takes one of {', '.join(FORWARDING)}; an NVSwitch none")

    @property
    def capacity_Bps(self) -> float:
        """Switching capacity per direction: ports x port_Bps."""
        return self.ports * self.port_Bps


_NCCL_NOTE = "nccl_nvlink_link_Bps is NCCL 2.30.7 topo.h (MODEL)"

_GPU_LIST = (
    GPU("A100", "ampere", 80, 312e12, None, None, 80e9, 2.0e12, 3, 12, 25e9, 20.0e9,
        "HGX A100", 8, 6, (2,) * 6, mamf_bf16_flops=271.2e12,
        sources=_src("S1", "S2", "S1-net", "S27", "S13"),
        notes="A100 SXM 80 GB. No FP8 tensor path (INT8 624 TOPS). 6 x NVSwitch2 with 12 links "
              "spread over them; 2 links per chip is DERIVED (12 / 6). " + _NCCL_NOTE),
    GPU("H100", "hopper", 90, 989e12, 1979e12, None, 80e9, 3.35e12, 4, 18, 25e9, 20.6e9,
        "HGX H100", 8, 4, (5, 4, 4, 5), mamf_bf16_flops=794.5e12, mamf_fp8_flops=1402.6e12,
        nvlink_measured_Bps=380e9,
        sources=_src("S1", "S2", "S9", "S27", "S13", "S25", "S24"),
        notes="4 x NVSwitch3 (SPEC [S9]); the 5/4/4/5 link split is UNVERIFIED. nvlink_measured_Bps: "
              "p2pBandwidthLatencyTest ~380 GB/s uni [S25]; NCCL devs quote ~370 GB/s effective [S24]. " + _NCCL_NOTE),
    GPU("H200", "hopper", 90, 989e12, 1979e12, None, 141e9, 4.8e12, 4, 18, 25e9, 20.6e9,
        "HGX H200", 8, 4, (5, 4, 4, 5), mamf_fp8_flops=1453.4e12, nvlink_measured_Bps=396.4e9,
        sources=_src("S1", "S3", "S9", "S27", "S13", "S1-net"),
        notes="5/4/4/5 link split UNVERIFIED. BF16 MAMF is only given as ~H100, so left None. "
              "nvlink_measured_Bps: nvbandwidth pairwise copy 396.4 GB/s uni on 8xH200 [S1-net]. " + _NCCL_NOTE),
    GPU("H800", "hopper", 90, 989e12, 1979e12, None, 80e9, 3.35e12, 4, 8, 25e9, 20.6e9,
        "HGX H800", 8, 4, (2, 2, 2, 2), nvlink_measured_Bps=160e9,
        sources=_src("S4", "S5", "S1", "S20", "S24", "S35", "S13"),
        notes="NVLink 400 GB/s bidir = 200 GB/s/dir [S4]; press '300 GB/s' [S5] is the PCIe-form-factor "
              "comparison. 8 links x 25 GB/s/dir and the (2,2,2,2) split over 4 NVSwitch3 are DERIVED. "
              "BF16/FP8 peaks DERIVED as equal to H100 (same GH100 die); FP64 cut to ~1 TF. "
              "nvlink_measured_Bps: 160 GB/s measured one direction by DeepSeek (DeepSeek-V3 tech report §3.2.2 "
              "'NVLink 160 GB/s'; deepseek-ai/DeepSeek-V3#28: '160GB/s is our measured unidirectional'); "
              "8-GPU allreduce 215 GB/s busbw [S24]. "
              + _NCCL_NOTE),
    GPU("H20", "hopper", 90, 148e12, 296e12, None, 96e9, 4.0e12, 4, 18, 25e9, 20.6e9,
        "HGX H20", 8, 4, (5, 4, 4, 5),
        sources=_src("S-H20", "S9", "S27", "S29", "S13"),
        notes="China-market Hopper: BF16 dense 148 TF and HBM3 96 GB at 4.0 TB/s [S-H20] (third-party; quoted as FP16, "
              "BF16 runs at the FP16 rate on Hopper). FP8 296 TF is DERIVED as 2 x BF16 (Hopper's FP8 rate; equals "
              "the quoted 296 INT8 TOPS). NVLink 900 GB/s bidirectional = 18 links x 25 GB/s per direction, as H100. "
              "Board layout DERIVED from HGX H100 (4 x NVSwitch3 [S9][S27], 5/4/4/5 split UNVERIFIED); NVLS runs on "
              "8 x H20 boards (NVLSTree measured, nccl #1244 [S29]). " + _NCCL_NOTE),
    GPU("B200", "blackwell", 100, 2250e12, 4500e12, 9000e12, 180e9, 8e12, 5, 18, 50e9, 40.1e9,
        "HGX B200", 8, 2, (9, 9), peak_nvfp4_flops=10000e12,
        mamf_bf16_flops=1745e12, mamf_fp8_flops=3432.5e12,
        sources=_src("S1", "S6", "S10", "S28", "S13"),
        notes="2 NVLink5 switch chips [S28]; 9 links to each chip is DERIVED (18 / 2). "
              "FP4 9 PF, NVFP4 quoted separately at 10 PF [S1]. " + _NCCL_NOTE),
    GPU("B300", "blackwell", 100, 2250e12, 4500e12, 12600e12, 288e9, 8e12, 5, 18, 50e9, 40.1e9,
        "HGX B300", 8, 2, (9, 9), peak_nvfp4_flops=15000e12,
        mamf_bf16_flops=1769e12, mamf_fp8_flops=3353.3e12,
        sources=_src("S1", "S10", "S28", "S13"),
        notes="2 NVLink5 switch chips [S28]; 9 links to each chip is DERIVED. FP4 12.6 PF, NVFP4 15 PF [S1]. "
              "sm is NCCL's SM100 class (NCCL uses the SM100 constant for every compute capability >= 10.0). "
              + _NCCL_NOTE),
    GPU("GB200", "blackwell", 100, 2500e12, 5000e12, 10000e12, 186e9, 8e12, 5, 18, 50e9, 40.1e9,
        "GB200 NVL72", 72, 18, (1,) * 18, mamf_bf16_flops=1822e12, mamf_fp8_flops=3615.6e12,
        nvlink_measured_Bps=770e9,
        sources=_src("S1", "S7", "S8", "S11", "S12", "S13", "S26"),
        notes="Peaks are [S1]'s NVL72 rack figures / 72 / 2 (sparsity removed), DERIVED; [S8] gives "
              "2.25 / 4.5 / 9 PF (B200 numbers). HBM 186 GB usable (192 nominal) [S7]. 18 chips x 1 link "
              "is SPEC [S11]. nvlink_measured_Bps: nvbandwidth p2p ~770 GB/s [S26]. " + _NCCL_NOTE),
    GPU("GB300", "blackwell", 100, 2500e12, 5000e12, 15000e12, 288e9, 8e12, 5, 18, 50e9, 40.1e9,
        "GB300 NVL72", 72, 18, (1,) * 18,
        sources=_src("S1", "S8", "S11", "S12", "S13"),
        notes="Peaks are [S1]'s NVL72 rack figures / 72 / 2, DERIVED. HBM 288 GB ([S8] says 279 GB). "
              "18 chips x 1 link is SPEC [S11][S12]. " + _NCCL_NOTE),
)

_PCIE4_X16_Bps = 16e9 * 16 * (128 / 130) / 8  # 16 GT/s/lane, 128b/130b: ~31.5e9 B/s
_PCIE5_X16_Bps = 32e9 * 16 * (128 / 130) / 8  # 32 GT/s/lane, 128b/130b: ~63.0e9 B/s
_PCIE6_X16_Bps = 64e9 * 16 * (242 / 256) / 8  # 64 GT/s/lane PAM4, 256-B FLIT with 242 B TLP+DLP: ~121e9 B/s

_NIC_LIST = (
    NIC("ConnectX-6", 200e9 / 8, "PCIe Gen4 x16", _PCIE4_X16_Bps, measured_goodput_Bps=24e9,
        sources=_src("S-DGXA100", "S24", "S1-net"),
        notes="200 Gb/s HDR InfiniBand (DGX A100: 8 single-port ConnectX-6, one per GPU [S-DGXA100]). host_Bps DERIVED: "
              "16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s. measured_goodput_Bps: NCCL developers' 24 GB/s per 200G NIC "
              "(nccl-tests #119 [S24])."),
    NIC("ConnectX-7", 400e9 / 8, "PCIe Gen5 x16", _PCIE5_X16_Bps, measured_goodput_Bps=47e9,
        sources=_src("S14", "S1-net", "S24", "S13"),
        notes="400 Gb/s NDR IB or 400GbE. host_Bps DERIVED: 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s "
              "(8xH200 H2D measures 55.4 GB/s, 88% [S1-net]). measured_goodput_Bps: 46-48 GB/s per NIC "
              "(nccl-tests #290 [S24]; 48-49 in #267). NCCL models NIC BW as port Mb/s / 8000 = 50 GB/s [S13]."),
    NIC("ConnectX-8", 800e9 / 8, "PCIe Gen6 x16", _PCIE6_X16_Bps,
        sources=_src("S15", "S1-net", "S13"),
        notes="800 Gb/s XDR IB or 800GbE SuperNIC; PCIe Gen6, up to 48 lanes [S15]. host_Bps is DERIVED "
              "for one x16 link from PCIe 6.0 signalling (64 GT/s per lane, FLIT mode, 242 of 256 bytes "
              "carry TLP+DLP): 121 GB/s; these PCIe 6.0 parameters are not in the notes' sources (UNVERIFIED). "
              "No measured goodput in the notes."),
)

# Cloud fabrics whose GPUs have several NIC devices, or share one: the catalog entry is the *per-GPU
# bundle* (what one GPU's NCCL rank drives), named after the device. AWS instance specs: p4de 4 x 100 Gb/s
# EFA per 8 GPUs, p5 32 x 100 Gb/s, p5en 16 x 200 Gb/s, p6-b200 8 x 400 Gb/s (docs/validation-data.md,
# "Presets and fabric values the points need"; AWS instance-type pages via stas00/ml-engineering
# network/README.md @ 744d01e). GCP A3 Mega: 8 x 200 Gb/s GPUDirect-TCPXO NICs per 8 GPUs.
_EFA_NOTE = ("SRD transport over AWS's fabric (multipath spraying in the NIC); one catalog entry = the EFA "
             "devices of one GPU as one port. No measured goodput in the notes: the network efficiency of "
             "EFA is a fit (collectives/calibration.py).")
_NIC_LIST = _NIC_LIST + (
    NIC("EFA-v1-100G", 100e9 / 8 / 2, "PCIe Gen4 x16", _PCIE4_X16_Bps,
        sources=_src("S1-net"),
        notes="AWS p4de: 4 x 100 Gb/s EFA per 8 A100, one device per 2 GPUs: the per-GPU share, 50 Gb/s, "
              "DERIVED. " + _EFA_NOTE),
    NIC("EFA-v2-100G", 4 * 100e9 / 8, "PCIe Gen5 x16", _PCIE5_X16_Bps,
        sources=_src("S1-net"),
        notes="AWS p5: 32 x 100 Gb/s EFA per 8 H100 = 4 devices per GPU (400 Gb/s bundle). " + _EFA_NOTE),
    NIC("EFA-v3-200G", 2 * 200e9 / 8, "PCIe Gen5 x16", _PCIE5_X16_Bps,
        sources=_src("S1-net"),
        notes="AWS p5en: 16 x 200 Gb/s EFA per 8 H200 = 2 devices per GPU (400 Gb/s bundle). " + _EFA_NOTE),
    NIC("EFA-v4-400G", 400e9 / 8, "PCIe Gen5 x16", _PCIE5_X16_Bps,
        sources=_src("S1-net"),
        notes="AWS p6-b200: 8 x 400 Gb/s EFA per 8 B200. " + _EFA_NOTE),
    NIC("TCPXO-200G", 200e9 / 8, "PCIe Gen5 x16", _PCIE5_X16_Bps,
        sources=_src("S1-net"),
        notes="GCP A3 Mega: 8 x 200 Gb/s NICs per 8 H100, GPUDirect-TCPXO (TCP with header/data split "
              "offload, not RDMA). No measured goodput in the notes: its network efficiency is a fit."),
)

_SWITCH_LIST = (
    Switch("NVSwitch2", "nvswitch", 36, 25e9, 150e-9, None, False,
           sources=_src("S1-net", "S27"),
           notes="Second-generation NVSwitch (HGX/DGX A100: 6 chips, each GPU 12 NVLink3 links spread over "
                 "them [S1-net]). 36 ports of 25 GB/s per direction is the NVIDIA A100 whitepaper figure, not "
                 "in the notes' sources (UNVERIFIED). No in-switch reduction: NVLS starts with NVSwitch3. "
                 "hop_latency_s = 150 ns is an UNVERIFIED parameter, as for NVSwitch3."),
    Switch("NVSwitch3", "nvswitch", 64, 25e9, 150e-9, "nvls", False,
           sources=_src("S27", "S9", "S13", "S29"),
           notes="Third-generation NVSwitch (HGX H100/H200/H800): 64 NVLink4 ports, 3.2 TB/s full duplex "
                 "[S27] = 64 x 25 GB/s per direction. NVLS (in-switch reduce + multicast) [S13][S29]. "
                 "hop_latency_s = 150 ns is an UNVERIFIED parameter (no source gives NVSwitch latency): "
                 "a single-chip crossbar, set below the IB hop; it is small next to NCCL's 0.6 us NVLink "
                 "per-step latency [S13]."),
    Switch("NVLink5-switch", "nvswitch", 72, 50e9, 150e-9, "nvls", False,
           sources=_src("S11", "S12", "S28"),
           notes="NVLink5 switch chip (NVL72 trays hold 2 chips: 144 ports, 14.4 TB/s = 144 x 100 GB/s "
                 "bidir [S12]); 72 ports per chip [S11]. NVLS with FP8 SHARP support [S12]. "
                 "hop_latency_s = 150 ns is an UNVERIFIED parameter, as for NVSwitch3."),
    Switch("QM9700", "infiniband", 64, 400e9 / 8, 250e-9, "sharpv3", True,
           sources=_src("S14", "S31", "S38", "S1-net", "S13", "S-IBLFT", "S-IBAR"),
           notes="Quantum-2 NDR: 64 x 400G (or 128 x 200G), 51.2 Tb/s bidir, SHARPv3, adaptive routing "
                 "[S14][S31]. hop_latency_s = 250 ns is a PARAMETER inside the UNVERIFIED 200-300 ns range; "
                 "NVIDIA publishes no NDR hop latency (third-party: <150, ~330, <400 ns) [S1-net][S31]."
                 " Forwarding by destination LID through the subnet manager's LFTs (fat-tree routing) [S-IBLFT]; the "
                 "SM can add adaptive-routing groups per destination (on in NVIDIA's opensm.conf [S-IBAR]): not "
                 "modelled as the default, see docs/collectives.md 'Round 5, forwarding by fabric'.",
           forwarding="destination"),
    Switch("Q3400", "infiniband", 144, 800e9 / 8, 250e-9, "sharpv4", True,
           sources=_src("S15", "S32", "S31", "S38", "S-IBLFT"),
           notes="Quantum-X800 XDR: 144 x 800G, 115.2 Tb/s (one direction), SHARPv4, 200 Gb/s SerDes "
                 "(SPEC, second-hand) [S15][S32]. Adaptive routing assumed as on Quantum-2. "
                 "hop_latency_s = 250 ns is a PARAMETER in the UNVERIFIED 200-300 ns range."
                 " Forwarding by destination LID (LFT) [S-IBLFT], as QM9700.",
           forwarding="destination"),
    Switch("QM8700", "infiniband", 40, 200e9 / 8, 250e-9, None, True,
           sources=_src("S1-net", "S31", "S-IBLFT"),
           notes="Quantum HDR: 40 x 200G. SHARPv2 exists but is not modelled (in_network_reduction None); the "
                 "points that need this fabric ran without SHARP. hop_latency_s = 250 ns is an UNVERIFIED "
                 "PARAMETER (NVIDIA published 0.6 us 'latency' for HDR [S1-net]; a cut-through hop is a "
                 "fraction of it)."
                 " Forwarding by destination LID (LFT) [S-IBLFT], as QM9700.",
           forwarding="destination"),
    Switch("QM9700-noSHARP", "infiniband", 64, 400e9 / 8, 250e-9, None, True,
           sources=_src("S14", "S31", "S-IBLFT"),
           notes="Quantum-2 NDR run without SHARP (NCCL_COLLNET_ENABLE=0, no SHARP plugin): QM9700 with the "
                 "in-network reduction disabled. Same ports and UNVERIFIED latency parameter as QM9700."
                 " Forwarding by destination LID (LFT) [S-IBLFT].",
           forwarding="destination"),
    Switch("Q3400-noSHARP", "infiniband", 144, 800e9 / 8, 250e-9, None, True,
           sources=_src("S15", "S32", "S31", "S38", "S13", "S-IBLFT"),
           notes="Quantum-X800 XDR run without SHARP: CollNet is off unless NCCL_COLLNET_ENABLE=1 (NCCL "
                 "env.rst 'Default is 0' [S13]; CoreWeave's GB200 multi-rack jobs set it to 0). Q3400 with "
                 "the in-network reduction disabled; same ports and UNVERIFIED latency parameter as Q3400."
                 " Forwarding by destination LID (LFT) [S-IBLFT].",
           forwarding="destination"),
    Switch("EFA-fabric-100G", "ethernet", 64, 100e9 / 8, 500e-9, None, True,
           sources=_src("S1-net", "S38", "S-SRD"),
           notes="AWS's EFA network as seen from one 100G device: not a published switch; a non-blocking "
                 "Clos of 64-port switches at the device rate is an ASSUMPTION. SRD sprays packets over "
                 "paths (adaptive routing True). hop_latency_s is an UNVERIFIED PARAMETER, as Ethernet [S38]."
                 " SRD sprays one flow's packets over many paths and reorders at the receiver [S-SRD].",
           forwarding="adaptive-spray"),
    Switch("EFA-fabric-200G", "ethernet", 64, 200e9 / 8, 500e-9, None, True,
           sources=_src("S1-net", "S38", "S-SRD"),
           notes="As EFA-fabric-100G (UNVERIFIED latency parameter), ports at 200G (p5en)."
                 " SRD spraying [S-SRD].",
           forwarding="adaptive-spray"),
    Switch("EFA-fabric-400G", "ethernet", 64, 400e9 / 8, 500e-9, None, True,
           sources=_src("S1-net", "S38", "S-SRD"),
           notes="As EFA-fabric-100G (UNVERIFIED latency parameter), ports at 400G (p5 bundles of 4 x 100G, "
                 "p6-b200)."
                 " SRD spraying [S-SRD].",
           forwarding="adaptive-spray"),
    Switch("GCP-TCPXO-fabric", "ethernet", 64, 200e9 / 8, 500e-9, None, False,
           sources=_src("S1-net", "S38", "S-ECMP"),
           notes="GCP A3 Mega's network as seen from one 200G NIC: a non-blocking Clos is an ASSUMPTION; "
                 "hop_latency_s is an UNVERIFIED PARAMETER, as Ethernet [S38]."
                 " TCP flows over ECMP: one path per flow by header hash [S-ECMP].",
           forwarding="hash"),
    Switch("GCP-RDMA-fabric", "ethernet", 64, 400e9 / 8, 500e-9, None, True,
           sources=_src("S1-net", "S38", "S-ECMP"),
           notes="GCP A3 Ultra's GPU RDMA network (RoCE) as seen from one 400G ConnectX-7: a non-blocking "
                 "Clos of 64-port switches is an ASSUMPTION, as for the other cloud fabrics; NCCL runs over "
                 "Google's gIB plugin (IB verbs). hop_latency_s is an UNVERIFIED PARAMETER, as Ethernet [S38]."
                 " RoCE v2 over ECMP: one path per queue pair by UDP/IP header hash [S-ECMP] (no published adaptive "
                 "routing for this fabric).",
           forwarding="hash"),
    Switch("SN5600", "ethernet", 64, 800e9 / 8, 500e-9, None, True,
           sources=_src("S17", "S30", "S46", "S38", "S31"),
           notes="Spectrum-4: 64 x 800GbE at 100 Gb/s per lane (or 128 x 400G / 256 x 200G), 51.2 Tb/s "
                 "[S17]. Spectrum-X per-packet adaptive routing (spraying), reordered by the SuperNIC "
                 "[S30][S46]; no in-network reduction. hop_latency_s = 500 ns is a PARAMETER in the "
                 "UNVERIFIED 400-600 ns range [S38].",
           forwarding="adaptive-spray"),
)

#: Read-only name -> entry mappings (canonical names).
GPUS: Mapping[str, GPU] = types.MappingProxyType({g.name: g for g in _GPU_LIST})
NICS: Mapping[str, NIC] = types.MappingProxyType({n.name: n for n in _NIC_LIST})
SWITCHES: Mapping[str, Switch] = types.MappingProxyType({s.name: s for s in _SWITCH_LIST})

_GPU_ALIASES = {f"{n.lower()}-sxm": n for n in ("A100", "H100", "H200", "H800", "B200", "B300")}
_NIC_ALIASES = {
    a: "ConnectX-6" for a in ("cx6", "cx-6", "connectx-6", "connectx6", "cx6-hdr")
} | {
    a: "ConnectX-7" for a in ("cx7", "cx-7", "connectx-7", "connectx7", "cx7-400g")
} | {a: "ConnectX-8" for a in ("cx8", "cx-8", "connectx-8", "connectx8", "cx8-supernic")}
_SWITCH_ALIASES = {
    "nvswitch2": "NVSwitch2", "nvswitch-2": "NVSwitch2", "nvswitch-gen2": "NVSwitch2",
    "nvswitch3": "NVSwitch3", "nvswitch-3": "NVSwitch3", "nvswitch-gen3": "NVSwitch3",
    "nvlink5-switch": "NVLink5-switch", "nvlink5": "NVLink5-switch", "nvlink-switch": "NVLink5-switch",
    "qm9700": "QM9700", "qm9790": "QM9700", "quantum-2": "QM9700",
    "q3400": "Q3400", "q3400-ra": "Q3400", "quantum-x800": "Q3400",
    "sn5600": "SN5600", "spectrum-4": "SN5600", "spectrum-x": "SN5600",
    "qm8700": "QM8700", "quantum-hdr": "QM8700", "quantum-2-nosharp": "QM9700-noSHARP",
    "quantum-x800-nosharp": "Q3400-noSHARP",
}

#: Scale-out fabric name -> (switch name, default NIC name), per hardware.md section 3.1.
SCALEOUT_FABRICS: Mapping[str, tuple[str, str]] = types.MappingProxyType({
    "quantum-2": ("QM9700", "ConnectX-7"),
    "quantum-x800": ("Q3400", "ConnectX-8"),
    "spectrum-x": ("SN5600", "ConnectX-8"),
    "quantum-2-nosharp": ("QM9700-noSHARP", "ConnectX-7"),
    "quantum-x800-nosharp": ("Q3400-noSHARP", "ConnectX-8"),
    "quantum-hdr": ("QM8700", "ConnectX-6"),
    "aws-efa-v1": ("EFA-fabric-100G", "EFA-v1-100G"),
    "aws-efa-v2": ("EFA-fabric-400G", "EFA-v2-100G"),
    "aws-efa-v3": ("EFA-fabric-400G", "EFA-v3-200G"),
    "aws-efa-v4": ("EFA-fabric-400G", "EFA-v4-400G"),
    "gcp-tcpxo": ("GCP-TCPXO-fabric", "TCPXO-200G"),
    "gcp-rdma": ("GCP-RDMA-fabric", "ConnectX-7"),
})

#: Scale-out fabrics whose NIC comes with the cloud instance rather than with the GPU platform: AWS EFA
#: (p4de / p5 / p5en / p6 devices) and GCP GPUDirect-TCPXO (A3 Mega's 8 x 200G NICs). A preset joined by one
#: of them gets the fabric's NIC (and with it the plugin's protocols, algorithms and latencies,
#: collectives.calibration) unless ``nic`` is set; the other fabrics keep the GPU platform's NIC.
CLOUD_NIC_FABRICS: frozenset[str] = frozenset({"aws-efa-v1", "aws-efa-v2", "aws-efa-v3", "aws-efa-v4", "gcp-tcpxo"})

# hardware.md section 3.1: DGX H100/H200/B200 8 x CX-7 [S9][S6], GB200 tray 4 x CX-7 [S16],
# DeepSeek H800 cluster 8 x CX-7 [S35], DGX B300 8 x CX-8 [S15], GB300 NVL72 CX-8 [S23-ent].
# DGX A100 8 x CX-6 HDR [S-DGXA100]; H20 boards with NDR IB (CX-7) as measured in nccl #1244 [S29].
_DEFAULT_NIC = {
    "A100": "ConnectX-6", "H20": "ConnectX-7", "H100": "ConnectX-7", "H200": "ConnectX-7", "H800": "ConnectX-7",
    "B200": "ConnectX-7", "GB200": "ConnectX-7", "B300": "ConnectX-8", "GB300": "ConnectX-8",
}

#: Precisions accepted by :func:`peak_flops`, and the peak field each one uses.
PRECISIONS: Mapping[str, str] = types.MappingProxyType({
    "bf16": "peak_bf16_flops",
    "fp8": "peak_fp8_flops",
    "mxfp8": "peak_fp8_flops",
    "fp4": "peak_fp4_flops",
    "nvfp4": "peak_nvfp4_flops",
})


def gpu(name: str) -> GPU:
    """Look up a GPU by name, case-insensitively (``"h100"``, ``"H100-SXM"``).

    Raises
    ------
    SpecError
        If the name is not in the catalog; the message lists the known names.

    Examples
    --------
    >>> gpu("gb200").nvswitch_chips
    18
    """
    return _lookup(name, "gpu", GPUS, _GPU_ALIASES)


def nic(name: str) -> NIC:
    """Look up a NIC by name or alias (``"cx7"``, ``"CX-8"``, ``"connectx-7"``).

    Examples
    --------
    >>> nic("CX-7").name
    'ConnectX-7'
    """
    return _lookup(name, "nic", NICS, _NIC_ALIASES)


def switch(name: str) -> Switch:
    """Look up a switch by name or alias (``"quantum-2"``, ``"spectrum-x"``, ``"nvlink5"``).

    Examples
    --------
    >>> switch("spectrum-x").name
    'SN5600'
    """
    return _lookup(name, "switch", SWITCHES, _SWITCH_ALIASES)


def scaleout_switch(fabric_name: str) -> tuple[Switch, NIC]:
    """Return the (switch, default NIC) of a scale-out fabric.

    Parameters
    ----------
    fabric_name : str
        ``"quantum-2"``, ``"quantum-x800"`` or ``"spectrum-x"`` (case-insensitive).

    Examples
    --------
    >>> sw, n = scaleout_switch("Quantum-X800")
    >>> sw.name, n.name
    ('Q3400', 'ConnectX-8')
    """
    k = _key(fabric_name, "fabric", SCALEOUT_FABRICS)
    if k not in SCALEOUT_FABRICS:
        raise SpecError(
            f"fabric: {fabric_name!r} is not a known scale-out fabric; known: {', '.join(SCALEOUT_FABRICS)}"
        )
    sw, n = SCALEOUT_FABRICS[k]
    return SWITCHES[sw], NICS[n]


def default_nic(gpu_name: str) -> NIC:
    """Return the NIC that the reference systems pair with this GPU (one per GPU).

    Examples
    --------
    >>> default_nic("GB300").name
    'ConnectX-8'
    """
    return NICS[_DEFAULT_NIC[gpu(gpu_name).name]]


def peak_flops(gpu_spec: GPU | str, precision: str) -> float:
    """Dense peak FLOP/s of a GPU at a precision.

    ``mxfp8`` uses the FP8 peak (MX block scaling is a Blackwell tensor-core
    feature; for Hopper the FP8 peak is only an upper bound). ``nvfp4`` uses the
    separately quoted NVFP4 peak where a source gives one, else the FP4 peak.

    Parameters
    ----------
    gpu_spec : GPU or str
        A :class:`GPU` or a name for :func:`gpu`.
    precision : str
        One of ``bf16``, ``fp8``, ``mxfp8``, ``fp4``, ``nvfp4`` (case-insensitive).

    Raises
    ------
    SpecError
        If the precision is unknown or the GPU has no peak at that precision.

    Examples
    --------
    >>> peak_flops("H100", "bf16")
    989000000000000.0
    >>> peak_flops("B200", "nvfp4")
    1e+16
    """
    g = gpu_spec if isinstance(gpu_spec, GPU) else gpu(gpu_spec)
    p = precision.strip().lower() if isinstance(precision, str) else precision
    if p not in PRECISIONS:
        raise SpecError(f"precision: {precision!r} is not allowed; known: {', '.join(PRECISIONS)}")
    value = getattr(g, PRECISIONS[p])
    if value is None and p == "nvfp4":
        value = g.peak_fp4_flops
    if value is None:
        have = [q for q, f in PRECISIONS.items() if getattr(g, f) is not None or (q == "nvfp4" and g.peak_fp4_flops)]
        raise SpecError(f"precision: {g.name} has no {p} peak in the catalog; available: {', '.join(have)}")
    return value
