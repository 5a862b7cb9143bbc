"""`train herasched --imitate RULES` (`agents.herasched_imitation`): the agents are taught a fixed
rule's choices before the first update. The rules' demonstrations are what the rules decide (the
selector's first allowed slot is the oldest job that fits; the allocator's targets are the
heuristic's nodes not yet chosen); the fitting learns a choice and a set of right choices alike;
an imitated allocator places as best-fit does on episodes it never saw, where an untrained one
does not; and the command validates the imitated model before the first update."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.herasched import HeraSched, HeraSchedConfig
from hpcsched.agents.herasched_imitation import (demonstrate, first_fit, fit, imitate,
                                                 parse_rules)
from hpcsched.envs.herasched import ALLOCATOR, SELECTOR
from hpcsched.sim.factory import resolve_allocator

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = dict(window=16, tail=4, episode_jobs=200, num_envs=2, update_every=128,
             selector_every=32, allocator_every=10, minibatch=64, update_epochs=1)


def test_the_rules_are_named_selector_plus_allocator():
    assert parse_rules("first-fit+best-fit") == ("first-fit", "best-fit")
    assert parse_rules("First-Fit+Topology") == ("first-fit", "topology")
    assert parse_rules("first-fit", place_with="best-fit") == ("first-fit", None)
    with pytest.raises(ValueError, match="selector's rule must be one of first-fit, not 'sjf'"):
        parse_rules("sjf+best-fit")
    # the allocator agent is trained: its rule is required, and must be a heuristic allocator
    with pytest.raises(ValueError, match="name the heuristic it imitates: first-fit\\+NAME"):
        parse_rules("first-fit")
    with pytest.raises(ValueError, match="first-fit\\+NAME, NAME one of topology, best-fit"):
        parse_rules("first-fit+hpcsim-best-fit")
    # behind a heuristic allocator the allocator agent is not trained: nothing for it to imitate
    with pytest.raises(ValueError, match="with --allocator best-fit the allocator agent is not "
                                         "trained"):
        parse_rules("first-fit+best-fit", place_with="best-fit")


def test_the_demonstrations_are_what_the_rules_decide():
    config = HeraSchedConfig(**SMALL)
    env = config.make_env()
    demos = demonstrate(env, "best-fit", decisions=300, stride=3, seed=5)
    obs, mask, target = demos.arrays(SELECTOR)
    assert len(target) == 300 and (obs[:, -1] == 0).all()  # the selector's observations
    assert all(t == first_fit(m) and m[t] for m, t in zip(mask, target))
    obs, mask, target = demos.arrays(ALLOCATOR)
    assert (obs[:, -1] > 0).all() and (target & ~mask).sum() == 0 and target.any(1).all()
    # a job's steps: its target nodes shrink by one node per step, the chosen one
    sizes = target.sum(1)
    assert (sizes >= 1).all() and (sizes > 1).any()
    for k in np.flatnonzero(sizes[:-1] > 1):
        assert sizes[k + 1] == sizes[k] - 1 and (target[k + 1] <= target[k]).all()
    # the same seed demonstrates the same; refused where the allocator agent does not act
    again = demonstrate(config.make_env(), "best-fit", decisions=300, stride=3, seed=5)
    assert np.array_equal(again.arrays(ALLOCATOR)[2], target)
    placed = HeraSchedConfig(**SMALL, place_with="best-fit").make_env()
    with pytest.raises(ValueError, match="places with best-fit: the allocator agent does not"):
        demonstrate(placed, "best-fit", decisions=10)
    with pytest.raises(ValueError, match="name the heuristic it imitates"):
        demonstrate(env, None, decisions=10)


def test_first_fit_starts_the_oldest_job_that_fits():
    """The docstring's claim: with the thesis's masks the first allowed slot holds the job that
    arrived first among those that fit (the head slots oldest first, the tail after them)."""
    config = HeraSchedConfig(**{**SMALL, "episode_jobs": 400}, place_with="best-fit")
    env = config.make_env()
    obs, info = env.reset(options={"start": 300})
    choices = 0
    terminated = False
    while not terminated:
        mask = info["action_mask"][:env.layout.window + 1]
        ep = env.episode
        snap = ep.observer.snapshot
        fitting = np.flatnonzero(mask[:env.layout.window])
        slot = first_fit(mask)
        if fitting.size:
            submits = ep.observer.submit[snap.rows[fitting]]
            assert ep.observer.submit[snap.rows[slot]] == submits.min()
            choices += len(set(submits.tolist())) > 1
        else:
            assert slot == env.forward
        obs, _, terminated, _, info = env.step(slot)
    assert choices >= 5  # decisions where the oldest was one of several arrival times


def test_fitting_learns_a_choice_and_a_set_of_right_choices():
    torch.manual_seed(0)
    n, actions = 256, 6
    obs = torch.randn(n, 4).numpy()
    mask = np.ones((n, actions), dtype=bool)
    mask[::3, 5] = False

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, actions)

        def forward(self, o, m):
            return self.lin(o).masked_fill(~m, -1e6)

    # one right choice per decision: the slot of the largest of the first four features
    choice = obs.argmax(1)
    net = Net()
    stats = fit(net, obs, mask, choice, passes=60, minibatch=32, lr=3e-2)
    assert stats["agreement"] > 0.95 and stats["decisions"] == n
    # a set of right choices (any is right): slots 4 and 5 where allowed
    right = np.zeros((n, actions), dtype=bool)
    right[:, 4:] = True
    right &= mask
    net = Net()
    stats = fit(net, obs, mask, right, passes=60, minibatch=32, lr=3e-2)
    assert stats["agreement"] == 1.0 and stats["loss"] < 0.05
    right[0] = False
    right[0, 5] = True  # forbidden by decision 0's mask
    with pytest.raises(ValueError, match="a demonstrated choice is one its mask forbids"):
        fit(Net(), obs, mask, right)


def best_fit_agreement(model, start: int) -> float:
    """The share of the greedy allocator's node picks, on `jobs` from `start` with the model
    deciding, that are among best-fit's nodes for the job (not yet chosen)."""
    env = model.config.make_env()
    placer = resolve_allocator("best-fit", env.prepared.profile)
    obs, info = env.reset(options={"start": start})
    hits, picks, nodes = 0, 0, ()
    terminated = False
    while not terminated:
        ep = env.episode
        action = int(model.predict(obs, info["action_mask"]))
        if info["agent"] == ALLOCATOR:
            if not ep.chosen:
                nodes = ep.nodes_by(placer, ep.row)
            hits += action in nodes and action not in ep.chosen
            picks += 1
        obs, _, terminated, _, info = env.step(action)
    return hits / picks


