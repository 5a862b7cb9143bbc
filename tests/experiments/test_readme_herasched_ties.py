"""The README's "The luck of the tie order" paragraph against its data
(benchmarks/data/herasched_ties/, the rows of `experiment herasched --tie-draws`): the groups of
jobs alike are counted again on the periods; one cell's MWT on all 30 Deeplearn schedules is
recomputed from the shuffled periods; the period as generated (draw 0) gives the numbers earlier
paragraphs report from other runs; and every number of the two tables and the bullets is
recomputed from the rows. A slow test schedules the imitated Deeplearn models again on every
draw."""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.experiments.test_readme_herasched_physical import flat

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_ties"

#: stored runs: file stem -> (partition, its periods)
RUNS = {"deeplearn-shipped": "spartan-deeplearn", "deeplearn-squared": "spartan-deeplearn",
        "deeplearn-imitation": "spartan-deeplearn", "deeplearn-rule": "spartan-deeplearn",
        "physical-shipped": "spartan-physical", "physical-more": "spartan-physical",
        "physical-flat-best-fit": "spartan-physical", "physical-both": "spartan-physical",
        "physical-imitation": "spartan-physical", "physical-high-grid": "spartan-physical",
        "cerit-grid": "cerit-zewura"}


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("### The luck of the tie order")
    end = text.find("\n## ", start)
    return flat(text[start:] if end < 0 else text[start:end])


def rows(stem: str, period: str | None = None) -> list[dict]:
    out = json.loads((DATA / f"{stem}.json").read_text())
    return [r for r in out if period is None or r["period"] == period]


def cells(stem: str, period: str) -> list[dict]:
    return [r for r in rows(stem, period) if r["kind"] == "cell"]


def models(stem: str, period: str) -> list[dict]:
    return [r for r in rows(stem, period)
            if r["kind"] == "herasched" and r["policy"] != "herasched"]


def mean_row(stem: str, period: str) -> dict:
    return next(r for r in rows(stem, period) if r["policy"] == "herasched")


def name(row: dict) -> str:
    return f"{row['policy'].upper()} + {row['allocator']}"


def s(value: float) -> str:
    return f"{value:,.0f}"


def test_every_run_is_stored_with_its_draws():
    for stem, cluster in RUNS.items():
        out = rows(stem)
        assert {r["cluster"] for r in out} == {cluster}, stem
        draws = {r["tie_draws"] for r in out}
        assert len(draws) == 1 and draws.pop() in (9, 29), stem
        for r in out:
            if r["kind"] != "herasched" or r["policy"] != "herasched":
                d = r["max_wait_draws"]
                assert len(d) == r["tie_draws"] + 1
                assert r["max_wait"] == pytest.approx(statistics.fmean(d))
                assert r["max_wait_draw_sd"] == pytest.approx(statistics.stdev(d))


def test_one_cell_is_recomputed_on_all_thirty_deeplearn_schedules():
    """FCFS + best-fit on the test period and each of its 29 shuffled copies, run again here."""
    from hpcsched.experiments import herasched_grid as hg
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.workload.ties import shuffle_ties, tie_groups

    day = period_prepared("spartan-deeplearn", "test")
    groups = tie_groups(day.jobs)
    stored = next(r for r in cells("deeplearn-shipped", "test")
                  if (r["policy"], r["allocator"]) == ("fcfs", "best-fit"))["max_wait_draws"]
    got = []
    for seed in range(30):
        table = day if seed == 0 else replace(day, jobs=shuffle_ties(day.jobs, seed, groups))
        got.append(hg.run_grid(table, selectors=("fcfs",), allocators=("best-fit",))
                   .mwt(("fcfs", "best-fit")))
    assert got == stored


