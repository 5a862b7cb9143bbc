"""What a training run tells as it goes, the same way for every trainer (`hpcsched train
rlscheduler`, `inspector`, `deeprm`, `dras`):

- a progress bar on a terminal (`report.progress.Progress`); where there is none (a log file under
  nohup or a batch system, a pipe) one plain line per epoch (DRAS: per episode) through the run's
  `log`, e.g. `epoch 3/60: reward -1.52 bsld 2.31 val 2.2 (41.0 s, eta 39m)`;
- log.csv in the run folder, rewritten (atomically) after every epoch from the run's whole
  history, so that a resumed run's file is the one a run that never stopped writes;
- TensorBoard events in tb/ where the tensorboard package is installed (the optional extra
  `hpcsched[tensorboard]`), at step = the epoch (episode) number, each numeric history key under
  one group (`tag`):

      eval/NAME     val_NAME: the greedy validation scores (val_bsld, val_improvement,
                    val_slowdown, val_wait, val_reward, ...)
      train/NAME    the update's statistics: loss_pi, loss_v, loss, kl, entropy, clip_fraction,
                    pi_iters, updates, and a warm start's imitation_* (DeepRM's epoch 0)
      time/NAME     durations in seconds, the keys ending in _s: rollout_s, update_s, pi_s, v_s,
                    epoch_s, episode_s
      rollout/NAME  the rest: what the epoch's episodes did (mean_reward, reward, mean_return,
                    the metrics bsld, wait, slowdown, utilization, improvement, rejection_ratio,
                    withheld_share, ..., decisions, picks, jobs, trajectories)

  Strings and booleans (DRAS's phase, RLScheduler's filtered) and the window positions
  first_job_id, last_job_id are left out. A new run's rows from before its first epoch (the epoch-0
  validation) are written when the log opens; a resumed run's writer purges the events from the
  epoch it resumes with on (a run killed after logging an epoch but before saving it logged one
  more than it kept).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from hpcsched.report.progress import Progress

#: the TensorBoard groups, in the order `tag`'s rules try them
GROUPS = ("eval", "time", "train", "rollout")
#: history keys of the learner's update (group train)
TRAIN_KEYS = frozenset({"loss_pi", "loss_v", "loss", "kl", "entropy", "clip_fraction", "pi_iters",
                        "updates"})
#: numeric history keys that are no measurement (the mean position of the epoch's windows)
LEFT_OUT = frozenset({"first_job_id", "last_job_id"})


def tag(key: str) -> str | None:
    """The TensorBoard tag of history key `key` (see the module's table); None: not written."""
    if key in LEFT_OUT:
        return None
    if key.startswith("val_"):
        return f"eval/{key[len('val_'):]}"
    if key.endswith("_s"):
        return f"time/{key}"
    if key in TRAIN_KEYS or key.startswith("imitation_"):
        return f"train/{key}"
    return f"rollout/{key}"


def write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    """`rows` as a CSV file of `columns` (a value a row lacks: empty), written atomically."""
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({k: row.get(k, "") for k in columns})
    tmp.replace(path)


def tensorboard_writer(folder: Path, purge_step: int | None = None):
    """A TensorBoard `SummaryWriter` on `folder`, or None where tensorboard is not installed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except Exception:  # tensorboard is optional (pip install hpcsched[tensorboard])
        return None
    return SummaryWriter(str(folder), purge_step=purge_step)


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


class RunLog:
    """The log of one training session of a run folder:

        with RunLog(out, columns, label="training ...", start=model.epoch, last=epochs,
                    history=model.history, progress=progress, say=say) as log:
            ...  # after each epoch:
            log.epoch(row, rows, note)

    `columns`: log.csv's columns, in order; with `extra` (a prefix, "val_") the history's keys
    that start with it follow, sorted. `start`: the epochs (episodes) done before this session,
    `last`: the number the run trains to. `history`: the run's rows so far; a new run's (those
    from before its first epoch) go to TensorBoard when the log opens. `progress`: draw the bar
    (default: where stderr is a terminal); without it, one line per epoch goes to `say` (default:
    stderr). `step`: the history key that numbers the rows (DRAS: "episode"; its duration is
    `step`_s). `writer`: where the TensorBoard scalars go (`add_scalar`, `flush`, `close`);
    default: a `SummaryWriter` on tb/ when tensorboard is installed."""

    def __init__(self, folder: str | Path, columns: Sequence[str], *, label: str, start: int,
                 last: int, history: Sequence[dict[str, Any]] = (), step: str = "epoch",
                 extra: str | None = None, progress: bool | None = None,
                 say: Callable[[str], None] | None = None, writer=None) -> None:
        self.folder = Path(folder)
        self.columns, self.extra, self.step = list(columns), extra, step
        self.start, self.last = start, last
        self.total = max(0, last - start)
        self.label, self.progress = label, progress
        self.say = say or _stderr
        self.writer = writer
        self._before = [] if start else list(history)
        self.bar: Progress | None = None
        self.done = 0
        self._t0 = time.monotonic()

    def __enter__(self) -> "RunLog":
        if self.writer is None:
            self.writer = tensorboard_writer(self.folder / "tb",
                                             purge_step=self.start + 1 if self.start else None)
        for row in self._before:
            self._scalars(row)
        self.bar = Progress(self.total, self.label, enabled=self.progress).__enter__()
        self._t0 = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.bar is not None:
                self.bar.__exit__(*exc)
        finally:
            if self.writer is not None:
                self.writer.close()

    def columns_of(self, rows: Sequence[dict[str, Any]]) -> list[str]:
        """log.csv's columns for these rows."""
        cols = list(self.columns)
        if self.extra:
            cols += sorted({k for r in rows for k in r if k.startswith(self.extra)} - set(cols))
        return cols

    def epoch(self, row: dict[str, Any], rows: Sequence[dict[str, Any]], note: str = "") -> None:
        """After an epoch (`row`, its history row): log.csv rewritten with `rows` (the history
        as the file shows it), `row` to TensorBoard, the bar moved on or a line said. `note`: the
        bar's suffix and the line's text."""
        write_csv(self.folder / "log.csv", rows, self.columns_of(rows))
        self._scalars(row)
        self.done += 1
        if self.bar is not None:
            self.bar.note(note)
            self.bar.update(1)
            if self.bar.enabled:
                return
        self.say(self.line(row, note))

    def line(self, row: dict[str, Any], note: str) -> str:
        """The plain line of an epoch: `epoch N/LAST: NOTE (SECONDS s, eta ...)`."""
        timing = []
        seconds = row.get(f"{self.step}_s")
        if isinstance(seconds, (int, float)):
            timing.append(f"{seconds:.1f} s")
        left = self.total - self.done
        if left > 0 and self.done:
            elapsed = time.monotonic() - self._t0
            timing.append(f"eta {_duration(elapsed / self.done * left)}")
        text = f"{self.step} {row.get(self.step)}/{self.last}: {note}".rstrip()
        return f"{text} ({', '.join(timing)})" if timing else text

    def _scalars(self, row: dict[str, Any]) -> None:
        if self.writer is None:
            return
        step = row[self.step]
        for key, value in row.items():
            if key == self.step or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            name = tag(key)
            if name is not None:
                self.writer.add_scalar(name, value, step)
        self.writer.flush()


__all__ = ["GROUPS", "LEFT_OUT", "RunLog", "TRAIN_KEYS", "tag", "tensorboard_writer", "write_csv"]
