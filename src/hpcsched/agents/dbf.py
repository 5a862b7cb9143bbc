"""Deep Backfilling's agent (Wang's thesis Ch. 3, spec thesis_ch2_3_4.md section 4.5): the one PPO
(`agents/ppo.py`) configured with the thesis's settings on `VecDBF`, its networks, and a trained
model as an engine `Policy` with DBF's schedule cycling.

    model = PPO(DBFConfig(trace="lublin-1", window=32, tail=4))
    model.learn(epochs=10)                     # 10 updates, each after 16 parallel episodes
    model.save("runs/dbf32/model.pt")
    policy = load_dbf("runs/dbf32/model.pt")   # a Policy: dbf:runs/dbf32/model.pt

**What the thesis gives** (section 4.5): PPO in PyTorch, lr 3e-4, clip 0.2, gamma 0.99, actor and
critic MLPs with hidden layers [1024, 512, 256], one update after each episode (1,000 placed jobs
from a random start of the trace), SGD over the episode's data in minibatches of 128.

**How batching maps onto "an update after each episode".** `num_envs` episodes run side by side
on `VecDBF` (one network call per step for all of them) and the update follows when all have
ended: `update_epochs` passes over their decisions in minibatches of 128. Per episode of data the
update takes as many minibatch steps as the thesis's per-episode update; what changes is that the
policy collecting an episode may be up to `num_envs` - 1 updates behind (the PPO ratio corrects
for it, which is what the clip is for). An "epoch" of the run folder is one such update, so
``--episodes E`` is E / num_envs epochs.

**What the thesis leaves open**, chosen here (spec item 19), each in the config below with its
reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from hpcsched.agents.greedy import decision_scores, greedy, linear_weights
from hpcsched.agents.nets import MaskedPolicy, ValueNet, apply_mask
from hpcsched.agents.ppo import PPO, PPOParams, PPOSettings, config_from_dict
from hpcsched.sim.decisions import Pick, Reserve, Wait

HIDDEN = (1024, 512, 256)


@dataclass
class DBFConfig(PPOSettings):
    """Every setting of a DBF training run: PPO's (`ppo.PPOSettings`) and these."""

    # -- the environment (hpcsched.envs.dbf.DBFEnv's arguments) ------------------------------------
    trace: str = "lublin-1"
    window: int = 32  # M; the thesis's comparison (Fig. 3.4) uses 32 without a tail
    tail: int = 0  # M_t
    episode_jobs: int = 1000  # the thesis: an episode ends when 1,000 jobs are placed
    lookahead: int | None = None  # jobs beyond episode_jobs the engine holds (None: as many)
    mask: bool = False  # the thesis masks nothing: an invalid pick is Fwd
    #: (a1, a2, a3) of Eq. 3.1, the weights of idle machine, queue length and total wait in the
    #: reward; the thesis: 1/3 each (envs.dbf.ALPHAS)
    reward_weights: tuple[float, ...] = (1 / 3, 1 / 3, 1 / 3)
    num_envs: int = 16  # episodes side by side; an update after each round of them
    # -- the thesis's PPO settings ----------------------------------------------------------------
    trajectories_per_epoch: int = 16  # = num_envs: one episode per env, then the update
    gamma: float = 0.99
    clip_ratio: float = 0.2
    pi_lr: float = 3e-4
    vf_lr: float = 3e-4  # the thesis names one rate
    minibatch: int = 128
    hidden: tuple[int, ...] = HIDDEN  # actor and critic alike, separate networks
    # -- what the thesis leaves open ----------------------------------------------------------------
    #: 2 passes over an episode's data: "SGD over the episode's data" read as few passes, not
    #: SB3's 10: a minibatch step of both networks costs ~30 CPU-ms, so each pass over an episode
    #: (~3,000 decisions, 25 minibatches) costs about 5x its rollout
    update_epochs: int = 2
    #: GAE lambda 0.95: SB3's default, which the thesis uses in Ch. 4-6 (spec item 30)
    lam: float = 0.95
    #: entropy bonus 0.01 (CleanRL's default for discrete actions): without a mask most of the 33
    #: actions are Fwd in effect, and the bonus keeps the policy from settling on Fwd early
    ent_coef: float = 0.01
    #: no value coefficient: actor and critic are separate networks with their own Adam optimiser
    #: (the thesis's "actor and critic MLPs"), so a coefficient would only rescale the critic's rate
    #: gradient norm clipped at 0.5, SB3's and CleanRL's default (large MLPs, raw rewards in [-1, 0])
    max_grad_norm: float = 0.5
    #: Tanh between layers: SB3's PPO default (the thesis's later chapters use SB3)
    activation: str = "tanh"
    #: no KL early stop (SB3's default): the clip alone limits the update
    target_kl: float = 0.0
    #: advantages normalised over each update's decisions, as the framework's PPO always does
    rollout_threads: int | None = 1  # torch threads of the rollouts (see `ppo.PPOParams`)
    #: one torch thread: on a shared 2-core machine two threads took 116 CPU-ms per minibatch
    #: step against 29 for one (each waits for the other whenever a third process runs)
    threads: int | None = 1

    def __post_init__(self) -> None:
        self.hidden = tuple(int(h) for h in self.hidden)
        self.reward_weights = check_weights(self.reward_weights)
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r}: choose one of "
                             f"{', '.join(ACTIVATIONS)}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "DBFConfig":
        return config_from_dict(cls, d)

    # -- PPO's configuration (ppo.Configuration) ----------------------------------------------------
    def ppo_params(self) -> PPOParams:
        return PPOParams.of(self, parallel_update=False, rollout_threads=self.rollout_threads,
                            chunk=4096, minibatch=self.minibatch,
                            update_epochs=self.update_epochs, ent_coef=self.ent_coef,
                            max_grad_norm=self.max_grad_norm, step_rewards=True)

    def sizes(self) -> tuple[int, int]:
        """(inputs, actions) of the networks on this config's trace."""
        from hpcsched.envs.dbf import DbfScale, as_dbf_trace

        scale = DbfScale.of(as_dbf_trace(self.trace))
        return scale.cores + 3 * self.window, self.window + 1

    def networks(self):
        n_in, n_actions = self.sizes()
        return (DbfActor(n_in, n_actions, self.hidden, self.activation),
                DbfCritic(n_in, self.hidden, self.activation))

    def make_env(self, model: PPO):
        """`VecDBF` on the training block of the trace (`workload.windows.dbf_starts`),
        returning its own buffers (`rollout.collect` copies what it keeps)."""
        from dataclasses import asdict

        from hpcsched.envs.dbf import as_dbf_trace
        from hpcsched.envs.dbf_vec import VecDBF
        from hpcsched.workload.windows import dbf_starts

        prepared = as_dbf_trace(self.trace)
        starts = dbf_starts(prepared, "train", episode_jobs=self.episode_jobs)
        env = VecDBF(self.num_envs, prepared, window=self.window, tail=self.tail,
                     episode_jobs=self.episode_jobs, lookahead=self.lookahead, mask=self.mask,
                     alphas=self.reward_weights, copy=False, start_range=tuple(starts))
        env.norm = asdict(env.scale)  # kept in the model file
        return env

    def extra_state(self) -> dict[str, Any]:
        return {}


