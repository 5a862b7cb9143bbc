"""hpcsched's `hpcsim` profile against HPCsim's own schedules, job by job.

    python benchmarks/hpcsim_compare.py TRACE.tsv[.gz] HPCSIM.json.gz [--only fcfs+best_fit]

HPCSIM.json.gz is what `hpcsim_reference.py` writes (or a fixture of `tests/data/hpcsim_small/`):
for each case (selector x allocator x backfilling), every job's start time and hostnames in
allocation order. For each case this runs the same configuration here and counts the jobs whose
start or nodes differ. Exit status 0 when every case is identical.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time

from hpcsched.cluster.load import load_cluster
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.workload.cleaning import clean
from hpcsched.workload.slurm import read_hpcsim

SELECTORS = {"f_1": "f1", "f_2": "f2"}
ALLOCATORS = {"first_available": "first-available", "best_fit": "best-fit",
              "topology_aware": "topology"}


def compare(trace: str, reference: str, only: str | None = None) -> int:
    """Print one line per case; return the number of cases that differ."""
    with gzip.open(reference, "rt") as f:
        ref = json.load(f)
    partition = ref["partition"]
    cluster = load_cluster(f"spartan-{partition}")
    jobs, _ = clean(read_hpcsim(trace, partition), "hpcsim")
    row = {int(j): i for i, j in enumerate(jobs.job_id.tolist())}
    names = cluster.names
    bad = 0
    for key, case in sorted(ref["cases"].items()):
        if only and only not in key:
            continue
        t0 = time.process_time()
        engine = make_engine(jobs, cluster, "hpcsim", "easy" if case["backfill"] else "none",
                             allocator=ALLOCATORS[case["allocator"]])
        result = engine.run(get_policy(SELECTORS.get(case["selector"], case["selector"]),
                                       dialect="hpcsim"))
        cpu = time.process_time() - t0
        starts = nodes = 0
        for job_id, _submit, start, _end, hosts, _backfilled in case["jobs"]:
            i = row[int(job_id)]
            starts += int(result.start[i]) != start
            nodes += [names[k] for k in result.allocations[i]] != hosts
        missing = len(jobs) - len(case["jobs"])
        same = starts == nodes == missing == 0
        bad += not same
        print(f"{key:34s} {'same' if same else 'DIFFERENT'}  jobs={len(case['jobs'])} "
              f"start_differs={starts} nodes_differ={nodes} {cpu:.2f} CPU s", flush=True)
    print(f"{trace}: {bad} case(s) differ")
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("reference", help="HPCsim's schedules (hpcsim_reference.py output)")
    ap.add_argument("--only", help="only the cases whose key contains this (e.g. sjf+topology)")
    a = ap.parse_args(argv)
    return 1 if compare(a.trace, a.reference, a.only) else 0


if __name__ == "__main__":
    sys.exit(main())
