"""Speed of DBF's learner (`hpcsched train dbf`): `python benchmarks/dbf_learner.py [--quick]`.

Lublin-1, M = 32 slots with a tail of 4 (256 + 96 inputs, 33 actions), 1,000-job episodes, the
thesis's actor MLP [1024, 512, 256] (Tanh) in the loop. Measured, on one torch thread (the
configuration's: two threads lose many times over on a shared 2-core machine):

1. batched rollouts as PPO collects them (`agents.rollout.collect` with `PPO`'s sampling
   function: one actor call per step on the N observations, actions sampled, log-probabilities
   kept; the critic runs in the update, once over the whole batch): env steps per second and per
   CPU-second, for N = 16, 64, 256, in float32; and in bfloat16 (torch.autocast, where the CPU has
   bf16 instructions) for reference;
2. one training update as `train dbf` runs it (16 episodes, then 2 passes of minibatches of 128):
   the wall and CPU seconds of the rollout and of the update, per episode.

The network is untrained (near-uniform actions: mostly invalid picks, i.e. Fwd, the mix of early
training). Prints a table, then `name=value` pairs (and the load average).
"""
import argparse
import os
import time

import numpy as np
import torch

from hpcsched.agents import rollout
from hpcsched.agents.dbf import DBFConfig
from hpcsched.agents.ppo import PPO

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="fewer episodes, one update")
parser.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1, the training's; 2 uses both cores of an idle machine)")
args = parser.parse_args()
torch.set_num_threads(args.threads)
results: dict[str, float] = {}


def has_bf16() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


print(f"DBF learner, Lublin-1, M = 32 (tail 4), torch threads {torch.get_num_threads()}, "
      f"load average {os.getloadavg()[0]:.1f}")
print("1. batched rollouts, actor [1024, 512, 256] once per step")
print(f"   {'':<14} {'steps':>7} {'steps/s':>9} {'per CPU-s':>10}")
modes = ("fp32", "bf16") if has_bf16() else ("fp32",)
for n in (16, 64, 256):
    for mode in modes:
        config = DBFConfig(window=32, tail=4, num_envs=n, trajectories_per_epoch=n)
        model = PPO(config)
        env = model.env()
        if mode == "bf16":  # the actor's products in bfloat16, its logits back in float32
            plain = model.policy.act_logits

            def bf16_logits(obs, mask, plain=plain):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return plain(obs, mask).float()
            model.policy.act_logits = bf16_logits
        act = model._act_fn(torch.Generator().manual_seed(0))
        episodes = n if not args.quick else max(4, n // 4)
        traj, wall, cpu = timed(lambda: rollout.collect(env, act, episodes, seed=0))
        steps = traj.env_steps * n  # every env steps at every batched step
        key = f"rollout_n{n}_{mode}"
        results[f"{key}_steps_per_s"] = round(steps / wall)
        results[f"{key}_steps_per_cpu_s"] = round(steps / cpu)
        print(f"   N={n:<4} {mode:<7} {steps:7d} {steps / wall:9.0f} {steps / cpu:10.0f}")

print("2. one update of train dbf (16 episodes, 2 passes of minibatches of 128)")
model = PPO(DBFConfig(window=32, tail=4))
(_, wall, cpu) = timed(lambda: model.learn(1))
h = model.history[-1]
per = h["trajectories"]
print(f"   {h['decisions']} decisions in {per} episodes: rollout {h['rollout_s']:.1f} s, update "
      f"{h['update_s']:.1f} s; {wall / per:.2f} s and {cpu / per:.2f} CPU-s per episode")
results.update(update_decisions=h["decisions"], update_rollout_s=round(h["rollout_s"], 1),
               update_update_s=round(h["update_s"], 1),
               wall_s_per_episode=round(wall / per, 2), cpu_s_per_episode=round(cpu / per, 2))
results["load_average"] = round(os.getloadavg()[0], 2)
print(" ".join(f"{k}={v}" for k, v in results.items()))
