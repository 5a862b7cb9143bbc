"""Run folders of the four trainers (rlscheduler, inspector, deeprm, dras): a run stopped at any
point and resumed, once or several times, writes the same model.pt, log.csv and best.pt as one that
never stopped; a folder remembers every setting that shapes its run and `--resume` keeps them
(a different value given is refused in one line, naming it); two trainings of one folder at once
are refused. Tiny runs; validation scores are scripted where the choice of best.pt is the point."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import hpcsched
from hpcsched.agents import dras_episode
from hpcsched.modelfile import load_checkpoint
from hpcsched.agents.inspector import InspectorConfig
from hpcsched.agents.ppo import PPO
from hpcsched.agents.rlscheduler import RLSchedulerConfig
from hpcsched.agents.deeprm import DeepRM, DeepRMConfig
from hpcsched.cli import main
from hpcsched.experiments import deeprm as deeprm_training
from hpcsched.experiments import dras_training as dt
from hpcsched.experiments import inspector_training, training
from hpcsched.experiments.runfolder import RunInUseError, run_lock

QUIET = dict(progress=False, log=lambda text: None)
TINY = dict(trace="lublin-1", episode_jobs=48, n_envs=6, trajectories_per_epoch=6,
            train_pi_iters=5, train_v_iters=5, seed=3, threads=1)
TINY_INSPECTOR = dict(trace="lublin-1", base="sjf", episode_jobs=32, trajectories_per_epoch=4,
                      n_envs=4, train_pi_iters=5, train_v_iters=5, threads=1)
TINY_DEEPRM = dict(load=0.5, steps=10, jobsets=4, rollouts=3, jobsets_per_update=2,
                   validate_jobsets=3)
TIMING = {"rollout_s", "update_s", "epoch_s", "episode_s"}


class Killed(Exception):
    """The process of a run dies here (a kill, a power cut)."""


# -- comparing two run folders ------------------------------------------------------------------
def same_tensors(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            same_tensors(a[k], b[k]) for k in a)
    return True  # only the tensors are compared here


def log_rows(folder: Path) -> list[dict]:
    with open(folder / "log.csv") as f:
        return [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader(f)]


def without_rng(ck: dict) -> dict:
    """A model file's contents but the global random states of the process that wrote it."""
    return {**ck, "training": {k: v for k, v in ck.get("training", {}).items() if k != "rng"}}


def assert_same_run(a: Path, b: Path) -> None:
    """model.pt (every tensor: weights, optimiser and learner states), log.csv (timings aside)
    and best.pt (every tensor, epoch) of folders a and b are the same."""
    ma, mb = load_checkpoint(a / "model.pt"), load_checkpoint(b / "model.pt")
    assert ma["epoch"] == mb["epoch"] and ma["training"].keys() == mb["training"].keys()
    assert same_tensors(without_rng(ma), without_rng(mb))
    assert log_rows(a) == log_rows(b)
    assert (a / "best.pt").exists() == (b / "best.pt").exists()
    if (a / "best.pt").exists():
        ba, bb = load_checkpoint(a / "best.pt"), load_checkpoint(b / "best.pt")
        assert ba["epoch"] == bb["epoch"]
        assert same_tensors(without_rng(ba), without_rng(bb))


def dying(monkeypatch, cls, method: str, survive: int):
    """Make `cls.method` raise `Killed` at its (survive + 1)-th call from now."""
    real = getattr(cls, method)
    calls = {"n": 0}

    def wrapper(*args, **kwargs):
        if calls["n"] == survive:
            raise Killed
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(cls, method, wrapper)


def run_with_kills(monkeypatch, run, cls, method: str, lives: list[int], out: Path) -> None:
    """`run(out, resume)` started, killed after `lives[0]` calls of `cls.method`, resumed and
    killed after `lives[1]` more, ..., and resumed a last time to its end."""
    for i, survive in enumerate(lives):
        with monkeypatch.context() as m:
            dying(m, cls, method, survive)
            with pytest.raises(Killed):
                run(out, resume=i > 0)
    run(out, resume=True)


