"""The command line as a user meets it: output formats, windows, and one-line errors on bad input."""

import csv
import io
import json
import os
import stat
import subprocess
import sys

import pytest

from hpcsched.cli import main

HEADER = "; MaxNodes: 4\n; MaxProcs: 4\n"


def job(i, submit, run, procs, req=-1):
    return f"{i} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 -1 -1 -1 -1\n"


@pytest.fixture
def small_swf(tmp_path):
    p = tmp_path / "small.swf"
    p.write_text(HEADER + job(1, 0, 10, 3) + job(2, 1, 10, 3) + job(3, 2, 20, 1))
    return p


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *needles):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hpcsched: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_simulate_json_keys_and_values(capsys, small_swf):
    code, out, _ = run_cli(capsys, "simulate", str(small_swf), "--policy", "fcfs",
                           "--backfill", "easy", "--json")
    assert code == 0
    row = json.loads(out)
    for key in ("jobs", "first_job_id", "last_job_id", "bsld", "max_bsld", "wait", "max_wait",
                "turnaround", "slowdown", "utilization", "makespan"):
        assert key in row
    # the EASY schedule of these three jobs, by hand: starts 0, 10, 2 -> waits 0, 9, 0
    assert row["jobs"] == 3 and row["first_job_id"] == 1 and row["last_job_id"] == 3
    assert row["wait"] == pytest.approx(3.0) and row["max_wait"] == 9
    assert row["makespan"] == 22


def test_simulate_writes_records(capsys, small_swf, tmp_path):
    out_csv = tmp_path / "jobs.csv"
    code, _, _ = run_cli(capsys, "simulate", str(small_swf), "--backfill", "easy",
                         "--records", str(out_csv))
    assert code == 0
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["start"] for r in rows] == ["0", "10", "2"]


def test_compare_rows_are_flat_and_share_windows(capsys):
    code, out, _ = run_cli(capsys, "compare", "lublin-1", "--policies", "fcfs,sjf",
                           "--backfill", "none,easy", "--windows", "3", "--jobs", "256",
                           "--seed", "4", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["policy"], r["backfill"]) for r in rows] == [
        ("fcfs", "none"), ("fcfs", "easy"), ("sjf", "none"), ("sjf", "easy")]
    for r in rows:
        assert r["trace"] == "lublin-1" and r["windows"] == 3 and r["jobs"] == 256
        assert all(not isinstance(v, (dict, list)) for v in r.values())
    # FCFS never lets a job pass the head, so without backfilling its waits bound EASY's
    assert rows[1]["wait"] <= rows[0]["wait"]


