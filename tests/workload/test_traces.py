"""The registry of bundled traces: names, loading by name or path, errors, and file integrity."""

import gzip
import hashlib
import re

import pytest

from hpcsched.workload import traces
from hpcsched.workload.swf import TraceError
from hpcsched.workload.traces import describe_traces, load_trace, trace_names, trace_path

BUNDLED = ["lublin-1", "lublin-2", "lublin-3", "hpc2n", "ctc-sp2", "kth-sp2", "nasa-ipsc", "ricc",
           "cerit-2013"]


def test_names():
    assert trace_names() == BUNDLED
    assert trace_names(include_unbundled=True) == BUNDLED[:-2] + ["sdsc-blue", "ricc",
                                                                  "llnl-atlas", "cerit-2013"]
    assert list(describe_traces()) == trace_names(include_unbundled=True)
    assert "not bundled" in describe_traces()["sdsc-blue"]


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_file_is_there(name):
    path = trace_path(name)
    assert path.is_file()
    assert path.read_bytes()[:2] == b"\x1f\x8b"  # all gzipped


@pytest.mark.parametrize("name, jobs, nodes, procs", [
    ("lublin-1", 10000, 256, None),
    ("lublin-2", 10000, 256, None),
    ("lublin-3", 10000, 256, None),
    ("kth-sp2", 28476, 100, 100),
    ("nasa-ipsc", 18239, 128, 128),
    ("ricc", 86643, 1024, 8192),  # its first 8 weeks (PROVENANCE.md)
])
def test_load_by_name(raw_trace, name, jobs, nodes, procs):
    table = raw_trace(name)
    assert len(table) == jobs
    assert (table.header.max_nodes, table.header.max_procs) == (nodes, procs)
    assert table.header.name == name


def test_names_are_case_insensitive():
    assert load_trace("Lublin-2").header.name == "lublin-2"


def test_load_by_path_wins(tmp_path, monkeypatch):
    path = tmp_path / "hpc2n"  # a file named like a bundled trace
    path.write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 -1 -1 -1 -1\n")
    monkeypatch.chdir(tmp_path)
    assert len(load_trace("hpc2n")) == 1
    assert len(load_trace(path)) == 1


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(TraceError) as err:
        load_trace("lublin-9")
    msg = str(err.value)
    assert msg.startswith("lublin-9: no such file, and not a known trace; known traces: lublin-1, ")
    for name in trace_names(include_unbundled=True):
        assert name in msg


def test_unbundled_trace_says_where_to_get_it():
    with pytest.raises(TraceError, match=r"sdsc-blue: this trace is not bundled .* download "
                                         r"SDSC-BLUE-2000-4.2-cln\.swf\.gz from the Parallel "
                                         r"Workloads Archive"):
        load_trace("sdsc-blue")


def test_contents_match_provenance():
    """The decompressed content of every bundled file has the sha256 PROVENANCE.md gives."""
    text = (trace_path("lublin-1").parent / "PROVENANCE.md").read_text()
    row = r"^\| (\S+\.gz) \| [\d,]+ \| ([\d,]+) \| ([0-9a-f]{64}) \| (same|[0-9a-f]{64}) \|$"
    rows = re.findall(row, text, flags=re.M)
    assert sorted(r[0] for r in rows) == sorted(traces.TRACES[n].file for n in BUNDLED)
    for file, size, original, content in rows:
        data = gzip.decompress((trace_path("lublin-1").parent / file).read_bytes())
        assert len(data) == int(size.replace(",", ""))
        assert hashlib.sha256(data).hexdigest() == (original if content == "same" else content)


@pytest.mark.parametrize("alias, name", [
    ("lublin_256.swf", "lublin-1"),
    ("lublin_256_new2", "lublin-2"),
    ("lublin_256.swf.gz", "lublin-1"),
    ("HPC2N-2002-2.2-cln.swf.gz", "hpc2n"),
    ("HPC2N-2002-2.2-cln.swf", "hpc2n"),
    ("KTH-SP2-1996-2.1-cln.swf", "kth-sp2"),
])
def test_original_file_names_are_aliases(alias, name):
    assert traces._lookup(alias).name == name
    assert trace_path(alias) == trace_path(name)


def test_an_alias_loads_under_the_short_name():
    assert load_trace("lublin_256_new2").header.name == "lublin-2"
