"""A user's run folder written before the one model format (issue 15) keeps working: its files
(`hpcsched.ppo/1`, `hpcsched.deeprm/1`, `hpcsched.dras/1`, and their slim copies) load through the
one reader, upgraded as they are read, with a warning saying how to upgrade them on disk; a run
stopped half way resumes to the same files as a run of today's code that never stopped; and
``hpcsched upgrade-models`` rewrites them in the new format, every tensor kept.

tests/data/legacy/ was written by the code before the change (`make_legacy_runs.py`): tiny runs
of each learner killed after their first epoch (episode)."""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from hpcsched.modelfile import FORMAT, read_model
from hpcsched.cli import main as hpcsched
from hpcsched.modelfile.legacy import FORMATS, upgrade

LEGACY = Path(__file__).resolve().parents[1] / "data" / "legacy"
QUIET = dict(progress=False, log=lambda text: None)
#: folder -> (old format, recipe, learner)
RUNS = {"rlscheduler": ("hpcsched.ppo/1", "rlscheduler", "ppo"),
        "inspector": ("hpcsched.ppo/1", "schedinspector", "ppo"),
        "deeprm": ("hpcsched.deeprm/1", "deeprm", "reinforce"),
        "dras-pg": ("hpcsched.dras/1", "dras", "reinforce"),
        "dras-dql": ("hpcsched.dras/1", "dras", "dqn")}

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from test_run_folders import assert_same_run  # noqa: E402


