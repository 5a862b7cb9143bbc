"""What a HeraSched update learns from (issue 17, why it does not learn): one rollout of a model,
and for each agent its rewards, returns, values and the parts of its advantages.

    python benchmarks/herasched_signal.py runs/dl-thesis/model.pt          # a run's latest model
    python benchmarks/herasched_signal.py --trace dl-train.txt              # an untrained one
    python benchmarks/herasched_signal.py MODEL --gamma 0.99 --selector-every 1   # other settings

An advantage (GAE) is a sum of lambda-weighted rewards ahead (the reward part: what the actions
did) plus lambda-weighted value differences (the value part: what the critic thinks). Where
rewards are rare and the critic cannot predict the return, the value part is noise, and the
per-update normalisation makes it the policy's whole signal. Printed per agent: decisions,
rewards that fell due, the reward part's and value part's spread and their correlation with the
advantage, the returns' spread, the critic's explained variance; then the selector's choices, and
how often a pick took a job that had waited less than the window's mean (Eq. 4.1 averages the
queue's waits, so such a pick raises the penalty of the rewards after it). Last line: `name=value`
pairs.
"""
import argparse
import math
import time

import numpy as np
import torch

from hpcsched.agents.herasched import HeraSched, HeraSchedConfig, selector_choice
from hpcsched.agents.herasched_rollout import advantages
from hpcsched.envs.hera_observation import JOB_FEATURES, TIME_CAP

p = argparse.ArgumentParser()
p.add_argument("model", nargs="?", help="a HeraSched model file (default: an untrained model)")
p.add_argument("--trace", help="the trace (default: the model's)")
p.add_argument("--gamma", type=float)
p.add_argument("--lam", type=float)
p.add_argument("--selector-every", type=int)
p.add_argument("--allocator-every", type=int)
p.add_argument("--steps", type=int, default=2048, help="selector steps in the rollout (2048)")
args = p.parse_args()

if args.model:
    model = HeraSched.load(args.model)
    config = model.config
else:
    config = HeraSchedConfig(trace=args.trace)
for key in ("trace", "gamma", "lam", "selector_every", "allocator_every"):
    if getattr(args, key) is not None:
        setattr(config, key, getattr(args, key))
fresh = HeraSched(config, model.layout if args.model else None)
if args.model:
    for mine, theirs in zip(fresh.agents, model.agents):
        mine.policy.load_state_dict(theirs.policy.state_dict())
        mine.value.load_state_dict(theirs.value.state_dict())
model = fresh

torch.set_num_threads(1)
t0 = time.perf_counter()
gen = torch.Generator().manual_seed(12345)
data, seen = model.rollout().collect(model._act_fn(gen), args.steps)
seconds = time.perf_counter() - t0
pairs = {"rollout_s": round(seconds, 2), "gamma": config.gamma, "lam": config.lam,
         "A_s": config.selector_every, "A_a": config.allocator_every}
print(f"rollout: {seen['selector_steps']} selector and {seen['allocator_steps']} allocator "
      f"decisions in {seconds:.1f} s; gamma {config.gamma}, lambda {config.lam}, A_s "
      f"{config.selector_every}, A_a {config.allocator_every}")
