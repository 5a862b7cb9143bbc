"""The README's "Trained on a high-load day too (`--init`)" against the files in
benchmarks/data/herasched_physical_mixed/ (each run's log.csv, config.json and printed output, and
`experiment herasched`'s output on the three runs' best.pt, experiment.txt), and the starting
models against the runs they started from (benchmarks/data/herasched_physical/: the shipped
seeds' runs, their checkpoints scored on the validation high-load day by another script,
choice-s*.txt, and the shipped seeds' experiment.txt)."""

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.experiments.test_readme_herasched_physical import columns, summary

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_physical_mixed"
SHIPPED = ROOT / "benchmarks" / "data" / "herasched_physical"
SEEDS = (0, 1, 2)
STARTS = {0: 10, 1: 10, 2: 50}  # the update of each shipped seed's best.pt (that README's)


def flat(text: str) -> str:
    return " ".join(text.replace("\\\n", " ").split())


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**Trained on a high-load day too (`--init`)")
    return text[start:text.index("**A squared-wait reward", start)]


def rows(seed: int, data: Path = DATA) -> list[dict[str, str]]:
    with open(data / f"s{seed}" / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def num(text: str) -> float:
    return float(text.replace(",", ""))


def started(seed: int, data: Path = DATA) -> float:
    out = (data / f"s{seed}" / "output.txt").read_text()
    return float(re.search(r"starting greedy model: validation S ([\d.]+)", out)[1])


def best(seed: int, data: Path = DATA) -> tuple[int, float]:
    """best.pt's update and score: the starting model (update 0) counts, and the first of equal
    scores is kept."""
    logged = [(0, started(seed, data))] + [(int(r["epoch"]), float(r["val_score"]))
                                           for r in rows(seed, data) if r["val_score"]]
    top = max(s for _, s in logged)
    return next(e for e, s in logged if s == top), top


def periods(path: Path) -> tuple[str, str]:
    test, high = path.read_text().split("== physical-test-high-load")
    return test, high


@pytest.mark.parametrize("seed", SEEDS)
def test_each_run_is_the_command_printed_and_stopped_after_update_60(seed):
    c = json.loads((DATA / f"s{seed}" / "config.json").read_text())
    assert (c["net"], c["seed"], c["epochs"], c["selector_every"], c["allocator_every"],
            c["gamma"], c["pi_lr"], c["cluster"], c["trace"], c["episode_jobs"]) == \
        ("default", seed, 100, 1, 1, 0.99, 1e-4, "spartan-physical", "ph-train-mixed.txt", 10000)
    o = c["run_options"]
    assert (o["validate_trace"], o["validate_jobs"], o["validate_subsets"], o["validate_also"],
            o["validate_every"], o["init"]) == \
        ("ph-validation.txt", 5000, 4, "ph-validation-high-load.txt", 5, f"ph-s{seed}/best.pt")
    out = (DATA / f"s{seed}" / "output.txt").read_text()
    assert f"starting from the networks of ph-s{seed}/best.pt (its update {STARTS[seed]}; new " \
           f"optimisers)" in out
    text = flat(readme())
    assert "--trace ph-train-mixed.txt --out runs/hm-sS --seed S --init runs/ph-sS/best.pt " \
           "--epochs 100 --episode-jobs 10000 --selector-every 1 --allocator-every 1 --gamma " \
           "0.99 --pi-lr 1e-4 --validate-trace ph-validation.txt --validate-jobs 5000 " \
           "--validate-also ph-validation-high-load.txt --validate-every 5 --keep-validated " \
           "# stopped after update 60" in text
    assert [int(r["epoch"]) for r in rows(seed)] == list(range(1, 61))
    assert [int(r["epoch"]) for r in rows(seed) if r["val_score"]] == list(range(5, 61, 5))


def test_the_starting_scores_are_the_shipped_runs_best_pt_scored_on_both_days():
    """Each starting score is the lower of its best.pt's validation median S (the shipped run's
    log) and its S on the validation high-load day as benchmarks/herasched_choice.py scored that
    checkpoint (2 decimals there)."""
    text = flat(readme())
    assert "The starting models scored {:.3f}, {:.3f} and {:.3f}".format(
        *[started(s) for s in SEEDS]) in text
    for seed in SEEDS:
        with open(SHIPPED / f"s{seed}" / "log.csv", newline="") as f:
            logged = {int(r["epoch"]): float(r["val_score"]) for r in csv.DictReader(f)
                      if r["val_score"]}
        line = re.search(rf"^\s+{STARTS[seed]}\s+[\d.]+\s+([\d.]+)\s+[\d.]+ /\s+[\d,]+\s+([\d.]+)",
                         (SHIPPED / f"choice-s{seed}.txt").read_text(), re.M)
        assert float(line[1]) == pytest.approx(logged[STARTS[seed]], abs=5e-4)
        # both printed rounded: 3 decimals here, 2 there
        assert started(seed) == pytest.approx(min(logged[STARTS[seed]], float(line[2])),
                                              abs=5e-3 + 5e-4)


def test_best_pt_and_the_validation_the_readme_describes():
    text = flat(readme())
    (e0, s0), (e1, s1), (e2, s2) = (best(s) for s in SEEDS)
    assert e1 == 0 and s1 == started(1)  # no update of seed 1 beat its start
    row = next(r for r in rows(0) if int(r["epoch"]) == e0)
    assert float(row["val_score"]) == float(row["val_also_score"])  # the high-load day decided
    assert (f"best.pt came at update {e0} (S {s0:.3f}: {float(row['val_first_score']):.3f} on "
            f"the validation day; AWT {float(row['val_also_wait']):,.0f} s and MWT "
            f"{float(row['val_also_max_wait']):,.0f} s on the validation high-load day, against "
            f"FCFS + best-fit's 263 s and 58,277 s)") in text
    out = (DATA / "s0" / "output.txt").read_text()
    assert "ph-validation-high-load.txt (52985 jobs), FCFS + best-fit + EASY there: AWT 263 s, " \
           "MWT 58,277 s" in out
    assert f"at the start for seed 1 (no update beat its {s1:.3f}" in text
    assert f"and at update {e2} ({s2:.3f})" in text
    assert f"seed 0's best.pt beat FCFS + best-fit there (S {s0:.2f})" in text
    hours = [sum(float(r["rollout_s"]) + float(r["update_s"]) for r in rows(s)) / 3600
             for s in SEEDS]
    assert f"({min(hours):.2f}-{max(hours):.2f} h of rollouts and updates each" in text


def table(section: str | None = None) -> dict[str, list[str]]:
    """The README section's table rows (default: this one's), by their first cell."""
    out = {}
    for line in (readme() if section is None else section).splitlines():
        if line.startswith("| test"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[cells[0]] = cells[1:]
    return out


def check_table(got: dict[str, list[str]], keys, experiment: Path, models_named: str) -> None:
    """The README table's rows `keys` (test day, test high-load day) are `experiment`'s output
    for the models whose names match `models_named`."""
    assert sorted(got) == sorted(keys)
    for key, part in zip(keys, periods(experiment)):
        awt, mwt, below, beaten = got[key]
        models, mean, crit = summary(part, models_named)
        assert (awt, mwt) == columns(models, mean)
        assert below == f"{crit[1]} (below {crit[3]} of 21)"
        s2 = re.search(r"- S > 2 against (\d+) of 21 cells \(mean S over the models", part)
        assert beaten == f"{s2[1]} of 21 ({', '.join(m[4] for m in models)})"
        awts = [num(m[1]) for m in models]
        assert num(mean[1]) == pytest.approx(sum(awts) / 3, abs=0.1)  # each printed to 0.1


def test_the_table_is_the_experiments_output():
    check_table(table(), ("test, trained on a high-load day too",
                          "test high-load day, trained on a high-load day too"),
                DATA / "experiment.txt", r"hm-s(\d)")


def test_seed_1_is_the_shipped_seed_1_and_the_comparisons_quoted():
    text = flat(readme())
    mixed, shipped = periods(DATA / "experiment.txt"), periods(SHIPPED / "experiment.txt")
    for ours, theirs in zip(mixed, shipped):  # its best.pt is the start: the same schedule
        a = re.search(r"hm-s1: AWT ([\d,.]+) s, MWT ([\d,]+) s;", ours)
        b = re.search(r"herasched-physical-s1: AWT ([\d,.]+) s, MWT ([\d,]+) s;", theirs)
        assert a.groups() == b.groups()
    test, high = mixed
    assert "MWT below every cell's: yes" in test and "below 21 of 21 cells" in test
    assert "lowest S 3.35 against f1 + best-fit" in test
    assert "(lowest mean S 3.35, against F1 + best-fit), again on seeds 0 and 1" in text
    assert "S > 2 against 2 of 21 cells" in high and "below 4 of 21 cells" in high
    assert "S > 2 against 2 cells on the mean (the shipped seeds: 0; chosen with both days, " \
           "above: 8) and MWT below 4 (2 and 14)" in text
    s0 = re.search(r"hm-s0: AWT ([\d,.]+) s, MWT ([\d,]+) s;.*S > 2 against (\d+) of 21", high)
    was = re.search(r"herasched-physical-s0: AWT ([\d,.]+) s, MWT ([\d,]+) s;", shipped[1])
    assert num(s0[1]) < num(was[1]) / 1.9 and num(s0[2]) < num(was[2])
    assert f"({s0[1]} s against the shipped seed 0's {was[1]} s)" in text
    assert f"({s0[2]} s against {was[2]} s)" in text
    assert f"beats {s0[3]} of the 21 cells on the test high-load day" in text
    total = int(re.search(r"the selector's ([\d,]+) decisions", high)[1].replace(",", ""))
    tail = int(re.search(r"^\| 448-511 \(tail\) \| (\d+) \|", high, re.M)[1])
    assert f"tail in {100 * tail / total:.1f} % of its {total:,} decisions there" in text
    assert "lowest MWT 183,611 s (fcfs + first-available)" in high
    assert "the test day's lowest cell 183,611 s, FCFS + first-available" in text
    wall = re.search(r"real\t(\d+)m([\d.]+)s", (DATA / "experiment.txt").read_text())
    assert f"# {int(wall[1])} min {round(float(wall[2]))} s" in readme()


def test_the_readme_commands_write_the_mixed_trace(tmp_path):
    """The generate and concatenation lines, run as printed (the training days written by
    hera_period's own command): the file the runs trained on (its SHA-256, taken when they were
    run), the two days' jobs, the high-load day first, no job id twice."""
    import hashlib

    from hpcsched.workload.hera_periods import hera_period

    text = readme()
    lines = text[text.index("hpcsched trace generate spartan-physical --seed 1710"):
                 text.index("hpcsched train herasched --cluster spartan-physical --trace "
                            "ph-train-mixed.txt")]
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    train = hera_period("spartan-physical", "train").command("ph-train.txt")
    subprocess.run(["bash", "-ec", train + "\n" + lines], cwd=tmp_path, env=env, check=True,
                   capture_output=True)
    digest = hashlib.sha256((tmp_path / "ph-train-mixed.txt").read_bytes()).hexdigest()
    assert digest == (DATA / "ph-train-mixed.sha256").read_text().split()[0]
    with open(tmp_path / "ph-train-mixed.txt") as f:
        jobs = [line.split("|") for line in f.read().splitlines()[1:]]
    assert len(jobs) == 52_985 + 24_039
    assert len({j[0] for j in jobs}) == len(jobs) and len({j[1] for j in jobs}) == len(jobs)
    submits = [j[6] for j in jobs]
    assert submits[0].startswith("2022-09-22") and submits[52_985].startswith("2022-09-23")
    assert max(submits[:52_985]) < min(submits[52_985:])
