"""The one run log of the four trainers (`experiments.runlog`): a line per epoch where stderr is no
terminal, log.csv's columns as they have always been, and TensorBoard tags grouped as
rollout/, train/, eval/ and time/ (checked on a fake writer; a real one where tensorboard is
installed). Tiny runs, a second or two each."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_run_folders import TINY, TINY_DEEPRM, TINY_INSPECTOR, busy_toy_trace, dras_config

from hpcsched.agents.inspector import InspectorConfig
from hpcsched.agents.rlscheduler import RLSchedulerConfig
from hpcsched.agents.deeprm import DeepRMConfig
from hpcsched.experiments import deeprm as deeprm_training
from hpcsched.experiments import dras_training as dt
from hpcsched.experiments import inspector_training, runlog, training
from hpcsched.experiments.runlog import RunLog, tag

KINDS = ["rlscheduler", "inspector", "deeprm", "dras"]

#: log.csv's header of each trainer, as it was before the trainers shared one log (literal: a
#: change of column or order fails here)
HEADERS = {
    "rlscheduler": "epoch,mean_reward,jobs,bsld,max_bsld,wait,max_wait,turnaround,slowdown,"
                   "utilization,makespan,max_user_bsld,jain_user_bsld,loss_pi,loss_v,kl,entropy,"
                   "clip_fraction,pi_iters,decisions,filtered,rollout_s,update_s,epoch_s,val_bsld",
    "inspector": "epoch,mean_reward,improvement,bsld,base_bsld,wait,base_wait,utilization,"
                 "base_utilization,rejection_ratio,inspections,rejections,loss_pi,loss_v,kl,"
                 "entropy,clip_fraction,pi_iters,decisions,filtered,rollout_s,update_s,epoch_s,"
                 "val_improvement",
    "deeprm": "epoch,slowdown,val_slowdown,val_completion,val_unfinished,completion,mean_return,"
              "max_return,entropy,withheld_share,decisions,unfinished,updates,rollout_s,update_s,"
              "epoch_s",
    "dras": "episode,phase,jobs,mean_reward,reward,picks,updates,loss,wait,max_wait,val_reward,"
            "val_mean_reward,val_wait,val_max_wait,val_slowdown,episode_s",
}

#: key -> tag of each trainer's history keys (those of every run; the module's table in words)
TAGS = {
    "rlscheduler": {
        "mean_reward": "rollout/mean_reward", "bsld": "rollout/bsld", "wait": "rollout/wait",
        "utilization": "rollout/utilization", "max_user_bsld": "rollout/max_user_bsld",
        "decisions": "rollout/decisions", "trajectories": "rollout/trajectories",
        "loss_pi": "train/loss_pi", "loss_v": "train/loss_v", "kl": "train/kl",
        "entropy": "train/entropy", "clip_fraction": "train/clip_fraction",
        "pi_iters": "train/pi_iters", "val_bsld": "eval/bsld", "rollout_s": "time/rollout_s",
        "update_s": "time/update_s", "epoch_s": "time/epoch_s"},
    "inspector": {
        "mean_reward": "rollout/mean_reward", "improvement": "rollout/improvement",
        "rejection_ratio": "rollout/rejection_ratio", "base_bsld": "rollout/base_bsld",
        "inspections": "rollout/inspections", "loss_pi": "train/loss_pi",
        "loss_v": "train/loss_v", "kl": "train/kl", "val_improvement": "eval/improvement",
        "epoch_s": "time/epoch_s"},
    "deeprm": {
        "slowdown": "rollout/slowdown", "completion": "rollout/completion",
        "mean_return": "rollout/mean_return", "max_return": "rollout/max_return",
        "withheld_share": "rollout/withheld_share", "unfinished": "rollout/unfinished",
        "entropy": "train/entropy", "updates": "train/updates",
        "imitation_agreement": "train/imitation_agreement", "val_slowdown": "eval/slowdown",
        "val_completion": "eval/completion", "val_unfinished": "eval/unfinished",
        "rollout_s": "time/rollout_s", "epoch_s": "time/epoch_s"},
    "dras": {
        "mean_reward": "rollout/mean_reward", "reward": "rollout/reward",
        "picks": "rollout/picks", "wait": "rollout/wait", "max_wait": "rollout/max_wait",
        "jobs": "rollout/jobs", "loss": "train/loss", "updates": "train/updates",
        "val_reward": "eval/reward", "val_mean_reward": "eval/mean_reward",
        "val_wait": "eval/wait", "val_max_wait": "eval/max_wait",
        "val_slowdown": "eval/slowdown", "episode_s": "time/episode_s"},
}
#: never written: the step itself, strings, booleans, window positions
UNTAGGED = {"rlscheduler": ("epoch", "filtered", "first_job_id", "last_job_id"),
            "inspector": ("epoch", "first_job_id"), "deeprm": ("epoch",),
            "dras": ("episode", "phase")}


class FakeWriter:
    """A SummaryWriter's three calls, recorded."""

    def __init__(self):
        self.scalars: list[tuple[str, float, int]] = []
        self.closed = False

    def add_scalar(self, name, value, step):
        self.scalars.append((name, value, step))

    def flush(self):
        pass

    def close(self):
        self.closed = True

    def steps(self, name):
        return [s for n, _, s in self.scalars if n == name]


