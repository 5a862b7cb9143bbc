"""`compare` and `simulate` with SELECTOR+ALLOCATOR names (issue 17): one row per name, each naming
the allocator it really ran with (the grid's cells of the same trace), and the names refused."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from hpcsched.experiments import herasched_grid as hg
from hpcsched.experiments.policyspec import split_allocator
from hpcsched.sim.run import prepare
from hpcsched.workload.spartan import generate
from hpcsched.workload.spartan_format import write_trace
from tests.test_cli import assert_one_line_error, run_cli

JOBS = 1500


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """Six hours of generated Physical jobs (about 3,000) as a file: its first 1,500 wait under
    every allocator but differently (best-fit's least, topology's most)."""
    path = tmp_path_factory.mktemp("compare") / "physical.txt"
    write_trace(generate("spartan-physical", 0.25, seed=3), path)
    return path


def test_each_name_runs_with_its_own_allocator_as_the_grid_cells_do(capsys, day):
    names = ["fcfs+best-fit", "fcfs+first-available", "unicep+topology", "fcfs"]
    code, out, err = run_cli(capsys, "compare", str(day), "--cluster", "spartan-physical",
                             "--profile", "hpcsim", "--backfill", "easy", "--jobs", str(JOBS),
                             "--policies", ",".join(names), "--allocator", "topology", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["policy"] for r in rows] == names
    assert [r["allocator"] for r in rows] == ["best-fit", "first-available", "topology",
                                              "topology"]  # a plain name: --allocator's
    prepared = prepare(str(day), "hpcsim", cluster="spartan-physical")
    prepared = replace(prepared, jobs=prepared.jobs.window(0, JOBS))
    grid = hg.run_grid(prepared, selectors=("fcfs", "unicep"),
                       allocators=("topology", "best-fit", "first-available"))
    for row in rows:
        sel = row["policy"].partition("+")[0]
        cell = grid.metrics[sel, row["allocator"]]
        assert (row["wait"], row["max_wait"]) == pytest.approx((cell["wait"], cell["max_wait"]))
    # the allocators do differ on this trace, so a row run with the wrong one would be caught
    for sel in grid.selectors:
        cells = {a: (grid.awt((sel, a)), grid.mwt((sel, a))) for a in grid.allocators}
        assert len(set(cells.values())) == 3, cells


def test_simulate_takes_the_same_names(capsys, day):
    code, out, err = run_cli(capsys, "simulate", str(day), "--cluster", "spartan-physical",
                             "--profile", "hpcsim", "--backfill", "easy", "--jobs", str(JOBS),
                             "--policy", "fcfs+first-available", "--json")
    assert code == 0, err
    row = json.loads(out)
    code, out, _ = run_cli(capsys, "simulate", str(day), "--cluster", "spartan-physical",
                           "--profile", "hpcsim", "--backfill", "easy", "--jobs", str(JOBS),
                           "--policy", "fcfs", "--allocator", "first-available", "--json")
    plain = json.loads(out)
    assert row["allocator"] == plain["allocator"] == "first-available"
    assert (row["wait"], row["max_wait"]) == (plain["wait"], plain["max_wait"])


@pytest.mark.parametrize("name, needles", [
    ("fcfs+worst-fit", ["unknown allocator 'worst-fit'", "first-available, best-fit, topology"]),
    ("herasched:runs/x+best-fit", ["own allocator agent", "without '+best-fit'",
                                   "or herasched:runs/x@allocator=best-fit"]),
    ("+best-fit", ["no policy before"]),
])
def test_bad_names_are_refused_in_one_line(capsys, day, name, needles):
    code, _, err = run_cli(capsys, "compare", str(day), "--cluster", "spartan-physical",
                           "--policies", f"fcfs,{name}", "--jobs", "50")
    assert_one_line_error(code, err, *needles)


def test_an_allocator_needs_named_nodes(capsys):
    code, _, err = run_cli(capsys, "compare", "lublin-1", "--policies", "fcfs,sjf+best-fit",
                           "--jobs", "50")
    assert_one_line_error(code, err, "sjf+best-fit", "named nodes")


def test_names_split_at_the_last_plus_and_paths_with_one_stay_whole(tmp_path):
    assert split_allocator("fcfs") == ("fcfs", None)
    assert split_allocator("UNICEP+Topology") == ("UNICEP", "topology")
    assert split_allocator("rl:runs/a+best-fit") == ("rl:runs/a", "best-fit")
    model = tmp_path / "a+b.pt"
    model.write_bytes(b"")
    assert split_allocator(f"herasched:{model}") == (f"herasched:{model}", None)


def test_a_herasched_row_names_the_heuristic_that_placed_its_jobs(capsys, day):
    model = "herasched:pretrained/herasched-physical-s0"
    code, out, err = run_cli(capsys, "compare", str(day), "--cluster", "spartan-physical",
                             "--profile", "hpcsim", "--backfill", "none", "--jobs", str(JOBS),
                             "--json", "--policies",
                             f"{model},{model}@allocator=first-available")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["allocator"] for r in rows] == ["agent", "first-available"]
    assert rows[0]["wait"] != rows[1]["wait"]
