"""Bad-input probe (docs/robustness.md, round 8): hostile invocations of every command, each a separate process.

Each case runs in an empty temporary folder (with the files it needs) under a time limit and is classified:
``ok-refused`` (exit 2, one ``error:`` line, nothing on stdout, no file written), ``traceback``, ``hang`` (over
the limit), ``slow`` (exit 0 after more than 15 s), ``exit0`` (to be read: a valid edge input or a silent wrong
answer), ``exit1``, ``multi-line``, ``half-written``.

Usage: ``python benchmarks/bad_input_probe.py [--tree DIR] [--batch 1|2|3] [--jobs N] [--timeout S] OUT.json``
(``--tree``: the source tree to run, default this one; e.g. an unpacked ``git archive`` of the old code).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

TIMEOUT = 20.0
PY = sys.executable


def _batch1():
    C = []

    def add(name, args, files=None, expect="refuse", env=None):
        C.append(dict(name=name, args=args, files=files or {}, expect=expect, env=env or {}))
    R = ["run", "all_reduce", "--topo", "hgx-h100", "--size", "1MiB"]
    RS = ["run", "all_reduce", "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2", "--size", "1MiB"]
    # --- top level / demo
    add("demo extra arg", ["demo", "x"])
    add("demo unknown opt", ["demo", "--json"])
    add("no command unknown", ["runn"])
    add("version", ["--version"], expect="ok")
    # --- ranks
    for v in ["0", "-1", "1", "3", "9", "all ", "ALL", "1e3", "8.0", "", "0x8", "99999999999999999999"]:
        add(f"run --ranks {v!r}", R + ["--ranks", v], expect="?")
    # groups
    for v in ["0", "3", "8", "16", "-2"]:
        add(f"run --groups {v}", R + ["--groups", v], expect="?")
    add("groups 2 ranks 1", R + ["--groups", "2", "--ranks", "1"])
    # sizes
    for v in ["1", "1B", "0", "1b", "1 MiB", "1MB", "1mib", "1.5KiB", "1e3", "1e3B", "1KiB ", "+1KiB", "0x10", "1PiB", "1EiB", "１KiB", "1KiB\n"]:
        add(f"run --size {v!r}", ["run", "all_reduce", "--topo", "hgx-h100", "--size", v], expect="?")
    for v in ["1KiB:1MiB", "1MiB:1KiB", "1KiB:1KiB", "1KiB:1MiB:x1", "1KiB:1MiB:x0", "1KiB:1MiB:x-2", "1KiB:1MiB:x1.0001",
              "1KiB:1MiB:xnan", "1KiB:1MiB:xinf", "1KiB:1MiB:2", "1KiB:1MiB:+1KiB", ":", "1KiB:", ":1MiB", "1KiB:1MiB:x2:x2",
              "1B:1PiB:x2", "1KiB,2KiB", "1KiB:1MiB:x1.5"]:
        add(f"run --sizes {v!r}", ["run", "all_reduce", "--topo", "hgx-h100", "--sizes", v], expect="?")
    add("size and sizes", R + ["--sizes", "1KiB:1MiB"])
    # collectives
    for c in ["allreduce", "ALL_REDUCE", "", "all_reduce ", "broadcast", "reduce", "send_recv", "alltoall", "all_to_all"]:
        add(f"run coll {c!r}", ["run", c, "--topo", "hgx-h100", "--size", "1MiB"], expect="?")
    # topo names
    for t in ["", "HGX-H100", "hgx-h100 ", "nope", "./nope.toml", "/", "/dev/null", "/etc/passwd", "hgx-h100.toml"]:
        add(f"run --topo {t!r}", ["run", "all_reduce", "--topo", t, "--size", "1MiB"], expect="?")
    # --set
    for s in ["domains=0", "domains=1.5", "domains=-1", "domains=1e3", "domains=", "=4", "domains", "Domains=2",
              "domains=2 ", "n=1", "n=0", "n=73", "scaleout=nope", "scaleout=", "nic=nope", "tiers=0", "tiers=4", "tiers=auto",
              "oversubscription=0", "oversubscription=0.5", "oversubscription=-1", "planes=0", "spine_scope=nope",
              "aggregate=yes", "aggregate=2", "aggregate=TRUE", "gpus_per_domain=0", "gpus_per_domain=73"]:
        add(f"run hgx --set {s!r}", ["run", "all_reduce", "--topo", "hgx-h100", "--set", s, "--size", "1MiB"], expect="?")
    for s in ["hosts=1", "hosts=2", "hosts=0", "radix=1", "radix=2", "radix=3", "radix=65", "link=0Gb/s", "link=400", "link=400Gbps",
              "link=400GB/s", "link=nan", "switch=nope", "tiers=1", "tiers=5", "oversubscription=3:1", "oversubscription=1:0",
              "planes=3", "hosts=1000,2000"]:
        add(f"run fat-tree --set {s!r}", ["run", "all_reduce", "--topo", "fat-tree", "--set", "hosts=64", "--set", s, "--size", "1MiB"] if not s.startswith("hosts") else ["run", "all_reduce", "--topo", "fat-tree", "--set", s, "--size", "1MiB"], expect="?")
    for s in ["n=1", "n=2", "n=0", "n=1000", "gpu=nope", "gpu=gb200", "gpu=GB300", "domains=2"]:
        add(f"run nvl --set {s!r}", ["run", "all_reduce", "--topo", "nvl", "--set", s, "--size", "1MiB"], expect="?")
    for s in ["sus=0", "sus=1.5", "sus=100000", "aggregate=true"]:
        add(f"run superpod --set {s!r}", ["run", "all_reduce", "--topo", "superpod-h100", "--set", s, "--size", "1MiB"], expect="?")
    # routing/seed
    for s in ["-1", "0.5", "1e3", "", "9223372036854775808", " 3"]:
        add(f"run --seed {s!r}", RS + ["--routing", "ecmp", "--seed", s], expect="?")
    add("routing bad", RS + ["--routing", "ECMP"])
    # algo
    for a in ["nvls", "tree", "sharp", "hier", "direct", "ring"]:
        add(f"run --algo {a} 1 domain", R + ["--algo", a], expect="?")
        add(f"run all_to_all --algo {a}", ["run", "all_to_all", "--topo", "hgx-h100", "--size", "1MiB", "--algo", a], expect="?")
        add(f"run moe_dispatch --algo {a}", ["run", "moe_dispatch", "--topo", "hgx-h100", "--algo", a], expect="?")
    # moe
    M = ["run", "moe_dispatch", "--topo", "hgx-h100"]
    for opt, vals in [("--tokens", ["0", "1", "-1"]), ("--topk", ["0", "9", "256", "257", "-1"]), ("--experts", ["0", "1", "7", "9", "3"]),
                      ("--hidden", ["0", "1", "7", "-1"])]:
        for v in vals:
            add(f"moe {opt} {v}", M + [opt, v], expect="?")
    add("moe topk > experts", M + ["--experts", "4", "--topk", "8"])
    add("moe ranks 1", M + ["--ranks", "1"], expect="?")
    add("moe_combine ranks 3", ["run", "moe_combine", "--topo", "hgx-h100", "--ranks", "3"], expect="?")
    # fail/degrade
    for f in ["", "spine", "spine -1", "gpu 8", "gpu 0", "gpu 0 nvlink", "gpu 0 nvlink plane 99", "nvswitch 0", "all", "*", "gpu 0 gpu 1"]:
        add(f"run --fail {f!r}", R + ["--fail", f], expect="?")
    for g in ["gpu 0=50%", "gpu 0=0%", "gpu 0=100%", "gpu 0=101%", "gpu 0=0", "gpu 0=1", "gpu 0=2", "gpu 0=2000Gb/s", "gpu 0=1Tb/s", "gpu 0=450GB/s",
              "gpu 0=50", "gpu 0==50%", "=50%", "gpu 0=", "gpu 0=50%%"]:
        add(f"run --degrade {g!r}", R + ["--degrade", g], expect="?")
    add("fail twice same", R + ["--fail", "gpu 0", "--fail", "gpu 0"], expect="?")
    add("fail+degrade same", R + ["--fail", "gpu 0", "--degrade", "gpu 0=50%"], expect="?")
    # report / top / plot / json
    for t in ["0", "-1", "1", "100000"]:
        add(f"run --report --top {t}", R + ["--report", "--top", t], expect="?")
    for p in ["x.pdf", "x", "@D", "nodir/x.png", "x.PNG", ".png", "x.png/", "x.svg"]:
        add(f"run --plot {p}", R + ["--plot", p], expect="?")
    add("run --json --report", R + ["--json", "--report"], expect="ok")
    # nccl
    for v in ["2.17", "2.18", "2.18.0", "3.0", "2.x", "2", "2.30.7.1", "2.99", "v2.21", "2.21.5a", "2.-1", "02.21", "2.021"]:
        add(f"run --nccl-version {v!r}", R + ["--nccl-version", v], expect="?")
    for v in ["0", "1B", "7B", "8B", "1GiB", "1PiB", "4MiB"]:
        add(f"run --nccl-buffsize {v}", R + ["--nccl-buffsize", v], expect="?")
    for v in ["16KiB", "15KiB", "16MiB", "17MiB", "100KiB"]:
        add(f"run --nvls-chunksize {v}", R + ["--nvls-chunksize", v], expect="?")
    # memory limit
    for v in ["1B", "0", "1", "100TiB", "1e3", "-1GiB", "1GB", "1 GiB"]:
        add(f"run --memory-limit {v!r}", R + ["--memory-limit", v], expect="?")
    for v in ["1B", "abc", "0", " ", "-5"]:
        add(f"env MEMORY_LIMIT {v!r}", R, env={"FABRIC_EMU_MEMORY_LIMIT": v}, expect="?")
        add(f"env MAX_INPUT {v!r}", ["topo", "show", "@D/s.toml"], files={"s.toml": 'name = "x"\npreset = "hgx-h100"\n'}, env={"FABRIC_EMU_MAX_INPUT": v}, expect="?")
    # topo show/export/bisect
    for t in ["hgx-h100", "nvl", "fat-tree"]:
        add(f"topo show {t} --json", ["topo", "show", t, "--json"], expect="ok")
    add("topo export no -o", ["topo", "export", "hgx-h100", "--format", "json"])
    add("topo export -o dir", ["topo", "export", "hgx-h100", "--format", "json", "-o", "@D"])
    add("topo export graphml .json", ["topo", "export", "hgx-h100", "--format", "graphml", "-o", "x.json"], expect="?")
    add("topo export json to .txt", ["topo", "export", "hgx-h100", "--format", "json", "-o", "x.txt"], expect="?")
    add("bisect 1 gpu", ["bisect", "nvl", "--set", "n=1"], expect="?")
    add("bisect fat-tree hosts=2", ["bisect", "fat-tree", "--set", "hosts=2"], expect="?")
    add("topo show fail all spines", ["topo", "show", "fat-tree", "--set", "hosts=64", "--set", "radix=16", "--fail", "spine"], expect="?")
    add("topo list extra", ["topo", "list", "x"])
    # spec files
    SPECS = {
     "empty": "", "bom": '\ufeffname = "x"\npreset = "hgx-h100"\n', "dupkey": 'name = "x"\nname = "y"\n',
     "notoml": "this is not toml", "binary": b"\x00\x01\x02\xff", "unknown": 'name="x"\npreset="hgx-h100"\nfoo=1\n',
     "nopreset": 'name = "x"\n', "badpreset": 'name="x"\npreset="nope"\n', "array": '[[a]]\nb=1\n',
     "noname": 'preset = "hgx-h100"\n', "emptyname": 'name=""\npreset="hgx-h100"\n', "unicodename": 'name="ünï"\npreset="hgx-h100"\n',
     "longname": 'name="' + "x"*10000 + '"\npreset="hgx-h100"\n', "domains0": 'name="x"\npreset="hgx-h100"\ndomains=0\n',
     "domainsstr": 'name="x"\npreset="hgx-h100"\ndomains="abc"\n', "domainsnan": 'name="x"\npreset="hgx-h100"\ndomains=nan\n',
     "domainsbig": 'name="x"\npreset="hgx-h100"\ndomains=1e30\n', "domains2": 'name="x"\npreset="hgx-h100"\ndomains=2\n',
    }
    for k, v in SPECS.items():
        add(f"topo show spec {k}", ["topo", "show", "@D/s.toml"], files={"s.toml": v}, expect="?")
    add("topo show spec is dir", ["topo", "show", "@D/s.toml"], files={"s.toml": None})
    add("topo show .toml missing", ["topo", "show", "missing.toml"])
    add("topo show .json missing", ["topo", "show", "missing.json"])
    add("topo show .json empty", ["topo", "show", "@D/g.json"], files={"g.json": ""})
    add("topo show .json []", ["topo", "show", "@D/g.json"], files={"g.json": "[]"})
    add("topo show .json {}", ["topo", "show", "@D/g.json"], files={"g.json": "{}"})
    add("topo show .json dupkeys", ["topo", "show", "@D/g.json"], files={"g.json": '{"nodes": [], "nodes": [], "links": []}'})
    add("topo show .graphml junk", ["topo", "show", "@D/g.graphml"], files={"g.graphml": "<graphml>"})
    # step
    S = ["step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch", "8", "--micro-batch", "1", "--seq-len", "4096", "--precision", "bf16"]
    def step(**kw):
        d = dict(zip(S[1::2], S[2::2]))
        a = ["step"]
        for k, v in d.items():
            a += [k, kw.pop(k, v)]
        for k, v in kw.items():
            a += [k, v]
        return a
    add("step baseline", S, expect="ok")
    for k, v in [("--gpus", "0"), ("--gpus", "7"), ("--gpus", "1"), ("--gpus", "12"), ("--tp", "3"), ("--tp", "16"), ("--tp", "0"),
                 ("--pp", "3"), ("--pp", "9"), ("--vpp", "2"), ("--vpp", "0"), ("--ep", "2"), ("--etp", "2"), ("--cp", "3"), ("--cp", "0"),
                 ("--global-batch", "7"), ("--global-batch", "0"), ("--micro-batch", "3"), ("--micro-batch", "16"), ("--micro-batch", "0"),
                 ("--seq-len", "1"), ("--seq-len", "0"), ("--seq-len", "3"), ("--model", "nope"), ("--model", ""), ("--model", "LLAMA3-8B"),
                 ("--system", "fat-tree"), ("--system", "nvl"), ("--system", "nope"), ("--precision", "fp4"), ("--overlap", "tp,ep,pp,dp-grad,dp-param"),
                 ("--overlap", "auto,none"), ("--overlap", "TP"), ("--gpus-per-domain", "3"), ("--gpus-per-domain", "0"), ("--pp-layout", "x"),
                 ("--pp-layout", "E|L"), ("--schedule", "dualpipe"), ("--schedule", "interleaved"), ("--seed", "1"), ("--trace", "t.txt"),
                 ("--trace", "t.json"), ("--plot", "p.png"), ("--moe-routing", "skewed")]:
        add(f"step {k} {v!r}", step(**{k: v}), expect="?")
    add("step --gpus 16 hgx (2 domains)", step(**{"--gpus": "16", "--global-batch": "16"}), expect="ok")
    add("step gpus 10^6", step(**{"--gpus": "1000000", "--global-batch": "1000000"}), expect="?")
    add("step global-batch huge", step(**{"--global-batch": "100000000000"}), expect="?")
    add("step dsv3 ep 8", step(**{"--model": "deepseek-v3", "--ep": "8"}) + ["--no-memory-check"], expect="?")
    # models
    for m in ["nope", "", "x.toml"]:
        add(f"models --model {m!r}", ["models", "--model", m], expect="?")
    MODELS = {"empty": "", "nameonly": 'name="m"\n', "neg": 'name="m"\nn_layers=-1\nhidden=4096\n', "dup": 'name="m"\nname="n"\n'}
    for k, v in MODELS.items():
        add(f"models file {k}", ["models", "--model", "@D/m.toml"], files={"m.toml": v}, expect="?")
    for v in ["0", "1", "-1", "16777217"]:
        add(f"models --seq-len {v}", ["models", "--seq-len", v], expect="?")
    # validate
    add("validate --file dir", ["validate", "--file", "@D/v"], files={"v": None})
    add("validate --file missing", ["validate", "--file", "nope.toml"])
    add("validate --file empty", ["validate", "--file", "@D/v.toml"], files={"v.toml": ""})
    add("validate --file json", ["validate", "--file", "@D/v.json"], files={"v.json": "{}"})
    add("validate --id ''", ["validate", "--id", ""])
    add("validate --split FIT", ["validate", "--split", "FIT"])
    # sweep
    add("sweep run no db", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB"])
    add("sweep run jobs 0", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB", "--db", "s.db", "--jobs", "0"])
    add("sweep run jobs 100000", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB", "--db", "s.db", "--jobs", "100000"], expect="?")
    add("sweep run jobs -1", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB", "--db", "s.db", "--jobs", "-1"])
    big = ",".join(f"{i}KiB" for i in range(1, 201))
    add("sweep grid 200x200x200", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", f"size={big}", "--grid", "seed=" + ",".join(map(str, range(200))), "--grid", "groups=" + ",".join(map(str, range(1, 201))), "--db", "s.db"], expect="?")
    add("sweep grid empty", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=", "--db", "s.db"])
    add("sweep grid no =", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size", "--db", "s.db"])
    add("sweep grid unknown key", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "foo=1,2", "--db", "s.db"])
    add("sweep grid key twice", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB", "--grid", "size=2KiB", "--db", "s.db"])
    add("sweep no grid", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--db", "s.db"], expect="?")
    add("sweep zip unequal", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB", "--grid", "algo=ring", "--zip", "--db", "s.db"])
    add("sweep step no model", ["sweep", "run", "step", "--grid", "gpus=8,16", "--db", "s.db"])
    add("sweep run db is dir", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB", "--db", "@D/d"], files={"d": None})
    add("sweep file bad toml", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": "[grid\n"})
    add("sweep file dup key", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": "[grid]\nsize=['1KiB']\nsize=['2KiB']\n"})
    add("sweep file unknown table", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": "[gird]\nsize=['1KiB']\n"})
    add("sweep show missing db", ["sweep", "show", "--db", "nope.db"])
    add("sweep show empty file", ["sweep", "show", "--db", "@D/e.db"], files={"e.db": ""})
    add("sweep show text file", ["sweep", "show", "--db", "@D/e.db"], files={"e.db": "hello"})
    add("sweep export empty db", ["sweep", "export", "--db", "@D/e.db", "--format", "csv"], files={"e.db": ""})
    add("sweep export missing db", ["sweep", "export", "--db", "nope.db", "--format", "csv"])
    return C


def _batch2():
    C = []

    def add(name, args, files=None, expect="?", env=None):
        C.append(dict(name=name, args=args, files=files or {}, expect=expect, env=env or {}))
    R = ["run", "all_reduce", "--topo", "hgx-h100", "--size", "1MiB"]
    M = ["run", "moe_dispatch", "--topo", "hgx-h100"]
    # MoE sizes
    for e, k in [("20000", "400"), ("20000", "500"), ("4096", "4096"), ("100000", "2"), ("7", "2"), ("8", "8"), ("16", "16")]:
        add(f"moe experts {e} topk {k}", M + ["--experts", e, "--topk", k])
    add("moe tokens 1e6", M + ["--tokens", "1000000"])
    add("moe tokens 300000 topk 64", M + ["--tokens", "300000", "--topk", "64"])
    add("moe skewed topk 256", M + ["--moe-routing", "skewed", "--topk", "256"])
    add("moe deepseek topk 256", M + ["--moe-routing", "deepseek", "--topk", "256"])
    add("moe node_limited 2 domains topk 256", ["run", "moe_dispatch", "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2", "--topk", "256"])
    add("moe node_limited 4 domains topk 200", ["run", "moe_dispatch", "--topo", "hgx-h100", "--set", "domains=4", "--set", "scaleout=quantum-2", "--topk", "200"])
    add("moe balanced topk 256", M + ["--moe-routing", "balanced", "--topk", "256"])
    add("moe_combine topk 256", ["run", "moe_combine", "--topo", "hgx-h100", "--topk", "256"])
    # long names, unicode outputs
    L = "a" * 300
    add("export long name", ["topo", "export", "hgx-h100", "--format", "json", "-o", L + ".json"])
    add("export long path comp", ["topo", "export", "hgx-h100", "--format", "json", "-o", "x/" * 3000 + "g.json"])
    add("plot long name", R + ["--plot", L + ".png"])
    add("trace long name", ["step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch", "8", "--micro-batch", "1", "--seq-len", "4096", "--precision", "bf16", "--trace", L + ".json"])
    add("sweep db long name", ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB", "--db", L + ".db"])
    add("sweep export long name", ["sweep", "export", "--db", "s.db", "--format", "csv", "-o", L + ".csv"])
    add("topo show long name", ["topo", "show", L + ".toml"])
    add("topo long preset name", ["topo", "show", L])
    add("validate --file long", ["validate", "--file", L + ".toml"])
    add("models --model long", ["models", "--model", L + ".toml"])
    add("export unicode name", ["topo", "export", "hgx-h100", "--format", "json", "-o", "ü.json"], expect="ok")
    # env var kernels
    for v in ["bogus", "NUMBA", "numpy", ""]:
        add(f"env KERNELS {v!r}", R, env={"FABRIC_EMU_KERNELS": v})
    add("env MAX_GRAPH bad", ["topo", "show", "@D/g.json"], files={"g.json": "{}"}, env={"FABRIC_EMU_MAX_GRAPH": "lots"})
    add("env MALLOC bogus", R, env={"FABRIC_EMU_MALLOC": "bogus"})
    # step combos
    S = dict([("--model", "llama3-8b"), ("--system", "hgx-h100"), ("--gpus", "8"), ("--global-batch", "8"), ("--micro-batch", "1"), ("--seq-len", "4096"), ("--precision", "bf16")])
    def step(flags=(), **kw):
        d = dict(S); d.update(kw); a = ["step"]
        for k, v in d.items(): a += [k, v]
        return a + list(flags)
    add("step ep on dense", step(**{"--ep": "8"}))
    add("step etp on dense", step(**{"--etp": "2"}))
    add("step vpp 2 pp 1", step(**{"--vpp": "2"}))
    add("step vpp 3 pp 2 (layers 32)", step(**{"--vpp": "3", "--pp": "2"}))
    add("step pp 64 (more than layers)", step(**{"--pp": "64", "--gpus": "64", "--global-batch": "64"}))
    add("step pp 33", step(**{"--pp": "33", "--gpus": "33", "--global-batch": "33"}))
    add("step cp 3 seq 4096", step(**{"--cp": "2", "--seq-len": "4097"}))
    add("step cp 8 seq 8", step(**{"--cp": "8", "--seq-len": "8"}))
    add("step tp 8 heads", step(**{"--tp": "8"}))
    add("step tp 64 on 8-GPU domain", step(**{"--tp": "16", "--gpus": "16", "--global-batch": "16"}))
    add("step dsv3 ep 16 on hgx 16", step(["--no-memory-check"], **{"--model": "deepseek-v3", "--ep": "16", "--gpus": "16", "--global-batch": "16"}))
    add("step dsv3 ep 3", step(["--no-memory-check"], **{"--model": "deepseek-v3", "--ep": "3", "--gpus": "3", "--global-batch": "3"}))
    add("step mixtral ep 16 (8 experts)", step(["--no-memory-check"], **{"--model": "mixtral-8x7b", "--ep": "16", "--gpus": "16", "--global-batch": "16"}))
    add("step mixtral etp 16 ep1", step(["--no-memory-check"], **{"--model": "mixtral-8x7b", "--etp": "16", "--gpus": "16", "--global-batch": "16"}))
    add("step mixtral ep 8 etp 2", step(["--no-memory-check"], **{"--model": "mixtral-8x7b", "--ep": "8", "--etp": "2", "--gpus": "16", "--global-batch": "16"}))
    add("step fp8 on h100", step(**{"--precision": "fp8"}))
    add("step mxfp8 on h100", step(**{"--precision": "mxfp8"}))
    add("step attention fp8 on h100", step(**{"--attention-precision": "fp8"}))
    add("step gb300 gpus 72", step(**{"--system": "gb300-nvl72", "--gpus": "72", "--global-batch": "72"}))
    add("step gb300 gpus 65", step(**{"--system": "gb300-nvl72", "--gpus": "65", "--global-batch": "65"}))
    add("step gpus-per-domain 72 tp 8 gpus 72", step(**{"--system": "gb300-nvl72", "--gpus": "72", "--global-batch": "72", "--tp": "8", "--gpus-per-domain": "72"}))
    add("step gpus-per-domain 64 gpus 72", step(**{"--system": "gb300-nvl72", "--gpus": "72", "--global-batch": "72", "--gpus-per-domain": "64"}))
    add("step placement spread 1 domain", step(**{"--placement": "spread"}))
    add("step ep-in-domain dense", step(["--ep-in-domain"]))
    add("step schedule dualpipe pp1", step(**{"--schedule": "dualpipe"}))
    add("step schedule interleaved vpp1 pp2", step(**{"--schedule": "interleaved", "--pp": "2"}))
    add("step schedule dualpipe pp 2 odd batch", step(**{"--schedule": "dualpipe", "--pp": "2", "--global-batch": "4", "--micro-batch": "1"}))
    add("step optimizer none", step(**{"--optimizer": "none"}))
    add("step global-batch < dp", step(**{"--global-batch": "4"}))
    add("step micro-batch > global", step(**{"--micro-batch": "16", "--global-batch": "8"}))
    add("step seq-len 16Mi", step(**{"--seq-len": "16777216"}))
    add("step gpus huge", step(**{"--gpus": "100000000", "--global-batch": "100000000"}))
    add("step gpus 2^63", step(**{"--gpus": "9223372036854775807", "--global-batch": "8"}))
    add("step tp 2^63", step(**{"--tp": "9223372036854775807"}))
    add("step global batch 2^70", step(**{"--global-batch": "1180591620717411303424"}))
    add("step set domains", step(["--set", "domains=4"]))
    add("step set scaleout bogus", step(["--set", "scaleout=bogus"]))
    add("step set hosts", step(["--set", "hosts=4"]))
    add("step fail gpu 0", step(["--fail", "gpu 0"]))
    add("step fail spine 0 1 domain", step(["--fail", "spine 0"]))
    add("step degrade gpu 0", step(["--degrade", "gpu 0=50%"]))
    add("step report plot no report", step(["--plot", "p.png"]))
    add("step json report", step(["--json", "--report"]), expect="ok")
    add("step system spec toml", step(**{"--system": "@D/s.toml"}), files={"s.toml": 'name="mine"\npreset="hgx-h100"\n'})
    add("step system fat-tree spec", step(**{"--system": "@D/s.toml"}), files={"s.toml": 'name="mine"\npreset="fat-tree"\n'})
    add("step model file minimal", step(**{"--model": "@D/m.toml"}), files={"m.toml": 'name="m"\nn_layers=2\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\n'})
    add("step model file heads not dividing tp", step(**{"--model": "@D/m.toml", "--tp": "8"}), files={"m.toml": 'name="m"\nn_layers=2\nhidden=252\nn_heads=3\nffn_hidden=512\nvocab=1000\n'})
    add("step model hidden not multiple heads", step(**{"--model": "@D/m.toml"}), files={"m.toml": 'name="m"\nn_layers=2\nhidden=250\nn_heads=3\nffn_hidden=512\nvocab=1000\n'})
    add("step model vocab 1", step(**{"--model": "@D/m.toml"}), files={"m.toml": 'name="m"\nn_layers=1\nhidden=8\nn_heads=1\nffn_hidden=8\nvocab=1\n'})
    # models
    add("models file kv_heads > heads", ["models", "--model", "@D/m.toml"], files={"m.toml": 'name="m"\nn_layers=2\nhidden=256\nn_heads=4\nn_kv_heads=8\nffn_hidden=512\nvocab=1000\n'})
    add("models file kv_heads not dividing", ["models", "--model", "@D/m.toml"], files={"m.toml": 'name="m"\nn_layers=2\nhidden=256\nn_heads=4\nn_kv_heads=3\nffn_hidden=512\nvocab=1000\n'})
    add("models file topk > experts", ["models", "--model", "@D/m.toml"], files={"m.toml": 'name="m"\nn_layers=2\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\nn_experts=4\ntopk=8\nmoe_ffn_hidden=128\n'})
    add("models file experts no topk", ["models", "--model", "@D/m.toml"], files={"m.toml": 'name="m"\nn_layers=2\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\nn_experts=4\n'})
    add("models file unknown attention", ["models", "--model", "@D/m.toml"], files={"m.toml": 'name="m"\nn_layers=2\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\nattention="flash"\n'})
    add("models file name with slash", ["models", "--model", "@D/m.toml"], files={"m.toml": 'name="a/b"\nn_layers=2\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\n'})
    add("models file name empty", ["models", "--model", "@D/m.toml"], files={"m.toml": 'name=""\nn_layers=2\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\n'})
    add("models file .TOML", ["models", "--model", "@D/m.TOML"], files={"m.TOML": 'name="m"\nn_layers=2\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\n'})
    add("models file no suffix", ["models", "--model", "@D/m"], files={"m": 'name="m"\nn_layers=2\n'})
    add("models file is json", ["models", "--model", "@D/m.json"], files={"m.json": '{}'})
    add("models two files same name", ["models", "--model", "@D/a.toml", "--model", "@D/b.toml"], files={"a.toml": 'name="m"\nn_layers=2\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\n', "b.toml": 'name="m"\nn_layers=4\nhidden=256\nn_heads=4\nffn_hidden=512\nvocab=1000\n'})
    # validate files
    V1 = '[[collective]]\nid="p1"\nsystem="hgx-h100"\nranks=8\ncollective="all_reduce"\nalgorithm="ring"\nsize_bytes=1048576\nbusbw_GBps=100\n'
    add("validate valid file", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1}, expect="ok")
    add("validate file ranks 1", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace("ranks=8", "ranks=1")})
    add("validate file ranks 0", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace("ranks=8", "ranks=0")})
    add("validate file unknown system", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace("hgx-h100", "nope")})
    add("validate file unknown collective", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace('"all_reduce"', '"allreduce"')})
    add("validate file unknown algo", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace('"ring"', '"rings"')})
    add("validate file busbw 1e300", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace("busbw_GBps=100", "busbw_GBps=1e300")})
    add("validate file dup id in two tables", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1 + V1})
    add("validate file empty id", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace('id="p1"', 'id=""')})
    add("validate file id control char", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace('id="p1"', 'id="p\\u001b[31m"')})
    add("validate file split bogus", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1 + 'split="train"\n'})
    add("validate --file --split heldout none", ["validate", "--file", "@D/v.toml", "--split", "heldout"], files={"v.toml": V1})
    add("validate file domains 0", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1 + "domains=0\n"})
    add("validate file domains 2 no scaleout", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace("ranks=8", "ranks=16") + "domains=2\n"})
    add("validate file nic without scaleout", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1 + 'nic="CX7-400G"\n'})
    add("validate file nccl_version bogus", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1 + 'nccl_version="banana"\n'})
    add("validate file nccl_version 1.0", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1 + 'nccl_version="1.0"\n'})
    add("validate file size 0", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace("size_bytes=1048576", "size_bytes=0")})
    add("validate file size 1", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace("size_bytes=1048576", "size_bytes=1")})
    add("validate file size string", ["validate", "--file", "@D/v.toml"], files={"v.toml": V1.replace("size_bytes=1048576", 'size_bytes="1MiB"')})
    add("validate file 10000 points", ["validate", "--file", "@D/v.toml"], files={"v.toml": "".join(V1.replace('"p1"', f'"p{i}"') for i in range(10000))})
    MV = '[[moe_alltoall]]\nid="m1"\nsystem="hgx-h100"\nep=8\nexperts=256\ntopk=8\ntokens=4096\nhidden=7168\ndispatch_GBps=100\ncombine_GBps=100\n'
    add("validate moe valid", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV}, expect="ok")
    add("validate moe topk 256", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV.replace("topk=8", "topk=256")})
    add("validate moe topk 257", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV.replace("topk=8", "topk=257")})
    add("validate moe experts 7", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV.replace("experts=256", "experts=7")})
    add("validate moe ep 3", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV.replace("ep=8", "ep=3")})
    add("validate moe ep 9", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV.replace("ep=8", "ep=9")})
    add("validate moe tokens 1e9", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV.replace("tokens=4096", "tokens=1000000000")})
    add("validate moe routing bogus", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV + 'routing="bogus"\n'})
    add("validate moe metric bogus", ["validate", "--file", "@D/v.toml"], files={"v.toml": MV + 'metric="bogus"\n'})
    # topo spec files
    TS = 'name="mine"\npreset="hgx-h100"\n'
    for extra in ['domains=2\n', 'domains=2\n[scaleout]\nfabric="quantum-2"\n', '[scaleout]\nfabric="quantum-2"\n', 'domains=2\n[scaleout]\nfabric="bogus"\n',
                  'domains=2\n[scaleout]\nfabric="quantum-2"\nbogus=1\n', 'domains=2\n[scaleout]\nfabric="quantum-2"\ntiers=7\n',
                  'domains=2\n[scaleout]\nfabric="quantum-2"\noversubscription="2:1"\n', 'domains=2\n[scaleout]\nfabric="quantum-2"\nplanes=0\n',
                  'link="0Gb/s"\n', 'link="400Gb/s"\n', 'aggregate="yes"\n', 'aggregate=1\n', 'preset="nvl"\n', '[meta]\nx=1\n', 'domains=[2]\n',
                  'domains={a=1}\n', 'domains=2.0\n', 'domains=true\n', 'domains=-2\n', 'domains=9223372036854775808\n']:
        add(f"spec {extra.strip()!r}", ["topo", "show", "@D/s.toml"], files={"s.toml": TS + extra})
    add("spec nvl n=1", ["topo", "show", "@D/s.toml"], files={"s.toml": 'name="mine"\npreset="nvl"\nn=1\n'})
    add("spec fat-tree hosts 3 radix 4", ["topo", "show", "@D/s.toml"], files={"s.toml": 'name="mine"\npreset="fat-tree"\nhosts=3\nradix=4\n'})
    add("spec symlink loop", ["topo", "show", "@D/loop.toml"])
    add("spec name is preset", ["topo", "show", "@D/s.toml"], files={"s.toml": 'name="fat-tree"\npreset="hgx-h100"\n'})
    # sweep show/export options on a real db built in setup? simple: run sweep first within same case not possible; test flags
    SW = ["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--db", "s.db"]
    add("sweep grid size 0", SW + ["--grid", "size=0,1KiB"])
    add("sweep grid ranks 1", SW + ["--grid", "ranks=1,2"])
    add("sweep grid ranks 9", SW + ["--grid", "ranks=8,9"])
    add("sweep grid algo bogus", SW + ["--grid", "algo=ring,bogus"])
    add("sweep grid nccl_version bogus", SW + ["--grid", "nccl_version=2.21,banana"])
    add("sweep grid set key bogus", SW + ["--grid", "bogus_key=1,2"])
    add("sweep grid domains on hgx", SW + ["--grid", "domains=1,2"])
    add("sweep grid fail each nothing", SW + ["--grid", "fail=each:spine"])
    add("sweep grid fail each gpu", SW + ["--grid", "fail=each:gpu"])
    add("sweep grid tokens on all_reduce", SW + ["--grid", "tokens=1,2"])
    add("sweep grid model on run", SW + ["--grid", "model=llama3-8b"])
    add("sweep grid size,,", SW + ["--grid", "size=1KiB,,2KiB"])
    add("sweep grid unicode key", SW + ["--grid", "sïze=1KiB,2KiB"])
    add("sweep jobs 1000", SW + ["--grid", "size=1KiB,2KiB", "--jobs", "1000"])
    add("sweep retry-failed new db", SW + ["--grid", "size=1KiB,2KiB", "--retry-failed"])
    add("sweep scheduler bogus", SW + ["--grid", "size=1KiB,2KiB", "--scheduler", "bogus"])
    add("sweep scheduler tcp unreachable", SW + ["--grid", "size=1KiB,2KiB", "--scheduler", "tcp://127.0.0.1:1"])
    add("sweep step grid tp", ["sweep", "run", "step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch", "8", "--micro-batch", "1", "--seq-len", "4096", "--precision", "bf16", "--grid", "tp=1,3", "--db", "s.db"])
    add("sweep step grid precision bogus", ["sweep", "run", "step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch", "8", "--micro-batch", "1", "--seq-len", "4096", "--precision", "bf16", "--grid", "precision=bf16,fp4", "--db", "s.db"])
    add("sweep step missing required", ["sweep", "run", "step", "--model", "llama3-8b", "--grid", "tp=1,2", "--db", "s.db"])
    add("sweep op bogus", ["sweep", "run", "bogus", "--grid", "size=1KiB", "--db", "s.db"])
    add("sweep run coll option on step", ["sweep", "run", "step", "--topo", "hgx-h100", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch", "8", "--micro-batch", "1", "--seq-len", "4096", "--precision", "bf16", "--db", "s.db"])
    add("sweep file + grid same key", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--grid", "size=1KiB", "--db", "s.db"], files={"s.toml": '[base]\ntopo="hgx-h100"\n[grid]\nsize=["2KiB"]\n'})
    add("sweep file op mismatch", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": 'op="all_gather"\n[base]\ntopo="hgx-h100"\n[grid]\nsize=["2KiB"]\n'})
    add("sweep file grid not list", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": '[base]\ntopo="hgx-h100"\n[grid]\nsize="2KiB"\n'})
    add("sweep file grid empty list", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": '[base]\ntopo="hgx-h100"\n[grid]\nsize=[]\n'})
    add("sweep file grid nested list", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": '[base]\ntopo="hgx-h100"\n[grid]\nsize=[["1KiB"]]\n'})
    add("sweep file base fail string", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": '[base]\ntopo="hgx-h100"\nfail="gpu 0"\n[grid]\nsize=["1KiB"]\n'})
    add("sweep file size int", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": '[base]\ntopo="hgx-h100"\n[grid]\nsize=[1024, 2048.5]\n'})
    add("sweep file size bool", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": '[base]\ntopo="hgx-h100"\n[grid]\nsize=[true]\n'})
    add("sweep file zip table", ["sweep", "run", "all_reduce", "--file", "@D/s.toml", "--db", "s.db"], files={"s.toml": '[base]\ntopo="hgx-h100"\n[zip]\nsize=["1KiB","2KiB"]\nalgo=["ring"]\n'})
    add("sweep show db is sweep file", ["sweep", "show", "--db", "@D/s.toml"], files={"s.toml": "[base]\n"})
    add("sweep show top 0", ["sweep", "show", "--db", "@D/e.db", "--top", "0"], files={"e.db": ""})
    return C


def _batch3():
    C = []

    def add(name, args, files=None, expect="?", env=None):
        C.append(dict(name=name, args=args, files=files or {}, expect=expect, env=env or {}))
    # sweep show/export against a db made by a prior command: use a shell-less trick: run sweep first via --db in setup not possible,
    # so these cases use a db made once in /tmp/robust3/db.sqlite (absolute path; read-only usage)
    DB = "@DB"
    for extra in [["--sort", "bogus"], ["--sort", ""], ["--columns", "bogus"], ["--columns", ","], ["--columns", "size,size"], ["--top", "0"], ["--top", "-1"],
                  ["--top", "99999999999999999999999"], ["--x", "size"], ["--plot", "p.png", "--x", "bogus"], ["--plot", "p.pdf"], ["--plot", "p.png", "--y", "bogus"],
                  ["--plot", "p.png", "--x", "size", "--y", "size"], ["--reverse"], ["--json", "--top", "1"], ["--plot", "p.svg"]]:
        add(f"sweep show {' '.join(extra)}", ["sweep", "show", "--db", DB] + extra)
    for extra in [["--format", "csv"], ["--format", "json"], ["--format", "xml"], ["--format", "csv", "-o", "x.json"], ["--format", "json", "-o", "x.csv"],
                  ["--format", "csv", "-o", DB], ["--format", "csv", "-o", "x.toml"], ["--format", "csv", "-o", "@D"], ["--format", "csv", "-o", ""]]:
        add(f"sweep export {' '.join(extra)}", ["sweep", "export", "--db", DB] + extra)
    add("sweep resume different op", ["sweep", "run", "all_gather", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB", "--db", DB])
    # topo
    for t, s in [("fat-tree", ["--set", "hosts=64", "--set", "radix=16", "--set", "tiers=3"]), ("fat-tree", ["--set", "hosts=64", "--set", "radix=16", "--set", "oversubscription=64:1"]),
                 ("fat-tree", ["--set", "hosts=64", "--set", "radix=16", "--set", "oversubscription=1:2"]), ("fat-tree", ["--set", "hosts=64", "--set", "radix=7"]),
                 ("fat-tree", ["--set", "hosts=5", "--set", "radix=4"]), ("fat-tree", ["--set", "hosts=64", "--set", "planes=64"]),
                 ("fat-tree", ["--set", "hosts=64", "--set", "switch=quantum-2"]), ("fat-tree", ["--set", "hosts=64", "--set", "nic=CX7-400G"]),
                 ("fat-tree", ["--set", "hosts=64", "--set", "nic=bogus"]), ("hgx-h100", ["--set", "domains=4", "--set", "scaleout=quantum-2", "--set", "spine_scope=bogus"]),
                 ("hgx-h100", ["--set", "domains=4", "--set", "scaleout=quantum-2", "--set", "planes=8"]), ("hgx-h100", ["--set", "domains=4", "--set", "scaleout=quantum-2", "--set", "nic=bogus"]),
                 ("hgx-h100", ["--set", "domains=3", "--set", "scaleout=quantum-2", "--set", "tiers=1"]), ("gb200-nvl72", ["--set", "gpus_per_domain=64"]),
                 ("gb200-nvl72", ["--set", "gpus_per_domain=100"]), ("gb200-nvl72", ["--set", "gpus_per_domain=7"]), ("superpod-h100", ["--set", "sus=0"]),
                 ("superpod-h100", ["--set", "sus=64"]), ("nvl", ["--set", "n=72", "--set", "gpu=B300"]), ("nvl", ["--set", "n=576"])]:
        add(f"topo show {t} {' '.join(s)}", ["topo", "show", t] + s)
        add(f"bisect {t} {' '.join(s)}", ["bisect", t] + s)
    add("topo show --fail everything", ["topo", "show", "hgx-h100", "--fail", "nvswitch 0", "--fail", "nvswitch 1", "--fail", "nvswitch 2", "--fail", "nvswitch 3"])
    add("run --fail every nvswitch", ["run", "all_reduce", "--topo", "hgx-h100", "--fail", "nvswitch 0", "--fail", "nvswitch 1", "--fail", "nvswitch 2", "--fail", "nvswitch 3"])
    add("run --fail gpu 0 then run", ["run", "all_reduce", "--topo", "hgx-h100", "--fail", "gpu 0"])
    add("run --fail gpu 0 ranks 7", ["run", "all_reduce", "--topo", "hgx-h100", "--ranks", "7", "--fail", "gpu 7"])
    add("run degrade over nominal", ["run", "all_reduce", "--topo", "hgx-h100", "--degrade", "nvswitch 0=10Tb/s"])
    add("run degrade gb/s nvswitch", ["run", "all_reduce", "--topo", "hgx-h100", "--degrade", "nvswitch 0=100Gb/s"])
    add("run degrade same twice", ["run", "all_reduce", "--topo", "hgx-h100", "--degrade", "nvswitch 0=50%", "--degrade", "nvswitch 0=60%"])
    add("run fail 1001 selectors", ["run", "all_reduce", "--topo", "hgx-h100"] + sum([["--fail", f"gpu {i % 8} nvlink"] for i in range(1001)], []))
    add("run selector unicode", ["run", "all_reduce", "--topo", "hgx-h100", "--fail", "ｇpu 0"])
    add("run selector case", ["run", "all_reduce", "--topo", "hgx-h100", "--fail", "GPU 0"])
    add("run selector extra spaces", ["run", "all_reduce", "--topo", "hgx-h100", "--fail", "  gpu   0  "])
    add("run selector range", ["run", "all_reduce", "--topo", "hgx-h100", "--fail", "gpu 0-3"])
    add("run selector comma", ["run", "all_reduce", "--topo", "hgx-h100", "--fail", "gpu 0,1"])
    # reports
    add("run report top 0", ["run", "all_reduce", "--topo", "hgx-h100", "--report", "--top", "0"])
    add("run top 5 no report", ["run", "all_reduce", "--topo", "hgx-h100", "--top", "5"])
    add("run report sizes", ["run", "all_reduce", "--topo", "hgx-h100", "--report", "--sizes", "1KiB:4KiB"])
    add("run report moe", ["run", "moe_dispatch", "--topo", "hgx-h100", "--report"])
    add("run report json top", ["run", "all_reduce", "--topo", "hgx-h100", "--report", "--json", "--top", "3"])
    # ops on odd setups
    for c in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv", "moe_dispatch", "moe_combine"]:
        add(f"{c} ranks 2 on 2 domains", ["run", c, "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2", "--ranks", "2"])
        add(f"{c} ranks 9 on 2 domains", ["run", c, "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2", "--ranks", "9"])
        add(f"{c} groups 2 ranks 6 strided", ["run", c, "--topo", "hgx-h100", "--ranks", "6", "--groups", "2", "--layout", "strided"])
        add(f"{c} size 1B 2 domains", ["run", c, "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2", "--size", "1B"] if not c.startswith("moe") else ["run", c, "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2", "--tokens", "1"])
    add("send_recv sizes 3", ["run", "send_recv", "--topo", "hgx-h100", "--size", "3B"])
    add("reduce_scatter size 3 ranks 8", ["run", "reduce_scatter", "--topo", "hgx-h100", "--size", "3B"])
    add("all_gather size 7 ranks 8", ["run", "all_gather", "--topo", "hgx-h100", "--size", "7B"])
    add("all_to_all size 7 ranks 8", ["run", "all_to_all", "--topo", "hgx-h100", "--size", "7B"])
    # step trace/plot
    S = ["step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch", "8", "--micro-batch", "1", "--seq-len", "4096", "--precision", "bf16"]
    add("step trace -", S + ["--trace", "-"])
    add("step trace .JSON", S + ["--trace", "t.JSON"])
    add("step trace dir", S + ["--trace", "@D"])
    add("step plot with report svg", S + ["--report", "--plot", "p.svg"])
    add("step plot .png no report", S + ["--plot", "p.png"])
    add("step trace same as plot", S + ["--report", "--plot", "x.json", "--trace", "x.json"])
    add("step trace and plot same name", S + ["--report", "--plot", "x.svg", "--trace", "x.svg"])
    add("run plot and sweep db", ["run", "all_reduce", "--topo", "hgx-h100", "--plot", DB])
    add("run plot named .toml", ["run", "all_reduce", "--topo", "hgx-h100", "--plot", "spec.toml"])
    return C


BATCHES = {"1": _batch1, "2": _batch2, "3": _batch3}


def run_case(case, tree: str, timeout: float = TIMEOUT, db: str = ""):
    name, args, files = case["name"], case["args"], case.get("files", {})
    d = tempfile.mkdtemp(prefix="r3-")
    for fn, content in files.items():
        p = os.path.join(d, fn)
        if content is None:
            os.makedirs(p, exist_ok=True)
        elif isinstance(content, bytes):
            open(p, "wb").write(content)
        else:
            open(p, "w").write(content)
    before = set(os.listdir(d))
    env = dict(os.environ, PYTHONPATH=tree, COLUMNS="200")
    env.update(case.get("env", {}))
    t0 = time.time()
    try:
        r = subprocess.run([PY, "-m", "cli"] + [a.replace("@DB", db).replace("@D", d) for a in args], cwd=d, env=env,
                           capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        rc, out, err = r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", ""
    dt = time.time() - t0
    after = set(os.listdir(d))
    new = sorted(after - before)
    shutil.rmtree(d, ignore_errors=True)
    errlines = [l for l in err.splitlines() if l.strip()]
    if rc is None: cls = "hang"
    elif "Traceback" in err: cls = "traceback"
    elif rc == 2:
        if len(errlines) == 1 and errlines[0].startswith("error:") and not out.strip() and not new: cls = "ok-refused"
        elif new: cls = "half-written"
        else: cls = "multi-line"
    elif rc == 0: cls = "exit0"
    elif rc == 1: cls = "exit1"
    else: cls = f"rc{rc}"
    if rc == 0 and dt > 15: cls = "slow"
    return dict(name=name, args=args, rc=rc, cls=cls, t=round(dt, 1), err=err[-600:], out=out[-400:], new=new,
                expect=case.get("expect", "refuse"))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--batch", action="append", choices=sorted(BATCHES))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=TIMEOUT)
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="probe-db-")
    db = os.path.join(tmp, "made.db")  # batch 3 reads a small sweep database made here
    subprocess.run([PY, "-m", "cli", "sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB,4KiB",
                    "--grid", "algo=ring,tree", "--db", db, "--jobs", "1"], env=dict(os.environ, PYTHONPATH=a.tree),
                   capture_output=True, check=True)
    results = []
    for b in a.batch or sorted(BATCHES):
        cases = BATCHES[b]()
        with ThreadPoolExecutor(a.jobs) as ex:
            res = list(ex.map(lambda c: run_case(c, a.tree, a.timeout, db), cases))
        for r in res:
            r["batch"] = b
        results += res
        print(f"batch {b}: {len(res)} cases", dict(Counter(r["cls"] for r in res)))
    shutil.rmtree(tmp, ignore_errors=True)
    with open(a.out, "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
