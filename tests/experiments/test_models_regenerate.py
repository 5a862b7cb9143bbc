"""MODELS.md's training commands regenerate the shipped RLScheduler and SchedInspector files at
HEAD, bit for bit.

The check trains the cheapest shipped model's documented command (its seed's run) up to the epoch
its best.pt was saved at, and compares the regenerated best.pt with the shipped file entry by
entry (`same_model`): recipe, learner, config, normalisation and epoch equal; every tensor of both
networks and both optimisers' states equal to the bit; the history's logged values equal, timings
aside. Not the file's bytes: a model file also holds the package version and the random states of
the process that wrote it, and the shipped files were converted to the one model format after they
were trained (`tests/agents/test_model_format.py` checks that conversion changed no tensor). A run
stopped at epoch E is the same run as the full one up to E (nothing in PPO depends on the total),
so this checks the command without paying for its last epochs. Slow: a few minutes on one core.
"""

from __future__ import annotations

import re
import shlex

import pytest
import torch

from hpcsched.modelfile import load_checkpoint
from hpcsched.experiments.policyspec import PRETRAINED

#: the cheapest shipped recipe (HPC2N: short queues, 3-4 s epochs; its best.pt is at epoch 4)
NAME = "hpc2n-bsld"
#: the cheapest shipped inspector whose best.pt is not its first validation (about a minute)
INSPECTOR = "inspect-ctc-sp2-f1-backfill"


def _command(name: str, family: str = "rlscheduler") -> list[str]:
    """The training command MODELS.md gives for `name`'s shipped seed, as argv after `hpcsched`
    (a command written for seeds S = 0, 1, 2 gets the shipped file's seed)."""
    text = (PRETRAINED / "MODELS.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith(f"| {name} |"))
    cmd = re.search(rf"`hpcsched (train {family} [^`]*)`", row)
    assert cmd, f"MODELS.md's row for {name} has no training command"
    argv = shlex.split(cmd.group(1))
    seed = str(load_checkpoint(PRETRAINED / f"{name}.pt")["config"]["seed"])
    return [seed if a == "S" else a.replace("-sS", f"-s{seed}") for a in argv]


@pytest.mark.slow
@pytest.mark.parametrize("name,family", [(NAME, "rlscheduler"), (INSPECTOR, "inspector")])
def test_the_documented_command_regenerates_the_shipped_file(tmp_path, name, family):
    from hpcsched.cli import main

    shipped = load_checkpoint(PRETRAINED / f"{name}.pt")
    argv = _command(name, family)
    assert f"--seed {shipped['config']['seed']}" in " ".join(argv), "the row names another seed"
    argv[argv.index("--epochs") + 1] = str(shipped["epoch"])
    argv[argv.index("--out") + 1] = str(tmp_path / "run")
    assert main(argv) == 0
    same_model(load_checkpoint(tmp_path / "run" / "best.pt"), shipped)


#: metrics added to every metrics dict since the shipped files were trained (`sim.metrics`: Wang's
#: Ch. 3, as tests/agents/test_ppo_pins.py says)
NEW_METRICS = {"queue_length", "job_load"}


def same_tensors(a, b, where: str) -> None:
    assert a.keys() == b.keys(), where
    for k, v in a.items():
        if isinstance(v, dict):
            same_tensors(v, b[k], f"{where}.{k}")
        elif isinstance(v, torch.Tensor):
            assert v.dtype == b[k].dtype and torch.equal(v, b[k]), f"{where}.{k}"
        else:
            assert v == b[k], f"{where}.{k}"


def same_model(again: dict, shipped: dict) -> None:
    """The regenerated model file is the shipped one (see the module's docstring)."""
    for key in ("recipe", "learner", "config", "learner_config", "norm", "epoch"):
        assert again[key] == shipped[key], key
    same_tensors(again["weights"], shipped["weights"], "weights")
    same_tensors(again["training"]["optimizers"], shipped["training"]["optimizers"],
                 "optimizers")

    def logged(history):
        return [{k: v for k, v in h.items() if not k.endswith("_s") and k not in NEW_METRICS}
                for h in history]

    # the Ch. 3 queue metrics (issue 16) joined every metrics dict after the shipped files were
    # trained: new keys, and (timings aside) only those; every logged value is unchanged
    added = ({k for h in again["history"] for k in h if not k.endswith("_s")}
             - {k for h in shipped["history"] for k in h})
    assert added <= NEW_METRICS, added
    assert logged(again["history"]) == logged(shipped["history"])


def test_the_documented_command_is_the_shipped_config():
    """Cheap half of the check (default suite): the command's options are the shipped file's
    config, so the slow test above runs the recipe that was shipped."""
    from hpcsched.cli import build_parser

    shipped = load_checkpoint(PRETRAINED / f"{NAME}.pt")["config"]
    args = build_parser().parse_args(_command(NAME))
    assert args.trace == shipped["trace"] and args.metric == shipped["metric"]
    assert args.backfill == shipped["backfill"] and args.seed == shipped["seed"]
    assert args.pi_lr == shipped["pi_lr"] and args.init == shipped["init"]
    assert args.reward_baseline == shipped["reward_baseline"]


@pytest.mark.parametrize("name", sorted(p.stem for p in PRETRAINED.glob("inspect-*.pt")))
def test_each_inspector_command_is_the_shipped_config(name):
    """Every shipped inspector's MODELS.md command, with its shipped seed, parses to the file's
    own training settings."""
    from hpcsched.cli import build_parser
    from hpcsched.cli.common import option_values

    shipped = load_checkpoint(PRETRAINED / f"{name}.pt")["config"]
    values = option_values(build_parser().parse_args(_command(name, "inspector")),
                           given_only=False)
    for key in ("trace", "base", "metric", "backfill", "profile", "reward", "seed", "pi_lr",
                "init_rule"):
        assert values[key] == shipped[key], (name, key, values[key], shipped[key])
