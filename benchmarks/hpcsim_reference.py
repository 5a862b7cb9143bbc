"""Run HPCsim, the thesis's simulator, unmodified on one trace, for a grid of selector x allocator x
backfill cases, the way its own `src/run_baseline.py::run_one` does, and write every job's schedule
in the format of `tests/data/hpcsim_small/*.json.gz` (with HPCsim's CPU and wall seconds per case).
This is how the reference schedules and HPCsim's timings in BENCHMARKS.md are made.

HPCsim is not part of hpcsched: get its code (public repository JCheney20/DRL_HPC_Scheduling, commit
8806459) and a Python with what it imports (pandas, numpy, networkx, python-dateutil, gymnasium):

    git clone https://github.com/JCheney20/DRL_HPC_Scheduling hpcsim && git -C hpcsim checkout 8806459
    python benchmarks/hpcsim_reference.py --hpcsim hpcsim TRACE.tsv[.gz] --partition physical \\
        -o OUT.json.gz [--selectors fcfs,sjf] [--allocators best_fit] [--backfill on|off|both] \\
        [--workers 2] [--check REFERENCE.json.gz]

The cluster is built by HPCsim itself from the platform files bundled with hpcsched
(`src/hpcsched/data/clusters/`: Spartan's nodes.csv and topology files).

HPCsim itself is only observed: the driver wraps the cluster's `release_job` on the instance to
note which nodes a completing job held (HPCsim forgets them at completion), and reads the job
objects' own fields afterwards. Nothing it computes is changed. Its prints go to /dev/null and its
`result/<sel>+<alloc>.csv` to a temporary working directory.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

PLATFORM = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src", "hpcsched",
                        "data", "clusters")
HPCSIM = os.environ.get("HPCSIM_DIR", "")
SELECTORS = ["fcfs", "lcfs", "sjf", "wfp3", "unicep", "f_1", "f_2"]
ALLOCATORS = ["first_available", "best_fit", "topology_aware"]


@contextlib.contextmanager
def _quiet_fd1():
    """HPCsim prints a line per event; send file descriptor 1 to /dev/null meanwhile."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        with contextlib.redirect_stdout(open(os.devnull, "w")):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def run_one(hpcsim: str, trace: str, partition: str, selector: str, allocator: str,
            backfill: bool) -> dict:
    sys.path.insert(0, os.path.abspath(hpcsim))
    from src.HPCsim.HPCsim import HPCsim  # noqa: E402  (HPCsim's own package path)

    trace = os.path.abspath(trace)
    topology = os.path.join(PLATFORM, f"{partition}_topology.txt")
    nodes = os.path.join(PLATFORM, "nodes.csv")
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp, _quiet_fd1():
        os.chdir(tmp)
        try:
            c0, w0 = time.process_time(), time.perf_counter()
            env = HPCsim(scheduler=selector, allocator=allocator, backfill_enable=backfill,
                         topology_file=topology, node_file=nodes, trace_file=trace,
                         partition=partition, random_job=False)
            c1, w1 = time.process_time(), time.perf_counter()
            held: dict = {}
            real_release = env.cluster.release_job

            def release_job(job_id, t, back=False):
                if not back:
                    held[job_id] = list(env.cluster.job_node_dict[job_id][1])
                return real_release(job_id, t, back=back)

            env.cluster.release_job = release_job
            env.run()
            c2, w2 = time.process_time(), time.perf_counter()
            max_w, avg_w = env.evaluator.waiting_time()
            max_s, avg_s = env.evaluator.bounded_slowdown()
            avg_t = env.evaluator.average_turnaround()
            cpu_u, gpu_u = env.utilization()
        finally:
            os.chdir(cwd)
    host = {nid: node.node_type for nid, node in env.cluster.node_dict.items()}
    jobs = []
    for job in env.trace.job_list:
        jobs.append([_plain(job.id), int(job.system_submit), int(job.start_time), int(job.end_time),
                     [host[n] for n in held[job.id]], getattr(job, "scheduler", None) == "backfill"])
    return {
        "selector": selector, "allocator": allocator, "backfill": backfill,
        "metrics": {"max_waiting": float(max_w), "avg_waiting": float(avg_w),
                    "max_slowdown": float(max_s), "avg_slowdown": float(avg_s),
                    "avg_turnaround": float(avg_t), "cpu_utilization": float(cpu_u),
                    "gpu_utilization": float(gpu_u)},
        "jobs": jobs,
        "timing": {"load_cpu_s": round(c1 - c0, 3), "run_cpu_s": round(c2 - c1, 3),
                   "load_wall_s": round(w1 - w0, 3), "run_wall_s": round(w2 - w1, 3)},
    }


def _plain(x):
    try:
        return int(x)
    except (TypeError, ValueError):
        return str(x)


def _case_key(sel: str, alloc: str, bf: bool) -> str:
    return f"{sel}+{alloc}+{'bf' if bf else 'nobf'}"


