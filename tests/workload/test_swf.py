"""Reading and writing SWF: header parsing, every error message, gzip by magic, exact round
trips."""

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcsched.workload.jobs import COLUMNS, SWF_FIELDS, JobTable, TraceHeader
from hpcsched.workload.swf import TraceError, read_swf, write_swf

HEADER = """\
; Version: 2.2
; Computer: IBM SP2
; Information: http://www.tc.cornell.edu/
;              http://www.cs.huji.ac.il/labs/parallel/workload/
; MaxNodes: 338 (batch partition; 512 total)
; MaxProcs: 338
; UnixStartTime: 835823160
; Queue:  1 DSI      
; Queue:  2 astro
;
"""
JOBS = """\
    1        0 588530    937  306 142.00    -1   -1  35100    -1  1  97  -1 307  3 -1 -1 -1
    2   164472 356587     75   17   2.00    -1   -1    300    -1  1  81  -1 195  3 -1 -1 -1
    3   197154 459987  35268  306  32792    -1   -1  35100    -1  0  97  -1 307  3 -1 -1 -1
"""


def job_line(job_id=1, **fields):
    """One job line with every field -1 except those given by name."""
    values = {f: -1 for f in SWF_FIELDS}
    values.update(job_id=job_id, submit=10 * job_id, run_time=100, alloc_procs=1, req_time=200)
    values.update(fields)
    return " ".join(str(values[f]) for f in SWF_FIELDS) + "\n"


def write(tmp_path, text, name="t.swf"):
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_same_columns(a: JobTable, b: JobTable, columns=COLUMNS):
    for c in columns:
        np.testing.assert_array_equal(a[c], b[c], err_msg=c)


# -- reading ---------------------------------------------------------------------------------------


def test_reads_jobs_and_header(tmp_path):
    jobs = read_swf(write(tmp_path, HEADER + JOBS, "CTC-small.swf"))
    assert len(jobs) == 3
    assert jobs.job_id.tolist() == [1, 2, 3]
    assert jobs.submit.tolist() == [0, 164472, 197154]
    assert jobs.cpu_time.tolist() == [142.0, 2.0, 32792]
    assert jobs.req_procs.tolist() == [-1, -1, -1]
    assert jobs.procs.tolist() == [306, 17, 306]  # max(allocated, requested)
    assert jobs.line.tolist() == [11, 12, 13]  # 1-based file lines
    h = jobs.header
    assert (h.name, h.max_nodes, h.max_procs) == ("CTC-small", 338, 338)
    assert h.unix_start_time == 835823160


def test_header_fields_verbatim(tmp_path):
    h = read_swf(write(tmp_path, HEADER + JOBS)).header
    assert h.fields["MaxNodes"] == "338 (batch partition; 512 total)"
    assert h.fields["Computer"] == "IBM SP2"
    # a key given twice keeps both values; a continuation line (";   http://...") is not a key
    assert h.fields["Queue"] == "1 DSI\n2 astro"
    assert h.fields["Information"] == "http://www.tc.cornell.edu/"
    assert "http" not in h.fields
    # every header line, exactly as written (trailing blanks included)
    assert h.comments == tuple(HEADER.splitlines())
    assert "; Queue:  1 DSI      " in h.comments


def test_header_without_maxprocs(tmp_path):
    h = read_swf(write(tmp_path, "; MaxNodes: 256\n" + job_line())).header
    assert (h.max_nodes, h.max_procs, h.unix_start_time) == (256, None, None)


def test_name_given_or_from_file(tmp_path):
    path = write(tmp_path, job_line(), "log.swf")
    assert read_swf(path).header.name == "log"
    assert read_swf(path, name="mine").header.name == "mine"
    assert read_swf(path).header.path == str(path)


