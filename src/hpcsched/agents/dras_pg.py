"""DRAS-PG: REINFORCE with a baseline on the DRAS network (IPDPS'21 section III-B; spec dras.md 7.1).

One file, top to bottom. The agent acts one pick at a time (level 1 and level 2 alike, with the same
network), remembers (observation, mask, action, reward), and every `update_every` scheduling instances
makes one policy-gradient step on what it remembered, then forgets it:

    loss = -mean_k log pi(a_k | s_k) * A_k,   A_k = G_k - b_k,   G_k = sum_{k' >= k} gamma^(k'-k) r_k'

with returns truncated at the end of the batch (the code's). The baseline b is either the batch
standardisation of the code (`baseline="standardize"`: A = (G - mean G) / std G) or the paper's
per-step running mean of past returns (`baseline="running"`). The same class is Decima-PG when it
plays the one-level environment.

Defaults (spec section 16 items 6-8): the code's gamma = 0.6 and batch standardisation (with the
paper's undiscounted returns and running-mean baseline, the 10-instance batches of a busy cluster
hold hundreds of picks and the returns' scale grows with their number), and Adam at 1e-4 (the
rate of the authors' later CQGym code) with the gradient norm clipped at 1 and an entropy bonus of
0.01. Our additions: at the paper's 1e-3 (and the code's 1e-2) the bias-free 1000-wide layers move
the logits by hundreds within a few dozen updates and the policy collapses onto one slot.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from hpcsched.agents.dras_nets import PolicyNet, QNet, scaled_sizes
from hpcsched.agents.greedy import Float64Copy, greedy


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


class DrasPG:
    algo = "pg"

    def __init__(self, config: PGConfig, rows: int, seed: int = 0):
        if config.baseline not in ("standardize", "running"):
            raise ValueError(f"baseline must be standardize or running, not {config.baseline!r}")
        self.config = config
        self.rows = rows
        torch.manual_seed(seed)
        if config.net == "paper":
            fc1, fc2 = (config.fc1, config.fc2) if config.fc1 else scaled_sizes(rows)
            self.net = PolicyNet(rows, fc1, fc2, config.window, config.activation)
        elif config.net == "per_job":
            nodes = rows - 2 * config.window
            fc1, fc2 = (config.fc1, config.fc2) if config.fc1 else scaled_sizes(2 + nodes)
            self.net = QNet(nodes, fc1, fc2, config.activation)
        else:
            raise ValueError(f"net must be paper or per_job, not {config.net!r}")
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.lr)
        self.rng = np.random.default_rng(seed)
        self.running_baseline = np.zeros(0)  # per step index, for baseline="running"
        self.updates = 0
        self.dropped = 0
        self._memory: list[tuple[np.ndarray, np.ndarray, int, float]] = []
        self._net64 = Float64Copy()  # the greedy picks' float64 copy of `net`

    # -- acting ----------------------------------------------------------------------------------------
    def greedy_scores(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The masked logits of one observation in float64: what a greedy pick compares."""
        with torch.no_grad():
            obs64 = torch.from_numpy(np.asarray(obs, dtype=np.float64))[None]
            return self._net64(self.net)(obs64, torch.from_numpy(mask)[None])[0].numpy()

    def act(self, obs: np.ndarray, mask: np.ndarray, explore: bool) -> int:
        """A sample from the masked softmax (`explore`; the network's float32, as in training),
        else the most probable valid slot by the greedy rule of `hpcsched.agents.greedy` (float64
        logits rounded to float32; the first slot, the oldest job, on a tie)."""
        if not explore:
            return greedy(self.greedy_scores(obs, mask), mask)
        with torch.no_grad():
            logits = self.net(torch.from_numpy(obs)[None], torch.from_numpy(mask)[None])[0].numpy()
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return int(self.rng.choice(p.size, p=p))

    def observe(self, obs, mask, action, reward, next_obs, next_mask, done) -> None:
        self._memory.append((obs, mask.copy(), action, reward))

    # -- learning --------------------------------------------------------------------------------------
    def update(self) -> dict[str, float]:
        mem = self._memory
        self._memory = []
        if len(mem) > self.config.max_batch:
            self.dropped += len(mem) - self.config.max_batch
            mem = mem[-self.config.max_batch:]
        if len(mem) < 2:
            return {}
        c = self.config
        rewards = np.array([m[3] for m in mem], dtype=np.float64)
        returns = np.zeros_like(rewards)
        acc = 0.0
        for k in range(len(rewards) - 1, -1, -1):
            acc = rewards[k] + c.gamma * acc
            returns[k] = acc
        if c.baseline == "standardize":
            adv = (returns - returns.mean()) / (returns.std() + 1e-8)
        else:
            n = len(returns)
            if self.running_baseline.size < n:
                self.running_baseline = np.pad(self.running_baseline,
                                                (0, n - self.running_baseline.size))
            b = self.running_baseline[:n].copy()
            adv = returns - b
            # running mean over past updates, per step index
            self.running_baseline[:n] += (returns - b) / (self.updates + 1)
        obs = torch.from_numpy(np.stack([m[0] for m in mem]))
        mask = torch.from_numpy(np.stack([m[1] for m in mem]))
        actions = torch.tensor([m[2] for m in mem])
        logp = torch.log_softmax(self.net(obs, mask), dim=-1)
        chosen = logp.gather(1, actions[:, None]).squeeze(1)
        entropy = -(logp.exp() * logp.masked_fill(~mask, 0.0)).sum(-1).mean()
        loss = -(chosen * torch.as_tensor(adv, dtype=torch.float32)).mean() - c.entropy * entropy
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), c.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        return {"loss": float(loss.detach()), "entropy": float(entropy.detach()),
                "batch": len(mem)}

    def forget(self) -> None:
        self._memory = []

    # -- files -----------------------------------------------------------------------------------------
    def state(self) -> dict:
        return {"algo": self.algo, "agent_config": asdict(self.config), "rows": self.rows,
                "net": self.net.state_dict(), "optimizer": self.optimizer.state_dict(),
                "running_baseline": torch.from_numpy(self.running_baseline),
                "updates": self.updates, "dropped": self.dropped}

    @classmethod
    def from_state(cls, state: dict) -> "DrasPG":
        agent = cls(PGConfig(**state["agent_config"]), state["rows"])
        agent.net.load_state_dict(state["net"])
        if "optimizer" in state:  # a shipped (slim) copy has none
            agent.optimizer.load_state_dict(state["optimizer"])
        agent.running_baseline = state["running_baseline"].numpy().copy()
        agent.updates = state["updates"]
        agent.dropped = state["dropped"]
        return agent


__all__ = ["DrasPG", "PGConfig"]
