"""The README's "Trained with the reservation (`--reserve-after 6:00:00`)" against the files in
benchmarks/data/herasched_deeplearn_reserve/ (each run's log.csv, config.json and printed output,
and `experiment herasched`'s output on the three runs' best.pt), and against the shipped Deeplearn
models' numbers (the README's table; the @reserve reading's output)."""

import csv
import json
import re
from pathlib import Path

import pytest

from tests.experiments import test_readme_herasched_reserve as reserve
from tests.experiments.test_readme_herasched_physical import flat, num

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_deeplearn_reserve"
READ = ROOT / "benchmarks" / "data" / "herasched_reserve" / "deeplearn-experiment.txt"
SEEDS = (0, 1, 2)


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**Trained with the reservation (`--reserve-after 6:00:00`)")
    return text[start:text.index("**The squared-wait reward on Deeplearn", start)]


def rows(seed: int) -> list[dict[str, str]]:
    with open(DATA / f"s{seed}" / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("seed", SEEDS)
def test_each_run_is_the_shipped_command_with_the_reservation(seed):
    c = json.loads((DATA / f"s{seed}" / "config.json").read_text())
    assert c["reserve_after"] == 6 * 3600 and c["seed"] == seed
    assert (c["trace"], c["cluster"], c["selector_every"], c["allocator_every"], c["gamma"],
            c["pi_lr"], c["net"]) == ("dl-train.txt", "spartan-deeplearn", 1, 1, 0.99, 1e-4,
                                      "default")
    assert c["run_options"]["validate_trace"] == "dl-validation.txt"
    assert (c["run_options"]["validate_jobs"], c["run_options"]["validate_subsets"]) == (5000, 1)
    assert c["run_options"]["init"] is None  # from scratch
    assert [int(r["epoch"]) for r in rows(seed)] == list(range(1, 101))
    assert "--reserve-after 6:00:00" in flat(readme())


def test_best_pt_and_training_time_quoted():
    text = flat(readme())
    best = []
    for seed in SEEDS:
        val = [(int(r["epoch"]), float(r["val_score"])) for r in rows(seed) if r["val_score"]]
        top = max(v for _, v in val)
        best.append((next(e for e, v in val if v == top), top))
    (e0, s0), (e1, s1), (e2, s2) = best
    assert (f"best.pt came at update {e0} (validation S {s0:.3f}), {e1} ({s1:.3f}) and {e2} "
            f"({s2:.3f})") in text
    minutes = [sum(float(r["rollout_s"]) + float(r["update_s"]) for r in rows(s)) / 60
               for s in SEEDS]
    assert f"{min(minutes):.1f}-{max(minutes):.1f} min of rollouts and updates each" in text
    wall = re.search(r"real\t(\d+)m([\d.]+)s", (DATA / "experiment.txt").read_text())
    assert wall[1] == "0" and f"# {round(float(wall[2]))} s" in readme()


def parts(path: Path) -> list[str]:
    return path.read_text().split("== deeplearn-test-high-load")


def test_the_table_is_the_experiments_output():
    got = reserve.table(readme())
    keys = ("test, trained with --reserve-after 6:00:00",
            "test high-load day, trained with --reserve-after 6:00:00")
    assert sorted(got) == sorted(keys)
    for key, part in zip(keys, parts(DATA / "experiment.txt")):
        reserve.check_row(got[key], part, r"dr-s(\d)")


def test_the_comparisons_quoted():
    text = flat(readme())

    def facts(part: str) -> tuple[str, int]:
        return reserve.mean_mwt(part), reserve.counts(part)[0]

    ours = [facts(p) for p in parts(DATA / "experiment.txt")]
    read = [facts(p) for p in parts(READ)]
    shipped = reserve.shipped_deeplearn()
    was = [(shipped[k][0], int(shipped[k][1])) for k in ("test", "test high-load day")]
    assert (f"on the test period the mean MWT is {ours[0][0]} s against {was[0][0]} s and "
            f"{read[0][0]} s, S > 2 against {ours[0][1]} cells against {was[0][1]} and "
            f"{read[0][1]}") in text
    assert (f"on the high-load day the mean MWT is {ours[1][0]} s against {was[1][0]} s and "
            f"{read[1][0]} s, S > 2 against {ours[1][1]} cells against {was[1][1]} and "
            f"{read[1][1]}") in text
    # better on the high-load day, worse on the test period than the @reserve reading, by both
    assert num(ours[1][0]) < num(read[1][0]) and ours[1][1] > read[1][1]
    assert num(ours[0][0]) > num(read[0][0]) and ours[0][1] < read[0][1]
    assert "does better on the high-load day and worse on the test period than reading" in text
    s1 = [int(re.search(r"dr-s1: AWT .*?S > 2 against (\d+) of 21", p)[1])
          for p in parts(DATA / "experiment.txt")]
    assert f"(S > 2 against {s1[0]} and {s1[1]} cells)" in text
