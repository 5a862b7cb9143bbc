"""DeepRM (Mao et al., HotNets'16): a network places jobs on a grid of time x resource units,
trained with REINFORCE on `hpcsched/DeepRM-v0` (`agents/reinforce.py`, `experiments/deeprm.py`).
Under the discrete-time profiles (deeprm, deeprm-unbounded) every policy name is DeepRM's: its
models and its heuristics (sjf, packer, tetris[:KNOB], random)."""

from __future__ import annotations

from hpcsched.envs import DEEPRM
from hpcsched.recipes import Command, Evaluation, Recipe, register

CLI = "hpcsched.cli.deeprm"


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The model at `path` (it observes its grid, whatever the trace)."""
    from hpcsched.agents.deeprm_policy import load_deeprm_policy

    return load_deeprm_policy(path, sample=sample, seed=seed, name=name)


RECIPE = register(Recipe(
    name="deeprm", prefix="deeprm", env_id=DEEPRM,
    load="hpcsched.recipes.deeprm:policy", train="hpcsched.experiments.deeprm:train",
    shipped=("deeprm-",), heuristics="hpcsched.policies.deeprm:get_grid_policy",
    heuristic_help="hpcsched.policies.deeprm:DESCRIPTIONS",
    title="under --profile deeprm (discrete time, several resources)",
    usage="deeprm:PATH",
    train_command=Command("deeprm", "DeepRM (HotNets'16): REINFORCE on cluster images, "
                                    "multi-resource packing",
                          f"{CLI}:add_train_arguments", f"{CLI}:cmd_train"),
    experiments=(
        Command("deeprm-load-sweep", "slowdown vs load for SJF, Packer, Tetris*, Random and "
                                     "DeepRM (paper Fig. 4), and what DeepRM learned (Fig. 7)",
                f"{CLI}:add_sweep_arguments", f"{CLI}:cmd_sweep"),
        Command("deeprm-seeds", "the shipped DeepRM models (loads 70%, 110%, 150%) over training "
                                "seeds 0, 1, 2, against SJF, Packer and Tetris*",
                f"{CLI}:add_seeds_arguments", f"{CLI}:cmd_seeds"),
    ),
    evaluation=Evaluation("deeprm", f"{CLI}:evaluate", f"{CLI}:add_evaluate_arguments")))
