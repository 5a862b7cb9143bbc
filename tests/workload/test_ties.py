"""Jobs alike and the tie order (`hpcsched.workload.ties`): which rows are grouped (and which are
not, for each column that tells two jobs apart), that a shuffle deals only what jobs did and keeps
everything a policy reads, that it reaches the engine (a hand-computed schedule per draw), and
`experiment herasched --tie-draws`: each number the mean of the runs on the drawn copies."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from hpcsched.cluster.pool import NodePool
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.ties import OUTCOMES, key_columns, shuffle_ties, tie_groups


def table(**changes) -> JobTable:
    """Eight one-processor jobs asking 100 s: rows 0-2 alike at t = 0, rows 4-6 alike at t = 5;
    row 3 is row 0 but for its user, row 7 row 4 but for its requested time."""
    cols = dict(submit=[0, 0, 0, 0, 5, 5, 5, 5], run_time=[10, 20, 90, 10, 1, 2, 3, 1],
                cpu_time=[9, 19, 89, 9, 1, 2, 3, 1], req_time=[100] * 7 + [50],
                req_procs=[1] * 8, alloc_procs=[1] * 8, user=[1, 1, 1, 2, 1, 1, 1, 1],
                job_id=[11, 12, 13, 14, 15, 16, 17, 18])
    cols.update(changes)
    return JobTable.from_columns(**cols)


def test_rows_alike_are_grouped_and_any_request_or_user_difference_splits_them():
    groups = tie_groups(table())
    assert [g.tolist() for g in groups.groups] == [[0, 1, 2], [4, 5, 6]]
    assert (groups.jobs, groups.largest, groups.rows) == (6, 3, 8)
    assert groups.describe().startswith("6 of 8 jobs are in 2 groups")
    # what may differ within a group: the identity and what the job did, nothing else
    assert not set(key_columns(table())) & {"job_id", "line", *OUTCOMES}
    assert {"submit", "req_time", "procs", "nodes", "gpus_per_node", "user"} <= \
        set(key_columns(table()))
    # one other request column on one row takes it out of its group
    split = tie_groups(table(req_mem=[-1, -1, 512, -1, -1, -1, -1, -1]))
    assert [g.tolist() for g in split.groups] == [[0, 1], [4, 5, 6]]
    assert tie_groups(table(submit=[0, 1, 2, 3, 5, 6, 7, 8])).groups == ()
    assert "no two of the 8 jobs" in tie_groups(table(submit=list(range(8)))).describe()


def test_a_shuffle_deals_the_outcomes_within_groups_and_keeps_the_rest():
    jobs = table()
    seen = set()
    for seed in range(1, 40):
        other = shuffle_ties(jobs, seed)
        for c in jobs.columns:
            if c not in OUTCOMES:
                assert np.array_equal(other.columns[c], jobs.columns[c]), c
        rt = other.run_time
        assert sorted(rt[:3]) == [10, 20, 90] and sorted(rt[4:7]) == [1, 2, 3]
        assert rt[3] == 10 and rt[7] == 1  # rows alone keep theirs
        assert np.array_equal(other.cpu_time, other.run_time - (other.run_time > 3))  # in pairs
        seen.add(tuple(rt[:3]))
        assert np.array_equal(shuffle_ties(jobs, seed).run_time, rt)  # the seed decides
    assert seen == set(itertools.permutations([10, 20, 90]))  # every order is drawn
    with pytest.raises(ValueError, match="found on 8 rows, the table has 3"):
        shuffle_ties(jobs.window(0, 3), 1, tie_groups(jobs))


def test_the_engine_schedules_the_dealt_run_times():
    """Three jobs alike on one processor, FCFS: rows start in order, so the last waits for the
    first two, whichever run times they were dealt: MWT = 120 - the last row's run time."""
    jobs = JobTable.from_columns(submit=[0, 0, 0], run_time=[10, 20, 100],
                                 req_time=[100, 100, 100], req_procs=[1, 1, 1],
                                 alloc_procs=[1, 1, 1])
    waits = set()
    for seed in range(12):
        drawn = jobs if seed == 0 else shuffle_ties(jobs, seed)
        result = make_engine(drawn, NodePool(1), "standard", "easy").run(get_policy("fcfs"))
        rt = drawn.run_time
        assert result.start.tolist() == [0, rt[0], rt[0] + rt[1]]
        waits.add(result.metrics["max_wait"])
    assert waits == {30, 110, 120}


# ---- experiment herasched --tie-draws -----------------------------------------------------------

JOBS = 400  # of the Deeplearn test high-load day: its first jobs wait, and some are alike


@pytest.fixture(scope="module")
def day():
    from hpcsched.experiments import herasched_eval as he

    return he.period_prepared("spartan-deeplearn", "test-high-load", JOBS)


