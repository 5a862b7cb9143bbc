"""HeraSched's rollouts (Algorithm 2): N episodes stepped together until the selector has acted
`update_every` times, each agent's decisions kept apart with the rewards each earned, and their
advantages.

Each environment gives every agent a stream of decisions (observation, mask, action, its
log-probability, reward, whether the episode ended after it). A reward that falls due is credited
to the last decision of the agent it is for, in that environment: the selector's Eq. 4.1 to the
selector action that completed its A_s, the allocator's Eq. 4.2 to the node pick that started its
A_a-th job, and the remainders paid at an episode's end to each agent's last decision.

**Update boundaries** (spec item 31). Episodes go on across updates (the thesis updates every 2,048
selector steps, whatever the episodes). Each stream's last decision before an update is held back
for the next rollout, unless the episode ended with it: its successor, whose value the decision
before it needs, is not known yet (the allocator's next decision comes with the selector's next
pick). The decisions before it bootstrap from its value; it joins the next update with the
log-probability it was taken with (the clipped ratio corrects for the policy being one update
newer). So no decision is cut off from what follows it, and none is used twice.

**Resuming.** What a rollout leaves between updates is small: each environment's episode (its
number, and the actions taken in it since its reset) and the held-back decisions. `state()` keeps
them in the model file; `restore()` replays the actions on fresh environments (no network is
needed: the engine is deterministic), so a resumed run continues exactly where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from hpcsched.agents.ppo import derived_seed
from hpcsched.envs.herasched import ALLOCATOR, SELECTOR

AGENT_NAMES = ("selector", "allocator")
#: act(agent, obs (B, D), mask (B, A)) -> (actions (B,), log-probabilities (B,))
ActFn = Callable[[int, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class Decision:
    obs: np.ndarray
    mask: np.ndarray
    action: int
    logp: float
    reward: float = 0.0
    done: bool = False


@dataclass
class AgentData:
    """One agent's decisions of a rollout, stream after stream, and where each stream ends."""

    obs: np.ndarray  # (M, D) float32
    mask: np.ndarray  # (M, A) bool
    actions: np.ndarray  # (M,) int64
    logp: np.ndarray  # (M,) float32
    rewards: np.ndarray  # (M,) float64
    dones: np.ndarray  # (M,) bool: the episode ended after it
    #: per stream: (first decision, one past its last used, the held-back decision's observation
    #: or None where the stream ends with an episode's end)
    streams: list[tuple[int, int, np.ndarray | None]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.actions)


def episode_seed(seed: int, env: int, episode: int) -> int:
    """The reset seed of environment `env`'s `episode`-th episode of a run."""
    return derived_seed(seed, 1_000_000 + env, episode)


