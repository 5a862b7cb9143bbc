"""The README's "EASY's reservation for the oldest job (`@reserve`)" against the files in
benchmarks/data/herasched_reserve/: `benchmarks/herasched_reserve.py`'s choice of the age on each
partition's validation periods (PARTITION-choice.txt), `experiment herasched` on the shipped
models read with that age (PARTITION-experiment.txt), and seed 0 at every age on the Physical test
high-load day (physical-s0-test-high-load.txt); and against the shipped models' own numbers
(benchmarks/data/herasched_physical/, the README's Deeplearn table)."""

import re
from pathlib import Path

import pytest

from tests.experiments.test_readme_herasched_physical import columns, flat, num, summary

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_reserve"
SHIPPED = ROOT / "benchmarks" / "data" / "herasched_physical"
AGES = ("none", "0", "1:00:00", "6:00:00")
CHOSEN = {"physical": "1:00:00", "deeplearn": "6:00:00"}
MARKER = "**EASY's reservation for the oldest job (`@reserve`)"


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(MARKER)
    return text[start:text.index("**Trained with the reservation (`--reserve-after", start)]


def choice(path: Path) -> dict[str, dict[str, tuple]]:
    """{period: {age: (AWTs, MWTs, lowest mean S)}} of a herasched_reserve.py output."""
    out, period = {}, None
    for line in path.read_text().splitlines():
        head = re.match(r"spartan-\w+, ([\w-]+): lowest AWT", line)
        if head:
            period = out.setdefault(head[1], {})
            continue
        row = re.match(r"\s*(none|[\d:-]+)\s+([\d,.]+(?:, [\d,.]+)*)\s+([\d,]+(?:, [\d,]+)*)"
                       r"\s+[\d,.]+\s+[\d,]+\s+([\d.]+) \(", line)
        if row and period is not None:
            period[row[1]] = ([num(v) for v in row[2].split(", ")],
                              [num(v) for v in row[3].split(", ")], float(row[4]))
    return out


@pytest.mark.parametrize("partition", ["physical", "deeplearn"])
def test_the_rule_picks_the_age_whose_lowest_mean_s_is_highest(partition):
    path = DATA / f"{partition}-choice.txt"
    got = choice(path)
    assert sorted(got) == ["validation", "validation-high-load"]
    assert all(tuple(rows) == AGES for rows in got.values())
    lowest = {a: min(rows[a][2] for rows in got.values()) for a in AGES}
    chosen = max(AGES, key=lowest.get)
    assert chosen == CHOSEN[partition]
    out = path.read_text()
    assert f"the rule picks: {chosen}" in out and f"chosen={chosen} models=3" in out
    # as trained (none), the models score no better than with a reservation held at some age
    assert lowest["none"] < lowest[chosen]


def test_the_choices_quoted():
    text = flat(readme())
    ph = {a: min(r[a][2] for r in choice(DATA / "physical-choice.txt").values()) for a in AGES}
    dl = {a: min(r[a][2] for r in choice(DATA / "deeplearn-choice.txt").values()) for a in AGES}
    assert (f"The rule picks 1 h on Physical (lowest mean S {ph['1:00:00']:.3f}, against "
            f"{ph['none']:.3f} as trained, {ph['0']:.3f} at 0 and {ph['6:00:00']:.3f} at 6 h; "
            f"each the validation high-load day's, against UNICEP + best-fit) and 6 h on "
            f"Deeplearn ({dl['6:00:00']:.3f}, against {dl['none']:.3f}, {dl['0']:.3f} and "
            f"{dl['1:00:00']:.3f} at 1 h)") in text
    # on Physical each age's lowest is the validation high-load day's, against UNICEP + best-fit
    assert re.search(r"per AGE: " + "; ".join(
        rf"{a}: [\d.]+ \(validation-high-load, unicep \+ best-fit\)" for a in AGES),
        (DATA / "physical-choice.txt").read_text())
    wall = re.search(r"wall_s=(\d+)", (DATA / "physical-choice.txt").read_text())[1]
    assert f"# {int(wall) // 60} min {int(wall) % 60} s, 2 workers" in readme()
    wall = re.search(r"wall_s=(\d+) main_cpu_s=[\d.]+ workers=1",
                     (DATA / "deeplearn-choice.txt").read_text())[1]
    assert f"--workers 1 # {wall} s" in text
    # the shipped models' largest waits on the high-load day, which the section starts from
    high = (SHIPPED / "experiment.txt").read_text().split("== physical-test-high-load")[1]
    mwts = [num(m) for m in re.findall(r"herasched-physical-s\d: AWT [\d,.]+ s, MWT ([\d,]+) s;",
                                       high)]
    assert len(mwts) == 3
    assert f"their largest waits were {min(mwts):,.0f}-{max(mwts):,.0f} s" in text


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_as_trained_the_choice_reruns_the_shipped_models_validation_high_load_day(seed):
    """The 'none' row is the shipped file (best.pt by the median of 4 subsets) as scored on the
    validation high-load day when it was chosen (benchmarks/herasched_choice.py, another run)."""
    rows = choice(DATA / "physical-choice.txt")["validation-high-load"]["none"]
    out = (SHIPPED / f"choice-s{seed}.txt").read_text()
    at = re.search(r"best\.pt by the median of 4: update \d+\n  validation-high-load: AWT "
                   r"([\d,.]+) s, MWT ([\d,]+) s", out)
    assert (rows[0][seed], rows[1][seed]) == (num(at[1]), num(at[2]))


