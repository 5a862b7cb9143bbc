"""Every shipped model file is in the one model format (`hpcsched.modelfile`, `hpcsched.model/2`)
and loads through the one reader as the learner and recipe it names; and the conversion of the
files of the old formats (`hpcsched.modelfile.legacy`) changed no tensor and no value.

The shipped files were converted once at commit `CONVERTED_AT` by
``python -m hpcsched.agents.legacy src/hpcsched/data/pretrained`` (now ``hpcsched
upgrade-models``); the slow test here reads each
file as it was at that commit's parent (git) and checks the converted file against it, tensor for
tensor. The greedy schedules of every shipped model before and after the conversion are compared
by the tables' tests (`tests/experiments/test_readme_*`).
"""

from __future__ import annotations

import io
import subprocess
import warnings
from pathlib import Path

import pytest
import torch

from hpcsched.modelfile import DECIDING, FORMAT, SLIM_KEYS, read_model
from hpcsched.experiments.policyspec import PRETRAINED

FILES = sorted(PRETRAINED.glob("*.pt")) + sorted((PRETRAINED / "seeds").glob("*.pt"))
#: the commit that converted the shipped files (its parent holds them in the old formats)
CONVERTED_AT = "b3080096321c43914ce23155ec346a3be40d3fef"


def test_every_shipped_file_is_in_the_one_format_and_loads_through_the_one_reader():
    from hpcsched import recipes

    assert len(FILES) == 128  # 122, then the three HeraSched Deeplearn seeds, then the three Physical
    by_prefix = {r.name: r for r in recipes.recipes()}
    for path in FILES:
        raw = torch.load(path, map_location="cpu", weights_only=True)
        assert raw["format"] == FORMAT, path
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no legacy upgrade, no other version
            ck = read_model(path)
        # the recipe that ships it under this name, and names its learner
        name = path.stem.rsplit("-s", 1)[0] if path.parent.name == "seeds" else path.stem
        assert name in recipes.shipped_models(by_prefix[ck["recipe"]]), path
        recipes.entry(by_prefix[ck["recipe"]].learners[ck["learner"]])  # it reads such a file
        slim = path.parent.name == "seeds" or ck["recipe"] in ("dras", "dbf", "herasched")
        assert ("training" not in ck) == slim, path
        if slim:
            assert tuple(ck) == SLIM_KEYS and tuple(ck["weights"]) == DECIDING[ck["learner"]]


@pytest.mark.parametrize("name", ["hpc2n-bsld", "inspect-hpc2n-f1", "deeprm-load-70"])
def test_a_shipped_full_model_loads_as_its_learner(name):
    from hpcsched.recipes import load_learner

    model = load_learner(PRETRAINED / f"{name}.pt")
    ck = read_model(PRETRAINED / f"{name}.pt")
    assert model.epoch == ck["epoch"] and model.history == ck["history"]


def _leaves(value, where=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, (list, tuple)) and any(isinstance(v, (dict, torch.Tensor))
                                                   for v in value):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{where}.{i}")
    else:
        yield where, value


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and torch.equal(a, b))
    return a == b or (a != a and b != b)  # NaN == NaN (a history's missing value)


def original(path: Path, commit: str):
    root = Path(__file__).resolve().parents[2]
    rel = path.resolve().relative_to(root)
    data = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=root, capture_output=True,
                          check=True).stdout
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


@pytest.mark.slow
def test_the_converted_files_hold_the_original_tensors_and_values():
    """Each shipped file against itself before the conversion: `legacy.upgrade` of the old file
    is the new file, value for value (tensors equal in dtype, shape and every bit), but the
    version; and every tensor of the old file is in the new one (an old DRAS slim copy's random
    states excepted, which no slim export keeps)."""
    from hpcsched.modelfile.legacy import upgrade

    root = Path(__file__).resolve().parents[2]
    if subprocess.run(["git", "cat-file", "-e", f"{CONVERTED_AT}^"], cwd=root,
                      capture_output=True).returncode:
        pytest.skip("the git history before the conversion is not here")
    for path in FILES:
        old = original(path, f"{CONVERTED_AT}^")
        new = torch.load(path, map_location="cpu", weights_only=True)
        want = dict(_leaves({**upgrade(old), "version": new["version"]}))
        got = dict(_leaves(new))
        assert want.keys() == got.keys(), (path, want.keys() ^ got.keys())
        assert all(_same(want[k], got[k]) for k in got), path
        kept = [v for v in got.values() if isinstance(v, torch.Tensor)]
        for where, value in _leaves(old):
            if not isinstance(value, torch.Tensor) or (
                    old["format"] == "hpcsched.dras/1" and old["agent"].get("slim")
                    and where == "rng.torch"):
                continue
            assert any(_same(value, v) for v in kept), (path, where)
