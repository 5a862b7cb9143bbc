"""Slurm accounting (`sacct -P`): the hand-written files of tests/data/sacct_small/ read job by job,
against values worked out by hand below (never copied from the reader), and one error per kind of
bad file."""

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from hpcsched.workload.accounting import memory_mb
from hpcsched.workload.sacct import parse_duration, read_sacct, read_sacct_with_report
from hpcsched.workload.slurm import read_hpcsim
from hpcsched.workload.swf import TraceError, read_swf
from hpcsched.workload.traces import load_trace

DATA = Path(__file__).parents[1] / "data"
JOBS = DATA / "sacct_small" / "jobs.txt"
TIMELIMIT = DATA / "sacct_small" / "timelimit.txt"
UNKNOWN = None  # a job with no time limit of its own

# jobs.txt, every kept job in submit order, worked out by hand from its row. The earliest Submit is
# 2024-01-01T00:00:00 (1001). Columns: source id, JobIDRaw, submit, wait (Start - Submit), run
# (ElapsedRaw), limit (TimelimitRaw x 60), nodes (NNodes), cores per node (NCPUS / NNodes, up),
# memory per node MB (AllocTRES mem, else ReqMem, / NNodes, up), GPUs per node (gres/gpu=N of
# AllocTRES / NNodes, up), partition, user, state.
EXPECTED = [
    # 16G total; steps 1001.batch/.extern/.0 skipped
    ("1001", 1001, 0, 100, 3600, 7200, 1, 4, 16 * 1024, 0, "cpu", "alice", "COMPLETED"),
    # submitted 00:05 but listed last; 1T on 4 nodes; 2880 min
    ("1015", 1015, 300, 21300, 3600, 2880 * 60, 4, 32, 1024 * 1024 // 4, 0, "cpu", "ivan",
     "COMPLETED"),
    # old Slurm's 4000Mn: per node
    ("1002", 1002, 600, 600, 7200, 86400, 2, 16, 4000, 0, "cpu", "bob", "COMPLETED"),
    # 2000Mc: per CPU, x 8 CPUs; TIMEOUT keeps its real run time, 30 s past its 60 min
    ("1003", 1003, 1800, 0, 3630, 3600, 1, 8, 16000, 0, "cpu", "alice", "TIMEOUT"),
    # array task 1 of 1004 (own id 1005); gres/gpu=1 beside gres/gpu:a100=1 is one GPU
    ("1004_1", 1005, 3600, 300, 1200, 1800, 1, 2, 8192, 1, "gpu", "carol", "COMPLETED"),
    # array task 2: only typed GPUs (2 x v100); ReqMem 8388608K = 8192 MB; FAILED after 10 s
    ("1004_2", 1006, 3600, 300, 10, 1800, 1, 2, 8192, 2, "gpu", "carol", "FAILED"),
    # heterogeneous job 1007: component 0 on cpu, component 1 (own id 1008) on gpu
    ("1007+0", 1007, 7200, 600, 1800, 3600, 1, 4, 4096, 0, "cpu", "dave", "COMPLETED"),
    # 1.5T on 2 nodes = 786432 MB each; 8 GPUs on 2 nodes
    ("1007+1", 1008, 7200, 600, 1800, 3600, 2, 8, 786432, 4, "gpu", "dave", "COMPLETED"),
    # cancelled while running: keeps its 500 s; UNLIMITED
    ("1011", 1011, 14400, 20, 500, UNKNOWN, 1, 1, 500, 0, "cpu", "frank", "CANCELLED"),
    # Partition_Limit; 10 CPUs on 3 nodes -> 4 per node; 1000 MB / 3 -> 334; 5 GPUs / 3 -> 2
    ("1013", 1013, 18000, 0, 1000, UNKNOWN, 3, 4, 334, 2, "gpu", "grace", "OUT_OF_MEMORY"),
    # 0.5G = 512 MB from ReqMem (AllocTRES names no mem)
    ("1014", 1014, 19800, 1800, 60, 600, 1, 2, 512, 0, "cpu", "heidi", "NODE_FAIL"),
    # allocated 8G where 4G was asked (the allocation counts); ran 600 s of its 900 s span;
    # gres/gpumem=40G is GPU memory, not a GPU
    ("1016", 1016, 25200, 0, 600, 1200, 1, 2, 8192, 0, "gpu", "judy", "COMPLETED"),
]
# SWF status of each state: 1 COMPLETED, 0 failures, 5 CANCELLED
STATUS = {"COMPLETED": 1, "TIMEOUT": 0, "FAILED": 0, "CANCELLED": 5, "OUT_OF_MEMORY": 0,
          "NODE_FAIL": 0}
