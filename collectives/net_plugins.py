"""What a net plugin reports to NCCL and what a network step really costs, by NIC (issue 8, rounds 4-7).

NCCL chooses its algorithm and protocol with the latency a net plugin *reports*
(:data:`NET_LATENCY_US`) and the protocols / algorithms the plugin's environment
leaves it (:data:`NET_PROTOCOLS`, :data:`NET_ALGORITHMS`); a run is *charged* the
real cost of a network step (:data:`NET_STEP_LATENCY_US`) and, above the plugin's
eager limit, one rendezvous step (:data:`NET_EAGER_MAX_BYTES`). Each table is keyed
by catalog NIC name (prefix, first match) and carries its source or fit data;
:mod:`collectives.calibration` builds a :class:`~collectives.calibration.Calibration`
from them (and re-exports them under the names the docs use).

Examples
--------
>>> net_latency_us("EFA-v2-100G"), net_latency_us("ConnectX-7")
(75.0, 0.0)
"""

from __future__ import annotations

from topologies import catalog

__all__ = ["NET_LATENCY_US", "net_latency_us", "NET_PROTOCOLS", "net_protocols", "NIC_VIA_C2C",
           "NET_STEP_LATENCY_US", "net_step_latency_us", "NET_ALGORITHMS", "net_algorithms",
           "NET_EAGER_MAX_BYTES", "net_eager_max_bytes", "net_rendezvous_s", "net_key",
           "NET_TUNER_PROTOCOLS", "net_tuner_protocols"]


def net_key(table: dict, nic_name: str | None):
    """The key of ``table`` that the catalog name of ``nic_name`` starts with (first match), or None."""
    if not nic_name:
        return None
    name = catalog.nic(nic_name).name
    return next((k for k in table if name.startswith(k)), None)


#: Per-step network latency that a net plugin REPORTS to NCCL (``ncclNetProperties.latency``, us), by NIC
#: (catalog NIC name prefix; first match wins). It only steers NCCL's choice: NCCL adds it to the latency of
#: every network step of its cost table (``latencyInter``, twice for Simple; tuning.cc), so it moves the
#: algorithm / protocol switch points. The time a run then takes is charged with :data:`NET_STEP_LATENCY_US`.
#: NCCL's IB plugin reports 0 (net_ib/init.cc l.558). aws-ofi-nccl (aws/aws-ofi-nccl src/platform-aws.c[pp]
#: ``platform_data_map``): p4d / p4de / p5 (EFA v1 / v2) 75.0 in every release from v1.7.x to today;
#: p5en and p6 (EFA v3 / v4) 75.0 up to v1.15 and 35.0 from v1.16.0 (commit 2496e7de, 2025-05-23, "Updating
#: latency value for p5en and p6 based on empirical search"), the release modelled here. GPUDirect-TCPXO:
#: the FasTrak plugin reports ``props.latency = 0`` (google/nccl-plugin-gpudirect-tcpxo
#: tcpdirect_plugin/fastrak_offload/nccl_shim.cc ``GetProperties``, releases v1.0.12-v1.0.17; read in round 4),
#: and with its profile (:data:`NET_ALGORITHMS`: Ring and Tree, Simple) a reported latency would barely move
#: NCCL's choice on two nodes anyway (Ring and Tree both cross the network twice per all-reduce there).
NET_LATENCY_US = {"EFA-v1": 75.0, "EFA-v2": 75.0, "EFA-v3": 35.0, "EFA-v4": 35.0, "TCPXO": 0.0}


def net_latency_us(nic_name: str | None) -> float:
    """``latencyInter`` the NIC's net plugin reports to NCCL, us (0 for InfiniBand/RoCE ConnectX)."""
    if not nic_name:
        return 0.0
    name = catalog.nic(nic_name).name
    return next((v for k, v in NET_LATENCY_US.items() if name.startswith(k)), 0.0)