def test_fractional_and_negative_values(tmp_path):
    jobs = read_swf(write(tmp_path, job_line(cpu_time="552.21", wait="-1", think_time=".5",
                                             used_mem="7.")))
    assert jobs.cpu_time[0] == 552.21
    assert jobs.wait[0] == -1
    assert jobs.think_time[0] == 0.5
    assert jobs.used_mem[0] == 7.0


def test_exponents_and_plus_signs_take_the_careful_path(tmp_path):
    jobs = read_swf(write(tmp_path, job_line(cpu_time="1.5e3", used_mem="+7")))
    assert jobs.cpu_time[0] == 1500.0
    assert jobs.used_mem[0] == 7.0


def test_blank_lines_comments_between_jobs_and_crlf(tmp_path):
    text = "; MaxNodes: 4\r\n\r\n" + job_line(1).replace("\n", "\r\n") + "   \n"
    text += "  ; a comment between jobs\n" + job_line(2) + "\n"
    jobs = read_swf(write(tmp_path, text))
    assert jobs.job_id.tolist() == [1, 2]
    assert jobs.line.tolist() == [3, 6]
    assert jobs.header.max_nodes == 4
    assert jobs.header.comments == ("; MaxNodes: 4", "  ; a comment between jobs")


def test_byte_order_mark_and_old_mac_line_endings(tmp_path):
    """A UTF-8 byte-order mark (before a header or a job line) is skipped; CR alone ends a line,
    as CR LF does, and line numbers count such lines."""
    for first in ("; MaxNodes: 4\n", ""):
        text = "\ufeff" + first + job_line(1) + job_line(2)
        jobs = read_swf(write(tmp_path, text))
        assert jobs.job_id.tolist() == [1, 2]
        assert jobs.header.max_nodes == (4 if first else None)
    mac = ("; MaxNodes: 4\n" + job_line(1) + "\n" + job_line(2)).replace("\n", "\r")
    jobs = read_swf(write(tmp_path, mac))
    assert jobs.job_id.tolist() == [1, 2]
    assert jobs.line.tolist() == [2, 4]
    assert jobs.header.max_nodes == 4
    with pytest.raises(TraceError, match=r"line 3, field 4 \(run_time\)"):
        read_swf(write(tmp_path, mac.replace("\r\r", "\r1 2 3 x\r", 1).replace(
            "1 2 3 x", job_line(3, run_time="x").strip())))


@pytest.mark.parametrize("token, field", [
    ("1e400", "run_time"),                  # infinity in float64
    ("-1e400", "run_time"),
    ("9223372036854775808", "req_procs"),   # 2^63: no int64 holds it
    ("9007199254740992", "req_procs"),      # 2^53: 2^53 + 1 reads as the same float64
])
def test_values_beyond_exact_whole_numbers_are_refused(tmp_path, token, field):
    text = job_line(1) + job_line(2, **{field: token})
    with pytest.raises(TraceError, match=rf"line 2, field \d+ \({field}\): '{token}' is too large"):
        read_swf(write(tmp_path, text))
    jobs = read_swf(write(tmp_path, job_line(1) + job_line(2, req_procs=2**53 - 1)))
    assert jobs.req_procs[1] == 2**53 - 1  # the largest accepted, exactly


def test_header_size_too_large_names_the_line(tmp_path):
    with pytest.raises(TraceError, match=r"line 2: header MaxProcs: '99999999999999999999' is too"):
        read_swf(write(tmp_path, "; MaxNodes: 4\n; MaxProcs: 99999999999999999999\n" + job_line(1)))


def test_last_line_without_newline(tmp_path):
    jobs = read_swf(write(tmp_path, job_line(1) + job_line(2).rstrip("\n")))
    assert jobs.job_id.tolist() == [1, 2]


