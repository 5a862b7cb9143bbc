"""Time of one HeraSched decision on the engine (issue 17: under 1 ms on a Physical-sized cluster):
`python benchmarks/herasched_decision.py [--quick] [--thesis]`.

A Physical-sized state: the bundled spartan-physical (87 nodes x 72 cores, placeholders 72 per
node), Table 4.2's window (W = 512, T = 64: 35,340 selector inputs), the generated Physical
high-load day run through the environment with FCFS on first-available nodes until the cluster is
busy and the queue long (the state a trained model meets at its busiest; `--cluster
spartan-deeplearn` for Deeplearn's). Then `herasched:`'s engine policy
(`agents.herasched_policy.HeraSchedPolicy`, greedy, float64 scores in numpy) decides at that
instant again and again, untrained weights (the time does not depend on them):

- the observation (`envs.hera_observation.HeraObserver.observe`),
- the selector's scores, the allocator's scores (once per job: its picks reuse them),
- one `decide(view)`: observation + selector + (for a pick) allocator scores and the job's node
  picks; per agent decision = that / (1 + the job's nodes).

For the default network, as trained and with EASY's reservation for the oldest job held at
every decision (``herasched:MODEL@reserve``: its cost is one reservation per decision), and with
`--thesis` for Table 4.2's MLPs too (two actors of 155 M weights
each in float64: 2.5 GB). Prints a table, then `name=value` pairs (and the load average).
"""
import argparse
import os
import time

import numpy as np
import torch

from hpcsched.agents.herasched_nets import make_networks
from hpcsched.agents.herasched_policy import HeraSchedPolicy
from hpcsched.envs.herasched import SELECTOR, HeraSchedEnv

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="fewer repetitions")
parser.add_argument("--thesis", action="store_true", help="also Table 4.2's MLPs (2.5 GB)")
parser.add_argument("--cluster", default="spartan-physical")
args = parser.parse_args()
torch.set_num_threads(1)
repeats = 20 if args.quick else 200
results: dict[str, float] = {}

env = HeraSchedEnv(None, args.cluster)
obs, info = env.reset(options={"start": 0})
# FCFS on first-available nodes until the cluster is busy and many jobs wait (on Physical: 600
# waiting, 500 running; on a smaller cluster, 3 W waiting and half its placeholders running)
busy_queue = min(600, 3 * env.layout.window)
busy_running = min(500, int(0.5 * env.layout.slots.sum()))
while True:
    view = env.episode.view
    if info["agent"] == SELECTOR and len(view.queue) >= busy_queue and \
            len(view.running) >= busy_running:
        break
    mask = info["action_mask"]
    a = (0 if mask[0] else env.forward) if info["agent"] == SELECTOR else \
        int(np.flatnonzero(mask)[0])
    obs, _, terminated, _, info = env.step(a)
    if terminated:
        raise SystemExit("the trace ran out before the cluster was busy")
view = env.episode.view
lay = env.layout
snap = env.episode.observer.snapshot
print(f"HeraSched decisions, {args.cluster}: {lay.nodes} nodes, W = {lay.window} (T = {lay.tail}), "
      f"{lay.n_selector:,} selector inputs; at t = {view.now:,.0f} s: {len(view.queue)} waiting, "
      f"{len(view.running)} running, {int(snap.fits.sum())} of the window fit; torch threads 1, "
      f"load average {os.getloadavg()[0]:.1f}")


def per_call(fn, n=repeats) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


nets = ["default", "default@reserve"] + (["thesis"] if args.thesis else [])
print(f"{'network':<16} {'observe':>9} {'selector':>9} {'allocator':>10} {'decide':>9} "
      f"{'nodes':>6} {'per agent decision':>19}   (µs)")
for name in nets:
    net, _, reserve = name.partition("@")
    torch.manual_seed(0)
    networks = make_networks(net, lay)
    policy = HeraSchedPolicy(networks["selector_policy"], networks["allocator_policy"], net=net,
                             window=lay.window, tail=lay.tail,
                             reserve_after=0.0 if reserve else None)
    del networks
    policy.reset(view)
    observe = per_call(lambda: policy.observer.observe(view, policy.obs))
    select = per_call(lambda: policy._scores(0))
    allocate = per_call(lambda: policy._scores(1))
    decision = policy.decide(view)
    nodes = len(decision.nodes) if hasattr(decision, "nodes") else 0
    decide = per_call(lambda: policy.decide(view))
    each = decide / (1 + nodes)
    key = name.replace("@", "_")
    print(f"{name:<16} {observe:>9.0f} {select:>9.0f} {allocate:>10.0f} {decide:>9.0f} "
          f"{nodes:>6} {each:>19.0f}" + (f"   (held for the oldest: {policy.guard.reserving > 0})"
                                          if reserve else ""))
    results.update({f"{key}_observe_us": observe, f"{key}_selector_us": select,
                    f"{key}_allocator_us": allocate, f"{key}_decide_us": decide,
                    f"{key}_per_decision_us": each})
    del policy
if "default_reserve_decide_us" in results:
    print(f"@reserve (EASY's reservation for the oldest job at every decision) / as trained, "
          f"per decide: {results['default_reserve_decide_us'] / results['default_decide_us']:.2f}")
results["load"] = os.getloadavg()[0]
print(" ".join(f"{k}={v:.0f}" if k != "load" else f"{k}={v:.1f}" for k, v in results.items()))
