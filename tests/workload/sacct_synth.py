"""A synthetic ``sacct -X -P`` file of any size, in the issue's column set, for the speed
measurement and a consistency test. Not a workload model: values are drawn uniformly from small
sets of the forms real files hold (steps, array tasks, pending ranges, hetjob components, every
state, UNLIMITED limits, per-CPU and per-node memory, typed GPUs).

    python tests/workload/sacct_synth.py 2000000 /tmp/sacct-2m.txt
"""

from __future__ import annotations

import datetime as dt
import sys

import numpy as np

COLUMNS = ("JobIDRaw|JobID|User|Account|Partition|QOS|Submit|Eligible|Start|End|ElapsedRaw|"
           "TimelimitRaw|NNodes|NCPUS|ReqCPUS|ReqNodes|ReqMem|ReqTRES|AllocTRES|State")
T0 = dt.datetime(2024, 1, 1)


def _stamp(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=int(seconds))).strftime("%Y-%m-%dT%H:%M:%S")


def lines(n: int, seed: int = 0):
    """The header, then `n` rows. Yields (line, kind): kind is 'job', 'step', 'range', 'pending',
    'running' for what the reader must do with it."""
    rng = np.random.default_rng(seed)
    yield COLUMNS, "header"
    submit = np.sort(rng.integers(0, 30 * 86400, n))
    waits = rng.integers(0, 7200, n)
    runs = rng.integers(0, 86400, n)
    limits = rng.choice([60, 240, 1440, 4320, -1], n)
    nodes = rng.choice([1, 1, 1, 2, 4], n)
    cores = rng.choice([1, 2, 4, 8, 16, 32], n)
    gpus = rng.choice([0, 0, 0, 1, 2, 4], n)
    kinds = rng.choice(["job"] * 14 + ["step", "array", "het", "pending", "running", "range"], n)
    states = rng.choice(["COMPLETED", "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 1001",
                         "OUT_OF_MEMORY", "NODE_FAIL"], n)
    users = rng.integers(0, 500, n)
    next_id = 1000
    for i in range(n):
        next_id += 1
        kind = str(kinds[i])
        jid = str(next_id)
        if kind == "array":
            jid = f"{next_id - 1}_{i % 7}"
        elif kind == "het":
            jid = f"{next_id - 1}+{i % 2}"
        elif kind == "step":
            jid = f"{next_id - 1}.batch"
        elif kind == "range":
            jid = f"{next_id}_[3-9]"
        sub = submit[i]
        start, end = sub + waits[i], sub + waits[i] + runs[i]
        state = str(states[i])
        limit = "UNLIMITED" if limits[i] < 0 else str(limits[i])
        nn, nc, ng = int(nodes[i]), int(cores[i] * nodes[i]), int(gpus[i] * nodes[i])
        start_s, end_s, elapsed = _stamp(start), _stamp(end), str(runs[i])
        alloc = f"billing={nc},cpu={nc},mem={nc * 4}G,node={nn}"
        if ng:
            alloc += f",gres/gpu:a100={ng},gres/gpu={ng}"
        req = alloc
        mem = f"{4000}Mc" if i % 3 == 0 else f"{nc * 4}G"
        if kind in ("pending", "range"):
            state, start_s, end_s, elapsed, alloc = "PENDING", "Unknown", "Unknown", "0", ""
            kind = "pending" if kind == "pending" else "range"
        elif kind == "running":
            state, end_s = "RUNNING", "Unknown"
        part = "gpu" if ng else "cpu"
        row = [str(next_id), jid, f"u{users[i]}", "acct", part, "normal", _stamp(sub),
               _stamp(sub), start_s, end_s, elapsed, limit, str(nn), str(nc), str(nc), str(nn),
               mem, req, alloc, state]
        yield "|".join(row), kind if kind in ("step", "range", "pending", "running") else "job"


def write(path: str, n: int, seed: int = 0) -> dict[str, int]:
    """Write the file; return how many rows of each kind it has."""
    counts: dict[str, int] = {}
    with open(path, "w") as f:
        for text, kind in lines(n, seed):
            f.write(text + "\n")
            counts[kind] = counts.get(kind, 0) + 1
    counts.pop("header")
    return counts


if __name__ == "__main__":
    n = int(sys.argv[1])
    print(write(sys.argv[2], n))