def _run_args(args):
    return _case_key(*args[3:]), run_one(*args)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--hpcsim", default=HPCSIM,
                    help="a checkout of JCheney20/DRL_HPC_Scheduling (the folder holding src/HPCsim; "
                         "default $HPCSIM_DIR)")
    ap.add_argument("--partition", required=True, choices=["physical", "deeplearn"])
    ap.add_argument("-o", "--out", required=True, help="output .json.gz (fixture format + timing)")
    ap.add_argument("--selectors", default=",".join(SELECTORS))
    ap.add_argument("--allocators", default=",".join(ALLOCATORS))
    ap.add_argument("--backfill", default="both", choices=["on", "off", "both"])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--check", help="a fixture .json.gz to compare every case with, job by job")
    args = ap.parse_args(argv)

    if not os.path.isfile(os.path.join(args.hpcsim, "src", "HPCsim", "HPCsim.py")):
        ap.error(f"--hpcsim {args.hpcsim!r}: no src/HPCsim/HPCsim.py there (give a checkout of "
                 "JCheney20/DRL_HPC_Scheduling, or set HPCSIM_DIR)")
    bfs = {"on": [True], "off": [False], "both": [True, False]}[args.backfill]
    todo = [(args.hpcsim, args.trace, args.partition, s, a, b)
            for s in args.selectors.split(",") for a in args.allocators.split(",") for b in bfs]
    out = {"trace_file": os.path.basename(args.trace).removesuffix(".gz"),
           "partition": args.partition, "cases": {}, "meta": _meta()}
    # a partial file is rewritten after every case, so a long grid can be stopped and kept
    def save():
        tmp = args.out + ".tmp"
        with gzip.open(tmp, "wt") as f:
            json.dump(out, f, separators=(",", ":"))
        os.replace(tmp, args.out)

    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            for key, case in pool.map(_run_args, todo):
                out["cases"][key] = case
                _report(key, case)
                save()
    else:
        for t in todo:
            key, case = _run_args(t)
            out["cases"][key] = case
            _report(key, case)
            save()
    out["cases"] = dict(sorted(out["cases"].items()))
    save()
    if args.check:
        return check(args.out, args.check)
    return 0


def _report(key, case):
    t = case["timing"]
    print(f"{key:40s} jobs={len(case['jobs']):6d} load_cpu={t['load_cpu_s']:8.2f}s "
          f"run_cpu={t['run_cpu_s']:9.2f}s AWT={case['metrics']['avg_waiting']:.1f}", flush=True)


def check(mine_path: str, ref_path: str) -> int:
    """Compare two files of this format case by case: jobs exactly, metrics exactly."""
    mine = json.load(gzip.open(mine_path, "rt"))
    ref = json.load(gzip.open(ref_path, "rt"))
    bad = 0
    cases = sorted(k for k in ref["cases"] if k in mine["cases"])
    if not cases:
        print(f"{ref_path} has none of the cases of {mine_path}")
        return 1
    for key in cases:
        mc, rc = mine["cases"][key], ref["cases"][key]
        diff_jobs = sum(1 for a, b in zip(mc["jobs"], rc["jobs"]) if a != b)
        diff_jobs += abs(len(mc["jobs"]) - len(rc["jobs"]))
        diff_metrics = [k for k in rc["metrics"] if mc["metrics"].get(k) != rc["metrics"][k]]
        ok = diff_jobs == 0 and not diff_metrics
        bad += not ok
        print(f"{key:40s} {'same' if ok else 'DIFFERENT'} jobs_differing={diff_jobs} "
              f"metrics_differing={diff_metrics}")
    print(f"{len(cases) - bad} of {len(cases)} cases run identical to the reference "
          f"({len(ref['cases'])} cases there)")
    return 1 if bad else 0


def _meta() -> dict:
    return {
        "what": "HPCsim (JCheney20/DRL_HPC_Scheduling src/HPCsim at 8806459, unmodified) run by "
                "hpcsched's benchmarks/hpcsim_reference.py, mirroring its src/run_baseline.py::run_one: "
                "HPCsim(scheduler=SELECTOR, allocator=ALLOCATOR, backfill_enable=BF, topology, nodes, "
                "trace, partition, random_job=False).run(), platform from hpcsched's data/clusters (Spartan's nodes.csv and topology files).",
        "selectors": SELECTORS, "allocators": ALLOCATORS,
        "job_columns": ["id", "submit", "start", "end", "nodes", "backfilled"],
        "times": "seconds since the trace's earliest Submit (HPCsim's clock); "
                 "end = start + int(min(ElapsedRaw, 60*TimelimitRaw))",
        "nodes": "hostnames from the topology file, in the order HPCsim allocated them",
        "metrics": "HPCsim's own Evaluator: max/avg waiting, max/avg bounded slowdown, avg "
                   "turnaround, cpu/gpu utilization",
        "timing": "per case: CPU and wall seconds of HPCsim's constructor (trace read) and of run(), "
                  "stdout to /dev/null",
    }


if __name__ == "__main__":
    sys.exit(main())