def check_weights(weights: Sequence[float]) -> tuple[float, float, float]:
    """Eq. 3.1's (a1, a2, a3) as floats: three finite weights, none negative, not all 0; else
    `ValueError` saying which."""
    try:
        w = tuple(float(x) for x in weights)
    except (TypeError, ValueError):
        raise ValueError(f"reward weights: three numbers (a1, a2, a3), got {weights!r}") from None
    if len(w) != 3:
        raise ValueError(f"reward weights: three numbers (a1, a2, a3) for idle machine, queue "
                         f"length and total wait, got {len(w)}: {weights!r}")
    if not all(math.isfinite(x) and x >= 0 for x in w) or not any(w):
        raise ValueError(f"reward weights: finite, none negative and not all 0, got {w!r}")
    return w


# -- the networks ----------------------------------------------------------------------------------
ACTIVATIONS = {"tanh": (nn.Tanh, np.tanh), "relu": (nn.ReLU, lambda x: np.maximum(x, 0.0))}


def activation_mlp(sizes: Sequence[int], activation: str = "tanh") -> nn.Sequential:
    """Linear layers of `sizes` with `activation` between them (none after the last)."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(ACTIVATIONS[activation][0]())
    return nn.Sequential(*layers)


def numpy_forward(weights: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray,
                  activation: str = "tanh") -> np.ndarray:
    """The MLP in numpy, in the weights' dtype (float64 for greedy decisions)."""
    act = ACTIVATIONS[activation][1]
    for i, (wt, b) in enumerate(weights):
        x = x @ wt + b
        if i < len(weights) - 1:
            x = act(x)
    return x


