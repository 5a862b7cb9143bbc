"""SchedInspector's agent (spec schedinspector.md sections 5-7): its configuration of PPO on
`hpcsched/Inspect-v0` (a trained inspector as an engine `Policy`: `agents.inspector_policy`).

The networks are the paper's (`nets.InspectorPolicyNet`, `nets.InspectorValueNet`): a policy MLP
F -> 32 -> 16 -> 8 -> 2 (938 parameters with the code's 7 features) and a value MLP
F -> 32 -> 16 -> 8 -> 1 (929). The algorithm is the one PPO (`agents/ppo.py`), with the paper's
rates and its own arithmetic: the batch taken whole, statistics as float32 means,
`torch.multinomial`'s random stream, the policy's iterations before the value's.

    model = PPO(InspectorConfig(trace="lublin-1", base="sjf"))
    model.learn(epochs=40)
    model.save("runs/insp/model.pt")
    policy = load_inspector("runs/insp/model.pt")      # a Policy: sjf with the inspector
                                                       # (agents.inspector_policy)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from hpcsched.agents.nets import InspectorPolicyNet, InspectorValueNet
from hpcsched.agents.ppo import PPO, PPOParams, PPOSettings, config_from_dict, derived_seed
from hpcsched.envs.inspection import FEATURE_SETS
from hpcsched.envs.vec import VecInspect
from hpcsched.sim.run import needed_estimate

@dataclass
class InspectorConfig(PPOSettings):
    """Every setting of a training run: PPO's (`ppo.PPOSettings`) and these. Defaults: the paper
    (section 4.1) and the authors' code."""

    # -- the environment (hpcsched.envs.inspector.InspectEnv's arguments) ---------------------------
    trace: str = "lublin-1"
    base: str = "sjf"
    metric: str = "bsld"  # bsld, wait, utilization
    backfill: str = "none"
    # "schedinspector": the authors' code (run times as requests, its SJF); "schedinspector-paper":
    # the users' requested times on SchedGym's loader (the shipped models were trained under it)
    profile: str = "schedinspector"
    episode_jobs: int = 128
    features: str = "code"  # "code": 7 features; "paper": 8 (metric-aware delay, backfilling)
    # None: the profile's requested times; "perfect": the run times under any profile
    estimate: str | None = None
    reward: str = "paper"  # "paper": (base - insp) / base; "code": / max(base, insp, 1)
    train_fraction: float = 0.2
    max_interval: float = 600.0
    max_rejections: int = 72
    # -- PPO (and PPOSettings') ---------------------------------------------------------------------
    n_envs: int = 100
    pi_lr: float = 1e-3  # the paper's stated rate (the code's policy rate is 3e-4)
    # None: PyTorch's default initialisation (about 50% reject at first). P in (0, 1): the output
    # layer starts with near-zero weights and the bias of an accept probability P, so the inspector
    # starts as (almost) the base heuristic and only learns to reject where that pays.
    init_accept: float | None = None
    # None, or "reject-unfit": before PPO, fit the policy by cross-entropy to that fixed rule's
    # decisions on `init_episodes` training episodes, so PPO starts from the rule, not from chance.
    init_rule: str | None = None
    init_episodes: int = 100

    @property
    def n_features(self) -> int:
        return FEATURE_SETS[self.features]

    def env_kwargs(self) -> dict[str, Any]:
        return dict(trace=self.trace, base=self.base, metric=self.metric, backfill=self.backfill,
                    episode_jobs=self.episode_jobs, features=self.features,
                    estimate=self.estimate, reward=self.reward,
                    train_fraction=self.train_fraction, max_interval=self.max_interval,
                    max_rejections=self.max_rejections, profile=self.profile)

    def __post_init__(self) -> None:
        self.estimate = needed_estimate(self.estimate, self.profile)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InspectorConfig":
        return config_from_dict(cls, trained_config(d))

    # -- PPO's configuration (ppo.Configuration) ----------------------------------------------------
    def ppo_params(self) -> PPOParams:
        return PPOParams.of(self, parallel_update=False, rollout_threads=None, chunk=None,
                            sampling="multinomial", float32_stats=True)

    def networks(self):
        policy = InspectorPolicyNet(self.n_features)
        if self.init_accept is not None:
            bias_toward_accept(policy, self.init_accept)
        return policy, InspectorValueNet(self.n_features)

    def make_env(self, model: PPO) -> VecInspect:
        return VecInspect(self.n_envs, **self.env_kwargs())

    def extra_state(self) -> dict[str, Any]:
        return {}


def trained_config(d: dict[str, Any]) -> dict[str, Any]:
    """A saved config as it reads today. Before the schedinspector profile became the authors'
    code (run times as requests, SJF's ties by processors, zero-length jobs kept), a config named
    it with an `estimate` of "user" or "perfect"; those semantics are the schedinspector-paper
    profile's now, so such a config names that profile. Configs written since never pair
    schedinspector with an estimate."""
    if d.get("profile", "schedinspector") == "schedinspector" and d.get("estimate") is not None:
        return {**d, "profile": "schedinspector-paper"}
    return dict(d)


def bias_toward_accept(policy: InspectorPolicyNet, p_accept: float) -> None:
    """Start `policy` accepting with probability about `p_accept` whatever the observation: the
    output layer's weights are shrunk 100-fold and its bias set to log-odds log(p / (1 - p))."""
    if not 0.0 < p_accept < 1.0:
        raise ValueError(f"init_accept: {p_accept} is not a probability strictly between 0 and 1")
    out = policy.net[-1]
    with torch.no_grad():
        out.weight.mul_(0.01)
        out.bias.copy_(torch.tensor([float(np.log(p_accept)), float(np.log(1.0 - p_accept))]))


def fit_rule(model: PPO) -> dict[str, float]:
    """Fit `model`'s policy to its `config.init_rule`'s decisions on `init_episodes` training
    episodes (`agents.imitation.imitate_rule`); returns its final loss and agreement."""
    from hpcsched.agents.imitation import imitate_rule
    from hpcsched.agents.inspector_policy import reject_unfit

    c = model.config
    rules = {"reject-unfit": reject_unfit}
    if c.init_rule not in rules:
        raise ValueError(f"init_rule: unknown rule {c.init_rule!r}; known: {', '.join(rules)}")
    return imitate_rule(model, rules[c.init_rule], c.init_episodes,
                        seed=derived_seed(c.seed, 10**6, 0))


__all__ = ["InspectorConfig", "InspectorPolicyNet", "InspectorValueNet", "bias_toward_accept",
           "fit_rule", "trained_config"]
