"""HeraSched's learner (Wang's thesis Ch. 4, Algorithm 2; spec thesis_ch2_3_4.md §6.7, 6.11): the
one PPO (`agents/ppo.py`) for each of the two agents, fed by one rollout of both.

    model = HeraSched(HeraSchedConfig(trace="deeplearn-train.txt", cluster="spartan-deeplearn"))
    model.learn(10)                                # 10 updates, each after 2,048 selector steps
    model.save("runs/hs-dl/model.pt")
    model = HeraSched.load("runs/hs-dl/model.pt")
    policy = load_herasched("runs/hs-dl/model.pt")  # an engine Policy: herasched:runs/hs-dl

Each agent is a `PPO` (its actor, its critic, their Adam optimisers, its minibatch update). The
rollout (`agents.herasched_rollout`) steps the environments until the selector has acted
`update_every` (2,048) times; then each agent's advantages are computed on its own decisions and
both agents update, one after the other, on the same rollout: Algorithm 2's joint update. An
"epoch" of the run folder is one such update.

**Settings** (Table 4.2, and Table 6.3 "derived from Table 4.2" for what Ch. 4 does not give): lr
3e-4 for actors and critics alike, 2,048 selector steps per update, minibatches of 64, 10 passes
over the rollout, GAE lambda 0.95, clip 0.2. **gamma = 1** (spec item 30): Table 4.2 is the
chapter's own and says 1; Table 6.3's 0.99 belongs to a later chapter's networks; `gamma` is a
setting. (On Deeplearn, with the thesis's A_s = 512 the selector gets two rewards per update and
GAE credits the decisions by their distance to them; paying Eq. 4.1 and 4.2 at every action, A_s =
A_a = 1, with gamma 0.99 learned: README, "Does HeraSched learn?", and
`benchmarks/herasched_signal.py`.) SB3's defaults (the thesis trains with SB3) where neither
table speaks: no entropy bonus, gradients clipped to 0.5, no KL stop, advantages normalised per
update and agent.

**Seeds.** The selector's PPO has the run's seed, the allocator's seed + 1 (their networks and
minibatch orders are then drawn apart). Environment i's e-th episode resets with a seed of
(seed, i, e); an update's actions are drawn from a generator of (seed, update).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any, Callable

import numpy as np
import torch

from hpcsched.agents.batch import Batch
from hpcsched.agents.greedy import Float64Copy, greedy_batch
from hpcsched.agents.herasched_nets import NETS, WIDTH, agent_networks
from hpcsched.agents.herasched_rollout import AGENT_NAMES, HeraRollout, advantages
from hpcsched.agents.ppo import (PPO, PPOParams, PPOSettings, config_from_dict, derived_seed,
                                 torch_threads)
from hpcsched.agents.rollout import sample_categorical
from hpcsched.envs.herasched import (ALLOCATOR_EVERY, DEFAULT_CLUSTER, REWARD_SCALE,
                                     SELECTOR_EVERY)

RECIPE = "herasched"
LEARNER = "hierarchical-ppo"


@dataclass
class HeraSchedConfig(PPOSettings):
    """Every setting of a HeraSched training run: PPO's (`ppo.PPOSettings`) and these."""

    # -- the environment (`envs.herasched.HeraSchedEnv`'s arguments) -------------------------------
    trace: str | None = None  # a trace file; None: the cluster's generated high-load day
    cluster: str = DEFAULT_CLUSTER
    profile: str = "hpcsim"
    window: int | None = None  # W (None: Table 4.2's for the cluster)
    tail: int | None = None  # T
    episode_jobs: int | None = None  # None: an episode is the whole trace (the thesis's)
    selector_every: int = SELECTOR_EVERY  # A_s
    allocator_every: int = ALLOCATOR_EVERY  # A_a
    reward_scale: float = REWARD_SCALE
    selector_reward: str = "average"  # Eq. 4.1, or "accrued", "squared" (ours: `envs.herasched`)
    drop_oversized: bool = False
    #: EASY's reservation for the oldest job once it has waited this many seconds (ours: the
    #: masks of ``herasched:MODEL@reserve=AGE``); None: the thesis's masks
    reserve_after: float | None = None
    #: a heuristic allocator (topology, best-fit, first-available) places the selector's jobs, in
    #: place of the allocator agent, which then is not trained (ours: ``@allocator=NAME``'s);
    #: None: the allocator agent (the thesis's)
    place_with: str | None = None
    #: episodes stepped side by side (each network called once per step for all of them)
    num_envs: int = 4
    # -- the networks ---------------------------------------------------------------------------
    net: str = "default"  # or "thesis" (`agents.herasched_nets`)
    hidden: tuple[int, ...] | None = None  # the thesis family's layers (None: Table 4.2's)
    width: int = WIDTH  # ours
    # -- PPO (Tables 4.2 and 6.3; see the module docstring) ---------------------------------------
    update_every: int = 2048  # selector steps per update
    gamma: float = 1.0
    lam: float = 0.95
    clip_ratio: float = 0.2
    pi_lr: float = 3e-4
    vf_lr: float = 3e-4
    minibatch: int = 64
    update_epochs: int = 10
    ent_coef: float = 0.0
    max_grad_norm: float | None = 0.5
    target_kl: float = 0.0
    threads: int | None = 1

    def __post_init__(self) -> None:
        if self.net not in NETS:
            raise ValueError(f"unknown HeraSched network {self.net!r}; choose one of: "
                             f"{', '.join(NETS)}")
        if self.hidden is not None:
            self.hidden = tuple(int(h) for h in self.hidden)
        for name in ("num_envs", "update_every", "minibatch", "update_epochs"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "HeraSchedConfig":
        return config_from_dict(cls, d)

    def env_kwargs(self) -> dict[str, Any]:
        return dict(window=self.window, tail=self.tail, episode_jobs=self.episode_jobs,
                    selector_every=self.selector_every, allocator_every=self.allocator_every,
                    reward_scale=self.reward_scale, selector_reward=self.selector_reward,
                    reserve_after=self.reserve_after, place_with=self.place_with)

    def prepared(self):
        """The training trace, prepared (once per config object)."""
        return _prepared(self.trace, self.cluster, self.profile, self.drop_oversized)

    def layout(self):
        """The observation's layout: from the cluster alone when it is named (a model file then
        loads without its trace), else from the prepared trace's (an SWF trace under hpcsim)."""
        from hpcsched.envs.hera_observation import HeraLayout
        from hpcsched.envs.herasched import window_of

        if self.cluster is not None:
            from hpcsched.cluster.load import load_cluster

            cluster = load_cluster(self.cluster)
        else:
            cluster = self.prepared().cluster
        return HeraLayout.of(cluster, *window_of(self.cluster, self.window, self.tail))

    def make_env(self):
        from hpcsched.envs.herasched import HeraSchedEnv

        return HeraSchedEnv(self.prepared(), self.cluster, **self.env_kwargs())


_PREPARED: dict[tuple, Any] = {}


def _prepared(trace, cluster, profile, drop):
    key = (trace, cluster, profile, drop)
    if key not in _PREPARED:
        from hpcsched.envs.herasched import as_herasched_trace

        _PREPARED.clear()  # one trace at a time
        _PREPARED[key] = as_herasched_trace(trace, cluster, profile, drop_oversized=drop)
    return _PREPARED[key]


class AgentSettings:
    """One agent's configuration of the one PPO (`ppo.Configuration`): its networks and its PPO
    settings, from the run's config."""

    def __init__(self, config: HeraSchedConfig, agent: str, layout) -> None:
        self.config, self.agent, self._layout = config, agent, layout

    def ppo_params(self) -> PPOParams:
        c = self.config
        params = PPOParams.of(c, parallel_update=False, chunk=None, minibatch=c.minibatch,
                              update_epochs=c.update_epochs, ent_coef=c.ent_coef,
                              max_grad_norm=c.max_grad_norm, step_rewards=True)
        return replace(params, seed=c.seed + AGENT_NAMES.index(self.agent))

    def networks(self):
        c = self.config
        return agent_networks(c.net, self._layout, self.agent, c.hidden, c.width)

    def make_env(self, model):
        raise RuntimeError("HeraSched's agents learn from the hierarchy's rollout")

    def extra_state(self) -> dict[str, Any]:
        return {}


def selector_choice(d, forward: int) -> dict[str, float]:
    """How much choice the selector had and used in a rollout (its decisions `d`): the mean number
    of valid actions, the share of decisions with two or more jobs that fit, the share of
    Forwards, and of Forwards taken while a job fit (Forward is then a choice to hold)."""
    if d.size == 0:
        return {}
    jobs = d.mask[:, :forward].sum(1)
    fwd = d.actions == forward
    return {"selector_valid": float(d.mask.sum(1).mean()),
            "selector_choice_share": float((jobs >= 2).mean()),
            "forward_share": float(fwd.mean()),
            "forward_with_fit_share": float((fwd & (jobs >= 1)).mean())}


class HeraSched:
    """HeraSched's two agents and their joint training. SB3's verbs: `learn`, `predict`, `save`,
    `load`. The four networks are attributes (`selector_policy`, `selector_value`,
    `allocator_policy`, `allocator_value`)."""

    def __init__(self, config: HeraSchedConfig | None = None, layout=None) -> None:
        self.config = config or HeraSchedConfig()
        self.layout = layout if layout is not None else self.config.layout()
        self.selector = PPO(AgentSettings(self.config, "selector", self.layout))
        self.allocator = PPO(AgentSettings(self.config, "allocator", self.layout))
        self.selector_policy, self.selector_value = self.selector.policy, self.selector.value
        self.allocator_policy, self.allocator_value = self.allocator.policy, self.allocator.value
        self.epoch = 0  # updates done
        self.history: list[dict[str, Any]] = []
        self.run_options: dict[str, Any] = {}
        self._rollout: HeraRollout | None = None
        self._rollout_state: dict[str, Any] | None = None
        self._f64 = (Float64Copy(), Float64Copy())

    @property
    def agents(self) -> tuple[PPO, PPO]:
        return self.selector, self.allocator

    @cached_property
    def norm(self) -> dict[str, Any]:
        lay = self.layout
        return {"window": lay.window, "tail": lay.tail, "nodes": lay.nodes,
                "n_selector": lay.n_selector}

    def rollout(self) -> HeraRollout:
        if self._rollout is None:
            self._rollout = HeraRollout(self.config.make_env, self.config.num_envs,
                                        self.config.seed)
            seen = self._rollout.envs[0].layout.n_selector
            if seen != self.layout.n_selector:
                raise ValueError(f"the training environment observes {seen:,} numbers, the "
                                 f"networks read {self.layout.n_selector:,}: the cluster "
                                 f"{self.config.cluster!r} and the trace's differ")
            if self._rollout_state is not None:
                self._rollout.restore(self._rollout_state)
                self._rollout_state = None
        return self._rollout

    # -- acting ------------------------------------------------------------------------------------
    def predict(self, obs: np.ndarray, mask: np.ndarray, deterministic: bool = True) -> np.ndarray:
        """The action for each environment observation (one, or a batch): the selector's where
        the observation's last number is 0, else the allocator's; greedy (`agents.greedy`'s
        rule) unless `deterministic=False`. `mask` is the env's (its first W + 1 or N entries are
        the acting agent's)."""
        obs = np.asarray(obs, dtype=np.float32)
        mask = np.asarray(mask, dtype=bool)
        single = obs.ndim == 1
        if single:
            obs, mask = obs[None], mask[None]
        out = np.zeros(len(obs), dtype=np.int64)
        allocating = obs[:, -1] > 0
        for agent, rows in ((0, ~allocating), (1, allocating)):
            if not rows.any():
                continue
            width = self.layout.window + 1 if agent == 0 else self.layout.nodes
            o, m = obs[rows], mask[rows][:, :width]
            net = self.agents[agent].policy
            if deterministic:
                with torch.no_grad():
                    scores = self._f64[agent](net)(torch.from_numpy(o.astype(np.float64)),
                                                   torch.from_numpy(m)).numpy()
                out[rows] = greedy_batch(scores, m)
            else:
                with torch.no_grad():
                    logits = net(torch.from_numpy(o), torch.from_numpy(m))
                out[rows] = torch.multinomial(torch.softmax(logits, -1), 1).squeeze(1).numpy()
        return out[0] if single else out

    def _act_fn(self, generator: torch.Generator):
        def act(agent: int, obs: np.ndarray, mask: np.ndarray):
            with torch.no_grad():
                logits = self.agents[agent].policy(torch.from_numpy(obs), torch.from_numpy(mask))
                logp_all = torch.log_softmax(logits, -1)
                a = sample_categorical(torch.softmax(logits, -1), generator)
                return a.numpy(), logp_all.gather(1, a[:, None]).squeeze(1).numpy()
        return act

    # -- learning ----------------------------------------------------------------------------------
    def learn(self, epochs: int, callback: Callable[[dict[str, Any]], bool | None] | None = None
              ) -> "HeraSched":
        """`epochs` more updates, each after `update_every` selector steps; `callback(stats)`
        after each, returning False stops."""
        with torch_threads(self.config.threads):
            for _ in range(epochs):
                stats = self._one_update()
                self.history.append(stats)
                if callback is not None and callback(stats) is False:
                    break
        return self

    def _one_update(self) -> dict[str, Any]:
        c = self.config
        t0 = time.perf_counter()
        generator = torch.Generator().manual_seed(derived_seed(c.seed, self.epoch, 1))
        data, seen = self.rollout().collect(self._act_fn(generator), c.update_every)
        t1 = time.perf_counter()
        stats: dict[str, Any] = {}
        for agent, (ppo, d) in enumerate(zip(self.agents, data)):
            name = AGENT_NAMES[agent]
            if d.size == 0:
                continue
            batch = self._batch(ppo, d, c)
            for k, v in ppo.update(batch).items():
                stats[f"{name}_{k}"] = v
        t2 = time.perf_counter()
        self.epoch += 1
        ended = seen.pop("ended")
        out: dict[str, Any] = {"epoch": self.epoch, **seen}
        if ended:  # the episodes that ended in this rollout
            for key in ("wait", "max_wait", "bsld", "utilization"):
                vals = [m[key] for m in ended if key in m]
                if vals:
                    out[key] = float(np.mean(vals))
        out["decisions"] = seen["selector_steps"] + seen["allocator_steps"]
        out.update(selector_choice(data[0], self.layout.window))
        # the log's usual columns: the selector's losses
        for k in ("loss_pi", "loss_v", "kl", "entropy", "clip_fraction", "pi_iters"):
            if f"selector_{k}" in stats:
                out[k] = stats[f"selector_{k}"]
        return {**out, **stats, "rollout_s": t1 - t0, "update_s": t2 - t1, "epoch_s": t2 - t0}

    def _batch(self, ppo: PPO, d, c: HeraSchedConfig) -> Batch:
        """The agent's decisions as PPO's update reads them, with GAE advantages (normalised) and
        returns, each stream bootstrapped from its held-back decision's value."""
        with torch.no_grad():
            values = ppo.value(torch.from_numpy(d.obs)).numpy().astype(np.float64)
            held = [s[2] for s in d.streams if s[2] is not None]
            boot = iter(ppo.value(torch.from_numpy(np.stack(held))).numpy().astype(np.float64)
                        if held else [])
        adv = np.zeros(d.size)
        ret = np.zeros(d.size)
        for lo, hi, after in d.streams:
            b = float(next(boot)) if after is not None else 0.0
            if hi > lo:
                adv[lo:hi], ret[lo:hi] = advantages(d.rewards[lo:hi], values[lo:hi],
                                                    d.dones[lo:hi], b, c.gamma, c.lam)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        batch = Batch(d.obs, d.mask, d.actions, d.logp)
        batch.adv = torch.from_numpy(adv.astype(np.float32))
        batch.ret = torch.from_numpy(ret.astype(np.float32))
        return batch

    # -- files -------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The model file's contents (`hpcsched.modelfile`)."""
        from hpcsched.modelfile import rng_states

        weights, optimizers = {}, {}
        for name, ppo in zip(AGENT_NAMES, self.agents):
            weights[f"{name}_policy"] = ppo.policy.state_dict()
            weights[f"{name}_value"] = ppo.value.state_dict()
            optimizers[f"{name}_policy"] = ppo.pi_optimizer.state_dict()
            optimizers[f"{name}_value"] = ppo.v_optimizer.state_dict()
        rollout = self._rollout.state() if self._rollout is not None else \
            (self._rollout_state or {})
        return {
            "recipe": RECIPE, "learner": LEARNER, "config": asdict(self.config),
            "learner_config": {}, "learner_state": {"agent_epochs": [a.epoch for a in self.agents]},
            "weights": weights, "norm": dict(self.norm), "epoch": self.epoch,
            "history": self.history,
            "training": {"optimizers": optimizers, "rng": rng_states(),
                         "learner": {"rollout": rollout},
                         "run": {"run_options": dict(self.run_options)}},
        }

    def save(self, path) -> None:
        """Write the model file (atomically): see hpcsched.modelfile."""
        from hpcsched.modelfile import write_model

        write_model(path, self.state())

    @classmethod
    def load(cls, path, restore_rng: bool = True) -> "HeraSched":
        """The learner in model file `path`, ready to `predict`, or to `learn` on from where it
        stopped (its environments replayed to where they were; a slim export is refused)."""
        from hpcsched.modelfile import (config_of, read_model, restore_rng_states, restore_state,
                                        training_of)

        ck = read_model(path, recipe=RECIPE)
        training = training_of(path, ck)
        config = config_of(path, lambda: HeraSchedConfig.from_dict(ck["config"]))
        model = config_of(path, lambda: cls(config))
        for name, ppo in zip(AGENT_NAMES, model.agents):
            restore_state(path, ppo.policy, ck["weights"], f"{name}_policy")
            restore_state(path, ppo.value, ck["weights"], f"{name}_value")
            restore_state(path, ppo.pi_optimizer, training["optimizers"], f"{name}_policy")
            restore_state(path, ppo.v_optimizer, training["optimizers"], f"{name}_value")
        for ppo, e in zip(model.agents, ck["learner_state"].get("agent_epochs", [])):
            ppo.epoch = int(e)
        model.epoch = int(ck["epoch"])
        model.history = list(ck["history"])
        model.run_options = dict((training.get("run") or {}).get("run_options") or {})
        model._rollout_state = (training.get("learner") or {}).get("rollout") or None
        if restore_rng:
            restore_rng_states(training.get("rng"))
        return model


__all__ = ["AgentSettings", "HeraSched", "HeraSchedConfig", "LEARNER", "RECIPE"]
