"""Fidelity round 5, multi-rack NVL72 (issue 8): what the rack-scale rows ran, and LL128 over C2C NICs.

* NCCL up to 2.26.x sees a GB200 tray's GPU -> ConnectX-7 path (C2C to Grace, then Grace's PCIe) as
  PATH_PHB and enables LL128 only up to PATH_PXN, so rings and trees across NVL72 domains run LL and
  Simple only; 2.27.3 adds PATH_P2C and NCCL_LL128_C2C=1 (nccl_model.LL128_C2C_FROM).
* The rack rows run the job settings of the commits that produced their logs (published_points.toml).
"""

import dataclasses
import tomllib
from pathlib import Path

from collectives import Collective, run
from collectives import nccl_model as nm
from collectives.calibration import calibration
from collectives.runner import planner_for
from collectives.validate import _collective_options, _router

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data"


def _row(table: str, pid: str) -> dict:
    doc = tomllib.loads((DATA / "published_points.toml").read_text())
    [p] = [p for p in doc[table] if p["id"] == pid]
    return p


def _ll128_enabled(system: nm.NcclSystem, algorithm: str) -> bool:
    [e] = nm.algo_times(system, "all_reduce", 1 << 30, algorithms=[algorithm], protocols=["LL128"])
    return e.enabled


def test_gb200_racks_run_no_ll128_across_domains_before_nccl_2_27_3():
    """Two GB200 NVL72 racks over InfiniBand: NCCL 2.26.2 offers no LL128 for Ring or Tree across the
    racks (its GPU -> NIC path goes through Grace), 2.27.3 does; one rack keeps LL128 on NVLink."""
    p = planner_for(_router("gb200-nvl72", {"domains": 2, "scaleout": "quantum-x800-nosharp",
                                            "nic": "ConnectX-7"}))
    two, one = tuple(range(144)), tuple(range(72))
    for algo in ("Ring", "Tree"):
        assert not _ll128_enabled(p.system(two, nvls=False, nccl_version="2.26.2"), algo)
        assert _ll128_enabled(p.system(two, nvls=False, nccl_version="2.27.3"), algo)
        assert _ll128_enabled(p.system(two, nvls=False), algo)  # 2.30.7, the modelled release
    assert _ll128_enabled(p.system(one, nccl_version="2.26.2"), "Ring")
    [e] = nm.algo_times(p.system(two, nvls=False, nccl_version="2.26.2"), "all_reduce", 1 << 30,
                        algorithms=["Ring"], protocols=["LL128"])
    assert "2.27.3" in e.reason


def test_ll128_over_c2c_is_a_property_of_the_gpu_nic_pair():
    """GB200 trays carry ConnectX-7 on the Grace PCIe; GB300 trays put the GPU under the ConnectX-8's own
    PCIe switch (DirectNIC), so NCCL 2.26 keeps LL128 there; no NIC, no C2C rule."""
    assert calibration("GB200", "ConnectX-7").nic_via_c2c
    assert not calibration("GB300", "ConnectX-8").nic_via_c2c
    assert not calibration("GB200").nic_via_c2c
    s = nm.NcclSystem(arch_sm=100, gpus_per_node=4, nnodes=2, nics_per_node=4, nic_Bps=5e10,
                      nccl_version=(2, 26, 2))
    assert _ll128_enabled(s, "Ring")
    assert not _ll128_enabled(dataclasses.replace(s, nic_via_c2c=True), "Ring")
    assert _ll128_enabled(dataclasses.replace(s, nic_via_c2c=True, nccl_version=nm.LL128_C2C_FROM), "Ring")


def test_twenty_rack_run_had_nvls_off_and_nccl_chooses_tree_simple():
    """coreweave/nccl-tests bee97e7 (the commit that added the 20-rack log) runs NCCL 2.26.2 with
    NCCL_NVLS_ENABLE=0; the 1- and 2-rack logs are the February NCCL 2.25.1 run of PR #43 with NVLS on.
    With NVLS off and no LL128 across racks, NCCL 2.26.2's own model on 20 racks picks Tree/Simple."""
    rows = {k: _row("collective", f"cw-gb200-nvl72-{k}-allreduce-by-size") for k in ("1rack", "2rack", "20rack")}
    opts = {k: _collective_options({**r, **r["settings"]}) for k, r in rows.items()}
    assert opts["20rack"]["nvls"] is False and opts["20rack"]["nccl_version"] == "2.26.2"
    for k in ("1rack", "2rack"):
        assert "nvls" not in opts[k] and opts[k]["nccl_version"] == "2.25.1"
    s = nm.NcclSystem(arch_sm=100, gpus_per_node=72, nnodes=20, nics_per_node=72, nic_Bps=5e10,
                      nvls_capable=False, nccl_version=(2, 26, 2), nic_via_c2c=True, cpu_vendor="arm")
    for size in (512 << 20, 1 << 30, 16 << 30):
        best = nm.choose(s, "all_reduce", size)
        assert (best.algorithm, best.protocol) == ("Tree", "Simple")


def test_gb300_roce_net_test_is_bounded_by_the_nic_share_not_nvlink():
    """NVIDIA/aicr's RoCE NET runtime (the job that measured ~387 GB/s on 2 x 4 GB300) disables NVLS and
    MNNVL, so the all-reduce crosses 8 x 400G RoCE ports per tray: busbw is bounded by those ports
    (8 x 50 GB/s per tray), not by NVLink or NVLSTree (591 GB/s before the row said so)."""
    p = _row("collective", "aicr-gb300-2tray-roce-allreduce-8g")
    merged = {**p, **p["settings"]}
    assert merged["NCCL_NVLS_ENABLE"] == "0" and merged["NCCL_MNNVL_ENABLE"] == "0"
    r = _router("gb300-nvl72", {k: p[k] for k in ("domains", "gpus_per_domain", "scaleout", "nic", "planes")})
    [res] = run(r, [Collective("all_reduce", tuple(range(8)), p["size_bytes"], "auto",
                               options=_collective_options(merged))])
    assert "nvls" not in res.algorithm
    assert res.busbw_Bps <= 8 * 50e9


def test_gb200_racks_cross_domains_on_fifteen_nics_before_2_27_3_and_sixteen_after():
    """NCCL 2.27.3's release notes: "Increase to 16 the number of NICs used to communicate between MNNVL
    domains on GB200 systems". One ring / tree channel per NIC; the SM100 inter ladder's top rung went
    48.0 -> 47.9 (search.cc), so 16 x 45.0 GB/s of NVLink beats 15 x 47.9 where it only tied 15 x 48.0."""
    def channels(version):
        s = nm.NcclSystem(arch_sm=100, gpus_per_node=72, nnodes=2, nics_per_node=72, nic_Bps=5e10,
                          nccl_version=version)
        return {e.algorithm: e.nchannels for e in nm.algo_times(s, "all_reduce", 1 << 30,
                                                                  algorithms=["Ring", "Tree"], protocols=["Simple"])}
    assert channels((2, 25, 1)) == channels((2, 26, 2)) == {"Ring": 15, "Tree": 15}
    assert channels((2, 27, 3)) == channels((2, 27, 7)) == channels(None) == {"Ring": 16, "Tree": 16}
    assert nm.sm100_speed_arrays((2, 26, 2))[1][0] == 48.0 and nm.sm100_speed_arrays((2, 27, 3))[1][0] == 47.9