def parts(name: str) -> list[str]:
    text = (DATA / f"{name}-experiment.txt").read_text()
    return text.split(f"== {name}-test-high-load")


def test_the_experiments_ran_the_shipped_models_with_the_chosen_age():
    for name, age in CHOSEN.items():
        text = (DATA / f"{name}-experiment.txt").read_text()
        named = set(re.findall(r"herasched:(pretrained/herasched-\w+-s\d@reserve=[\d:]+)", text))
        assert named == {f"pretrained/herasched-{name}-s{s}@reserve={age}" for s in (0, 1, 2)}
        models = " ".join(f"--models {m}" for m in sorted(named))
        assert f"--cluster spartan-{name} --markdown {models}" in flat(readme())
    walls = [re.search(r"real\t(\d+)m([\d.]+)s", (DATA / f"{n}-experiment.txt").read_text())
             for n in CHOSEN]
    (pm, ps), (dm, ds) = ((int(w[1]), round(float(w[2]))) for w in walls)
    assert dm == 0 and f"On the held-out periods ({pm} min {ps} s and {ds} s)" in flat(readme())


def table(section: str | None = None) -> dict[str, list[str]]:
    """The section's table rows (default: this one's), by their first cell."""
    from tests.experiments.test_readme_herasched_mixed import table as rows_of

    return rows_of(readme() if section is None else section)


def test_the_table_is_the_experiments_output():
    got = table()
    keys = []
    for name, label in (("physical", "Physical"), ("deeplearn", "Deeplearn")):
        age = CHOSEN[name]
        for key, part in zip((f"test, {label}, @reserve={age}",
                              f"test high-load day, {label}, @reserve={age}"), parts(name)):
            keys.append(key)
            check_row(got[key], part, rf"herasched-{name}-s(\d)@reserve=[\d:]+")
    assert sorted(got) == sorted(keys)


def check_row(row: list[str], part: str, models_named: str) -> None:
    """A README table row (after its first cell) is an experiment period's output `part` for the
    models whose names match `models_named` (its group: the seed)."""
    awt, mwt, below, beaten = row
    models, mean, crit = summary(part, models_named)
    assert (awt, mwt) == columns(models, mean)
    assert below == f"{crit[1]} (below {crit[3]} of 21)"
    s2 = re.search(r"- S > 2 against (\d+) of 21 cells \(mean S over the models", part)
    assert beaten == f"{s2[1]} of 21 ({', '.join(m[4] for m in models)})"


def shipped_deeplearn() -> dict[str, tuple[str, str, str]]:
    """{period: (mean MWT, cells beaten by S > 2, cells whose MWT is above), as printed} of the
    README's table of the shipped Deeplearn models as trained."""
    full = (ROOT / "README.md").read_text()
    start = full.index("**The shipped Deeplearn models: three seeds")
    out = {}
    for key, row in table(full[start:full.index("What holds and what does not.", start)]).items():
        out[key.split(" (")[0]] = (re.search(r"; ([\d,]+) ±", row[1])[1], row[3].split(" of")[0],
                                   re.search(r"below (\d+) of 21", row[2])[1])
    return out


