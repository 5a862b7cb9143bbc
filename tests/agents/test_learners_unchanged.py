"""The REINFORCE and DQN learners train exactly as they did before they were rewritten as algorithm
files (issue 15).

`tests/data/learners_unchanged.json` was recorded by this file's `record()` at commit
e81ef528c2bb9a17181e9f946d630747fb99561a, before `agents/reinforce.py`, `dras_pg.py`, `dql.py` and
`experiments/dras_training.py` were refactored: tiny runs of the two trainers (`hpcsched train
deeprm` and `hpcsched train dras`, called as functions), for each the SHA-256 of every tensor of
model.pt (weights, optimiser state, DRAS-DQL's target network and replay memory), its random state
and log.csv's values (timings aside). A rewrite that changes one bit of training fails here.
model.pt has been written in the one model format since (issue 15); `as_recorded` reads it back
into the layout the digests were recorded in, value for value.

The digests are of float arithmetic on this project's CPU machines (AMD EPYC): a CPU whose torch
kernels round differently fails every run here at once, so on another CPU vendor the test skips
and says so, unless a fixture of that vendor lies beside this one (`cpu_fixtures.py`); such a
fixture is recorded by the code of the commit before a change, never after it.

Greedy decisions of the shipped models are pinned elsewhere (`tests/agents/test_greedy_families.py`,
the slow `tests/experiments/test_readme_learned_numbers.py`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

FIXTURE = Path(__file__).parent.parent / "data" / "learners_unchanged.json"
RECORDED_AT = "e81ef528c2bb9a17181e9f946d630747fb99561a"
TIMING = {"rollout_s", "update_s", "epoch_s", "episode_s"}

DEEPRM = {
    "deeprm": dict(load=0.5, steps=10, jobsets=4, rollouts=3, jobsets_per_update=2,
                   validate_jobsets=3),
    "deeprm-warm-completion": dict(load=0.9, steps=10, jobsets=4, rollouts=3,
                                   jobsets_per_update=2, validate_jobsets=3, init="sjf",
                                   init_passes=2, reward="completion", seed=3),
    "deeprm-unmasked": dict(load=1.1, steps=10, jobsets=4, rollouts=2, jobsets_per_update=4,
                            validate_jobsets=0, mask_invalid=False, seed=1),
}
DRAS_RUN = dict(trace="toy", curriculum="sampled:1,real:1", jobset_jobs=80, train_days=5,
                validate_days=2, test_days=3, validate_first_days=0.5, validate_every=1, seed=1)
DRAS = {
    "dras-pg": dict(algo="pg", agent={"fc1": 32, "fc2": 16}),
    "dras-pg-running": dict(algo="pg", agent={"fc1": 32, "fc2": 16, "baseline": "running",
                                              "gamma": 0.9, "update_every": 5}),
    "dras-pg-per-job": dict(algo="pg", agent={"fc1": 32, "fc2": 16, "net": "per_job",
                                              "max_batch": 6, "entropy": 0.0}),
    "decima": dict(algo="decima", agent={"fc1": 32, "fc2": 16, "activation": "relu"}),
    "dras-dql": dict(algo="dql", agent={"fc1": 32, "fc2": 16, "replay": 300, "batch": 8,
                                        "target_every": 3, "gradient_steps": 2,
                                        "epsilon_decay": 0.9}),
}


def digest(value) -> object:
    """Tensors and arrays -> 'dtype shape sha256'; containers walked; other values as they are."""
    if isinstance(value, torch.Tensor):
        value = value.detach().contiguous().numpy()
    if isinstance(value, np.ndarray):
        return f"{value.dtype} {list(value.shape)} {hashlib.sha256(value.tobytes()).hexdigest()}"
    if isinstance(value, dict):
        return {str(k): digest(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [digest(v) for v in value]
    return value


def logged(folder: Path) -> list[dict]:
    with open(folder / "log.csv") as f:
        return [{k: v for k, v in row.items() if k not in TIMING} for row in csv.DictReader(f)]


def toy_trace():
    sys.path.insert(0, str(Path(__file__).parent.parent / "experiments"))
    from test_dras_training import trace

    from hpcsched.sim.run import prepare

    return prepare(trace(per_day=300), "dras")


def as_recorded(ck: dict) -> dict:
    """A model.pt of the one format (`hpcsched.modelfile`, since issue 15) in the layout of the
    files the fixture was recorded from (`hpcsched.deeprm/1`, `hpcsched.dras/1`): the same
    tensors and values under their old names, so that the recorded digests still apply (the
    fixture pins what training computes, not where a file keeps it)."""
    training = ck["training"]
    if ck["recipe"] == "deeprm":
        return {"epoch": ck["epoch"], "policy": ck["weights"]["policy"],
                "optimizer": training["optimizers"]["policy"],
                "np_rng": training["learner"]["rng"]}
    dqn = ck["learner"] == "dqn"
    net = "q" if dqn else "policy"
    settings = {k: v for k, v in ck["learner_config"].items() if k != "rows"}
    agent = {"algo": "dql" if dqn else "pg", "agent_config": settings,
             "rows": ck["learner_config"]["rows"], "net": ck["weights"][net],
             **({"target": ck["weights"]["target"]} if dqn else {}),
             "optimizer": training["optimizers"][net], **ck["learner_state"]}
    return {"episode": ck["epoch"], "agent": agent, "training": training["learner"]}


def deeprm_run(name: str, out: Path) -> dict:
    from hpcsched.modelfile import read_model
    from hpcsched.agents.deeprm import DeepRMConfig
    from hpcsched.experiments.deeprm import train

    train(DeepRMConfig(**DEEPRM[name]), out, 2, progress=False, log=lambda text: None)
    ck = as_recorded(read_model(out / "model.pt", recipe="deeprm"))
    best = out / "best.pt"
    return {"model": digest({k: ck[k] for k in ("epoch", "policy", "optimizer", "np_rng")}),
            "best_epoch": (read_model(best)["epoch"] if best.exists() else None),
            "log": logged(out)}


def dras_run(name: str, out: Path, prepared) -> dict:
    from hpcsched.modelfile import read_model
    from hpcsched.experiments import dras_training as dt

    original = dt.prepared_for
    dt.prepared_for = lambda config: prepared
    try:
        dt.train(dt.DrasRunConfig(**DRAS_RUN, **DRAS[name]), out, progress=False,
                 log=lambda text: None)
    finally:
        dt.prepared_for = original
    ck = as_recorded(read_model(out / "model.pt", recipe="dras"))
    return {"model": digest({k: ck[k] for k in ("episode", "agent", "training")}),
            "best_episode": read_model(out / "best.pt")["epoch"],
            "log": logged(out)}


def run_all(folder: Path, names: list[str] | None = None) -> dict:
    prepared = toy_trace()
    runs = {}
    for name in names or [*DEEPRM, *DRAS]:
        runs[name] = (deeprm_run(name, folder / name) if name in DEEPRM
                      else dras_run(name, folder / name, prepared))
    return runs


def record() -> None:
    import subprocess
    import tempfile

    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True, cwd=Path(__file__).parent).stdout.strip()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        runs = run_all(Path(tmp))
    FIXTURE.write_text(json.dumps({"commit": commit, "runs": runs}, indent=1) + "\n")
    print(f"recorded {len(runs)} runs at {commit} in {FIXTURE}")


def same(a, b) -> bool:
    """Equal, with NaN equal to NaN (log.csv's empty loss of an episode without an update)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.fixture(scope="module")
def recorded() -> dict:
    from cpu_fixtures import recorded_fixture

    data = json.loads(recorded_fixture(FIXTURE).read_text())
    assert data["commit"] == RECORDED_AT
    return data["runs"]


@pytest.mark.parametrize("name", [*DEEPRM, *DRAS])
def test_training_is_bit_identical_to_the_recorded_run(tmp_path, recorded, name):
    torch.set_num_threads(1)
    now = json.loads(json.dumps(run_all(tmp_path, [name])[name]))  # as the fixture stores it
    was = recorded[name]
    assert same(now["log"], was["log"]), "log.csv's values differ"
    assert same(now["model"], was["model"]), "model.pt's tensors or random state differ"
    assert now.keys() == was.keys() and all(now[k] == was[k] for k in now if k.startswith("best"))


def test_the_fixture_would_see_a_changed_bit():
    """A digest moves with one flipped bit of one weight: the comparison above can fail."""
    w = torch.zeros(3)
    flipped = w.clone()
    flipped.view(torch.int32)[1] ^= 1
    assert digest(w) != digest(flipped)
    runs = json.loads(FIXTURE.read_text())["runs"]  # any CPU's recording shows it
    assert not same(runs["dras-pg"]["model"], runs["dras-dql"]["model"])


if __name__ == "__main__":
    record()
