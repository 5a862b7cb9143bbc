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


def log_rows(run: Path = RUN) -> list[dict[str, str]]:
    with open(run / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def number(pattern: str, text: str | None = None) -> list[float]:
    """The numbers `pattern`'s groups find in `text` (default: the first run's paragraph)."""
    m = re.search(pattern, paragraph() if text is None else text)
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


# ---- the second run: random starts and an entropy bonus ------------------------------------------
SECOND = ROOT / "benchmarks" / "data" / "herasched_cerit_ej1000"


def second() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**A second CERIT-SC run:")
    return " ".join(text[start:text.index("\n\n", text.index("same test file checks", start))]
                    .split())


def second_number(pattern: str) -> list[float]:
    return number(pattern, second())


def name_values(printed: str) -> dict[str, str]:
    """The last line of `benchmarks/herasched_signal.py`'s output: its name=value pairs."""
    return dict(p.split("=") for p in printed.strip().splitlines()[-1].split())


def signal_pairs() -> dict[str, float]:
    """The pairs the script printed for the run's model (saved with it)."""
    return {k: float(v) for k, v in name_values((SECOND / "signal.txt").read_text()).items()}


def test_the_second_run_is_the_command_the_readme_prints():
    config = json.loads((SECOND / "config.json").read_text())
    text = second()
    assert (config["episode_jobs"], config["ent_coef"]) == (1000, 0.01)
    assert "--episode-jobs 1000 --ent-coef 0.01" in text
    assert (config["selector_every"], config["allocator_every"], config["gamma"],
            config["pi_lr"], config["seed"], config["epochs"]) == (1, 1, 0.99, 1e-4, 0, 60)
    assert "--epochs 60 --selector-every 1 --allocator-every 1 --gamma 0.99 --pi-lr 1e-4 " \
           "--seed 0" in text
    assert config["cluster"] == "cerit-zewura" and config["drop_oversized"]
    assert config["run_options"]["validate_trace"] == "cerit-validation.swf"


def test_the_second_runs_training_figures_are_its_log():
    rows = log_rows(SECOND)
    stopped, of = second_number(r"Stopped by hand after (\d+) of (\d+) updates")
    assert (len(rows), of) == (stopped, json.loads((SECOND / "config.json").read_text())["epochs"])
    steps, minutes = second_number(r"\(([\d,]+) selector steps, (\d+) min of updates")
    assert sum(int(r["selector_steps"]) for r in rows) == steps
    assert round(sum(float(r["epoch_s"]) for r in rows) / 60) == minutes
    ended = [(int(r["epoch"]), float(r["wait"])) for r in rows if r["wait"]]
    *waits, u1, u2, u3 = second_number(r"fell, ([\d,]+), ([\d,]+) and ([\d,]+) s at updates "
                                       r"(\d+), (\d+) and (\d+)")
    assert [(e, round(w)) for e, w in ended] == list(zip([u1, u2, u3], waits))
    assert waits[0] > waits[1] > waits[2]  # "fell"
    lo, hi = second_number(r"Forward stayed at (\d+)-(\d+) % of selector decisions")
    forward = [100 * float(r["forward_share"]) for r in rows]
    assert (round(min(forward)), round(max(forward))) == (lo, hi)
    val = [(int(r["epoch"]), float(r["val_score"]), float(r["val_wait"]))
           for r in rows if r["val_score"]]
    score, awt_m = second_number(r"validation at update 10 read S\s+([\d.]+) \(AWT (\d+) M s\)")
    assert [(e, round(s, 4), round(w / 1e6)) for e, s, w in val] == [(10, score, awt_m)]
    # the first run reached that score at update 40
    first = [int(r["epoch"]) for r in log_rows() if r["val_score"] and float(r["val_score"]) < 0.01]
    assert first[0] == 40 and "at update 10 instead of 40" in second()


def test_the_second_runs_signal_is_the_scripts_output():
    got = signal_pairs()
    assert got["greedy_forward_share"] == 1.0 and "in **100 %** of the" in second()
    (states,) = second_number(r"of the ([\d,]+) selector states")
    assert got["selector_decisions"] == states
    (p,) = second_number(r"the mean probability of Forward ([\d.]+)")
    assert round(got["mean_p_forward"], 3) == p
    (part,) = second_number(r"reward part alone: (-[\d.]+) for a Forward")
    signal = (SECOND / "signal.txt").read_text()
    assert f"(reward part alone: {part:+.3f})" in signal
    ev, value, reward = second_number(r"critic explains ([\d.]+) of the returns' variance and the "
                                      r"advantages' value part \(sd ([\d.]+)\) outweighs their "
                                      r"reward part \(sd ([\d.]+)\)")
    assert round(got["selector_explained_var"], 3) == ev
    assert round(got["selector_value_part_sd"], 1) == value
    assert round(got["selector_reward_part_sd"], 1) == reward
    assert value > 3 * reward


def longer() -> str:
    """The paragraph on the second run's model over 8,192 selector steps, with its list."""
    text = (ROOT / "README.md").read_text()
    start = text.index("**The same model over a longer rollout")
    return " ".join(text[start:text.index("Next: a run with", start)].split())


def pairs_of(name: str) -> dict[str, float]:
    return {k: float(v) for k, v in name_values((SECOND / name).read_text()).items()}


def test_the_longer_rollouts_signal_is_the_scripts_output():
    short, long = signal_pairs(), pairs_of("signal-8192.txt")
    text = longer()
    (ev,) = number(r"The critic explains \*\*([\d.]+)\*\* of the returns' variance", text)
    (ev_short,) = number(r"\(([\d.]+) over 2,048 steps\)", text)
    assert (round(long["selector_explained_var"], 3), round(short["selector_explained_var"], 3)) \
        == (ev, ev_short)
    reward, value = number(r"reward part \(sd ([\d.]+)\) now outweighs their value part "
                           r"\(sd ([\d.]+)\)", text)
    assert (round(long["selector_reward_part_sd"], 1), round(long["selector_value_part_sd"], 1)) \
        == (reward, value)
    assert reward > value and short["selector_value_part_sd"] > short["selector_reward_part_sd"]
    (gap,) = number(r"favours Forward over a pick \(\+([\d.]+)\)", text)
    assert long["forward_minus_pick"] == gap > 0
    (states,) = number(r"Forward in 100 % of the ([\d,]+) states", text)
    assert long["greedy_forward_share"] == 1.0 and long["selector_decisions"] == states
    share, picks = number(r"([\d.]+) % of this rollout's ([\d,]+) picks", text)
    assert round(100 * long["picks_below_window_mean_wait"], 1) == share
    assert f"picks: {int(picks)};" in (SECOND / "signal-8192.txt").read_text()
    # the first 512 decisions of each episode: smaller returns than the longer rollout's
    sd_short, sd_long = number(r"returns are still small \(sd ([\d.]+), against ([\d.]+) over",
                               text)
    returns = [number(r"selector: .*\n\s+returns: mean \S+ sd ([\d.]+)",
                      (SECOND / name).read_text())[0] for name in ("signal.txt", "signal-8192.txt")]
    assert [round(r, 1) for r in returns] == [sd_short, sd_long]
    assert sd_short < sd_long


def test_the_critic_check_is_the_scripts_output():
    got = name_values((SECOND / "critic.txt").read_text())
    got = {k: float(v) for k, v in got.items()}
    text = longer()
    (own,) = number(r"Monte Carlo returns the trained critic explains (\d\.\d+)", text)
    raw, standardised, fresh, linear = number(
        r"gives ([\d.]+) and ([\d.]+), a fresh critic\s+([\d.]+), a least-squares fit on four "
        r"pooled numbers \(L\(t\), the window's count, mean and\s+largest wait\) (\d\.\d+)", text)
    assert (got["own_held_out"], got["own_fitted_held_out"], got["own_standardised_held_out"],
            got["fresh_standardised_held_out"], got["linear_held_out"]) == \
        (own, raw, standardised, fresh, linear)
    assert own > max(raw, standardised, fresh)  # "more value fitting would not help"


@pytest.mark.slow
def test_the_second_runs_model_gives_its_signal_and_sampled_scores(tmp_path, monkeypatch,
                                                                   capsys):
    """The model re-rolled from the training log prints the saved signal (timing aside), and its
    sampled reading of the validation weeks gives the README's S, AWT and MWT (about a minute)."""
    import subprocess
    import sys

    from hpcsched.cli import main

    monkeypatch.chdir(tmp_path)
    main(["trace", "convert", "cerit-2013", "cerit-train.swf", "--from", "2013-01-01",
          "--until", "2013-02-26"])
    main(["trace", "convert", "cerit-2013", "cerit-validation.swf", "--from", "2013-02-26",
          "--until", "2013-03-12"])
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "herasched_signal.py"),
                          str(SECOND / "model.pt")], capture_output=True, text=True, check=True)
    got, saved = name_values(out.stdout), name_values((SECOND / "signal.txt").read_text())
    del got["rollout_s"], saved["rollout_s"]  # the one timing
    assert got == saved
    want = second_number(r"S ([\d.]+) \(AWT ([\d,]+) s, MWT ([\d,]+) s\) with seed 0 and "
                         r"([\d.]+) \(([\d,]+) s,\s+([\d,]+) s\) with seed 1")
    for seed, (score, awt, mwt) in enumerate((want[:3], want[3:])):
        capsys.readouterr()
        main(["compare", "cerit-validation.swf", "--cluster", "cerit-zewura", "--drop-oversized",
              "--backfill", "easy", "--policies",
              f"herasched:{SECOND / 'model.pt'},fcfs+best-fit", "--reference", "fcfs+best-fit",
              "--sample", "--seed", str(seed), "--json"])
        rows = json.loads(capsys.readouterr().out)
        (model,) = [r for r in rows if r["policy"].startswith("herasched:")]
        assert (round(model["score"], 3), round(model["wait"]), round(model["max_wait"])) == \
            (score, awt, mwt), seed
        assert model["score"] < 2  # it loses to FCFS + best-fit, sampled too