#: Protocols a net plugin leaves NCCL (``NCCL_PROTO`` it sets), by NIC; NICs not listed: all three.
#: aws-ofi-nccl forces ``NCCL_PROTO=simple`` when the EFA endpoint does not guarantee 128-byte in-order
#: delivery, which LL / LL128 need (src/platform-aws.cpp ``platform_config_endpoint``: "force the simple
#: protocol as the LL/LL128 protocols can lead to data corruption without data delivery ordering"; the
#: same check since v1.7.3-aws). On p4d / p4de (EFA v1, SENDRECV protocol) the option is not supported:
#: aws/aws-ofi-nccl issue #715, p4d.24xlarge log, 1.11.0-aws: "Setting
#: FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES not supported. / Setting NCCL_PROTO to "simple""; AWS in
#: issue #76 (2021): "EFA doesn't support LL and LL128 variants". P5 reports the ordering (commit
#: ece41f0c, 2024: "EFA now reports WRITE_IN_ORDER_ALIGNED_128_BYTES for this platform"), P5en skips the
#: check (ef08e658): LL / LL128 stay on there.
#: GPUDirect-TCPXO (GCP A3 Mega): Google's NCCL environment profile for the FasTrak plugin
#: (``nccl-env-profile.sh``, which the TCPXO test recipes source) runs Simple only; LL128 is an opt-in
#: profile of plugin images from 2025-02-06 on (container-engine-accelerators gpudirect-tcpxo
#: best-practice.md, "Enable LL128": ``nccl-env-profile-ll128.sh`` differs by ``NCCL_PROTO=Simple,LL128``);
#: Google's own A3 Mega container env sets ``NCCL_PROTO=Simple`` (cluster-toolkit
#: examples/machine-learning/a3-megagpu-8g/nemo-framework/Dockerfile, b7607b0 .. e4da724).
NET_PROTOCOLS: dict[str, tuple[str, ...]] = {"EFA-v1-100G": ("Simple",), "TCPXO-200G": ("Simple",)}



#: Round 5 (multi-rack NVL72): (GPU, NIC) pairs whose GPU reaches the NIC through the CPU's C2C link and
#: the CPU's PCIe, which NCCL's topology sees as PATH_PHB up to 2.26.x and PATH_P2C from 2.27.3
#: (``nccl_model.LL128_C2C_FROM``). GB200 compute tray: 2 Grace + 4 Blackwell, 4 x ConnectX-7 on the
#: Grace PCIe (catalog source S16; NCCL paths.cc @ v2.26.2-1 "On C2C platforms we can still use GDRDMA
#: on NICs connected to the CPUs"). Not GB300 + ConnectX-8: the GPU sits under the CX-8's own PCIe
#: switch (DirectNIC), a PIX path.
NIC_VIA_C2C: frozenset[tuple[str, str]] = frozenset({("GB200", "ConnectX-7")})


def net_protocols(nic_name: str | None) -> tuple[str, ...] | None:
    """Protocols the NIC's net plugin leaves NCCL, or None (all).

    Examples
    --------
    >>> net_protocols("EFA-v1-100G"), net_protocols("EFA-v2-100G")
    (('Simple',), None)
    """
    if not nic_name:
        return None
    return NET_PROTOCOLS.get(catalog.nic(nic_name).name)



# ---- Round 6 (issue 8, network transports): what a net plugin reports vs what a network step costs.
# Kept apart from the tables above so that branches merge.