LINES = {"1001": 2, "1015": 21, "1002": 6, "1003": 7, "1004_1": 9, "1004_2": 11, "1007+0": 12,
         "1007+1": 14, "1011": 17, "1013": 19, "1014": 20, "1016": 22}


def source(jobs, name):
    return jobs.header.source.take(name, jobs.line).tolist()


def test_every_job_of_the_hand_written_file():
    jobs, report = read_sacct_with_report(JOBS)
    assert len(jobs) == len(EXPECTED)
    assert source(jobs, "job_id") == [e[0] for e in EXPECTED]
    assert jobs.job_id.tolist() == [e[1] for e in EXPECTED]
    assert jobs.submit.tolist() == [e[2] for e in EXPECTED]
    assert jobs.wait.tolist() == [e[3] for e in EXPECTED]
    assert jobs.run_time.tolist() == [e[4] for e in EXPECTED]
    assert jobs.req_time.tolist() == [-1 if e[5] is None else e[5] for e in EXPECTED]
    assert jobs.nodes.tolist() == [e[6] for e in EXPECTED]
    assert jobs.cores_per_node.tolist() == [e[7] for e in EXPECTED]
    assert jobs.mem_per_node.tolist() == [e[8] for e in EXPECTED]
    assert jobs.gpus_per_node.tolist() == [e[9] for e in EXPECTED]
    assert [jobs.header.partitions[int(p)] for p in jobs.partition] == [e[10] for e in EXPECTED]
    assert source(jobs, "partition") == [e[10] for e in EXPECTED]
    assert source(jobs, "user") == [e[11] for e in EXPECTED]
    assert source(jobs, "state") == [e[12] for e in EXPECTED]
    assert jobs.status.tolist() == [STATUS[e[12]] for e in EXPECTED]
    # procs: NCPUS; users numbered in name order (alice 1 ... judy 9; erin's jobs never ran)
    assert jobs.procs.tolist() == [4, 128, 32, 8, 2, 2, 4, 16, 1, 10, 2, 2]
    assert jobs.user.tolist() == [1, 8, 2, 1, 3, 3, 4, 4, 5, 6, 7, 9]
    assert jobs.line.tolist() == [LINES[e[0]] for e in EXPECTED]
    assert jobs.header.partitions == ("cpu", "gpu")  # in the order they first appear
    assert jobs.header.unix_start_time == 1704067200  # 2024-01-01T00:00:00 UTC
    assert jobs.header.report is report and jobs.header.name == "jobs"
    assert source(jobs, "account")[:3] == ["phys", "phys", "chem"]
    assert source(jobs, "qos")[3] == "long"


def test_what_was_dropped_and_changed_is_counted():
    _, report = read_sacct_with_report(JOBS)
    assert (report.rows_read, report.rows_kept) == (22, 12)
    # reasons as the report words them, each with its count
    assert report.dropped == {
        "job step rows (123.batch, 123.extern, 123.0)": 5,  # 1001 x 3, 1004_1, 1007+0
        "pending array ranges (123_[5-10]: tasks never started)": 1,  # 1004_[3-5]
        # 1009 (no CPU allocated, Start None) and 1017 (Start Unknown, its 2 CPUs asked for)
        "never started (CANCELLED before it started)": 2,
        "never started (PENDING)": 1,  # 1010
        "not ended when sacct ran (RUNNING, SUSPENDED, ..., or no End): run time unknown": 1,
    }
    changed = report.changed
    assert changed["no time limit (UNLIMITED, Partition_Limit): requested time unknown, -1"] == 2
    assert changed["NCPUS not a multiple of the node count (cores per node rounded up)"] == 1
    assert changed["GPUs not a multiple of the node count (GPUs per node rounded up)"] == 1
    assert changed["memory per node not a whole MB (rounded up)"] == 1
    assert changed["memory per CPU (ReqMem ...c): times NCPUS"] == 1
    assert changed["memory allocated (AllocTRES mem=) differs from ReqMem (the allocation "
                   "used)"] == 1
    assert changed["reordered by submit time"] == 10  # 1015 moved up past ten jobs
    assert report.notes == {"ElapsedRaw differs from End - Start (time suspended; ElapsedRaw "
                            "used)": 1, "ran past its time limit (kept as logged)": 1}
    text = "\n".join(report.lines())
    assert "22 rows read, 12 jobs kept" in text and "dropped          5  job step rows" in text


