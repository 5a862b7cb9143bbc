"""Synthetic ``sacct -X -P`` files of any size in the issue's column set, for timing the reader and
for a consistency test that knows, for every row, what the reader must make of it.

    python benchmarks/sacct_traces.py 2000000 /tmp/sacct-2m.txt

    from sacct_traces import generate, write
    rows, expected = generate(100_000, seed=1)   # the lines (header first), and the truth

Not a workload model: values are drawn uniformly from small sets of the forms real files hold. Of
every 20 rows about 14 are plain jobs, and one each a job step (``123.batch``), an array task
(``123_4``), a heterogeneous job's component (``123+1``), a pending job, a running job and a pending
array range (``123_[3-9]``); states COMPLETED, FAILED, TIMEOUT, ``CANCELLED by 1001``,
OUT_OF_MEMORY and NODE_FAIL; limits from 1 hour to 3 days or UNLIMITED; ReqMem as a job total
(``16G``) or per CPU (``4000Mc``); GPUs given both untyped and typed (``gres/gpu:a100=2,gres/gpu=2``).
The same arguments always give the same bytes.
"""

from __future__ import annotations

import sys

import numpy as np

COLUMNS = ("JobIDRaw|JobID|User|Account|Partition|QOS|Submit|Eligible|Start|End|ElapsedRaw|"
           "TimelimitRaw|NNodes|NCPUS|ReqCPUS|ReqNodes|ReqMem|ReqTRES|AllocTRES|State")
KINDS = np.array(["job"] * 14 + ["step", "array", "het", "pending", "running", "range"])
STATES = np.array(["COMPLETED", "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 1001",
                   "OUT_OF_MEMORY", "NODE_FAIL"])
T0 = np.datetime64("2024-01-01T00:00:00", "s")


def _stamps(seconds: np.ndarray) -> np.ndarray:
    return np.datetime_as_string(T0 + seconds.astype("timedelta64[s]"), unit="s").astype(object)


def _text(values: np.ndarray) -> np.ndarray:
    return values.astype(str).astype(object)


def generate(n: int, seed: int = 0) -> tuple[list[str], dict[str, np.ndarray]]:
    """The file's lines (the header first, then `n` rows) and what the reader must make of them:
    ``kind`` per row ('job', 'array', 'het' kept; 'step', 'range', 'pending', 'running' dropped),
    and for the kept rows, in file order, ``job_id`` (the JobID text), ``submit`` (s since
    2024-01-01), ``run``, ``limit`` (s, -1 for UNLIMITED), ``nodes``, ``cores_per_node``,
    ``mem_per_node`` (MB), ``gpus_per_node`` and ``state`` (the state's first word)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 30 * 86400, n))
    wait = rng.integers(0, 7200, n)
    run = rng.integers(0, 86400, n)
    limit_min = rng.choice([60, 240, 1440, 4320, -1], n)
    nodes = rng.choice([1, 1, 1, 2, 4], n)
    cores = rng.choice([1, 2, 4, 8, 16, 32], n)
    gpus = rng.choice([0, 0, 0, 1, 2, 4], n)
    kind = rng.choice(KINDS, n)
    state = rng.choice(STATES, n).astype(object)
    user = rng.integers(0, 500, n)
    per_cpu = rng.random(n) < 1 / 3

    raw = 1001 + np.arange(n)
    raw_s = _text(raw)
    prev_s = _text(raw - 1)
    job_id = raw_s.copy()
    task = _text(np.arange(n) % 7)
    for k, fmt in (("array", "{}_{}"), ("het", "{}+{}")):
        m = np.flatnonzero(kind == k)
        job_id[m] = [fmt.format(p, t) for p, t in zip(prev_s[m], task[m])]
    m = np.flatnonzero(kind == "step")
    job_id[m] = [f"{p}.batch" for p in prev_s[m]]
    m = np.flatnonzero(kind == "range")
    job_id[m] = [f"{r}_[3-9]" for r in raw_s[m]]

    ncpus = cores * nodes
    ngpus = gpus * nodes
    start_s, end_s, elapsed = _stamps(submit + wait), _stamps(submit + wait + run), _text(run)
    limit = np.where(limit_min < 0, "UNLIMITED", _text(limit_min)).astype(object)
    tres = np.array([f"billing={c},cpu={c},mem={c * 4}G,node={k}" for c, k in zip(ncpus, nodes)],
                    dtype=object)
    with_gpu = ngpus > 0
    tres[with_gpu] = tres[with_gpu] + np.array(
        [f",gres/gpu:a100={g},gres/gpu={g}" for g in ngpus[with_gpu]], dtype=object)
    alloc = tres.copy()
    req_mem = np.where(per_cpu, "4000Mc", np.array([f"{c * 4}G" for c in ncpus])).astype(object)
    waiting = (kind == "pending") | (kind == "range")
    state[waiting] = "PENDING"
    start_s[waiting] = end_s[waiting] = "Unknown"
    elapsed[waiting] = "0"
    alloc[waiting] = ""
    state[kind == "running"] = "RUNNING"
    end_s[kind == "running"] = "Unknown"
    partition = np.where(with_gpu, "gpu", "cpu").astype(object)
    submit_s = _stamps(submit)
    columns = [raw_s, job_id, "u" + _text(user), np.full(n, "acct", object), partition,
               np.full(n, "normal", object), submit_s, submit_s, start_s, end_s, elapsed, limit,
               _text(nodes), _text(ncpus), _text(ncpus), _text(nodes), req_mem, tres, alloc, state]
    lines = [COLUMNS] + ["|".join(fields) for fields in zip(*columns)]

    kept = np.isin(kind, ["job", "array", "het"])
    expected = {
        "kind": kind, "job_id": job_id[kept].astype(str), "submit": submit[kept],
        "run": run[kept], "limit": np.where(limit_min < 0, -1, limit_min * 60)[kept],
        "nodes": nodes[kept], "cores_per_node": cores[kept],
        # the allocation (AllocTRES mem=, 4G per CPU) wins over a per-CPU ReqMem
        "mem_per_node": (cores * 4 * 1024)[kept], "gpus_per_node": gpus[kept],
        "state": np.array([s.split()[0] for s in state[kept]]),
        "per_cpu": per_cpu[kept],
    }
    return lines, expected


def write(path: str, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Write `n` rows to `path`; return `generate`'s expected values."""
    lines, expected = generate(n, seed)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return expected


if __name__ == "__main__":
    n_rows, dest = int(sys.argv[1]), sys.argv[2]
    kinds = write(dest, n_rows)["kind"]
    print(dict(zip(*np.unique(kinds, return_counts=True))))
