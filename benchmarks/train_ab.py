"""One RLScheduler PPO epoch of two versions of hpcsched, interleaved (A B A B ...), on the same
machine at the same time: the before/after of a change when the machine is shared and absolute
timings drift.

    python benchmarks/train_ab.py e81ef52 --rounds 3          # a commit of this repository
    python benchmarks/train_ab.py /tmp/before/src --rounds 3  # or the src folder of a version

A commit is checked out (`git archive`) into a temporary folder, removed afterwards. Each epoch
runs in a fresh process (`python -c`, one model, one epoch of 100 x 256-job Lublin-1 trajectories
with 80 + 80 iterations, the KL stop disabled, 2 torch threads), first the version before, then
this checkout's, with the same seed: both must log the same epoch (`same` in the table; the
timings aside, a refactoring changes nothing). Prints each epoch's wall and CPU seconds and the
load averages, then the medians and their ratios; last line
``before_cpu_s=... after_cpu_s=... cpu_speedup=... before_s=... after_s=... speedup=...``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# the same code runs on both versions: PPO(config), env(), learn() and the history's timings are
# in every version since benchmarks/train_ab.py exists (RLScheduler's config was ppo.PPOConfig
# before agents/rlscheduler.py)
EPOCH = """
import json, time, torch
from hpcsched.agents.ppo import PPO
try:
    from hpcsched.agents.rlscheduler import RLSchedulerConfig as Config
except ImportError:
    from hpcsched.agents.ppo import PPOConfig as Config
torch.set_num_threads({threads})
model = PPO(Config(trace={trace!r}, target_kl=1e9, seed={seed}))
model.env()
t0, c0 = time.perf_counter(), time.process_time()
model.learn(1)
h = model.history[-1]
print(json.dumps(dict(wall=time.perf_counter() - t0, cpu=time.process_time() - c0,
                      rollout=h["rollout_s"], update=h["update_s"],
                      logged={{k: v for k, v in h.items() if not k.endswith("_s")}})))
"""


def one_epoch(src: str, trace: str, threads: int, seed: int) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    code = EPOCH.format(trace=trace, threads=threads, seed=seed)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def checkout(commit: str, into: Path) -> Path:
    """The src folder of `commit`, extracted under `into`."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "src"],
                             capture_output=True, check=False)
    if archive.returncode:
        raise SystemExit(f"{commit}: not a commit of {REPO} "
                         f"({archive.stderr.decode().strip().splitlines()[-1]})")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="a commit of this repository, or the src folder of a version")
    ap.add_argument("--trace", default="lublin-1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    after_src = str(REPO / "src")
    with tempfile.TemporaryDirectory(prefix="train_ab_") as tmp:
        if (Path(args.before) / "hpcsched").is_dir():
            before_src, label = args.before, args.before
        else:
            before_src, label = str(checkout(args.before, Path(tmp))), f"commit {args.before}"
        print(f"before: {label}; after: {after_src}; {args.trace}, {args.threads} torch threads")
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for r in range(args.rounds):
            for name, src in (("before", before_src), ("after", after_src)):
                load = "%.2f %.2f %.2f" % os.getloadavg()
                res = one_epoch(src, args.trace, args.threads, seed=r)
                runs[name].append(res)
                same = "" if name == "before" else (
                    "  same" if res["logged"] == runs["before"][r]["logged"] else "  DIFFERENT")
                print(f"round {r} {name:6s} epoch {res['wall']:6.1f} s wall, {res['cpu']:6.1f} s "
                      f"CPU (rollout {res['rollout']:.1f} s, update {res['update']:.1f} s); load "
                      f"before it {load}{same}", flush=True)

    wall = {k: median([r["wall"] for r in v]) for k, v in runs.items()}
    cpu = {k: median([r["cpu"] for r in v]) for k, v in runs.items()}
    same = all(a["logged"] == b["logged"] for a, b in zip(runs["before"], runs["after"]))
    print(f"median epoch: before {wall['before']:.1f} s ({cpu['before']:.1f} CPU s), after "
          f"{wall['after']:.1f} s ({cpu['after']:.1f} CPU s): {wall['before'] / wall['after']:.2f}x "
          f"wall, {cpu['before'] / cpu['after']:.2f}x CPU; logged epochs "
          f"{'identical' if same else 'DIFFER'}")
    print(f"before_cpu_s={cpu['before']:.2f} after_cpu_s={cpu['after']:.2f} "
          f"cpu_speedup={cpu['before'] / cpu['after']:.3f} before_s={wall['before']:.2f} "
          f"after_s={wall['after']:.2f} speedup={wall['before'] / wall['after']:.3f}")


if __name__ == "__main__":
    main()