def test_the_period_as_generated_is_what_earlier_paragraphs_report():
    """Draw 0 is the period as generated: the MWTs other runs gave, quoted elsewhere in the README
    (Appendix B's lowest cells, and the models' rows of their own paragraphs)."""
    text = flat((ROOT / "README.md").read_text())
    first = {stem: [r["max_wait_draws"][0] for r in models(stem, period)]
             for stem, period in (("deeplearn-shipped", "test"), ("physical-shipped", "test"),
                                  ("deeplearn-imitation", "test"), ("physical-both", "test"))}
    assert first["deeplearn-shipped"] == [41842, 61273, 37315]
    assert first["physical-shipped"] == [18753, 65334, 142499]
    assert first["deeplearn-imitation"] == [33493, 33456, 33612]
    assert first["physical-both"] == [69892, 52882, 98646]
    for stem, values in first.items():
        listed = [s(v) for v in values]
        assert (", ".join(listed) in text
                or f"{', '.join(listed[:-1])} and {listed[-1]}" in text), stem
    low = {(stem, period): min(r["max_wait_draws"][0] for r in cells(stem, period))
           for stem, period in (("deeplearn-shipped", "test"),
                                ("deeplearn-shipped", "test-high-load"),
                                ("physical-shipped", "test"))}
    assert list(low.values()) == [28956, 101386, 90396]


# ---- the tables, from the rows ------------------------------------------------------------------

#: Table 2's rows: (partition, period label, models label, [(stem, period)] whose models count)
TABLE2 = [
    ("Deeplearn", "test", "shipped, 3 seeds", [("deeplearn-shipped", "test")]),
    ("Deeplearn", "test", "squared reward, 5 seeds", [("deeplearn-squared", "test")]),
    ("Deeplearn", "test", "imitation, 3 seeds", [("deeplearn-imitation", "test")]),
    ("Deeplearn", "test", "the rule", [("deeplearn-rule", "test")]),
    ("Deeplearn", "test high-load day", "shipped, 3 seeds",
     [("deeplearn-shipped", "test-high-load")]),
    ("Deeplearn", "test high-load day", "squared reward, 5 seeds",
     [("deeplearn-squared", "test-high-load")]),
    ("Deeplearn", "test high-load day", "imitation, 3 seeds",
     [("deeplearn-imitation", "test-high-load")]),
    ("Deeplearn", "test high-load day", "the rule", [("deeplearn-rule", "test-high-load")]),
    ("Physical", "test", "shipped, 3 seeds", [("physical-shipped", "test")]),
    ("Physical", "test", "5 seeds", [("physical-shipped", "test"), ("physical-more", "test")]),
    ("Physical", "test", "flat rule + best-fit", [("physical-flat-best-fit", "test")]),
    ("Physical", "test", "imitation behind best-fit, 3 seeds", [("physical-imitation", "test")]),
    ("Physical", "test", "both agents imitating, the starts", [("physical-both", "test")]),
    ("CERIT-SC", "test weeks", "selector behind best-fit, 2 seeds", [("cerit-bestfit", "test")]),
    ("CERIT-SC", "test weeks", "flat rule + best-fit", [("cerit-flat", "test")]),
    ("CERIT-SC", "test weeks", "imitation, 1 seed", [("cerit-imitation", "test")]),
]


def judged(sources) -> dict:
    """The criteria for the models of `sources` (their runs share the seeds, so their cells are
    the same schedules), as generated and over the schedules, and the paired comparison."""
    runs = [m for stem, period in sources for m in models(stem, period)]
    grid = cells(*sources[0])
    for stem, period in sources[1:]:
        assert [c["max_wait_draws"] for c in cells(stem, period)] == \
            [c["max_wait_draws"] for c in grid]
    first = statistics.fmean(m["max_wait_draws"][0] for m in runs)
    mean = statistics.fmean(m["max_wait"] for m in runs)
    score = [statistics.fmean(c["wait"] / m["wait"] + c["max_wait"] / m["max_wait"] for m in runs)
             for c in grid]
    low = min(grid, key=lambda c: c["max_wait"])
    mine = np.mean([m["max_wait_draws"] for m in runs], axis=0)
    diff = mine - np.asarray(low["max_wait_draws"])
    return {"first": first, "first_below": sum(c["max_wait_draws"][0] > first for c in grid),
            "mean": mean, "below": sum(c["max_wait"] > mean for c in grid),
            "s_above": sum(v > 2 for v in score), "paired": float(diff.mean()),
            "se": float(diff.std(ddof=1) / np.sqrt(diff.size)), "lower": int(np.sum(diff < 0)),
            "draws": int(diff.size), "low": low, "runs": runs}