class Episodes:
    """`run_episode` of the training episodes only (`learn=True`, played by the agents' `learn`
    in `agents.dras_episode`), for `dying` to count."""

    @staticmethod
    def learning(*args, **kwargs):
        return Episodes.real(*args, **kwargs)

    real = staticmethod(dras_episode.run_episode)

    @staticmethod
    def run_episode(*args, **kwargs):
        return (Episodes.learning if kwargs.get("learn") else Episodes.real)(*args, **kwargs)


# -- rlscheduler ------------------------------------------------------------------------------------
#: scripted greedy validation scores (bsld: lower is better) by epoch; the untrained policy's
#: (epoch 0) beats every later one, the trained ones improve with ups and downs
PPO_SCORES = {0: 1.0, 1: 9.0, 2: 5.0, 3: 7.0, 4: 3.0, 5: 4.0}


@pytest.mark.parametrize("every, init", [(1, "none"), (2, "none"), (1, "sjf")])
def test_rlscheduler_killed_and_resumed_writes_what_a_straight_run_does(tmp_path, monkeypatch,
                                                                         every, init):
    """Killed during epoch 2, then during epoch 4, then resumed: the same model.pt, log.csv and
    best.pt as the run that never stopped. The untrained policy's epoch-0 score is the best of
    all and is no candidate for best.pt (best.pt: epoch 4); a warm-started run's (init sjf) is
    (best.pt: epoch 0). With validation every second epoch the killed run had no best.pt yet."""
    monkeypatch.setattr(training.Validation, "score",
                        lambda self, model: PPO_SCORES[model.epoch])
    config = RLSchedulerConfig(**TINY, init=init, init_episodes=4, init_steps=5)
    options = dict(validate_every=every, validate_windows=1, validate_jobs=64, **QUIET)

    def run(out, resume):
        return training.train(config, out, 5, resume=resume, **options)

    run(tmp_path / "straight", False)
    assert load_checkpoint(tmp_path / "straight" / "best.pt")["epoch"] == (4 if init == "none"
                                                                           else 0)
    run_with_kills(monkeypatch, run, PPO, "_one_epoch", [1, 2], tmp_path / "killed")
    assert_same_run(tmp_path / "straight", tmp_path / "killed")


def test_rlscheduler_killed_between_best_and_model_writes_what_a_straight_run_does(
        tmp_path, monkeypatch):
    """The one moment two files are written for one epoch: best.pt of epoch 2 is on disk, model.pt
    still says epoch 1. The resumed run trains epoch 2 again and comes to the same files."""
    monkeypatch.setattr(training.Validation, "score",
                        lambda self, model: PPO_SCORES[model.epoch])
    options = dict(validate_every=1, validate_windows=1, validate_jobs=64, **QUIET)
    training.train(RLSchedulerConfig(**TINY), tmp_path / "straight", 3, **options)
    real = PPO.save

    def save(self, path):
        if Path(path).name == "model.pt" and self.epoch == 2:
            raise Killed
        real(self, path)

    with monkeypatch.context() as m:
        m.setattr(PPO, "save", save)
        with pytest.raises(Killed):
            training.train(RLSchedulerConfig(**TINY), tmp_path / "killed", 3, **options)
    assert load_checkpoint(tmp_path / "killed" / "best.pt")["epoch"] == 2
    assert load_checkpoint(tmp_path / "killed" / "model.pt")["epoch"] == 1
    training.train(RLSchedulerConfig(**TINY), tmp_path / "killed", 3, resume=True, **options)
    assert_same_run(tmp_path / "straight", tmp_path / "killed")


# -- inspector --------------------------------------------------------------------------------------
#: scripted validation improvements (higher is better); the untrained inspector's is the best
INSPECTOR_SCORES = {0: 0.9, 1: 0.1, 2: 0.5, 3: 0.3, 4: 0.6, 5: 0.2}