class DbfActor(MaskedPolicy):
    """The actor: an MLP over DBF's observation (cores + 3 M inputs) to M + 1 logits (the slots,
    then Fwd); masked actions (only with ``mask=True``) get -1e6. Greedy decisions run in numpy,
    float64 (`agents.greedy`), from weights converted once per change of the parameters."""

    def __init__(self, n_in: int, n_actions: int, hidden: Sequence[int] = HIDDEN,
                 activation: str = "tanh"):
        super().__init__()
        self.activation = activation
        self.net = activation_mlp([n_in, *hidden, n_actions], activation)
        self._weights64 = (None, None)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return apply_mask(self.net(obs), mask)

    def weights64(self) -> list[tuple[np.ndarray, np.ndarray]]:
        key = tuple(p._version for p in self.parameters())
        if self._weights64[0] != key:
            self._weights64 = (key, linear_weights(self.net))
        return self._weights64[1]

    def scores64(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits = numpy_forward(self.weights64(), np.asarray(obs, dtype=np.float64),
                               self.activation)
        return np.where(np.asarray(mask, dtype=bool), logits, logits - 1e6)


class DbfCritic(ValueNet):
    """The critic: the same MLP shape to one value; separate from the actor."""

    def __init__(self, n_in: int, hidden: Sequence[int] = HIDDEN, activation: str = "tanh"):
        super().__init__()
        self.net = activation_mlp([n_in, *hidden, 1], activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)


# -- a trained model as a Policy -------------------------------------------------------------------
class _Maxima:
    """What `envs.dbf.observe_view` keeps of an episode: the running maxima and the R(t) terms."""

    __slots__ = ("l_max", "w_max", "wait_max", "stats")

    def __init__(self) -> None:
        self.l_max = self.w_max = self.wait_max = 0.0
        self.stats = (0.0, 0.0, 0.0)


class DbfPolicy:
    """A DBF actor as an engine `Policy`, with DBF's schedule cycling: at every decision (an
    instant where a job arrived or completed, while jobs wait) it observes the view exactly as
    `DBFEnv` does and acts; a valid pick (a slot whose job fits now) starts that job (`Pick`, which
    starts a job that fits) and the engine asks again at the same instant; Fwd, or an invalid pick,
    ends the cycle until the next event.

    Backfilling (`--backfill`): the cycle's end is a `Reserve` for the oldest waiting job that
    does not fit (a `Wait` when every waiting job fits): under ``none`` that is a plain wait, the
    schedule of `DBFEnv` exactly; under ``easy`` EASY backfilling then runs after the agent's Fwd,
    that job holding the reservation, so it may start jobs the agent chose to leave waiting (where
    they do not delay the reserved one). While every waiting job fits there is nothing to reserve
    for and the agent's Fwd stands. (So an actor that always picks slot 0, the oldest job, is FCFS,
    and with ``easy`` FCFS with EASY: tests/agents/test_dbf_agent.py.) Under ``conservative`` the
    plan decides every start.

    Greedy by default (the first maximum of the float64 logits rounded to float32,
    `agents.greedy`); `sample=True` draws from the softmax (Gumbel-max, seeded)."""

    def __init__(self, weights: list[tuple[np.ndarray, np.ndarray]], *, window: int, tail: int,
                 scale=None, mask: bool = False, activation: str = "tanh", sample: bool = False,
                 seed: int = 0, name: str = "dbf"):
        self.name = name
        self.weights = weights
        self.window, self.tail = int(window), int(tail)
        self.scale = scale
        self.mask = bool(mask)
        self.activation = activation
        self.sample = sample
        self.rng = np.random.default_rng(seed)
        self.n_in = int(weights[0][0].shape[0])
        self.state = _Maxima()
        self.obs = np.zeros(self.n_in, dtype=np.float32)
        self.decisions = 0

    def reset(self, view) -> None:
        from hpcsched.envs.dbf import DbfScale

        scale = self.scale
        if scale is None or scale.cores + 3 * self.window != self.n_in:
            raise ValueError(f"{self.name}: the model observes {self.n_in - 3 * self.window} "
                             f"cores; this cluster has "
                             f"{None if scale is None else scale.cores}")
        if not isinstance(scale, DbfScale):
            raise TypeError("scale must be a DbfScale")
        self.state = _Maxima()
        self.decisions = 0

    def act(self, obs: np.ndarray, mask: np.ndarray) -> int:
        """The action on one observation: greedy, or a draw with `sample`."""
        logits = numpy_forward(self.weights, obs.astype(np.float64), self.activation)
        if not self.sample:
            return greedy(logits, mask)
        noisy = decision_scores(logits) + self.rng.gumbel(size=logits.shape).astype(np.float32)
        return int(np.argmax(np.where(mask, noisy, -np.inf)))

    def decide(self, view):
        from hpcsched.envs.dbf import observe_view

        rows = observe_view(view, self.state, self.scale, self.window, self.tail, self.obs)
        need, free = view.nodes_needed, view.free_nodes
        present = rows >= 0
        valid = np.zeros(self.window, dtype=bool)
        valid[present] = need[rows[present]] <= free
        mask = np.ones(self.window + 1, dtype=bool)
        if self.mask:
            mask[:self.window] = valid
            mask[self.window] = view.can_wait or not valid.any()
        a = self.act(self.obs, mask)
        self.decisions += 1
        if a < self.window and valid[a]:
            return Pick(int(rows[a]))
        q = view.queue
        unfit = q[need[q] > free]
        return Reserve(int(unfit[0])) if unfit.size else Wait()


def load_dbf_checkpoint(path) -> dict[str, Any]:
    from hpcsched.modelfile import OtherKindError, read_model

    ck = read_model(path)
    if ck["recipe"] != "dbf":
        raise OtherKindError(f"{path} is not a DBF model (it holds a {ck['recipe']} model)")
    return ck


def load_dbf(path, *, prepared=None, sample: bool = False, seed: int = 0,
             name: str | None = None, mask: bool | None = None) -> DbfPolicy:
    """The DBF actor in model file `path` as an engine Policy (`DbfPolicy`), observing with the
    constants of `prepared` (the trace it schedules; default: its training trace's). `mask`:
    decide through the mask of ``--mask`` (True) or without it (False) whatever the training
    (None: as trained)."""
    from hpcsched.modelfile import config_of, restore_state
    from hpcsched.envs.dbf import DbfScale

    ck = load_dbf_checkpoint(path)
    cfg = config_of(path, lambda: DBFConfig.from_dict(ck["config"]))
    scale = DbfScale.of(prepared) if prepared is not None else DbfScale(**ck["norm"])
    n_in = scale.cores + 3 * cfg.window
    actor = config_of(path, lambda: DbfActor(n_in, cfg.window + 1, cfg.hidden, cfg.activation))
    restore_state(path, actor, ck["weights"], "policy")
    if mask is not None:
        from dataclasses import replace

        cfg = replace(cfg, mask=bool(mask))
    return as_policy(actor, cfg, scale, sample=sample, seed=seed, name=name or f"dbf:{path}")


def as_policy(actor: DbfActor, config: DBFConfig, scale, *, sample: bool = False, seed: int = 0,
              name: str = "dbf") -> DbfPolicy:
    """`actor` (in memory) as an engine Policy, with `config`'s window, tail and mask."""
    return DbfPolicy(linear_weights(actor.net), window=config.window, tail=config.tail,
                     scale=scale, mask=config.mask, activation=config.activation,
                     sample=sample, seed=seed, name=name)


def epochs_for(episodes: int, config: DBFConfig) -> int:
    """The updates (run-folder epochs) that `episodes` training episodes make."""
    return max(1, math.ceil(episodes / config.trajectories_per_epoch))


__all__ = ["ACTIVATIONS", "DBFConfig", "DbfActor", "DbfCritic", "DbfPolicy", "HIDDEN",
           "activation_mlp", "as_policy", "check_weights", "epochs_for", "load_dbf",
           "load_dbf_checkpoint", "numpy_forward"]