def test_compare_csv_and_markdown(capsys):
    code, out, _ = run_cli(capsys, "compare", "lublin-1", "--policies", "fcfs",
                           "--backfill", "none", "--start", "0", "--jobs", "100", "--csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["policy"] == "fcfs" and float(rows[0]["bsld"]) >= 1
    code, out, _ = run_cli(capsys, "compare", "lublin-1", "--policies", "fcfs",
                           "--backfill", "none", "--start", "0", "--jobs", "100", "--markdown")
    assert out.startswith("| trace |")


def test_paper_windows_under_rlscheduler(capsys):
    code, out, _ = run_cli(capsys, "compare", "lublin-1", "--profile", "rlscheduler",
                           "--policies", "fcfs", "--backfill", "none", "--windows", "10",
                           "--jobs", "1024", "--first", "10000")
    assert code == 0
    assert "1981,2756,4299,8850,3316,2714,5228,7762,4022,7085" in out
    assert "7273.77" in out  # the paper's FCFS value on Lublin-1 (Table V)


def test_trace_convert_first(capsys, tmp_path):
    dest = tmp_path / "first.swf"
    code, _, _ = run_cli(capsys, "trace", "convert", "lublin-1", str(dest), "--first", "100")
    assert code == 0
    lines = [ln for ln in dest.read_text().splitlines() if ln and not ln.startswith(";")]
    assert len(lines) == 100 and lines[0].split()[0] == "1" and lines[-1].split()[0] == "100"


def test_trace_stats_table(capsys):
    code, out, _ = run_cli(capsys, "trace", "stats", "lublin-1", "--json")
    assert code == 0
    row = json.loads(out)[0]
    assert row["jobs"] == 10000 and row["procs"] == 256


# -- bad input ----------------------------------------------------------------------------------------

def test_truncated_line(capsys, tmp_path):
    p = tmp_path / "bad.swf"
    p.write_text(HEADER + job(1, 0, 10, 1) + "2 5 -1 10 1 -1\n")
    code, _, err = run_cli(capsys, "simulate", str(p))
    assert_one_line_error(code, err, "bad.swf", "line 4", "18 fields")


def test_non_numeric_field(capsys, tmp_path):
    p = tmp_path / "bad.swf"
    p.write_text(HEADER + job(1, 0, 10, 1) + job(2, 5, "abc", 1))
    code, _, err = run_cli(capsys, "simulate", str(p))
    assert_one_line_error(code, err, "bad.swf", "line 4", "field 4", "abc")


def test_job_larger_than_cluster_stops_and_names_the_option(capsys, tmp_path):
    p = tmp_path / "big.swf"
    p.write_text(HEADER + job(1, 0, 10, 1) + job(2, 5, 10, 9))
    code, _, err = run_cli(capsys, "simulate", str(p))
    assert_one_line_error(code, err, "job 2", "9 processors", "--drop-oversized", "line 4")
    code, out, _ = run_cli(capsys, "simulate", str(p), "--drop-oversized", "--json")
    assert code == 0
    row = json.loads(out)
    assert row["jobs"] == 1 and row["dropped_oversized"] == 1


def test_empty_file(capsys, tmp_path):
    p = tmp_path / "empty.swf"
    p.write_text("")
    code, _, err = run_cli(capsys, "simulate", str(p))
    assert_one_line_error(code, err, "empty.swf")


def test_missing_file(capsys, tmp_path):
    code, _, err = run_cli(capsys, "simulate", str(tmp_path / "nope.swf"))
    assert_one_line_error(code, err, "nope.swf")


def test_window_outside_the_trace(capsys):
    code, _, err = run_cli(capsys, "simulate", "lublin-1", "--start", "9990", "--jobs", "100")
    assert_one_line_error(code, err, "outside", "10000")


def test_unknown_policy(capsys):
    code, _, err = run_cli(capsys, "simulate", "lublin-1", "--policy", "nope")
    assert_one_line_error(code, err, "nope", "sjf")


def test_console_script_has_no_traceback(tmp_path):
    p = tmp_path / "bad.swf"
    p.write_text(HEADER + "1 2 3\n")
    proc = subprocess.run([sys.executable, "-m", "hpcsched.cli", "simulate", str(p)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "line 3" in proc.stderr


def test_job_without_processor_count_is_dropped_and_counted(capsys, tmp_path):
    # both processor fields unknown (-1): SchedGym's loader keeps such a job; it cannot be simulated
    p = tmp_path / "noprocs.swf"
    p.write_text(HEADER + job(1, 0, 10, 1) + job(2, 5, 10, -1) + job(3, 6, 10, 2))
    code, out, _ = run_cli(capsys, "simulate", str(p), "--profile", "rlscheduler", "--json")
    assert code == 0
    row = json.loads(out)
    assert row["jobs"] == 2
    assert "1 job(s) without a processor count dropped" in row["cleaning"]


# -- what a reliability pass found -----------------------------------------------------------------

def test_an_unknown_submit_time_is_dropped_and_counted_or_scheduled_and_reported(capsys, tmp_path):
    """Job 1's submit time is SWF's -1 (unknown). The standard profile drops it and says so;
    SchedGym's loader keeps it, and it is scheduled from -1 and reported like every other job
    (it was once counted as kept, then reported as never started)."""
    p = tmp_path / "unknown.swf"
    p.write_text(HEADER + job(1, -1, 10, 2) + job(2, 0, 10, 4) + job(3, 5, 10, 2))
    code, out, _ = run_cli(capsys, "simulate", str(p), "--json")
    assert code == 0
    row = json.loads(out)
    assert row["jobs"] == 2 and "unstarted" not in row
    assert "dropped, submit time unknown: 1" in row["cleaning"]
    records = tmp_path / "records.csv"
    code, out, _ = run_cli(capsys, "simulate", str(p), "--profile", "rlscheduler", "--json",
                           "--records", str(records))
    assert code == 0
    row = json.loads(out)
    assert row["jobs"] == 3 and "unstarted" not in row
    rows = list(csv.DictReader(records.open()))
    assert [(r["job_id"], r["start"]) for r in rows] == [("1", "-1"), ("2", "9"), ("3", "19")]


@pytest.mark.parametrize("token, field", [("1e400", "field 4 (run_time)"),
                                          ("9223372036854775808", "field 5 (alloc_procs)")])
def test_a_value_too_large_names_the_file_line_and_field(capsys, tmp_path, token, field):
    p = tmp_path / "huge.swf"
    text = job(2, 5, 10, 1)
    if field.startswith("field 4"):
        text = text.replace(" 10 1 ", f" {token} 1 ", 1)
    else:
        text = text.replace(" 10 1 ", f" 10 {token} ", 1)
    p.write_text(HEADER + job(1, 0, 10, 1) + text)
    code, out, err = run_cli(capsys, "simulate", str(p), "--json")
    assert_one_line_error(code, err, "huge.swf", "line 4", field, "too large")
    assert out == ""


def test_a_cluster_without_nodes_is_an_error_naming_where(capsys, tmp_path, small_swf):
    code, _, err = run_cli(capsys, "simulate", str(small_swf), "--nodes", "0")
    assert_one_line_error(code, err, "--nodes", "at least 1")
    p = tmp_path / "zero.swf"
    p.write_text("; MaxNodes: 0\n; MaxProcs: 4\n" + job(1, 0, 10, 1))
    code, _, err = run_cli(capsys, "simulate", str(p))
    assert_one_line_error(code, err, "zero.swf, line 1", "MaxNodes: 0", "--nodes")
    code, out, _ = run_cli(capsys, "simulate", str(p), "--nodes", "4", "--json")
    assert code == 0 and json.loads(out)["jobs"] == 1


@pytest.mark.parametrize("argv, option", [
    (["compare", "lublin-1", "--windows", "0"], "--windows"),
    (["compare", "lublin-1", "--jobs", "-3"], "--jobs"),
    (["compare", "lublin-1", "--starts", "0,-5"], "--starts"),
    (["simulate", "lublin-1", "--start", "-1"], "--start"),
    (["trace", "convert", "lublin-1", "OUT", "--first", "-5"], "--first"),
    (["train", "rlscheduler", "--epochs", "-1"], "--epochs"),
    (["train", "deeprm", "--epochs", "0"], "--epochs"),
    (["train", "inspector", "--trajectories", "0"], "--trajectories"),
    (["trace", "generate", "lublin", "OUT", "--max-run-time", "inf"], "--max-run-time"),
])
def test_a_count_out_of_range_is_refused_naming_the_option(capsys, tmp_path, argv, option):
    argv = [str(tmp_path / "out.swf") if a == "OUT" else a for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, f"argument {option}", "--help")
    assert out == "" and not (tmp_path / "out.swf").exists()


def test_a_deeprm_policy_outside_its_profile_is_a_one_line_error(capsys):
    code, _, err = run_cli(capsys, "simulate", "lublin-1", "--jobs", "50",
                           "--policy", "deeprm:pretrained/deeprm-load-110")
    assert_one_line_error(code, err, "deeprm:pretrained/deeprm-load-110", "--profile deeprm")


def test_trace_stats_reports_what_cleaning_dropped(capsys, tmp_path):
    """Job 2 asks for 8 of the 4 processors: the statistics leave it out, and say so."""
    p = tmp_path / "over.swf"
    p.write_text(HEADER + job(1, 0, 10, 2) + job(2, 5, 10, 8) + job(3, 9, 10, 2))
    code, out, _ = run_cli(capsys, "trace", "stats", str(p), "--json")
    assert code == 0
    row = json.loads(out)[0]
    assert row["jobs"] == 2 and row["dropped_oversized"] == 1
    assert "1 job(s) larger than the cluster dropped" in row["cleaning"]
    assert "job 2 asks for 8 processors" in row["cleaning"]
    code, out, _ = run_cli(capsys, "trace", "stats", str(p))
    assert code == 0
    assert out.splitlines()[0].startswith("over: 3 jobs read")
    assert "job 2 asks for 8 processors" in out.splitlines()[0]


def test_json_output_is_strict_json(capsys, tmp_path):
    """One job spans no time: its inter-arrival time and load are not numbers, printed as null
    (NaN and Infinity are not JSON)."""
    p = tmp_path / "one.swf"
    p.write_text(HEADER + job(1, 0, 10, 2))

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    code, out, _ = run_cli(capsys, "trace", "stats", str(p), "--json")
    assert code == 0
    row = json.loads(out, parse_constant=refuse)[0]
    assert row["offered_load"] is None and row["mean_interarrival_s"] is None


def test_written_traces_are_readable_by_the_group(capsys, tmp_path):
    old = os.umask(0o022)
    try:
        dest = tmp_path / "part.swf.gz"
        code, _, _ = run_cli(capsys, "trace", "convert", "lublin-1", str(dest), "--first", "10")
    finally:
        os.umask(old)
    assert code == 0
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644
