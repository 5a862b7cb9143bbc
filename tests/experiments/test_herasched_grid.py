"""The thesis's heuristic grid (`experiment herasched-grid`): the Appendix B layout and its marks on
grids written by hand, the best-cell rule and the findings on the thesis's own Tables B.1 and B.2,
the heatmap file, and the experiment's cells against separate `simulate` runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpcsched.experiments import herasched_grid as hg
from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import prepare, simulate
from tests.test_cli import assert_one_line_error, run_cli

DATA = Path(__file__).resolve().parent.parent / "data" / "hpcsim_small"
PHYS = str(DATA / "phys2k_s11.tsv.gz")  # 2,000 jobs in HPCsim's format, on spartan-physical
COLS = ("topology", "best-fit", "first-available")


def hand_grid(table: dict[str, tuple], allocators=COLS, workload="hand",
              cluster="spartan-physical") -> hg.Grid:
    """A grid from {selector: ((awt, mwt) per allocator)}."""
    grid = hg.Grid(workload, cluster, "hpcsim", "easy", 100, tuple(table), tuple(allocators))
    for sel, cells in table.items():
        for alloc, (awt, mwt) in zip(allocators, cells):
            grid.metrics[sel, alloc] = {"wait": awt, "max_wait": mwt}
    return grid


# Appendix B of the thesis (AWT / MWT, s): Table B.1 (Physical week) and B.2 (Deeplearn year),
# columns topology-aware, best-fit, first-available
B1 = {"fcfs": ((2143.12, 106943), (2098.10, 81105), (2590.34, 147244)),
      "lcfs": ((1846.93, 64279), (1851.18, 63993), (1992.37, 492802)),
      "sjf": ((1916.79, 155108), (1987.63, 64182), (2091.03, 344543)),
      "wfp3": ((2115.51, 170378), (2123.69, 44271), (2521.39, 364646)),
      "unicep": ((2023.23, 72268), (1955.33, 59931), (2152.24, 496656)),
      "f1": ((2008.29, 71359), (2052.45, 66939), (2447.61, 299599)),
      "f2": ((2009.63, 72293), (2038.79, 70434), (2212.52, 200674))}
B2 = {"fcfs": ((1386.44, 60777), (1361.02, 55885), (1442.71, 63554)),
      "lcfs": ((1504.92, 75285), (1457.97, 67055), (1597.85, 81874)),
      "sjf": ((1397.81, 62100), (1429.81, 63612), (1509.45, 70390)),
      "wfp3": ((1429.3, 65889), (1461.31, 67040), (1516.97, 70588)),
      "unicep": ((1349.89, 56702), (1367.84, 56404), (1443.13, 63780)),
      "f1": ((1406.41, 64002), (1408.23, 61410), (1448.87, 65521)),
      "f2": ((1403.69, 63231), (1398.25, 61171), (1444.63, 65050))}


def test_the_appendix_b_layout_marks_the_lowest_awt_and_the_lowest_mwt():
    grid = hand_grid({"fcfs": ((100.0, 900), (90.5, 1000)), "sjf": ((80.25, 1200), (95.0, 800))},
                     allocators=("topology", "best-fit"))
    rows = hg.appendix_b_rows(grid)
    assert rows == [{"selector": "fcfs", "topology": "100.00 / 900", "best-fit": "90.50 / 1000"},
                    {"selector": "sjf", "topology": "80.25* / 1200", "best-fit": "95.00 / 800*"}]
    md = hg.appendix_b_rows(grid, markdown=True)
    assert md[1] == {"selector": "sjf", "topology": "**80.25** / 1200",
                     "best-fit": "95.00 / **800**"}
    # the best cell: the highest S against the ideal point (80.25 s, 800 s):
    # sjf+topology 1 + 0.667, sjf+best-fit 0.845 + 1, fcfs+topology 0.8025 + 0.889
    assert grid.reference() == ("sjf", "best-fit")
    scores = hg.score_rows(grid, ("sjf", "best-fit"))
    assert scores[1]["best-fit"] == "2.00*"
    # fcfs+topology against sjf+best-fit: 95/100 + 800/900
    assert scores[0]["topology"] == f"{95 / 100 + 800 / 900:.2f}"
    assert hg.score_rows(grid, ("fcfs", "topology"), markdown=True)[0]["topology"] == "**2.00**"


def test_flat_rows_carry_the_score_and_the_relative_differences():
    grid = hand_grid({"fcfs": ((100.0, 1000), (50.0, 4000))}, allocators=("topology", "best-fit"))
    ref = ("fcfs", "topology")
    rows = {r["allocator"]: r for r in grid.rows(ref)}
    assert rows["topology"]["score"] == 2.0 and rows["topology"]["reference"]
    assert rows["best-fit"]["score"] == pytest.approx(2.0 + 0.25)
    assert rows["best-fit"]["awt_rel"] == pytest.approx(-0.5)
    assert rows["best-fit"]["mwt_rel"] == pytest.approx(3.0)
    assert rows["best-fit"]["best_awt"] and rows["topology"]["best_mwt"]
    assert {"trace", "policy", "allocator", "backfill", "wait", "max_wait"} <= set(rows["topology"])


def test_the_best_cell_rule_picks_the_thesis_s_own_references():
    # B.1: WFP3 + best-fit (the thesis's best S on the full Physical week, Fig. 4.8 text);
    # B.2: FCFS + best-fit (its Ch. 6 reference for Deeplearn)
    assert hand_grid(B1).reference() == ("wfp3", "best-fit")
    assert hand_grid(B2).reference() == ("fcfs", "best-fit")
    # the thesis's Fig. 4.5 values are relative to HeraSched; against a cell of the grid the
    # reference's own differences are 0
    assert hand_grid(B1).relative(("wfp3", "best-fit"), ("wfp3", "best-fit")) == (0.0, 0.0)


def test_the_findings_hold_on_the_thesis_s_own_tables():
    physical, deeplearn = hand_grid(B1, workload="b1"), hand_grid(B2, workload="b2",
                                                                  cluster="spartan-deeplearn")
    found = {f.claim.split(" [")[0]: f for f in hg.findings([physical, deeplearn])}
    fa = found["first-available is the worst allocator on MWT"]
    assert fa.verdict == "holds" and "7 of 7" in fa.evidence
    best = [f for f in hg.findings([physical, deeplearn]) if "different heuristics" in f.claim]
    assert [f.verdict for f in best] == ["holds", "holds"]
    assert "lcfs + topology" in best[0].evidence and "wfp3 + best-fit" in best[0].evidence
    assert found["on Deeplearn the allocators matter less than on Physical"].verdict == "holds"


def test_findings_that_fail_are_reported_as_such():
    # first-available best everywhere; one cell best on both metrics; allocators matter more on the
    # "deeplearn" grid
    flat = {"fcfs": ((10.0, 100), (10.0, 100), (10.0, 100)),
            "sjf": ((12.0, 120), (12.0, 120), (12.0, 120))}
    steep = {"fcfs": ((10.0, 100), (20.0, 300), (5.0, 50)),
             "sjf": ((12.0, 120), (30.0, 400), (6.0, 60))}
    physical = hand_grid(flat)
    deeplearn = hand_grid(steep, cluster="spartan-deeplearn", workload="d")
    verdicts = [f.verdict for f in hg.findings([physical, deeplearn])]
    assert verdicts == ["does not hold"] * 4


def test_the_heatmap_is_written(tmp_path):
    grid = hand_grid(B1)
    path = hg.heatmap(grid, grid.reference(), tmp_path / "sub" / "b1.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000


@pytest.mark.parametrize("profile", ["hpcsim", "standard"])
def test_the_cells_equal_separate_simulate_runs(capsys, tmp_path, profile):
    jobs = "600" if profile == "standard" else "2000"  # the standard profile's WFP3 steps in Python
    plot = tmp_path / "grid.png"
    code, out, err = run_cli(capsys, "experiment", "herasched-grid", "--trace", PHYS,
                             "--cluster", "spartan-physical", "--profile", profile,
                             "--jobs", jobs, "--plot", str(plot), "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 21 and plot.exists()
    # a progress line per cell where stderr is not a terminal (a log)
    progress = [line for line in err.splitlines() if line.startswith("herasched-grid ")]
    assert len(progress) == 21 and progress[-1].startswith("herasched-grid 21/21 ")
    assert progress[-1].endswith("f2+first-available")
    assert {(r["policy"], r["allocator"]) for r in rows} == {
        (s, a) for s in hg.SELECTORS for a in hg.ALLOCATORS}
    ref = [r for r in rows if r["reference"]]
    assert len(ref) == 1 and ref[0]["score"] == 2.0
    assert all(r["jobs"] == int(jobs) and r["profile"] == profile for r in rows)
    for alloc in hg.ALLOCATORS:  # an independent path: prepare with the allocator + simulate
        prepared = prepare(PHYS, profile, cluster="spartan-physical", allocator=alloc)
        for r in (r for r in rows if r["allocator"] == alloc):
            dialect = "hpcsim" if profile == "hpcsim" else ""
            alone = simulate(prepared, get_policy(r["policy"], dialect=dialect),
                             backfill="easy", jobs=int(jobs)).metrics
            assert (r["wait"], r["max_wait"]) == (alone["wait"], alone["max_wait"]), r
            assert r["bsld"] == alone["bsld"]


def test_the_table_output_and_markdown(capsys, tmp_path):
    code, out, err = run_cli(capsys, "experiment", "herasched-grid", "--trace", PHYS,
                             "--cluster", "spartan-physical", "--jobs", "400",
                             "--selectors", "fcfs,sjf", "--allocators", "best-fit,first-available",
                             "--reference", "fcfs+best-fit", "--plot", "", "--markdown")
    assert code == 0, err
    assert "| selector | best-fit | first-available |" in out
    assert "| fcfs | " in out and "**2.00**" in out and out.count("**") >= 6
    assert "against fcfs + best-fit (chosen" in out
    assert "the thesis's findings:" in out and "first-available is the worst" in out


def test_bad_grid_input_gives_one_clear_line(capsys):
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--selectors", "fcfs,saf")
    assert_one_line_error(code, err, "unknown policy 'saf' under the hpcsim profile")
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--allocators", "worst-fit")
    assert_one_line_error(code, err, "unknown allocator 'worst-fit'", "best-fit")
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--reference", "sjf+worst-fit")
    assert_one_line_error(code, err, "--reference 'sjf+worst-fit' is not a cell")
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--profile", "standard,hpcsim",
                           "--backfill", "conservative")
    assert_one_line_error(code, err, "conservative backfilling runs under --profile standard")
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--profile", "rlscheduler")
    assert_one_line_error(code, err, "--profile 'rlscheduler'", "hpcsim, standard")
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--cluster", "cerit-zewura")
    assert_one_line_error(code, err, "no generated workload for the cluster 'cerit-zewura'",
                          "--trace")
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--trace", PHYS,
                           "--cluster", "spartan-physical,spartan-deeplearn")
    assert_one_line_error(code, err, "one --cluster")
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--trace", PHYS,
                           "--cluster", "spartan-physical", "--jobs", "50",
                           "--selectors", "fcfs", "--reference", "sjf+best-fit", "--plot", "")
    assert_one_line_error(code, err, "--reference 'sjf+best-fit' is not a cell",
                          "fcfs+topology")


def test_the_workloads_are_named_and_seeded():
    assert hg.workload_for("spartan-physical").name == "physical-week"
    assert hg.workload_for("spartan-deeplearn", high_load=True).thesis_jobs == 1137
    w = hg.WORKLOADS["deeplearn-high-load"]
    a, b = hg.workload_jobs(w), hg.workload_jobs(w)
    assert len(a) == 1137 and a.header.name == "deeplearn-high-load"
    assert (a.submit == b.submit).all() and (a.gpus_per_node == b.gpus_per_node).all()
    c = hg.workload_jobs(w, seed=2)
    assert c.header.name == "deeplearn-high-load-s2" and not (c.run_time == a.run_time).all()


def test_a_generated_set_is_the_grid_of_its_sacct_file(capsys, tmp_path):
    """The built-in set and the same jobs written by the generator and read back with --trace give
    the same cells (F1 and F2 read the submit time: both count from the first submission)."""
    from hpcsched.workload.spartan import generate
    from hpcsched.workload.spartan_format import write_sacct

    path = tmp_path / "day.txt"
    write_sacct(generate("spartan-deeplearn", seed=1, high_load_day=True), path)
    args = ("--cluster", "spartan-deeplearn", "--selectors", "fcfs,f1,f2", "--plot", "", "--json")
    code, out, err = run_cli(capsys, "experiment", "herasched-grid", "--high-load", *args)
    assert code == 0, err
    built_in = json.loads(out)
    code, out, err = run_cli(capsys, "experiment", "herasched-grid", "--trace", str(path), *args)
    assert code == 0, err
    from_file = json.loads(out)
    assert built_in[0]["trace"] == "deeplearn-high-load" and from_file[0]["trace"] == "day"
    key = ("policy", "allocator", "jobs", "wait", "max_wait", "bsld", "utilization")
    assert [[r[k] for k in key] for r in built_in] == [[r[k] for k in key] for r in from_file]
