"""SchedInspector speed: one inspection, an inspected window, one PPO epoch. Ratios against baselines
run in the same process.

    python benchmarks/inspector.py              # lublin-1, base sjf
    python benchmarks/inspector.py --trace hpc2n --base f1 --quick

Baselines:
- inspection: the base heuristic's own choice at the same decisions (what the inspector adds to
  each scheduling decision is the features and a 938-parameter network in numpy);
- inspected window: the same 256-job windows scheduled by the base heuristic alone;
- epoch: the paper's epoch (100 trajectories of 128 jobs, 80 + 80 iterations), compared with its
  35 minutes of training (the paper's whole run; its epoch time is not given).

Last line: ``epoch_s=... inspection_ms=... heuristic_ms=... inspected_window_ratio=...``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> None:
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.agents.inspector_policy import InspectedPolicy
    from hpcsched.agents.ppo import PPO
    from hpcsched.envs.inspection import Inspection
    from hpcsched.sim.run import estimated_trace
    from hpcsched.workload.windows import evaluation_windows
    from hpcsched.policies.priority import get_policy
    from hpcsched.sim.factory import make_engine
    from hpcsched.sim.run import simulate

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", default="lublin-1")
    ap.add_argument("--base", default="sjf")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    torch.set_num_threads(1)
    windows = 5 if args.quick else 20
    epochs = 1 if args.quick else 3

    prepared = estimated_trace(args.trace)
    base = get_policy(args.base, profile=prepared.profile)
    model = PPO(InspectorConfig(trace=args.trace, base=args.base, threads=1))
    inspected = InspectedPolicy(model.policy, base, prepared.report.norm, name="inspect")
    starts = evaluation_windows(len(prepared.jobs), windows, 256, seed=0)

    # one decision: base heuristic choice vs features + network, on the same states
    heuristic_s = inspect_s = 0.0
    decisions = 0
    for s in starts:
        engine = make_engine(prepared.jobs.window(s, 256), prepared.cluster, prepared.profile)
        insp = Inspection(prepared.report.norm, 256)
        while True:
            view = engine.next_decision()
            if view is None:
                break
            t0 = time.perf_counter()
            row = engine.choose(base, view)
            t1 = time.perf_counter()
            insp.propose(view, row)
            inspected.act(insp.observe(), insp.mask())
            t2 = time.perf_counter()
            heuristic_s += t1 - t0
            inspect_s += t2 - t1
            decisions += 1
            engine.apply(row)
    heuristic_ms = 1000 * heuristic_s / decisions
    inspection_ms = 1000 * inspect_s / decisions

    t0 = time.perf_counter()
    for s in starts:
        simulate(prepared, base, start=s, jobs=256)
    t1 = time.perf_counter()
    rejections = []
    for s in starts:
        rejections.append(simulate(prepared, inspected, start=s, jobs=256).metrics["rejection_ratio"])
    t2 = time.perf_counter()
    window_ratio = (t2 - t1) / (t1 - t0)

    times = []
    for _ in range(epochs):
        model.learn(1)
        times.append(model.history[-1])
    epoch_s = float(np.median([h["epoch_s"] for h in times]))
    rollout_s = float(np.median([h["rollout_s"] for h in times]))
    update_s = float(np.median([h["update_s"] for h in times]))

    rows = [
        (f"inspection (features + network) over {decisions} decisions",
         f"{inspection_ms:.3f} ms", f"{args.base} choosing: {heuristic_ms:.3f} ms; paper 0.7 ms"),
        (f"{windows} windows x 256 jobs, inspected (untrained, {100 * np.mean(rejections):.0f}% "
         f"rejected)", f"{t2 - t1:.2f} s", f"{window_ratio:.1f}x {args.base} alone "
                                          f"({t1 - t0:.2f} s)"),
        ("epoch 100 x 128 jobs, 80+80 iterations", f"{epoch_s:.2f} s",
         f"rollout {rollout_s:.2f} s, update {update_s:.2f} s"),
        ("60 epochs at that rate", f"{60 * epoch_s / 60:.1f} min", "paper: ~35 min per model"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>10}  {note}")
    print(f"epoch_s={epoch_s:.3f} inspection_ms={inspection_ms:.4f} heuristic_ms={heuristic_ms:.4f} "
          f"inspected_window_ratio={window_ratio:.2f}")


if __name__ == "__main__":
    main()
