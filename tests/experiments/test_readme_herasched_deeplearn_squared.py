"""The README's "The squared-wait reward on Deeplearn" against the files in
benchmarks/data/herasched_deeplearn_squared/: the first runs (s0-s2: the shipped Deeplearn command
with the squared-wait reward) and the second (m0-m2: each first run's best.pt trained on with a
high-load day), each with its log.csv, config.json, printed output and best.pt (slim);
`experiment herasched` on each set, and on the second read with the age `@reserve`'s rule picks
(`benchmarks/herasched_reserve.py`'s outputs on both sets); the shipped Deeplearn models' numbers
from the README's table, and the runs that differ from the first only in the reward
(benchmarks/data/herasched_deeplearn_reserve/, which also held a reservation)."""

import csv
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.experiments import test_readme_herasched_reserve as reserve
from tests.experiments.test_readme_herasched_physical import flat, num

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_deeplearn_squared"
SAME_BUT_REWARD = ROOT / "benchmarks" / "data" / "herasched_deeplearn_reserve"
SEEDS = (0, 1, 2)
MARKER = "**The squared-wait reward on Deeplearn"
KEYS = {"experiment.txt": ("test, squared-wait reward",
                           "test high-load day, squared-wait reward"),
        "experiment-mixed.txt": ("test, squared, a high-load day in training",
                                 "test high-load day, squared, a high-load day in training"),
        "experiment-reserve0.txt": ("test, squared, trained with --reserve-after 0",
                                    "test high-load day, squared, trained with --reserve-after 0")}
NAMED = {"experiment.txt": r"dq-s(\d)", "experiment-mixed.txt": r"dqm-s(\d)",
         "experiment-mixed-reserve.txt": r"dqm-s(\d)/best\.pt@reserve=6:00:00",
         "experiment-reserve0.txt": r"dr0-s(\d)"}


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(MARKER)
    return text[start:text.index("**Which half does what", start)]


def config(run: str) -> dict:
    return json.loads((DATA / run / "config.json").read_text())


def parts(name: str) -> list[str]:
    """An experiment output's two periods: the test period, the test high-load day."""
    out = (DATA / name).read_text().split("== deeplearn-test-high-load")
    assert len(out) == 2
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_the_first_runs_are_the_shipped_command_with_the_squared_reward(seed):
    """Against runs of the shipped command that differ in the reward and a reservation only."""
    ours, theirs = config(f"s{seed}"), json.loads(
        (SAME_BUT_REWARD / f"s{seed}" / "config.json").read_text())
    assert (ours.pop("selector_reward"), theirs.pop("selector_reward")) == ("squared", "average")
    assert (ours.pop("reserve_after"), theirs.pop("reserve_after")) == (None, 6 * 3600)
    assert ours == theirs  # the data, settings, seed and validation of the shipped command
    assert ours["run_options"]["init"] is None and ours["seed"] == seed
    assert [int(r["epoch"]) for r in rows(f"s{seed}")] == list(range(1, 101))
    assert "--validate-subsets 1 --selector-reward squared --keep-validated" in flat(readme())