# timelimit.txt: `sacct -p` (a trailing '|'), CRLF line ends, columns in another order, the
# formatted Timelimit instead of TimelimitRaw, AllocCPUS/AllocNodes, no ElapsedRaw (run = End -
# Start) and no JobIDRaw (the numeric id is the position in submit order). The earliest Submit is
# 2009's, 09:59:00.
EXPECTED_LIMITS = [
    # id, submit, wait, run, limit, nodes, cores/node, MB/node, GPUs/node, partition, state
    ("2009", 0, 60, 10, (2 * 24 + 12) * 3600, 1, 2, 2048, 0, "cpu", "COMPLETED"),  # 2-12:00:00
    ("2001", 60, 0, 3600, 86400, 1, 4, 4096, 0, "cpu", "COMPLETED"),  # 1-00:00:00; 4Gn
    ("2002_3", 90, 30, 600, 9000, 2, 4, 4000, 0, "cpu", "COMPLETED"),  # 02:30:00; 1000Mc x 8 / 2
    ("2003+1", 120, 240, 2705, 2700, 1, 2, 2048, 1, "gpu", "TIMEOUT"),  # MM:SS 45:00
    ("2004", 180, 0, 7200, 7 * 86400, 2, 8, 32768, 2, "gpu", "COMPLETED"),  # 7-00:00:00
    ("2005", 240, 0, 1, UNKNOWN, 1, 1, 100, 0, "cpu", "COMPLETED"),  # UNLIMITED
    ("2006", 300, 10, 0, UNKNOWN, 1, 1, 1024, 0, "cpu", "FAILED"),  # Partition_Limit
    ("2007", 360, 60, 30, 30, 1, 1, 500, 0, "cpu", "COMPLETED"),  # 00:00:30
    ("2008", 420, 60, 60, 600, 1, 1, 1024, 0, "cpu", "CANCELLED"),  # 10:00; CANCELLED+
]


def test_formatted_limits_any_column_order_crlf_trailing_separator():
    jobs = read_sacct(TIMELIMIT)
    e = EXPECTED_LIMITS
    assert source(jobs, "job_id") == [x[0] for x in e]
    assert jobs.job_id.tolist() == list(range(1, 10))
    assert jobs.header.fields["JobIdSource"] == "row"
    assert jobs.submit.tolist() == [x[1] for x in e]
    assert jobs.wait.tolist() == [x[2] for x in e]
    assert jobs.run_time.tolist() == [x[3] for x in e]
    assert jobs.req_time.tolist() == [-1 if x[4] is None else x[4] for x in e]
    assert jobs.nodes.tolist() == [x[5] for x in e]
    assert jobs.cores_per_node.tolist() == [x[6] for x in e]
    assert jobs.mem_per_node.tolist() == [x[7] for x in e]
    assert jobs.gpus_per_node.tolist() == [x[8] for x in e]
    assert source(jobs, "partition") == [x[9] for x in e]
    assert source(jobs, "state") == [x[10] for x in e]
    assert source(jobs, "user") == ["kim"] * 3 + ["lee"] * 2 + ["kim"] * 2 + ["lee"] * 2


def test_partition_selection():
    jobs, report = read_sacct_with_report(JOBS, partition="gpu")
    assert source(jobs, "job_id") == ["1004_1", "1004_2", "1007+1", "1013", "1016"]
    # submit counts from the earliest gpu job's (01:00:00)
    assert jobs.submit.tolist() == [0, 0, 3600, 14400, 21600]
    assert jobs.header.partitions == ("gpu",) and set(jobs.partition.tolist()) == {0}
    # steps and ranges are skipped first; of the other 16 rows, 11 are not gpu's
    assert report.dropped["other partition"] == 11
    assert report.rows_kept == 5
    with pytest.raises(TraceError, match=r"no job of partition 'debug' \(partitions in the "
                                         r"file: cpu, gpu\)"):
        read_sacct(JOBS, partition="debug")


