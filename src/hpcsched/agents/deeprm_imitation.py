"""DeepRM's supervised warm start: the authors' code's `pg_su`, not the paper's protocol.

Before REINFORCE, the network learns to pick what a heuristic picks (`hpcsched train deeprm --init
sjf`). States come from rollouts on the training jobsets that follow the heuristic but take a
random valid action with probability `explore` (so that states off the heuristic's own path are
labelled too); the label is always the heuristic's choice. Cross-entropy (masked as in training),
Adam, `init_passes` passes over the states.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def imitate(model, heuristic: str, *, repeats: int = 5, explore: float = 0.2,
            minibatch: int = 256) -> dict[str, float]:
    """Train `model` (an `agents.deeprm.DeepRM`) to imitate `heuristic`. Returns the number of
    states and the share of them where the trained network's greedy choice is the label."""
    from hpcsched.policies.deeprm import get_grid_policy

    c = model.config
    teacher = get_grid_policy(heuristic)
    batch = c.batch()
    batch.reset(model.train_jobs.repeat(repeats))
    images, labels, masks = [], [], []
    while not batch.done.all():
        live = np.flatnonzero(~batch.done)
        label = teacher.act(batch)
        mask = batch.action_mask()
        images.append(batch.images(live, np.float32).reshape(len(live), -1))
        labels.append(label[live])
        masks.append(mask[live])
        act = label.copy()
        wander = model.rng.random(batch.B) < explore
        if wander.any():
            p = mask[wander] / mask[wander].sum(axis=1, keepdims=True)
            u = model.rng.random((int(wander.sum()), 1))
            act[wander] = (np.cumsum(p, axis=1) < u).sum(axis=1)
        batch.step(act)
    x = torch.from_numpy(np.concatenate(images))
    y = torch.from_numpy(np.concatenate(labels))
    m = torch.from_numpy(np.concatenate(masks))
    opt = torch.optim.Adam(model.net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(c.seed)
    for _ in range(c.init_passes):
        order = torch.randperm(len(y), generator=gen)
        for s in range(0, len(y), minibatch):
            i = order[s:s + minibatch]
            loss = nn.functional.cross_entropy(model.logits(x[i], m[i]), y[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        agree = float((model.logits(x, m).argmax(dim=1) == y).float().mean())
    return {"imitation_states": len(y), "imitation_agreement": agree}


__all__ = ["imitate"]