def test_each_number_is_the_mean_over_the_drawn_copies(day):
    from dataclasses import replace

    from hpcsched.experiments import herasched_eval as he
    from hpcsched.experiments import herasched_grid as hg

    ev = he.evaluate_tie_draws(day, [], cluster="spartan-deeplearn", period="test-high-load",
                               draws=2)
    assert ev.tie_draws == 2 and "groups of jobs alike" in ev.ties
    groups = tie_groups(day.jobs)
    assert groups.jobs > 0
    copies = [day] + [replace(day, jobs=shuffle_ties(day.jobs, s, groups)) for s in (1, 2)]
    changed = 0
    for cell in (("fcfs", "first-available"), ("sjf", "best-fit"), ("lcfs", "topology")):
        runs = [hg.run_grid(c, selectors=cell[:1], allocators=cell[1:]) for c in copies]
        mwt = [g.mwt(cell) for g in runs]
        awt = [g.awt(cell) for g in runs]
        changed += len(set(mwt)) > 1
        assert ev.grid.mwt(cell) == pytest.approx(np.mean(mwt))
        assert ev.grid.awt(cell) == pytest.approx(np.mean(awt))
        assert ev.grid.metrics[cell]["max_wait_draw_sd"] == pytest.approx(np.std(mwt, ddof=1))
    assert changed  # the draws move some cell's MWT: the mean is not of three equal runs
    rows = ev.rows()
    assert {r["tie_draws"] for r in rows} == {2}
    # no draw: exactly the period as generated
    plain = he.evaluate_tie_draws(day, [], cluster="spartan-deeplearn", period="test-high-load",
                                  draws=0)
    assert plain.tie_draws == 0
    assert plain.grid.metrics == he.evaluate(day, [], cluster="spartan-deeplearn",
                                             period="test-high-load").grid.metrics
    with pytest.raises(ValueError, match="tie draws must be 0 or more"):
        he.evaluate_tie_draws(day, [], cluster="spartan-deeplearn", period="test", draws=-1)


def test_the_command_averages_a_model_over_the_draws(tmp_path, capsys):
    from hpcsched.agents.herasched import HeraSched, HeraSchedConfig
    from hpcsched.experiments import herasched_eval as he
    from tests.test_cli import assert_one_line_error, run_cli

    model = tmp_path / "m.pt"
    HeraSched(HeraSchedConfig(window=16, tail=4, episode_jobs=100, num_envs=1, seed=0)).save(model)
    code, out, err = run_cli(capsys, "experiment", "herasched", "--periods", "test-high-load",
                             "--jobs", str(JOBS), "--models", str(model), "--tie-draws", "1",
                             "--json")
    assert code == 0, err
    rows = json.loads(out)
    own = next(r for r in rows if r["policy"] == f"herasched:{model}")
    day = he.period_prepared("spartan-deeplearn", "test-high-load", JOBS)
    from dataclasses import replace
    runs = [he.run_model(d, str(model)) for d in
            (day, replace(day, jobs=shuffle_ties(day.jobs, 1)))]
    assert own["max_wait"] == pytest.approx(np.mean([r.mwt for r in runs]))
    assert own["wait"] == pytest.approx(np.mean([r.awt for r in runs]))
    assert own["max_wait_draw_sd"] == pytest.approx(np.std([r.mwt for r in runs], ddof=1))
    assert {r["tie_draws"] for r in rows} == {1}
    assert own["max_wait_draws"] == [r.mwt for r in runs]
    # the paired comparison against the lowest cell, from the rows themselves
    mean = next(r for r in rows if r["policy"] == "herasched")
    cells = [r for r in rows if r["kind"] == "cell"]
    low = min(cells, key=lambda r: r["max_wait"])
    assert mean["paired_cell"] == f"{low['policy']} + {low['allocator']}"
    diff = np.array(own["max_wait_draws"]) - np.array(low["max_wait_draws"])
    assert mean["paired_difference"] == pytest.approx(diff.mean())
    assert mean["paired_standard_error"] == pytest.approx(diff.std(ddof=1) / np.sqrt(2))
    assert mean["paired_lower"] == int(np.sum(diff < 0))
    code, out, err = run_cli(capsys, "experiment", "herasched", "--periods", "test-high-load",
                             "--jobs", "50", "--models", "none", "--tie-draws", "1")
    assert code == 0, err
    assert "Tie order: " in out and "mean over 2 schedules" in out
    code, out, err = run_cli(capsys, "experiment", "herasched", "--periods", "test-high-load",
                             "--jobs", str(JOBS), "--models", str(model), "--tie-draws", "1",
                             "--plot", str(tmp_path))
    assert code == 0, err
    assert "paired over the 2 schedules, HeraSched's MWT minus" in out
    figure = tmp_path / "spartan-deeplearn-test-high-load-draws.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = run_cli(capsys, "experiment", "herasched", "--tie-draws", "-1")
    assert_one_line_error(code, err, "--tie-draws -1")


