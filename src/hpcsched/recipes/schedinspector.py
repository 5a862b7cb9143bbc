"""SchedInspector (Zhang et al., HPDC'22): a network accepts or rejects the pick of a base
heuristic, trained with PPO on `hpcsched/Inspect-v0` (`agents/inspector.py`,
`experiments/inspector_training.py`).

``inspect:PATH`` wraps the base heuristic the model was trained with, ``inspect:PATH@BASE``
another; ``inspect:reject-unfit@BASE`` is a fixed rule in the inspector's place, for reference:
reject the proposed job exactly when it does not fit in the free nodes now. A model runs under the
profile it was trained with (the fixed rule: schedinspector)."""

from __future__ import annotations

from hpcsched.envs import INSPECT
from hpcsched.recipes import Command, Evaluation, Recipe, Rule, Tiny, register

CLI = "hpcsched.cli.inspector"


def _checked(name: str, base: str, prepared) -> None:
    from hpcsched.policies.priority import get_policy

    if base:
        get_policy(base)  # an unknown base fails here with the list of heuristics
    if prepared is not None and not prepared.profile.commit:
        raise ValueError(f"{name}: an inspector delays the base heuristic's committed pick, which "
                         f"needs commit semantics; use --profile schedinspector or leave "
                         f"--profile out (not {prepared.profile.name})")


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The inspector at `path` around base heuristic `option` (default: its own)."""
    from hpcsched.agents.inspector_policy import load_inspector

    _checked(name, option, prepared)
    norm = prepared.report.norm if prepared is not None else None
    profile = prepared.profile if prepared is not None else None
    return load_inspector(path, base=option or None, norm=norm, sample=sample, seed=seed,
                          name=name, profile=profile)


def reject_unfit(prepared, *, option: str, seed: int, sample: bool, name: str):
    """The fixed rule around base heuristic `option`."""
    from hpcsched.agents.inspector_policy import InspectedPolicy, reject_unfit as decide
    from hpcsched.policies.priority import get_policy

    _checked(name, option, prepared)
    if not option:
        raise ValueError(f"{name}: name the base heuristic, e.g. inspect:reject-unfit@sjf")
    norm = prepared.report.norm if prepared is not None else None
    profile = prepared.profile if prepared is not None else None
    return InspectedPolicy(None, get_policy(option, profile=profile or "schedinspector"),
                           norm or {}, decide=decide, name=name)


def trained_profile(path) -> str:
    """The profile the model at `path` was trained under."""
    from hpcsched.agents.inspector_policy import load_inspector_checkpoint

    return load_inspector_checkpoint(path)["config"].get("profile", "schedinspector")


def tiny() -> Tiny:
    """An inspector around SJF on 32-job Lublin-1 windows, six epochs of 16 episodes (at a rate
    that changes its mind in so few)."""
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.agents.ppo import PPO

    def make(env, seed: int) -> PPO:
        return PPO(InspectorConfig(trace="lublin-1", episode_jobs=32, n_envs=16,
                                   trajectories_per_epoch=16, pi_lr=3e-2, vf_lr=1e-2,
                                   train_pi_iters=20, train_v_iters=5, target_kl=1.0,
                                   seed=seed, threads=1))

    def in_memory(model: PPO, prepared, name: str):  # as `policy` loads it from its file
        from hpcsched.agents.inspector_policy import InspectedPolicy
        from hpcsched.policies.priority import get_policy

        base = get_policy(model.config.base, profile=prepared.profile)
        return InspectedPolicy.of(model.policy, base, prepared.report.norm, model.config,
                                  name=name)

    return Tiny(env=dict(trace="lublin-1", episode_jobs=32), make=make,
                learn=lambda model, env: model.learn(6), policy=in_memory, trace="lublin-1",
                start=2000, jobs=256)


RECIPE = register(Recipe(
    name="schedinspector", prefix="inspect", env_id=INSPECT,
    load="hpcsched.recipes.schedinspector:policy",
    train="hpcsched.experiments.inspector_training:train",
    learners={"ppo": "hpcsched.agents.ppo:PPO"},
    shipped=("inspect-",), profile="schedinspector",
    profile_of="hpcsched.recipes.schedinspector:trained_profile", separator="@",
    rules=(Rule("reject-unfit", "hpcsched.recipes.schedinspector:reject_unfit",
                "reject-unfit@BASE", "a fixed rule for reference: reject exactly the proposals "
                "that do not fit"),),
    title="SchedInspector models (run under the profile they were trained with, unless --profile "
          "says otherwise; the shipped ones: schedinspector-paper)",
    usage="inspect:PATH[@BASE]",
    train_command=Command("inspector", "SchedInspector (HPDC'22): PPO learns to accept or reject "
                                       "a base heuristic's pick",
                          f"{CLI}:add_train_arguments", f"{CLI}:cmd_train"),
    experiments=(
        Command("schedinspector-table4", "SchedInspector's Table 4/5: base heuristics with and "
                                         "without their inspector",
                f"{CLI}:add_table4_arguments", f"{CLI}:cmd_experiment"),
        Command("schedinspector-seeds", "every shipped inspector recipe over training seeds 0, 1, "
                                        "2 (both protocols)",
                f"{CLI}:add_seeds_arguments", f"{CLI}:cmd_seeds"),
    ),
    evaluation=Evaluation("schedinspector", f"{CLI}:evaluate",
                          f"{CLI}:add_evaluate_arguments"),
    tiny="hpcsched.recipes.schedinspector:tiny"))
