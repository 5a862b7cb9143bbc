"""Synthetic job traces in the input format of HPCsim (the simulator behind Wang's thesis), for
checking the `hpcsim` profile against HPCsim's own code and for timing both on Spartan-sized logs.

    python benchmarks/hpcsim_traces.py physical --jobs 2000 --seed 3 -o phys2k_s3.tsv.gz
    python benchmarks/hpcsim_traces.py deeplearn --jobs 1000 --seed 5 --load 1.2 -o dl1k_s5.tsv

    from hpcsim_traces import generate, write_trace
    rows = generate("physical", n_jobs=2000, seed=3)     # list of dicts, one per row, HPCsim's columns
    write_trace(rows, "phys2k_s3.tsv.gz")

The output is tab-separated, one header line with the 29 columns HPCsim reads (see
`../shared/specs/hpcsim-semantics.md` section 1), then one row per job, gzipped when the name ends
in ".gz". The same arguments always give the same bytes (numpy's PCG64 seeded with `seed`).

What a trace holds (each part has its knob in `generate`'s keywords):

* shapes calibrated on the two reference traces of `shared/fixtures/hpcsim_small/`: on `physical`
  (87 nodes x 72 cores, 14 of 1,519,000 MB and 73 of 710,000 MB) about two thirds one-core jobs,
  single-node jobs of 2..64 cores, whole-node jobs (72 cores) on 1..16 nodes, multi-node jobs with
  fewer cores per node, and memory-bound jobs whose memory per node fits only the big-memory nodes
  (700G = 716,800 MB does not fit a 710,000-MB node; 710000M exactly does); on `deeplearn` (30 nodes
  of 24..32 cores and 4 GPUs; 12 of them with 1,000,000 MB) one to four GPUs per node on one to four
  nodes, and jobs of 28..32 cores or of more than 234,000 MB per node that fit only some node kinds;
* arrivals in bursts that share one Submit second (job-array-like groups of identical requests), with
  gaps drawn so that the offered work is `load` times the partition's capacity (cores on physical,
  GPUs on deeplearn) over the trace's span: above about 0.8 queues form and backfilling matters;
* time limits (TimelimitRaw, minutes) from the values users type most, up to 30 days; run times below
  the limit, some exactly at it, some above it (TIMEOUT rows whose ElapsedRaw HPCsim caps), some 0;
* totals that are exact multiples of the node count (cores, memory, GPUs), memory as G or M totals
  (`units` adds T and K totals, still exact), Alloc = Req unless `alloc_differs` > 0 (then Req*
  columns are partial, as when a user leaves a resource to its default, and HPCsim uses Alloc*);
* optionally rows of another partition mixed in (`foreign`), which HPCsim's partition filter drops,
  and rows slightly out of submit order (`shuffle`), which HPCsim's heap puts back in order.

Every job fits the partition's cluster when it is empty (HPCsim crashes on one that never fits), and
every AdminComment is balanced (one CPU count per node), as HPCsim needs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from dataclasses import dataclass

import numpy as np

from hpcsched.workload.slurm_write import HPCSIM_COLUMNS, admin_comment, node_list, write_lines

COLUMNS = list(HPCSIM_COLUMNS)


@dataclass(frozen=True)
class NodeKind:
    count: int
    cores: int
    memory_mb: int
    gpus: int


#: The node kinds of the two partitions as HPCsim builds them from shared/traces/spartan-platform.
PARTITIONS: dict[str, tuple[NodeKind, ...]] = {
    "physical": (NodeKind(14, 72, 1519000, 0), NodeKind(73, 72, 710000, 0)),
    "deeplearn": (NodeKind(4, 28, 234000, 4), NodeKind(5, 28, 174000, 4), NodeKind(3, 24, 175000, 4),
                  NodeKind(6, 32, 234000, 4), NodeKind(12, 32, 1000000, 4)),
}
HOST_PREFIX = {"physical": "spartan-bm", "deeplearn": "spartan-gpgpu"}
FIRST_ID = {"physical": 2_100_000, "deeplearn": 6_500_000}

#: TimelimitRaw values (minutes) users give most, and how often (from the reference traces)
LIMITS = np.array([9, 14, 30, 58, 60, 120, 240, 360, 480, 720, 1440, 2880, 4320, 7200, 10080,
                   20160, 43200])
LIMIT_WEIGHTS = np.array([2, 2, 8, 2, 9, 9, 12, 6, 5, 7, 12, 7, 6, 5, 4, 3, 1], dtype=float)
START = dt.datetime(2024, 3, 4, 8, 0, 0)


def _fits(kinds, nodes: int, cores: int, mem: float, gpus: int) -> bool:
    """Whether `nodes` nodes of the empty cluster can each hold the per-node request."""
    return sum(k.count for k in kinds
               if k.cores >= cores and k.memory_mb >= mem and k.gpus >= gpus) >= nodes


def _shape_physical(rng: np.random.Generator, knobs: dict) -> tuple[int, int, int, int]:
    """(nodes, cores per node, MB per node, GPUs per node) of one physical job."""
    u = rng.random()
    if u < knobs["one_core"]:
        return 1, 1, int(rng.choice([1000, 1024, 2048, 4000, 4096, 6144, 8192, 16384])), 0
    u = rng.random()
    if u < 0.40:  # one node, a few cores
        c = int(rng.choice([2, 4, 6, 8, 12, 16, 18, 24, 32, 36, 48, 64]))
        return 1, c, int(c * rng.choice([1024, 2048, 4096, 8192])), 0
    if u < 0.62:  # whole nodes
        n = int(min(rng.geometric(0.35), 16))
        return n, 72, int(rng.choice([64, 128, 256, 512]) * 1024), 0
    if u < 0.84:  # several nodes, part of each
        n = int(rng.integers(2, 17))
        c = int(rng.choice([4, 8, 16, 24, 32, 36, 48]))
        return n, c, int(c * rng.choice([2048, 4096])), 0
    if u < 0.92:  # more memory per node than the 710,000-MB nodes have: only the 14 big ones
        n = int(rng.choice([1, 1, 1, 2, 3, 4, 6, 14]))
        c = int(rng.choice([1, 8, 16, 36, 72]))
        gb = int(rng.choice([700, 800, 1000, 1190, 1400, 1450]))
        return n, c, gb * 1024, 0
    # exactly a small node's memory (fits every node), or just under it
    n = int(rng.choice([1, 2, 4]))
    return n, int(rng.choice([8, 36, 72])), int(rng.choice([710000, 700000, 512 * 1024])), 0


def _shape_deeplearn(rng: np.random.Generator, knobs: dict) -> tuple[int, int, int, int]:
    u = rng.random()
    if u < knobs["no_gpu"]:
        return 1, int(rng.choice([1, 2, 4])), int(rng.choice([4096, 8192])), 0
    n = int(rng.choice([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4, 4]))
    g = int(rng.choice([1, 1, 1, 2, 2, 3, 4, 4]))
    if rng.random() < 0.15:  # more cores than the 24- and 28-core nodes have
        c = int(rng.choice([29, 30, 32]))
    else:
        c = int(rng.choice([1, 2, 4, 6, 8, 12, 16, 18, 24]))
    if rng.random() < 0.1:  # more memory than all but the 12 big nodes have
        mem = int(rng.choice([300, 500, 700, 880]) * 1024)
    else:
        mem = int(rng.choice([1000, 4096, 8192, 16384, 32768, 65536, 125000, 174000]))
    return n, c, mem, g


def _memory_text(total_mb: int, rng: np.random.Generator, units: bool) -> str:
    if units and total_mb % (1024 * 1024) == 0 and rng.random() < 0.5:
        return f"{total_mb // (1024 * 1024)}T"
    if units and rng.random() < 0.05:
        return f"{total_mb * 1024}K"
    if total_mb % 1024 == 0 and rng.random() < 0.67:
        return f"{total_mb // 1024}G"
    return f"{total_mb}M"


def _run_seconds(rng: np.random.Generator, limit_s: int, knobs: dict) -> int:
    u = rng.random()
    if u < knobs["zero_run"]:
        return 0
    if u < knobs["zero_run"] + knobs["over_limit"]:  # TIMEOUT: Slurm kills a little after the limit
        return limit_s + int(rng.integers(1, 300))
    if u < knobs["zero_run"] + knobs["over_limit"] + 0.003:
        return limit_s
    return max(1, int(limit_s * rng.beta(0.6, 1.2)))


def generate(partition: str, n_jobs: int, seed: int, *, load: float = 1.0,
             burst_mean: float = 1.8, one_core: float = 0.66, no_gpu: float = 0.0,
             zero_run: float = 0.002, over_limit: float = 0.08, units: bool = False,
             alloc_differs: float = 0.0, foreign: float = 0.0, shuffle: float = 0.0,
             start: dt.datetime = START) -> list[dict[str, str]]:
    """`n_jobs` rows of `partition` ("physical" or "deeplearn") in HPCsim's columns, as strings.

    `load`: offered work over the trace's span as a fraction of the partition's capacity (core
    seconds on physical, GPU seconds on deeplearn). `burst_mean`: mean number of jobs that share one
    Submit second. `one_core` (physical) and `no_gpu` (deeplearn): fractions of those jobs.
    `zero_run`, `over_limit`: fractions of jobs with ElapsedRaw 0 and above the limit. `units`: also
    write T and K memory totals. `alloc_differs`: fraction of rows whose Req* columns are partial.
    `foreign`: fraction of extra rows of another partition (not counted in `n_jobs`). `shuffle`:
    fraction of rows swapped with a neighbour (out of submit order).
    """
    if partition not in PARTITIONS:
        raise ValueError(f"unknown partition {partition!r}; known: {', '.join(PARTITIONS)}")
    kinds = PARTITIONS[partition]
    rng = np.random.default_rng(seed)
    knobs = dict(one_core=one_core, no_gpu=no_gpu, zero_run=zero_run, over_limit=over_limit)
    shape = _shape_physical if partition == "physical" else _shape_deeplearn

    # 1. requests and run times, in groups that arrive together
    jobs = []
    n_groups = 0
    while len(jobs) < n_jobs:
        size = int(min(rng.geometric(1.0 / burst_mean), n_jobs - len(jobs)))
        while True:
            nodes, cores, mem, gpus = shape(rng, knobs)
            if _fits(kinds, nodes, cores, mem, gpus):
                break
        limit = int(rng.choice(LIMITS, p=LIMIT_WEIGHTS / LIMIT_WEIGHTS.sum()))
        if rng.random() < 0.3:  # a typed, unround limit
            limit = int(rng.integers(1, min(limit, 30 * 1440) + 1))
        for _ in range(size):
            jobs.append(dict(group=n_groups, nodes=nodes,
                             cores=cores, mem=mem, gpus=gpus, limit=limit,
                             run=_run_seconds(rng, limit * 60, knobs)))
        n_groups += 1

    # 2. arrival times: exponential gaps between groups, scaled to the offered load
    capacity = sum(k.count * (k.gpus if partition == "deeplearn" else k.cores) for k in kinds)
    work = sum(j["nodes"] * (j["gpus"] if partition == "deeplearn" else j["cores"])
               * min(j["run"], j["limit"] * 60) for j in jobs)
    span = work / (load * capacity)
    gaps = rng.exponential(span / max(n_groups, 1), size=n_groups)
    gaps[0] = 0.0
    group_time = np.floor(np.cumsum(gaps)).astype(np.int64)

    # 3. rows
    prefix = HOST_PREFIX[partition]
    rows = []
    for i, j in enumerate(jobs):
        rows.append(_row(FIRST_ID[partition] + i, partition, prefix, j, start
                         + dt.timedelta(seconds=int(group_time[j["group"]])), rng, units,
                         rng.random() < alloc_differs))
    if foreign > 0:
        other = "deeplearn" if partition == "physical" else "physical"
        oshape = _shape_physical if other == "physical" else _shape_deeplearn
        for k in range(int(round(foreign * n_jobs))):
            while True:
                nodes, cores, mem, gpus = oshape(rng, dict(knobs, one_core=0.66, no_gpu=0.0))
                if _fits(PARTITIONS[other], nodes, cores, mem, gpus):
                    break
            limit = int(rng.choice(LIMITS))
            j = dict(nodes=nodes, cores=cores, mem=mem, gpus=gpus, limit=limit,
                     run=_run_seconds(rng, limit * 60, knobs))
            t = start + dt.timedelta(seconds=int(rng.integers(-3600, int(group_time[-1]) + 3600)))
            pos = int(rng.integers(0, len(rows) + 1))
            rows.insert(pos, _row(FIRST_ID[other] + k, other, HOST_PREFIX[other], j, t, rng,
                                  units, False))
    if shuffle > 0:
        for _ in range(int(shuffle * len(rows))):
            p = int(rng.integers(0, len(rows) - 1))
            rows[p], rows[p + 1] = rows[p + 1], rows[p]
    return rows


def _row(job_id: int, partition: str, prefix: str, j: dict, submit: dt.datetime,
         rng: np.random.Generator, units: bool, partial_request: bool) -> dict[str, str]:
    n, c, mem, g = j["nodes"], j["cores"], j["mem"], j["gpus"]
    total_mem = _memory_text(n * mem, rng, units)
    admin = admin_comment(prefix, n, c, f"gpu:A100:{g}" if g else "")
    nodelist = node_list(prefix, n)
    uid = int(rng.integers(10000, 10400))
    run = j["run"]
    end = submit + dt.timedelta(seconds=run)
    state = "TIMEOUT" if run > j["limit"] * 60 else ("FAILED" if rng.random() < 0.02 else "COMPLETED")
    req_cpus, req_nodes, req_gpu, req_mem = n * c, n, n * g, total_mem
    if partial_request:  # what Slurm records when the user named only part of the request
        req_cpus, req_mem = max(1, n * c // 2), f"{max(1, n * mem // 2)}M"
        req_nodes = 1 if rng.random() < 0.5 else n
    t = submit.strftime("%Y-%m-%dT%H:%M:%S")
    return {
        "JobID": str(job_id), "UID": str(uid), "GID": str(uid),
        "Account": f"punim{int(rng.integers(1, 100)):04d}",
        "AllocCPUS": str(n * c), "AllocNodes": str(n), "Allgpu": str(n * g), "Allmem": total_mem,
        "ReqCPUS": str(req_cpus), "ReqNodes": str(req_nodes), "Reqgpu": str(req_gpu),
        "ReqMem": req_mem, "TimelimitRaw": str(j["limit"]), "AdminComment": admin,
        "Constraints": "(null)", "CPUTimeRAW": str(run * n * c), "ElapsedRaw": str(run),
        "Eligible": t, "Submit": t, "Start": t, "End": end.strftime("%Y-%m-%dT%H:%M:%S"),
        "State": state, "NodeList": nodelist, "Partition": partition, "Reserved": "00:00:00",
        "QOS": "normal", "QOSRAW": "1", "Reason": "None", "difference": "0",
    }


def write_trace(rows: list[dict[str, str]], path: str | os.PathLike) -> None:
    """Write rows as HPCsim's tab-separated file (gzip when the name ends in .gz; mtime 0, so the
    bytes depend on the rows only)."""
    write_lines(path, [["\t".join(COLUMNS)], ("\t".join(r[c] for c in COLUMNS) for r in rows)])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("partition", choices=sorted(PARTITIONS))
    ap.add_argument("--jobs", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--load", type=float, default=1.0)
    ap.add_argument("--burst-mean", type=float, default=1.8)
    ap.add_argument("--no-gpu", type=float, default=0.0)
    ap.add_argument("--zero-run", type=float, default=0.002)
    ap.add_argument("--over-limit", type=float, default=0.08)
    ap.add_argument("--units", action="store_true")
    ap.add_argument("--alloc-differs", type=float, default=0.0)
    ap.add_argument("--foreign", type=float, default=0.0)
    ap.add_argument("--shuffle", type=float, default=0.0)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args(argv)
    rows = generate(a.partition, a.jobs, a.seed, load=a.load, burst_mean=a.burst_mean,
                    no_gpu=a.no_gpu, zero_run=a.zero_run, over_limit=a.over_limit, units=a.units,
                    alloc_differs=a.alloc_differs, foreign=a.foreign, shuffle=a.shuffle)
    write_trace(rows, a.out)
    print(f"{a.out}: {len(rows)} rows")


if __name__ == "__main__":
    main()
