"""A model file's recipe, known from the file (`recipes.model_of`), and the seed studies' files
found by the one locator (`experiments.seeds.seed_path`: a run folder is its best.pt, or its
model.pt with a note)."""

import shutil

import pytest

from hpcsched import recipes
from hpcsched.experiments.policyspec import pretrained_models
from hpcsched.experiments.seeds import seed_path
from hpcsched.recipes import PRETRAINED


def test_every_shipped_model_is_known_as_its_recipes_by_its_kind():
    for recipe in recipes.recipes():
        for name in pretrained_models(recipe.prefix):
            found, checkpoint = recipes.model_of(PRETRAINED / f"{name}.pt")
            assert found is recipe, name
            assert recipes.model_kind(checkpoint) == recipe.evaluation.kind


def test_a_seeds_run_folder_is_its_best_pt_or_its_model_pt_with_a_note(tmp_path, capsys):
    name = "deeprm-load-70"
    run = tmp_path / f"{name}-s1"
    run.mkdir()
    shutil.copy(PRETRAINED / f"{name}.pt", run / "model.pt")
    assert seed_path(name, 1, tmp_path) == run / "model.pt"
    assert f"{run} has no best.pt yet" in capsys.readouterr().err
    shutil.copy(PRETRAINED / f"{name}.pt", run / "best.pt")
    assert seed_path(name, 1, tmp_path) == run / "best.pt"
    shutil.copy(PRETRAINED / f"{name}.pt", tmp_path / f"{name}-s1.pt")
    assert seed_path(name, 1, tmp_path) == tmp_path / f"{name}-s1.pt"  # the file first
    (tmp_path / f"{name}-s2").mkdir()  # neither file: named with the paths looked at
    with pytest.raises(ValueError, match=rf"{name} seed 2 .*{name}-s2\.pt and .*{name}-s2/best"):
        seed_path(name, 2, tmp_path)
    assert seed_path(name, 0) == PRETRAINED / "seeds" / f"{name}-s0.pt"  # the shipped seeds
