"""The shipped HeraSched models (`herasched:pretrained/herasched-*`; MODELS.md) re-scored (slow),
and MODELS.md's account of their training checked against their own history (fast).

Each file is the slim export of a run's best.pt. Through the engine, as `herasched:` names it, it
gives on its run's validation period exactly the combined score S its training recorded when it
chose the file (two paths: the run's validation then, `simulate` on the file now), the highest of
its run and above its untrained model's. On the held-out test periods
it gives exactly the AWT and MWT that MODELS.md states beside the command that printed them."""

import re

import pytest

from hpcsched.experiments.herasched_training import (HeraValidation, floored_score,
                                                     subset_scores, validation_score)
from hpcsched.modelfile import read_model
from hpcsched.recipes import PRETRAINED
from hpcsched.workload.hera_periods import hera_period
from hpcsched.workload.spartan_format import write_sacct

#: name -> (partition, validated jobs, subsets). The Deeplearn runs validated on the whole of
#: their validation period (`--validate-jobs 5000`, which that period's 2,566 jobs are fewer
#: than), scored whole (one subset: the runs predate `--validate-subsets`); the Physical runs on
#: the last 5,000 jobs of theirs, scored as the median S of 4 subsets (the default).
SHIPPED = {**{f"herasched-deeplearn-s{seed}": ("spartan-deeplearn", 5000, 1) for seed in range(3)},
           **{f"herasched-physical-s{seed}": ("spartan-physical", 5000, 4) for seed in range(3)}}

#: the shipped files whose best.pt's validation S equals their untrained model's
UNTRAINED_SCORED_IT = {"herasched-physical-s1"}


def models_md_rows() -> dict[tuple[str, str], tuple[float, float]]:
    """MODELS.md's table of the shipped HeraSched models on the protocol's periods:
    {(name, period): (AWT, MWT)}."""
    text = (PRETRAINED / "MODELS.md").read_text()
    section = text.split("# Shipped HeraSched models", 1)[1]
    rows = {}
    for m in re.finditer(r"^\| (herasched-[\w-]+) \| ([\w-]+) \| ([\d,.]+) \| ([\d,.]+) \|",
                         section, re.M):
        rows[(m[1], m[2])] = tuple(float(v.replace(",", "")) for v in m.group(3, 4))
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_model_scores_what_its_validation_recorded(name, tmp_path):
    from hpcsched.agents.herasched import HeraSchedConfig
    from hpcsched.agents.herasched_policy import load_herasched
    from hpcsched.sim.run import simulate

    ck = read_model(PRETRAINED / f"{name}.pt")
    assert ck["recipe"] == "herasched"
    partition, jobs, subsets = SHIPPED[name]
    assert ck["config"]["cluster"] == partition
    recorded = [h["val_score"] for h in ck["history"]
                if h.get("epoch") == ck["epoch"] and "val_score" in h]
    assert len(recorded) == 1
    path = tmp_path / "validation.txt"  # the run's validation period, as `trace generate` writes it
    period = hera_period(partition, "validation")
    write_sacct(period.generate(), path)
    config = HeraSchedConfig.from_dict(ck["config"])
    validation = HeraValidation(config, jobs, str(path), subsets)
    n = validation.start + validation.jobs
    assert validation.start == max(0, n - jobs) and validation.jobs == min(n, jobs)
    policy = load_herasched(PRETRAINED / f"{name}.pt")
    result = simulate(validation.prepared, policy, start=validation.start, jobs=validation.jobs)
    if subsets == 1:  # the whole span's S
        s = floored_score(result.metrics, validation.reference)
    else:  # the median over the subsets of each one's S
        s = validation_score(subset_scores(validation.split(result),
                                           validation.reference_subsets))
    assert s == pytest.approx(recorded[0], rel=1e-12)
    # best.pt: the highest S of the run, above its untrained model's (update 0), but for the
    # seed whose untrained model already scored it (MODELS.md says so)
    scores = {h["epoch"]: h["val_score"] for h in ck["history"] if "val_score" in h}
    assert s == max(scores.values())
    if name in UNTRAINED_SCORED_IT:
        assert s == scores[0]
    else:
        assert s > scores[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_model_gives_the_test_numbers_models_md_states(name):
    from hpcsched.experiments.herasched_eval import period_prepared, run_model

    partition = SHIPPED[name][0]
    stated = {p: v for (n, p), v in models_md_rows().items() if n == name}
    assert set(stated) == {"test", "test-high-load"}
    for period, (awt, mwt) in stated.items():
        run = run_model(period_prepared(partition, period), f"pretrained/{name}")
        assert (round(run.awt, 1), round(run.mwt)) == (awt, mwt)


@pytest.mark.parametrize("name", SHIPPED)
def test_models_md_states_each_files_own_training_to_best_pt(name):
    """MODELS.md's first table: best.pt's update and validation S, the selector steps and the
    updates' wall time to it, as the file's own history sums them."""
    ck = read_model(PRETRAINED / f"{name}.pt")
    text = (PRETRAINED / "MODELS.md").read_text().split("# Shipped HeraSched models", 1)[1]
    row = re.search(rf"^\| {name} \| (\d+) \| (\d+), ([\d.]+) \| ([\d,]+) \| ([\d,]+) s \|",
                    text, re.M)
    assert row is not None, name
    seed, epoch, score, steps, wall = row.groups()
    history = [h for h in ck["history"] if h["epoch"] >= 1]
    assert int(seed) == ck["config"]["seed"] and int(epoch) == ck["epoch"] == history[-1]["epoch"]
    assert f"{ck['history'][-1]['val_score']:.3f}" == score
    said = "seed 1's **untrained** model already scored it (its update 0)"
    if name in UNTRAINED_SCORED_IT:
        assert said in text and f"| {name} | {seed} |" in text
        assert ck["history"][0]["epoch"] == 0 and ck["history"][0]["val_score"] == \
            ck["history"][-1]["val_score"]
    assert int(steps.replace(",", "")) == sum(int(h["selector_steps"]) for h in history)
    assert int(wall.replace(",", "")) == round(sum(h["epoch_s"] for h in history))
