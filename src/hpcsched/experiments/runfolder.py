"""A training run's folder, the same for every trainer (`hpcsched train rlscheduler`, `inspector`,
`deeprm`, `dras`), and the loop that keeps it:

    model.pt     the checkpoint, rewritten (atomically) after every epoch: a crash loses at most
                 the epoch in progress, and `resume=True` continues from it
    best.pt      the checkpoint with the best greedy validation score so far (with validation)
    log.csv      one row per epoch: the epoch's metrics, losses, timings, validation scores
    curve.png    the training curve (redrawn every few epochs and at the end)
    validated/   with `keep_validated`: a copy of model.pt at every validated epoch (STEP-N.pt)
    config.json  the run's settings, readable without torch
    tb/          TensorBoard events, when the tensorboard package is installed
    .lock        held (flock) by the training writing the folder: a second one is refused

log.csv, tb/ and the progress shown (a bar on a terminal, else a line per epoch) are written by
`experiments.runlog.RunLog`.

A run folder remembers every setting that shapes the run: its config and the trainer's run
options (validation) are in model.pt and config.json. `resume=True` continues with them; a setting
given again must repeat the stored value (a different one is refused, naming it), except those
that do not change the run (`NOT_SHAPING`: threads). A run stopped at any point and resumed (once
or many times) writes the same model.pt, log.csv and best.pt as one that never stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

#: config settings that do not change what a run computes or writes: a resumed run may change them
NOT_SHAPING = ("threads", "parallel_update")


class RunInUseError(OSError):
    """The run folder is held by another training."""


@contextlib.contextmanager
def run_lock(out: Path, *, resume: bool = False) -> Iterator[None]:
    """Hold the run folder `out` (created if need be) for the duration: an exclusive advisory lock
    (`fcntl.flock`) on `out/.lock`, whose holder's pid the file names. A second training of the same
    folder is refused at once (`RunInUseError`); the lock goes with the process however it ends
    (even killed), so a stopped run leaves no stale lock. With `resume`, a folder without model.pt
    is refused before anything is created."""
    out = Path(out)
    if resume and not (out / "model.pt").exists():
        raise FileNotFoundError(f"--resume: no checkpoint at {out / 'model.pt'}")
    try:
        import fcntl
    except ImportError:  # no flock on this platform: no guard
        fcntl = None
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    lock = out / ".lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                raise RunInUseError(f"{out} is in use by another training (pid {holder}): wait "
                                    f"for it to end, or choose another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        except BaseException:
            if created and [f.name for f in out.iterdir()] == [lock.name]:
                with contextlib.suppress(OSError):  # a run that failed to start leaves nothing
                    lock.unlink()
                    out.rmdir()
            raise
    finally:
        os.close(fd)  # releases the lock


def _settings(config) -> dict[str, Any]:
    return asdict(config) if is_dataclass(config) else dict(config)


def resumed_config(path: Path, stored, given, *,
                   effective: Callable[[Any], dict[str, Any]] | None = None):
    """The config a resumed run continues with: `stored` (the checkpoint's), with the settings of
    `given` that do not shape the run (`NOT_SHAPING`) taken from it. `given`: None, a config (every
    setting counts as given) or a dict of the settings given (the command line's). A given setting
    that would change the run is refused in one line naming it, its stored and its given value; a
    dict setting given by name (DRAS's agent overrides) updates the stored one's entries.
    `effective(config)`: the settings compared (default: the config's fields), for configs whose
    fields hold defaults resolved elsewhere."""
    if given is None:
        return stored
    settings = _settings(given)
    if isinstance(given, dict):  # settings given by name: a dict setting's entries update the stored
        settings = {k: {**getattr(stored, k), **v} if isinstance(getattr(stored, k, None), dict)
                    and isinstance(v, dict) else v for k, v in settings.items()}
    kind = type(stored)
    try:
        merged = kind(**{**asdict(stored), **settings})  # normalised as the stored one was
    except TypeError as e:
        raise ValueError(f"--resume {path}: {e}") from None
    compare = effective or asdict
    before, after = compare(stored), compare(merged)
    changed = [k for k in before if k not in NOT_SHAPING and before[k] != after.get(k)]
    changed += [k for k in after if k not in before and k not in NOT_SHAPING]
    if changed:
        raise ValueError(refusal(path, {k: (before.get(k), after.get(k)) for k in changed}))
    return merged


def refusal(path: Path, changed: dict[str, tuple[Any, Any]]) -> str:
    """The one-line refusal of a resume that would change settings {name: (stored, given)}."""
    listed = "; ".join(f"{k}={a!r}, not {b!r}" for k, (a, b) in changed.items())
    return (f"--resume: {path} was trained with {listed} (leave "
            f"{'that option' if len(changed) == 1 else 'those options'} out to continue it as it "
            f"was, or start a new run in another --out)")


def warm_refusal(path, theirs: dict[str, Any], ours: dict[str, Any]) -> str | None:
    """The one-line refusal of `--init path` when the file's settings that fix what the networks
    read and their shapes (`theirs`) differ from the new run's (`ours`, {name: value}); None when
    they agree."""
    differ = {k: (theirs.get(k), v) for k, v in ours.items() if theirs.get(k) != v}
    if not differ:
        return None
    return (f"--init {path}: its model differs from this run in "
            + ", ".join(f"{k} ({a!r} there, {b!r} here)" for k, (a, b) in differ.items()))


def check_options(given: dict[str, Any], defaults: dict[str, Any]) -> None:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise TypeError(f"train() got unexpected keyword argument(s) {', '.join(unknown)}")


def resumed_options(path: Path, stored: dict[str, Any] | None, given: dict[str, Any],
                    defaults: dict[str, Any], say,
                    legacy: dict[str, Any] | None = None) -> dict[str, Any]:
    """A run's options (see `RUN_OPTIONS`): for a new run (`stored` None) the given ones over the
    defaults; for a resumed one the stored ones, a different given value refused in one line. A
    run written before its options were kept has none stored: the given ones and the defaults
    then, said through `say`. `legacy`: for options added later, the value that a run written
    before an option existed had in effect (where it differs from today's default), taken when
    the run does not store the option, so that resuming it does not change what it computes."""
    check_options(given, defaults)
    given = {k: v for k, v in given.items() if v is not None}
    if stored is None:
        return {**defaults, **given}
    before = {**defaults, **(legacy or {})}
    if not stored:
        options = {**before, **given}
        say(f"{path} does not record its validation options (an older run): using "
            + ", ".join(f"{k}={v!r}" for k, v in options.items()))
        return options
    options = {**before, **stored}
    changed = {k: (options[k], v) for k, v in given.items() if v != options[k]}
    if changed:
        raise ValueError(refusal(path, changed))
    return options


def open_run(out: Path, config, *, resume: bool, load, create, say, info: Callable[[Any], dict],
             options: dict[str, Any] | None = None, run_options: dict[str, Any] | None = None,
             effective: Callable[[Any], dict[str, Any]] | None = None, step: str = "epoch",
             legacy_options: dict[str, Any] | None = None):
    """The model of the run folder `out` (held by `run_lock`): with `resume`, the one in its
    model.pt, its stored config checked against `config` (`resumed_config`: None, a config or a
    dict of the settings given), else `create()`, refusing to overwrite an existing run. With
    `run_options` (the trainer's, with their defaults), the run's options (`resumed_options`: the
    stored ones on resume, given by `options`; `legacy_options`: the values of options added
    after a run was written, see `resumed_options`) are kept in `model.run_options`. config.json
    gets `info(config)`, the config's settings and the run options. `load(path)` reads a
    checkpoint; the model has `.config`, `.epoch` (`step`s done)."""
    model_path = out / "model.pt"
    if not resume:
        if model_path.exists():
            raise FileExistsError(f"{model_path} exists: pass --resume to continue that run, or "
                                  f"choose another --out")
        model = create()
    else:
        model = load(model_path)
        model.config = resumed_config(model_path, model.config, config, effective=effective)
    kept = {}
    if run_options is not None:
        model.run_options = kept["run_options"] = resumed_options(
            model_path, model.run_options if resume else None, options or {}, run_options, say,
            legacy_options)
    if resume:
        say(f"resumed {model_path} at {step} {model.epoch}")
    (out / "config.json").write_text(json.dumps(
        {**info(model.config), **asdict(model.config), **kept}, indent=1) + "\n")
    return model


def best_so_far(history: list[dict[str, Any]], key: str, better: Callable[[float, Any], bool],
                start_counts: bool):
    """The best validation score of a resumed run, as the run that never stopped has it: the
    scores `history[i][key]` in order, the epoch-0 score (before any training) only when
    `start_counts` (a warm-started run's starting policy is a candidate for best.pt; a random
    one is not)."""
    best = None
    for h in history:
        v = h.get(key)
        if v is None or (h.get("epoch") == 0 and not start_counts):
            continue
        if better(v, best):
            best = v
    return best


def locked_run(body: Callable, config_class, run_options: dict[str, Any], config,
               out: str | Path, epochs: int, *, resume: bool, options: dict[str, Any], **kw):
    """A trainer's common start: check the run options against `run_options`, build a new run's
    config (a dict of settings becomes `config_class`), then run `body(config, out, epochs,
    resume=, options=, **kw)` holding the folder's lock (`run_lock`)."""
    check_options(options, run_options)
    if not resume and not is_dataclass(config):
        config = config_class(**(config or {}))
    with run_lock(Path(out), resume=resume):
        return body(config, Path(out), epochs, resume=resume, options=options, **kw)


def kept_path(out: Path, step: str, n: int) -> Path:
    """Where `learn_epochs(keep_validated=True)` keeps the model validated after `step` `n`."""
    return out / "validated" / f"{step}-{n}.pt"


def learn_epochs(model, out: Path, epochs: int, *, key: str, improves: Callable[[float, Any], bool],
                 start_counts: bool, columns: list[str], label: str, curve: Callable[[], None],
                 note: Callable[[dict[str, Any]], str], say, validation=None,
                 validate_every: int = 1, started: Callable[[float], str] | None = None,
                 plot_every: int = 10, progress: bool | None = None, step: str = "epoch",
                 logged: Callable[[list], list] | None = None, keep_validated: bool = False) -> None:
    """What every trainer does once its run is open: `model.learn` until `epochs` epochs (`step`s)
    are done in all. A new run's starting policy is scored by `validation` first (when `started`
    says how to tell it), a candidate for best.pt only with `start_counts`; every epoch is then
    followed by the greedy validation (every `validate_every` epochs and at the last: `key` in the
    epoch's stats, which the model may also give itself), best.pt when `key` `improves` on the
    best so far (`best_so_far`), model.pt, the log (`RunLog`: log.csv of `logged(history)`, by
    default the rows with a mean reward; progress with `note(stats)`) and, every `plot_every`
    epochs and at the end, `curve()`. `keep_validated`: also a copy of model.pt at every validated
    epoch, `validated/STEP-N.pt` (`kept_path`), to choose a checkpoint another way afterwards
    (and of a starting policy that counts, as `STEP-0.pt`)."""
    from hpcsched.experiments.runlog import RunLog

    def keep(n: int, src: Path) -> None:
        kept = kept_path(out, step, n)
        kept.parent.mkdir(exist_ok=True)
        shutil.copyfile(src, kept)

    todo = max(0, epochs - model.epoch)
    if validation is not None and started is not None and model.epoch == 0 and todo:
        start = {step: 0}  # in the history first: a validation that adds its details to the
        model.history.append(start)  # latest entry (HeraSched's) adds the start's to this one
        score = start[key] = validation.score(model)
        if start_counts:
            model.save(out / "best.pt")
            if keep_validated:  # the starting model, scored: kept as its epoch 0
                keep(0, out / "best.pt")
        say(started(score))
    best = best_so_far(model.history, key, improves, start_counts)
    logged = logged or (lambda rows: [h for h in rows if "mean_reward" in h])
    try:
        with RunLog(out, columns, extra="val_", label=label, start=model.epoch, last=epochs,
                    history=model.history, step=step, progress=progress, say=say) as runlog:
            def after_epoch(stats: dict[str, Any]) -> None:
                nonlocal best
                n = stats[step]
                if validation is not None and (n % validate_every == 0 or n == epochs):
                    stats[key] = validation.score(model)
                if key in stats and improves(stats[key], best):
                    best = stats[key]
                    model.save(out / "best.pt")
                model.save(out / "model.pt")
                if keep_validated and key in stats:
                    keep(n, out / "model.pt")
                runlog.epoch(stats, logged(model.history), note(stats))
                if plot_every and n % plot_every == 0:
                    curve()

            model.learn(todo, callback=after_epoch)
    finally:
        if model.history:
            curve()


__all__ = ["NOT_SHAPING", "RunInUseError", "best_so_far", "check_options", "kept_path",
           "learn_epochs", "locked_run", "open_run", "refusal", "resumed_config", "resumed_options",
           "run_lock", "warm_refusal"]