@pytest.mark.parametrize("every", [1, 2])
def test_inspector_killed_and_resumed_writes_what_a_straight_run_does(tmp_path, monkeypatch,
                                                                       every):
    monkeypatch.setattr(inspector_training.InspectorValidation, "score",
                        lambda self, model: INSPECTOR_SCORES[model.epoch])
    options = dict(validate_every=every, validate_windows=1, validate_jobs=64, **QUIET)

    def run(out, resume):
        return inspector_training.train(InspectorConfig(**TINY_INSPECTOR), out, 5,
                                        resume=resume, **options)

    run(tmp_path / "straight", False)
    assert load_checkpoint(tmp_path / "straight" / "best.pt")["epoch"] == 4
    run_with_kills(monkeypatch, run, PPO, "_one_epoch", [1, 2], tmp_path / "killed")
    assert_same_run(tmp_path / "straight", tmp_path / "killed")


# -- deeprm -----------------------------------------------------------------------------------------
class _Scored:
    def __init__(self, slowdown: float):
        self.slowdown = slowdown

    def metrics(self):
        return {"slowdown": self.slowdown, "completion": self.slowdown, "unfinished": 0}


DEEPRM_SCORES = {0: 1.0, 1: 9.0, 2: 5.0, 3: 7.0, 4: 3.0}


@pytest.mark.parametrize("init", ["none", "sjf"])
def test_deeprm_killed_mid_epoch_and_resumed_writes_what_a_straight_run_does(tmp_path,
                                                                              monkeypatch, init):
    """Killed in the middle of epoch 2 (one of its two updates done) and of epoch 4: the same
    files as a straight run. A warm start's epoch-0 validation is a candidate for best.pt."""
    monkeypatch.setattr(DeepRM, "evaluate",
                        lambda self, jobs, **kw: _Scored(DEEPRM_SCORES[self.epoch]))
    config = DeepRMConfig(**TINY_DEEPRM, init=init, init_passes=1)

    def run(out, resume):
        return deeprm_training.train(config, out, 4, resume=resume, **QUIET)

    run(tmp_path / "straight", False)
    assert load_checkpoint(tmp_path / "straight" / "best.pt")[
        "epoch"] == (4 if init == "none" else 0)
    run_with_kills(monkeypatch, run, DeepRM, "update", [3, 4], tmp_path / "killed")
    assert_same_run(tmp_path / "straight", tmp_path / "killed")


