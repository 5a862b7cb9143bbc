"""HPCsim's tab-separated Slurm-accounting traces: the reference traces, and one small hand-written
file per rule of `hpcsched.workload.slurm` (spec hpcsim-semantics.md section 1)."""

import gzip
import json

import numpy as np
import pytest

from hpcsched.workload.slurm import (
    ALLOC_RULE,
    CAP_RULE,
    DROP_PARTITION,
    DROP_UNBALANCED,
    REPEATED_ID,
    looks_like_hpcsim,
    read_hpcsim,
    read_hpcsim_with_report,
)
from hpcsched.workload.swf import TraceError
from hpcsched.workload.traces import load_trace

from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "data" / "hpcsim_small"

COLUMNS = (
    "JobID UID GID Account AllocCPUS AllocNodes Allgpu Allmem ReqCPUS ReqNodes Reqgpu ReqMem "
    "TimelimitRaw AdminComment Constraints CPUTimeRAW ElapsedRaw Eligible Submit Start End State "
    "NodeList Partition Reserved QOS QOSRAW Reason difference"
).split()


def job(job_id, **values):
    """One row: a 1-core, 1-node, 1000M, 10-minute job of 'physical' submitted at 08:00:00 that ran
    60 s, with `values` replacing any column (Req* follow Alloc* unless given)."""
    row = dict(JobID=str(job_id), UID="1001", GID="2002", Account="acct", AllocCPUS="1",
               AllocNodes="1", Allgpu="0", Allmem="1000M", TimelimitRaw="10",
               AdminComment="|bm001|0|;", Constraints="(null)", CPUTimeRAW="60",
               ElapsedRaw="60", Eligible="2024-03-04T08:00:00", Submit="2024-03-04T08:00:00",
               Start="2024-03-04T08:00:00", End="2024-03-04T08:01:00", State="COMPLETED",
               NodeList="bm001", Partition="physical", Reserved="00:00:00", QOS="normal",
               QOSRAW="1", Reason="None", difference="0")
    row.update({k: str(v) for k, v in values.items()})
    for req, alloc in (("ReqCPUS", "AllocCPUS"), ("ReqNodes", "AllocNodes"), ("Reqgpu", "Allgpu"),
                       ("ReqMem", "Allmem")):
        row.setdefault(req, row[alloc])
    return row


def write(tmp_path, rows, columns=COLUMNS, name="t.tsv", compress=False):
    text = "\t".join(columns) + "\n" + "".join(
        "\t".join(r.get(c, "") for c in columns) + "\n" for r in rows)
    path = tmp_path / name
    if compress:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


# -- the reference traces ------------------------------------------------------------------------


@pytest.mark.parametrize("trace, partition, n", [("phys2k_s11", "physical", 2000),
                                                 ("dl1k_s55", "deeplearn", 1000)])
def test_reference_traces_load_with_hpcsims_clock(trace, partition, n):
    jobs, report = read_hpcsim_with_report(FIXTURES / f"{trace}.tsv.gz", partition)
    assert len(jobs) == n
    assert (report.rows_read, report.rows_kept, report.dropped) == (n, n, {})
    ref = json.loads(gzip.decompress((FIXTURES / f"{trace}.json.gz").read_bytes()))
    rows = ref["cases"]["fcfs+best_fit+bf"]["jobs"]
    # the fixture lists jobs in the trace's order, which is also submit order here
    assert jobs.job_id.astype(int).tolist() == [r[0] for r in rows]
    assert jobs.submit.astype(int).tolist() == [r[1] for r in rows]
    assert jobs.header.partitions == (partition,)
    assert set(jobs.partition.tolist()) == {0.0}
    assert jobs.header.name == trace


def test_reference_physical_rows_by_hand():
    jobs = read_hpcsim(FIXTURES / "phys2k_s11.tsv.gz", "physical")
    row = {int(j): i for i, j in enumerate(jobs.job_id)}
    # 2024-03-04T08:02:08 is the earliest Submit
    assert jobs.header.unix_start_time == 1709539328
    # 2100001: 1 core, 6G, TimelimitRaw 4320 min, ElapsedRaw 215391, submitted 08:09:43
    i = row[2100001]
    assert (jobs.nodes[i], jobs.cores_per_node[i], jobs.mem_per_node[i], jobs.gpus_per_node[i]) == \
        (1, 1, 6 * 1024, 0)
    assert (jobs.req_time[i], jobs.run_time[i], jobs.submit[i]) == (4320 * 60, 215391, 455)
    # 2100006: 504 cores on 14 nodes, 1190G, 7 min limit, ran 528 s (capped), submitted 09:00:57
    i = row[2100006]
    assert (jobs.nodes[i], jobs.cores_per_node[i], jobs.procs[i]) == (14, 36, 504)
    assert jobs.mem_per_node[i] == 1190 * 1024 / 14 == 87040
    assert (jobs.req_time[i], jobs.run_time[i], jobs.submit[i]) == (420, 420, 3529)
    assert jobs.line[i] == 8 and jobs.user[i] == jobs.group[i] == 10373 and jobs.status[i] == 0  # TIMEOUT