def test_no_limit_from_the_partitions_maxtime():
    jobs = read_sacct(JOBS, no_limit={"cpu": 172800})
    by_id = dict(zip(source(jobs, "job_id"), jobs.req_time.tolist()))
    assert by_id["1011"] == 172800  # cpu: given
    assert by_id["1013"] == -1      # gpu: not given, still unknown


def test_columns_in_any_order_and_gzip(tmp_path):
    rows = [line.split("|") for line in JOBS.read_text().splitlines()]
    order = list(reversed(range(len(rows[0]))))
    text = "\n".join("|".join(r[k] for k in order) for r in rows) + "\n"
    path = tmp_path / "reversed.txt.gz"
    path.write_bytes(gzip.compress(text.encode()))
    a, b = read_sacct(JOBS), read_sacct(path)
    for name in a.columns:
        assert np.array_equal(a[name], b[name]), name
    assert source(a, "job_id") == source(b, "job_id")
    assert b.header.name == "reversed"


def test_load_trace_recognises_sacct_and_takes_a_partition():
    jobs = load_trace(JOBS)
    assert len(jobs) == 12 and jobs.header.fields["Format"] == "Slurm sacct -P"
    assert len(load_trace(JOBS, partition="cpu")) == 7  # of 11 cpu rows: 4 never ran or run on
    with pytest.raises(TraceError, match="drop_unbalanced= applies to HPCsim"):
        load_trace(JOBS, drop_unbalanced=True)


# -- the parsers --------------------------------------------------------------------------------


@pytest.mark.parametrize("text, seconds", [
    ("45", 45 * 60), ("45:00", 2700), ("05:30", 330), ("01:00:00", 3600), ("1-00:00:00", 86400),
    ("2-12", (2 * 24 + 12) * 3600), ("3-04:05", ((3 * 24 + 4) * 60 + 5) * 60),
    ("0-00:00:59", 59), ("10-23:59:59", 10 * 86400 + 86399)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1:2:3:4", "1-25:00:00", "00:61:00", "00:00:60", "1-",
                                  "-5", "abc", "1.5"])
def test_not_durations(text):
    assert parse_duration(text) is None


@pytest.mark.parametrize("text, mb, per", [
    ("4000M", 4000, ""), ("16G", 16384, ""), ("1T", 1024 ** 2, ""), ("2048K", 2, ""),
    ("1000", 1000, ""), ("1.5G", 1536, ""), ("4000Mc", 4000, "c"), ("16Gn", 16384, "n"),
    ("0n", 0, "n"), ("512mc", 512, "c")])
def test_memory_sizes(text, mb, per):
    assert memory_mb(text, per_suffix=True) == (mb, per)


@pytest.mark.parametrize("text", ["", "M", "4000X", "-5G", "4000Mx", "c"])
def test_not_memory_sizes(text):
    assert memory_mb(text, per_suffix=True) is None


# -- a file that is not what it claims ----------------------------------------------------------


def test_swf_given_as_sacct_says_so(tmp_path):
    swf = tmp_path / "log.swf"
    swf.write_text("; MaxProcs: 4\n1 0 -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 -1 -1 -1 -1\n")
    with pytest.raises(TraceError, match=r"log.swf: not Slurm sacct -P output: it is an SWF"):
        read_sacct(swf)
    headless = tmp_path / "headless.swf"
    headless.write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 -1 -1 -1 -1\n")
    with pytest.raises(TraceError, match="it is an SWF"):
        read_sacct(headless)


def test_sacct_given_as_swf_or_hpcsim_says_so():
    with pytest.raises(TraceError, match=r"jobs.txt: not an SWF .*: it is Slurm sacct -P output"):
        read_swf(JOBS)
    with pytest.raises(TraceError, match=r"jobs.txt: not an HPCsim trace .*: it is Slurm sacct"):
        read_hpcsim(JOBS)


