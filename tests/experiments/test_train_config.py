"""`hpcsched train ALGORITHM --config FILE`: options from a TOML or JSON file, the command line's
own overriding them, a bad file refused in one line naming the file and the key, and the same run
given by file or by options writing the same config.json. Tiny runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_run_folders import busy_toy_trace, one_line_error, run_cli

from hpcsched.modelfile import load_checkpoint
from hpcsched.cli import main
from hpcsched.experiments import dras_training as dt

#: each trainer's tiny run, as command-line options (--out and the rest aside)
OPTIONS = {
    "rlscheduler": ["--epochs", 1, "--episode-jobs", 48, "--trajectories", 4, "--pi-iters", 3,
                    "--v-iters", 3, "--pi-lr", "0.0005", "--validate-every", 0, "--threads", 1],
    "inspector": ["--epochs", 1, "--episode-jobs", 32, "--trajectories", 4, "--pi-iters", 3,
                  "--v-iters", 3, "--init-accept", "0.9", "--validate-every", 0,
                  "--threads", 1],
    "deeprm": ["--load", 0.5, "--steps", 10, "--jobsets", 4, "--rollouts", 3,
               "--jobsets-per-update", 2, "--validate-jobsets", 3, "--epochs", 1, "--no-mask"],
    "dras": ["--trace", "toy", "--curriculum", "real:1", "--jobset-jobs", 60, "--train-days", 5,
             "--validate-days", 2, "--test-days", 3, "--validate-first-days", 0.5,
             "--hidden", "16,8", "--lr", "0.002", "--persist"],
}
#: the same options as a config file's keys (dashes and underscores both)
FILES = {
    "rlscheduler": 'epochs = 1\nepisode-jobs = 48\ntrajectories = 4\npi_iters = 3\n'
                   'v-iters = 3\npi-lr = 5e-4\nvalidate_every = 0\nthreads = 1\n',
    "inspector": 'epochs = 1\nepisode_jobs = 32\ntrajectories = 4\npi-iters = 3\nv_iters = 3\n'
                 'init-accept = 0.9\nvalidate-every = 0\nthreads = 1\n',
    "deeprm": 'load = 0.5\nsteps = 10\njobsets = 4\nrollouts = 3\njobsets-per-update = 2\n'
              'validate_jobsets = 3\nepochs = 1\nno-mask = true\n',
    "dras": 'trace = "toy"\ncurriculum = "real:1"\njobset-jobs = 60\ntrain_days = 5\n'
            'validate-days = 2\ntest-days = 3\nvalidate_first_days = 0.5\nhidden = "16,8"\n'
            'lr = 0.002\npersist = true\n',
}


@pytest.fixture(scope="module")
def toy():
    return busy_toy_trace()


@pytest.fixture
def toy_dras(monkeypatch, toy):
    monkeypatch.setattr(dt, "prepared_for", lambda config: toy)


@pytest.mark.parametrize("kind", sorted(OPTIONS))
def test_the_same_run_by_file_or_by_options_writes_the_same_config(tmp_path, capsys, toy_dras,
                                                                   kind):
    code, _, err = run_cli(capsys, "train", kind, *OPTIONS[kind], "--out", tmp_path / "options")
    assert code == 0, err
    config = tmp_path / "run.toml"
    config.write_text(FILES[kind])
    code, _, err = run_cli(capsys, "train", kind, "--config", config, "--out", tmp_path / "file")
    assert code == 0, err
    by_options = (tmp_path / "options" / "config.json").read_text()
    assert (tmp_path / "file" / "config.json").read_text() == by_options
    # the file's values reached the trainer (not the defaults)
    stored = json.loads(by_options)
    assert {"rlscheduler": lambda: stored["pi_lr"] == 5e-4 and stored["episode_jobs"] == 48,
            "inspector": lambda: stored["init_accept"] == 0.9 and stored["episode_jobs"] == 32,
            "deeprm": lambda: stored["mask_invalid"] is False and stored["jobsets"] == 4,
            "dras": lambda: stored["persist"] is True and stored["agent"]["lr"] == 0.002,
            }[kind]()


def test_the_command_line_overrides_the_file_and_json_works_too(tmp_path, capsys):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"epochs": 2, "episode-jobs": 48, "trajectories": 4,
                                  "pi_iters": 3, "v-iters": 3, "validate-every": 0,
                                  "threads": 1, "seed": 7}))
    code, _, err = run_cli(capsys, "train", "rlscheduler", "--config", config, "--epochs", 1,
                           "--seed", 8, "--out", tmp_path / "run")
    assert code == 0, err
    ck = load_checkpoint(tmp_path / "run" / "model.pt")
    assert ck["epoch"] == 1 and ck["config"]["seed"] == 8  # the command line's
    assert ck["config"]["trajectories_per_epoch"] == 4  # the file's
    # a resumed run: the file's values are given options, repeated (accepted) or changed (refused)
    code, _, err = run_cli(capsys, "train", "rlscheduler", "--out", tmp_path / "run", "--resume",
                           "--config", config, "--seed", 8)
    assert code == 0, err
    assert load_checkpoint(tmp_path / "run" / "model.pt")["epoch"] == 2  # the file's epochs
    code, _, err = run_cli(capsys, "train", "rlscheduler", "--out", tmp_path / "run", "--resume",
                           "--config", config, "--epochs", 3)
    one_line_error(code, err, "seed=8, not 7")


@pytest.mark.parametrize("kind", sorted(OPTIONS))
def test_an_unknown_key_is_refused_naming_the_file_and_the_key(tmp_path, capsys, kind):
    config = tmp_path / "bad.toml"
    config.write_text("seed = 1\nvalidate-evry = 2\n")
    code, _, err = run_cli(capsys, "train", kind, "--config", config, "--out", tmp_path / "run")
    one_line_error(code, err, str(config), "unknown key 'validate-evry'",
                   f"hpcsched train {kind}")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text, needles", [
    ("epochs = \"3\"\n", ["key 'epochs'", "expected an integer, not '3'"]),
    ("epochs = 2.5\n", ["key 'epochs'", "expected an integer"]),
    ("epochs = 0\n", ["key 'epochs'", "at least 1"]),
    ("pi-lr = \"fast\"\n", ["key 'pi-lr'", "expected a number"]),
    ("pi_lr = -1\n", ["key 'pi_lr'", "greater than 0"]),
    ("metric = \"bslx\"\n", ["key 'metric'", "'bslx' is not one of bsld"]),
    ("trace = 3\n", ["key 'trace'", "expected a string"]),
    ("out = \"runs/x\"\n", ["key 'out'", "--out on the command line"]),
    ("resume = true\n", ["key 'resume'"]),
    ("pi-lr = 1e-3\npi_lr = 1e-3\n", ["key 'pi_lr'", "given twice"]),
    ("epochs = \n", ["not valid TOML"]),
])
def test_a_wrong_value_is_refused_in_one_line(tmp_path, capsys, text, needles):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    code, _, err = run_cli(capsys, "train", "rlscheduler", "--config", config, "--out",
                           tmp_path / "run")
    one_line_error(code, err, f"--config {config}: ", *needles)
    assert not (tmp_path / "run").exists()


def test_a_flag_takes_true_or_false_and_files_that_cannot_be_read_are_named(tmp_path, capsys):
    config = tmp_path / "bad.toml"
    config.write_text("no-mask = 1\n")
    code, _, err = run_cli(capsys, "train", "deeprm", "--config", config, "--out", tmp_path / "r")
    one_line_error(code, err, str(config), "key 'no-mask': expected true or false")
    missing = tmp_path / "missing.toml"
    code, _, err = run_cli(capsys, "train", "dras", "--config", missing, "--out", tmp_path / "r")
    one_line_error(code, err, f"--config {missing}: cannot read it")
    broken = tmp_path / "broken.json"
    broken.write_text('{"epochs": 1,')
    code, _, err = run_cli(capsys, "train", "inspector", "--config", broken, "--out",
                           tmp_path / "r")
    one_line_error(code, err, f"--config {broken}: not valid JSON")
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    code, _, err = run_cli(capsys, "train", "inspector", "--config", listed, "--out",
                           tmp_path / "r")
    one_line_error(code, err, str(listed), "expected a table of options")


@pytest.mark.parametrize("kind", sorted(OPTIONS))
def test_help_documents_the_config_file(capsys, kind):
    with pytest.raises(SystemExit):
        main(["train", kind, "--help"])
    help_text = capsys.readouterr().out
    assert "--config FILE" in help_text and "one line per epoch" in help_text
    assert "overrides the file's" in help_text
