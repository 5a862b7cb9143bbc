"""The command line generated from the registry of learned schedulers (`hpcsched.recipes`):
`train`, `experiment` and `evaluate` list every recipe's commands, a recipe registered from
outside appears under them with no edit to `hpcsched.cli`, its code is imported only when one of
its commands is chosen (listing and heuristics import no torch), and `evaluate` scores a model of
each of the four families as that family's experiment does, from a shipped file or a run folder
(its best.pt)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hpcsched import recipes
from hpcsched.cli import main
from hpcsched.recipes import PRETRAINED, Command, Evaluation, Recipe

ROOT = Path(__file__).resolve().parent.parent

#: every train and experiment command before the registry generated them
TRAIN = ["rlscheduler", "inspector", "dras", "deeprm", "dbf", "herasched"]
EXPERIMENTS = ["rlscheduler-table5", "rlscheduler-table7", "rlscheduler-table8",
               "rlscheduler-seeds", "schedinspector-table4", "schedinspector-seeds", "dras",
               "dras-seeds", "dras-curriculum", "deeprm-load-sweep", "deeprm-seeds",
               "dbf-baselines", "dbf-window-sweep", "herasched", "herasched-grid"]


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # --help
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def listed(text: str) -> list[str]:
    """The subcommands a `--help` lists (the lines under its positional argument)."""
    names = []
    for line in text.split("positional arguments:")[1].split("options:")[0].splitlines()[2:]:
        if line.startswith("    ") and not line.startswith("     "):
            names.append(line.split()[0])
    return names


# -- train and experiment, from the registry --------------------------------------------------------
def test_train_and_experiment_list_every_recipes_commands(capsys):
    code, out, _ = run(capsys, "train", "--help")
    assert code == 0 and listed(out) == TRAIN
    assert [r.train_command.name for r in recipes.recipes()] == TRAIN
    code, out, _ = run(capsys, "experiment", "--help")
    assert code == 0 and listed(out) == EXPERIMENTS
    assert "loads 70%, 110%, 150%" in out  # a plain-text help with '%' in it
    for name in TRAIN:
        code, out, _ = run(capsys, "train", name, "--help")
        assert code == 0 and "--config FILE" in out and "\nProgress:" in out and "examples:" in out
    for name in EXPERIMENTS:
        code, out, _ = run(capsys, "experiment", name, "--help")
        assert code == 0 and f"usage: hpcsched experiment {name}" in out


def test_a_train_or_experiment_command_left_out_shows_the_list(capsys):
    code, out, _ = run(capsys, "train")
    assert code == 2 and listed(out) == TRAIN
    code, err = run(capsys, "train", "nope")[::2]
    assert code == 2 and err.count("\n") == 1 and "'nope'" in err and "rlscheduler" in err


TOY_CALLS: list = []


def toy_train_arguments(p):
    p.epilog = "examples:\n  hpcsched train toy --out runs/toy --size 5\n"
    p.add_argument("--out", required=True, help="the run's folder")
    p.add_argument("--size", type=int, default=3, help="how big the toy is")
    p.add_argument("--shiny", action="store_true")


def toy_train(args):
    from hpcsched.cli.common import option_values

    TOY_CALLS.append(("train", args.out, option_values(args, given_only=False)))
    return 0


def toy_table_arguments(p):
    from hpcsched.cli.common import add_format_options

    p.description = "The toy's table."
    add_format_options(p)
    p.add_argument("--rows", type=int, default=2)


def toy_table(args):
    TOY_CALLS.append(("table", args.name, args.rows, args.fmt))
    return 0


def toy_evaluate_arguments(p):
    g = p.add_argument_group("Toy models (toy:)", "scored on nothing at all")
    g.add_argument("--colour", help="the toy's colour")


def toy_evaluate(path, checkpoint, args):
    TOY_CALLS.append(("evaluate", path, checkpoint["config"], args.colour))
    return 0


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(recipes, "_REGISTRY", dict(recipes._REGISTRY))
    TOY_CALLS.clear()
    here = __name__
    return recipes.register(Recipe(
        name="toy", prefix="toy", env_id="hpcsched/PickJob-v0", load="toy.models:unused",
        train_command=Command("toy", "a toy that learns 100% of nothing",
                              f"{here}:toy_train_arguments", f"{here}:toy_train"),
        experiments=(Command("toy-table", "the toy's table", f"{here}:toy_table_arguments",
                             f"{here}:toy_table"),),
        evaluation=Evaluation("toy.format/1", f"{here}:toy_evaluate",
                              f"{here}:toy_evaluate_arguments")))


def test_a_new_recipe_appears_under_train_experiment_and_evaluate(toy, capsys, tmp_path):
    code, out, _ = run(capsys, "train", "--help")
    assert listed(out) == [*TRAIN, "toy"] and "a toy that learns 100% of nothing" in out
    code, out, _ = run(capsys, "experiment", "--help")
    assert listed(out)[-2:] == ["toy-table", "herasched-grid"] and "the toy's table" in out
    code, out, _ = run(capsys, "train", "toy", "--help")
    assert "--size SIZE" in out and "--config FILE" in out and "\nProgress:" in out
    code, out, _ = run(capsys, "evaluate", "--help")
    assert "Toy models (toy:):\n  scored on nothing at all" in out and "--colour" in out

    # train: its options, from a --config file too, the command line's winning
    config = tmp_path / "toy.toml"
    config.write_text("size = 7\nshiny = true\n")
    assert run(capsys, "train", "toy", "--config", config, "--out", "o", "--size", "9")[0] == 0
    assert TOY_CALLS.pop() == ("train", "o", {"size": 9, "shiny": True})
    assert run(capsys, "train", "toy", "--out", "o")[0] == 0
    assert TOY_CALLS.pop() == ("train", "o", {"size": 3, "shiny": False})
    config.write_text("colour = 'red'\n")
    code, _, err = run(capsys, "train", "toy", "--config", config, "--out", "o")
    assert code == 2 and "unknown key 'colour'" in err and err.count("\n") == 1

    # experiment
    assert run(capsys, "experiment", "toy-table", "--rows", 5, "--json")[0] == 0
    assert TOY_CALLS.pop() == ("table", "toy-table", 5, "json")

    # evaluate: a file of its kind, found by the locator (a run folder: its best.pt)
    import torch

    from hpcsched import __version__

    folder = tmp_path / "run"
    folder.mkdir()
    torch.save({"format": "toy.format/1", "version": __version__, "config": {"size": 4}},
               folder / "best.pt")
    (folder / "model.pt").write_bytes(b"not read: the run's best.pt is")
    assert run(capsys, "evaluate", folder, "--colour", "blue")[0] == 0
    assert TOY_CALLS.pop() == ("evaluate", folder / "best.pt", {"size": 4}, "blue")
    # its option is refused for another recipe's model, another's for its model
    code, _, err = run(capsys, "evaluate", "pretrained/hpc2n-bsld", "--colour", "red")
    assert code == 2 and err.count("\n") == 1
    assert "--colour: " in err and "is not a toy model (toy:); it is rlscheduler's (rl:)" in err
    code, _, err = run(capsys, "evaluate", folder, "--base", "sjf")
    assert code == 2 and "--base: " in err and "it is toy's (toy:)" in err and not TOY_CALLS


def test_a_recipe_cannot_take_a_command_name_already_taken(monkeypatch):
    monkeypatch.setattr(recipes, "_REGISTRY", dict(recipes._REGISTRY))
    taken = Command("dras", "again", "m:f", "m:g")
    with pytest.raises(ValueError, match="`hpcsched train dras` is dras's already"):
        recipes.register(Recipe(name="x", prefix="x", env_id="e", load="m:f",
                                train_command=taken))
    with pytest.raises(ValueError, match="`hpcsched experiment dras` is dras's already"):
        recipes.register(Recipe(name="x", prefix="x", env_id="e", load="m:f",
                                experiments=(taken,)))
    with pytest.raises(ValueError, match="kind 'dras' are dras's already"):
        recipes.register(Recipe(name="x", prefix="x", env_id="e", load="m:f",
                                evaluation=Evaluation("dras", "m:f")))
    assert [r.prefix for r in recipes.recipes()] == ["rl", "inspect", "dras", "deeprm", "dbf",
                                                     "herasched"]


# -- what --help imports ----------------------------------------------------------------------------
LIGHT = [["--help"], ["train", "--help"], ["train", "rlscheduler", "--help"],
         ["train", "dras", "--help"], ["train", "deeprm", "--help"], ["experiment", "--help"],
         ["experiment", "dras", "--help"], ["evaluate", "--help"], ["policies"],
         ["simulate", "lublin-1", "--policy", "sjf", "--jobs", "50"]]


def test_help_listing_and_heuristics_import_no_torch():
    """Each command in a fresh interpreter: torch stays out, and listing the commands imports
    none of the families' command modules."""
    code = ("import contextlib, io, sys\n"
            "from hpcsched.cli import main\n"
            "argv = sys.argv[1:]\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            "        code = main(argv)\n"
            "    except SystemExit as e:\n"
            "        code = e.code\n"
            "families = sorted(m for m in sys.modules if m in ('hpcsched.cli.rlscheduler', "
            "'hpcsched.cli.inspector', 'hpcsched.cli.dras', 'hpcsched.cli.deeprm', "
            "'hpcsched.cli.herasched'))\n"
            "print(code, 'torch' in sys.modules, ','.join(families))\n")
    for argv in LIGHT:
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                              text=True, cwd=ROOT, check=True)
        status, torch, families = (proc.stdout.split() + [""])[:3]
        assert (status, torch) == ("0", "False"), (argv, proc.stdout, proc.stderr)
        if argv in (["--help"], ["train", "--help"], ["experiment", "--help"], ["policies"]):
            assert families == "", (argv, families)  # listed, not imported
        if argv == ["train", "rlscheduler", "--help"]:
            assert families == "hpcsched.cli.rlscheduler"  # only the one chosen