#: Real time of one network step (us) that the flow model charges, by NIC name prefix (NICs not listed:
#: 0, as NCCL's IB plugin, whose steps cost NCCL's own hardware latency only). It enters NCCL's latency
#: formula in place of the reported :data:`NET_LATENCY_US` (same count of network steps, twice for
#: Simple), so a reported latency steers NCCL's choice without being charged as time, and the step
#: cost is charged whatever NCCL would have chosen; it is also the network term of NCCL's point-to-point
#: step (``Planner.p2p_latency_s``). Fitted on FIT rows only, grid search of the mean |busbw error|
#: (``python benchmarks/fit_collective_constants.py net-latency``; docs/collectives.md, "Round 6, network
#: transports"). EFA: one constant for SRD over every EFA generation, on the fit-split EFA sweeps
#: aws-p5-2node-efa-allreduce-by-size, mle-p6b200-4node-efa-allreduce-auto-by-size and the five
#: awsgpucomm-p5 all-to-all sweeps (65 values): 40 us 13.4 %, 60 us 9.4 %, 75 us 8.1 %, 90 us 8.9 %;
#: the p5 sweep alone prefers 50 us and the p6-b200 sweep alone 80 us. TCPXO, on
#: gcp-a3mega-2node-tcpxo-allreduce-by-size (14 values, reported latency 0), before the merge with the
#: tree/Simple fill (trees.tree_fill_s): 120 us 20.7 %, 160 us 18.6 %, 200 us 21.7 % -> 160 us.
#: Joint refit after the merge (fill and NVLS terms in place; docs, "Round 6, joint refit after the
#: merge"): EFA, same 65 values: 0 us 46.0 %, 20 23.4, 35 15.3, 50 10.9, 60 9.4, 70 8.4, **75 8.1**,
#: 80 8.2, 90 8.9 % -> 75 us unchanged (no EFA fit row runs tree/Simple, so the fill moves none of them;
#: 75 us is what aws-ofi-nccl reports for p4d / p5, not the 35 us it reports for p6-b200). TCPXO, same
#: 14 values, with the merged fill: **0 us 17.7 %**, 20 21.9, 40 25.3, 60 28.1, 80 30.6, 100 32.7,
#: 120 34.6, 160 37.9 %; with the fill's two-node form (trees.tree_fill_s: network levels W/2 each way,
#: hops at the rates without treeCorrectionFactor): **0 us 7.0 %**, 20 11.4, 40 16.7, 60 20.9, 80 24.3,
#: 100 27.2, 120 29.7, 160 33.9 % -> 0 us, what the FasTrak plugin reports: with the fill charged, the
#: 160 us stand-in was the fill counted twice. The grid's optimum is at its floor: the same log's
#: 16-256 B all-reduces take 123 us (the model: 93 us), so some per-step cost exists that the 1-8 MiB
#: points, still under-predicted by 10-31 % (the fill), do not let a grid see.
#: Re-grid with the rows' sourced ``NCCL_BUFFSIZE=8388608`` (Google's v1.0.3 release notes; docs, "Round 6,
#: A3 Mega settings"), same 14 values: **0 us 19.7 %**, 20 24.8, 40 29.0, 60 32.2, 80 34.8, 100 36.9,
#: 120 38.8, 160 42.0 % -> 0 us unchanged; the 1 MiB step doubles the fill and every point from 4 MiB is
#: now under-predicted (-38..-5 %), which no step cost (>= 0) can lower.
#: Round 7 (GCP, tree fill): with the fill's chain hops alone at the channel's whole rate (trees.fill_hop_rate)
#: the fit row is within 4 % from 32 MiB up and too fast by a near-constant 56-82 us at 1-16 MiB, which a step
#: cost can now see. Grid (``python benchmarks/fit_collective_constants.py tcpxo-step``) over every measured
#: value of the fit source: the row's 14 values and the same log's 16-256 B all-reduces (123.0-123.6 us,
#: out-of-place; not in the row, which starts at 1 MiB): 0 us 15.7 %, 5 7.1, **7.5 3.9**, 8 4.0, 9 4.5, 10 5.0,
#: 12.5 6.0, 15 7.2 % -> **7.5 us** (the row alone: 15 us 2.8 %, 7.5 us 5.2 %; the small sizes alone: 7.5 us,
#: 0.3 %). Charged twice per Simple network step (NCCL's count), i.e. ~15 us per network message of the
#: TCPXO path; the plugin still reports 0 (``NET_LATENCY_US``).
#: Round 7 (AWS EFA; docs/collectives.md, "Round 7 (2026-12-02), AWS EFA"): split by the platforms that
#: aws-ofi-nccl's own ``platform_data_map`` reports alike, each fitted on its own fit rows, with the rendezvous
#: of messages above the plugin's eager limit charged apart (:data:`NET_EAGER_MAX_BYTES`). ``EFA-v1`` /
#: ``EFA-v2`` (p4d / p4de / p5, 100 Gb/s SRD devices, reported 75 us in every release): the 53 fit values of the
#: AWS p5 sweeps (aws-p5-2node-efa-allreduce-by-size, its sub-MiB part aws-p5-2node-efa-allreduce-small-by-size,
#: the five awsgpucomm-p5 all-to-all sweeps), with the rendezvous: 15 us 12.8 %, 20 9.8, 22 8.9, 25 7.9,
#: **30 7.7 %** (max 22.5 %), 35 8.0, 40 8.4, 50 9.4, 75 12.9 % -> 30 us (without it: 30 us 9.6 %, 40 us 7.5 %
#: (max 27.1 %), 50 7.6, 75 9.5 %: a tie on these rows; the rendezvous is kept for its source and the floor). The same log's 8-byte - 1 KiB all-reduces (65-75 us: NCCL's 26 us of non-network latency for tree/LL
#: plus two network steps, all eager) bound a step at ~22-25 us. ``EFA`` (p5en / p6, 200 / 400 Gb/s devices,
#: reported 35 us from v1.16.0): the 17 fit values of mle-p6b200-4node (all sizes and the sub-MiB part, with the
#: rows' one-call host overhead), with the rendezvous: 50 us 12.5 %, 55 9.2, **60 7.9 %**, 65 8.3, 70 10.2,
#: 75 11.9 % -> 60 us (without it: 60 us 14.2 %, 75 us 8.1 %, 80 8.3 %): that run's AWS region tuner (NCCL_TUNER_PLUGIN=ofi, 4 nodes) chooses by its
#: own tables, not modelled, so this value also stands in for its choices.
NET_STEP_LATENCY_US: dict[str, float] = {"EFA-v1": 30.0, "EFA-v2": 30.0, "EFA": 60.0, "TCPXO": 7.5}

