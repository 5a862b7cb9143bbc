"""How fast the simulator is, and how much memory it takes.

    python benchmarks/simulate.py            # about two minutes on a 2-core machine
    python benchmarks/simulate.py --quick    # fewer policies on the whole trace

1. The paper's ten 1024-job windows of HPC2N under the rlscheduler profile, per heuristic, with and
   without backfilling: our engine against `naive.py`, a plain object-per-job simulator of the same
   semantics, run in the same process (start times are checked equal first). The authors' own
   simulator takes about 0.025-0.05 s per window for FCFS/SJF and 0.1-1.3 s for F1/WFP3/UNICEP on
   these machines.
2. The whole HPC2N trace (202,871 jobs) under the standard profile, every heuristic, none and EASY:
   jobs simulated per second.
3. Growth: SJF + EASY on the first 12.5k .. 200k jobs, and on disjoint 50k chunks; time per job
   stays flat where the workload's density does (the later years of HPC2N queue far more jobs).
4. Memory: the peak of Python allocations while simulating the whole trace (tracemalloc), and the
   process's peak resident size.
5. End to end: `hpcsched simulate hpc2n --policy sjf --backfill easy` as a user runs it.

Prints a table, then as its last line `name=value` pairs.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import naive  # noqa: E402

from hpcsched.policies.priority import get_policy, policy_names  # noqa: E402
from hpcsched.sim.factory import make_engine  # noqa: E402
from hpcsched.sim.run import prepare, simulate  # noqa: E402
from hpcsched.workload.windows import paper_windows  # noqa: E402


def timed(fn, repeat=1):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def paper_windows_section(pairs):
    prep = prepare("hpc2n", "rlscheduler")
    starts = paper_windows()
    print("1. HPC2N, the paper's 10 windows x 1024 jobs, rlscheduler profile (ms per window)")
    print(f"{'policy':<12}{'backfill':<10}{'hpcsched':>10}{'naive':>10}{'speedup':>9}")
    ratios = []
    for name in ["fcfs", "sjf", "f1", "wfp3-rls", "unicep-rls"]:
        for bf in ["none", "schedgym"]:
            ours = naive_t = 0.0
            for s in starts:
                w = prep.jobs.window(s, 1024)
                t, res = timed(lambda: make_engine(w, prep.cluster, prep.profile, bf)
                               .run(get_policy(name)), repeat=3)
                ours += t
                args = (w.submit.tolist(), w.run_time.tolist(), w.req_time.tolist(),
                        w.procs.tolist(), prep.cluster.nodes, prep.cluster.procs_per_node, name,
                        bf == "schedgym")
                tn, ref = timed(lambda: naive.simulate(*args))
                naive_t += tn
                if ref != res.start.tolist():
                    raise SystemExit(f"naive and hpcsched disagree on {name}/{bf} window {s}")
            ms, nms = 1000 * ours / len(starts), 1000 * naive_t / len(starts)
            ratios.append(nms / ms)
            print(f"{name:<12}{bf:<10}{ms:>10.2f}{nms:>10.2f}{nms / ms:>8.1f}x")
            pairs[f"window_ms_{name}_{bf}"] = round(ms, 3)
    pairs["window_speedup_min"] = round(min(ratios), 1)
    print()


def whole_trace_section(pairs, quick):
    t_load, prep = timed(lambda: prepare("hpc2n", "standard"))
    n = len(prep.jobs)
    pairs["load_clean_s"] = round(t_load, 2)
    print(f"2. whole HPC2N, {n} jobs, standard profile (load + clean {t_load:.2f} s)")
    print(f"{'policy':<12}{'backfill':<10}{'seconds':>9}{'jobs/s':>10}{'bsld':>10}")
    names = ["fcfs", "sjf", "f1", "wfp3"] if quick else policy_names()
    for name in names:
        for bf in ["none", "easy"]:
            t, res = timed(lambda: simulate(prep, get_policy(name), backfill=bf))
            print(f"{name:<12}{bf:<10}{t:>9.2f}{n / t:>10.0f}{res.metrics['bsld']:>10.2f}")
            pairs[f"jobs_per_s_{name}_{bf}"] = int(n / t)
    print()
    return prep


def growth_section(pairs, prep):
    print("3. growth, SJF + EASY on the first N jobs (microseconds per job)")
    base = None
    for n in [12_500, 25_000, 50_000, 100_000, 200_000]:
        t, _ = timed(lambda: simulate(prep, get_policy("sjf"), backfill="easy", start=0, jobs=n))
        per = 1e6 * t / n
        base = base or per
        print(f"{n:>8} jobs {t:>7.2f} s {per:>7.2f} us/job  ({per / base:.2f}x the smallest)")
        pairs[f"us_per_job_first_{n}"] = round(per, 2)
    # The later years of HPC2N are far busier (longer queues to scan at each pass), so a prefix's
    # cost per job also measures the workload. Equal chunks on their own separate the two effects.
    print("   disjoint chunks of 50,000 jobs, each simulated on its own:")
    for s in range(0, 200_000, 50_000):
        n = min(50_000, len(prep.jobs) - s)
        t, res = timed(lambda: simulate(prep, get_policy("sjf"), backfill="easy", start=s, jobs=n))
        print(f"   [{s:>6}, {s + n:>6}) {1e6 * t / n:>7.2f} us/job  mean wait "
              f"{res.metrics['wait']:>7.0f} s")
    print()


def memory_section(pairs, prep):
    tracemalloc.start()
    simulate(prep, get_policy("sjf"), backfill="easy")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"4. memory: peak Python allocations while simulating the whole trace {peak / 2**20:.1f} "
          f"MiB; process peak resident size {rss:.0f} MiB")
    pairs["sim_peak_mib"] = round(peak / 2**20, 1)
    pairs["process_rss_mib"] = int(rss)
    print()


def end_to_end_section(pairs):
    cmd = [sys.executable, "-m", "hpcsched.cli", "simulate", "hpc2n", "--policy", "sjf",
           "--backfill", "easy", "--json"]
    t, proc = timed(lambda: subprocess.run(cmd, capture_output=True, text=True), repeat=2)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    print(f"5. end to end: hpcsched simulate hpc2n --policy sjf --backfill easy: {t:.2f} s")
    pairs["end_to_end_s"] = round(t, 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="four policies on the whole trace")
    args = ap.parse_args()
    pairs: dict[str, object] = {}
    paper_windows_section(pairs)
    prep = whole_trace_section(pairs, args.quick)
    growth_section(pairs, prep)
    memory_section(pairs, prep)
    end_to_end_section(pairs)
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))


if __name__ == "__main__":
    main()