def test_reference_deeplearn_row_by_hand():
    jobs = read_hpcsim(FIXTURES / "dl1k_s55.tsv.gz", "deeplearn")
    # 6500001: 64 cores, 16 GPUs, 1260000M on 4 nodes, 720 min, ElapsedRaw 1765, 27:06 after the first
    i = int(np.flatnonzero(jobs.job_id == 6500001)[0])
    assert (jobs.nodes[i], jobs.cores_per_node[i], jobs.gpus_per_node[i]) == (4, 16, 4)
    assert jobs.mem_per_node[i] == 315000
    assert (jobs.req_time[i], jobs.run_time[i], jobs.submit[i]) == (43200, 1765, 1626)


def test_load_trace_recognises_the_format():
    plain = load_trace(FIXTURES / "dl1k_s55.tsv.gz")
    assert len(plain) == 1000 and plain.header.partitions == ("deeplearn",)
    assert len(load_trace(FIXTURES / "dl1k_s55.tsv.gz", partition="deeplearn")) == 1000
    with pytest.raises(TraceError, match="no job of partition 'physical'"):
        load_trace(FIXTURES / "dl1k_s55.tsv.gz", partition="physical")


def test_load_trace_keeps_swf_apart(tmp_path):
    swf = tmp_path / "a.swf"
    swf.write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 -1 -1 -1 -1\n")
    assert not looks_like_hpcsim(swf)
    assert len(load_trace(swf)) == 1
    with pytest.raises(TraceError, match="SWF trace; partition="):
        load_trace(swf, partition="physical")


# -- one rule at a time --------------------------------------------------------------------------


def test_memory_units(tmp_path):
    mems = ["2048K", "1536K", "1000M", "1.5G", "2g", "1T", "500", "0.5t"]
    path = write(tmp_path, [job(i + 1, Allmem=m) for i, m in enumerate(mems)])
    assert read_hpcsim(path).mem_per_node.tolist() == [2, 1, 1000, 1536, 2048, 1024 ** 2, 500,
                                                       512 * 1024]


@pytest.mark.parametrize("bad", ["4000Mc", "4000Mn", "12X", "G", "", "1.5", "abcM"])
def test_bad_memory_names_line_column_value(tmp_path, bad):
    path = write(tmp_path, [job(1), job(2, Allmem=bad)])
    with pytest.raises(TraceError, match=rf"t.tsv, line 3, column Allmem: '{bad}'"):
        read_hpcsim(path)


@pytest.mark.parametrize("column, value", [("Allmem", "1e400G"), ("Allmem", "9" * 400),
                                           ("AllocCPUS", "1e400"),
                                           ("ElapsedRaw", "9223372036854775808")])
def test_values_too_large_name_line_column_value(tmp_path, column, value):
    """Overflowing values (infinity in float64, 2^63) are refused, not read as a wrong count."""
    path = write(tmp_path, [job(1), job(2, **{column: value})])
    with pytest.raises(TraceError, match=rf"t.tsv, line 3, column {column}: '{value}' is too large"):
        read_hpcsim(path)


def test_bad_requested_memory_is_an_error_too(tmp_path):
    # HPCsim converts ReqMem as well, before Alloc replaces it
    path = write(tmp_path, [job(1, ReqMem="4000Mc")])
    with pytest.raises(TraceError, match="line 2, column ReqMem: '4000Mc'"):
        read_hpcsim(path)


def test_per_node_truncation_and_fractional_memory(tmp_path):
    path = write(tmp_path, [job(1, AllocCPUS=10, AllocNodes=3, Allgpu=7, Allmem="1000M")])
    jobs, report = read_hpcsim_with_report(path)
    assert (jobs.cores_per_node[0], jobs.gpus_per_node[0], jobs.procs[0]) == (3, 2, 10)
    assert jobs.mem_per_node[0] == pytest.approx(1000 / 3) and jobs.mem_per_node[0] != 333
    assert len(report.changed) == 3  # cores truncated, GPUs truncated, memory fractional