def table2_lines() -> list[str]:
    out = []
    for partition, period, label, sources in TABLE2:
        j = judged(sources)
        out.append(f"| {partition}, {period} | {label} | {s(j['first'])}, {j['first_below']} | "
                   f"{s(j['mean'])}, {j['below']}, {j['s_above']} | {j['paired']:+,.0f} ± "
                   f"{s(j['se'])}, {j['lower']} of {j['draws']} |")
    return out


#: Table 1's rows: (label, stem, period, cluster)
TABLE1 = [("Deeplearn, test", "deeplearn-shipped", "test", "spartan-deeplearn"),
          ("Deeplearn, test high-load day", "deeplearn-shipped", "test-high-load",
           "spartan-deeplearn"),
          ("Physical, test", "physical-shipped", "test", "spartan-physical"),
          ("Physical, test high-load day", "physical-high-grid", "test-high-load",
           "spartan-physical"),
          ("CERIT-SC, test weeks", "cerit-grid", "test", "cerit-zewura")]


def table1_lines(groups: dict) -> list[str]:
    """`groups`: {(cluster, period): (jobs alike, rows, groups, largest)}."""
    out = []
    for label, stem, period, cluster in TABLE1:
        grid = cells(stem, period)
        first = min(grid, key=lambda c: c["max_wait_draws"][0])
        d = first["max_wait_draws"]
        low = min(grid, key=lambda c: c["max_wait"])
        jobs, n, k, largest = groups[cluster, period]
        out.append(f"| {label} | {jobs:,} of {n:,} jobs, {k:,} groups (up to {largest:,}) | "
                   f"{len(d)} | {name(first)}: {s(d[0])} | {s(statistics.fmean(d))} ({s(min(d))}"
                   f"-{s(max(d))}), {sorted(d).index(d[0]) + 1} of {len(d)} | {name(low)}: "
                   f"{s(low['max_wait'])} |")
    return out


def period_groups() -> dict:
    from hpcsched.experiments.herasched_eval import period_prepared
    from hpcsched.workload.ties import tie_groups

    out = {}
    for _, _, period, cluster in TABLE1:
        g = tie_groups(period_prepared(cluster, period).jobs)
        out[cluster, period] = (g.jobs, g.rows, len(g.groups), g.largest)
    return out


def test_the_tables_are_the_rows():
    text = readme()
    for line in table1_lines(period_groups()) + table2_lines():
        assert flat(line) in text, line


if __name__ == "__main__":  # prints the tables for the README
    print("\n".join(table1_lines(period_groups())))
    print()
    print("\n".join(table2_lines()))


def model_mwts(stem: str, period: str) -> list[str]:
    return [s(m["max_wait"]) for m in models(stem, period)]


def paired_text(j: dict) -> str:
    return f"{j['paired']:+,.0f} ± {s(j['se'])}".lstrip("+")


