"""Tests of the hardware catalog: conversions, invariants, lookups, errors."""

from __future__ import annotations

import dataclasses
import re

import pytest

from topologies import catalog
from topologies.catalog import (
    GPUS,
    NICS,
    SOURCES,
    SWITCHES,
    default_nic,
    gpu,
    nic,
    peak_flops,
    scaleout_switch,
    switch,
)
from topologies.errors import SpecError
from topologies.units import parse_bandwidth

ALL_ENTRIES = [*GPUS.values(), *NICS.values(), *SWITCHES.values()]


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=lambda e: e.name)
def test_every_entry_has_sources_with_known_tags(entry):
    assert entry.sources
    for citation in entry.sources:
        tag = re.match(r"\[([^\]]+)\] \S", citation)
        assert tag, citation
        assert tag.group(1) in SOURCES, citation


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=lambda e: e.name)
def test_tags_mentioned_in_notes_are_cited(entry):
    cited = {re.match(r"\[([^\]]+)\]", c).group(1) for c in entry.sources}
    for tag in re.findall(r"\[(S[\w-]+)\]", entry.notes):
        assert tag in cited, (entry.name, tag)


def test_catalog_contents():
    assert set(GPUS) == {"A100", "H100", "H200", "H800", "H20", "B200", "B300", "GB200", "GB300"}
    assert set(NICS) == {"ConnectX-6", "ConnectX-7", "ConnectX-8", "EFA-v1-100G", "EFA-v2-100G", "EFA-v3-200G",
                         "EFA-v4-400G", "TCPXO-200G"}
    assert set(SWITCHES) == {"NVSwitch2", "NVSwitch3", "NVLink5-switch", "QM9700", "Q3400", "SN5600", "QM8700",
                             "QM9700-noSHARP", "Q3400-noSHARP", "EFA-fabric-100G", "EFA-fabric-200G", "EFA-fabric-400G",
                             "GCP-TCPXO-fabric", "GCP-RDMA-fabric"}


@pytest.mark.parametrize(
    "name, bidir",
    [("A100", "600GB/s"), ("H100", "900GB/s"), ("H200", "900GB/s"), ("H800", "400GB/s"), ("H20", "900GB/s"),
     ("B200", "1.8TB/s"), ("B300", "1.8TB/s"), ("GB200", "1.8TB/s"), ("GB300", "1.8TB/s")],
)
def test_nvlink_is_half_the_bidirectional_marketing_figure(name, bidir):
    assert gpu(name).nvlink_Bps == pytest.approx(parse_bandwidth(bidir) / 2)


def test_nvlink_per_direction_values():
    assert gpu("H100").nvlink_Bps == 450e9
    assert gpu("B200").nvlink_Bps == 900e9
    assert gpu("GB300").nvlink_Bps == 900e9
    assert gpu("H800").nvlink_Bps == 200e9
    assert gpu("A100").nvlink_Bps == 300e9


@pytest.mark.parametrize("g", GPUS.values(), ids=lambda g: g.name)
def test_links_per_chip_sum_to_links(g):
    assert len(g.links_per_chip) == g.nvswitch_chips
    assert sum(g.links_per_chip) == g.nvlink_links


@pytest.mark.parametrize("g", GPUS.values(), ids=lambda g: g.name)
def test_gpu_fields_consistent(g):
    expected_sm = {"ampere": 80, "hopper": 90, "blackwell": 100}[g.arch]
    assert g.sm == expected_sm
    assert g.nccl_nvlink_link_Bps == {80: 20.0e9, 90: 20.6e9, 100: 40.1e9}[g.sm]
    # NCCL's model constant sits below the spec per-link bandwidth
    assert g.nccl_nvlink_link_Bps < g.nvlink_link_Bps
    for measured in (g.mamf_bf16_flops, g.nvlink_measured_Bps):
        if measured is not None:
            spec = g.peak_bf16_flops if measured is g.mamf_bf16_flops else g.nvlink_Bps
            assert 0.5 * spec < measured < spec
    if g.mamf_fp8_flops is not None:
        assert 0.5 * g.peak_fp8_flops < g.mamf_fp8_flops < g.peak_fp8_flops
    assert (g.peak_fp8_flops is None) == (g.arch == "ampere")
    assert (g.peak_fp4_flops is None) == (g.arch != "blackwell")