for name, ppo, d in zip(("selector", "allocator"), model.agents, data):
    with torch.no_grad():
        values = ppo.value(torch.from_numpy(d.obs)).numpy().astype(np.float64)
        held = [s[2] for s in d.streams if s[2] is not None]
        boot = iter(ppo.value(torch.from_numpy(np.stack(held))).numpy().astype(np.float64)
                    if held else [])
    adv, ret, rpart = (np.zeros(d.size) for _ in range(3))
    for lo, hi, after in d.streams:
        b = float(next(boot)) if after is not None else 0.0
        if hi > lo:
            sl = slice(lo, hi)
            adv[sl], ret[sl] = advantages(d.rewards[sl], values[sl], d.dones[sl], b,
                                          config.gamma, config.lam)
            # the reward part alone: the same sum with every value 0
            rpart[sl], _ = advantages(d.rewards[sl], np.zeros(hi - lo), d.dones[sl], 0.0,
                                      config.gamma, config.lam)
    vpart = adv - rpart
    nz = d.rewards != 0
    ev = 1 - np.var(ret - values) / max(np.var(ret), 1e-12)
    corr = float(np.corrcoef(rpart, adv)[0, 1]) if rpart.std() > 0 else 0.0
    touched = float((np.abs(rpart) > 0.01 * np.abs(rpart).max()).mean()) if nz.any() else 0.0
    print(f"\n{name}: {d.size} decisions, {int(nz.sum())} with a reward "
          f"(mean {d.rewards[nz].mean() if nz.any() else 0:.4f}, sd "
          f"{d.rewards[nz].std() if nz.any() else 0:.4f})")
    print(f"  returns: mean {ret.mean():.4f} sd {ret.std():.4f}; values: mean {values.mean():.4f} "
          f"sd {values.std():.4f}; critic's explained variance {ev:.3f}")
    print(f"  advantage sd {adv.std():.5f} = reward part sd {rpart.std():.5f} + value part sd "
          f"{vpart.std():.5f}; corr(advantage, reward part) {corr:.3f}; decisions the reward "
          f"part reaches (>1% of its largest): {touched:.1%}")
    if name == "selector":  # does the signal tell Forward (while a job fits) from a pick?
        fwd = d.actions == model.layout.window
        z = (adv - adv.mean()) / (adv.std() + 1e-8)
        gap = float(z[fwd].mean() - z[~fwd].mean()) if fwd.any() and (~fwd).any() else 0.0
        print(f"  normalised advantage, Forward minus pick: {gap:+.3f} (reward part alone: "
              f"{float(rpart[fwd].mean() - rpart[~fwd].mean()) / (rpart.std() + 1e-12):+.3f})")
        pairs["forward_minus_pick"] = round(gap, 3)
    pairs.update({f"{name}_decisions": d.size, f"{name}_rewarded": int(nz.sum()),
                  f"{name}_adv_sd": round(adv.std(), 6), f"{name}_reward_part_sd":
                  round(rpart.std(), 6), f"{name}_value_part_sd": round(vpart.std(), 6),
                  f"{name}_corr": round(corr, 3), f"{name}_reached": round(touched, 3),
                  f"{name}_explained_var": round(ev, 3)})
choice = selector_choice(data[0], model.layout.window)
d = data[0]
with torch.no_grad():  # what greedy decoding (validation, herasched:PATH) would pick there
    logits = model.selector.policy(torch.from_numpy(d.obs), torch.from_numpy(d.mask))
    probs = torch.softmax(logits, -1).numpy()
choice["greedy_forward_share"] = float((probs.argmax(1) == model.layout.window).mean())
choice["mean_p_forward"] = float(probs[:, model.layout.window].mean())
print("\nselector: " + ", ".join(f"{k} {v:.3f}" for k, v in choice.items()))
# Eq. 4.1 averages the waits over the queue: a pick of a job that has waited less than the
# queue's mean raises the mean of those left, and so the next rewards' penalty
w = model.layout.window
picks = np.flatnonzero(d.actions < w)
if picks.size:
    jobs = d.obs[picks, :JOB_FEATURES * w].reshape(picks.size, w, JOB_FEATURES).astype(np.float64)
    present = jobs[..., 2] > 0
    waits = np.expm1(jobs[..., 0] * math.log1p(TIME_CAP))
    mean = (waits * present).sum(1) / np.maximum(present.sum(1), 1)
    picked = waits[np.arange(picks.size), d.actions[picks]]
    choice["picks_below_window_mean_wait"] = float((picked < mean).mean())
    print(f"picks: {picks.size}; of a job that had waited less than the window's mean wait: "
          f"{(picked < mean).mean():.1%}")
pairs.update({k: round(v, 3) for k, v in choice.items()})
print(" ".join(f"{k}={v}" for k, v in pairs.items()))