def test_the_bullets_are_the_rows():
    text = readme()
    # the tie order's reach
    dl = {name(c): c for c in cells("deeplearn-shipped", "test")}
    d = dl["FCFS + topology"]["max_wait_draws"]
    assert (f"FCFS + topology waits at most {s(d[0])} s on Deeplearn's test period as generated, "
            f"and {s(min(d))}-{s(max(d))} s on the {len(d)} schedules") in text
    cerit = {name(c): c for c in cells("cerit-grid", "test")}
    d = cerit["FCFS + best-fit"]["max_wait_draws"]
    assert d[0] == min(d) and len(d) == 30
    assert f"FCFS + best-fit's {s(d[0])} s is the lowest of its 30 schedules, whose mean is " \
           f"{s(statistics.fmean(d))} s" in text
    # Deeplearn's high-load day, squared reward
    j = judged([("deeplearn-squared", "test-high-load")])
    low = j["low"]
    assert name(low) == "FCFS + topology" and j["below"] == j["s_above"] == 21
    assert (f"mean MWT {s(j['mean'])} s against the lowest cell's {s(low['max_wait'])} s (FCFS + "
            f"topology), S > 2 against all 21 cells, and {s(-j['paired'])} s lower paired "
            f"(standard error {s(j['se'])} s), on {j['lower']} of {j['draws']} schedules") in text
    mw = sorted(m["max_wait"] for m in j["runs"])
    below = [v for v in mw if v < low["max_wait"]]
    assert len(below) == 4
    assert f"Four seeds of five are below that cell ({s(below[0])}-{s(below[-1])} s; seed 1 " \
           f"{s(j['runs'][1]['max_wait'])} s)" in text
    # Physical's test period
    j = judged([("physical-shipped", "test")])
    assert j["below"] == j["s_above"] == 21 and j["paired"] < 0
    per = model_mwts("physical-shipped", "test")
    assert (f"{s(j['mean'])} s against {s(j['low']['max_wait'])} s (WFP3 + best-fit), S > 2 "
            f"against all 21, {s(-j['paired'])} s lower paired (standard error {s(j['se'])} s), "
            f"on {j['lower']} of {j['draws']} schedules") in text
    assert f"({per[0]} and {per[1]} s; seed 2 {per[2]} s)" in text
    five = judged([("physical-shipped", "test"), ("physical-more", "test")])
    assert five["below"] < 21 and f"on five seeds it fails ({s(five['mean'])} s)" in text
    seed0 = models("physical-shipped", "test")[0]
    assert seed0["max_wait_draw_sd"] < 0.15 * seed0["max_wait"]
    assert (f"Seed 0 waits {s(seed0['max_wait'])} s on the mean, with a spread of only "
            f"{s(seed0['max_wait_draw_sd'])} s") in text
    j = judged([("physical-both", "test")])
    per = model_mwts("physical-both", "test")
    assert all(m["max_wait"] < j["low"]["max_wait"] for m in j["runs"])
    assert (f"({s(j['mean'])} s), now on all three seeds ({per[0]}, {per[1]} and {per[2]} s), "
            f"{s(-j['paired'])} s lower paired (standard error {s(j['se'])} s)") in text
    # within the noise
    imit, rule = judged([("deeplearn-imitation", "test")]), judged([("deeplearn-rule", "test")])
    assert imit["below"] == rule["below"] == 21
    for j in (imit, rule):  # within two standard errors of the lowest cell
        assert abs(j["paired"]) < 2 * j["se"]
    assert (f"({s(imit['mean'])} s) and the rule they imitate ({s(rule['mean'])} s) are below "
            f"every cell's mean, the lowest being FCFS + best-fit's {s(imit['low']['max_wait'])} "
            f"s. But paired they differ from it by {paired_text(imit)} s and "
            f"{paired_text(rule)} s") in text
    shipped, squared = judged([("deeplearn-shipped", "test")]), judged([("deeplearn-squared",
                                                                          "test")])
    assert (f"({s(shipped['first'])} and {s(squared['first'])} s as generated) were lucky draws: "
            f"{s(shipped['mean'])} and {s(squared['mean'])} s on the mean") in text
    flat_bf, imit_bf = (judged([("physical-flat-best-fit", "test")]),
                        judged([("physical-imitation", "test")]))
    assert abs(flat_bf["paired"]) < 2 * flat_bf["se"]
    assert (f"the flat rule with best-fit ({s(flat_bf['mean'])} s, {paired_text(flat_bf)} s "
            f"paired) ties with WFP3 + best-fit") in text
    assert f"behind best-fit waits longer ({s(imit_bf['mean'])} s)" in text
    # CERIT-SC
    bf, fl, im = (judged([("cerit-bestfit", "test")]), judged([("cerit-flat", "test")]),
                  judged([("cerit-imitation", "test")]))
    assert name(bf["low"]) == "FCFS + best-fit" and min(bf["paired"], fl["paired"],
                                                        im["paired"]) > 0
    assert (f"FCFS + best-fit stays the lowest cell on the mean ({s(bf['low']['max_wait'])} s), "
            f"and every model still waits longer, paired: the selector trained behind best-fit by "
            f"{paired_text(bf)} s, the flat rule with best-fit by {paired_text(fl)} s") in text
    assert (f"({s(im['first'])} against {s(min(cerit['FCFS + best-fit']['max_wait_draws']))} s), "
            f"is {paired_text(im)} s behind on the mean ({s(im['mean'])} s), lower on "
            f"{im['lower']} of {im['draws']} schedules, with S > 2 against {im['s_above']} "
            f"cells") in text


