"""DeepRM (Mao et al., HotNets'16): a network places jobs on a grid of time x resource units,
trained with REINFORCE on `hpcsched/DeepRM-v0` (`agents/reinforce.py`, `experiments/deeprm.py`).
Under the discrete-time profiles (deeprm, deeprm-unbounded) every policy name is DeepRM's: its
models and its heuristics (sjf, packer, tetris[:KNOB], random)."""

from __future__ import annotations

from hpcsched.envs import DEEPRM
from hpcsched.recipes import Command, Evaluation, Recipe, Tiny, register

CLI = "hpcsched.cli.deeprm"


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The model at `path` (it observes its grid, whatever the trace)."""
    from hpcsched.agents.deeprm_policy import load_deeprm_policy

    return load_deeprm_policy(path, sample=sample, seed=seed, name=name)


def tiny() -> Tiny:
    """The paper's grid and network on 10-step jobsets: two epochs of two jobsets x 4 rollouts,
    run through `simulate` on a Lublin-1 window mapped into the grid."""
    from hpcsched.agents.deeprm import DeepRM, DeepRMConfig

    def make(env, seed: int) -> DeepRM:
        return DeepRM(DeepRMConfig(steps=10, jobsets=2, rollouts=4, jobsets_per_update=1,
                                   lr=1e-2, validate_jobsets=0, seed=seed))

    def predict(model: DeepRM, image, mask) -> int:  # the learner takes a batch of flat images
        return int(model.predict(image.reshape(1, -1), mask[None])[0])

    return Tiny(env=dict(steps=10), make=make, learn=lambda model, env: model.learn(2),
                policy=lambda model, prepared, name: model.policy(name=name), predict=predict,
                trace="lublin-1", start=2000, jobs=128, profile="deeprm")


RECIPE = register(Recipe(
    name="deeprm", prefix="deeprm", env_id=DEEPRM,
    load="hpcsched.recipes.deeprm:policy", train="hpcsched.experiments.deeprm:train",
    learners={"reinforce": "hpcsched.agents.deeprm:DeepRM"},
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
    evaluation=Evaluation("deeprm", f"{CLI}:evaluate", f"{CLI}:add_evaluate_arguments"),
    tiny="hpcsched.recipes.deeprm:tiny"))