def test_gzip_by_magic_bytes_not_extension(tmp_path):
    # lublin_256_new2 is a file without an extension; here, a gzipped one
    path = tmp_path / "lublin_256_new2"
    path.write_bytes(gzip.compress((HEADER + JOBS).encode()))
    assert read_swf(path).job_id.tolist() == [1, 2, 3]
    # and a plain file whose name says .gz reads as plain text
    fake = write(tmp_path, HEADER + JOBS, "plain.swf.gz")
    assert read_swf(fake).job_id.tolist() == [1, 2, 3]


def test_bundled_hpc2n_keeps_fractional_cpu_time(raw_trace):
    jobs = raw_trace("hpc2n")
    assert len(jobs) == 202871
    # "   12   342343      5    553   40 552.21 ..." is line 33 of the file
    assert jobs.job_id[1] == 12 and jobs.cpu_time[1] == 552.21 and jobs.line[1] == 33
    assert (jobs.header.max_nodes, jobs.header.max_procs) == (240, 240)


# -- errors: each names the file, the line and the field -------------------------------------------


def test_truncated_line(tmp_path):
    lines = [job_line(i) for i in range(1, 12)] + ["12 5 -1 100 1 -1 -1\n"]
    path = write(tmp_path, "".join(lines), "x.swf")
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}, line 12: expected 18 fields, found 7 (truncated line?)"


def test_extra_fields(tmp_path):
    path = write(tmp_path, "; MaxNodes: 8\n" + job_line(1) + job_line(2).rstrip() + " 99\n")
    msg = r", line 3: expected 18 fields, found 19 \(extra fields\?\)$"
    with pytest.raises(TraceError, match=msg):
        read_swf(path)


def test_non_numeric_field(tmp_path):
    path = write(tmp_path, "; c\n; c\n; c\n" + job_line(1) * 8 + job_line(2, run_time="abc"))
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}, line 12, field 4 (run_time): 'abc' is not a number"


@pytest.mark.parametrize("token", ["nan", "inf", "1_000", "0x10", "1,5", "--1", "-", ".", "1.2.3"])
def test_not_numbers(tmp_path, token):
    path = write(tmp_path, job_line(1, req_time=token))
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}, line 1, field 9 (req_time): {token!r} is not a number"


def test_first_bad_line_is_reported(tmp_path):
    text = job_line(1) + job_line(2, user="u7") + "1 2 3\n"
    with pytest.raises(TraceError, match=r", line 2, field 12 \(user\): 'u7' is not a number$"):
        read_swf(write(tmp_path, text))


def test_empty_file_and_header_only(tmp_path):
    for text in ("", "; Version: 2.2\n; MaxNodes: 4\n\n"):
        path = write(tmp_path, text, "empty.swf")
        with pytest.raises(TraceError) as err:
            read_swf(path)
        assert str(err.value) == f"{path}: no job lines"


def test_missing_file(tmp_path):
    path = tmp_path / "nope.swf"
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}: no such file"
    assert isinstance(err.value, ValueError)


def test_bad_header_value_names_the_line(tmp_path):
    path = write(tmp_path, "; Version: 2.2\n; MaxNodes: many\n" + job_line())
    with pytest.raises(TraceError) as err:
        read_swf(path)
    assert str(err.value) == f"{path}, line 2: header MaxNodes: 'many' is not a number"


def test_damaged_gzip(tmp_path):
    path = tmp_path / "bad.swf.gz"
    path.write_bytes(gzip.compress(JOBS.encode())[:-12])
    with pytest.raises(TraceError, match=r"bad\.swf\.gz: damaged gzip file"):
        read_swf(path)


# -- writing ---------------------------------------------------------------------------------------


def odd_table() -> JobTable:
    """Values that a careless writer would change: fractions, big and negative numbers."""
    return JobTable.from_columns(
        header=TraceHeader(name="odd", max_nodes=8, max_procs=16, comments=("; MaxNodes: 8",
                                                                            "; MaxProcs: 16")),
        job_id=[1, 2, 3],
        submit=[0, 2.0**40, 1e9 + 0.5],
        run_time=[552.21, 0.1, 1e-5],
        alloc_procs=[16, 2, -1],
        req_procs=[1, -1, 4],
        cpu_time=[1 / 3, -1, 123456789.125],
        req_time=[-1, 3600, 7200],
    )