def test_alloc_wins_over_req(tmp_path):
    rows = [job(1, AllocCPUS=8, ReqCPUS=4, AllocNodes=2, ReqNodes=1, Allmem="4G", ReqMem="1G",
                Allgpu=2, Reqgpu=0),
            job(2, ReqCPUS="", ReqNodes=""),  # an empty request differs too
            job(3, AllocCPUS=4)]              # Req follows Alloc: not counted
    jobs, report = read_hpcsim_with_report(write(tmp_path, rows))
    assert (jobs.nodes[0], jobs.cores_per_node[0], jobs.mem_per_node[0], jobs.gpus_per_node[0]) \
        == (2, 4, 2048, 1)
    assert jobs.req_procs[0] == jobs.alloc_procs[0] == jobs.procs[0] == 8
    assert report.changed[ALLOC_RULE] == 2


def test_limit_in_minutes_and_run_capped(tmp_path):
    rows = [job(1, TimelimitRaw=10, ElapsedRaw=900),   # 600 s limit: capped
            job(2, TimelimitRaw=1.5, ElapsedRaw=30),   # fractional minutes
            job(3, TimelimitRaw=60, ElapsedRaw=0)]     # zero run time is kept
    jobs, report = read_hpcsim_with_report(write(tmp_path, rows))
    assert jobs.req_time.tolist() == [600, 90, 3600]
    assert jobs.run_time.tolist() == [600, 30, 0]
    assert report.changed[CAP_RULE] == 1


def test_partition_filter_and_clock(tmp_path):
    rows = [job(1, Partition="deeplearn", Submit="2024-03-04T07:00:00"),
            job(2, Submit="2024-03-04T08:00:10"),
            job(3, Partition="physicalx", Submit="2024-03-04T08:00:00"),
            job(4, Submit="2024-03-04T08:01:00")]
    path = write(tmp_path, rows)
    jobs, report = read_hpcsim_with_report(path, "physical")
    assert jobs.job_id.tolist() == [2, 4]
    assert jobs.submit.tolist() == [0, 50]  # since the earliest *kept* Submit
    assert report.dropped == {DROP_PARTITION: 2}
    everything = read_hpcsim(path)
    assert everything.job_id.tolist() == [1, 3, 2, 4]
    assert everything.submit.tolist() == [0, 3600, 3610, 3660]
    assert everything.header.partitions == ("deeplearn", "physical", "physicalx")
    assert everything.partition.tolist() == [0, 2, 1, 1]


def test_equal_submits_keep_row_order_and_lines(tmp_path):
    rows = [job(5, Submit="2024-03-04T08:00:05"), job(3, Submit="2024-03-04T08:00:00"),
            job(9, Submit="2024-03-04T08:00:05"), job(1, Submit="2024-03-04T08:00:00")]
    path = write(tmp_path, rows)
    text = path.read_text().replace("\n", "\n\n", 1)  # a blank line after the header: counted
    path.write_text(text)
    jobs = read_hpcsim(path)
    assert jobs.job_id.tolist() == [3, 1, 5, 9]
    assert jobs.submit.tolist() == [0, 0, 5, 5]
    assert jobs.line.tolist() == [4, 6, 3, 5]


def test_columns_by_name_in_any_order_and_gzip(tmp_path):
    cols = list(reversed(COLUMNS))
    path = write(tmp_path, [job(1, AllocCPUS=6, AllocNodes=2)], columns=cols, name="r.tsv.gz",
                 compress=True)
    jobs = read_hpcsim(path)
    assert (jobs.cores_per_node[0], jobs.nodes[0]) == (3, 2)
    assert jobs.header.name == "r"


def test_missing_column_names_it_and_the_file(tmp_path):
    path = write(tmp_path, [job(1)], columns=[c for c in COLUMNS if c != "TimelimitRaw"])
    with pytest.raises(TraceError, match=r"t.tsv: .*column\(s\) TimelimitRaw"):
        read_hpcsim(path)
    without_partition = write(tmp_path, [job(1)], columns=[c for c in COLUMNS if c != "Partition"])
    assert len(read_hpcsim(without_partition)) == 1
    with pytest.raises(TraceError, match="Partition"):
        read_hpcsim(without_partition, "physical")