def test_nvl72_chip_ports_match_switch():
    sw = switch("NVLink5-switch")
    for name in ("GB200", "GB300"):
        g = gpu(name)
        assert g.domain_gpus == 72 and g.nvswitch_chips == 18
        for links in g.links_per_chip:
            assert g.domain_gpus * links == sw.ports
    # a tray (2 chips) is 144 ports, 14.4 TB/s bidirectional
    assert 2 * sw.ports == 144
    assert 2 * sw.capacity_Bps * 2 == pytest.approx(parse_bandwidth("14.4TB/s"))
    # 72 GPUs x 1.8 TB/s bidir = 130 TB/s aggregate (rounded in the marketing)
    assert 72 * gpu("GB200").nvlink_Bps * 2 == pytest.approx(130e12, rel=0.01)


@pytest.mark.parametrize("name", ["H100", "H200", "H800"])
def test_hgx_hopper_fits_nvswitch3(name):
    g, sw = gpu(name), switch("NVSwitch3")
    assert g.domain_gpus == 8
    for links in g.links_per_chip:
        assert g.domain_gpus * links <= sw.ports
    assert sw.port_Bps == g.nvlink_link_Bps
    assert sw.capacity_Bps * 2 == pytest.approx(parse_bandwidth("3.2TB/s"))


def test_hgx_blackwell_board_total():
    for name in ("B200", "B300"):
        g = gpu(name)
        assert g.domain_gpus * g.nvlink_Bps * 2 == pytest.approx(parse_bandwidth("14.4TB/s"))
        for links in g.links_per_chip:
            assert g.domain_gpus * links <= switch("nvlink5").ports


def test_nic_rates():
    assert nic("cx7").line_rate_Bps == 50e9 == parse_bandwidth("400Gb/s")
    assert nic("cx8").line_rate_Bps == 100e9 == parse_bandwidth("800Gb/s")
    # PCIe Gen5 x16: 32 GT/s x 16 x 128/130 / 8
    assert nic("cx7").host_Bps == pytest.approx(63.0e9, rel=1e-3)
    assert nic("cx8").host_Bps == pytest.approx(121e9, rel=1e-3)
    cx7 = nic("cx7")
    assert 46e9 <= cx7.measured_goodput_Bps <= 48e9 < cx7.line_rate_Bps
    for n in NICS.values():
        assert n.host_Bps > n.line_rate_Bps


def test_switch_values():
    assert switch("QM9700").capacity_Bps * 2 * 8 == pytest.approx(51.2e12)  # 51.2 Tb/s bidir
    assert switch("Q3400").capacity_Bps * 8 == pytest.approx(115.2e12)
    assert switch("SN5600").capacity_Bps * 8 == pytest.approx(51.2e12)
    assert switch("SN5600").in_network_reduction is None
    assert switch("QM9700").in_network_reduction == "sharpv3"
    assert switch("Q3400").in_network_reduction == "sharpv4"
    assert {s.family for s in SWITCHES.values()} == {"nvswitch", "infiniband", "ethernet"}
    for s in SWITCHES.values():
        assert 50e-9 <= s.hop_latency_s <= 600e-9
        assert "UNVERIFIED" in s.notes
    ib, eth = switch("quantum-2").hop_latency_s, switch("spectrum-4").hop_latency_s
    assert 200e-9 <= ib <= 300e-9 and 400e-9 <= eth <= 600e-9


@pytest.mark.parametrize(
    "func, alias, canonical",
    [
        (gpu, "h100", "H100"), (gpu, " gb300 ", "GB300"), (gpu, "H100-SXM", "H100"), (gpu, "b200", "B200"),
        (nic, "cx7", "ConnectX-7"), (nic, "CX-7", "ConnectX-7"), (nic, "connectx-7", "ConnectX-7"),
        (nic, "cx8", "ConnectX-8"), (nic, "ConnectX-8", "ConnectX-8"), (nic, "CX-8", "ConnectX-8"),
        (switch, "quantum-2", "QM9700"), (switch, "Quantum-X800", "Q3400"), (switch, "spectrum-x", "SN5600"),
        (switch, "Spectrum-4", "SN5600"), (switch, "nvswitch-gen3", "NVSwitch3"),
        (switch, "nvlink5", "NVLink5-switch"), (switch, "qm9700", "QM9700"),
    ],
)
def test_lookup_aliases(func, alias, canonical):
    assert func(alias).name == canonical


