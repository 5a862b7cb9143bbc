"""A warm start for PPO: teach the policy network to pick what a heuristic picks (behaviour cloning).

Not in RLScheduler, which starts from random weights. The kernel network can express any score
function of a job's own features (SJF is "smallest feature 1"), so a few hundred supervised steps
bring it to the heuristic's level, and PPO then looks for improvements from there instead of from a
random policy. `hpcsched train rlscheduler --init sjf` does this before the first epoch.

Decisions are collected by running the heuristic itself through the training environments (so the
states are those the heuristic visits); at each decision the target is the observed slot with the
smallest heuristic key (ties: the earlier slot, i.e. the earlier arrival under the FCFS cut-off).
Only heuristics with a static key per job qualify (fcfs, sjf, saf, srf, sqf, f1-f4, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hpcsched.agents.nets import pack_rows


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
    obs, mask = env.reset(seed=seed)
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
    """Full-batch Adam on the cross-entropy of the heuristic's choices; returns the final loss and
    how often the policy's most probable slot is the heuristic's."""
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    y = torch.from_numpy(target)
    packed = hasattr(policy, "packed_logits")
    if packed:
        unique, slot_index = pack_rows(obs, mask)

    def logits() -> torch.Tensor:
        if packed:
            return policy.packed_logits(unique, slot_index)
        return policy(torch.from_numpy(obs), torch.from_numpy(mask))

    loss = torch.tensor(0.0)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(logits(), y)
        loss.backward()
        opt.step()
    with torch.no_grad():
        agree = float((logits().argmax(-1) == y).float().mean())
    return {"imitation_loss": float(loss.detach()), "imitation_agreement": agree}


__all__ = ["collect_demonstrations", "heuristic_targets", "imitate"]