def mean_mwt(part: str) -> str:
    return re.search(r"MWT below every cell's: \w+ \(([\d,]+) s, mean of 3", part)[1]


def counts(part: str) -> tuple[int, int]:
    """(cells the mean S beats by S > 2, cells whose MWT is above the mean MWT)."""
    beaten = int(re.search(r"- S > 2 against (\d+) of 21 cells", part)[1])
    below = int(re.search(r"MWT below every cell's: \w+ .*?below (\d+) of 21 cells\)", part)[1])
    return beaten, below


def test_the_comparisons_with_the_models_as_trained():
    text = flat(readme())
    ours = parts("physical")
    theirs = (SHIPPED / "experiment.txt").read_text().split("== physical-test-high-load")
    a, b = num(mean_mwt(ours[1])), num(mean_mwt(theirs[1]))
    assert f"falls {round(100 * (b - a) / b)} % ({mean_mwt(ours[1])} s against " \
           f"{mean_mwt(theirs[1])} s)" in text
    (s_ours, w_ours), (s_theirs, w_theirs) = counts(ours[1]), counts(theirs[1])
    assert s_ours == s_theirs == 0 and "S > 2 against 0 cells, as before" in text
    assert f"MWT below {w_ours} instead of {w_theirs}" in text
    # seed 2 on the test day: as trained it beat 7 cells, read with the reservation none
    s2 = re.search(r"herasched-physical-s2: AWT .*?S > 2 against (\d+) of 21", theirs[0])[1]
    now = re.search(r"herasched-physical-s2@reserve=[\d:]+: AWT .*?S > 2 against (\d+) of 21",
                    ours[0])[1]
    assert (now, s2) == ("0", "7") and "seed 2 now beating no cell (it beat 7)" in text
    # Deeplearn: against the shipped models' table earlier in the README
    shipped = shipped_deeplearn()
    was_test, beat_test, below_test = shipped["test"]
    was_high, beat_high, _ = shipped["test high-load day"]
    dl = parts("deeplearn")
    (bt, wt), (bh, _) = counts(dl[0]), counts(dl[1])
    assert (f"(mean MWT {mean_mwt(dl[0])} s against {was_test} s, S > 2 against {bt} cells "
            f"instead of {beat_test}, MWT below {wt} instead of {below_test})") in text
    assert (f"(S > 2 against {bh} cells instead of {beat_high}; mean MWT {mean_mwt(dl[1])} s "
            f"against {was_high} s)") in text
    assert num(mean_mwt(dl[0])) < num(was_test) and bh < int(beat_high)  # gains, then loses


def test_seed_0_at_each_age_on_the_test_high_load_day():
    """The validation's order of the ages is not the test high-load day's (seed 0); its 1 h run
    is the experiment's seed 0 again, from another process."""
    got = choice(DATA / "physical-s0-test-high-load.txt")
    assert list(got) == ["test-high-load"]
    rows = got["test-high-load"]
    mwt = {a: rows[a][1][0] for a in AGES}
    s0 = re.search(r"herasched-physical-s0@reserve=1:00:00: AWT ([\d,.]+) s, MWT ([\d,]+) s;",
                   parts("physical")[1])
    assert mwt["1:00:00"] == num(s0[2]) and rows["1:00:00"][0][0] == num(s0[1])
    shipped = re.search(r"herasched-physical-s0: AWT [\d,.]+ s, MWT ([\d,]+) s;",
                        (SHIPPED / "experiment.txt").read_text().split("== physical-test-high")[1])
    assert mwt["none"] == num(shipped[1])
    val = {a: min(r[a][2] for r in choice(DATA / "physical-choice.txt").values()) for a in AGES}
    assert val["0"] < val["1:00:00"] and mwt["0"] < mwt["1:00:00"]  # the order turns round
    text = flat(readme())
    assert (f"on Physical 0 and 1 h score {val['0']:.3f} and {val['1:00:00']:.3f} there, and "
            f"seed 0's MWT on the test high-load day is {mwt['0']:,.0f} s at 0 against "
            f"{mwt['1:00:00']:,.0f} s at 1 h") in text