@pytest.mark.parametrize("seed", SEEDS)
def test_the_second_runs_start_from_the_first_runs_best_pt_on_the_mixed_trace(seed):
    first, second = config(f"s{seed}"), config(f"m{seed}")
    o = second["run_options"]
    assert (second.pop("trace"), second.pop("epochs"), second.pop("selector_steps")) == \
        ("dl-train-mixed.txt", 60, 60 * 2048)
    assert (o.pop("init"), o.pop("validate_also"), o.pop("validate_every")) == \
        (f"runs/dq-s{seed}/best.pt", "dl-validation-high-load.txt", 5)
    for key in ("trace", "epochs", "selector_steps"):
        first.pop(key)
    for key in ("init", "validate_also", "validate_every"):
        first["run_options"].pop(key)
    assert second == first
    out = (DATA / f"m{seed}" / "output.txt").read_text()
    epoch = best(f"s{seed}")[0]
    assert f"starting from the networks of runs/dq-s{seed}/best.pt (its update {epoch}; new " \
           f"optimisers)" in out
    assert [int(r["epoch"]) for r in rows(f"m{seed}") if r["val_score"]] == list(range(5, 61, 5))
    text = flat(readme())
    assert "--trace dl-train-mixed.txt --out runs/dqm-sS --seed S --init runs/dq-sS/best.pt " \
           "--epochs 60 --selector-every 1 --allocator-every 1 --gamma 0.99 --pi-lr 1e-4 " \
           "--selector-reward squared --validate-trace dl-validation.txt --validate-jobs 5000 " \
           "--validate-subsets 1 --validate-also dl-validation-high-load.txt --validate-every 5 " \
           "--keep-validated" in text