#: Algorithms a net plugin's environment profile leaves NCCL (``NCCL_ALGO``), by NIC; NICs not listed: all.
#: GPUDirect-TCPXO (GCP A3 Mega): the FasTrak plugin bundles of 2024-2025 (nccl-plugin-gpudirecttcpx-dev
#: v1.0.3 in both TCPXO sources: lessizzmore/create-a3mega-ztan-fork startup_script.sh @ 346b825
#: ``NCCL_PLUGIN_IMAGE=...:v1.0.3``, GoogleCloudPlatform/container-engine-accelerators
#: gpudirect-tcpxo/nccl-test-latest.yaml @ 089e022) ship ``nccl-env-profile.sh``, which the nccl-tests
#: recipes source (the fork's README.md: ``source /var/lib/tcpxo/lib64/nccl-env-profile.sh`` then
#: ``HOST_VARS=$(... ${!NCCL*} ...)``, the ``-x ${HOST_VARS}`` of its test log); that profile exports
#: ``NCCL_ALGO=Ring,Tree``, ``NCCL_PROTO=Simple``, ``NCCL_MIN_NCHANNELS=4`` and ``NCCL_NVLS_ENABLE=0``, and
#: its guest-config checker enforces the first three (``check_policy: POLICY_ENFORCED``). NVLSTree / LL128
#: became the default only with plugin v1.0.12 (2025-08-21; container-engine-accelerators
#: gpudirect-tcpxo/best-practice.md @ 3aa66cb, "Use NVLSTree and LL128"), later than both sources.
NET_ALGORITHMS: dict[str, tuple[str, ...]] = {"TCPXO-200G": ("Ring", "Tree")}



def net_step_latency_us(nic_name: str | None) -> float:
    """:data:`NET_STEP_LATENCY_US` of the NIC's transport, us (0 where not listed).

    Examples
    --------
    >>> net_step_latency_us("ConnectX-7"), net_step_latency_us(None)
    (0.0, 0.0)
    """
    key = net_key(NET_STEP_LATENCY_US, nic_name)
    return NET_STEP_LATENCY_US[key] if key is not None else 0.0


def net_algorithms(nic_name: str | None) -> tuple[str, ...] | None:
    """Algorithms the NIC's net plugin profile leaves NCCL, or None (all).

    Examples
    --------
    >>> net_algorithms("TCPXO-200G"), net_algorithms("ConnectX-7")
    (('Ring', 'Tree'), None)
    """
    if not nic_name:
        return None
    return NET_ALGORITHMS.get(catalog.nic(nic_name).name)


# ---- Round 7 (issue 8, AWS EFA): the net plugin's eager limit. Kept apart from the tables above so that
# branches merge (docs/collectives.md, "Round 7 (2026-12-02), AWS EFA").

#: Largest message (bytes) the net plugin sends without waiting for the receiver, by NIC name prefix (first
#: match wins; NICs not listed: no rendezvous term). aws-ofi-nccl's RDMA protocol sends a message eagerly only
#: when the receiver's control message (the address to write to) has not arrived yet and the message is at most
#: ``OFI_NCCL_EAGER_MAX_SIZE`` bytes (default 8192: include/nccl_ofi_param.h v1.8.1-aws .. v1.21.1); a larger
#: message waits for that control message (src/nccl_ofi_rdma.c[pp] ``send``: "Determine if this should be sent
#: eagerly": ``(!have_ctrl && size <= eager_max_size) || (size == 0)``), which the receiver sends when NCCL
#: posts the receive. NCCL's proxies post their receives when the operation starts and keep NCCL_STEPS of them
#: posted, so the FIRST network message of an operation waits one network step more, the later ones find their
#: control message waiting: one step per operation (:func:`net_rendezvous_s`). Time the run takes, not a term
#: of NCCL's choice. Platforms on the RDMA protocol: p5 / p5e (RDMA from v1.7.x: more EFA devices than GPUs,
#: src/nccl_ofi_net.c @ v1.8.1-aws), p5en and p6 (``default_protocol = "RDMA"``, src/platform-aws.cpp @
#: v1.16.0); p4d / p4de (EFA v1) run ``SENDRECV`` (libfabric tagged messages, the provider's own eager /
#: long-message protocols, not modelled): not listed.
NET_EAGER_MAX_BYTES: dict[str, int] = {"EFA-v2": 8192, "EFA-v3": 8192, "EFA-v4": 8192}



