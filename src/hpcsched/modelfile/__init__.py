"""Trained models are files (DESIGN decision 7), in one format for every learned scheduler and
learner, `hpcsched.model/2`, written by one writer (`write_model`) and read by one reader
(`read_model`).

A model file is a dict saved by ``torch.save`` and read back with ``weights_only=True`` (tensors and
plain Python values only, so loading one never runs code from it):

    format          "hpcsched.model/2"
    version         the hpcsched version that wrote it
    recipe          the learned scheduler (`hpcsched.recipes`): "rlscheduler", "schedinspector",
                    "dras", "deeprm"
    learner         the algorithm that trained it: "ppo", "reinforce", "dqn"
    config          the recipe's config, whole (its dataclass as a dict): what built the run
    learner_config  the learner's own settings where `config` does not hold them resolved (DRAS:
                    the agent's settings and its input rows); {} elsewhere
    learner_state   the learner's counters that learning on from any copy reads (DRAS: its
                    update count; PG's running baseline and dropped picks, DQN's epsilon, as
                    `experiment dras --online` goes on learning from a shipped model); {} elsewhere
    weights         {network: state_dict}: PPO's "policy" and "value", REINFORCE's "policy",
                    DQN's "q" and "target"
    norm            the observation's normalisation constants (the training trace's; {} if none)
    epoch           training steps done, in the recipe's unit (DRAS: episodes)
    history         what the trainer logged, one dict per epoch (episode)
    training        what only continuing the training needs; absent from a slim export:
                      optimizers  {network: optimiser state_dict}
                      rng         the global random states (torch, numpy, Python: `rng_states`)
                      learner     the learner's own (its generator's state; DQN's replay memory)
                      run         the trainer's (PPO: its run options; RLScheduler's filter band
                                  and warm start)

A slim export (`slim`, what data/pretrained/seeds/ ships) is the same format without `training`
and without the networks that do not decide (`DECIDING`): it decides exactly as the file it was
made from, and training cannot resume from it.

The writer is atomic (a temporary file in the same folder, flushed, then `os.replace`: a crash
leaves the old file or the new one, never half of one; the file gets the permissions of any other
file of the run, 0644 under the usual umask) and refuses to write what the reader would refuse: a
malformed model or a NaN or infinite value in a tensor. The reader refuses, in one line
(`ModelFileError`, a ValueError) and before anything is built from it, a damaged file: a truncated
one or one that is not a torch file, a member whose zip checksum fails (torch itself does not check
them: a flipped byte in a weight would load), a NaN or infinite value in any tensor, an entry
missing or of the wrong type. A file of the formats before this one (`hpcsched.ppo/1`,
`hpcsched.deeprm/1`, `hpcsched.dras/1`) is upgraded as it is read (`hpcsched.modelfile.legacy`;
``hpcsched upgrade-models FILE...`` rewrites such files). The learners' loaders then refuse, also
in one line, a config they cannot build or weights that do not fit it (`config_of`,
`restore_state`). Each recipe's loaders turn a file into its learner (`recipes.load_learner`) or
its engine policy (``PREFIX:PATH``).
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

FORMAT = "hpcsched.model/2"
#: the entries of a model file besides `format`, `version` and `training`, with their types
ENTRIES = {"recipe": str, "learner": str, "config": dict, "learner_config": dict,
           "learner_state": dict, "weights": dict, "norm": dict, "epoch": int, "history": list}
#: the entries every model file has (a slim export has exactly these)
SLIM_KEYS = ("format", "version", *ENTRIES)
#: the entries of `training`
TRAINING = ("optimizers", "rng", "learner", "run")
#: the networks that decide, by learner: all a slim export keeps of `weights`
DECIDING = {"ppo": ("policy",), "reinforce": ("policy",), "dqn": ("q",),
            "hierarchical-ppo": ("selector_policy", "allocator_policy")}


def rng_states() -> dict[str, Any]:
    """The global RNG states of torch, numpy and Python, as plain values (`training["rng"]`)."""
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


class ModelFileError(ValueError):
    """A model file that cannot be used: damaged, of another kind, or inconsistent."""


class OtherKindError(ModelFileError):
    """A sound model file of another kind (format, recipe) than the one asked for."""


def one_line(error: BaseException, limit: int = 300) -> str:
    """An exception's message on one line (torch's are often several), cut at `limit` chars."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _non_finite(value: Any, where: str = "") -> str | None:
    """The place of the first floating tensor in `value` (nested dicts, lists, tuples) holding a
    NaN or an infinity, if any."""
    if isinstance(value, torch.Tensor):
        bad = value.is_floating_point() and not bool(torch.isfinite(value).all())
        return (where or "a tensor") if bad else None
    if isinstance(value, (dict, list, tuple)):
        for k, v in (value.items() if isinstance(value, dict) else enumerate(value)):
            found = _non_finite(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    return None


def _read(path: str | os.PathLike) -> tuple[Path, Any]:
    """(path, what `torch.load` reads there), checked for damage: a missing file, a zip member
    failing its CRC-32 (torch.load does not check them), a file torch cannot read (or that holds
    more than values), a NaN or infinite value in a tensor."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no model file at {path}")
    if zipfile.is_zipfile(path):  # else truncated, or not a torch file: torch.load tells
        try:
            with zipfile.ZipFile(path) as z:
                bad = z.testzip()
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError) as e:
            raise ModelFileError(f"{path} is damaged (its zip archive cannot be read: "
                                 f"{one_line(e)})") from None
        if bad is not None:
            raise ModelFileError(f"{path} is damaged: {bad} fails its zip checksum")
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # not a torch file, a truncated one, or one holding more than values
        raise ModelFileError(f"{path} is not an hpcsched model checkpoint (unreadable: damaged, "
                             f"truncated or another kind of file; {type(e).__name__}: "
                             f"{one_line(e)})") from None
    bad = _non_finite(ck)
    if bad is not None:
        raise ModelFileError(f"{path} is damaged: {bad} holds NaN or infinite values")
    return path, ck


def _problem(ck: Any) -> str | None:
    """What makes `ck` (format and version aside) no model file of this format, if anything."""
    if not isinstance(ck, dict):
        return "it is not a dict"
    missing = [k for k in SLIM_KEYS if k not in ck]
    if missing:
        return f"no {', '.join(missing)}"
    extra = set(ck) - set(SLIM_KEYS) - {"training"}
    if extra:
        return f"unknown entries {', '.join(sorted(map(str, extra)))}"
    for key, kind in ENTRIES.items():
        if not isinstance(ck[key], kind) or isinstance(ck[key], bool) or ck[key] == "":
            what = {str: "a non-empty str", int: "an int"}.get(kind, f"a {kind.__name__}")
            return f"its {key} is not {what}"
    if not ck["weights"]:
        return "it holds no network"
    for name, state in ck["weights"].items():
        if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor)
                                                  for t in state.values()):
            return f"its weights' {name!r} is not a state_dict of tensors"
    training = ck.get("training")
    if training is not None and (not isinstance(training, dict) or set(training) - set(TRAINING)
                                 or not isinstance(training.get("optimizers", {}), dict)):
        return f"its training is not a dict of {', '.join(TRAINING)} (optimizers: a dict)"
    return None


def write_model(path: str | os.PathLike, contents: dict[str, Any]) -> Path:
    """Write the model file `contents` (every entry of the format but `format` and `version`,
    which are added) to `path`, atomically (a temporary file in the same folder, flushed to disk
    and then renamed). What the reader would refuse is not written: a malformed model, or a NaN or
    infinite value in a tensor (a training that diverged), in one line (`ModelFileError`), the
    file at `path` left as it was."""
    payload = {**contents, "format": FORMAT, "version": hpcsched.__version__}
    problem = _problem(payload)
    if problem is not None:
        raise ModelFileError(f"not writing {path}: not a model file ({problem})")
    bad = _non_finite(payload)
    if bad is not None:
        raise ModelFileError(f"not writing {path}: {bad} holds NaN or infinite values (the "
                             f"training diverged)")
    payload = {k: payload[k] for k in (*SLIM_KEYS, "training") if k in payload}  # in one order
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


def read_model(path: str | os.PathLike, *, recipe: str | None = None) -> dict[str, Any]:
    """The model file at `path`, checked (see the module's docstring): a damaged or malformed
    file is refused in one line (`ModelFileError`), and one of another recipe than `recipe`
    (when given) too (`OtherKindError`). A file of an older format is upgraded as it is read
    (`hpcsched.modelfile.legacy`), with a warning that says how to upgrade it on disk."""
    path, ck = _read(path)
    fmt = ck.get("format") if isinstance(ck, dict) else None
    if fmt != FORMAT:
        from hpcsched.modelfile import legacy

        if fmt not in legacy.FORMATS:
            raise OtherKindError(f"{path} is not an hpcsched model checkpoint of this kind "
                                 f"(expected format {FORMAT!r}, found {fmt!r})")
        ck = legacy.upgraded(path, ck)
        # said here (stacklevel 1): once per file, however many callers read it
        warnings.warn(f"{path} is in the old format {fmt}: read through the legacy reader "
                      f"(`hpcsched upgrade-models {path}` upgrades it in place)")
    problem = _problem(ck)
    if problem is not None:
        raise ModelFileError(f"{path} is not a valid hpcsched model file ({problem})")
    if ck.get("version") != hpcsched.__version__:
        warnings.warn(f"{path} was written by hpcsched {ck.get('version')}, this is "
                      f"{hpcsched.__version__}", stacklevel=2)
    if recipe is not None and ck["recipe"] != recipe:
        raise OtherKindError(f"{path} is a {ck['recipe']} model ({ck['learner']}), not a "
                             f"{recipe} one")
    return ck


def load_checkpoint(path: str | os.PathLike, *, fmt: str = FORMAT) -> dict[str, Any]:
    """The checked contents of the file at `path`: for hpcsched's own format, `read_model`; for
    another `fmt` (a recipe registered from outside the package that keeps its own files), the
    same damage checks and its format tag."""
    if fmt == FORMAT:
        return read_model(path)
    path, ck = _read(path)
    if not isinstance(ck, dict) or ck.get("format") != fmt:
        raise OtherKindError(f"{path} is not an hpcsched model checkpoint of this kind (expected "
                             f"format {fmt!r}, found "
                             f"{ck.get('format') if isinstance(ck, dict) else None!r})")
    return ck


def is_model(ck: Any) -> bool:
    """Whether `ck` (a file's contents as torch read them) is in hpcsched's format, this one or
    an older one."""
    from hpcsched.modelfile.legacy import FORMATS

    return isinstance(ck, dict) and ck.get("format") in (FORMAT, *FORMATS)


def training_of(path: str | os.PathLike, ck: dict[str, Any]) -> dict[str, Any]:
    """The `training` entry of model file `ck` (read from `path`); a slim export has none, and is
    refused in one line: it decides, but training cannot resume from it."""
    training = ck.get("training")
    if not training or not training.get("optimizers"):
        raise ModelFileError(f"{path} is a slim export (its config and the weights that decide; "
                             f"no optimiser state): it decides, but training cannot resume "
                             f"from it")
    return training


def slim(src: str | os.PathLike, dst: str | os.PathLike, *,
         history: list[dict[str, Any]] | None = None) -> Path:
    """A slim export of the model file `src` at `dst`: the same format without `training` and
    without the networks that do not decide (`DECIDING`); its history, or `history` given. It
    decides exactly as `src` (its weights are kept as they are: float16 rounding of a DRAS
    network changed enough picks over a three-week test to move the average wait by 10 %);
    training cannot resume from it."""
    ck = read_model(src)
    kept = {k: ck[k] for k in SLIM_KEYS}
    deciding = DECIDING.get(ck["learner"])
    if deciding is not None:
        kept["weights"] = {k: v for k, v in ck["weights"].items() if k in deciding}
    if history is not None:
        kept["history"] = list(history)
    return write_model(dst, kept)


def restore_state(path: str | os.PathLike, target: Any, states: dict[str, Any], key: str) -> None:
    """`target.load_state_dict(states[key])` (a network from a file's `weights`, or an optimiser
    from its `training["optimizers"]`) for the file at `path`: a part missing or not fitting the
    target its config built is refused in one line."""
    try:
        target.load_state_dict(states[key])
    except (RuntimeError, KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ModelFileError(f"{path}: its weights do not match its config ({key}: "
                             f"{one_line(e)})") from None


def config_of(path: str | os.PathLike, make: Callable[[], Any]) -> Any:
    """`make()` (a config, or a network from it) for the model file at `path`, a config that
    cannot be built refused in one line."""
    try:
        return make()
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ModelFileError(f"{path}: its config is not valid ({one_line(e)})") from None


__all__ = ["DECIDING", "ENTRIES", "FORMAT", "ModelFileError", "OtherKindError", "SLIM_KEYS",
           "TRAINING", "config_of", "is_model", "load_checkpoint", "one_line", "read_model",
           "restore_rng_states", "restore_state", "rng_states", "slim", "training_of",
           "write_model"]