def rows(run: str) -> list[dict[str, str]]:
    with open(DATA / run / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def started(run: str) -> float | None:
    """The validation S of the model a run started from (`--init`), None for a run from scratch."""
    m = re.search(r"starting greedy model: validation S ([\d.]+)",
                  (DATA / run / "output.txt").read_text())
    return float(m[1]) if m else None


def best(run: str) -> tuple[int, float]:
    """A run's best.pt: the first update with the highest validation S, a starting model
    (`--init`) counting as update 0."""
    logged = [(int(r["epoch"]), float(r["val_score"])) for r in rows(run) if r["val_score"]]
    if started(run) is not None:
        logged.insert(0, (0, started(run)))
    top = max(s for _, s in logged)
    return next(e for e, s in logged if s == top), top


def minutes(run: str) -> float:
    """A run's rollouts and updates, validation aside, in minutes."""
    return sum(float(r["rollout_s"]) + float(r["update_s"]) for r in rows(run)) / 60


def test_best_pt_of_each_run_and_the_training_time_quoted():
    text = flat(readme())
    (e0, s0), (e1, s1), (e2, s2) = (best(f"s{s}") for s in SEEDS)
    assert (f"From scratch, best.pt came at update {e0} (validation S {s0:.3f}), {e1} "
            f"({s1:.3f}) and {e2} ({s2:.3f})") in text
    second = [best(f"m{s}") for s in SEEDS]
    assert [e for e, _ in second] == [0, 0, 15]  # seeds 0 and 1: the starting model
    starts = [s for _, s in second[:2]]
    assert (f"no update beat its starting model for seeds 0 and 1 (starting scores "
            f"{starts[0]:.3f} and {starts[1]:.3f}") in text
    assert f"seed 2's came at update 15 ({second[2][1]:.3f}, against {started('m2'):.3f} at " \
           f"the start)" in text
    # the best.pt files kept are those updates' (slim: the actors and the run's history)
    from hpcsched.modelfile import read_model

    for seed in SEEDS:
        assert read_model(DATA / f"s{seed}" / "best.pt")["epoch"] == best(f"s{seed}")[0]
        assert read_model(DATA / f"m{seed}" / "best.pt")["epoch"] == second[seed][0]
    for prefix, quoted in (("s", "min of rollouts and updates each"), ("m", "min each")):
        took = [minutes(f"{prefix}{s}") for s in SEEDS]
        assert f"{min(took):.1f}-{max(took):.1f} {quoted}" in text
    for name, seconds in (("experiment.txt", "# 11 s"), ("experiment-mixed.txt", "# 12 s")):
        wall = re.search(r"real\t(\d+)m([\d.]+)s", (DATA / name).read_text())
        assert wall[1] == "0" and seconds == f"# {round(float(wall[2]))} s"
        assert seconds in readme()


def test_the_table_is_the_experiments_output():
    got = reserve.table(readme())
    five = {f"{k}, five seeds": name.replace(".txt", "-5.txt")
            for name, keys in KEYS.items() for k in keys if name != "experiment-reserve0.txt"}
    assert sorted(got) == sorted([k for keys in KEYS.values() for k in keys] + list(five))
    for name, keys in KEYS.items():
        for key, part in zip(keys, parts(name)):
            reserve.check_row(got[key], part, NAMED[name])
    for name in set(five.values()):
        for key, part in zip([k for k, v in five.items() if v == name], parts(name)):
            check_five(got[key], part, NAMED[name.replace("-5.txt", ".txt")])


def check_five(row: list[str], part: str, named: str) -> None:
    """A five-seed row: per seed then mean ± sd, the criterion, the S > 2 counts (the three-seed
    rows' check, `reserve.check_row`, reads three seeds)."""
    awt, mwt, below, beaten = row
    models = re.findall(named + r": AWT ([\d,.]+) s, MWT ([\d,]+) s;.*?\(below (\d+) of 21\); "
                        r"S > 2 against (\d+) of 21", part)
    assert [int(m[0]) for m in models] == [0, 1, 2, 3, 4]
    mean = re.search(r"\| mean ± sd of 5 models \| ([\d,.]+) ± ([\d,.]+) \| "
                     r"([\d,]+) ± ([\d,]+) \|", part)
    assert awt == ", ".join(m[1] for m in models) + f"; {mean[1]} ± {mean[2]}"
    assert mwt == ", ".join(m[2] for m in models) + f"; {mean[3]} ± {mean[4]}"
    mwts = [num(m[2]) for m in models]
    assert num(mean[3]) == pytest.approx(sum(mwts) / 5, abs=0.5)  # the five models' own mean
    crit = re.search(r"MWT below every cell's: (yes|no) \([\d,]+ s, mean of 5 models; .*?; below "
                     r"(\d+) of 21 cells\)", part)
    assert below == f"{crit[1]} (below {crit[2]} of 21)"
    s2 = re.search(r"- S > 2 against (\d+) of 21 cells \(mean S over the models", part)
    assert beaten == f"{s2[1]} of 21 ({', '.join(m[4] for m in models)})"


def test_the_findings_quoted():
    text = flat(readme())
    first, second, read = (parts(n) for n in ("experiment.txt", "experiment-mixed.txt",
                                               "experiment-mixed-reserve.txt"))

    def crit(part):
        mwt = re.search(r"MWT below every cell's: (yes|no) \(([\d,]+) s, mean of 3 models; the "
                        r"lowest cell's ([\d,]+) s, ([\w+ -]+); below (\d+) of 21", part)
        s2 = re.search(r"- S > 2 against (\d+) of 21 cells \(mean S over the models; lowest S "
                       r"([\d.]+) against ([\w+ -]+),", part)
        return mwt.groups(), s2.groups()

    # the high-load day after the second runs: both criteria, on the mean
    (yes, mean, low, cell, below), (beaten, lowest, against) = crit(second[1])
    assert (yes, below, beaten) == ("yes", "21", "21") and num(mean) < num(low)
    assert cell == "fcfs + first-available" and against == "wfp3 + first-available"
    assert f"The mean MWT, {mean} s, is below every cell's (the lowest, FCFS + " \
           f"first-available's, is {low} s)" in text
    assert f"(lowest mean S {lowest}, against WFP3 + first-available)" in text
    margin = 100 * (num(low) - num(mean)) / num(low)
    assert f"the margin on the MWT is {margin:.1f} % of the lowest cell's" in text
    seeds = re.findall(r"dqm-s(\d): AWT [\d,.]+ s, MWT ([\d,]+) s; MWT below every cell's: (\w+) "
                       r"\(below (\d+) of 21\); S > 2 against (\d+) of 21", second[1])
    assert [(s[2], s[3], s[4]) for s in seeds if s[0] in "02"] == [("yes", "21", "21")] * 2
    s1 = seeds[1]
    assert f"seed 1 ({s1[1]} s) beats {s1[4]} cells by S and {s1[3]} by MWT" in text
    # from scratch: S held, the MWT did not
    (yes, mean, *_), (beaten, lowest, _) = crit(first[1])
    assert (yes, beaten) == ("no", "21")
    assert f"S > 2 already held against all 21 cells (lowest {lowest}) and the MWT did not " \
           f"({mean} s)" in text
    shipped = reserve.shipped_deeplearn()
    assert f"S > 2 against {shipped['test high-load day'][1]} cells there and a mean MWT of " \
           f"{shipped['test high-load day'][0]} s" in text
    # the test period: neither
    (yes, mean, low, cell, _), (beaten, lowest, against) = crit(second[0])
    assert (yes, cell, against) == ("no", "fcfs + topology", "fcfs + topology")
    mwts = [num(m) for m in re.findall(r"dqm-s\d: AWT [\d,.]+ s, MWT ([\d,]+) s;", second[0])]
    assert min(mwts) > num(low)  # no seed reaches it
    assert f"Mean MWT {mean} s against FCFS + topology's {low} s, which no seed reaches " \
           f"(lowest {min(mwts):,.0f} s), and S > 2 against {beaten} of 21 cells (lowest mean " \
           f"S {lowest}, against FCFS + topology)" in text
    assert f"Better than the shipped models ({shipped['test'][0]} s; {shipped['test'][1]} " \
           f"cells)" in text
    assert num(mean) < num(shipped["test"][0]) and int(beaten) > int(shipped["test"][1])
    # read through @reserve at the age the rule picked
    (_, mean_t, *_), (beaten_t, *_) = crit(read[0])
    (yes_h, mean_h, *_), (beaten_h, lowest_h, against_h) = crit(read[1])
    every = re.findall(r"@reserve=6:00:00: AWT .*?MWT below every cell's: (\w+)", read[1])
    assert yes_h == "yes" and every == ["yes"] * 3 and beaten_h == "20"
    assert (f"the test period's mean MWT is {mean_t} s (S > 2 against {beaten_t} cells) and the "
            f"high-load day's {mean_h} s, below every cell's on every seed, with S > 2 against "
            f"{beaten_h} of 21 ({lowest_h} against WFP3 + first-available)") in text


@pytest.mark.parametrize("name, picks", [("reserve-choice.txt", "none"),
                                         ("reserve-choice-mixed.txt", "6:00:00")])
def test_the_age_rule_on_each_set(name, picks):
    got = reserve.choice(DATA / name)
    assert sorted(got) == ["validation", "validation-high-load"]
    lowest = {a: min(rows_[a][2] for rows_ in got.values()) for a in reserve.AGES}
    chosen = max(reserve.AGES, key=lowest.get)  # the first of equal scores
    assert chosen == picks and f"the rule picks: {picks}" in (DATA / name).read_text()
    if name == "reserve-choice-mixed.txt":
        assert (f"picks 6 h (lowest mean S {lowest['6:00:00']:.3f}, against "
                f"{lowest['none']:.3f} as trained)") in flat(readme())
        wall = re.search(r"wall_s=(\d+)", (DATA / name).read_text())[1]
        assert f"--workers 2`, {wall} s;" in flat(readme())


def test_the_readme_commands_write_the_traces(tmp_path):
    """The generate and concatenation lines, run as printed (the training period written by
    hera_period's own command): the files the second runs read (SHA-256 taken when they ran),
    the high-load day first, no job id twice; and the validation high-load day is the protocol's."""
    from hpcsched.workload.hera_periods import hera_period

    text = readme()
    lines = text[text.index("hpcsched trace generate spartan-deeplearn --seed 1706"):
                 text.index("hpcsched train herasched --cluster spartan-deeplearn --trace "
                            "dl-train-mixed.txt")]
    assert hera_period("spartan-deeplearn", "validation-high-load").command(
        "dl-validation-high-load.txt").split() == \
        lines[lines.index("hpcsched trace generate spartan-deeplearn --seed 1704"):
              lines.index("(sed")].replace("\\\n", " ").split()
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep +
           os.environ.get("PATH", "")}
    train = hera_period("spartan-deeplearn", "train").command("dl-train.txt")
    subprocess.run(["bash", "-ec", train + "\n" + lines], cwd=tmp_path, env=env, check=True,
                   capture_output=True)
    digests = dict(line.split()[::-1] for line in
                   (DATA / "dl-train-mixed.sha256").read_text().splitlines())
    for name, digest in digests.items():
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == digest
    with open(tmp_path / "dl-train-mixed.txt") as f:
        jobs = [line.split("|") for line in f.read().splitlines()[1:]]
    assert len(jobs) == 1137 + 10_262
    assert len({j[0] for j in jobs}) == len(jobs) and len({j[1] for j in jobs}) == len(jobs)
    submits = [j[6] for j in jobs]
    assert submits[0].startswith("2021-09-19") and submits[1137].startswith("2021-09-20")
    assert max(submits[:1137]) < min(submits[1137:])


