"""The README's "A squared-wait reward (`--selector-reward squared`)" against the files in
benchmarks/data/herasched_physical_squared/ (each run's log.csv, config.json and printed output,
and `experiment herasched`'s output on the three runs' best.pt), and against the runs it repeats
with another reward (benchmarks/data/herasched_physical_mixed/: the same starts, data and
settings with Eq. 4.1)."""

import json
import re
from pathlib import Path

import pytest

from tests.experiments import test_readme_herasched_mixed as mixed
from tests.experiments.test_readme_herasched_mixed import flat, num, periods

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_physical_squared"
MIXED = ROOT / "benchmarks" / "data" / "herasched_physical_mixed"
SEEDS = (0, 1, 2)
MARKER = "**A squared-wait reward (`--selector-reward squared`)"


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(MARKER)
    return text[start:text.index("**EASY's reservation for the oldest job", start)]


def rows(seed: int, data: Path = DATA) -> list[dict[str, str]]:
    return mixed.rows(seed, data)


def started(seed: int, data: Path = DATA) -> float:
    return mixed.started(seed, data)


@pytest.mark.parametrize("seed", SEEDS)
def test_each_run_is_the_previous_one_with_the_squared_reward_stopped_after_update_45(seed):
    ours = json.loads((DATA / f"s{seed}" / "config.json").read_text())
    theirs = json.loads((MIXED / f"s{seed}" / "config.json").read_text())
    assert (ours.pop("selector_reward"), theirs.pop("selector_reward")) == ("squared", "average")
    assert ours == theirs  # nothing else changed: data, settings, seed, start, validation
    assert ours["run_options"]["init"] == f"ph-s{seed}/best.pt"
    # the same starting model, scored the same on both validation periods
    assert started(seed) == started(seed, MIXED)
    assert [int(r["epoch"]) for r in rows(seed)] == list(range(1, 46))
    assert [int(r["epoch"]) for r in rows(seed) if r["val_score"]] == list(range(5, 46, 5))
    text = flat(readme())
    assert "--trace ph-train-mixed.txt --out runs/hq-sS --seed S --init runs/ph-sS/best.pt " \
           "--epochs 100 --episode-jobs 10000 --selector-every 1 --allocator-every 1 --gamma " \
           "0.99 --pi-lr 1e-4 --selector-reward squared --validate-trace ph-validation.txt " \
           "--validate-jobs 5000 --validate-also ph-validation-high-load.txt --validate-every 5 " \
           "--keep-validated # stopped after update 45" in text
    # the reward changed what training was paid
    assert any(a["mean_reward"] != b["mean_reward"] for a, b in zip(rows(seed), rows(seed, MIXED)))


def test_best_pt_and_the_training_time_the_readme_gives():
    text = flat(readme())
    (e0, s0), (e1, s1), (e2, s2) = (mixed.best(s, DATA) for s in SEEDS)
    assert e1 == 0 and s1 == started(1)  # no update of seed 1 beat its start
    row = next(r for r in rows(0) if int(r["epoch"]) == e0)
    assert float(row["val_score"]) == float(row["val_also_score"])  # the high-load day decided
    assert (f"best.pt came at update {e0} (S {s0:.3f}; AWT {float(row['val_also_wait']):,.0f} s "
            f"and MWT {float(row['val_also_max_wait']):,.0f} s on the validation high-load "
            f"day)") in text
    assert f"at the start for seed 1 (no update beat its {s1:.3f}" in text
    assert f"and at update {e2} ({s2:.3f})" in text
    hours = [sum(float(r["rollout_s"]) + float(r["update_s"]) for r in rows(s)) / 3600
             for s in SEEDS]
    assert f"({min(hours):.2f}-{max(hours):.2f} h of rollouts and updates each" in text
    wall = re.search(r"real\t(\d+)m([\d.]+)s", (DATA / "experiment.txt").read_text())
    assert f"# {int(wall[1])} min {round(float(wall[2]))} s" in readme()


def test_the_table_is_the_experiments_output():
    mixed.check_table(mixed.table(readme()), ("test, squared-wait reward",
                                              "test high-load day, squared-wait reward"),
                      DATA / "experiment.txt", r"hq-s(\d)")


def test_the_comparisons_with_eq_4_1_quoted():
    """Seed 1 is the same model as before (its rows equal the Eq. 4.1 runs'), and the README's
    before-and-after numbers are the two experiments' outputs."""
    text = flat(readme())
    ours, theirs = periods(DATA / "experiment.txt"), periods(MIXED / "experiment.txt")
    for a, b in zip(ours, theirs):
        one = re.search(r"hq-s1: AWT ([\d,.]+) s, MWT ([\d,]+) s;", a)
        other = re.search(r"hm-s1: AWT ([\d,.]+) s, MWT ([\d,]+) s;", b)
        assert one.groups() == other.groups()
    assert "seed 1 is the same model as before" in text

    def mean_mwt(part):
        return re.search(r"MWT below every cell's: \w+ \(([\d,]+) s, mean of 3", part)[1]

    def lowest_s(part):
        return re.search(r"lowest S ([\d.]+) against", part)[1]

    assert f"mean MWT {mean_mwt(ours[0])} s against {mean_mwt(theirs[0])} s" in text
    assert f"lowest mean S {lowest_s(ours[0])} against {lowest_s(theirs[0])}" in text
    assert num(mean_mwt(ours[0])) < num(mean_mwt(theirs[0]))
    assert float(lowest_s(ours[0])) > float(lowest_s(theirs[0]))  # "by more than with Eq. 4.1"
    s2 = re.search(r"hq-s2: AWT [\d,.]+ s, MWT ([\d,]+) s;", ours[0])[1]
    was = re.search(r"hm-s2: AWT [\d,.]+ s, MWT ([\d,]+) s;", theirs[0])[1]
    assert f"(seed 2's MWT {s2} s against {was} s)" in text

    def high(part):
        beaten = int(re.search(r"- S > 2 against (\d+) of 21 cells", part)[1])
        below = int(re.search(r"MWT below every cell's: no .*?below (\d+) of 21 cells", part)[1])
        return beaten, below

    (b_ours, w_ours), (b_theirs, w_theirs) = high(ours[1]), high(theirs[1])
    assert f"S > 2 against {b_ours} cell on the mean and MWT below {w_ours}" in text
    assert f"worse than with Eq. 4.1 ({b_theirs} and {w_theirs})" in text
    assert b_ours < b_theirs and w_ours < w_theirs
    per_seed = re.findall(r"hq-s\d: AWT [\d,.]+ s, MWT ([\d,]+) s;.*S > 2 against (\d+) of 21",
                          ours[1])
    mwts = [num(m) for m, _ in per_seed]
    assert [int(b) for _, b in per_seed] == [10, 0, 0] and "seed 0 beats 10 cells" in text
    assert f"within {min(mwts):,.0f}-{max(mwts):,.0f} s" in text
    assert "lowest MWT 183,611 s (fcfs + first-available)" in ours[1]
    assert "where the lowest cell's is 183,611 s" in text