@pytest.mark.slow
def test_the_longer_rollout_and_the_critic_check_rerun(tmp_path, monkeypatch):
    """Both scripts re-run on the saved model print the saved pairs, timing aside (4-5 min)."""
    import subprocess
    import sys

    from hpcsched.cli import main

    monkeypatch.chdir(tmp_path)
    main(["trace", "convert", "cerit-2013", "cerit-train.swf", "--from", "2013-01-01",
          "--until", "2013-02-26"])
    for script, extra, saved in (("herasched_signal.py", ["--steps", "8192"], "signal-8192.txt"),
                                 ("herasched_critic.py", [], "critic.txt")):
        out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script),
                              str(SECOND / "model.pt"), *extra], capture_output=True, text=True,
                             check=True)
        got, want = name_values(out.stdout), name_values((SECOND / saved).read_text())
        got.pop("rollout_s", None), want.pop("rollout_s", None)
        assert got == want, script


ACCRUED = ROOT / "benchmarks" / "data" / "herasched_cerit_accrued"


def accrued_paragraph() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**A third CERIT-SC run: the accrued reward;")
    end = text.index("**The shipped Deeplearn models", start)
    return " ".join(text[start:end].replace("\\\n", " ").split())


def test_the_accrued_run_is_the_command_printed_and_its_figures_are_its_log():
    c = json.loads((ACCRUED / "config.json").read_text())
    assert (c["selector_reward"], c["seed"], c["episode_jobs"], c["ent_coef"], c["pi_lr"],
            c["gamma"], c["drop_oversized"], c["cluster"]) == \
        ("accrued", 0, 1000, 0.01, 1e-4, 0.99, True, "cerit-zewura")
    text = accrued_paragraph()
    assert "--episode-jobs 1000 --ent-coef 0.01 --selector-reward accrued --keep-validated" in text
    rows = log_rows(ACCRUED)
    assert [int(r["epoch"]) for r in rows] == list(range(1, len(rows) + 1))
    assert f"stopped by hand after update {len(rows)}" in text
    assert f"({sum(float(r['epoch_s']) for r in rows) / 60:.0f} min of updates" in text
    share = [float(r["forward_share"]) for r in rows]
    assert (f"fell from {100 * sum(share[:10]) / 10:.1f} % (mean of updates 1-10) to "
            f"{100 * sum(share[-10:]) / 10:.1f} % (updates {len(rows) - 9}-{len(rows)})") in text
    scores = [(int(r["epoch"]), float(r["val_score"])) for r in rows if r["val_score"]]
    assert [e for e, _ in scores] == [10, 20, 30, 40, 50, 60]
    assert "S " + ", ".join(f"{s:.3f}" for _, s in scores[:-1]) + \
        f" and {scores[-1][1]:.3f} at updates 10 to 60" in text
    out = (ACCRUED / "output.txt").read_text()
    untrained = float(re.search(r"untrained greedy model: validation S ([\d.]+)", out)[1])
    assert f"below the untrained model's {untrained:.3f}" in text
    assert max(s for _, s in scores) < min(untrained, 2)  # "every one below"
    last = next(r for r in rows if r["epoch"] == "60")
    assert f"at update 60 it waited {float(last['val_wait']):,.0f} s" in text
    assert "FCFS + best-fit + EASY there: AWT 231 s" in out and "(FCFS + best-fit: 231 s)" in text