def test_the_decision_times_quoted_are_the_benchmarks_output():
    out = (DATA / "decision.txt").read_text()
    pairs = dict(re.findall(r"(\w+)=([\d.]+)", out.splitlines()[-5]))
    ratio = re.search(r"as trained, per decide: ([\d.]+)", out)[1]
    bench = (ROOT / "BENCHMARKS.md").read_text()
    section = bench[bench.index("## HeraSched: one decision with EASY's reservation"):]
    for label, key in (("as trained", "default"), ("`@reserve` (held at this instant)",
                                                    "default_reserve")):
        cells = [pairs[f"{key}_{k}_us"] for k in ("observe", "selector", "allocator", "decide",
                                                   "per_decision")]
        assert f"| {label} | {' | '.join(cells)} |" in section
    assert f"The reservation costs {ratio} times a `decide`" in section
    assert f"load average {pairs['load']}" in section
    per = int(pairs["default_reserve_per_decision_us"]) / 1000
    assert f"{ratio} times as long a `decide` ({per:.2f} ms an agent decision" in flat(
        (ROOT / "README.md").read_text())
    assert "(held for the oldest: True)" in out  # the reservation was held, not skipped


def test_when_a_job_became_the_oldest_worked_by_hand():
    import importlib.util

    spec = importlib.util.spec_from_file_location("herasched_oldest",
                                                  ROOT / "benchmarks" / "herasched_oldest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import numpy as np

    # j0 waits from 0 to 50; j1 (10) starts at 20, ahead of j0; j2 (10, after j1 by row) is the
    # oldest once j0 starts at 50 and starts at 70; j3 (30) starts at 40, ahead of j0 and j2
    got = mod.oldest_since(np.array([0.0, 10, 10, 30]), np.array([50.0, 20, 70, 40]))
    assert got.tolist() == [0, 20, 50, 40]
    # submitted in another order than the rows
    got = mod.oldest_since(np.array([30.0, 0, 10]), np.array([35.0, 5, 60]))
    assert got.tolist() == [35, 0, 10]


def oldest(name: str) -> dict[str, tuple[float, list[tuple]]]:
    """{spec: (MWT, [(job id, wait, before oldest, as oldest), ...])} of a herasched_oldest.py
    output, each run's rows longest wait first."""
    runs = {}
    for block in (DATA / name).read_text().split("\n\n"):
        head = re.match(r"(\S+) on spartan-\w+ [\w-]+: AWT [\d,.]+ s, MWT ([\d,]+) s",
                        block.strip())
        if head:
            rows = re.findall(r"^\s*(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)$", block, re.M)
            runs[head[1]] = (num(head[2]), [(r[0], *(num(v) for v in r[1:])) for r in rows])
    return runs


def test_where_the_longest_waits_went_as_quoted():
    out = (DATA / "physical-oldest.txt").read_text()
    runs = {k: (m, [r[1:] for r in rows]) for k, (m, rows) in oldest("physical-oldest.txt").items()}
    s0, s0_1h, s0_0, fcfs = ("pretrained/herasched-physical-s0",
                             "pretrained/herasched-physical-s0@reserve=1:00:00",
                             "pretrained/herasched-physical-s0@reserve=0", "fcfs+first-available")
    assert list(runs) == [s0, s0_1h, s0_0, fcfs]
    for mwt, rows in runs.values():
        assert len(rows) == 5 and rows[0][0] == mwt  # the longest first: the period's MWT
        assert all(w == b + a for w, b, a in rows)  # each wait split in two
    # the MWTs are the experiments' (another process): as trained, at 1 h, the grid's FCFS cell
    high = parts("physical")[1]
    shipped = (SHIPPED / "experiment.txt").read_text().split("== physical-test-high-load")[1]
    assert runs[s0][0] == num(re.search(r"herasched-physical-s0: AWT [\d,.]+ s, MWT ([\d,]+) s",
                                        shipped)[1])
    assert runs[s0_1h][0] == num(re.search(r"s0@reserve=1:00:00: AWT [\d,.]+ s, MWT ([\d,]+) s",
                                           high)[1])
    assert runs[fcfs][0] == num(re.search(r"lowest MWT ([\d,]+) s \(fcfs \+ first-available\)",
                                          high)[1])
    text = flat(readme())
    wait, before, after = runs[s0][1][0]
    assert f"seed 0's longest ({wait:,.0f} s) was {after:,.0f} s as the oldest" in text
    rest = runs[s0][1][1:] + [r for k in (s0_1h, s0_0, fcfs) for r in runs[k][1]]
    share = min(b / w for w, b, _ in rest)
    assert f"were each at least {int(100 * share)} % spent before" in text
    assert (f"at 1 h (up to {runs[s0_1h][0]:,.0f} s) or at 0 (up to {runs[s0_0][0]:,.0f} s) and "
            f"of FCFS + first-available (up to {runs[fcfs][0]:,.0f} s)") in text
    wall = int(re.search(r"wall_s=(\d+)", out)[1])
    assert f"({wall // 60} min {wall % 60} s; `physical-oldest.txt`)" in text


def test_the_choice_script_runs_and_takes_the_first_age_on_a_tie(tmp_path):
    """A quick run: on the first 300 jobs of Deeplearn's validation period nothing waits long
    enough for a reservation to change a schedule, so every AGE scores alike and the first wins."""
    import subprocess
    import sys

    got = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "herasched_reserve.py"),
                          "--cluster", "spartan-deeplearn", "--ages", "none,0", "--periods",
                          "validation", "--jobs", "300", "--workers", "1"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert got.returncode == 0, got.stderr[-2000:]
    out = got.stdout
    (tmp_path / "out.txt").write_text(out)
    rows = choice(tmp_path / "out.txt")["validation"]
    assert list(rows) == ["none", "0"] and rows["none"] == rows["0"]
    assert "the rule picks: none" in out and "models=3 runs=27" in out
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "herasched_reserve.py"),
                          "--cluster", "spartan-deeplearn", "--ages", "none,12h"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert bad.returncode != 0 and "12h: not a Slurm duration" in bad.stderr


