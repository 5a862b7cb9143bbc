"""How close the static-priority engine comes to a compiled textbook simulator, in the same run.

    python benchmarks/engine_speed.py                   # the whole RICC from ../shared/traces if there
    python benchmarks/engine_speed.py PATH/RICC-2010-2.swf.gz
    python benchmarks/engine_speed.py --quick           # without the old Python path's slow runs

`../shared/bench/easy.c` is compiled (`cc -O2 ... -lm`) into a temporary folder and run beside our
engine: the compiled loop of `hpcsched.sim.kernels` (`schedule_table`, with the policy's keys
computed in the timing) and the Python pass engine it replaces (`make_engine(...).run(policy, compiled=False)`).
Wherever easy.c covers the case (FCFS or SJF + EASY), its start times are checked equal to ours
first, and the old path's are checked equal to the new one's on every run it makes.

1. Compilation: the first call in a fresh process with an empty numba cache, then with the cache.
2. Whole HPC2N, SJF + EASY and FCFS + EASY: warm time against easy.c's simulation (target: within
   10x). Whole RICC, SJF + EASY (target: under 20 s). Whole HPC2N, FCFS + conservative (target: under
   30 s). The old Python path on each, and new/old.
3. Time per job, the first 10,000 jobs against the whole trace, EASY (target: within 1.5x).

Times are medians of repeated runs (wall, and CPU from `time.process_time`); the load average is
printed, since the project's machines are shared. Prints a table, then as its last line `name=value`
pairs.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np

from hpcsched.policies.priority import get_policy
from hpcsched.sim import kernels
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare
from hpcsched.workload.traces import TRACES

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]


def shared(*parts: str) -> Path | None:
    """A file of the project's shared folder (`../shared/` of a checkout or worktree), if present."""
    for parent in HERE.parents:
        path = parent.joinpath("shared", *parts)
        if path.exists():
            return path
    return None


def timed(fn, repeat: int):
    """Median wall and CPU seconds of `repeat` calls, and the last result."""
    walls, cpus = [], []
    out = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return median(walls), median(cpus), out


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# -- easy.c ----------------------------------------------------------------------------------------


class EasyC:
    """easy.c, compiled into `workdir`, run on plain SWF files it decompresses there."""

    def __init__(self, source: Path, workdir: Path) -> None:
        self.workdir = workdir
        self.binary = workdir / "easy"
        subprocess.run(["cc", "-O2", "-o", str(self.binary), str(source), "-lm"], check=True)

    def plain(self, trace: Path) -> Path:
        out = self.workdir / trace.name.removesuffix(".gz")
        if not out.exists():
            with gzip.open(trace, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
        return out

    def run(self, swf: Path, policy: str, repeat: int, njobs: int | None = None):
        """Median simulation wall and CPU seconds (easy.c's own clocks, parsing excluded), its
        jobs, and its start times as (job_id, start) arrays."""
        starts = self.workdir / "starts.csv"
        walls, cpus = [], []
        info = {}
        for _ in range(repeat):
            cmd = [str(self.binary), str(swf), policy, str(starts)]
            if njobs is not None:
                cmd.append(str(njobs))
            line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            info = dict(field.split("=") for field in line.split())
            walls.append(float(info["sim_s"]))
            cpus.append(float(info["sim_cpu_s"]))
        table = np.loadtxt(starts, delimiter=",", skiprows=1, ndmin=2)
        return median(walls), median(cpus), int(info["jobs"]), table[:, 0], table[:, 2]


# -- our two paths ---------------------------------------------------------------------------------


def new_path(jobs, cluster, policy: str, backfill: str):
    """The compiled loop as the engine will call it: the policy's keys, then the kernel."""
    keys = get_policy(policy).static_keys(jobs)
    return kernels.schedule_table(jobs, cluster, keys, backfill)


def old_path(jobs, cluster, policy: str, backfill: str):
    return make_engine(jobs, cluster, "standard", backfill).run(get_policy(policy),
                                                                compiled=False).start


def compile_times() -> list[tuple[float, float]]:
    """(wall, CPU) seconds of the first call in fresh interpreters, import included: with an empty
    numba cache (it compiles), then with the cache that run left."""
    code = ("import time; w, c = time.perf_counter(), time.process_time(); "
            "from hpcsched.sim import kernels; "
            "kernels.schedule_static([0.0], [1.0], [1.0], [1], [0], 1, 'easy'); "
            "print(time.perf_counter() - w, time.process_time() - c)")
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for _ in range(2):
            proc = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                  capture_output=True, text=True)
            wall, cpu = proc.stdout.strip().splitlines()[-1].split()
            out.append((float(wall), float(cpu)))
    return out