def net_eager_max_bytes(nic_name: str | None) -> int | None:
    """:data:`NET_EAGER_MAX_BYTES` of the NIC's net plugin, or None (no rendezvous term).

    Examples
    --------
    >>> net_eager_max_bytes("EFA-v2-100G"), net_eager_max_bytes("EFA-v1-100G"), net_eager_max_bytes("ConnectX-7")
    (8192, None, None)
    """
    key = net_key(NET_EAGER_MAX_BYTES, nic_name)
    return NET_EAGER_MAX_BYTES[key] if key is not None else None


def net_rendezvous_s(nic_name: str | None, message_bytes: float, step_s: float) -> float:
    """Extra time of one operation whose first network message (``message_bytes`` on the wire) is above the
    plugin's eager limit: one network step ``step_s`` (the wait for the receiver's control message), else 0.

    Examples
    --------
    >>> net_rendezvous_s("EFA-v2-100G", 65536, 30e-6), net_rendezvous_s("EFA-v2-100G", 4096, 30e-6)
    (3e-05, 0.0)
    >>> net_rendezvous_s("ConnectX-7", 1 << 20, 30e-6)
    0.0
    """
    limit = net_eager_max_bytes(nic_name)
    return float(step_s) if limit is not None and message_bytes > limit else 0.0


# ---- Round 8 (issue 8, GCP gIB): the protocol a platform's NCCL tuner plugin sets by collective and size.
# Kept apart from the tables above so that branches merge (docs/collectives.md, "Round 8 (2026-12-02), GCP gIB").

#: Protocol that the platform's NCCL tuner plugin runs, by scale-out switch (``cf.meta["switch"]``, the catalog
#: fabric the GPUs' NICs attach to) and collective: rows ``(collective, from_bytes, protocol)``; from
#: ``from_bytes`` (nccl-tests size) up the tuner sets ``protocol`` and NCCL's argmin picks the algorithm among
#: that protocol's pairs; below it (and for collectives not listed) NCCL's own cost table decides. Across nodes
#: only. Form: NCCL's tuner plugin interface (``NCCL_TUNER_PLUGIN``, from v2.19): ``getCollInfo`` is called
#: per operation with its collective and ``nBytes`` and picks the pair (in later releases by setting entries
#: of the call's cost table); NCCL's ext-tuner/example reads such size ranges as
#: ``collective,minBytes,maxBytes,algorithm,protocol,channels,nNodes,nRanks,...`` rows from
#: ``NCCL_TUNER_CONFIG_FILE``, a protocol without an algorithm being allowed (-1). GCP's RDMA
#: fabric (A3 Ultra / A4, gIB): every gIB environment loads Google's tuner (``source
#: /usr/local/gib/scripts/set_nccl_env.sh`` exports ``NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/
#: tuner_config_a3u.txtpb`` on H200, ``tuner_config_a4.txtpb`` on B200), whose config is not published. Its
#: all-gather row is read off the fit source (gke-a3ultra-2node-rdma, cluster-toolkit dws-flex-start README
#: @ 1047080, 2 x 8 H200): the call takes 64.8 us at 512 KiB and 79.7 / 78.4 us at 1 / 2 MiB (a step up where
#: NCCL's own LL128 estimate grows by 1.6 us), and 1-8 MiB follow NCCL's ring/Simple estimate (72.6 / 75.1 /
#: 80.2 / 90.5 us) rather than its LL128 one (47.9 / 51.3 / 58.0 / 71.4 us): Simple from 1 MiB.
NET_TUNER_PROTOCOLS: dict[str, tuple[tuple[str, int, str], ...]] = {
    "GCP-RDMA-fabric": (("all_gather", 1 << 20, "Simple"),),
}


def net_tuner_protocols(switch_name: str | None) -> tuple[tuple[str, int, str], ...] | None:
    """:data:`NET_TUNER_PROTOCOLS` of the scale-out switch, or None (NCCL's own choice throughout).

    Examples
    --------
    >>> net_tuner_protocols("GCP-RDMA-fabric")
    (('all_gather', 1048576, 'Simple'),)
    >>> net_tuner_protocols("QM9700") is None, net_tuner_protocols(None) is None
    (True, True)
    """
    return NET_TUNER_PROTOCOLS.get(switch_name) if switch_name else None
