"""The one PPO trains bit for bit as the two PPOs it replaced (RLScheduler's `PPO` and
SchedInspector's `InspectorPPO`, last at commit e81ef52).

tests/data/ppo_pins.json holds, for ten short trainings on Lublin-1, a digest of every tensor they
leave (both networks, both optimisers' states) and every value they log but the timings, as the
code of e81ef52 computed them (`make_ppo_pins.py`, run against that commit). The cases cover each
path of the old code: the packed kernel networks, the chunked flat ones, the side-by-side update,
the KL early stop, the relative reward, the two filter stages, the imitation warm start, the
fairness feature, and SchedInspector's own arithmetic (whole-batch float32 statistics,
`torch.multinomial`'s draws), with one and two torch threads.

Output recorded from our own code is no proof of correctness; what this pins is an invariant:
the merge was to change nothing. (That PPO's arithmetic is the formulas' is `test_ppo.py`'s.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cpu_fixtures import recorded_fixture
from make_ppo_pins import COMMIT, EPOCHS, TIMINGS, record
from hpcsched.agents.inspector import InspectorConfig, fit_rule
from hpcsched.agents.ppo import PPO
from hpcsched.agents.rlscheduler import RLSchedulerConfig, warm_start

#: metrics added to every metrics dict since e81ef52 (`sim.metrics`: Wang's Ch. 3)
NEW_METRICS = {"queue_length", "job_load"}
PINS_FILE = Path(__file__).parents[1] / "data" / "ppo_pins.json"
PINS = json.loads(PINS_FILE.read_text())  # the cases; their values per CPU: `pins()`


def pins() -> dict:
    """The pins recorded on this machine's kind of CPU (`cpu_fixtures.recorded_fixture`)."""
    return json.loads(recorded_fixture(PINS_FILE).read_text())


def test_the_pins_are_the_pre_merge_commits():
    assert PINS["commit"] == COMMIT == "e81ef52" and PINS["epochs"] == EPOCHS
    assert len(PINS["cases"]) == 10


def train(case: dict) -> PPO:
    if case["kind"] == "rlscheduler":
        model = PPO(RLSchedulerConfig(**case["settings"]))
        if case["warm_start"]:
            warm_start(model)
    else:
        model = PPO(InspectorConfig(**case["settings"]))
        if case["warm_start"]:
            fit_rule(model)
    return model.learn(EPOCHS)


@pytest.mark.parametrize("name", sorted(PINS["cases"]))
def test_training_gives_the_pinned_tensors_and_log(name):
    here = pins()
    assert here["commit"] == PINS["commit"] and here["epochs"] == PINS["epochs"]
    case = here["cases"][name]
    assert {k: case[k] for k in ("kind", "settings", "warm_start")} == {
        k: PINS["cases"][name][k] for k in ("kind", "settings", "warm_start")}
    got = record(train(case))
    differ = sorted(k for k in case["tensors"] if got["tensors"].get(k) != case["tensors"][k])
    assert not differ and set(got["tensors"]) == set(case["tensors"]), differ
    # the Ch. 3 queue metrics (issue 16) joined every metrics dict after the pins were taken: new
    # keys, and only those; every pinned value is unchanged
    added = {k for h in got["history"] for k in h} - {k for h in case["history"] for k in h}
    assert added <= NEW_METRICS, added
    assert [{k: v for k, v in h.items() if k not in NEW_METRICS} for h in got["history"]] \
        == case["history"]
    assert not any(k in h for h in got["history"] for k in TIMINGS)