@pytest.mark.slow
@pytest.mark.parametrize("run", [f"{p}{s}" for p in "sm" for s in range(5)])
def test_the_kept_best_pt_gives_the_experiments_numbers(run):
    """Each slim best.pt re-scored on both held-out periods: the AWT and MWT the five seeds'
    experiment printed (the second runs' seeds 0, 1 and 3 are the first runs' models)."""
    from hpcsched.experiments.herasched_eval import period_prepared, run_model

    name = "experiment-5.txt" if run[0] == "s" else "experiment-mixed-5.txt"
    prefix = "dq" if run[0] == "s" else "dqm"
    for period, part in zip(("test", "test-high-load"), parts(name)):
        printed = re.search(rf"runs/{prefix}-s{run[1]}: AWT ([\d,.]+) s, MWT ([\d,]+) s;", part)
        got = run_model(period_prepared("spartan-deeplearn", period), str(DATA / run / "best.pt"))
        assert (f"{got.awt:,.1f}", f"{round(got.mwt):,}") == printed.groups()


def test_the_second_runs_setting_from_scratch_as_quoted():
    """x0-x2: the second runs' command without --init (their configs equal but for it and the
    length), stopped early; every validation after update 0 near S = 0, no episode ended."""
    text = flat(readme())
    logs = {s: rows(f"x{s}") for s in SEEDS}
    for seed, log in logs.items():
        ours, second = config(f"x{seed}"), config(f"m{seed}")
        assert ours["run_options"].pop("init") is None
        second["run_options"].pop("init")
        for c in (ours, second):
            c.pop("epochs"), c.pop("selector_steps")
        assert ours == second
        assert [int(r["epoch"]) for r in log] == list(range(1, len(log) + 1))
        assert all(float(r["val_score"]) < 0.001 for r in log if r["val_score"])
        assert [int(r["epoch"]) for r in log if r["val_score"]] == \
            list(range(5, len(log) + 1, 5))
        assert all(int(r["episodes_ended"]) == 0 for r in log)
    lengths = sorted(len(log) for log in logs.values())
    assert f"was stopped after update {lengths[0]}-{lengths[-1]}" in text
    took = [minutes(f"x{s}") for s in SEEDS]
    assert f"({min(took):.1f}-{max(took):.1f} min each)" in text
    waits = [float(r["val_wait"]) for log in logs.values() for r in log if r["val_wait"]]
    assert f"average waits of {min(waits):,.0f}-{max(waits):,.0f} s" in text
    first = [100 * float(log[0]["forward_with_fit_share"]) for log in logs.values()]
    last = [100 * float(log[-1]["forward_with_fit_share"]) for log in logs.values()]
    assert f"rose from {min(first):.0f}-{max(first):.0f} % of its decisions in update 1 to " \
           f"{min(last):.0f}-{max(last):.0f} % in the last" in text


