"""The README's account of the first CERIT-SC HeraSched run ("A first CERIT-SC run: it did not
learn") against the run itself, kept in benchmarks/data/herasched_cerit_s0/ (its log.csv and
config.json as the run wrote them, its best.pt as a slim export).

Fast: every training figure the paragraph gives is recomputed from log.csv, and the file is the
run's best.pt (the highest validation score the log has, at the update the file names). Slow:
the test weeks re-scored through `experiment herasched`'s own evaluation, AWT and MWT exactly as
the paragraph states them, and S against the 21 cells of the grid run beside it."""

import csv
import json
import re
from pathlib import Path
from statistics import median

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "data" / "herasched_cerit_s0"


def paragraph() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**A first CERIT-SC run: it did not learn.**")
    return " ".join(text[start:text.index("\n\n", text.index("Its best.pt", start))].split())


def log_rows() -> list[dict[str, str]]:
    with open(RUN / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def number(pattern: str) -> list[float]:
    m = re.search(pattern, paragraph())
    assert m, f"README: no match for {pattern!r}"
    return [float(g.replace(",", "")) for g in m.groups()]


def test_the_run_is_the_command_the_readme_prints():
    config = json.loads((RUN / "config.json").read_text())
    text = paragraph()
    assert config["cluster"] == "cerit-zewura" and "--cluster cerit-zewura" in text
    assert config["drop_oversized"] and "--drop-oversized" in text
    assert config["selector_every"] == config["allocator_every"] == 1
    assert "--selector-every 1 --allocator-every 1" in text
    assert config["gamma"] == 0.99 and config["pi_lr"] == 1e-4 and config["seed"] == 0
    assert "--gamma 0.99 --pi-lr 1e-4 --seed 0" in text
    assert config["run_options"]["validate_subsets"] == 4
    assert config["run_options"]["validate_trace"] == "cerit-validation.swf"
    assert config["epochs"] == 100 and "--epochs 100" in text


def test_the_training_figures_are_the_logs():
    rows = log_rows()
    stopped, of = number(r"stopped by hand at (\d+) of (\d+) updates")
    assert len(rows) == stopped and int(rows[-1]["epoch"]) == stopped
    steps, minutes = number(r"\(([\d,]+) selector steps, (\d+) min of updates")
    assert sum(int(r["selector_steps"]) for r in rows) == steps
    assert round(sum(float(r["epoch_s"]) for r in rows) / 60) == minutes

    validations = [(int(r["epoch"]), float(r["val_score"])) for r in rows if r["val_score"]]
    assert [e for e, _ in validations] == [10, 20, 30, 40, 50]
    early = number(r"to ([\d.]+), ([\d.]+), ([\d.]+) at updates 10-30")
    assert [round(s, 2) for _, s in validations[:3]] == early
    (late,) = number(r"and to ([\d.]+)\s+at updates 40 and 50")
    assert [round(s, 4) for _, s in validations[3:]] == [late, late]
    (awt_m,) = number(r"validation's AWT was (\d+) M s")
    val_waits = [float(r["val_wait"]) for r in rows if r["val_score"]]
    assert [round(w / 1e6) for w in val_waits[3:]] == [awt_m, awt_m]

    forward = [float(r["forward_share"]) for r in rows]
    first, last = number(r"Forward was (\d+) % of selector decisions over\s+updates 1-10 "
                         r"and (\d+) % over updates 45-54")
    assert round(100 * sum(forward[:10]) / 10) == first
    assert round(100 * sum(forward[-10:]) / 10) == last
    assert last > 3 * first  # it rose: the finding itself

    rewards = [float(r["mean_reward"]) for r in rows]
    med, hi, lo = number(r"median of (-[\d.]+) and went from (-[\d.]+) to\s+(-[\d.]+)")
    assert round(median(rewards), 1) == med
    assert round(max(rewards), 2) == hi and round(min(rewards), 1) == lo


def test_the_deeplearn_rewards_it_is_set_against():
    from hpcsched.modelfile import read_model
    from hpcsched.recipes import PRETRAINED

    history = read_model(PRETRAINED / "herasched-deeplearn-s0.pt")["history"]
    rewards = [h["mean_reward"] for h in history if "mean_reward" in h]
    assert len(rewards) == 50
    med, hi, lo = number(r"against a median of (-[\d.]+) \((-[\d.]+) to (-[\d.]+)\)")
    assert round(median(rewards), 1) == med
    assert round(max(rewards), 2) == hi and round(min(rewards), 1) == lo


def test_the_file_is_the_runs_best():
    from hpcsched.modelfile import read_model

    ck = read_model(RUN / "best.pt")
    assert "training" not in ck  # slim
    rows = log_rows()
    scored = {int(r["epoch"]): float(r["val_score"]) for r in rows if r["val_score"]}
    assert ck["epoch"] == max(scored, key=scored.get)
    (update,) = number(r"Its best.pt \(update (\d+)\)")
    assert ck["epoch"] == update


@pytest.mark.slow
def test_the_test_weeks_give_the_readmes_waits():
    from hpcsched.experiments.herasched_eval import evaluate, period_prepared

    awt, mwt = number(r"on the test weeks: AWT ([\d,.]+) s, MWT ([\d,]+) s")
    prepared = period_prepared("cerit-zewura", "test")
    ev = evaluate(prepared, [str(RUN / "best.pt")], cluster="cerit-zewura", period="test")
    (run,) = ev.runs
    assert round(run.awt, 1) == awt and round(run.mwt) == mwt
    scores = ev.scores(run)
    (fcfs,) = number(r"S ([\d.]+) against FCFS \+\s+best-fit")
    assert round(scores[("fcfs", "best-fit")], 2) == fcfs
    count, best = number(r"above 2 against (\d+) of the 21 cells \(LCFS \+ first-available, "
                         r"([\d.]+)\)")
    above = {c: v for c, v in scores.items() if v > 2}
    assert len(scores) == 21 and len(above) == count
    assert round(above[("lcfs", "first-available")], 2) == best
