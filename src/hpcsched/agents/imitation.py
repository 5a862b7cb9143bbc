"""Warm starts for PPO: teach the policy network to choose what a fixed rule chooses (behaviour
cloning), before the first epoch.

Not in the papers, which start from random weights. RLScheduler's kernel network can express any
score function of a job's own features (SJF is "smallest feature 1"), so a few hundred supervised
steps bring it to a heuristic's level, and PPO then looks for improvements from there instead of
from a random policy (`hpcsched train rlscheduler --init sjf`: `imitate_heuristic`). A
SchedInspector policy can likewise start as a fixed accept/reject rule (`hpcsched train inspector
--init-rule reject-unfit`: `imitate_rule`).

Decisions are collected by running the rule itself through the training environments (so the
states are those the rule visits). For a heuristic, the target at each decision is the observed
slot with the smallest heuristic key (ties: the earlier slot, i.e. the earlier arrival under the
FCFS cut-off); only heuristics with a static key per job qualify (fcfs, sjf, saf, srf, sqf,
f1-f4, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hpcsched.agents.batch import Batch


def heuristic_targets(env, static_keys, cache: dict) -> np.ndarray:
    """The slot each environment's heuristic would pick now (VecPickJob's `engines` and `rows`)."""
    rows = env.rows
    targets = np.empty(len(rows), dtype=np.int64)
    for i, engine in enumerate(env.engines):
        jobs = engine.jobs
        keys = cache.get(id(jobs))
        if keys is None or keys[0] is not jobs:
            keys = cache[id(jobs)] = (jobs, np.asarray(static_keys(jobs), dtype=np.float64))
        k = np.where(rows[i] >= 0, keys[1][np.maximum(rows[i], 0)], np.inf)
        targets[i] = int(np.argmin(k))
    return targets


def collect_demonstrations(env, heuristic: str, episodes: int, seed: int = 0
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(obs, mask, target slot) of the decisions of `episodes` episodes scheduled by `heuristic`."""
    from hpcsched.policies.priority import get_policy

    policy = get_policy(heuristic)
    static = getattr(policy, "static_keys", None)
    if static is None:
        raise ValueError(f"--init {heuristic}: only heuristics with a fixed score per job can be "
                         f"imitated (e.g. fcfs, sjf, f1); {heuristic} re-scores jobs as they wait")
    obs, mask = env.reset(seed=seed)  # the windows as the wrappers choose them
    env = getattr(env, "unwrapped", env)  # steps need no reward wrapper: rewards are not used
    cache: dict[int, Any] = {}
    done_count = 0
    xs, ms, ys = [], [], []
    while done_count < episodes:
        target = heuristic_targets(env, static, cache)
        xs.append(obs.copy())
        ms.append(mask.copy())
        ys.append(target)
        obs, mask, _, done, _ = env.step(target)
        done_count += int(done.sum())
    return np.concatenate(xs), np.concatenate(ms), np.concatenate(ys)


def imitate(policy: torch.nn.Module, obs: np.ndarray, mask: np.ndarray, target: np.ndarray,
            steps: int = 300, lr: float = 3e-3) -> dict[str, float]:
    """Full-batch Adam on the cross-entropy of the rule's choices (the policy's logits through its
    fastest path, `nets.MaskedPolicy.logits`); returns the final loss and how often the policy's
    most probable action is the rule's."""
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    batch = Batch(obs, mask, target)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(policy.logits(batch), batch.actions)
        loss.backward()
        opt.step()
    with torch.no_grad():
        agree = float((policy.logits(batch).argmax(-1) == batch.actions).float().mean())
    return {"imitation_loss": float(loss.detach()), "imitation_agreement": agree}


def imitate_heuristic(model, heuristic: str, episodes: int, steps: int,
                      seed: int) -> dict[str, float]:
    """`model`'s policy (a `ppo.PPO` on `VecPickJob`s) fitted to `heuristic`'s choices on
    `episodes` episodes of its environments, with `steps` supervised steps."""
    from hpcsched.agents.ppo import torch_threads

    obs, mask, target = collect_demonstrations(model.env(), heuristic, episodes, seed=seed)
    with torch_threads(model.params.threads):
        stats = imitate(model.policy, obs, mask, target, steps=steps)
    stats["imitation_decisions"] = len(target)
    return stats


def imitate_rule(model, rule, episodes: int, seed: int) -> dict[str, float]:
    """`model`'s policy fitted to `rule(obs, mask) -> action` on `episodes` episodes of its
    environments (the rule deciding), 300 supervised steps."""
    from hpcsched.agents import rollout
    from hpcsched.agents.ppo import torch_threads

    def act(obs: np.ndarray, mask: np.ndarray):
        a = np.array([rule(o, m) for o, m in zip(obs, mask)], dtype=np.int64)
        return a, np.zeros(len(a), dtype=np.float32)

    with torch_threads(model.params.threads):
        traj = rollout.collect(model.env(), act, episodes, seed=seed)
        return imitate(model.policy, traj.obs, traj.mask, traj.actions)


__all__ = ["collect_demonstrations", "heuristic_targets", "imitate", "imitate_heuristic",
           "imitate_rule"]
