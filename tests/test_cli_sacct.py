"""The command line on Slurm accounting: `trace jobs` (every job as read, for sacct, HPCsim and SWF
files), `trace stats` (what reading dropped and why), `simulate` on a partition of a slurm.conf, and
one-line errors for a bad file."""

import csv
import io
import json
from pathlib import Path

from hpcsched.cli import main

DATA = Path(__file__).parent / "data"
JOBS = str(DATA / "sacct_small" / "jobs.txt")
CONF = str(DATA / "sacct_small" / "slurm.conf")
KEYS = ["job_id", "submit", "wait", "run", "limit", "procs", "nodes", "cores_per_node",
        "mem_per_node", "gpus_per_node", "partition", "user", "state"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_trace_jobs_json_lists_every_job_as_read(capsys):
    code, out, err = run_cli(capsys, "trace", "jobs", JOBS, "--json")
    assert code == 0
    rows = json.loads(out)
    assert all(list(r)[:len(KEYS)] == KEYS for r in rows)
    by_id = {r["job_id"]: r for r in rows}
    assert list(by_id) == ["1001", "1015", "1002", "1003", "1004_1", "1004_2", "1007+0", "1007+1",
                           "1011", "1013", "1014", "1016"]
    # 1007+1 (tests/data/sacct_small/jobs.txt line 14): 16 CPUs, 1.5T and 8 GPUs on 2 nodes
    assert by_id["1007+1"] == {
        "job_id": "1007+1", "submit": 7200, "wait": 600, "run": 1800, "limit": 3600, "procs": 16,
        "nodes": 2, "cores_per_node": 8, "mem_per_node": 786432, "gpus_per_node": 4,
        "partition": "gpu", "user": "dave", "state": "COMPLETED", "account": "eng",
        "qos": "normal", "line": 14}
    # UNLIMITED and Partition_Limit: no limit, null
    assert by_id["1011"]["limit"] is None and by_id["1013"]["limit"] is None
    assert by_id["1011"]["state"] == "CANCELLED" and by_id["1011"]["run"] == 500
    assert "read: 22 rows read, 12 jobs kept" in err  # the report goes to stderr


def test_trace_jobs_csv_of_a_partition(capsys):
    code, out, _ = run_cli(capsys, "trace", "jobs", JOBS, "--partition", "gpu", "--csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["job_id"] for r in rows] == ["1004_1", "1004_2", "1007+1", "1013", "1016"]
    assert [r["submit"] for r in rows] == ["0", "0", "3600", "14400", "21600"]
    assert rows[3]["limit"] == "" and rows[3]["cores_per_node"] == "4"


def test_trace_jobs_after_a_profiles_cleaning(capsys):
    code, out, err = run_cli(capsys, "trace", "jobs", JOBS, "--clean", "standard", "--json")
    assert code == 0
    by_id = {r["job_id"]: r for r in json.loads(out)}
    assert by_id["1011"]["limit"] == 500  # standard: no request -> the run time
    assert "cleaning (standard)" in err


def test_trace_jobs_of_an_hpcsim_trace(capsys):
    path = str(DATA / "hpcsim_small" / "dl1k_s55.tsv.gz")
    code, out, _ = run_cli(capsys, "trace", "jobs", path, "--json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 1000
    # tests/workload/test_slurm.py works this job out by hand: 64 cores, 16 GPUs, 1260000M on
    # 4 nodes, 720 min, ElapsedRaw 1765, 27:06 after the first
    row = next(r for r in rows if r["job_id"] == "6500001")
    assert (row["nodes"], row["cores_per_node"], row["gpus_per_node"], row["mem_per_node"]) == \
        (4, 16, 4, 315000)
    assert (row["limit"], row["run"], row["submit"], row["partition"]) == \
        (43200, 1765, 1626, "deeplearn")


def test_trace_jobs_of_an_swf_file(capsys, tmp_path):
    path = tmp_path / "small.swf"
    path.write_text("; MaxProcs: 8\n"
                    "1 0 5 10 3 -1 -1 3 20 -1 1 7 1 -1 -1 2 -1 -1\n"
                    "2 4 -1 30 1 -1 -1 1 -1 -1 5 -1 1 -1 -1 -1 -1 -1\n")
    code, out, _ = run_cli(capsys, "trace", "jobs", str(path), "--json")
    assert code == 0
    first, second = json.loads(out)
    assert first["job_id"] == "1" and first["limit"] == 20 and first["procs"] == 3
    assert (first["user"], first["partition"], first["state"], first["wait"]) == (7, 2, "COMPLETED", 5)
    assert first["nodes"] is None and first["mem_per_node"] is None  # SWF says nothing per node
    assert (second["limit"], second["user"], second["partition"], second["state"]) == \
        (None, None, None, "CANCELLED")


def test_trace_stats_says_what_was_dropped_and_why(capsys):
    code, out, _ = run_cli(capsys, "trace", "stats", JOBS)
    assert code == 0
    assert "22 rows read, 12 jobs kept" in out
    assert "dropped          5  job step rows (123.batch, 123.extern, 123.0)" in out
    assert "dropped          2  never started (CANCELLED before it started)" in out
    assert "dropped          1  pending array ranges" in out
    code, out, _ = run_cli(capsys, "trace", "stats", JOBS, "--json")
    row = json.loads(out)[0]
    assert row["jobs"] == 12 and row["procs"] is None  # no cluster named: no offered load
    assert "dropped, never started (PENDING): 1" in row["read"]
    # GPU jobs: 1004_1, 1004_2, 1007+1, 1013 (1016 ran in gpu without one)
    assert row["gpu_jobs"] == 4 / 12 and row["partitions"] == 2


def test_trace_stats_on_a_partition_of_a_cluster(capsys):
    code, out, _ = run_cli(capsys, "trace", "stats", JOBS, "--cluster", CONF, "--partition", "gpu",
                           "--json")
    assert code == 0
    row = json.loads(out)[0]
    assert row["jobs"] == 5 and row["procs"] == 3 * 16


def test_simulate_a_partition_on_slurm_conf(capsys):
    code, out, _ = run_cli(capsys, "simulate", JOBS, "--cluster", CONF, "--partition", "gpu",
                           "--policy", "fcfs", "--allocator", "best-fit", "--backfill", "easy",
                           "--json")
    assert code == 0
    row = json.loads(out)
    assert row["jobs"] == 5 and row["backfill"] == "easy"
    assert "dropped, other partition: 11" in row["cleaning"]


def test_a_bad_field_is_one_line_naming_line_and_column(capsys, tmp_path):
    lines = Path(JOBS).read_text().splitlines()
    lines[5] = lines[5].replace("|2024-01-01T00:10:00|", "|2024-01-01X00:10:00|", 1)  # 1002
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    code, _, err = run_cli(capsys, "trace", "jobs", str(path), "--json")
    assert code == 2
    assert err.strip().splitlines() == [
        f"hpcsched: error: {path}, line 6, column Submit: '2024-01-01X00:10:00' is not a date "
        f"and time (YYYY-MM-DDTHH:MM:SS)"]
