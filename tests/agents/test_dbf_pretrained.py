"""The shipped DBF models (`dbf:pretrained/dbf-m10`, `dbf:pretrained/dbf-m32`; MODELS.md) re-scored:
through the engine as `dbf:` names them, each gives on DBF's validation episodes exactly the AWT
its training's validation recorded when it chose the file (best.pt), and that AWT is far below
FCFS's (slow: about a minute per model)."""

import numpy as np
import pytest

from hpcsched.modelfile import read_model
from hpcsched.envs.dbf import as_dbf_trace
from hpcsched.experiments.dbf_episodes import run_episode
from hpcsched.experiments.policyspec import resolve_policy
from hpcsched.policies.priority import get_policy
from hpcsched.recipes import PRETRAINED
from hpcsched.workload.windows import dbf_starts

pytestmark = pytest.mark.slow

#: name -> (window, tail)
SHIPPED = {"dbf-m10": (10, 1), "dbf-m32": (32, 4)}


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_model_scores_what_its_validation_recorded(name):
    ck = read_model(PRETRAINED / f"{name}.pt")
    config = ck["config"]
    assert (ck["recipe"], ck["learner"]) == ("dbf", "ppo")
    assert (config["window"], config["tail"]) == SHIPPED[name]
    recorded = [h["val_wait"] for h in ck["history"] if h.get("epoch") == ck["epoch"]]
    assert len(recorded) == 1
    prepared = as_dbf_trace(config["trace"])
    starts = dbf_starts(prepared, "validation", 10, episode_jobs=config["episode_jobs"])
    policy = resolve_policy(f"dbf:pretrained/{name}", prepared)
    awt = np.mean([run_episode(prepared, policy, s)["wait"] for s in starts])
    assert awt == pytest.approx(recorded[0], rel=1e-12)
    fcfs = np.mean([run_episode(prepared, get_policy("fcfs"), s)["wait"] for s in starts])
    assert awt < fcfs / 10