# -- dras -------------------------------------------------------------------------------------------
def busy_toy_trace():
    """A toy trace busy enough that the agents' picks (and their random draws) matter."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_dras_training import trace

    from hpcsched.sim.run import prepare

    return prepare(trace(per_day=300), "dras")


@pytest.fixture(scope="module")
def toy():
    return busy_toy_trace()


def dras_config(algo: str, **kw) -> dt.DrasRunConfig:
    settings = dict(algo=algo, trace="toy", curriculum="sampled:2,real:2", jobset_jobs=80,
                    train_days=5, validate_days=2, test_days=3, validate_first_days=0.5,
                    validate_every=1, seed=1,
                    agent={"fc1": 32, "fc2": 16, **({"replay": 300} if algo == "dql" else {})})
    return dt.DrasRunConfig(**{**settings, **kw})


@pytest.mark.parametrize("algo", ["pg", "dql"])
def test_dras_killed_and_resumed_writes_what_a_straight_run_does(tmp_path, monkeypatch, toy,
                                                                  algo):
    """Killed during episode 2 and during episode 3: the same files as a straight run, the
    agent's random draws and DRAS-DQL's replay memory carried over through model.pt."""
    monkeypatch.setattr(dt, "prepared_for", lambda config: toy)
    monkeypatch.setattr(dras_episode, "run_episode", Episodes.run_episode)

    def run(out, resume):
        return dt.train(dras_config(algo), out, resume=resume, **QUIET)

    run(tmp_path / "straight", False)
    run_with_kills(monkeypatch, run, Episodes, "learning", [1, 1], tmp_path / "killed")
    assert [r["episode"] for r in log_rows(tmp_path / "killed")] == ["1", "2", "3", "4"]
    assert_same_run(tmp_path / "straight", tmp_path / "killed")


# -- the run's options are kept, and a resume that would change them is refused --------------------
def test_resume_keeps_the_stored_validation_options(tmp_path, monkeypatch):
    seen = []
    real_init = training.Validation.__init__

    def init(self, config, windows, jobs, avoid="paper"):
        seen.append((windows, jobs))
        real_init(self, config, windows, jobs, avoid)

    monkeypatch.setattr(training.Validation, "__init__", init)
    monkeypatch.setattr(training.Validation, "score", lambda self, model: 1.0 + model.epoch)
    out = tmp_path / "run"
    training.train(RLSchedulerConfig(**TINY), out, 1, validate_every=1, validate_windows=2,
                   validate_jobs=64, **QUIET)
    stored = {"validate_every": 1, "validate_windows": 2, "validate_jobs": 64,
              "validate_avoid": "paper"}
    assert json.loads((out / "config.json").read_text())["run_options"] == stored
    # options left out: the stored ones (not train()'s defaults: every 5, 20 windows of 256)
    model = training.train(RLSchedulerConfig(**TINY), out, 3, resume=True, **QUIET)
    assert seen == [(2, 64), (2, 64)]
    assert [h["epoch"] for h in model.history if "val_bsld" in h] == [0, 1, 2, 3]
    assert load_checkpoint(out / "model.pt")["training"]["run"]["run_options"] == stored
    assert json.loads((out / "config.json").read_text())["run_options"] == stored
    # repeated as stored, and with another thread count (it does not shape the run): accepted
    model = training.train(RLSchedulerConfig(**{**TINY, "threads": 2}), out, 3, resume=True,
                           validate_windows=2, **QUIET)
    assert model.config.threads == 2


@pytest.mark.parametrize("config, options, named", [
    ({}, {"validate_windows": 3}, "validate_windows=2, not 3"),
    ({}, {"validate_every": 5}, "validate_every=1, not 5"),  # train()'s default, given
    ({}, {"validate_jobs": 1024}, "validate_jobs=64, not 1024"),
    ({}, {"validate_avoid": "none"}, "validate_avoid='paper', not 'none'"),
    ({"pi_lr": 1e-3}, {}, "pi_lr=0.0003, not 0.001"),
    ({"trace": "lublin-2"}, {}, "trace='lublin-1', not 'lublin-2'"),
])
def test_resume_refuses_a_change_of_the_run_naming_it(tmp_path, config, options, named):
    out = tmp_path / "run"
    training.train(RLSchedulerConfig(**TINY), out, 1, validate_every=1, validate_windows=2,
                   validate_jobs=64, **QUIET)
    before = {f: (out / f).read_bytes() for f in ("model.pt", "log.csv", "config.json")}
    with pytest.raises(ValueError) as info:
        training.train(RLSchedulerConfig(**{**TINY, **config}), out, 2, resume=True, **options, **QUIET)
    message = str(info.value)
    assert named in message and str(out / "model.pt") in message and "\n" not in message
    assert {f: (out / f).read_bytes() for f in before} == before  # nothing was touched
    with pytest.raises(TypeError, match="validate_window"):  # a misspelt option is no option
        training.train(RLSchedulerConfig(**TINY), out, 2, resume=True, validate_window=2, **QUIET)


def test_inspector_resume_keeps_its_options_and_refuses_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(inspector_training.InspectorValidation, "score",
                        lambda self, model: 0.1 * model.epoch)
    out = tmp_path / "run"
    inspector_training.train(InspectorConfig(**TINY_INSPECTOR), out, 1, validate_every=1,
                             validate_windows=1, validate_jobs=64, **QUIET)
    with pytest.raises(ValueError, match="validate_jobs=64, not 256"):
        inspector_training.train(None, out, 2, resume=True, validate_jobs=256, **QUIET)
    with pytest.raises(ValueError, match="base='sjf', not 'f1'"):
        inspector_training.train({"base": "f1"}, out, 2, resume=True, **QUIET)
    model = inspector_training.train(None, out, 3, resume=True, **QUIET)
    assert [h["epoch"] for h in model.history if "val_improvement" in h] == [0, 1, 2, 3]
    assert json.loads((out / "config.json").read_text())["run_options"] == {
        "validate_every": 1, "validate_windows": 1, "validate_jobs": 64}


def test_an_older_run_without_stored_options_resumes_with_the_given_ones(tmp_path):
    out = tmp_path / "run"
    training.train(RLSchedulerConfig(**TINY), out, 1, validate_every=0, **QUIET)
    ck = torch.load(out / "model.pt", weights_only=True)
    del ck["training"]["run"]["run_options"]  # as written before run options were kept
    torch.save(ck, out / "model.pt")
    said = []
    model = training.train(RLSchedulerConfig(**TINY), out, 2, resume=True, validate_every=0,
                           progress=False, log=said.append)
    assert any("does not record its validation options" in s for s in said)
    assert model.run_options["validate_every"] == 0 and model.epoch == 2


# -- the command line: "not given" is not "given the default" ---------------------------------------
def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err, *needles):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hpcsched: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_cli_rlscheduler_resume_keeps_the_run_and_refuses_changes(tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "rlscheduler", "--epochs", 1, "--out", out,
                           "--episode-jobs", 48, "--trajectories", 4, "--pi-iters", 3,
                           "--v-iters", 3, "--validate-every", 1, "--validate-windows", 1,
                           "--validate-jobs", 64, "--threads", 1)
    assert code == 0, err
    for argv, named in [(["--validate-every", 5], "validate_every=1, not 5"),
                        (["--validate-windows", 5], "validate_windows=1, not 5"),
                        (["--pi-lr", "0.001"], "pi_lr=0.0003, not 0.001"),
                        (["--episode-jobs", 256], "episode_jobs=48, not 256")]:
        code, _, err = run_cli(capsys, "train", "rlscheduler", "--out", out, "--epochs", 3,
                               "--resume", *argv)
        one_line_error(code, err, named)
    assert load_checkpoint(out / "model.pt")["epoch"] == 1
    # the README's command: the run's own settings, validation included
    code, _, err = run_cli(capsys, "train", "rlscheduler", "--out", out, "--epochs", 2,
                           "--resume")
    assert code == 0, err
    ck = load_checkpoint(out / "model.pt")
    assert ck["epoch"] == 2 and ck["config"]["trajectories_per_epoch"] == 4
    assert [h["epoch"] for h in ck["history"] if "val_bsld" in h] == [0, 1, 2]
    assert ck["training"]["run"]["run_options"] == {
        "validate_every": 1, "validate_windows": 1, "validate_jobs": 64, "validate_avoid": "paper"}
    # repeating a stored value, and another thread count: accepted
    code, _, err = run_cli(capsys, "train", "rlscheduler", "--out", out, "--epochs", 3,
                           "--resume", "--trajectories", 4, "--validate-jobs", 64,
                           "--threads", 2)
    assert code == 0, err
    assert load_checkpoint(out / "model.pt")["config"]["threads"] == 2


def test_cli_inspector_resume_refuses_a_change(tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "inspector", "--epochs", 1, "--out", out,
                           "--episode-jobs", 32, "--trajectories", 4, "--pi-iters", 3,
                           "--v-iters", 3, "--validate-every", 0, "--threads", 1)
    assert code == 0, err
    code, _, err = run_cli(capsys, "train", "inspector", "--out", out, "--epochs", 2, "--resume",
                           "--validate-every", 5)
    one_line_error(code, err, "validate_every=0, not 5")
    code, _, err = run_cli(capsys, "train", "inspector", "--out", out, "--epochs", 2, "--resume")
    assert code == 0, err
    assert load_checkpoint(out / "model.pt")["training"]["run"]["run_options"][
        "validate_every"] == 0


def test_cli_deeprm_resume_keeps_the_run_and_refuses_changes(tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "deeprm", "--load", 0.5, "--steps", 10, "--jobsets",
                           4, "--rollouts", 3, "--jobsets-per-update", 2, "--validate-jobsets",
                           3, "--epochs", 1, "--out", out)
    assert code == 0, err
    for argv, named in [(["--validate-jobsets", 50], "validate_jobsets=3, not 50"),
                        (["--load", 0.7], "load=0.5, not 0.7"),
                        (["--no-mask"], "mask_invalid=True, not False")]:
        code, _, err = run_cli(capsys, "train", "deeprm", "--out", out, "--epochs", 2,
                               "--resume", *argv)
        one_line_error(code, err, named)
    code, _, err = run_cli(capsys, "train", "deeprm", "--out", out, "--epochs", 2, "--resume",
                           "--threads", 2)
    assert code == 0, err
    ck = load_checkpoint(out / "model.pt")
    assert ck["epoch"] == 2 and ck["config"]["jobsets"] == 4 and ck["config"]["threads"] == 2


def test_cli_dras_resume_keeps_the_run_and_refuses_changes(tmp_path, capsys, monkeypatch, toy):
    monkeypatch.setattr(dt, "prepared_for", lambda config: toy)
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "dras", "--trace", "toy", "--curriculum", "real:1",
                           "--jobset-jobs", 60, "--train-days", 5, "--validate-days", 2,
                           "--test-days", 3, "--validate-first-days", 0.5, "--hidden", "16,8",
                           "--out", out)
    assert code == 0, err
    for argv, named in [(["--validate-every", 3], "validate_every=2, not 3"),
                        (["--lr", "0.01"], "agent.lr=0.0001, not 0.01"),
                        (["--hidden", "32,8"], "agent.fc1=16, not 32"),
                        (["--algo", "dql"], "algo='pg', not 'dql'")]:
        code, _, err = run_cli(capsys, "train", "dras", "--out", out, "--resume", *argv)
        one_line_error(code, err, named)
    # the stored settings, repeated or left out (gamma 0.6 is DRAS-PG's own default): accepted
    code, _, err = run_cli(capsys, "train", "dras", "--out", out, "--resume", "--gamma", "0.6",
                           "--hidden", "16,8", "--curriculum", "real:1", "--threads", 2)
    assert code == 0, err


# -- two trainings of one folder --------------------------------------------------------------------
HOLDER = """
import sys
from pathlib import Path
from hpcsched.experiments.runfolder import run_lock
with run_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()  # until the test lets go (or kills this process)
"""


@pytest.fixture
def other_training(tmp_path):
    """Another process holding the run folder tmp_path/run, as a training does."""
    env = dict(os.environ, PYTHONPATH=str(Path(hpcsched.__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "run")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdout.readline().strip() == b"held"
    yield proc
    proc.kill()
    proc.wait()


def start_each(kind: str, out: Path, monkeypatch, toy=None):
    if kind == "rlscheduler":
        return training.train(RLSchedulerConfig(**TINY), out, 1, validate_every=0, **QUIET)
    if kind == "inspector":
        return inspector_training.train(InspectorConfig(**TINY_INSPECTOR), out, 1,
                                        validate_every=0, **QUIET)
    if kind == "deeprm":
        return deeprm_training.train(DeepRMConfig(**TINY_DEEPRM), out, 1, **QUIET)
    monkeypatch.setattr(dt, "prepared_for", lambda config: toy)
    return dt.train(dras_config("pg", curriculum="real:1"), out, **QUIET)


@pytest.mark.parametrize("kind", ["rlscheduler", "inspector", "deeprm", "dras"])
def test_a_second_training_of_a_folder_in_use_is_refused(tmp_path, monkeypatch, toy,
                                                         other_training, kind):
    out = tmp_path / "run"
    with pytest.raises(RunInUseError) as info:
        start_each(kind, out, monkeypatch, toy)
    message = str(info.value)
    assert f"{out} is in use by another training (pid {other_training.pid})" in message
    assert "\n" not in message
    assert sorted(f.name for f in out.iterdir()) == [".lock"]  # nothing written
    # a training killed with SIGKILL leaves no stale lock: the folder is free at once
    other_training.kill()
    other_training.wait()
    start_each(kind, out, monkeypatch, toy)
    assert (out / "model.pt").exists()


def test_the_cli_refuses_a_folder_in_use_in_one_line(tmp_path, capsys, other_training):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "rlscheduler", "--epochs", 1, "--out", out,
                           "--episode-jobs", 48, "--trajectories", 4, "--validate-every", 0)
    one_line_error(code, err, f"is in use by another training (pid {other_training.pid})")
    code, _, err = run_cli(capsys, "train", "deeprm", "--epochs", 1, "--out", out)
    one_line_error(code, err, f"is in use by another training (pid {other_training.pid})")


def test_the_lock_is_held_through_the_run_and_let_go_however_it_ends(tmp_path, monkeypatch):
    out = tmp_path / "run"
    refused = []
    real = PPO._one_epoch

    def epoch(self):
        try:
            with run_lock(out):  # another open of the lock file: refused while train holds it
                pass
        except RunInUseError as e:
            refused.append(str(e))
        if self.epoch == 1:
            raise Killed
        return real(self)

    monkeypatch.setattr(PPO, "_one_epoch", epoch)
    with pytest.raises(Killed):
        training.train(RLSchedulerConfig(**TINY), out, 3, validate_every=0, **QUIET)
    assert len(refused) == 2 and f"(pid {os.getpid()})" in refused[0]
    with run_lock(out):  # the run died with an exception: the folder is free
        pass
    monkeypatch.setattr(PPO, "_one_epoch", real)
    training.train(RLSchedulerConfig(**TINY), out, 2, resume=True, **QUIET)
    with run_lock(out):
        pass


def test_a_run_that_fails_to_start_leaves_no_folder_behind(tmp_path):
    with pytest.raises(ValueError):
        training.train(RLSchedulerConfig(**TINY, reward_baseline="no-such-heuristic"), tmp_path / "run",
                       1, **QUIET)
    assert not (tmp_path / "run").exists()
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        training.train(None, tmp_path / "other", 1, resume=True, **QUIET)
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("kind", ["rlscheduler", "inspector", "deeprm", "dras"])
def test_cli_resume_refuses_a_damaged_model_in_one_line(tmp_path, capsys, monkeypatch, toy,
                                                        kind):
    out = tmp_path / "run"
    start_each(kind, out, monkeypatch, toy)
    data = (out / "model.pt").read_bytes()
    (out / "model.pt").write_bytes(data[:len(data) // 2])  # the disk filled up, say
    epochs = ["--epochs", 2] if kind != "dras" else []
    code, _, err = run_cli(capsys, "train", kind, "--out", out, "--resume", *epochs)
    one_line_error(code, err, str(out / "model.pt"), "is not an hpcsched model checkpoint (unreadable")


@pytest.mark.parametrize("kind, change", [
    ("rlscheduler", lambda ck: ck["config"].update(policy="mlp-v1")),
    ("inspector", lambda ck: ck["config"].update(features="paper")),
    ("deeprm", lambda ck: ck["config"].update(slots=11)),
    ("dras", lambda ck: ck["learner_config"].update(fc1=7)),
])
def test_cli_resume_refuses_a_model_whose_config_does_not_fit_its_weights(
        tmp_path, capsys, monkeypatch, toy, kind, change):
    out = tmp_path / "run"
    start_each(kind, out, monkeypatch, toy)
    ck = torch.load(out / "model.pt", weights_only=True)
    change(ck)
    torch.save(ck, out / "model.pt")
    epochs = ["--epochs", 2] if kind != "dras" else []
    code, _, err = run_cli(capsys, "train", kind, "--out", out, "--resume", *epochs)
    one_line_error(code, err, str(out / "model.pt"), "weights do not match its config")
