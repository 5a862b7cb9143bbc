"""Time of HeraSched's PPO update, per minibatch, for both networks on a cluster's real
observations (issue 17: "a Physical model in 8 hours on 2 cores"):
`python benchmarks/herasched_update.py [--cluster spartan-physical] [--thesis] [--steps N]`.

The update of `train herasched` is, for each agent, 10 passes over the rollout's decisions in
minibatches of 64, each a forward and backward pass of the actor (masked log-probabilities) and of
the critic (squared error), then an Adam step of each. This times exactly that on 64 observations
the environment produced (the cluster's generated high-load day, FCFS on first-available nodes,
from the moment the cluster is busy), one torch thread, and prints the seconds per minibatch of
each agent (wall and CPU) and the update they add up to for a rollout of `--selector-steps`
selector and `--allocator-steps` allocator decisions (defaults: the Physical runs' 2,048 and
2,050). With `--thesis`, Table 4.2's MLPs too: on Physical four networks of 155 M weights, about
9 GB with their gradients and Adam's moments. Ends with `name=value` pairs: the times, the process's
largest resident memory (`max_rss_gb`) and the load average.
"""
import argparse
import math
import os
import resource
import time

import numpy as np
import torch

from hpcsched.agents.herasched_nets import fits_layout, make_networks
from hpcsched.envs.herasched import SELECTOR, HeraSchedEnv

parser = argparse.ArgumentParser()
parser.add_argument("--cluster", default="spartan-physical")
parser.add_argument("--thesis", action="store_true", help="also Table 4.2's MLPs")
parser.add_argument("--steps", type=int, default=20,
                    help="timed minibatch steps per agent, default network")
parser.add_argument("--thesis-steps", type=int, default=2,
                    help="timed minibatch steps per agent, the thesis's network")
parser.add_argument("--selector-steps", type=int, default=2048)
parser.add_argument("--allocator-steps", type=int, default=2050)
parser.add_argument("--minibatch", type=int, default=64)
parser.add_argument("--passes", type=int, default=10)
args = parser.parse_args()
torch.set_num_threads(1)

env = HeraSchedEnv(None, args.cluster)
obs, info = env.reset(options={"start": 0})
lay = env.layout
batches: dict[int, list] = {0: [], 1: []}
while min(len(b) for b in batches.values()) < args.minibatch:
    view = env.episode.view
    agent = info["agent"]
    mask = info["action_mask"]
    if len(view.running) >= min(500, int(0.5 * lay.slots.sum())) \
            and len(batches[agent]) < args.minibatch:
        n_actions = lay.window + 1 if agent == SELECTOR else lay.nodes  # the env pads both
        batches[agent].append((np.array(obs, np.float32), np.array(mask[:n_actions], bool)))
    a = (0 if mask[0] else env.forward) if agent == SELECTOR else int(np.flatnonzero(mask)[0])
    obs, _, terminated, _, info = env.step(a)
    if terminated:
        raise SystemExit("the trace ran out before 64 busy decisions of each agent")
print(f"HeraSched update, {args.cluster}: {lay.nodes} nodes, W = {lay.window}, "
      f"{lay.n_selector:,} selector inputs; minibatches of {args.minibatch}, torch threads 1, "
      f"load average {os.getloadavg()[0]:.1f}")


def minibatch_seconds(actor, critic, batch, steps: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one minibatch step of `actor` and `critic`."""
    o = torch.as_tensor(np.stack([b[0] for b in batch]))
    m = torch.as_tensor(np.stack([b[1] for b in batch]))
    actions = torch.as_tensor([int(np.flatnonzero(b[1])[0]) for b in batch])
    targets = torch.zeros(len(batch))
    pi_opt = torch.optim.Adam(actor.parameters(), lr=1e-4)
    v_opt = torch.optim.Adam(critic.parameters(), lr=3e-4)

    def step():
        logp = torch.log_softmax(actor(o, m), -1).gather(1, actions[:, None]).squeeze(1)
        pi_opt.zero_grad()
        (-logp.mean()).backward()
        pi_opt.step()
        v_opt.zero_grad()
        ((critic(o) - targets) ** 2).mean().backward()
        v_opt.step()

    step()  # Adam's moments allocated, caches warm
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return ((time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps)


results: dict[str, float] = {}
nets = ["default"] + (["thesis"] if args.thesis else [])
print(f"{'network':<8} {'weights':>13} {'selector s':>15} {'allocator s':>15} {'update s':>15}"
      "   (wall / CPU)")
per_update = (args.passes * math.ceil(args.selector_steps / args.minibatch),
              args.passes * math.ceil(args.allocator_steps / args.minibatch))
for net in nets:
    torch.manual_seed(0)
    networks = make_networks(net, lay)
    fits_layout(net, networks, lay)
    weights = sum(p.numel() for n in networks.values() for p in n.parameters())
    steps = args.thesis_steps if net == "thesis" else args.steps
    sel = minibatch_seconds(networks["selector_policy"], networks["selector_value"], batches[0],
                            steps)
    alloc = minibatch_seconds(networks["allocator_policy"], networks["allocator_value"],
                              batches[1], steps)
    update = [per_update[0] * s + per_update[1] * a for s, a in zip(sel, alloc)]
    steps_s = " ".join(f"{w:>7.4f} / {c:<7.4f}" for w, c in (sel, alloc))
    print(f"{net:<8} {weights:>13,} {steps_s} {update[0]:>7.1f} / {update[1]:.1f}")
    results.update({f"{net}_weights": weights,
                    f"{net}_selector_minibatch_s": sel[0],
                    f"{net}_selector_minibatch_cpu_s": sel[1],
                    f"{net}_allocator_minibatch_s": alloc[0],
                    f"{net}_allocator_minibatch_cpu_s": alloc[1],
                    f"{net}_update_s": update[0], f"{net}_update_cpu_s": update[1]})
    del networks
results["max_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KB on Linux
results["load"] = os.getloadavg()[0]
print(f"minibatch steps per update: {per_update[0]} selector, {per_update[1]} allocator")
print(" ".join(f"{k}={v:.0f}" if k.endswith("weights") else f"{k}={v:.4g}"
               for k, v in results.items()))