def quietly(read, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read(*args, **kwargs)


def files() -> list[Path]:
    return sorted(LEGACY.rglob("*.pt"))


def test_the_fixtures_are_old_files():
    assert len(files()) == 14
    for path in files():
        assert torch.load(path, weights_only=True)["format"] in FORMATS, path


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_old_file_loads_through_the_one_reader_with_a_note(name):
    fmt, recipe, learner = RUNS[name]
    paths = [LEGACY / name / "model.pt", LEGACY / "slim" / f"{name}.pt"]
    for path in paths:
        assert torch.load(path, weights_only=True)["format"] == fmt
        with pytest.warns(UserWarning, match=rf"old format {fmt}: .*`hpcsched upgrade-models "
                                             rf"{path}`"):
            ck = read_model(path)
        assert (ck["format"], ck["recipe"], ck["learner"]) == (FORMAT, recipe, learner)
    full, slim = (quietly(read_model, p) for p in paths)
    assert "training" in full and "training" not in slim


def test_an_old_slim_copy_decides_as_its_source():
    """Each old slim copy, read through the legacy reader, schedules as the file it was made from,
    by each recipe's own policy loader."""
    from hpcsched.agents.rlscheduler_policy import load_policy
    from hpcsched.agents.deeprm_policy import load_deeprm_policy
    from hpcsched.agents.inspector_policy import load_inspector
    from hpcsched.experiments.deeprm import evaluate
    from hpcsched.experiments.dras_training import load_agent
    from hpcsched.sim.run import prepare, simulate

    prep = prepare("lublin-1", "rlscheduler")
    for name, load, src in (("rlscheduler", load_policy, "best.pt"),
                            ("inspector", load_inspector, "model.pt")):
        a, b = (simulate(prep, quietly(load, p), start=1000, jobs=128).start
                for p in (LEGACY / name / src, LEGACY / "slim" / f"{name}.pt"))
        np.testing.assert_array_equal(a, b)
    policies = [quietly(load_deeprm_policy, p) for p in (LEGACY / "deeprm" / "best.pt",
                                                         LEGACY / "slim" / "deeprm.pt")]
    a, b = (evaluate(p, 0.5, jobsets=3, steps=10, batch=p.config.batch()).job_records()
            for p in policies)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    for algo in ("pg", "dql"):
        (full, _), (slim, _) = (quietly(load_agent, p) for p in (
            LEGACY / f"dras-{algo}" / "best.pt", LEGACY / "slim" / f"dras-{algo}.pt"))
        obs = np.random.default_rng(0).random((5, full.rows, 2)).astype(np.float32)
        mask = np.ones(full.config.window, dtype=bool)
        assert [full.predict(o, mask) for o in obs] == [slim.predict(o, mask) for o in obs]
        assert full.updates == slim.updates > 0


def _toy(monkeypatch):
    from test_dras_training import trace

    from hpcsched.experiments import dras_training as dt
    from hpcsched.sim.run import prepare

    toy = prepare(trace(per_day=300), "dras")
    monkeypatch.setattr(dt, "prepared_for", lambda config: toy)


def _straight(name: str, out: Path, ck: dict, monkeypatch) -> None:
    """The old run's config trained from scratch by today's code, to the end."""
    from hpcsched.agents.deeprm import DeepRMConfig
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.agents.rlscheduler import RLSchedulerConfig
    from hpcsched.experiments import deeprm, dras_training, inspector_training, training

    options = ck.get("training", {}).get("run", {}).get("run_options", {})
    if name == "rlscheduler":
        training.train(RLSchedulerConfig.from_dict(ck["config"]), out, 2, **options, **QUIET)
    elif name == "inspector":
        inspector_training.train(InspectorConfig.from_dict(ck["config"]), out, 2, **options,
                                 **QUIET)
    elif name == "deeprm":
        deeprm.train(DeepRMConfig(**ck["config"]), out, 2, **QUIET)
    else:
        _toy(monkeypatch)
        dras_training.train(dras_training.DrasRunConfig.from_dict(ck["config"]), out, **QUIET)


def _resumed(name: str, out: Path, monkeypatch) -> None:
    from hpcsched.experiments import deeprm, dras_training, inspector_training, training

    if name == "rlscheduler":
        training.train(None, out, 2, resume=True, **QUIET)
    elif name == "inspector":
        inspector_training.train(None, out, 2, resume=True, **QUIET)
    elif name == "deeprm":
        deeprm.train(None, out, 2, resume=True, **QUIET)
    else:
        _toy(monkeypatch)
        dras_training.train(None, out, resume=True, **QUIET)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_old_run_resumes_as_a_run_of_todays_code_that_never_stopped(tmp_path, monkeypatch,
                                                                        name):
    """The old folder, stopped after its first epoch, resumed by today's code: the same model.pt
    (every tensor), log.csv and best.pt as today's code training the same config straight (the
    folders as recorded on this kind of CPU: `cpu_fixtures.recorded_fixture`)."""
    from cpu_fixtures import recorded_fixture

    old = tmp_path / "old"
    shutil.copytree(recorded_fixture(LEGACY) / name, old)
    ck = quietly(read_model, old / "model.pt")
    assert ck["epoch"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _resumed(name, old, monkeypatch)
        _straight(name, tmp_path / "new", ck, monkeypatch)
    assert torch.load(old / "model.pt", weights_only=True)["format"] == FORMAT  # rewritten
    assert quietly(read_model, old / "model.pt")["epoch"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_run(tmp_path / "new", old)


def _leaves(value, where=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{where}.{k}" if where else str(k))
    else:
        yield where, value


def test_the_upgrade_command_rewrites_old_files_keeping_every_tensor(tmp_path, capsys):
    folder = tmp_path / "legacy"
    shutil.copytree(LEGACY, folder)
    before = {p: torch.load(p, weights_only=True) for p in sorted(folder.rglob("*.pt"))}
    assert hpcsched(["upgrade-models", str(folder)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 14 and all(" -> hpcsched.model/2 (" in line for line in said)
    for path, old in before.items():
        raw = torch.load(path, weights_only=True)
        assert raw["format"] == FORMAT
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            new = read_model(path)
        want = dict(_leaves({**upgrade(old), "version": new["version"]}))
        got = dict(_leaves(new))
        assert want.keys() == got.keys(), path
        for k, v in want.items():
            assert (torch.equal(v, got[k]) if isinstance(v, torch.Tensor) else v == got[k]), k
        tensors = [v for v in got.values() if isinstance(v, torch.Tensor)]
        for where, v in _leaves(old):
            if isinstance(v, torch.Tensor) and not (old.get("agent", {}).get("slim")
                                                    and where == "rng.torch"):
                assert any(t.dtype == v.dtype and torch.equal(t, v) for t in tensors), where
    assert hpcsched(["upgrade-models", str(folder)]) == 0  # again: nothing left to do
    assert all("left as it is" in line for line in capsys.readouterr().out.splitlines())


def test_an_old_file_that_is_not_what_its_format_wrote_is_refused_in_one_line(tmp_path):
    from hpcsched.modelfile import ModelFileError

    ck = torch.load(LEGACY / "deeprm" / "model.pt", weights_only=True)
    del ck["np_rng"]
    torch.save(ck, tmp_path / "odd.pt")
    with pytest.raises(ModelFileError, match=r"odd\.pt: a model file of the old format "
                                             r"hpcsched\.deeprm/1 that cannot be read "
                                             r"\(KeyError: 'np_rng'\)"):
        read_model(tmp_path / "odd.pt")
