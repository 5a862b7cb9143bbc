"""The contract every registered learned scheduler keeps (DESIGN decision 13), checked on the tiny
learners its recipe names (`Recipe.tiny`, `hpcsched.recipes.Tiny`). The cases come from
`recipes.recipes()`, so a recipe registered later (a plugin's too) is covered as soon as it is:

1. its environment, ``gymnasium.make(recipe.env_id, ...)``, passes gymnasium's `check_env`;
2. a few learning steps change some of the learner's greedy choices (so that 3 and 4 can see a
   model that was not kept);
3. saved and loaded again (`save` and the learner class's `load` only: the file's format is the
   learners' business), it predicts what it predicted on the same observations, and its networks
   (the torch modules it holds) have the same weights;
4. its model file runs through ``hpcsched simulate TRACE --policy PREFIX:PATH`` under the profile
   the command line chooses for it, to another schedule than the file of the same learner before
   it learnt, and to exactly the schedule of the learner in memory as its training's validation
   runs it (`Tiny.policy`): the policy reads all of the file's weights.

`check_contract` is also what tests a recipe outside the package (tests/recipes/test_example.py).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hpcsched import recipes
from hpcsched.recipes import Recipe, Tiny, tiny_learners

#: observations compared, each with a choice between at least two actions
OBSERVATIONS = 64


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def observations(env, n: int = OBSERVATIONS, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """`n` (observation, mask) pairs of `env`'s episodes under random valid actions, each with at
    least two valid actions (a forced choice tells no learner from another)."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(50 * n):
        mask = np.asarray(info["action_mask"], dtype=bool)
        if mask.sum() >= 2:
            seen.append((np.array(obs, copy=True), mask.copy()))
            if len(seen) == n:
                return seen
        obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated or truncated:
            obs, info = env.reset()
    raise AssertionError(f"{env}: fewer than {n} decisions with a choice in {50 * n} steps")


def simulate(recipe: Recipe, tiny: Tiny, path: Path, records: Path) -> tuple[dict, str]:
    """``hpcsched simulate`` of the model file at `path` on the tiny learner's window: (its JSON
    row, its per-job records as CSV text)."""
    from hpcsched.cli import main

    argv = ["simulate", tiny.trace, "--policy", f"{recipe.prefix}:{path}", "--start",
            str(tiny.start), "--jobs", str(tiny.jobs), "--backfill", tiny.backfill, "--json",
            "--records", str(records)]
    if tiny.profile is not None:
        argv += ["--profile", tiny.profile]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, f"hpcsched {' '.join(argv)}: {err.getvalue()}"
    return json.loads(out.getvalue()), records.read_text()


def networks(learner) -> dict[str, object]:
    """The torch modules a learner holds as attributes (its networks), by attribute name: what a
    save and load must give back, whatever the file looks like."""
    from torch import nn

    return {k: v for k, v in vars(learner).items() if isinstance(v, nn.Module)}


def differing_weights(a, b) -> list[str]:
    """The names of the networks' tensors (parameters and buffers) that differ from `a` to `b`."""
    import torch

    ours, theirs = networks(a), networks(b)
    differ = sorted(set(ours) ^ set(theirs))
    for name in set(ours) & set(theirs):
        x, y = ours[name].state_dict(), theirs[name].state_dict()
        differ += [f"{name}.{k}" for k in sorted(set(x) | set(y))
                   if k not in x or k not in y or not torch.equal(x[k], y[k])]
    return differ


def starts(prepared, policy, tiny: Tiny):
    from hpcsched.sim.run import simulate as run

    result = run(prepared, policy, backfill=tiny.backfill, start=tiny.start, jobs=tiny.jobs)
    return result.records()["start"]


def check_contract(recipe: Recipe, tiny: Tiny, folder: Path) -> dict:
    """Check the contract (the module's docstring) for one tiny learner of `recipe`, its files
    written in `folder`. Returns the trained model's `simulate` row."""
    from hpcsched.experiments.policyspec import model_profiles, resolve_policy
    from hpcsched.sim.run import prepare

    what = f"{recipe.name}{' ' + tiny.name if tiny.name else ''}"
    made = gymnasium.make(recipe.env_id, **tiny.env)
    check_env(made.unwrapped, skip_render_check=True)
    env = made.unwrapped
    seen = observations(env)

    def choices(learner) -> list[int]:
        return [tiny.act(learner, obs, mask) for obs, mask in seen]

    # 2. learning changes choices
    learner = tiny.make(env, 0)
    before = choices(learner)
    assert all(mask[a] for a, (_, mask) in zip(before, seen)), f"{what}: an invalid action"
    untrained = tiny.save_model(learner, folder / "untrained.pt")
    tiny.learn(learner, env)
    after = choices(learner)
    assert after != before, (f"{what}: a few learning steps changed none of its {len(seen)} "
                             f"greedy choices; its tiny settings must learn more (a larger rate), "
                             f"or a model that was not kept cannot be told apart")

    # 3. saved and loaded, the same learner
    trained = tiny.save_model(learner, folder / "trained.pt")
    loaded = tiny.load_model(trained, learner)
    assert choices(loaded) == after, f"{what}: saved and loaded, it predicts otherwise"
    differ = differing_weights(learner, loaded)
    assert not differ, f"{what}: saved and loaded, its networks differ in {', '.join(differ)}"

    # 4. the model file on the command line, scheduling as the learner does
    row, schedule = simulate(recipe, tiny, trained, folder / "trained.csv")
    spec = f"{recipe.prefix}:{trained}"
    assert row["policy"] == spec
    assert row["profile"] == (tiny.profile or model_profiles([spec]).get(spec, "standard"))
    assert simulate(recipe, tiny, untrained, folder / "untrained.csv")[1] != schedule, \
        (f"{what}: the model files before and after learning scheduled the window alike: "
         f"does its policy read the file's weights?")
    prepared = prepare(tiny.trace, row["profile"])
    np.testing.assert_array_equal(
        starts(prepared, resolve_policy(spec, prepared), tiny),
        starts(prepared, tiny.policy(learner, prepared, spec), tiny),
        err_msg=f"{what}: its model file schedules otherwise than the learner it was saved from")
    return row


CASES = [(recipe, tiny) for recipe in recipes.recipes() for tiny in tiny_learners(recipe)]


def test_every_recipe_names_its_tiny_learners():
    missing = [r.name for r in recipes.recipes() if not tiny_learners(r)]
    assert not missing, f"recipes without tiny learners (Recipe.tiny): {', '.join(missing)}"
    for recipe in recipes.recipes():
        names = [t.name for t in tiny_learners(recipe)]
        assert len(set(names)) == len(names), f"{recipe.name}: two tiny learners named alike"


@pytest.mark.parametrize("recipe, tiny", CASES,
                         ids=[f"{r.prefix}{'-' + t.name if t.name else ''}" for r, t in CASES])
def test_a_recipes_learner_keeps_the_contract(recipe, tiny, tmp_path):
    check_contract(recipe, tiny, tmp_path)