def test_hpcsim_given_as_sacct_says_so():
    path = DATA / "hpcsim_small" / "dl1k_s55.tsv.gz"
    with pytest.raises(TraceError, match=r"not Slurm sacct -P output: it is an HPCsim trace"):
        read_sacct(path)


def test_another_text_file_is_not_sacct(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("name|value\nx|1\n")
    with pytest.raises(TraceError, match=r"notes.txt: not Slurm sacct output: its first line "
                                         r"does not name sacct's columns.*'name\|value'"):
        read_sacct(path)


# -- a bad field names the line and the field, in one line --------------------------------------


def with_field(tmp_path, job: str, column: str, value: str, name="bad.txt", **others):
    """jobs.txt with `column` of job `job`'s row (JobID as written) set to `value` (and the columns
    named in `others` to theirs); that row's line number."""
    lines = JOBS.read_text().splitlines()
    header = lines[0].split("|")
    for no, line in enumerate(lines[1:], start=2):
        fields = line.split("|")
        if fields[header.index("JobID")] == job:
            for c, v in {column: value, **others}.items():
                fields[header.index(c)] = v
            lines[no - 1] = "|".join(fields)
            break
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path, no


@pytest.mark.parametrize("job, column, value, why", [
    ("1002", "JobID", "10x2", "is not a Slurm job id"),
    ("1002", "JobID", "", "is not a Slurm job id"),
    ("1002", "JobIDRaw", "abc", "is not a job number"),
    ("1002", "Submit", "yesterday", "is not a date and time"),
    ("1002", "Submit", "Unknown", "is not a date and time"),
    ("1002", "Start", "2024-13-01T00:00:00", "is not a date and time"),
    ("1002", "End", "2024-01-01T25:00:00", "is not a date and time"),
    ("1002", "End", "2024-01-01T00:00:00", "is before the job's Start"),
    ("1002", "ElapsedRaw", "2h", "is not a whole number"),
    ("1002", "TimelimitRaw", "1-00:00:00", "is not a time limit"),
    ("1002", "NNodes", "two", "is not a whole number"),
    ("1002", "NNodes", "0", "is fewer than 1"),
    ("1002", "NCPUS", "-4", "is not a whole number"),
    ("1002", "ReqMem", "4000Mx", "is not a memory size"),
    ("1002", "ReqMem", "lots", "is not a memory size"),
    ("1001", "AllocTRES", "cpu=4,mem=16Q,node=1", "has a memory size that is not one"),
    ("1001", "AllocTRES", "cpu=4,gres/gpu=two,node=1", "has a GPU count that is not a whole number"),
    ("1001", "AllocTRES", "cpu=4,mem", "is not a TRES list"),
    ("1001", "ReqTRES", "cpu=4,gres/gpu:a100=1.5", "has a GPU count that is not a whole number"),
    ("1002", "State", "", "is not a job state"),
])
def test_bad_field(tmp_path, job, column, value, why):
    # ReqTRES is read only where the allocation says nothing (AllocTRES empty)
    others = {"AllocTRES": ""} if column == "ReqTRES" else {}
    path, line = with_field(tmp_path, job, column, value, **others)
    with pytest.raises(TraceError) as info:
        read_sacct(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}, line {line}, column {column}: {value!r} {why}"), message


def test_a_skipped_row_is_not_checked_past_its_id(tmp_path):
    # a step's fields are not read: a bad Submit there is no error
    path, _ = with_field(tmp_path, "1001.batch", "Submit", "garbage")
    assert len(read_sacct(path)) == 12
    # nor is the request where the allocation says it all
    path, _ = with_field(tmp_path, "1001", "ReqTRES", "garbage", name="alloc.txt")
    assert len(read_sacct(path)) == 12


def test_the_request_counts_where_nothing_was_allocated(tmp_path):
    # 1002 with an empty AllocTRES and no ReqMem: memory and GPUs from ReqTRES
    path, _ = with_field(tmp_path, "1002", "AllocTRES", "", ReqMem="",
                         ReqTRES="cpu=32,mem=10G,gres/gpu=4,node=2")
    jobs = read_sacct(path)
    i = source(jobs, "job_id").index("1002")
    assert (jobs.mem_per_node[i], jobs.gpus_per_node[i]) == (10 * 1024 / 2, 2)


def test_wrong_number_of_fields_names_the_line(tmp_path):
    lines = JOBS.read_text().splitlines()
    lines[5] += "|extra|more"
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"bad.txt, line 6: 22 '\|'-separated fields, the header "
                                         r"\(line 1\) names 20"):
        read_sacct(path)