@pytest.mark.parametrize(
    "func, field, table",
    [(gpu, "gpu", GPUS), (nic, "nic", NICS), (switch, "switch", SWITCHES)],
)
def test_unknown_name_error_lists_known(func, field, table):
    with pytest.raises(SpecError) as exc:
        func("H900")
    msg = str(exc.value)
    assert msg.startswith(f"{field}: 'H900' is not in the catalog; known: ")
    assert msg.endswith(", ".join(table))
    assert "\n" not in msg
    with pytest.raises(SpecError, match=f"^{field}: "):
        func(None)


def test_gpu_error_message_exact():
    with pytest.raises(SpecError, match=r"^gpu: 'H900' is not in the catalog; known: A100, H100, H200, H800, H20, B200, B300, GB200, GB300$"):
        gpu("H900")


def test_scaleout_switch():
    cases = {"quantum-2": ("QM9700", "ConnectX-7"), "quantum-x800": ("Q3400", "ConnectX-8"),
             "spectrum-x": ("SN5600", "ConnectX-8")}
    for fabric, (sw, n) in cases.items():
        got = scaleout_switch(fabric.upper())
        assert (got[0].name, got[1].name) == (sw, n)
    with pytest.raises(SpecError, match=r"^fabric: 'omnipath' .*known: quantum-2, quantum-x800, spectrum-x, "
                                        r"quantum-2-nosharp, quantum-x800-nosharp, quantum-hdr, aws-efa-v1, aws-efa-v2, aws-efa-v3, "
                                        r"aws-efa-v4, gcp-tcpxo, gcp-rdma$"):
        scaleout_switch("omnipath")


@pytest.mark.parametrize(
    "name, expected",
    [("A100", "ConnectX-6"), ("H20", "ConnectX-7"), ("H100", "ConnectX-7"), ("H200", "ConnectX-7"), ("H800", "ConnectX-7"),
     ("B200", "ConnectX-7"), ("GB200", "ConnectX-7"), ("B300", "ConnectX-8"), ("GB300", "ConnectX-8")],
)
def test_default_nic(name, expected):
    assert default_nic(name.lower()).name == expected


def test_default_nic_unknown_gpu():
    with pytest.raises(SpecError, match=r"^gpu: 'X1'"):
        default_nic("X1")


def test_peak_flops():
    assert peak_flops("H100", "bf16") == 989e12
    assert peak_flops(gpu("H100"), "FP8") == 1979e12
    assert peak_flops("GB300", "mxfp8") == peak_flops("GB300", "fp8") == 5000e12
    assert peak_flops("B200", "fp4") == 9000e12
    assert peak_flops("B200", "nvfp4") == 10000e12
    assert peak_flops("GB200", "nvfp4") == peak_flops("GB200", "fp4") == 10000e12
    with pytest.raises(SpecError, match=r"^precision: A100 has no fp8 peak.*available: bf16$"):
        peak_flops("A100", "fp8")
    with pytest.raises(SpecError, match=r"^precision: H100 has no nvfp4 peak"):
        peak_flops("H100", "nvfp4")
    with pytest.raises(SpecError, match=r"^precision: 'fp16' is not allowed; known: bf16, fp8, mxfp8, fp4, nvfp4$"):
        peak_flops("H100", "fp16")


def test_labels_in_notes():
    assert "UNVERIFIED" in gpu("H100").notes and "5/4/4/5" in gpu("H100").notes
    assert "DERIVED" in gpu("H800").notes
    assert "DERIVED" in gpu("B200").notes
    assert "[S8]" in gpu("GB200").notes  # the disagreeing source is mentioned
    assert "DERIVED" in nic("cx8").notes


@pytest.mark.parametrize("entry", [gpu("H100"), nic("cx7"), switch("QM9700")], ids=lambda e: e.name)
def test_frozen(entry):
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.name = "other"


def test_mappings_read_only():
    with pytest.raises(TypeError):
        GPUS["X"] = gpu("H100")
    with pytest.raises(TypeError):
        SWITCHES["X"] = switch("QM9700")


def test_validation_on_construction():
    h100 = gpu("H100")
    with pytest.raises(SpecError, match="links_per_chip"):
        dataclasses.replace(h100, links_per_chip=(5, 5, 4, 5))
    with pytest.raises(SpecError, match="arch"):
        dataclasses.replace(h100, arch="volta")
    with pytest.raises(SpecError, match="sources"):
        dataclasses.replace(h100, sources=())
    with pytest.raises(SpecError, match="in_network_reduction"):
        dataclasses.replace(switch("QM9700"), in_network_reduction="sharpv9")


def test_module_exports():
    for name in catalog.__all__:
        assert hasattr(catalog, name)