def test_an_imitated_allocator_places_as_best_fit_does_on_unseen_episodes():
    torch.manual_seed(0)
    model = HeraSched(HeraSchedConfig(**SMALL, seed=1))
    before = [best_fit_agreement(model, s) for s in (500, 900)]
    stats = imitate(model, "first-fit+best-fit", decisions=1024)
    after = [best_fit_agreement(model, s) for s in (500, 900)]
    assert max(before) < 0.5 < 0.85 < min(after)
    assert stats["allocator_imitation_agreement"] > 0.85
    assert stats["selector_imitation_decisions"] == 1024
    assert stats["allocator_imitation_decisions"] >= 1024  # each job one decision per node
    assert stats["selector_imitation_agreement"] > 0.95
    # the critics are not fitted
    fresh = HeraSched(HeraSchedConfig(**SMALL, seed=1))
    for name in ("selector_value", "allocator_value"):
        assert all(torch.equal(v, getattr(fresh, name).state_dict()[k])
                   for k, v in getattr(model, name).state_dict().items())


def test_the_command_imitates_then_validates_the_start(tmp_path, capsys):
    import json

    from hpcsched.cli import main
    from hpcsched.modelfile import read_model

    small = ["--window", "16", "--tail", "4", "--episode-jobs", "300", "--update-every", "64",
             "--validate-every", "1", "--validate-jobs", "300", "--validate-subsets", "1"]
    out = tmp_path / "run"
    assert main(["train", "herasched", "--out", str(out), *small, "--epochs", "1",
                 "--allocator", "best-fit", "--imitate", "first-fit", "--keep-validated"]) == 0
    err = capsys.readouterr().err
    assert "imitating first-fit: the selector on 2,048 decisions" in err
    assert "allocator on" not in err  # behind best-fit the allocator agent imitates nothing
    assert "starting greedy model: validation S" in err
    run_options = json.loads((out / "config.json").read_text())["run_options"]
    assert run_options["imitate"] == "first-fit"
    assert [h["epoch"] for h in read_model(out / "model.pt")["history"]] == [0, 1]
    # the imitated start is kept with the validated updates, as its update 0
    assert sorted(p.name for p in (out / "validated").iterdir()) == ["epoch-0.pt", "epoch-1.pt"]
    start = read_model(out / "validated" / "epoch-0.pt")
    assert start["epoch"] == 0 and "imitating" not in str(start["history"])
    assert [h["epoch"] for h in start["history"]] == [0]
    # a resume does not imitate again, and keeps the option
    assert main(["train", "herasched", "--out", str(out), "--resume", "--epochs", "2"]) == 0
    assert "imitating" not in capsys.readouterr().err
    # refused before any folder is made
    for bad, why in ((["--imitate", "first-fit+best-fit"], "allocator agent is not trained"),
                     (["--imitate", "first-fit", "--init", str(out / "model.pt")],
                      "two warm starts")):
        fresh = tmp_path / f"bad{len(bad)}"
        assert main(["train", "herasched", "--out", str(fresh), *small, "--epochs", "1",
                     "--allocator", "best-fit", *bad]) != 0
        assert why in capsys.readouterr().err and not fresh.exists()
