"""RLScheduler's configuration of PPO (spec rlscheduler.md sections 5-8): the kernel networks on
`VecPickJob`, the reference code's hyperparameters, and the training aids around them.

The aids are not PPO's: trajectory filtering is a reset-time choice of windows
(`envs.wrappers.FilterStages`, stage 1 for the first `filter_epochs` epochs), the relative reward a
wrapper that rewrites each episode's terminal reward (`envs.wrappers.RelativeReward`), and the warm
start runs before the first epoch (`warm_start`: imitating a heuristic, `agents.imitation`, or
taking a trained model's networks).

    model = PPO(RLSchedulerConfig(trace="lublin-1", filter="paper", filter_epochs=10))
    warm_start(model)          # with init="sjf" or init="model:PATH"
    model.learn(100)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from hpcsched.agents.ppo import PPO, PPOParams, PPOSettings, config_from_dict, derived_seed


@dataclass
class RLSchedulerConfig(PPOSettings):
    """Every setting of a training run: PPO's (`ppo.PPOSettings`) and these. Defaults:
    RLScheduler's code and paper (spec section 8)."""

    # -- the environment (hpcsched.envs.pick_job.PickJobEnv's arguments) ---------------------------
    trace: str = "lublin-1"
    profile: str = "rlscheduler"
    backfill: str = "none"
    metric: str = "bsld"  # bsld, wait, turnaround, slowdown, utilization, fairness (envs.pick_job)
    episode_jobs: int = 256  # jobs per training trajectory
    slots: int = 128  # job slots observed; more waiting jobs are cut off by `cutoff`
    cutoff: str = "fcfs"
    first: int | None = 10000  # training windows come from the first `first` jobs (None: all)
    fairness: bool | None = None  # the 9th, per-user feature; None: with metric "fairness"
    n_envs: int = 100  # environments stepped together; = trajectories_per_epoch: one episode each
    # -- networks (nets.POLICIES, nets.VALUES) ------------------------------------------------------
    policy: str = "kernel"
    value: str = "kernel"  # the code's kernel-then-MLP critic (11,570); "flat": the paper's MLP
    # -- trajectory filtering (spec section 7; see envs/filtering.py) -------------------------------
    filter: str = "none"  # "none", "paper": band (median, 2 x mean) of SJF, "fixed": (10, 150)
    filter_windows: int = 1000  # SJF windows sampled for the band's statistics
    filter_epochs: int | None = None  # stage 1 length; afterwards all windows. None: always filter
    # -- reward (not in the paper; see envs.wrappers.relative_reward) -------------------------------
    reward_baseline: str = "none"  # "none": -metric, as the paper; a heuristic name: relative reward
    init: str = "none"  # "none": random weights, as the paper; a heuristic: imitate it first;
    #                     "model:PATH": start from that checkpoint's networks (fine-tuning)
    init_episodes: int = 100  # episodes of the heuristic to imitate
    init_steps: int = 300  # supervised steps on them
    # -- the run -------------------------------------------------------------------------------------
    parallel_update: bool = True  # policy and value iterations in two threads (same arithmetic)

    #: decisions per gradient chunk of the networks over the flattened observation
    CHUNK: ClassVar[int] = 2048

    @property
    def features(self) -> int:
        """Per-job features of the observation: 9 with the fairness feature, else 8."""
        fair = self.metric == "fairness" if self.fairness is None else self.fairness
        return 9 if fair else 8

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RLSchedulerConfig":
        return config_from_dict(cls, d)

    # -- PPO's configuration (ppo.Configuration) ----------------------------------------------------
    def ppo_params(self) -> PPOParams:
        return PPOParams.of(self, parallel_update=self.parallel_update, chunk=self.CHUNK)

    def networks(self):
        from hpcsched.agents.nets import make_policy, make_value

        return (make_policy(self.policy, self.features, self.slots),
                make_value(self.value, self.features, self.slots))

    def make_env(self, model: PPO):
        """`VecPickJob` (returning its own buffers: `rollout.collect` copies what it keeps), in
        `RelativeReward` with a `reward_baseline`, in `FilterStages` with a `filter`."""
        from hpcsched.envs.vec import VecPickJob
        from hpcsched.envs.wrappers import FilterStages, RelativeReward

        env = VecPickJob(self.n_envs, trace=self.trace, profile=self.profile,
                         backfill=self.backfill, metric=self.metric,
                         episode_jobs=self.episode_jobs, slots=self.slots, cutoff=self.cutoff,
                         first=self.first, fairness=self.fairness, copy=False)
        if self.reward_baseline != "none":
            env = RelativeReward(env, self.reward_baseline)
        if self.filter != "none":
            prepared = env.prepared
            env = FilterStages(env, lambda: window_filter(model, prepared), active=lambda: (
                model.config.filter_epochs is None or model.epoch < model.config.filter_epochs))
        return env

    def extra_state(self) -> dict[str, Any]:
        # "filter": the band and its statistics once computed; "warm": what `warm_start` did
        return {"filter": None, "warm": None}


def window_filter(model: PPO, prepared):
    """Stage 1's filter of `model`'s run: from its band when it has one (a resumed run), else
    made (SJF on `filter_windows` windows) and its band kept in ``model.extra["filter"]``."""
    from hpcsched.envs import filtering

    c = model.config
    if model.extra.get("filter") is None:
        f = filtering.make_window_filter(
            prepared, rule=c.filter, windows=c.filter_windows, episode_jobs=c.episode_jobs,
            backfill=c.backfill, metric=c.metric, first=c.first, seed=c.seed)
        model.extra["filter"] = f.info()
        return f
    return filtering.WindowFilter(prepared, tuple(model.extra["filter"]["band"]),
                                  episode_jobs=c.episode_jobs, backfill=c.backfill,
                                  metric=c.metric)


def warm_start(model: PPO) -> dict[str, Any]:
    """Before the first epoch: imitate `config.init`'s choices (agents/imitation.py), or, with
    ``init="model:PATH"``, take that model file's policy and value networks. What was done is
    kept in ``model.extra["warm"]`` and returned."""
    c = model.config
    if c.init.startswith("model:"):
        from hpcsched.modelfile import (ModelFileError, config_of, read_model,
                                                restore_state)

        path = c.init[len("model:"):]
        ck = read_model(path, recipe="rlscheduler")
        if "value" not in ck["weights"]:
            raise ModelFileError(f"--init {c.init}: a slim export (no value network to start "
                                 f"from); use a run's model.pt or best.pt")
        theirs = config_of(path, lambda: RLSchedulerConfig.from_dict(ck["config"]))
        if (theirs.policy, theirs.value, theirs.features, theirs.slots) != (
                c.policy, c.value, c.features, c.slots):
            raise ValueError(f"--init {c.init}: its networks ({theirs.policy}/{theirs.value}, "
                             f"{theirs.slots}x{theirs.features}) differ from this run's")
        restore_state(path, model.policy, ck["weights"], "policy")
        restore_state(path, model.value, ck["weights"], "value")
        model.extra["warm"] = {"from_epoch": int(ck["epoch"])}
    else:
        from hpcsched.agents.imitation import imitate_heuristic

        model.extra["warm"] = imitate_heuristic(model, c.init, c.init_episodes, c.init_steps,
                                                seed=derived_seed(c.seed, 0, 2))
    return model.extra["warm"]


__all__ = ["RLSchedulerConfig", "warm_start", "window_filter"]