def test_the_two_more_seeds_as_quoted():
    text = flat(readme())
    for seed in (3, 4):  # the same commands as seed 0's but for the seed (and its start)
        for run, other in ((f"s{seed}", "s0"), (f"m{seed}", "m0")):
            ours, theirs = config(run), config(other)
            assert (ours.pop("seed"), theirs.pop("seed")) == (seed, 0)
            if run[0] == "m":
                assert ours["run_options"].pop("init") == f"runs/dq-s{seed}/best.pt"
                theirs["run_options"].pop("init")
            assert ours == theirs
    (e3, s3), (e4, s4) = best("s3"), best("s4")
    assert f"best.pt: updates {e3} ({s3:.3f}) and {e4} ({s4:.3f}) in the first runs" in text
    (f3, t3), (f4, t4) = best("m3"), best("m4")
    assert f3 == 0 and f"in the second, seed 3's start ({t3:.3f}) and seed 4's update {f4} " \
                       f"({t4:.3f})" in text
    for prefix, quoted in (("s", "first runs"), ("m", "second runs")):
        took = [minutes(f"{prefix}{s}") for s in (3, 4)]
        assert f"{quoted} {min(took):.1f}-{max(took):.1f} min" in text
    test, high = parts("experiment-mixed-5.txt")
    mean = re.search(r"MWT below every cell's: yes \(([\d,]+) s, mean of 5 models; the lowest "
                     r"cell's ([\d,]+) s", high)
    lowest = re.search(r"- S > 2 against 21 of 21 cells \(mean S over the models; lowest S "
                       r"([\d.]+)", high)[1]
    assert f"MWT {mean[1]} s against {mean[2]} s, lowest mean S {lowest}" in text
    alone = re.findall(r"dqm-s(\d): .*?below every cell's: yes \(below 21 of 21\); S > 2 "
                       r"against 21 of 21", high)
    assert alone == ["0", "2", "3", "4"] and "4 of the 5 seeds beat every cell by both" in text
    margin = 100 * (num(mean[2]) - num(mean[1])) / num(mean[2])
    assert f"on five, on four seeds and a {margin:.1f} % margin" in text
    scores = sorted((best(f"m{s}")[1] for s in range(5)), reverse=True)
    assert scores[1] == t3 and f"whose validation S ({t3:.3f}) is the second highest" in text
    s3_test = re.search(r"dqm-s3: AWT [\d,.]+ s, MWT ([\d,]+) s; MWT below every cell's: no "
                        r"\(below 0 of 21\)", test)[1]
    assert f"waits {s3_test} s there, above every cell's" in text
    m = re.search(r"MWT below every cell's: no \(([\d,]+) s, mean of 5 models", test)[1]
    b = re.search(r"- S > 2 against (\d+) of 21 cells", test)[1]
    assert f"mean MWT {m} s, S > 2 against {b} of 21 cells" in text
    wall = re.search(r"real\t(\d+)m([\d.]+)s", (DATA / "experiment-mixed-5.txt").read_text())
    assert wall[1] == "0" and f"runs/dqm-s4`, {round(float(wall[2]))} s;" in text