def test_unbalanced_admin_comment_is_an_error_naming_lines(tmp_path):
    rows = [job(1),
            job(2, AllocCPUS=6, AllocNodes=2, AdminComment="|bm001|0-3|;|bm002|0-1|;"),
            job(3, AdminComment="|bm001|0|"),  # no trailing ";": no node entry
            job(4, AllocCPUS=4, AllocNodes=2, AdminComment="|bm001|0,2|;|bm002|5-6|;")]
    path = write(tmp_path, rows)
    with pytest.raises(TraceError, match=r"2 job\(s\).*line 3 \(job 2\), line 4 \(job 3\)"):
        read_hpcsim(path)
    jobs, report = read_hpcsim_with_report(path, drop_unbalanced=True)
    assert jobs.job_id.tolist() == [1, 4]
    assert report.dropped == {DROP_UNBALANCED: 2}
    assert report.unbalanced_lines == (3, 4)
    assert "dropped" in report.summary()


@pytest.mark.parametrize("comment", ["|bm001|a-b|;", ";", "|bm001|0|gpu:A100:(IDX:0-1)|;"])
def test_malformed_admin_comment_names_the_line(tmp_path, comment):
    path = write(tmp_path, [job(1), job(2), job(3, AdminComment=comment)])
    with pytest.raises(TraceError, match="line 4, column AdminComment"):
        read_hpcsim(path, drop_unbalanced=True)


def test_gpu_admin_comment_is_balanced(tmp_path):
    comment = "|gpgpu001|0-7|gpu:A100:2|;|gpgpu002|0-7|gpu:A100:0-1|;"
    path = write(tmp_path, [job(1, AllocCPUS=16, AllocNodes=2, Allgpu=4, AdminComment=comment)])
    assert read_hpcsim(path).gpus_per_node.tolist() == [2]


def test_fewer_than_one_node_names_the_line(tmp_path):
    path = write(tmp_path, [job(1), job(2, AllocNodes=0, ReqNodes=1)])
    with pytest.raises(TraceError, match="line 3: AllocNodes '0'"):
        read_hpcsim(path)


@pytest.mark.parametrize("column, value, message", [
    ("AllocCPUS", "x", "is not a number"),
    ("AllocCPUS", "2.5", "is not a whole number"),
    ("ElapsedRaw", "-5", "is negative"),
    ("TimelimitRaw", "UNLIMITED", "is not a number"),
    ("Submit", "Unknown", "is not a date and time"),
])
def test_bad_field_names_line_column_value(tmp_path, column, value, message):
    path = write(tmp_path, [job(1), job(2, **{column: value})])
    with pytest.raises(TraceError, match=rf"line 3, column {column}: '{value}' {message}"):
        read_hpcsim(path)


def test_job_ids_other_than_numbers_are_reported(tmp_path):
    path = write(tmp_path, [job(1), job("123_4"), job("124+0")])
    with pytest.raises(TraceError, match=r"2 JobID.*line 3: '123_4' \(an array task\); "
                                         r"line 4: '124\+0' \(a heterogeneous-job component\)"):
        read_hpcsim(path)


def test_repeated_job_ids_are_counted(tmp_path):
    jobs, report = read_hpcsim_with_report(write(tmp_path, [job(7), job(8), job(7), job(7)]))
    assert jobs.job_id.tolist() == [7, 8, 7, 7]
    assert report.changed == {REPEATED_ID: 2}


def test_wrong_number_of_fields_names_the_line(tmp_path):
    path = write(tmp_path, [job(1), job(2)])
    path.write_text(path.read_text() + "3\t4\n")
    with pytest.raises(TraceError, match="line 4: 2 tab-separated fields"):
        read_hpcsim(path)


def test_wait_status_user_group(tmp_path):
    rows = [job(1, Start="2024-03-04T08:02:00", State="TIMEOUT"),
            job(2, Start="Unknown", State="CANCELLED by 1001", UID=7, GID=""),
            job(3, Submit="2024-03-04 08:00:30", Start="2024-03-04T08:00:40", State="PENDING",
                UID="alice")]
    jobs = read_hpcsim(write(tmp_path, rows))
    assert jobs.wait.tolist() == [120, -1, 10]
    assert jobs.status.tolist() == [0, 5, -1]
    assert jobs.user.tolist() == [1001, 7, -1] and jobs.group.tolist() == [2002, -1, 2002]
    assert jobs.submit.tolist() == [0, 0, 30]
    assert jobs.req_mem.tolist() == jobs.used_mem.tolist() == [-1, -1, -1]


def test_not_an_hpcsim_file(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("a b c\n1 2 3\n")
    with pytest.raises(TraceError, match="not an HPCsim trace"):
        read_hpcsim(path)
    assert not looks_like_hpcsim(path)
    assert looks_like_hpcsim(write(tmp_path, [job(1)], name="y.tsv.gz", compress=True))