@pytest.mark.parametrize("name", ["odd.swf", "odd.swf.gz"])
def test_round_trip_is_exact(tmp_path, name):
    table = odd_table()
    back = read_swf(write_swf(table, tmp_path / name))
    assert_same_columns(table, back, SWF_FIELDS + ("procs",))
    assert back.header.comments == table.header.comments
    assert back.line.tolist() == [3, 4, 5]
    assert (tmp_path / name).read_bytes()[:2] == (b"\x1f\x8b" if name.endswith(".gz") else b"; ")


def test_integers_written_without_decimal_point(tmp_path):
    text = (write_swf(odd_table(), tmp_path / "t.swf")).read_text().splitlines()
    assert text[2].split() == ["1", "0", "-1", "552.21", "16", repr(1 / 3), "-1", "1", "-1", "-1",
                               "-1", "-1", "-1", "-1", "-1", "-1", "-1", "-1"]
    assert text[3].split()[1] == str(2**40)


def test_round_trip_of_a_bundled_trace(tmp_path, raw_trace):
    table = raw_trace("lublin-1")
    back = read_swf(write_swf(table, tmp_path / "l1.swf.gz"))
    assert_same_columns(table, back)  # no blank lines in the original: even `line` survives
    assert back.header.comments == table.header.comments
    assert back.header.max_nodes == 256


def test_generated_table_gets_a_header(tmp_path):
    table = JobTable.from_columns(header=TraceHeader(max_nodes=4, max_procs=8),
                                  submit=[0, 5], run_time=[10, 20], req_procs=[1, 2])
    back = read_swf(write_swf(table, tmp_path / "gen.swf"))
    assert (back.header.max_nodes, back.header.max_procs) == (4, 8)
    assert_same_columns(table, back, SWF_FIELDS)


def test_write_refuses_non_finite(tmp_path):
    table = JobTable.from_columns(submit=[0, np.nan], run_time=[1, 1])
    with pytest.raises(ValueError, match="column submit has a non-finite value in row 1"):
        write_swf(table, tmp_path / "bad.swf")
    assert not (tmp_path / "bad.swf").exists()


# -- the fast parser agrees with float() -----------------------------------------------------------

number = st.one_of(
    st.integers(-(10**14), 10**14).map(str),
    st.decimals(min_value=-(10**6), max_value=10**6, places=4, allow_nan=False).map(str),
    # 16 digits take the careful path; values from 2^53 on are refused (tested above)
    st.sampled_from(["-1", "0", "007", "-0", "5.", ".25", "-.5", "0.000", "123456789012345",
                     "1234567890123456", "-123456789012345.5", "0.30000000000000004"]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(number, min_size=18, max_size=18), min_size=1, max_size=6))
def test_fast_parser_matches_float(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("h") / "p.swf"
    path.write_text("".join("  ".join(r) + "\n" for r in rows))
    jobs = read_swf(path)
    for i, f in enumerate(SWF_FIELDS):
        assert jobs[f].tolist() == [float(r[i]) for r in rows], f


@pytest.mark.parametrize("name", ["lublin-2", "ctc-sp2"])
def test_fast_and_careful_paths_agree(raw_trace, name):
    """The vectorised reader gives what the line-by-line scan gives, fractions (CTC) included."""
    from hpcsched.workload.swf import _slow_values
    from hpcsched.workload.traces import trace_path

    jobs = raw_trace(name)
    values, lines = _slow_values(gzip.decompress(trace_path(name).read_bytes()), name)
    for i, f in enumerate(SWF_FIELDS):
        np.testing.assert_array_equal(jobs[f], values[:, i], err_msg=f)
    np.testing.assert_array_equal(jobs.line, lines)
