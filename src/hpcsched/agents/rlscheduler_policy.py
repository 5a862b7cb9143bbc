"""A trained RLScheduler network in use: the engine `Policy` that runs it, and its model file's
loader (`load_policy`), so that it schedules anywhere a heuristic does:

    engine.run(load_policy("runs/lublin-1-bsld.pt"))           # greedy (DESIGN decision 6)
    engine.run(load_policy("runs/lublin-1-bsld.pt", sample=True, seed=1))
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np
import torch

from hpcsched.agents.greedy import decision_scores, greedy, torch_float64
from hpcsched.agents.nets import KernelPolicy, kernel_logits, make_policy
from hpcsched.envs.cores_view import CoresView, cores_view
from hpcsched.envs.observation import HIGH, LOW


class RLPolicy:
    """A trained policy network as an engine `Policy`: it observes the view as the training
    environment did (`hpcsched.envs.pick_job.observe` with the trace's normalisation constants) and
    picks the most probable job by the greedy rule of `hpcsched.agents.greedy` (float64 scores
    rounded to float32, the earliest slot on a tie), or samples one with `sample=True`.

    On a cluster of named nodes it sees jobs as total cores (`envs.cores_view`): a job's
    processors are its nodes x cores per node, the machine the cluster's total cores (give it the
    constants of `envs.cores_view.observed_norm`), as a model trained on the cluster's jobs
    written by `trace convert --cores-of` saw them; its last feature, whether a job can start now,
    is whether the job fits the named nodes (the engine's `fits`), which the free cores alone
    cannot tell. The allocator of the run places the job it picks."""

    def __init__(self, net: torch.nn.Module, norm: dict[str, float], *, slots: int = 128,
                 cutoff: str = "fcfs", fairness: bool = False, sample: bool = False, seed: int = 0,
                 name: str = "rl", observe: Callable | None = None):
        self.name = name
        self.net = net.eval()
        self.norm = dict(norm)
        self.slots = slots
        self.cutoff = cutoff
        self.fairness = bool(fairness)
        self._users = None
        self.sample = sample
        self.rng = np.random.default_rng(seed)
        if observe is None:
            from hpcsched.envs.pick_job import observe
        self._observe = observe
        # decisions are scored in float64 (`hpcsched.agents.greedy`); a kernel policy in plain
        # numpy, far cheaper than a torch call for one decision
        self._weights = net.numpy_weights(np.float64) if isinstance(net, KernelPolicy) else None
        self._net64 = None if self._weights is not None else torch_float64(net)

    @classmethod
    def of(cls, net: torch.nn.Module, config, norm: dict[str, float], **options) -> "RLPolicy":
        """`net`, the policy of a PickJob configuration `config` (RLScheduler's or a subclass:
        its slots, cut-off and features), observing with the constants `norm`; `options` are
        the constructor's others (sample, seed, name, observe)."""
        return cls(net, norm, slots=config.slots, cutoff=config.cutoff,
                   fairness=config.features == 9, **options)

    def logits(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The masked logits of one observation, in float64."""
        if self._weights is not None:
            return kernel_logits(self._weights, obs, mask)
        with torch.no_grad():
            obs64 = torch.from_numpy(np.asarray(obs, dtype=np.float64))[None]
            return self._net64(obs64, torch.from_numpy(mask)[None])[0].numpy()

    def _user_scores(self, view):
        """The fairness feature's per-user state of the run `view` belongs to (one per job table:
        a new window is a new run)."""
        from hpcsched.envs.observation import UserScores

        if self._users is None or self._users[0] is not view.jobs:
            self._users = (view.jobs, UserScores(view.jobs, getattr(view, "executed", None)))
        return self._users[1]

    def select(self, view) -> int:
        view = cores_view(view)
        kwargs = {"fairness": self._user_scores(view)} if self.fairness else {}
        obs, mask, rows = self._observe(view, self.norm, slots=self.slots, cutoff=self.cutoff,
                                        **kwargs)
        if isinstance(view, CoresView) and mask.any():  # fits the named nodes, not just the cores
            obs[mask, -1] = np.where(view.fits(rows[mask]), HIGH, LOW)
        logits = self.logits(obs, mask)
        if self.sample:  # Gumbel-max: a draw from softmax(logits); masked slots never win
            noisy = decision_scores(logits) + self.rng.gumbel(size=logits.shape).astype(np.float32)
            return int(rows[int(np.argmax(noisy))])
        return int(rows[greedy(logits, mask)])


def load_policy(path: str | os.PathLike, *, sample: bool = False, seed: int = 0,
                name: str | None = None, observe: Callable | None = None,
                norm: dict[str, float] | None = None) -> RLPolicy:
    """The trained RLScheduler policy in the model file at `path`, as an engine `Policy` named
    ``rl:PATH``.

    `norm`: the normalisation constants to observe with; by default the training trace's (stored
    in the file). To schedule another trace, pass that trace's constants, as RLScheduler's own test
    script does (its environment normalises by the trace it loads)."""
    from hpcsched.modelfile import config_of, read_model, restore_state
    from hpcsched.agents.rlscheduler import RLSchedulerConfig

    ck = read_model(path, recipe="rlscheduler")
    cfg = config_of(path, lambda: RLSchedulerConfig.from_dict(ck["config"]))
    net = config_of(path, lambda: make_policy(cfg.policy, cfg.features, cfg.slots))
    restore_state(path, net, ck["weights"], "policy")
    return RLPolicy.of(net, cfg, ck["norm"] if norm is None else norm, sample=sample, seed=seed,
                       name=name or f"rl:{path}", observe=observe)


__all__ = ["RLPolicy", "load_policy"]