def test_python_dash_m_hpcsched_is_the_command():
    proc = subprocess.run([sys.executable, "-m", "hpcsched", "--help"], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: hpcsched")
    assert "evaluate" in proc.stdout and "experiment" in proc.stdout


def test_train_rlscheduler_starts_from_a_run_folders_best_pt(capsys, tmp_path):
    """--init model:PATH finds its file as every model is found (a run folder: its best.pt)."""
    start = tmp_path / "start"
    start.mkdir()
    shutil.copy(PRETRAINED / "lublin-1-bsld.pt", start / "best.pt")
    (start / "model.pt").write_bytes(b"not a model: only best.pt may be read")
    out = tmp_path / "run"
    code, printed, err = run(capsys, "train", "rlscheduler", "--init", f"model:{start}",
                             "--epochs", 1, "--episode-jobs", 32, "--trajectories", 2,
                             "--pi-iters", 1, "--v-iters", 1, "--validate-every", 0,
                             "--threads", 1, "--out", out)
    assert code == 0, err
    assert json.loads((out / "config.json").read_text())["init"] == f"model:{start / 'best.pt'}"
    code, _, err = run(capsys, "train", "rlscheduler", "--init", f"model:{tmp_path / 'none'}",
                       "--out", tmp_path / "other")
    assert code == 2 and "no model file at" in err and err.count("\n") == 1
    assert not (tmp_path / "other").exists()


def test_every_help_example_shows_its_line_breaks():
    """An example broken over lines in a help text keeps its `\\` (a lone backslash at the end of
    a line in the source string joins the lines instead: `... best.pt      --out ...`), and the
    line after one is the command's continuation, indented."""
    import argparse
    import re

    from hpcsched.cli import build_parser

    def walk(parser, path):
        parser.filled()
        yield path, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}")

    seen = 0
    for path, parser in walk(build_parser(), "hpcsched"):
        lines = (parser.epilog or "").splitlines()
        for i, line in enumerate(lines):
            assert not re.search(r"\S {4,}--", line), f"`{path} --help`: joined lines: {line!r}"
            if line.endswith("\\"):
                seen += 1
                assert i + 1 < len(lines) and lines[i + 1].startswith("   "), (path, line)
    assert seen >= 5  # the walk reached the commands' examples
