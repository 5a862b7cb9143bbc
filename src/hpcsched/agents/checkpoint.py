"""Trained models are files (DESIGN decision 7): a checkpoint holds the weights, the optimiser states,
the full config, the trace's normalisation constants, the epoch, the RNG states and the package
version. It is written atomically (a temporary file in the same folder, then `os.replace`), so a
crash never leaves a half-written model behind.

`load_policy(path)` turns a checkpoint into a `Policy` the engine accepts anywhere a heuristic is:

    engine.run(load_policy("runs/lublin-1-bsld.pt"))           # greedy (DESIGN decision 6)
    engine.run(load_policy("runs/lublin-1-bsld.pt", sample=True, seed=1))

A checkpoint is read with ``torch.load(weights_only=True)``: it holds only tensors and plain Python
values, so loading a model file never runs code from it. A damaged file is refused in one line
(`ModelFileError`, a ValueError) before anything is built from it: a truncated file or one that is
not a torch file, a member whose zip checksum fails (torch itself does not check them: a flipped
byte in a weight would load), a NaN or infinite value in any of its tensors. The loaders then
refuse, also in one line, a config they cannot build or weights that do not fit it
(`restore_state`).
"""

from __future__ import annotations

import os
import random
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

import hpcsched
from hpcsched._files import make_readable
from hpcsched.agents.greedy import decision_scores, greedy, torch_float64
from hpcsched.agents.nets import KernelPolicy, kernel_logits, make_policy

FORMAT = "hpcsched.ppo/1"


def rng_states() -> dict[str, Any]:
    """The global RNG states of torch, numpy and Python, as plain values."""
    np_state = np.random.get_state(legacy=False)
    np_state["state"]["key"] = np_state["state"]["key"].tolist()
    return {"torch": torch.get_rng_state(), "numpy": np_state, "python": random.getstate()}


def restore_rng_states(states: dict[str, Any] | None) -> None:
    if not states:
        return
    torch.set_rng_state(states["torch"])
    np_state = dict(states["numpy"])
    np_state["state"] = dict(np_state["state"], key=np.array(np_state["state"]["key"], np.uint32))
    np.random.set_state(np_state)
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any], *,
                    fmt: str = FORMAT) -> Path:
    """Write `state` (see `PPO.state`) with the format tag, package version and RNG states added
    (a `state` that carries its own "rng", a copy of another checkpoint, keeps it: a copy then
    does not depend on the process that wrote it). Other algorithms pass their own `fmt` tag."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = dict(state, format=fmt, version=hpcsched.__version__,
                   rng=state["rng"] if "rng" in state else rng_states())
    return write_atomically(path, payload)


def write_atomically(path: str | os.PathLike, payload: dict[str, Any]) -> Path:
    """`torch.save(payload)` to `path` through a temporary file in the same folder, flushed to
    disk and then renamed: a crash leaves the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        make_readable(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


class ModelFileError(ValueError):
    """A model file that cannot be used: damaged, of another kind, or inconsistent."""


class OtherKindError(ModelFileError):
    """A sound checkpoint of another kind (format) than the one asked for."""


def one_line(error: BaseException, limit: int = 300) -> str:
    """An exception's message on one line (torch's are often several), cut at `limit` chars."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _check_zip(path: Path) -> None:
    """Every member's CRC-32 (torch.load reads a checkpoint's zip without checking them)."""
    if not zipfile.is_zipfile(path):
        return  # not a zip (truncated, or the legacy format): torch.load tells
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError) as e:
        raise ModelFileError(f"{path} is damaged (its zip archive cannot be read: "
                             f"{one_line(e)})") from None
    if bad is not None:
        raise ModelFileError(f"{path} is damaged: {bad} fails its zip checksum")


def _non_finite(value: Any, where: str = "") -> str | None:
    """The place of the first floating tensor holding a NaN or an infinity, if any."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            return where or "a tensor"
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        found = _non_finite(v, f"{where}.{k}" if where else str(k))
        if found:
            return found
    return None