def test_the_tail_share_quoted():
    high = parts("physical")[1]
    total = re.search(r"Fig\. 4\.6: the selector's ([\d,]+) decisions \(all models\)", high)[1]
    share = re.search(r"\| 448-511 \(tail\) \| \d+ \| ([\d.]+)% \|", high)[1]
    shipped = (SHIPPED / "experiment.txt").read_text().split("== physical-test-high-load")[1]
    was = re.search(r"\| 448-511 \(tail\) \| \d+ \| ([\d.]+)% \|", shipped)[1]
    assert (f"the selector still chose the window's tail in {share} % of its {total} decisions "
            f"(three models; {was} % as trained)") in flat(readme())


def test_seed_0_s_longest_wait_on_deeplearn_s_test_period_was_spent_as_the_oldest():
    out = (DATA / "deeplearn-oldest.txt").read_text()
    blocks = {k: rows[0] for k, (_, rows) in oldest("deeplearn-oldest.txt").items()}
    models = [f"pretrained/herasched-deeplearn-s{s}{r}" for s in range(3)
              for r in ("", "@reserve=6:00:00")]
    assert list(blocks) == models + ["fcfs+topology"]
    trained, held = blocks[models[0]], blocks[models[1]]
    assert trained == held and trained[2] == 0 and trained[3] == trained[1]  # the same job, all
    # as the oldest; the experiment's seed 0 at 6 h, from another process
    s0 = re.search(r"herasched-deeplearn-s0@reserve=6:00:00: AWT [\d,.]+ s, MWT ([\d,]+) s;",
                   parts("deeplearn")[0])
    assert held[1] == num(s0[1])
    assert f"its longest wait, {held[1]:,.0f} s both as trained and at 6 h, was all spent as " \
           f"the oldest job" in flat(readme())
    wall = re.search(r"wall_s=(\d+)", out)[1]
    assert f"11 s, `deeplearn-oldest.txt`" in flat(readme()) and wall == "11"