# ---- compare --tie-draws ------------------------------------------------------------------------

def test_compare_averages_each_window_over_the_drawn_tables(tmp_path, capsys):
    """Three jobs alike on one processor, then the same again an hour later: FCFS's MWT on each
    table is 120 - the run time the third row of the first array was dealt (hand-computed), so
    the row's mean is known for every seed."""
    from hpcsched.workload.swf import write_swf
    from tests.test_cli import assert_one_line_error, run_cli

    jobs = JobTable.from_columns(submit=[0, 0, 0, 3600, 3600, 3600],
                                 run_time=[10, 20, 100, 10, 20, 100], req_time=[100] * 6,
                                 req_procs=[1] * 6, alloc_procs=[1] * 6)
    trace = tmp_path / "alike.swf"
    write_swf(jobs, trace)
    expected = []
    for seed in range(4):
        drawn = jobs if seed == 0 else shuffle_ties(jobs, seed)
        expected.append(max(drawn.run_time[0] + drawn.run_time[1],
                            drawn.run_time[3] + drawn.run_time[4]))
    assert len(set(expected)) > 1  # the draws differ
    code, out, err = run_cli(capsys, "compare", str(trace), "--policies", "fcfs", "--backfill",
                             "none", "--start", "0", "--jobs", "6", "--tie-draws", "3", "--json",
                             "--nodes", "1", "--procs-per-node", "1")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["tie_draws"] == 3 and row["windows"] == 1
    assert row["max_wait"] == pytest.approx(np.mean(expected))
    code, out, err = run_cli(capsys, "compare", str(trace), "--policies", "fcfs", "--backfill",
                             "none", "--start", "0", "--jobs", "6", "--tie-draws", "3",
                             "--nodes", "1", "--procs-per-node", "1")
    assert code == 0, err
    assert "mean over windows and 4 tie draws" in out and "6 of 6 jobs are in 2 groups" in out
    code, _, err = run_cli(capsys, "compare", str(trace), "--tie-draws", "-2")
    assert_one_line_error(code, err, "--tie-draws -2")
    code, _, err = run_cli(capsys, "compare", str(trace), "--episodes", "2", "--tie-draws", "1")
    assert_one_line_error(code, err, "--episodes")


def test_the_grid_averages_each_cell_over_the_drawn_tables(day, capsys):
    from dataclasses import replace

    from hpcsched.experiments import herasched_grid as hg
    from tests.test_cli import assert_one_line_error, run_cli

    cell = ("fcfs", "best-fit")
    grid = hg.run_grid(day, selectors=cell[:1], allocators=cell[1:], tie_draws=2)
    groups = tie_groups(day.jobs)
    single = [hg.run_grid(replace(day, jobs=shuffle_ties(day.jobs, s, groups) if s else day.jobs),
                          selectors=cell[:1], allocators=cell[1:]).metrics[cell]
              for s in range(3)]
    assert grid.metrics[cell]["max_wait_draws"] == [m["max_wait"] for m in single]
    assert grid.awt(cell) == pytest.approx(np.mean([m["wait"] for m in single]))
    assert grid.metrics[cell]["wait_draw_sd"] == pytest.approx(
        np.std([m["wait"] for m in single], ddof=1))
    (row,) = grid.rows()
    assert row["tie_draws"] == 2 and row["max_wait"] == pytest.approx(
        np.mean(row["max_wait_draws"]))
    code, out, err = run_cli(capsys, "experiment", "herasched-grid", "--cluster",
                             "spartan-deeplearn", "--high-load", "--jobs", "200", "--selectors",
                             "fcfs,sjf", "--allocators", "best-fit", "--tie-draws", "2",
                             "--plot", "", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert {r["tie_draws"] for r in rows} == {2} and all(len(r["max_wait_draws"]) == 3
                                                         for r in rows)
    code, _, err = run_cli(capsys, "experiment", "herasched-grid", "--tie-draws", "-1")
    assert_one_line_error(code, err, "--tie-draws -1")


def test_drawn_tables_are_the_table_then_its_seeded_copies():
    from hpcsched.workload.ties import drawn_tables

    jobs = table()
    tables = drawn_tables(jobs, 3)
    assert tables[0] is jobs and len(tables) == 4
    for seed, other in enumerate(tables[1:], start=1):
        assert np.array_equal(other.run_time, shuffle_ties(jobs, seed).run_time)
    assert drawn_tables(jobs, 0) == [jobs]
    with pytest.raises(ValueError, match="0 or more"):
        drawn_tables(jobs, -1)