def load_checkpoint(path: str | os.PathLike, *, fmt: str = FORMAT) -> dict[str, Any]:
    """The checkpoint at `path` as a dict (keys: format, version, config, epoch, policy, value,
    pi_optimizer, v_optimizer, norm, history, filter, rng). A damaged file, one of another kind or
    one with a NaN or infinite value in a tensor is refused (`ModelFileError`, one line)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no model file at {path}")
    _check_zip(path)
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # not a torch file, a truncated one, or one holding more than values
        raise ModelFileError(f"{path} is not an hpcsched model checkpoint (unreadable: damaged, "
                             f"truncated or another kind of file; {type(e).__name__}: "
                             f"{one_line(e)})") from None
    if not isinstance(ck, dict) or ck.get("format") != fmt:
        raise OtherKindError(f"{path} is not an hpcsched model checkpoint of this kind (expected "
                             f"format {fmt!r}, found "
                             f"{ck.get('format') if isinstance(ck, dict) else None!r})")
    bad = _non_finite(ck)
    if bad is not None:
        raise ModelFileError(f"{path} is damaged: {bad} holds NaN or infinite values")
    if ck.get("version") != hpcsched.__version__:
        warnings.warn(f"{path} was written by hpcsched {ck.get('version')}, this is "
                      f"{hpcsched.__version__}", stacklevel=2)
    return ck


def restore_state(path: str | os.PathLike, target: Any, ck: dict[str, Any], key: str) -> None:
    """`target.load_state_dict(ck[key])` (a network or an optimiser) for the checkpoint at
    `path`: a part missing or not fitting the target its config built is refused in one line."""
    try:
        target.load_state_dict(ck[key])
    except (RuntimeError, KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ModelFileError(f"{path}: its weights do not match its config ({key}: "
                             f"{one_line(e)})") from None


def config_of(path: str | os.PathLike, make: Callable[[], Any]) -> Any:
    """`make()` (a config, or a network from it) for the checkpoint at `path`, a config that
    cannot be built refused in one line."""
    try:
        return make()
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ModelFileError(f"{path}: its config is not valid ({one_line(e)})") from None


class RLPolicy:
    """A trained policy network as an engine `Policy`: it observes the view as the training
    environment did (`hpcsched.envs.pick_job.observe` with the trace's normalisation constants) and
    picks the most probable job by the greedy rule of `hpcsched.agents.greedy` (float64 scores
    rounded to float32, the earliest slot on a tie), or samples one with `sample=True`."""

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
        kwargs = {"fairness": self._user_scores(view)} if self.fairness else {}
        obs, mask, rows = self._observe(view, self.norm, slots=self.slots, cutoff=self.cutoff,
                                        **kwargs)
        logits = self.logits(obs, mask)
        if self.sample:  # Gumbel-max: a draw from softmax(logits); masked slots never win
            noisy = decision_scores(logits) + self.rng.gumbel(size=logits.shape).astype(np.float32)
            return int(rows[int(np.argmax(noisy))])
        return int(rows[greedy(logits, mask)])


def load_policy(path: str | os.PathLike, *, sample: bool = False, seed: int = 0,
                name: str | None = None, observe: Callable | None = None,
                norm: dict[str, float] | None = None) -> RLPolicy:
    """The trained policy in the checkpoint at `path`, as an engine `Policy` named ``rl:PATH``.

    `norm`: the normalisation constants to observe with; by default the training trace's (stored
    in the checkpoint). To schedule another trace, pass that trace's constants, as RLScheduler's
    own test script does (its environment normalises by the trace it loads)."""
    from hpcsched.agents.rlscheduler import RLSchedulerConfig

    ck = load_checkpoint(path)
    cfg = config_of(path, lambda: RLSchedulerConfig.from_dict(ck["config"]))
    net = config_of(path, lambda: make_policy(cfg.policy, cfg.features, cfg.slots))
    restore_state(path, net, ck, "policy")
    return RLPolicy(net, norm if norm is not None else ck["norm"], slots=cfg.slots, cutoff=cfg.cutoff,
                    fairness=cfg.features == 9, sample=sample, seed=seed,
                    name=name or f"rl:{path}", observe=observe)


__all__ = ["FORMAT", "ModelFileError", "OtherKindError", "RLPolicy", "config_of", "load_checkpoint", "load_policy",
           "one_line", "restore_rng_states", "restore_state", "rng_states", "save_checkpoint",
           "write_atomically"]
