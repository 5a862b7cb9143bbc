"""REINFORCE with a baseline: the policy-gradient update that DeepRM, DRAS-PG and Decima-PG share.

Williams' algorithm as the two papers use it. A batch holds the decisions of B trajectories (each
decision's observation, valid-action mask and action; the trajectories' rewards, (B, K) with zeros
after a trajectory's end). One update is

    G_t  = r_t + gamma G_(t+1)                                  the return-to-go of each decision
    A    = G_t - b_t                                            its advantage over the baseline
    loss = -1/n sum log pi(a | s) A  -  entropy 1/n sum H(pi(. | s))

and one optimiser step. What differs between the learners is configuration (`ReinforceSettings`):

- `baseline="time"` (DeepRM, HotNets'16 section 3.3): b_t is the mean return-to-go at decision
  index t over the trajectories of the same group (the N rollouts of one jobset; a trajectory that
  has ended counts 0, the paper's zero padding).
- `baseline="standardize"` (DRAS's code): A = (G - mean G) / std G over the batch.
- `baseline="running"` (DRAS's paper): b_t is the running mean, over the updates so far, of the
  return-to-go at index t (the update's trajectories averaged).
- the discount, the entropy bonus, gradient clipping, the optimiser (RMSProp or Adam) and how many
  decisions go through the network per backward pass (DeepRM's batches hold a hundred thousand).

The learners collect the batch (DeepRM: hundreds of environments stepped together, `agents.deeprm`;
DRAS: one pick at a time between updates, `agents.dras_pg`) and give the network's masked logits.
This file knows no environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import torch

BASELINES = ("time", "standardize", "running")
OPTIMIZERS = ("rmsprop", "adam")


@dataclass(frozen=True)
class ReinforceSettings:
    lr: float
    optimizer: str = "adam"  # or "rmsprop"
    rho: float = 0.9  # RMSProp's decay
    eps: float = 1e-9  # RMSProp's epsilon (Adam keeps torch's defaults)
    gamma: float = 1.0
    baseline: str = "time"
    entropy: float = 0.0  # bonus on the batch's mean entropy (0: none)
    max_grad_norm: float = 0.0  # 0: no clipping
    chunk: int = 0  # decisions per forward/backward pass, gradients summed (0: all at once)

    def __post_init__(self) -> None:
        if self.baseline not in BASELINES:
            raise ValueError(f"baseline must be one of {', '.join(BASELINES)}, not "
                             f"{self.baseline!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not "
                             f"{self.optimizer!r}")


def returns_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """G (B, K) of rewards (B, K): G[:, t] = r[:, t] + gamma G[:, t + 1], truncated at K."""
    togo = np.empty_like(rewards)
    acc = np.zeros(rewards.shape[0], dtype=rewards.dtype)
    for t in range(rewards.shape[1] - 1, -1, -1):
        acc = rewards[:, t] + gamma * acc
        togo[:, t] = acc
    return togo


def advantages(rewards: np.ndarray, group: np.ndarray, env: np.ndarray, index: np.ndarray,
               gamma: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The time-dependent baseline's advantages: (A of each decision, listed by its trajectory
    `env` and decision `index`; the returns-to-go (B, K)). `group[b]` is trajectory b's group: the
    baseline at index t is the mean return-to-go at t over the trajectories of one group."""
    togo = returns_to_go(rewards, gamma)
    groups, inverse = np.unique(group, return_inverse=True)
    sums = np.zeros((len(groups), rewards.shape[1]))
    np.add.at(sums, inverse, togo)
    counts = np.bincount(inverse, minlength=len(groups))[:, None]
    baseline = sums / counts
    return togo[env, index] - baseline[inverse[env], index], togo


def make_optimizer(params: Iterable[torch.nn.Parameter],
                   settings: ReinforceSettings) -> torch.optim.Optimizer:
    if settings.optimizer == "rmsprop":
        return torch.optim.RMSprop(params, lr=settings.lr, alpha=settings.rho, eps=settings.eps)
    return torch.optim.Adam(params, lr=settings.lr)


#: the network's logits for (observations, masks), invalid actions already masked out
Logits = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Reinforce:
    """The update over a network's parameters: `advantages` of a batch, then `step`. It holds the
    optimiser and, for the running baseline, its per-index means and the update count."""

    def __init__(self, params: Iterable[torch.nn.Parameter], settings: ReinforceSettings) -> None:
        self.settings = settings
        self.params = list(params)
        self.optimizer = make_optimizer(self.params, settings)
        self.running = np.zeros(0)  # baseline="running": the baseline per decision index
        self.updates = 0

    def advantages(self, rewards: np.ndarray, group: np.ndarray, env: np.ndarray,
                   index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(A of each decision, returns-to-go (B, K)); see `advantages` for the arguments."""
        s = self.settings
        if s.baseline == "time":
            return advantages(rewards, group, env, index, s.gamma)
        togo = returns_to_go(rewards, s.gamma)
        returns = togo[env, index]
        if s.baseline == "standardize":
            return (returns - returns.mean()) / (returns.std() + 1e-8), togo
        k = togo.shape[1]
        if self.running.size < k:
            self.running = np.pad(self.running, (0, k - self.running.size))
        before = self.running[:k].copy()
        self.running[:k] += (togo.mean(axis=0) - before) / (self.updates + 1)
        return returns - before[index], togo

    def step(self, logits: Logits, obs: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor,
             adv: torch.Tensor) -> dict[str, float]:
        """One optimiser step on -1/n sum log pi(a | s) A (minus the entropy bonus). Returns the
        loss and the mean entropy of the decisions' distributions."""
        s = self.settings
        n = len(actions)
        chunk = s.chunk or n
        self.optimizer.zero_grad()
        total, entropy = 0.0, 0.0
        for start in range(0, n, chunk):
            part = slice(start, start + chunk)
            logp = torch.log_softmax(logits(obs[part], masks[part]), dim=-1)
            chosen = logp.gather(1, actions[part, None])[:, 0]
            loss = -(chosen * adv[part]).sum() / n
            if s.entropy:
                h = -(logp.exp() * logp.masked_fill(~masks[part], 0.0)).sum(-1)
                loss = loss - s.entropy * (h.sum() / n)
            loss.backward()
            total += float(loss.detach())
            with torch.no_grad():
                p = logp.exp()
                entropy += float(-(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum())
        if s.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.params, s.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        return {"loss": total, "entropy": entropy / max(n, 1)}


__all__ = ["BASELINES", "Reinforce", "ReinforceSettings", "advantages", "make_optimizer",
           "returns_to_go"]