def test_seed_3s_longest_wait_and_the_age_rule_on_five():
    text = flat(readme())
    out = (DATA / "oldest-s3.txt").read_text()
    job, wait, before, oldest = re.search(
        r"runs/dqm-s3/best\.pt on spartan-deeplearn test: AWT [\d,.]+ s, MWT ([\d,]+) s\n.*\n"
        r"\s+(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)", out).groups()[1:]
    assert num(before) + num(oldest) == num(wait) and num(oldest) > num(before)
    test = parts("experiment-mixed-5.txt")[0]
    assert f"dqm-s3: AWT 173.8 s, MWT {wait} s;" in test  # the same run as the experiment's
    assert f"Of seed 3's longest wait (job {job}), {oldest} s were spent as the oldest" in text
    wall = re.search(r"real\t0m([\d.]+)s", out)[1]
    assert f"runs/dqm-s3/best.pt`, {round(float(wall))} s;" in text
    got = reserve.choice(DATA / "reserve-choice-mixed-5.txt")
    lowest = {a: min(r[a][2] for r in got.values()) for a in reserve.AGES}
    assert max(reserve.AGES, key=lowest.get) == "none" and lowest["none"] == lowest["6:00:00"]
    assert all(len(r[a][0]) == 5 for r in got.values() for a in reserve.AGES)
    assert f"picks none, a tie with 6 h at {lowest['none']:.3f}" in text
    wall = re.search(r"wall_s=(\d+) main_cpu_s=[\d.]+ workers=1",
                     (DATA / "reserve-choice-mixed-5.txt").read_text())[1]
    assert f"the five files and `--workers 1`; `reserve-choice-mixed-5.txt`, {wall} s)" in text