def advantages(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, bootstrap: float,
               gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE(gamma, lambda) advantages and returns (advantage + value) of one stream of decisions:
    `dones[t]` says the episode ended after decision t (no value follows it); `bootstrap` is the
    value of the decision after the last (0 when the last ended its episode)."""
    n = len(rewards)
    adv = np.zeros(n)
    next_value, next_adv = float(bootstrap), 0.0
    for t in range(n - 1, -1, -1):
        if dones[t]:
            next_value, next_adv = 0.0, 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        next_adv = delta + gamma * lam * next_adv
        adv[t] = next_adv
        next_value = values[t]
    return adv, adv + values


class HeraRollout:
    """N HeraSched environments (made by `make_env()`) stepped together for the learner, their
    episodes going on across rollouts."""

    def __init__(self, make_env: Callable[[], Any], num_envs: int, seed: int) -> None:
        self.envs = [make_env() for _ in range(num_envs)]
        self.seed = int(seed)
        self.episodes = [0] * num_envs  # the episode each env is in (0-based)
        self.actions: list[list[int]] = [[] for _ in range(num_envs)]
        self.held: list[list[Decision | None]] = [[None, None] for _ in range(num_envs)]
        self.obs: list[np.ndarray] = []
        self.info: list[dict] = []
        self.started = False

    @property
    def num_envs(self) -> int:
        return len(self.envs)

    def _reset(self, i: int) -> None:
        obs, info = self.envs[i].reset(seed=episode_seed(self.seed, i, self.episodes[i]))
        self.actions[i] = []
        if len(self.obs) <= i:
            self.obs.append(obs)
            self.info.append(info)
        else:
            self.obs[i], self.info[i] = obs, info

    def start(self) -> None:
        if not self.started:
            for i in range(self.num_envs):
                self._reset(i)
            self.started = True

    def collect(self, act: ActFn, update_every: int,
                max_steps: int = 50_000_000) -> tuple[list[AgentData], dict[str, Any]]:
        """Step until the selector has acted `update_every` times (over all environments);
        returns each agent's data (selector's, allocator's) and what the rollout saw."""
        self.start()
        n = self.num_envs
        streams: list[list[list[Decision]]] = [[[], []] for _ in range(n)]
        for i in range(n):
            for agent in (SELECTOR, ALLOCATOR):
                if self.held[i][agent] is not None:
                    streams[i][agent].append(self.held[i][agent])
                    self.held[i][agent] = None
        selector_steps = steps = 0
        ended: list[dict[str, Any]] = []
        due = [[], []]  # every reward that fell due, per agent
        while selector_steps < update_every:
            if steps >= max_steps:
                raise RuntimeError(f"no update after {max_steps} steps")
            chosen = np.zeros(n, dtype=np.int64)
            logps = np.zeros(n, dtype=np.float32)
            agents = np.array([info["agent"] for info in self.info])
            for agent in (SELECTOR, ALLOCATOR):
                idx = np.flatnonzero(agents == agent)
                if idx.size == 0:
                    continue
                width = self.envs[0].layout.window + 1 if agent == SELECTOR \
                    else self.envs[0].layout.nodes
                obs = np.stack([self.obs[i] for i in idx])
                mask = np.stack([self.info[i]["action_mask"][:width] for i in idx])
                a, lp = act(agent, obs, mask)
                chosen[idx], logps[idx] = a, lp
            for i in range(n):
                agent = int(agents[i])
                mask = self.info[i]["action_mask"]
                width = self.envs[i].layout.window + 1 if agent == SELECTOR \
                    else self.envs[i].layout.nodes
                d = Decision(self.obs[i], mask[:width].copy(), int(chosen[i]), float(logps[i]))
                streams[i][agent].append(d)
                obs, _, terminated, _, info = self.envs[i].step(int(chosen[i]))
                self.actions[i].append(int(chosen[i]))
                for who in (SELECTOR, ALLOCATOR):
                    r = float(info["rewards"][who])
                    if r and streams[i][who]:
                        streams[i][who][-1].reward += r
                    if r:
                        due[who].append(r)
                selector_steps += agent == SELECTOR
                steps += 1
                if terminated:
                    for who in (SELECTOR, ALLOCATOR):
                        if streams[i][who]:
                            streams[i][who][-1].done = True
                    ended.append(dict(info["metrics"], env=i, episode=self.episodes[i]))
                    self.episodes[i] += 1
                    self._reset(i)
                else:
                    self.obs[i], self.info[i] = obs, info
        data = [self._gather(streams, agent) for agent in (SELECTOR, ALLOCATOR)]
        seen = {"selector_steps": selector_steps, "allocator_steps": steps - selector_steps,
                "episodes_ended": len(ended), "ended": ended,
                "selector_rewards": len(due[0]), "allocator_rewards": len(due[1]),
                "mean_reward": float(np.mean(due[0] + due[1])) if due[0] or due[1] else 0.0}
        return data, seen

    def _gather(self, streams, agent: int) -> AgentData:
        """`agent`'s decisions, holding each stream's last back unless its episode ended there."""
        used: list[Decision] = []
        bounds = []
        for i, per_env in enumerate(streams):
            s = per_env[agent]
            if s and not s[-1].done:
                self.held[i][agent] = s[-1]
                bounds.append((len(used), len(used) + len(s) - 1, s[-1].obs))
                used.extend(s[:-1])
            else:
                bounds.append((len(used), len(used) + len(s), None))
                used.extend(s)
        if not used:
            width = self.envs[0].layout.n_allocator
            cols = self.envs[0].layout.window + 1 if agent == SELECTOR \
                else self.envs[0].layout.nodes
            return AgentData(np.zeros((0, width), np.float32), np.zeros((0, cols), bool),
                             np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0),
                             np.zeros(0, bool), bounds)
        return AgentData(np.stack([d.obs for d in used]), np.stack([d.mask for d in used]),
                         np.array([d.action for d in used], dtype=np.int64),
                         np.array([d.logp for d in used], dtype=np.float32),
                         np.array([d.reward for d in used]),
                         np.array([d.done for d in used], dtype=bool), bounds)

    # -- resuming -------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What resuming needs (tensors and plain values, for the model file)."""
        held = []
        for i, pair in enumerate(self.held):
            for agent, d in enumerate(pair):
                if d is not None:
                    held.append({"env": i, "agent": agent, "obs": torch.from_numpy(d.obs.copy()),
                                 "mask": torch.from_numpy(d.mask.copy()), "action": d.action,
                                 "logp": d.logp, "reward": d.reward})
        return {"started": self.started, "episodes": list(self.episodes),
                "actions": [torch.tensor(a, dtype=torch.int32) for a in self.actions],
                "held": held}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from `state()`: each environment's episode replayed to where it was."""
        if not state or not state.get("started"):
            return
        if len(state["episodes"]) != self.num_envs:
            raise ValueError(f"the run has {len(state['episodes'])} environments, not "
                             f"{self.num_envs}")
        self.episodes = [int(e) for e in state["episodes"]]
        for i in range(self.num_envs):
            self._reset(i)
            for a in state["actions"][i].tolist():
                obs, _, terminated, _, info = self.envs[i].step(int(a))
                if terminated:
                    raise ValueError(f"environment {i}'s episode ended while it was replayed: "
                                     f"the run's trace or cluster has changed")
                self.obs[i], self.info[i] = obs, info
                self.actions[i].append(int(a))
        for h in state["held"]:
            self.held[int(h["env"])][int(h["agent"])] = Decision(
                h["obs"].numpy().copy(), h["mask"].numpy().copy(), int(h["action"]),
                float(h["logp"]), float(h["reward"]))
        self.started = True


__all__ = ["AGENT_NAMES", "ActFn", "AgentData", "Decision", "HeraRollout", "advantages",
           "episode_seed"]
