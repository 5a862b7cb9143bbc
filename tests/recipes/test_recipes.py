"""The registry of learned schedulers (`hpcsched.recipes`): the four recipes and their entry points,
every shipped model resolved through it scheduling as its family's own loader does, the one
model-file locator (a run folder is its best.pt), unknown names, and a new recipe registered from
outside."""

import shutil
import subprocess
import sys
from functools import lru_cache
from types import SimpleNamespace

import numpy as np
import pytest

from hpcsched import recipes
from hpcsched.experiments.policyspec import (listing, model_profiles, pretrained_models,
                                             resolve_policy)
from hpcsched.recipes import PRETRAINED, Recipe, locate

PREFIXES = ["rl", "inspect", "dras", "deeprm", "dbf", "herasched"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- the registry ----------------------------------------------------------------------------------
def test_the_registry_holds_the_six_learned_schedulers_with_their_envs():
    import gymnasium

    from hpcsched import envs

    assert [r.prefix for r in recipes.recipes()] == PREFIXES
    assert [r.name for r in recipes.recipes()] == ["rlscheduler", "schedinspector", "dras",
                                                    "deeprm", "dbf", "herasched"]
    ids = {r.prefix: r.env_id for r in recipes.recipes()}
    assert ids == {"rl": envs.PICK_JOB, "inspect": envs.INSPECT, "dras": envs.DRAS,
                   "deeprm": envs.DEEPRM, "dbf": envs.DBF, "herasched": envs.HERASCHED}
    assert all(i in gymnasium.registry for i in ids.values())
    assert recipes.get("inspect").name == "schedinspector"
    assert recipes.discrete_recipe() is recipes.get("deeprm")


def test_every_entry_point_imports():
    for recipe in recipes.recipes():
        commands = [recipe.train_command, *recipe.experiments]
        refs = [recipe.load, recipe.train, recipe.profile_of, recipe.heuristics,
                *(rule.entry for rule in recipe.rules),
                *(ref for c in commands for ref in (c.arguments, c.run)),
                recipe.evaluation.run, recipe.evaluation.arguments, recipe.tiny]
        for ref in filter(None, refs):
            assert callable(recipes.entry(ref)), ref
        assert recipe.train is not None  # all have a trainer
    assert recipes.entry(recipes.get("deeprm").heuristic_help)["packer"]
    assert recipes.entry("hpcsched.experiments.dras_training:train").__name__ == "train"


def test_listing_recipes_or_resolving_a_heuristic_imports_no_network_code():
    code = ("import sys\n"
            "from hpcsched.experiments.policyspec import listing, model_profiles, "
            "resolve_policy\n"
            "resolve_policy('sjf'); listing(); model_profiles(['dras:x', 'rl:y', 'sjf'])\n"
            "assert resolve_policy('tetris:0.3', discrete=True).name.startswith('tetris')\n"
            "loaded = [m for m in sys.modules if m == 'torch' or m.startswith('hpcsched.agents')"
            " or m.startswith('hpcsched.experiments.')"
            " and m != 'hpcsched.experiments.policyspec']\n"
            "print(loaded)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_shipped_models_are_grouped_by_prefix():
    everyone = recipes.shipped_models()
    groups = {p: pretrained_models(p) for p in PREFIXES}
    assert sorted(n for g in groups.values() for n in g) == everyone  # each in exactly one group
    assert "hpc2n-bsld" in groups["rl"] and "inspect-lublin-1-sjf" in groups["inspect"]
    assert {"dras-pg-ricc", "decima-pg-ricc"} <= set(groups["dras"])
    assert "deeprm-load-70" in groups["deeprm"]
    assert all(n.startswith(("dras-", "decima-")) for n in groups["dras"])
    assert pretrained_models() == groups["rl"]
    assert pretrained_models("inspect-") == groups["inspect"]
    text = "\n".join(listing())
    for prefix, names in groups.items():
        assert all(f"  {prefix}:pretrained/{n}\n" in text + "\n" for n in names)
    assert "  inspect:reject-unfit@BASE (" in text and "  packer" in text


# -- every shipped model, through the registry and through its family's own loader ---------------
@lru_cache(maxsize=None)
def _prepared(trace, profile):
    from hpcsched.sim.run import prepare

    return prepare(trace, profile)


def _direct_rl(path, name):
    """RLScheduler's loader on another trace than most were trained on: its constants."""
    from hpcsched.agents.rlscheduler_policy import load_policy
    from hpcsched.sim.run import simulate

    p = _prepared("lublin-1", "rlscheduler")
    policy = resolve_policy(name, p)
    theirs = simulate(p, load_policy(path, name=name, norm=p.report.norm), start=3000, jobs=96)
    return policy, simulate(p, policy, start=3000, jobs=96).start, theirs.start


def _direct_inspect(path, name):
    from hpcsched.agents.inspector_policy import load_inspector
    from hpcsched.sim.run import simulate

    p = _prepared("lublin-1", model_profiles([name])[name])
    policy = resolve_policy(name, p)
    theirs = simulate(p, load_inspector(path, norm=p.report.norm, name=name, profile=p.profile),
                      start=3000, jobs=96)
    return policy, simulate(p, policy, start=3000, jobs=96).start, theirs.start


def _direct_dras(path, name):
    from hpcsched.agents.dras_policy import DrasPolicy
    from hpcsched.experiments.dras_training import load_agent
    from hpcsched.sim.factory import make_engine

    agent, config = load_agent(path)
    p = _prepared(config.trace, "dras")
    jobs = p.jobs.window(len(p.jobs) // 2, 96)
    backfill = "none" if name.startswith("dras:pretrained/decima") else "easy"
    run = (lambda policy: make_engine(jobs, p.cluster, p.profile, backfill).run(policy).start)
    policy = resolve_policy(name, p)
    return policy, run(policy), run(DrasPolicy(agent, config, p, name))


def _direct_deeprm(path, name):
    from hpcsched.agents.deeprm_policy import load_deeprm_policy
    from hpcsched.experiments.deeprm import evaluate

    def starts(policy):
        return evaluate(policy, 1.1, jobsets=2).job_records()["start"]

    policy = resolve_policy(name, discrete=True)
    return policy, starts(policy), starts(load_deeprm_policy(path, name=name))


def _direct_dbf(path, name):
    from hpcsched.agents.dbf import load_dbf
    from hpcsched.sim.run import simulate

    p = _prepared("lublin-1", "standard")
    policy = resolve_policy(name, p)
    theirs = simulate(p, load_dbf(path, prepared=p, name=name), start=3000, jobs=96)
    return policy, simulate(p, policy, start=3000, jobs=96).start, theirs.start


def _direct_herasched(path, name):
    """On the generated high-load day of the Deeplearn partition (the stand-in of `None`), the
    first 200 jobs."""
    from hpcsched.agents.herasched_policy import load_herasched
    from hpcsched.envs.herasched import as_herasched_trace
    from hpcsched.sim.run import simulate

    p = as_herasched_trace(None, "spartan-deeplearn")
    policy = resolve_policy(name, p)
    theirs = simulate(p, load_herasched(path, name=name), start=0, jobs=200)
    return policy, simulate(p, policy, start=0, jobs=200).start, theirs.start


DIRECT = {"rl": _direct_rl, "inspect": _direct_inspect, "dras": _direct_dras,
          "deeprm": _direct_deeprm, "dbf": _direct_dbf, "herasched": _direct_herasched}
SHIPPED = [(p, n) for p in PREFIXES for n in pretrained_models(p)]


@pytest.mark.parametrize("prefix, model", SHIPPED, ids=[f"{p}:{n}" for p, n in SHIPPED])
def test_a_shipped_model_resolves_and_schedules_as_its_own_loader(prefix, model):
    name = f"{prefix}:pretrained/{model}"
    path = locate(f"pretrained/{model}", recipes.get(prefix))
    assert path == PRETRAINED / f"{model}.pt"
    policy, ours, theirs = DIRECT[prefix](path, name)
    assert policy.name == name and len(ours) > 0
    np.testing.assert_array_equal(ours, theirs)


def test_a_shipped_models_name_and_options_reach_its_loader():
    p = _prepared("lublin-1", "schedinspector-paper")
    spec = "inspect:pretrained/inspect-lublin-1-sjf@f1"
    policy = resolve_policy(spec, p)
    assert policy.name == spec and policy.base.name == "f1"
    assert resolve_policy("inspect:pretrained/inspect-lublin-1-sjf", p).base.name == "sjf"
    # under another profile than its own, the base is named as that profile reads it
    from hpcsched.policies.priority import get_policy

    other = resolve_policy("inspect:pretrained/inspect-lublin-1-sjf",
                           _prepared("lublin-1", "schedinspector")).base
    assert other == get_policy("sjf", profile="schedinspector")
    assert other != get_policy("sjf", profile="schedinspector-paper")
    rule = resolve_policy("inspect:reject-unfit@wfp3", p)
    assert rule.name == "inspect:reject-unfit@wfp3" and rule.base.name == "wfp3"
    with pytest.raises(ValueError, match="name the base heuristic"):
        resolve_policy("inspect:reject-unfit", p)
    with pytest.raises(ValueError, match="commit semantics"):
        resolve_policy(spec, _prepared("lublin-1", "standard"))
    assert resolve_policy("rl:pretrained/hpc2n-bsld").name == "rl:pretrained/hpc2n-bsld"


def test_the_profile_a_model_runs_under_comes_from_its_recipe():
    specs = ["inspect:pretrained/inspect-lublin-1-sjf", "inspect:reject-unfit@sjf",
             "dras:pretrained/decima-pg-ricc", "dras:not/even/a/file", "rl:pretrained/hpc2n-bsld",
             "deeprm:pretrained/deeprm-load-70", "sjf"]
    assert model_profiles(specs) == {  # the inspector's own record, not the recipe's default
        "inspect:pretrained/inspect-lublin-1-sjf": "schedinspector-paper",
        "inspect:reject-unfit@sjf": "schedinspector", "dras:pretrained/decima-pg-ricc": "dras",
        "dras:not/even/a/file": "dras"}


def test_under_a_discrete_profile_the_names_are_deeprms():
    from hpcsched.policies.deeprm import ShortestJobFirst, TetrisStar
    from hpcsched.policies.priority import StaticPriority
    from hpcsched.sim.profiles import get_profile

    grid = SimpleNamespace(profile=get_profile("deeprm"))
    assert isinstance(resolve_policy("sjf", grid), ShortestJobFirst)
    assert isinstance(resolve_policy("sjf"), StaticPriority)
    assert isinstance(resolve_policy("tetris:0.3", grid), TetrisStar)
    assert resolve_policy("deeprm:pretrained/deeprm-load-70").name == \
        "deeprm:pretrained/deeprm-load-70"  # its models, under any profile
    with pytest.raises(ValueError, match="for the deeprm profile"):
        resolve_policy("rl:pretrained/hpc2n-bsld", grid)


# -- the locator -----------------------------------------------------------------------------------
def test_a_run_folder_is_its_best_pt(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(PRETRAINED / "hpc2n-bsld.pt", run / "best.pt")
    (run / "model.pt").write_bytes(b"not a model: only best.pt may be read")
    assert locate(run) == run / "best.pt"
    assert resolve_policy(f"rl:{run}").name == f"rl:{run}"  # loads, so best.pt was read
    assert capsys.readouterr().err == ""
    assert locate(run / "model.pt") == run / "model.pt"  # a file is itself


def test_a_run_without_best_pt_falls_back_to_model_pt_and_says_so(tmp_path, capsys):
    run = tmp_path / "early"
    run.mkdir()
    shutil.copy(PRETRAINED / "inspect-lublin-1-sjf.pt", run / "model.pt")
    assert resolve_policy(f"inspect:{run}@f1").base.name == "f1"
    err = capsys.readouterr().err
    assert f"{run} has no best.pt yet" in err and "model.pt" in err and err.count("\n") == 1
    assert locate(run) == run / "model.pt" and capsys.readouterr().err == ""  # said once
    (run / "model.pt").unlink()
    with pytest.raises(ValueError, match=r"no model file in .*early: neither best\.pt nor model"):
        locate(run)


def test_the_experiments_folders_of_models_use_the_locator(tmp_path):
    from hpcsched.experiments import dras, schedinspector
    from hpcsched.experiments.deeprm import model_loads
    from hpcsched.experiments.rlscheduler import model_spec

    for name in ("hpc2n-bsld", "inspect-hpc2n-sjf", "dras-pg-ricc", "deeprm-load-70"):
        (tmp_path / name).mkdir()
        shutil.copy(PRETRAINED / f"{name}.pt", tmp_path / name / "model.pt")
    assert model_spec("hpc2n-bsld", tmp_path) == f"rl:{tmp_path / 'hpc2n-bsld' / 'model.pt'}"
    assert schedinspector.model_file("inspect-hpc2n-sjf", tmp_path) == \
        tmp_path / "inspect-hpc2n-sjf" / "model.pt"
    assert dras.model_file("dras-pg", "ricc", "capability", tmp_path) == \
        tmp_path / "dras-pg-ricc" / "model.pt"
    assert model_loads(tmp_path) == {0.7: tmp_path / "deeprm-load-70" / "model.pt"}
    shutil.copy(PRETRAINED / "deeprm-load-70.pt", tmp_path / "deeprm-load-70" / "best.pt")
    assert model_loads(tmp_path) == {0.7: tmp_path / "deeprm-load-70" / "best.pt"}
    assert schedinspector.model_file("inspect-hpc2n-sjf") == PRETRAINED / "inspect-hpc2n-sjf.pt"
    with pytest.raises(ValueError, match="no dras-pg model for hpc2n"):
        dras.model_file("dras-pg", "hpc2n", "capability", tmp_path)


# -- unknown names ---------------------------------------------------------------------------------
def test_an_unknown_prefix_is_one_line_naming_the_known_ones(capsys):
    from hpcsched.cli import main

    with pytest.raises(ValueError, match=r"'rlx:'.*known: rl:, inspect:, dras:, deeprm:") as e:
        resolve_policy("rlx:pretrained/hpc2n-bsld")
    assert "\n" not in str(e.value)
    assert main(["simulate", "lublin-1", "--policy", "nope:x", "--jobs", "10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'nope:x'" in err and "inspect:, dras:, deeprm:" in err


def test_an_unknown_pretrained_name_lists_its_recipes_models():
    with pytest.raises(ValueError, match="no pretrained model 'dras-pg-mars'") as e:
        resolve_policy("dras:pretrained/dras-pg-mars", _prepared("ricc", "dras"))
    assert "dras-pg-ricc" in str(e.value) and "decima-pg-ricc" in str(e.value)
    assert "hpc2n-bsld," not in str(e.value) and "inspect-" not in str(e.value)


# -- a recipe registered from outside --------------------------------------------------------------
def toy_policy(path, prepared, *, option, seed, sample, name):
    """The toy recipe's loader: a stand-in remembering what it was given."""
    return SimpleNamespace(name=name, given=(path, prepared, option, seed, sample, name))


def toy_profile(path):
    return "rlscheduler" if path.read_bytes() == b"trained under rlscheduler" else "standard"


def test_a_new_recipe_makes_its_prefix_resolvable(tmp_path, monkeypatch):
    monkeypatch.setattr(recipes, "_REGISTRY", dict(recipes._REGISTRY))
    monkeypatch.setattr(recipes, "PRETRAINED", tmp_path / "shipped")
    (tmp_path / "shipped").mkdir()
    (tmp_path / "shipped" / "toy-small.pt").write_bytes(b"trained under rlscheduler")
    (tmp_path / "shipped" / "plain.pt").write_bytes(b"")
    toy = recipes.register(Recipe(
        name="toy", prefix="toy", env_id="hpcsched/PickJob-v0", load=f"{__name__}:toy_policy",
        shipped=("toy-",), profile_of=f"{__name__}:toy_profile", separator="+",
        title="Toy models", usage="toy:PATH[+OPTION]"))
    assert recipes.register(toy) is toy  # the same again: a no-op
    with pytest.raises(ValueError, match="is toy's already"):
        recipes.register(Recipe(name="other", prefix="toy", env_id="x", load="m:f"))

    run = tmp_path / "run"
    run.mkdir()
    (run / "best.pt").write_bytes(b"")
    policy = resolve_policy(f"toy:{run}+fast", seed=3, sample=True)
    assert policy.given == (run / "best.pt", None, "fast", 3, True, f"toy:{run}+fast")
    shipped = resolve_policy("toy:pretrained/toy-small").given[0]
    assert shipped == tmp_path / "shipped" / "toy-small.pt"
    assert model_profiles(["toy:pretrained/toy-small", f"toy:{run}"]) == {
        "toy:pretrained/toy-small": "rlscheduler", f"toy:{run}": "standard"}
    assert pretrained_models("toy") == ["toy-small"] and pretrained_models() == ["plain"]
    assert "Toy models: toy:PATH[+OPTION], or a shipped one:\n  toy:pretrained/toy-small" in \
        "\n".join(listing())
    with pytest.raises(ValueError, match="shipped models \\(toy:\\): toy-small$"):
        resolve_policy("toy:pretrained/toy-big")
    with pytest.raises(ValueError, match="known: rl:, inspect:, dras:, deeprm:, dbf:, herasched:, toy:"):
        resolve_policy("toys:x")