@pytest.fixture(scope="module")
def toy():
    return busy_toy_trace()


def run_each(kind: str, out: Path, monkeypatch, toy, **kw):
    """Two epochs (DRAS: episodes) of each trainer, validated every epoch."""
    if kind == "rlscheduler":
        return training.train(RLSchedulerConfig(**TINY), out, 2, validate_every=1, validate_windows=1,
                              validate_jobs=64, **kw)
    if kind == "inspector":
        return inspector_training.train(InspectorConfig(**TINY_INSPECTOR), out, 2,
                                        validate_every=1, validate_windows=1, validate_jobs=64,
                                        **kw)
    if kind == "deeprm":
        return deeprm_training.train(DeepRMConfig(**TINY_DEEPRM, init="sjf", init_passes=1),
                                     out, 2, **kw)
    monkeypatch.setattr(dt, "prepared_for", lambda config: toy)
    return dt.train(dras_config("pg", curriculum="real:2"), out, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_without_a_terminal_each_epoch_is_one_plain_line(tmp_path, monkeypatch, capsys, toy,
                                                         kind):
    """Under nohup or a batch system (stderr a file: here pytest's capture), the default log says
    one line per epoch, `epoch N/LAST: ...`, and draws no bar."""
    monkeypatch.setattr(runlog, "tensorboard_writer", lambda folder, purge_step=None: None)
    capsys.readouterr()
    run_each(kind, tmp_path / "run", monkeypatch, toy)  # progress and log: the defaults
    err = capsys.readouterr().err
    assert "\r" not in err  # no bar
    step = "episode" if kind == "dras" else "epoch"
    lines = [m.group(1) for m in re.finditer(rf"^{step} (\d+)/2: \S.*\(\d+\.\d s", err, re.M)]
    assert lines == ["1", "2"], err


@pytest.mark.parametrize("kind", KINDS)
def test_log_csv_keeps_its_columns_and_tensorboard_gets_grouped_tags(tmp_path, monkeypatch,
                                                                     toy, kind):
    writers = []

    def fake(folder, purge_step=None):
        assert folder == tmp_path / "run" / "tb" and purge_step is None
        writers.append(FakeWriter())
        return writers[-1]

    monkeypatch.setattr(runlog, "tensorboard_writer", fake)
    run_each(kind, tmp_path / "run", monkeypatch, toy, progress=False, log=lambda text: None)
    with open(tmp_path / "run" / "log.csv") as f:
        rows = list(csv.reader(f))
    assert ",".join(rows[0]) == HEADERS[kind]
    assert len(rows) == 1 + 2 + (kind == "deeprm")  # DeepRM's warm start has its epoch-0 row

    [writer] = writers
    assert writer.closed
    written = {name for name, _, _ in writer.scalars}
    for key, name in TAGS[kind].items():
        assert name in written, (key, name)
        assert tag(key) == name
    assert all(name.split("/")[0] in runlog.GROUPS for name in written), written
    for key in UNTAGGED[kind]:
        assert not any(name.endswith(f"/{key}") for name in written), key
    step = "episode" if kind == "dras" else "epoch"
    assert writer.steps(f"time/{step}_s") == [1, 2]
    # a new run's epoch-0 validation (before any training) is step 0 of the eval curve
    first = {"rlscheduler": "eval/bsld", "inspector": "eval/improvement",
             "deeprm": "eval/slowdown", "dras": "eval/slowdown"}[kind]
    assert writer.steps(first) == ([1, 2] if kind == "dras" else [0, 1, 2])


def test_a_resumed_run_purges_the_events_from_its_first_epoch_on(tmp_path, monkeypatch):
    """A run killed after logging epoch N but before saving it redoes N: the resumed writer
    starts with purge_step = the first epoch it trains, and logs no old row again."""
    calls = []

    def fake(folder, purge_step=None):
        calls.append((purge_step, FakeWriter()))
        return calls[-1][1]

    monkeypatch.setattr(runlog, "tensorboard_writer", fake)
    quiet = dict(validate_every=1, validate_windows=1, validate_jobs=64, progress=False,
                 log=lambda text: None)
    training.train(RLSchedulerConfig(**TINY), tmp_path / "run", 1, **quiet)
    training.train(RLSchedulerConfig(**TINY), tmp_path / "run", 3, resume=True, **quiet)
    (first, new), (then, resumed) = calls
    assert first is None and then == 2
    assert new.steps("eval/bsld") == [0, 1] and resumed.steps("eval/bsld") == [2, 3]


def test_the_bar_replaces_the_lines(tmp_path):
    """With the bar drawn, no line per epoch is said; without it, one per epoch, with its time
    and what is left."""
    row = {"epoch": 1, "mean_reward": -2.0, "epoch_s": 1.25}
    for progress, lines in ((True, 0), (False, 2)):
        said: list[str] = []
        with RunLog(tmp_path, ["epoch", "mean_reward"], label="t", start=0, last=2,
                    progress=progress, say=said.append, writer=FakeWriter()) as log:
            log.epoch(row, [row], "reward -2")
            log.epoch(dict(row, epoch=2), [row, dict(row, epoch=2)], "reward -2")
        assert len(said) == lines
    assert said[0].startswith("epoch 1/2: reward -2 (1.2 s, eta ") and said[1] == (
        "epoch 2/2: reward -2 (1.2 s)")
    assert (tmp_path / "log.csv").read_text().splitlines() == [
        "epoch,mean_reward", "1,-2.0", "2,-2.0"]


def test_tag_groups():
    assert [tag(k) for k in ("val_wait", "pi_s", "episode_s", "kl", "loss", "imitation_states",
                             "bsld", "picks", "first_job_id")] == [
        "eval/wait", "time/pi_s", "time/episode_s", "train/kl", "train/loss",
        "train/imitation_states", "rollout/bsld", "rollout/picks", None]


def test_real_tensorboard_events(tmp_path):
    """Where tensorboard is installed (the `tensorboard` extra), tb/ gets an events file."""
    pytest.importorskip("tensorboard")
    row = {"epoch": 1, "mean_reward": -2.0, "val_bsld": 3.0, "epoch_s": 1.0}
    with RunLog(tmp_path, ["epoch"], label="t", start=0, last=1, progress=False,
                say=lambda text: None) as log:
        assert log.writer is not None
        log.epoch(row, [row])
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
