"""The README's "The shipped Physical models" and "The two networks on Physical", and
BENCHMARKS.md's "HeraSched training: Physical", against the files in
benchmarks/data/herasched_physical/: each run's log.csv, config.json and printed output,
`experiment herasched`'s output on the shipped seeds (experiment.txt), on two of seed 0's
checkpoints (checkpoints-s0.txt) and on the checkpoints the two-day rule re-chose (rechosen.txt,
with choice-s*.txt), and
`benchmarks/herasched_update.py --thesis`'s output (update.txt). The shipped files themselves are
re-scored by tests/agents/test_herasched_pretrained.py (slow)."""

import csv
import json
import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_physical"
SEEDS = (0, 1, 2)


def flat(text: str) -> str:
    return " ".join(text.replace("\\\n", " ").split())


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**The shipped Physical models: three seeds, judged on the held-out "
                       "periods.**")
    return text[start:text.index("Not yet here:", start)]


def benchmarks() -> str:
    text = (ROOT / "BENCHMARKS.md").read_text()
    return text[text.index("## HeraSched training: Physical, and the update of each network"):]


def rows(seed: int) -> list[dict[str, str]]:
    with open(DATA / f"s{seed}" / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def num(text: str) -> float:
    return float(text.replace(",", ""))


def periods(name: str) -> tuple[str, str]:
    """An experiment output's two parts: the test day, the test high-load day."""
    test, high = (DATA / name).read_text().split("== physical-test-high-load")
    return test, high


def best(seed: int) -> tuple[int, float]:
    """best.pt's update and S: the first update of the highest validation S (a later equal score
    does not replace it)."""
    logged = [(int(r["epoch"]), float(r["val_score"])) for r in rows(seed) if r["val_score"]]
    top = max(s for _, s in logged)
    return next(e for e, s in logged if s == top), top


@pytest.mark.parametrize("seed", SEEDS)
def test_each_run_is_the_command_printed_and_stopped_after_update_60(seed):
    c = json.loads((DATA / f"s{seed}" / "config.json").read_text())
    assert (c["net"], c["seed"], c["epochs"], c["selector_every"], c["allocator_every"],
            c["gamma"], c["pi_lr"], c["cluster"], c["trace"], c["selector_reward"]) == \
        ("default", seed, 100, 1, 1, 0.99, 1e-4, "spartan-physical", "ph-train.txt", "average")
    o = c["run_options"]
    assert (o["validate_trace"], o["validate_jobs"], o["validate_subsets"]) == \
        ("ph-validation.txt", 5000, 4)
    text = flat(readme())
    assert "--epochs 100 --selector-every 1 --allocator-every 1 --gamma 0.99 --pi-lr 1e-4 " \
           "--validate-trace ph-validation.txt --validate-jobs 5000 --keep-validated" in text
    assert [int(r["epoch"]) for r in rows(seed)] == list(range(1, 61))
    assert "stopped after update 60 (123 k selector steps)" in text
    assert round(sum(int(r["selector_steps"]) for r in rows(seed)), -3) == 123_000


def test_best_pt_and_the_validation_the_readme_describes():
    text = flat(readme())
    got = [best(s) for s in SEEDS]
    assert "best.pt came at update {} (validation S {:.3f}), {} ({:.3f}) and {} ({:.3f})".format(
        *[v for b in got for v in b]) in text
    # the validated span and its reference, as the runs printed them
    out = (DATA / "s0" / "output.txt").read_text()
    assert "the last 5000 jobs of ph-validation.txt; FCFS + best-fit + EASY there: AWT 15 s, " \
           "MWT 1,689 s" in out
    assert "(FCFS + best-fit: AWT 15 s, MWT 1,689 s)" in text
    # seeds 0 and 1 scored the same there, and seed 1's untrained model already did
    for seed in (0, 1):
        assert "val S 3.359 (AWT 8 s, MWT 1,081 s" in (DATA / f"s{seed}" / "output.txt").read_text()
    assert "untrained greedy model: validation S 3.359" in (DATA / "s1" / "output.txt").read_text()
    assert "seeds 0 and 1 scored exactly the same there (AWT 8 s, MWT 1,081 s)" in text


def table() -> dict[str, list[str]]:
    """The rows of the section's tables of five columns (period, AWT, MWT, MWT below, S > 2)."""
    out = {}
    for line in readme().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| test") and len(cells) == 5:
            out[cells[0].split(" (")[0]] = cells[1:]
    return out


RECHOSEN = {0: 60, 1: 50, 2: 50}  # the checkpoints the two-day rule picks (checked below)


def summary(part: str, model: str):
    """One period of an experiment's output: each model's line (`model`, a pattern whose group is
    the seed: seed, AWT, MWT, cells below, cells beaten), the mean ± sd row (AWT, sd, MWT, sd)
    and the criterion's line (yes or no, the lowest cell's MWT, cells below)."""
    models = re.findall(model + r": AWT ([\d,.]+) s, MWT ([\d,]+) s;"
                        r".*?\(below (\d+) of 21\); S > 2 against (\d+) of 21", part)
    assert [int(m[0]) for m in models] == list(SEEDS)
    mean = re.search(r"\| mean ± sd of 3 models \| ([\d,.]+) ± ([\d,.]+) \| "
                     r"([\d,]+) ± ([\d,]+) \|", part)
    crit = re.search(r"MWT below every cell's: (yes|no) \([\d,]+ s, mean of 3 models; the "
                     r"lowest cell's ([\d,]+) s, .*?; below (\d+) of 21 cells\)", part)
    return models, mean, crit


def columns(models, mean) -> tuple[str, str]:
    """A README table's AWT and MWT cells for that period: per seed, then mean ± sd."""
    return (", ".join(m[1] for m in models) + f"; {mean[1]} ± {mean[2]}",
            ", ".join(m[2] for m in models) + f"; {mean[3]} ± {mean[4]}")


@pytest.mark.parametrize("output, keys, model", [
    ("experiment.txt", ("test", "test high-load day"), r"pretrained/herasched-physical-s(\d)"),
    ("rechosen.txt", ("test, chosen with both days", "test high-load day, chosen with both days"),
     r"ph-s(\d)/validated/epoch-\d+\.pt")])
def test_the_tables_are_the_experiments_output(output, keys, model):
    got = table()
    for key, part in zip(keys, periods(output)):
        awt, mwt, below, beaten = got[key]
        models, mean, crit = summary(part, model)
        assert (awt, mwt) == columns(models, mean)
        assert below in (f"{crit[1]} (lowest cell {crit[2]} s; below {crit[3]} of 21)",
                         f"{crit[1]} (below {crit[3]} of 21)")
        s2 = re.search(r"- S > 2 against (\d+) of 21 cells \(mean S over the models; lowest S "
                       r"([\d.]+) against ([\w+ -]+), highest ([\d.]+)", part)
        assert beaten == f"{s2[1]} of 21 ({', '.join(m[4] for m in models)})"
        # the mean and sd are the three models' own
        awts = [num(m[1]) for m in models]
        assert num(mean[1]) == pytest.approx(sum(awts) / 3, abs=0.05)


def test_the_commands_time_is_the_experiments():
    wall = re.search(r"real\t(\d+)m([\d.]+)s", (DATA / "experiment.txt").read_text())
    minutes, seconds = int(wall[1]), round(float(wall[2]))
    assert f"# the shipped seeds, {minutes} min {seconds} s" in readme()
    models_md = (ROOT / "src/hpcsched/data/pretrained/MODELS.md").read_text()
    assert f"--cluster spartan-physical --markdown`, {minutes} min {seconds} s on one core" in \
        flat(models_md)


def test_what_holds_follows_from_the_output():
    text = flat(readme())
    test, high = periods("experiment.txt")
    assert "MWT below every cell's: yes (75,529 s, mean of 3 models; the lowest cell's 90,396 s, " \
           "lcfs + best-fit" in test
    assert "MWT 75,529 s, below the lowest cell's 90,396 s (LCFS + best-fit)" in text
    assert "lowest S 3.36 against f1 + best-fit" in test
    assert "(lowest mean S 3.36, against F1 + best-fit)" in text
    assert "herasched-physical-s2: AWT 145.5 s, MWT 142,499 s; MWT below every cell's: no " \
           "(below 8 of 21); S > 2 against 7 of 21" in test
    assert "seed 2 alone beats 7 cells by S and 8 by MWT" in text
    assert "sd of MWT (62,500 s)" in text and "75,529 ± 62,500" in test
    # the high-load day: every seed's AWT above every cell's; the mean S's range
    cells = [num(cell.split(" / ")[0].strip("* ")) for line in high.splitlines()
             if re.match(r"\| (fcfs|lcfs|sjf|wfp3|unicep|f1|f2) \|", line) and " / " in line
             for cell in line.strip("|").split("|")[1:]]
    assert len(cells) == 21
    seeds = [num(v) for v in re.findall(r"herasched-physical-s\d \| ([\d,.]+) \|", high)]
    assert len(seeds) == 3 and min(seeds) > max(cells)
    assert f"lowest cell AWT {min(cells):,.1f} s, WFP3 + topology" in text
    assert "lowest S 1.01 against wfp3 + topology, highest 1.79" in high
    assert "the mean S lies between 1.01 and 1.79" in text
    assert "below 2 of 21 cells" in high and "the mean MWT is below 2 cells' only" in text


def slots(part: str) -> tuple[int, dict[str, int]]:
    total = int(re.search(r"the selector's ([\d,]+) decisions", part)[1].replace(",", ""))
    counts = {m[0]: int(m[1]) for m in re.findall(r"^\| ([\w -]+?(?: \(tail\))?) \| (\d+) \| "
                                                    r"[\d.]+% \|$", part, re.M)}
    assert sum(counts.values()) == total
    return total, counts


def test_the_slot_shares_are_the_experiments():
    text = flat(readme())
    (n_test, test), (n_high, high) = (slots(p) for p in periods("experiment.txt"))
    share = (test["0"] + test["1-55"]) / n_test
    assert f"slots 0-55 in {100 * share:.1f} % of its {n_test:,} decisions" in text
    assert test["448-511 (tail)"] == 0 and "the window's tail never" in text
    share = high["448-511 (tail)"] / n_high
    assert f"the tail (the 64 newest jobs) in {100 * share:.1f} % of {n_high:,}" in text


def test_seed_0s_checkpoints_are_the_output_quoted():
    text = flat(readme())
    test, high = periods("checkpoints-s0.txt")
    assert "ph-s0/validated/epoch-50.pt: AWT 149.3 s, MWT 196,791 s;" in test
    assert "ph-s0/validated/epoch-50.pt: AWT 890.8 s, MWT 263,983 s;" in high
    assert re.search(r"epoch-50.pt: AWT 149.3 s.*S > 2 against 0 of 21", test)
    assert re.search(r"epoch-50.pt: AWT 890.8 s.*S > 2 against 14 of 21", high)
    assert "waits 149.3 s / 196,791 s on the test day (S > 2 against 0 cells) and 890.8 s / " \
           "263,983 s on the high-load day (against 14)" in text
    # update 10's copy is best.pt: the same numbers as the shipped seed 0
    assert "ph-s0/validated/epoch-10.pt: AWT 92.0 s, MWT 18,753 s;" in test
    assert "herasched-physical-s0: AWT 92.0 s, MWT 18,753 s;" in periods("experiment.txt")[0]
    v = {int(r["epoch"]): float(r["val_score"]) for r in rows(0) if r["val_score"]}
    assert f"seed 0 at update 50 (validation S {v[50]:.3f}, not chosen)" in text


def update_numbers() -> dict[str, float]:
    last = (DATA / "update.txt").read_text().strip().splitlines()[-1]
    return {k: float(v) for k, v in (p.split("=") for p in last.split())}


def test_the_update_benchmark_and_what_follows_from_it():
    u = update_numbers()
    text, bench = flat(readme()), flat(benchmarks())
    ours, theirs = u["default_update_cpu_s"], u["thesis_update_cpu_s"]
    ratio = round(theirs / ours)
    assert (f"ours {ours:.1f} CPU s, the thesis's **{theirs:,.0f} CPU s**, {ratio} times as "
            f"much") in text
    assert f"costs {ratio} times ours in CPU per update" in bench
    hours = round(100 * theirs / 3600)
    assert f"100 updates of the thesis's network would be {hours} hours of one core" in text
    assert f"100 of its updates would be {hours} hours of one core" in bench
    most = math.floor(8 * 3600 * 2 / theirs)
    steps = round(most * 2048 / 1000)
    assert f"buy at most {most} of its updates ({steps} k selector steps)" in text
    weights = int(u["thesis_weights"])
    assert f"{weights / 1e6:.1f} M weights in the four networks" in text
    assert f"our {u['default_weights'] / 1e3:.1f} k" in text
    # Table 4.2's first layer for Physical: 35,340 inputs x 4,096 in each of the four networks
    assert weights > 4 * 35_340 * 4096
    for net, name in (("default", "ours (`default`)"), ("thesis", "the thesis's (`thesis`)")):
        def pair(what):
            w, c = u[f"{net}_{what}_s"], u[f"{net}_{what}_cpu_s"]
            return (f"{w:,.0f} / {c:,.0f}" if what == "update" and net == "thesis" else
                    f"{w:.1f} / {c:.1f}" if what == "update" else
                    f"{w:.4f} / {c:.4f}" if net == "default" else f"{w:.2f} / {c:.2f}")
        row = (f"| {name} | {int(u[f'{net}_weights']):,} | {pair('selector_minibatch')} | "
               f"{pair('allocator_minibatch')} | {pair('update')} |")
        assert row in benchmarks(), row
    assert f"It took {u['max_rss_gb']:.1f} GB of memory" in bench


def test_the_benchmarks_training_table_is_the_logs():
    bench = benchmarks()
    walls = []
    for seed in SEEDS:
        r = rows(seed)
        sel = sum(int(x["selector_steps"]) for x in r)
        alloc = sum(int(x["allocator_steps"]) for x in r)
        wall = sum(float(x["epoch_s"]) for x in r)
        share = sum(float(x["rollout_s"]) for x in r) / wall
        walls += [float(x["epoch_s"]) for x in r]
        assert (f"| seed {seed} | 60 | {sel:,} / {alloc:,} | {wall:,.0f} s | {sel / wall:.0f} | "
                f"{100 * share:.0f} % |") in bench
    assert f"An update took {min(walls):.0f}-{max(walls):.0f} s (`epoch_s`)" in bench
    to_best = [round(sum(float(x["epoch_s"]) for x in rows(s) if int(x["epoch"]) <= best(s)[0]))
               for s in SEEDS]
    assert "best.pt came after {:,}, {:,} and {:,} s of updates".format(*to_best) in flat(bench)


def choice(seed: int) -> dict[int, tuple[float, float]]:
    """herasched_choice.py's table for a run: {update: (median S on the validated span, S against
    FCFS + best-fit on the validation high-load day)}."""
    text = (DATA / f"choice-s{seed}.txt").read_text()
    return {int(m[0]): (float(m[1]), float(m[2])) for m in
            re.findall(r"^ +(\d+) +[\d.]+ +([\d.]+) +[\d,.]+ / +[\d,]+ +([\d.]+) +\d+ +\d+$",
                       text, re.M)}


def test_the_two_day_rule_picks_what_the_readme_says_and_what_was_evaluated():
    text = flat(readme())
    picks = {}
    for seed in SEEDS:
        table_ = choice(seed)
        assert sorted(table_) == [10, 20, 30, 40, 50, 60]
        # the median S column is the run's own log (the script checked AWT and MWT itself)
        logged = {int(r["epoch"]): float(r["val_score"]) for r in rows(seed) if r["val_score"]}
        assert all(abs(table_[e][0] - logged[e]) < 5e-4 for e in table_)
        picks[seed] = max(table_, key=lambda e: (min(table_[e]), -e))
    assert picks == RECHOSEN
    assert "It picks update {}, {} and {} (seed 2's best.pt again)".format(*picks.values()) in text
    assert picks[2] == best(2)[0] and picks[0] != best(0)[0] and picks[1] != best(1)[0]
    models = ",".join(f"runs/ph-s{s}/validated/epoch-{e}.pt" for s, e in picks.items())
    assert f"--models {models} --markdown`" in text
    wall = re.search(r"real\t(\d+)m([\d.]+)s", (DATA / "rechosen.txt").read_text())
    assert f"--markdown`, {wall[1]} min {round(float(wall[2]))} s; `rechosen.txt` there)" in text


def test_what_the_two_day_rule_changed_follows_from_the_outputs():
    text = flat(readme())
    (test0, high0), (test1, high1) = periods("experiment.txt"), periods("rechosen.txt")

    def lowest(part):
        return re.search(r"lowest S ([\d.]+) against", part)[1]

    def counts(part):
        return re.search(r"below (\d+) of 21 cells\)\n- S > 2 against (\d+) of 21", part).groups()

    assert f"(test: lowest mean S {lowest(test1)} against {lowest(test0)};" in text
    (b0, s0), (b1, s1) = counts(high0), counts(high1)
    assert f"S > 2 against {s1} cells instead of {s0}, MWT below {b1} instead of {b0})" in text
    seed0 = re.search(r"ph-s0/validated/epoch-60.pt: AWT [\d,.]+ s, MWT [\d,]+ s; .*S > 2 against "
                      r"(\d+) of 21", high1)[1]
    assert f"rests mostly on seed 0 ({seed0} cells)" in text
    assert int(s1) > int(s0) and int(b1) > int(b0)  # "both improve" on the high-load day
    assert float(lowest(test1)) > float(lowest(test0))


def test_the_validate_also_example_names_the_protocols_validation_high_load_day():
    from hpcsched.workload.hera_periods import hera_period

    text = flat(readme())
    command = hera_period("spartan-physical", "validation-high-load").command("X")
    assert command.startswith("hpcsched trace generate spartan-physical --seed 1714 "
                              "--high-load-day")
    assert f"`{command.removesuffix(' -o X')}`" in text
    assert "--validate-also ph-validation-high-load.txt" in text
