"""How fast a Spartan-sized heterogeneous run is: 84,000 jobs on spartan-physical (87 nodes of 72
cores, shared), the compiled pass loop (`hpcsched.sim.kernels_nodes`) against the Python engine and
against HPCsim, the thesis's own simulator.

    python benchmarks/spartan_speed.py                                  # the generated trace
    python benchmarks/spartan_speed.py TRACE.tsv.gz --hpcsim-json H.json.gz [--hpcsim-json ...]
    python benchmarks/spartan_speed.py --run-hpcsim 10000 --hpcsim DIR  # time HPCsim on a prefix
    python benchmarks/spartan_speed.py --quick                          # fewer configurations

The trace defaults to phys84k_s106.tsv.gz in the temporary folder, generated there where it is
missing with `hpcsim_traces.py physical --jobs 84000 --seed 106` (the same bytes every time).

1. Compilation: the first compiled call in the process (numba compiles, or loads its cache).
2. Every HPCsim selector x every allocator, EASY backfilling under the `hpcsim` profile (HPCsim's
   own), and a few of ours under `standard`, on the whole trace: wall and CPU seconds per run,
   warm (`run_compiled` + `result()`, what `Engine.run` does; the trace is read once, before, and
   one untimed run on the whole trace comes first).
3. The Python engine (stepped decision by decision) on the first 10,000 jobs, against the compiled
   loop on the same jobs: the same schedule (checked), and the ratio of times.
4. HPCsim: its CPU seconds from the JSON files of `hpcsim_reference.py` (`timing` of
   each case; the JSON also holds HPCsim's schedule, which is checked against ours), or measured now
   with `--run-hpcsim N` (HPCsim on the first N jobs, fcfs + best_fit + backfilling; a whole run
   takes HPCsim most of an hour). Each ratio is taken on the number of jobs HPCsim ran.

The machine's load average is printed before and after: other processes share its cores, so wall
times are pessimistic; CPU seconds are the process's own. Prints a table, then as its last line
`name=value` pairs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from hpcsched.cluster.load import load_cluster  # noqa: E402
from hpcsched.policies.priority import get_policy  # noqa: E402
from hpcsched.sim import kernels_nodes  # noqa: E402
from hpcsched.sim.engine import BACKFILLED  # noqa: E402
from hpcsched.sim.factory import make_engine  # noqa: E402
from hpcsched.workload.cleaning import clean  # noqa: E402
from hpcsched.workload.slurm import read_hpcsim  # noqa: E402

DEFAULT_TRACE = os.path.join(tempfile.gettempdir(), "phys84k_s106.tsv.gz")
SELECTORS = ("fcfs", "lcfs", "sjf", "wfp3", "unicep", "f1", "f2")
ALLOCATORS = ("first-available", "best-fit", "topology")
HPCSIM_NAMES = {"f1": "f_1", "f2": "f_2", "first-available": "first_available",
                "best-fit": "best_fit", "topology": "topology_aware"}
OURS = {  # under the standard profile: our heuristics (static keys) and allocators
    "fcfs": "best-fit", "sjf": "best-fit", "f1": "topology", "saf": "first-available"}
QUICK_HPCSIM = (("fcfs", "best-fit"), ("wfp3", "best-fit"), ("sjf", "topology"),
                ("unicep", "first-available"))


def cpu_wall(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def load_jobs(path: str):
    return clean(read_hpcsim(path, "physical"), "hpcsim")[0]


def policy_for(profile: str, name: str):
    return get_policy(name, dialect="hpcsim" if profile == "hpcsim" else "")


def compiled_run(jobs, cluster, profile, policy_name, allocator):
    """One warm compiled run as `Engine.run` makes it: (cpu s, wall s, engine, result)."""
    engine = make_engine(jobs, cluster, profile, "easy", allocator=allocator)
    policy = policy_for(profile, policy_name)

    def go():
        if not kernels_nodes.run_compiled(engine, policy):
            raise RuntimeError(f"the compiled loop declined {profile} {policy_name} {allocator}")
        return engine.result(policy.name)

    cpu, wall, result = cpu_wall(go)
    return cpu, wall, engine, result


def python_run(jobs, cluster, profile, policy_name, allocator):
    """The Python engine, decision by decision (never the compiled loop)."""
    engine = make_engine(jobs, cluster, profile, "easy", allocator=allocator)
    policy = policy_for(profile, policy_name)

    def go():
        while (view := engine.next_decision()) is not None:
            engine.apply(engine.choose(policy, view))
        return engine.result(policy.name)

    cpu, wall, result = cpu_wall(go)
    return cpu, wall, engine, result


def same_schedule(a_engine, a_result, b_engine, b_result) -> bool:
    return (a_result.start.tolist() == b_result.start.tolist()
            and [x.tolist() for x in a_result.allocations] ==
            [x.tolist() for x in b_result.allocations]
            and a_engine.mode.tolist() == b_engine.mode.tolist()
            and a_engine.decisions == b_engine.decisions)


def matches_hpcsim(case: dict, engine, result, names) -> bool:
    for i, (_, _, start, _, nodes, backfilled) in enumerate(case["jobs"]):
        if (result.start[i], [names[n] for n in result.allocations[i]],
                bool(engine.mode[i] == BACKFILLED)) != (start, nodes, backfilled):
            return False
    return True


def run_hpcsim_prefix(trace: str, n: int, out_dir: str, hpcsim: str, python: str) -> str:
    """HPCsim (fcfs + best_fit + backfilling) on the first n jobs of `trace`, by its driver."""
    prefix = os.path.join(out_dir, f"first{n}.tsv")
    with gzip.open(trace, "rt") if trace.endswith(".gz") else open(trace) as f, \
            open(prefix, "w") as out:
        for i, line in enumerate(f):
            if i > n:
                break
            out.write(line)
    result = os.path.join(out_dir, f"first{n}.json.gz")
    subprocess.run([python, os.path.join(HERE, "hpcsim_reference.py"), "--hpcsim", hpcsim, prefix,
                    "--partition", "physical", "-o", result, "--selectors", "fcfs",
                    "--allocators", "best_fit", "--backfill", "on"], check=True,
                   stdout=subprocess.DEVNULL)
    return result


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", nargs="?", default=DEFAULT_TRACE)
    ap.add_argument("--hpcsim-json", action="append", default=[],
                    help="hpcsim_reference.py output with HPCsim's timings (repeatable)")
    ap.add_argument("--run-hpcsim", type=int, metavar="N",
                    help="run HPCsim now on the first N jobs (fcfs + best_fit + backfilling)")
    ap.add_argument("--hpcsim", default=os.environ.get("HPCSIM_DIR", ""),
                    help="for --run-hpcsim: a checkout of HPCsim's repository (see hpcsim_reference.py)")
    ap.add_argument("--hpcsim-python", default=sys.executable,
                    help="for --run-hpcsim: a Python with HPCsim's requirements (default this one)")
    ap.add_argument("--python-jobs", type=int, default=10_000,
                    help="jobs for the Python engine's comparison (default 10000)")
    ap.add_argument("--quick", action="store_true", help="4 HPCsim configurations, 2 of ours")
    a = ap.parse_args(argv)

    load_before = os.getloadavg()
    trace = a.trace
    if not os.path.exists(trace):
        import hpcsim_traces

        trace = os.path.join(tempfile.gettempdir(), "phys84k_s106.tsv.gz")
        if not os.path.exists(trace):
            print(f"{a.trace} is missing: generating it ({trace})")
            hpcsim_traces.write_trace(hpcsim_traces.generate("physical", 84000, 106, load=1.0),
                                      trace)
    cpu, wall, jobs = cpu_wall(lambda: load_jobs(trace))
    cluster = load_cluster("spartan-physical")
    print(f"trace {trace}: {len(jobs)} jobs, {cluster.describe()}")
    print(f"read and clean: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)} "
          f"({os.cpu_count()} cores)")

    # 1. compilation
    tiny = jobs.window(0, 50)
    c_cpu, c_wall, _, _ = compiled_run(tiny, cluster, "hpcsim", "fcfs", "best-fit")
    print(f"\n1. first compiled call (compiles, or loads numba's cache): {c_wall:.2f} s wall, "
          f"{c_cpu:.2f} s CPU")

    # a first run on the whole trace is slower than the next ones (the process's memory grows to
    # its size); time the ones after it
    w_cpu, w_wall, _, _ = compiled_run(jobs, cluster, "hpcsim", "fcfs", "best-fit")
    print(f"   first run on the whole trace (not timed below): {w_wall:.2f} s wall, "
          f"{w_cpu:.2f} s CPU")

    # 2. the whole trace
    configs = [("hpcsim", s, al) for s in SELECTORS for al in ALLOCATORS]
    ours = list(OURS.items())
    if a.quick:
        configs = [("hpcsim", s, al) for s, al in QUICK_HPCSIM]
        ours = ours[:2]
    configs += [("standard", s, al) for s, al in ours]
    print(f"\n2. compiled loop, whole trace ({len(jobs)} jobs), EASY, warm")
    print(f"{'profile':<10}{'policy':<8}{'allocator':<17}{'wall s':>8}{'CPU s':>8}"
          f"{'jobs/s':>10}{'mean wait h':>13}{'backfilled':>11}")
    runs = {}
    for profile, sel, al in configs:
        cpu, wall, engine, result = compiled_run(jobs, cluster, profile, sel, al)
        runs[(profile, sel, al)] = (cpu, wall, engine, result)
        print(f"{profile:<10}{sel:<8}{al:<17}{wall:>8.2f}{cpu:>8.2f}{len(jobs) / wall:>10.0f}"
              f"{result.metrics['wait'] / 3600:>13.1f}"
              f"{int(np.count_nonzero(engine.mode == BACKFILLED)):>11}")
    worst_wall = max(r[1] for r in runs.values())
    worst_cpu = max(r[0] for r in runs.values())
    mean_cpu = float(np.mean([r[0] for r in runs.values()]))
    print(f"slowest: {worst_wall:.2f} s wall, {worst_cpu:.2f} s CPU; mean {mean_cpu:.2f} s CPU")

    # 3. the Python engine on a prefix
    n_py = min(a.python_jobs, len(jobs))
    prefix = jobs.window(0, n_py)
    print(f"\n3. the Python engine (stepped) against the compiled loop, first {n_py} jobs, EASY")
    print(f"{'profile':<10}{'policy':<8}{'allocator':<17}{'Python CPU s':>13}"
          f"{'compiled CPU s':>15}{'ratio':>8}  same schedule")
    py_ratios = []
    for profile, sel, al in (("hpcsim", "fcfs", "best-fit"), ("standard", "sjf", "best-fit")):
        p_cpu, _, p_engine, p_result = python_run(prefix, cluster, profile, sel, al)
        k_cpu, _, k_engine, k_result = compiled_run(prefix, cluster, profile, sel, al)
        same = same_schedule(p_engine, p_result, k_engine, k_result)
        py_ratios.append(p_cpu / k_cpu)
        print(f"{profile:<10}{sel:<8}{al:<17}{p_cpu:>13.2f}{k_cpu:>15.3f}{p_cpu / k_cpu:>7.0f}x"
              f"  {'yes' if same else 'NO'}")

    # 4. HPCsim
    files = list(a.hpcsim_json)
    if a.run_hpcsim:
        out_dir = tempfile.mkdtemp(prefix="hpcsim_")
        print(f"\nrunning HPCsim on the first {a.run_hpcsim} jobs (fcfs + best_fit + bf) ...")
        files.append(run_hpcsim_prefix(trace, a.run_hpcsim, out_dir, a.hpcsim, a.hpcsim_python))
    hp_ratios = []
    full_ratio = None
    if files:
        print("\n4. HPCsim's CPU seconds (run(), from its driver's timing) against the compiled "
              "loop on the same jobs")
        print(f"{'case':<28}{'jobs':>7}{'HPCsim CPU s':>14}{'ours CPU s':>12}{'ratio':>9}"
              f"  same schedule as HPCsim")
        names = cluster.names
        by_hpcsim = {(HPCSIM_NAMES.get(s, s), HPCSIM_NAMES[al]): (s, al) for s in SELECTORS
                     for al in ALLOCATORS}
        for path in files:
            ref = json.loads(gzip.decompress(open(path, "rb").read()))
            for key, case in ref["cases"].items():
                if not case["backfill"] or "timing" not in case:
                    continue
                sel, al = by_hpcsim[(case["selector"], case["allocator"])]
                n = len(case["jobs"])
                if n == len(jobs) and ("hpcsim", sel, al) in runs:
                    cpu, _, engine, result = runs[("hpcsim", sel, al)]
                else:
                    cpu, _, engine, result = compiled_run(jobs.window(0, n), cluster, "hpcsim",
                                                          sel, al)
                ok = matches_hpcsim(case, engine, result, names)
                hp_cpu = case["timing"]["run_cpu_s"]
                ratio = hp_cpu / cpu
                hp_ratios.append(ratio)
                if n == len(jobs):
                    full_ratio = ratio if full_ratio is None else min(full_ratio, ratio)
                print(f"{key:<28}{n:>7}{hp_cpu:>14.1f}{cpu:>12.2f}{ratio:>8.0f}x"
                      f"  {'yes' if ok else 'NO'}")
    load_after = os.getloadavg()
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in load_after)}")
    pairs = {
        "jobs": len(jobs),
        "compile_wall_s": round(c_wall, 2),
        "worst_wall_s": round(worst_wall, 2),
        "worst_cpu_s": round(worst_cpu, 2),
        "mean_cpu_s": round(mean_cpu, 2),
        "configs": len(runs),
        "python_over_compiled_min": round(min(py_ratios), 1),
        "hpcsim_over_compiled_min": round(min(hp_ratios), 1) if hp_ratios else "nan",
        "hpcsim_over_compiled_full_trace": round(full_ratio, 1) if full_ratio else "nan",
        "load1_before": round(load_before[0], 2),
        "load1_after": round(load_after[0], 2),
    }
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))


if __name__ == "__main__":
    main()
