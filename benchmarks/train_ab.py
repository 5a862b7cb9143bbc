"""One PPO epoch of two versions of hpcsched, interleaved (A B A B ...), on the same machine at the
same time: the before/after of a change when the machine is shared and absolute timings drift.

    git archive 9f03ffe src | (mkdir -p /tmp/before && tar -x -C /tmp/before)
    python benchmarks/train_ab.py /tmp/before/src --rounds 3

Each epoch runs in a fresh process (`python -c`, one model, one epoch of 100 x 256-job
trajectories with 80 + 80 iterations, the KL stop disabled, 2 torch threads), first the version
under the given path, then this checkout's. Prints each epoch's wall and CPU seconds, the load
averages, and the medians' ratio; last line ``before_s=... after_s=... speedup=...``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

EPOCH = """
import json, time, torch
from hpcsched.agents.ppo import PPO, PPOConfig
torch.set_num_threads({threads})
model = PPO(PPOConfig(trace={trace!r}, target_kl=1e9, seed={seed}))
model.env()
t0, c0 = time.perf_counter(), time.process_time()
model.learn(1)
h = model.history[-1]
print(json.dumps(dict(wall=time.perf_counter() - t0, cpu=time.process_time() - c0,
                      rollout=h["rollout_s"], update=h["update_s"])))
"""


def one_epoch(src: str, trace: str, threads: int, seed: int) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    code = EPOCH.format(trace=trace, threads=threads, seed=seed)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="the src folder of the other version")
    ap.add_argument("--trace", default="lublin-1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if not (Path(args.before) / "hpcsched").is_dir():
        raise SystemExit(f"{args.before}: no hpcsched package there (give the src folder)")
    after_src = str(Path(__file__).resolve().parents[1] / "src")
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(args.rounds):
        for name, src in (("before", args.before), ("after", after_src)):
            load = "%.2f %.2f %.2f" % os.getloadavg()
            res = one_epoch(src, args.trace, args.threads, seed=r)
            runs[name].append(res)
            print(f"round {r} {name:6s} epoch {res['wall']:6.1f} s wall, {res['cpu']:6.1f} s CPU "
                  f"(rollout {res['rollout']:.1f} s, update {res['update']:.1f} s); "
                  f"load before it {load}", flush=True)

    def median(name: str, key: str) -> float:
        values = sorted(r[key] for r in runs[name])
        return values[len(values) // 2]

    before, after = median("before", "wall"), median("after", "wall")
    cpu_before, cpu_after = median("before", "cpu"), median("after", "cpu")
    print(f"median epoch: before {before:.1f} s ({cpu_before:.1f} CPU s), after {after:.1f} s "
          f"({cpu_after:.1f} CPU s): {before / after:.2f}x wall, {cpu_before / cpu_after:.2f}x CPU")
    print(f"before_s={before:.2f} after_s={after:.2f} speedup={before / after:.2f}")


if __name__ == "__main__":
    main()