def check_same(name: str, ours: np.ndarray, theirs: np.ndarray) -> None:
    differ = np.flatnonzero(ours != theirs)
    if differ.size:
        raise SystemExit(f"{name}: {differ.size} start times differ (first at row {differ[0]}: "
                         f"{ours[differ[0]]} against {theirs[differ[0]]})")


# -- the benchmark ---------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ricc", nargs="?", help="the whole RICC trace (RICC-2010-2.swf.gz); by default "
                    "../shared/traces/, skipped if missing")
    ap.add_argument("--easy-c", help="easy.c (default: ../shared/bench/easy.c)")
    ap.add_argument("--quick", action="store_true",
                    help="skip the old Python path where it takes minutes (RICC, conservative)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per warm timing (median)")
    args = ap.parse_args()

    source = Path(args.easy_c) if args.easy_c else shared("bench", "easy.c")
    if source is None or not source.exists():
        raise SystemExit("easy.c not found: give --easy-c PATH (../shared/bench/easy.c)")
    ricc = Path(args.ricc) if args.ricc else shared("traces", "RICC-2010-2.swf.gz")
    pairs: dict[str, object] = {}
    rows: list[tuple] = []
    print(f"load average at start {load()}; numba {'on' if kernels.HAVE_NUMBA else 'MISSING'}; "
          f"{os.cpu_count()} CPUs")

    (first, first_cpu), (cached, cached_cpu) = compile_times()
    print(f"1. first call in a fresh process, import included: {first:.2f} s ({first_cpu:.2f} CPU "
          f"s) with an empty numba cache (it compiles); {cached:.2f} s ({cached_cpu:.2f} CPU s) "
          f"with the cache\n")
    pairs.update(compile_s=round(first, 2), compile_cpu_s=round(first_cpu, 2),
                 cached_first_call_s=round(cached, 3), cached_first_call_cpu_s=round(cached_cpu, 3))

    with tempfile.TemporaryDirectory() as tmp:
        easy = EasyC(source, Path(tmp))
        hpc2n_file = REPO / "src" / "hpcsched" / "data" / "traces" / TRACES["hpc2n"].file
        hpc2n = prepare("hpc2n")
        runs = [("hpc2n", hpc2n, hpc2n_file, "sjf", "easy", 10.0, None),
                ("hpc2n", hpc2n, hpc2n_file, "fcfs", "easy", 10.0, None)]
        if ricc is not None and ricc.exists():
            runs.append(("ricc", prepare(str(ricc)), ricc, "sjf", "easy", None, 20.0))
        else:
            print("(the whole RICC trace is not here: its run is skipped)\n")
        runs.append(("hpc2n", hpc2n, hpc2n_file, "fcfs", "conservative", None, 30.0))

        new_path(hpc2n.jobs.window(0, 100), hpc2n.cluster, "sjf", "easy")  # compiled or loaded
        for trace, prep, file, policy, backfill, max_ratio, max_s in runs:
            jobs, cluster = prep.jobs, prep.cluster
            tag = f"{trace}_{policy}_{backfill}"
            repeat = args.repeat if backfill == "easy" else max(1, args.repeat // 2)
            wall, cpu, (start, *_rest) = timed(lambda: new_path(jobs, cluster, policy, backfill),
                                               repeat)
            row = {"run": f"{trace} {policy}+{backfill}", "jobs": len(jobs), "wall": wall,
                   "cpu": cpu}
            pairs[f"{tag}_s"] = round(wall, 3)
            pairs[f"{tag}_cpu_s"] = round(cpu, 3)
            if backfill == "easy":
                e_wall, e_cpu, e_jobs, e_ids, e_start = easy.run(easy.plain(file), policy,
                                                                 args.repeat)
                if e_jobs != len(jobs) or np.any(e_ids != jobs.job_id):
                    raise SystemExit(f"{tag}: easy.c cleaned the trace differently")
                check_same(f"{tag} against easy.c", start, e_start)
                row.update(easy_wall=e_wall, easy_cpu=e_cpu, ratio_cpu=cpu / e_cpu,
                           ratio_wall=wall / e_wall)
                pairs[f"{tag}_easyc_cpu_s"] = round(e_cpu, 4)
                pairs[f"{tag}_x_easyc"] = round(cpu / e_cpu, 2)
            slow_old = trace == "ricc" or backfill == "conservative"
            if not (args.quick and slow_old):
                o_wall, o_cpu, o_start = timed(lambda: old_path(jobs, cluster, policy, backfill),
                                               1 if slow_old else 2)
                check_same(f"{tag}: old against new", start, o_start)
                row.update(old_wall=o_wall, old_cpu=o_cpu)
                pairs[f"{tag}_old_cpu_s"] = round(o_cpu, 2)
                pairs[f"{tag}_new_over_old"] = round(cpu / o_cpu, 4)
            if max_ratio is not None:
                row["target"] = f"<= {max_ratio:g}x easy.c"
                row["met"] = row["ratio_cpu"] <= max_ratio
            else:
                row["target"] = f"< {max_s:g} s"
                row["met"] = wall < max_s
            rows.append(row)
            print(f"   {row['run']}: {wall:.3f} s (load {load()})", flush=True)

        print("\n2. whole traces (median wall / CPU seconds; ratios of CPU seconds)")
        head = (f"{'run':<26}{'jobs':>8}{'ours s':>9}{'CPU s':>8}{'easy.c':>9}{'CPU s':>8}"
                f"{'x easy.c':>9}{'old s':>10}{'CPU s':>8}{'new/old':>9}  target")
        print(head)
        for r in rows:
            easy_cols = (f"{r['easy_wall']:>9.3f}{r['easy_cpu']:>8.3f}{r['ratio_cpu']:>8.1f}x"
                         if "easy_cpu" in r else f"{'':>9}{'':>8}{'':>9}")
            old_cols = (f"{r['old_wall']:>10.1f}{r['old_cpu']:>8.1f}{r['cpu'] / r['old_cpu']:>9.4f}"
                        if "old_cpu" in r else f"{'(skipped)':>10}{'':>8}{'':>9}")
            print(f"{r['run']:<26}{r['jobs']:>8}{r['wall']:>9.3f}{r['cpu']:>8.3f}{easy_cols}"
                  f"{old_cols}  {r['target']}: {'met' if r['met'] else 'NOT MET'}")
        print()

        print("3. time per job, first 10,000 jobs against the whole trace (EASY; CPU us per job)")
        print(f"{'run':<26}{'first 10k':>10}{'whole':>9}{'ratio':>8}{'easy.c 10k':>11}"
              f"{'whole':>8}  target")
        for policy in ["sjf", "fcfs"]:
            per = []
            for n in [10_000, len(hpc2n.jobs)]:
                window = hpc2n.jobs.window(0, n)
                reps = 41 if n == 10_000 else args.repeat
                _, cpu, _ = timed(lambda: new_path(window, hpc2n.cluster, policy, "easy"), reps)
                per.append(1e6 * cpu / n)
            # easy.c reads its first 10,000 lines (a few are cleaned away): per job it kept
            _, e10, e_n, _, _ = easy.run(easy.plain(hpc2n_file), policy, 9, njobs=10_000)
            _, eall, e_all_n, _, _ = easy.run(easy.plain(hpc2n_file), policy, 3)
            ratio = per[1] / per[0]
            met = ratio <= 1.5
            print(f"{'hpc2n ' + policy + '+easy':<26}{per[0]:>10.3f}{per[1]:>9.3f}{ratio:>7.2f}x"
                  f"{1e6 * e10 / e_n:>11.3f}{1e6 * eall / e_all_n:>8.3f}  <= 1.5x: "
                  f"{'met' if met else 'NOT MET'}")
            pairs[f"hpc2n_{policy}_easy_us_per_job_10k"] = round(per[0], 3)
            pairs[f"hpc2n_{policy}_easy_us_per_job_all"] = round(per[1], 3)
            pairs[f"hpc2n_{policy}_easy_growth"] = round(ratio, 2)
            rows.append({"met": met})
    pairs["all_targets_met"] = all(r["met"] for r in rows)
    pairs["load_end"] = load().split()[0]
    print(f"\nload average at end {load()}")
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))


if __name__ == "__main__":
    main()
