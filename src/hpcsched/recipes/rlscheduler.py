"""RLScheduler (Zhang et al., SC'20): a kernel network picks one of the first 128 waiting jobs,
trained with PPO on `hpcsched/PickJob-v0` (`agents/ppo.py`, `experiments/training.py`)."""

from __future__ import annotations

from hpcsched.envs import PICK_JOB
from hpcsched.recipes import Command, Evaluation, Recipe, Tiny, register

CLI = "hpcsched.cli.rlscheduler"


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The model at `path`, observing with the constants of the trace it schedules (as the
    authors' test script does), else with its training trace's."""
    from hpcsched.agents.rlscheduler_policy import load_policy
    from hpcsched.envs.cores_view import observed_norm

    norm = observed_norm(prepared) if prepared is not None else None
    return load_policy(path, sample=sample, seed=seed, name=name, norm=norm)


def tiny() -> Tiny:
    """The kernel network on 16 slots of 32-job Lublin-1 windows, two epochs of 4 episodes."""
    from hpcsched.agents.ppo import PPO
    from hpcsched.agents.rlscheduler import RLSchedulerConfig

    def make(env, seed: int) -> PPO:
        return PPO(RLSchedulerConfig(trace="lublin-1", episode_jobs=32, slots=16, n_envs=4,
                                     trajectories_per_epoch=4, pi_lr=3e-3, vf_lr=3e-3,
                                     train_pi_iters=10, train_v_iters=5, target_kl=0.05,
                                     seed=seed, threads=1))

    def in_memory(model: PPO, prepared, name: str):  # as `policy` loads it from its file
        from hpcsched.agents.rlscheduler_policy import RLPolicy

        return RLPolicy.of(model.policy, model.config, prepared.report.norm, name=name)

    return Tiny(env=dict(trace="lublin-1", episode_jobs=32, slots=16), make=make,
                learn=lambda model, env: model.learn(2), policy=in_memory, trace="lublin-1",
                start=2000, jobs=256)


RECIPE = register(Recipe(
    name="rlscheduler", prefix="rl", env_id=PICK_JOB,
    load="hpcsched.recipes.rlscheduler:policy", train="hpcsched.experiments.training:train",
    learners={"ppo": "hpcsched.agents.ppo:PPO"},
    shipped=None, title="RLScheduler models",
    usage="rl:PATH (a model file, or a run folder: its best.pt)",
    train_command=Command("rlscheduler", "RLScheduler (SC'20): PPO with the kernel network picks "
                                         "the next job",
                          f"{CLI}:add_train_arguments", f"{CLI}:cmd_train"),
    experiments=(
        Command("rlscheduler-table5", "bsld, mean over the paper's 10 windows x 1024 jobs (first "
                                      "10,000 jobs)",
                f"{CLI}:add_table5_arguments", f"{CLI}:cmd_experiment"),
        Command("rlscheduler-table7", "bsld of every trace's model on every trace (paper Table "
                                      "VII), 10 x 1024-job windows, rlscheduler profile",
                f"{CLI}:add_table7_arguments", f"{CLI}:cmd_experiment"),
        Command("rlscheduler-table8", "largest per-user mean bsld on HPC2N (paper Table VIII), 10 "
                                      "x 1024-job windows, rlscheduler profile",
                f"{CLI}:add_table8_arguments", f"{CLI}:cmd_experiment"),
        Command("rlscheduler-seeds", "Table V's and VIII's RLScheduler recipes over training "
                                     "seeds 0, 1, 2: each seed's best.pt (chosen on validation "
                                     "windows that share no job with these) on the paper's 10 x "
                                     "1024-job windows, rlscheduler profile",
                f"{CLI}:add_seeds_arguments", f"{CLI}:cmd_experiment"),
    ),
    evaluation=Evaluation("rlscheduler", f"{CLI}:evaluate", f"{CLI}:add_evaluate_arguments"),
    tiny="hpcsched.recipes.rlscheduler:tiny"))
