"""DRAS-PG: REINFORCE with a baseline on the DRAS network (IPDPS'21 section III-B; spec dras.md 7.1).

The agent acts one pick at a time (level 1 and level 2 alike, with the same network), remembers
(observation, mask, action, reward), and every `update_every` scheduling instances takes one step
of `agents.reinforce` on what it remembered, as one trajectory (returns truncated at its end, as
the code's), then forgets it; its baseline is the code's batch standardisation or the paper's
running mean (`reinforce.BASELINES`). The same class is Decima-PG when it plays the one-level
environment.

Defaults (spec section 16 items 6-8): the code's gamma = 0.6 and batch standardisation (with the
paper's undiscounted returns and running-mean baseline, the 10-instance batches of a busy cluster
hold hundreds of picks and the returns' scale grows with their number), and Adam at 1e-4 (the
rate of the authors' later CQGym code) with the gradient norm clipped at 1 and an entropy bonus of
0.01. Our additions: at the paper's 1e-3 (and the code's 1e-2) the bias-free 1000-wide layers move
the logits by hundreds within a few dozen updates and the policy collapses onto one slot.

SB3's verbs: `learn(env, jobsets)`, `predict(obs, mask)`, `save(path)`, `DrasPG.load(path)`,
`policy(...)` (`agents.dras_episode.DrasAgent`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from hpcsched.agents.dras_episode import DrasAgent
from hpcsched.agents.dras_nets import PolicyNet, per_job_net, scaled_sizes
from hpcsched.agents.reinforce import Reinforce, ReinforceSettings


@dataclass
class PGConfig:
    lr: float = 1e-4
    gamma: float = 0.6
    entropy: float = 0.01  # bonus on the mean entropy of the batch's pick distributions
    max_grad_norm: float = 1.0
    baseline: str = "standardize"  # or "running" (the paper)
    update_every: int = 10  # scheduling instances between updates
    fc1: int = 0  # 0: scaled to the cluster (dras_nets.scaled_sizes)
    fc2: int = 0
    activation: str = "leaky_relu"
    #: "paper": conv -> FC1 -> FC2 -> W logits over positions (Table III); "per_job": our
    #: deviation, each slot's logit scored from its job block and the node rows by the DQL
    #: network's form (`dras_nets.QNet`), so a preference learnt for a job follows the job to
    #: whatever slot it is in
    net: str = "paper"
    window: int = 50
    max_batch: int = 4096  # picks per update at most (the oldest are dropped, and counted)

    @property
    def reinforce(self) -> ReinforceSettings:
        return ReinforceSettings(lr=self.lr, optimizer="adam", gamma=self.gamma,
                                 baseline=self.baseline, entropy=self.entropy,
                                 max_grad_norm=self.max_grad_norm)


class DrasPG(DrasAgent):
    algo = "pg"

    def __init__(self, config: PGConfig, rows: int, seed: int = 0):
        if config.baseline not in ("standardize", "running"):
            raise ValueError(f"baseline must be standardize or running, not {config.baseline!r}")
        super().__init__(config, rows, seed)
        if config.net == "paper":
            fc1, fc2 = (config.fc1, config.fc2) if config.fc1 else scaled_sizes(rows)
            self.net = PolicyNet(rows, fc1, fc2, config.window, config.activation)
        elif config.net == "per_job":
            self.net = per_job_net(rows, config)
        else:
            raise ValueError(f"net must be paper or per_job, not {config.net!r}")
        self.reinforce = Reinforce(self.net.parameters(), config.reinforce)
        self.dropped = 0
        self._memory: list[tuple[np.ndarray, np.ndarray, int, float]] = []

    @property
    def updates(self) -> int:
        return self.reinforce.updates

    # -- deciding ----------------------------------------------------------------------------------
    def explore(self, obs: np.ndarray, mask: np.ndarray) -> int:
        """A sample of the masked softmax (the network's float32, as training draws it)."""
        logits = self.scores(obs, mask)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return int(self.rng.choice(p.size, p=p))

    # -- learning ----------------------------------------------------------------------------------
    def observe(self, obs, mask, action, reward, next_obs, next_mask, done) -> None:
        self._memory.append((obs, mask.copy(), action, reward))

    def update(self) -> dict[str, float]:
        """One REINFORCE step on the picks remembered since the last one (then forgotten)."""
        mem = self._memory
        self._memory = []
        if len(mem) > self.config.max_batch:
            self.dropped += len(mem) - self.config.max_batch
            mem = mem[-self.config.max_batch:]
        if len(mem) < 2:
            return {}
        n = len(mem)
        rewards = np.array([m[3] for m in mem], dtype=np.float64)[None]
        adv, _ = self.reinforce.advantages(rewards, np.zeros(1, int), np.zeros(n, int),
                                           np.arange(n))
        stats = self.reinforce.step(
            self.net, torch.from_numpy(np.stack([m[0] for m in mem])),
            torch.from_numpy(np.stack([m[1] for m in mem])), torch.tensor([m[2] for m in mem]),
            torch.as_tensor(adv, dtype=torch.float32))
        return {**stats, "batch": n}

    def forget(self) -> None:
        self._memory = []

    # -- files -------------------------------------------------------------------------------------
    def state(self) -> dict:
        """The agent's entries of its model file (`hpcsched.modelfile`; `DrasAgent.save` adds
        the run's): its settings and rows, its counters, the network and Adam's state."""
        return {"learner": "reinforce", "learner_config": {**asdict(self.config), "rows": self.rows},
                "learner_state": {"running_baseline": torch.from_numpy(self.reinforce.running),
                                  "updates": self.updates, "dropped": self.dropped},
                "weights": {"policy": self.net.state_dict()},
                "training": {"optimizers": {"policy": self.reinforce.optimizer.state_dict()}}}

    @classmethod
    def from_state(cls, state: dict) -> "DrasPG":
        settings = dict(state["learner_config"])
        agent = cls(PGConfig(**{k: v for k, v in settings.items() if k != "rows"}),
                    settings["rows"])
        agent.net.load_state_dict(state["weights"]["policy"])
        optimizers = (state.get("training") or {}).get("optimizers")
        if optimizers:  # a slim export has none
            agent.reinforce.optimizer.load_state_dict(optimizers["policy"])
        counters = state["learner_state"]
        agent.reinforce.running = counters["running_baseline"].numpy().copy()
        agent.reinforce.updates = counters["updates"]
        agent.dropped = counters["dropped"]
        return agent


__all__ = ["DrasPG", "PGConfig"]