def test_no_age_reaches_the_test_periods_lowest_cell():
    """The five second-run models at every age on the test periods (for information): the
    as-trained rows are the experiment's; no age's mean MWT is below FCFS + topology's."""
    got = reserve.choice(DATA / "reserve-test-mixed-5.txt")
    assert sorted(got) == ["test", "test-high-load"]
    test = parts("experiment-mixed-5.txt")[0]
    printed = [num(m) for m in re.findall(r"dqm-s\d: AWT [\d,.]+ s, MWT ([\d,]+) s;", test)]
    assert got["test"]["none"][1] == printed
    means = {a: sum(r[1]) / 5 for a, r in got["test"].items()}
    low = num(re.search(r"MWT below every cell's: no \([\d,]+ s, mean of 5 models; the lowest "
                        r"cell's ([\d,]+) s, fcfs \+ topology", test)[1])
    assert min(means.values()) > low
    best = min(means, key=means.get)
    assert best == "0" and f"the lowest is {means[best]:,.0f} s, at 0." in flat(readme())


def test_trained_with_the_reservation_from_age_0_as_quoted():
    text = flat(readme())
    for seed in SEEDS:  # the first runs' command with --reserve-after 0
        ours, first = config(f"r{seed}"), config(f"s{seed}")
        assert (ours.pop("reserve_after"), first.pop("reserve_after")) == (0, None)
        assert ours == first
    (e0, s0), (e1, s1), (e2, s2) = (best(f"r{s}") for s in SEEDS)
    assert (f"best.pt came at update {e0} (S {s0:.3f}), {e1} ({s1:.3f}) and {e2} "
            f"({s2:.3f})") in text
    took = [minutes(f"r{s}") for s in SEEDS]
    assert f"100 updates ({min(took):.1f}-{max(took):.1f} min each" in text
    test, high = parts("experiment-reserve0.txt")
    first_test = parts("experiment.txt")[0]

    def mean(part, n=3):
        return re.search(rf"MWT below every cell's: no \(([\d,]+) s, mean of {n} models", part)[1]

    awt = re.search(r"\| mean ± sd of 3 models \| ([\d,.]+) ±", test)[1]
    was = re.search(r"\| mean ± sd of 3 models \| ([\d,.]+) ±", first_test)[1]
    b_test = re.search(r"- S > 2 against (\d+) of 21 cells", test)[1]
    b_high = re.search(r"- S > 2 against (\d+) of 21 cells", high)[1]
    assert (f"On the test period the mean MWT is {mean(test)} s, about the first runs' "
            f"({mean(first_test)} s) and above FCFS + topology's, and the mean AWT rose to {awt} "
            f"s from {was} s (S > 2 against {b_test} cells); on the high-load day the mean MWT is "
            f"{mean(high)} s (S > 2 against none)") in text
    assert b_high == "0" and num(mean(high)) > 101_386