def test_the_physical_high_load_line_is_the_rows():
    text = readme()
    grid = cells("physical-high-grid", "test-high-load")
    first = min(grid, key=lambda c: c["max_wait_draws"][0])
    d = first["max_wait_draws"]
    assert d[0] == min(d) and first is min(grid, key=lambda c: c["max_wait"])
    assert (f"the lowest cell as generated, {name(first)}'s {s(d[0])} s, is the lowest of its "
            f"{len(d)} schedules (mean {s(first['max_wait'])} s), and still the lowest cell on "
            f"the mean") in text
    shipped = 320746  # "The shipped Physical models" paragraph's mean, as generated
    assert "1,681.0 ± 106.6 | 349,179, 336,691, 276,368; 320,746 ± 38,936" in \
        flat((ROOT / "README.md").read_text())
    assert (f"The shipped seeds' mean MWT, {s(shipped)} s on the one schedule, is still "
            f"{s(shipped - first['max_wait'])} s above that mean") in text


def rescored(model: str, draws: range) -> list[float]:
    from hpcsched.experiments.herasched_eval import period_prepared, run_model
    from hpcsched.workload.ties import shuffle_ties, tie_groups

    day = period_prepared("spartan-deeplearn", "test")
    groups = tie_groups(day.jobs)
    return [run_model(day if seed == 0 else replace(day, jobs=shuffle_ties(day.jobs, seed, groups)),
                      str(ROOT / model)).mwt for seed in draws]


def test_an_imitated_model_is_rescored_on_five_of_its_schedules():
    (row,) = [m for m in models("deeplearn-imitation", "test")
              if m["policy"].endswith("s2/best.pt")]
    model = row["policy"].removeprefix("herasched:")
    assert rescored(model, range(5)) == row["max_wait_draws"][:5]


@pytest.mark.slow
def test_the_imitated_models_are_rescored_on_all_thirty_schedules():
    for row in models("deeplearn-imitation", "test"):
        model = row["policy"].removeprefix("herasched:")
        assert rescored(model, range(30)) == row["max_wait_draws"], model


# ---- choosing best.pt over the schedules --------------------------------------------------------

def choice_output() -> str:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "herasched_choice_ties.py"),
                          "--from", str(DATA / "choice.json")], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return out.stdout


def test_the_choice_table_is_the_script_s_output_on_the_stored_rows():
    text = readme()
    out = choice_output().splitlines()
    for line in out[:5]:
        assert flat(line) in text, line
    # the last line: the mean correlations with the test S, then with the high-load day's
    (test_one, test_many), (high_one, high_many) = re.findall(
        r"one ([+-][\d.]+), many ([+-][\d.]+)", out[5])
    assert test_one == test_many
    assert (f"the rank correlation with the test S is the same both ways ({test_one}), and with "
            f"the high-load day's it falls ({high_one} to {high_many})") in text
    assert float(high_many) < float(high_one)


