"""SchedInspector's agent (spec schedinspector.md sections 5-7): its configuration of PPO on
`hpcsched/Inspect-v0`, and a trained inspector as an engine `Policy`.

The networks are the paper's (`nets.InspectorPolicyNet`, `nets.InspectorValueNet`): a policy MLP
F -> 32 -> 16 -> 8 -> 2 (938 parameters with the code's 7 features) and a value MLP
F -> 32 -> 16 -> 8 -> 1 (929). The algorithm is the one PPO (`agents/ppo.py`), with the paper's
rates and its own arithmetic: the batch taken whole, statistics as float32 means,
`torch.multinomial`'s random stream, the policy's iterations before the value's.

    model = PPO(InspectorConfig(trace="lublin-1", base="sjf"))
    model.learn(epochs=40)
    model.save("runs/insp/model.pt")
    policy = load_inspector("runs/insp/model.pt")      # a Policy: sjf with the inspector
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from hpcsched.agents.greedy import greedy, linear_weights, mlp_forward
from hpcsched.agents.nets import InspectorPolicyNet, InspectorValueNet
from hpcsched.agents.ppo import PPO, PPOParams, PPOSettings, config_from_dict, derived_seed
from hpcsched.envs.inspector import FEATURE_SETS, REJECT, Inspection, VecInspect, needed_estimate

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

    c = model.config
    rules = {"reject-unfit": reject_unfit}
    if c.init_rule not in rules:
        raise ValueError(f"init_rule: unknown rule {c.init_rule!r}; known: {', '.join(rules)}")
    return imitate_rule(model, rules[c.init_rule], c.init_episodes,
                        seed=derived_seed(c.seed, 10**6, 0))


def load_inspector_checkpoint(path) -> dict[str, Any]:
    """The model file's contents, its config as it reads today (`trained_config`)."""
    from hpcsched.agents.checkpoint import OtherKindError, read_model

    ck = read_model(path)
    if ck["recipe"] != "schedinspector":
        hint = f"; use it as rl:{path}" if ck["recipe"] == "rlscheduler" else ""
        raise OtherKindError(f"{path} is not a SchedInspector model (it holds a {ck['recipe']} "
                             f"model){hint}")
    ck["config"] = trained_config(ck["config"])
    return ck


# -- a trained inspector as a Policy --------------------------------------------------------------
class InspectedPolicy:
    """A base heuristic with a trained inspector in the loop, as an engine `Policy`: the base's top
    job is proposed, and the inspector accepts it (Pick) or rejects it (Wait, up to 600 s) exactly
    as in `InspectEnv`. Greedy by default (DESIGN decision 6); `sample=True` samples, as the
    authors' test script does.

    `decide(obs, mask) -> action` may replace the network (an always-accept inspector, say)."""

    def __init__(self, net: nn.Module | None, base, norm: dict[str, float], *,
                 features: str = "code", metric: str = "bsld", max_interval: float = 600.0,
                 max_rejections: int = 72, sample: bool = False, seed: int = 0,
                 name: str = "inspect", decide: Callable[[np.ndarray, np.ndarray], int] | None = None):
        self.name = name
        self.base = base
        self.norm = dict(norm)
        self.features = features
        self.metric = metric
        self.max_interval = max_interval
        self.max_rejections = max_rejections
        self.sample = sample
        self.rng = np.random.default_rng(seed)
        self._decide = decide
        # the engine keeps its queue in the base heuristic's order, as it does for the base alone
        for attr in ("static_keys", "keys"):
            if hasattr(base, attr):
                setattr(self, attr, getattr(base, attr))
        self._ranks = hasattr(base, "static_keys") or hasattr(base, "keys")
        self.inspection: Inspection | None = None
        self._weights = None
        if net is not None:  # plain numpy: far cheaper than a torch call for one decision
            self._weights = linear_weights(net)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """The network's two logits (accept, reject) of one observation, in float64."""
        return mlp_forward(self._weights, np.asarray(obs, dtype=np.float64))

    def act(self, obs: np.ndarray, mask: np.ndarray) -> int:
        """The inspector's action (0 accept, 1 reject) on an observation: by the greedy rule of
        `hpcsched.agents.greedy` (float64 logits rounded to float32; on a tie, accept), or with
        `sample` a draw from the softmax of the float64 logits."""
        if self._decide is not None:
            return int(self._decide(obs, mask))
        logits = self.logits(obs)
        if not self.sample:
            return greedy(logits, mask)
        # Gumbel-max: a draw from softmax(logits)
        return int(np.argmax(np.where(mask, logits, -np.inf) + self.rng.gumbel(size=2)))

    # -- the Policy protocol: the engine ranks the queue by the base's priority, the inspector
    # accepts the top job (Pick) or lets time pass (Wait) --------------------------------------------
    def reset(self, view) -> None:
        Inspection.check(view)
        self.inspection = Inspection(self.norm, len(view.jobs), features=self.features,
                                     metric=self.metric, max_interval=self.max_interval,
                                     max_rejections=self.max_rejections)

    def decide(self, view):
        insp = self.inspection
        row = int(view.queue[0]) if self._ranks else int(self.base.select(view))
        insp.propose(view, row)
        action = self.act(insp.observe(), insp.mask()) if insp.can_reject() else 0
        return insp.decision(action)

    def summary(self) -> dict[str, float]:
        return self.inspection.summary()


def reject_unfit(obs: np.ndarray, mask: np.ndarray) -> int:
    """A fixed rule in the inspector's place: reject the proposed job exactly when it does not fit
    now (feature 4, "runnable"). Under commit semantics this undoes the commitment to a job that
    would block the queue until it fits, so the next event can bring a pick that fits."""
    return REJECT if obs[4] < 0.5 and mask[REJECT] else 0


def load_inspector(path, *, base: str | None = None, norm: dict[str, float] | None = None,
                   sample: bool = False, seed: int = 0, name: str | None = None,
                   profile=None) -> InspectedPolicy:
    """The inspector in checkpoint `path` around its base heuristic (or `base`), as a Policy.
    `norm`: the normalisation constants of the trace it schedules (default: the training trace's);
    `profile`: the profile it runs under, which says what the base's name means (default: the
    one it was trained under)."""
    from hpcsched.agents.checkpoint import config_of, restore_state
    from hpcsched.policies.priority import get_policy

    ck = load_inspector_checkpoint(path)
    cfg = config_of(path, lambda: InspectorConfig.from_dict(ck["config"]))
    net = config_of(path, lambda: InspectorPolicyNet(cfg.n_features))
    restore_state(path, net, ck["weights"], "policy")
    base_policy = get_policy(base or cfg.base, profile=profile or cfg.profile)
    return InspectedPolicy(net, base_policy, norm if norm is not None else ck["norm"],
                           features=cfg.features, metric=cfg.metric,
                           max_interval=cfg.max_interval, max_rejections=cfg.max_rejections,
                           sample=sample, seed=seed, name=name or f"inspect:{path}")


__all__ = ["InspectedPolicy", "InspectorConfig", "InspectorPolicyNet",
           "InspectorValueNet", "bias_toward_accept", "fit_rule", "load_inspector",
           "load_inspector_checkpoint", "reject_unfit", "trained_config"]