def test_missing_columns_are_named(tmp_path):
    rows = [line.split("|") for line in JOBS.read_text().splitlines()]
    drop = {rows[0].index("Start"), rows[0].index("TimelimitRaw")}
    path = tmp_path / "few.txt"
    path.write_text("\n".join("|".join(f for k, f in enumerate(r) if k not in drop)
                              for r in rows) + "\n")
    with pytest.raises(TraceError, match=r"few.txt: a sacct file without the column\(s\) Start, "
                                         r"TimelimitRaw or Timelimit"):
        read_sacct(path)


def test_limits_that_disagree_are_an_error(tmp_path):
    rows = [line.split("|") for line in JOBS.read_text().splitlines()]
    rows[0].append("Timelimit")
    for r in rows[1:]:
        r.append("02:00:00")  # 120 minutes: 1001's TimelimitRaw, not 1002's 1440
    path = tmp_path / "both.txt"
    path.write_text("\n".join("|".join(r) for r in rows) + "\n")
    with pytest.raises(TraceError, match=r"both.txt, line 6: columns TimelimitRaw '1440' "
                                         r"\(minutes\) and Timelimit '02:00:00' disagree"):
        read_sacct(path)


def test_empty_and_header_only_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(TraceError, match="empty file"):
        read_sacct(empty)
    header = tmp_path / "header.txt"
    header.write_text(JOBS.read_text().splitlines()[0] + "\n")
    with pytest.raises(TraceError, match="a header and no job"):
        read_sacct(header)


def test_only_unfinished_jobs(tmp_path):
    lines = JOBS.read_text().splitlines()
    path = tmp_path / "pending.txt"
    path.write_text("\n".join([lines[0]] + [ln for ln in lines if "PENDING" in ln]) + "\n")
    with pytest.raises(TraceError, match=re.escape("no job left to read")):
        read_sacct(path)


def test_hash_collisions_fall_back_to_sorting(monkeypatch):
    # every field hashing alike: the second hash tells them apart, and the column is sorted instead
    from hpcsched.workload.accounting import Column

    honest = read_sacct(JOBS)

    def constant(self):
        h, g = np.zeros(len(self), dtype=np.uint64), np.arange(len(self), dtype=np.uint64)
        return h, g

    monkeypatch.setattr(Column, "_hashes", constant)
    jobs = read_sacct(JOBS)
    for name in honest.columns:
        assert np.array_equal(honest[name], jobs[name]), name
    assert source(jobs, "user") == source(honest, "user")


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_blocks_of_any_size_read_alike(monkeypatch, rows):
    # the reader works a block of rows at a time and merges the blocks' results: blocks of a few
    # rows (text codes merged across blocks, users and ids numbered over all) change nothing
    import hpcsched.workload.accounting as accounting
    import hpcsched.workload.sacct as sacct

    whole = {path: read_sacct_with_report(path) for path in (JOBS, TIMELIMIT)}
    monkeypatch.setattr(sacct, "BLOCK_ROWS", rows)
    monkeypatch.setattr(accounting, "BLOCK", max(1, rows - 1))
    for path, (honest, report) in whole.items():
        jobs, blocked = read_sacct_with_report(path)
        for name in honest.columns:
            assert np.array_equal(honest[name], jobs[name]), (path, name)
        for name in ("job_id", "user", "state", "partition", "account"):
            a = jobs.header.source.take(name, jobs.line)
            b = honest.header.source.take(name, honest.line)
            assert (a is None and b is None) or a.tolist() == b.tolist(), (path, name)
        assert jobs.header.partitions == honest.header.partitions
        assert (blocked.dropped, blocked.changed, blocked.notes) == \
            (report.dropped, report.changed, report.notes)
    assert read_sacct(JOBS, partition="gpu").job_id.tolist() == [1005, 1006, 1008, 1013, 1016]
    with pytest.raises(TraceError, match="no job of partition 'debug'"):
        read_sacct(JOBS, partition="debug")