def test_one_schedule_s_validation_s_is_the_which_checkpoint_table_s():
    """Seed 0's ten checkpoints, validated again on the period as generated: the whole-span S of
    the "Which checkpoint" table (computed there from the runs' logs)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "choice_ties", ROOT / "benchmarks" / "herasched_choice_ties.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = json.loads((DATA / "choice.json").read_text())
    seed0 = module.table(data)[0]["validation_one"]
    text = flat((ROOT / "README.md").read_text())
    for update, score in sorted(seed0.items()):
        assert f"| {update} | {score:.3f} |" in text, update


# ---- the grid's findings over tie draws ---------------------------------------------------------

def grid_readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**The findings with ties broken at random (`--tie-draws`).**")
    return flat(text[start:text.index("\n## ", start)])


def findings(stem: str) -> dict[str, str]:
    """{claim [set, profile]: "verdict (numbers)"} of a stored `herasched-grid` output."""
    out = {}
    for line in (DATA / f"{stem}.md").read_text().splitlines():
        if line.startswith("- ") and "]: " in line:
            claim, _, rest = line[2:].partition("]: ")
            out[claim + "]"] = rest
    return out


def test_the_grid_outputs_are_the_commands_and_count_the_jobs_alike():
    text = grid_readme()
    week = (DATA / "grid-draws.md").read_text()
    high = (DATA / "grid-high-draws.md").read_text()
    assert week.count("each cell is the mean over 10 schedules") == 2
    assert high.count("each cell is the mean over 30 schedules") == 2
    alike = re.findall(r"tie draws: ([\d,]+) of ([\d,]+) jobs are in [\d,]+ groups of jobs alike "
                       r"\(same submit time and request; the largest holds ([\d,]+)\)", week)
    (pj, pn, pl), (dj, dn, dl) = alike
    assert (f"{pj} of the week's {pn} jobs and {dj} of the year's {dn} are alike, in groups of "
            f"up to {pl} and {dl} jobs") in text
    cpu = sum(float(x) for x in re.findall(r"; ([\d.]+) CPU s for 21 cells", week))
    assert f"{cpu:.0f} CPU s for its 42 cells" in text


def test_the_findings_table_is_the_stored_outputs():
    text = grid_readme()
    full, high = findings("grid-draws"), findings("grid-high-draws")

    def numbers(line: str) -> list[str]:
        return re.findall(r"[\d,]+\.\d+|[\d,]{4,}|\d+ of \d+", line)

    fa_week = full["first-available is the worst allocator on MWT [physical-week, hpcsim]"]
    fa_high = high["first-available is the worst allocator on MWT [physical-high-load, hpcsim]"]
    (of_w, t_w, b_w, f_w), (of_h, t_h, b_h, f_h) = numbers(fa_week), numbers(fa_high)
    assert fa_week.startswith("partly") and fa_high.startswith("holds")
    assert (f"partly: {of_w}; mean MWT {f_w} s vs {b_w} best-fit, {t_w} topology") in text
    assert f"holds: {of_h}; mean {f_h} s vs {b_h} and {t_h}" in text
    differ = "the best AWT cell and the best MWT cell are different heuristics"
    for stem, label in (("grid-draws", "physical-week"), ("grid-draws", "deeplearn-year")):
        line = findings(stem)[f"{differ} [{label}, hpcsim]"]
        m = re.search(r"best AWT (.+) ([\d.]+) s, best MWT (.+) ([\d,]+) s", line)
        assert line.startswith("holds")
        assert (f"holds: {m[1]} {float(m[2]):,.2f} s, {m[3]} {m[4]} s") in text
    cells = []
    for label in ("physical-high-load", "deeplearn-high-load"):
        line = high[f"{differ} [{label}, hpcsim]"]
        assert line.startswith("holds")
        m = re.search(r"best AWT (.+) [\d.]+ s, best MWT (.+) [\d,]+ s", line)
        cells.append(f"{m[1]}, {m[2]}")
    assert f"(Physical: {cells[0]}; Deeplearn: {cells[1]})" in text
    for out, verdict in ((full, "partly"), (high, "holds")):
        line = next(v for k, v in out.items() if k.startswith("on Deeplearn the allocators"))
        da, pa, dm, pm = re.findall(r"\+([\d.]+%)", line)
        assert line.startswith(verdict)
        assert f"{verdict}: AWT {da} vs {pa}, MWT {dm} vs {pm}" in text
    assert "24.9% against 27.0%" in text and "MWT 24.9% vs 27.0%" in text
    year = (DATA / "grid-draws.md").read_text()
    assert "| fcfs | 540.70 / 291712 | 529.87 / 264483 | 550.28 / **248376** |" in year
    assert "fcfs + first-available 152,552 s" in flat((ROOT / "README.md").read_text())
    assert "is 152,552 s as generated and 248,376 s on the mean" in text
