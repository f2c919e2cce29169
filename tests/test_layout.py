"""Parallel layout and placement: sizes, Megatron-Core rank order, domains, pipeline layouts."""

from __future__ import annotations

import itertools

import pytest

from topologies.errors import SpecError
from workloads.layout import (Layout, cluster_for, default_gpus_per_domain, place, stage_of_virtual,
                              virtual_stages)


def _megatron_groups(world, order, sizes, kind):
    """Independent reconstruction of Megatron-Core's RankGenerator: rank = sum(coord_i * stride_i)
    over ``order`` (innermost first); a group of ``kind`` varies its coordinate, the others fixed."""
    strides, s = {}, 1
    for name in order:
        strides[name] = s
        s *= sizes[name]
    assert s == world
    others = [n for n in order if n != kind]
    out = set()
    for fixed in itertools.product(*(range(sizes[n]) for n in others)):
        base = sum(c * strides[n] for c, n in zip(fixed, others))
        out.add(tuple(sorted(base + i * strides[kind] for i in range(sizes[kind]))))
    return out


@pytest.mark.parametrize("tp,cp,pp,ep,etp", [(2, 1, 2, 4, 1), (1, 2, 2, 2, 2), (4, 1, 1, 8, 1)])
def test_groups_match_megatron_rank_generator(tp, cp, pp, ep, etp):
    lay = Layout(gpus=32, tp=tp, cp=cp, pp=pp, ep=ep, etp=etp, global_batch=64, seq_len=1024)
    pl = place(lay, gpus_per_domain=8)
    dense = {"tp": tp, "cp": cp, "dp": lay.dp, "pp": pp}
    expert = {"etp": etp, "ep": ep, "edp": lay.edp, "pp": pp}
    for kind in ("tp", "cp", "dp", "pp"):
        assert {tuple(sorted(g)) for g in pl.groups(kind)} == _megatron_groups(32, ["tp", "cp", "dp", "pp"], dense, kind)
    for kind in ("etp", "ep", "edp"):
        assert {tuple(sorted(g)) for g in pl.groups(kind)} == _megatron_groups(32, ["etp", "ep", "edp", "pp"], expert,
                                                                              kind)


def test_groups_partition_the_world():
    lay = Layout(gpus=64, tp=2, pp=4, ep=4, global_batch=64)
    pl = place(lay, gpus_per_domain=8)
    for kind in ("tp", "dp", "ep", "edp", "pp", "dpcp"):
        ranks = sorted(r for g in pl.groups(kind) for r in g)
        assert ranks == list(range(64)), kind


def test_impossible_layouts_name_the_numbers():
    with pytest.raises(SpecError, match=r"--gpus 100: not divisible by tp\*cp\*pp = 8\*1\*1 = 8"):
        Layout(gpus=100, tp=8, global_batch=8)
    with pytest.raises(SpecError, match="--ep 64"):
        Layout(gpus=64, ep=64, pp=2, global_batch=64)
    with pytest.raises(SpecError, match="--global-batch 100"):
        Layout(gpus=16, global_batch=100)
    lay = Layout(gpus=512, ep=512, global_batch=512)
    with pytest.raises(SpecError, match="exceeds the model's 256 experts"):
        lay.check_model(layers=61, heads=128, kv_heads=128, experts=256, ffn=18432)


def test_ep_in_domain_and_default_gpus_per_domain():
    lay = Layout(gpus=256, pp=2, vpp=8, ep=32, global_batch=4096)
    assert default_gpus_per_domain("GB300", lay) == 64       # 2 EP groups of 32 per rack, not 72
    assert place(lay, gpus_per_domain=64, ep_in_domain=True).spans("ep") == 1
    with pytest.raises(SpecError, match="EP groups of 32 GPUs span 2 domains"):
        place(lay, gpus_per_domain=72, ep_in_domain=True)
    spread = place(lay, gpus_per_domain=64, mode="spread")
    assert spread.spans("ep") == 4 and spread.domains == 4
    name, sets = cluster_for("gb300-nvl72", place(lay, gpus_per_domain=64), {"scaleout": "quantum-2"})
    assert sets == {"domains": 4, "gpus_per_domain": 64, "scaleout": "quantum-2"}


def test_virtual_stages_cover_every_layer_once():
    moe = [i >= 3 for i in range(61)]
    for lay in (Layout(gpus=256, pp=2, vpp=8, ep=32, global_batch=4096), Layout(gpus=16, pp=16, global_batch=16),
                Layout(gpus=8, pp=4, vpp=4, global_batch=64)):
        stages = virtual_stages(moe, 1, lay)
        assert len(stages) == lay.pp * lay.vpp
        flat = [k for s in stages for k in s]
        assert flat.count("moe") == 58 and flat.count("dense") == 3 and flat.count("mtp") == 1
        assert stages[0][0] == "embed" and stages[-1][-1] == "head"
    own = virtual_stages([False] * 6, 0, Layout(gpus=4, pp=4, vpp=2, global_batch=8))
    assert own[0] == ["embed"] and own[-1] == ["head"] and sum(len(s) for s in own) == 8
    lay = Layout(gpus=256, pp=2, vpp=8, ep=32, global_batch=4096)
    assert virtual_stages(moe, 1, lay) == virtual_stages(moe, 1, lay, "Et*4|(t*4|)*14tmL")
    with pytest.raises(SpecError, match=r"--pp-layout: 'Et\*4\|\(t\*4\|\)\*13tmL' has 15 stage\(s\) .* "
                                        r"pp x chunks = 2 x 8 needs 16"):
        virtual_stages(moe, 1, lay, "Et*4|(t*4|)*13tmL")
    assert [stage_of_virtual(v, lay)[0] for v in range(4)] == [0, 1, 0, 1]
