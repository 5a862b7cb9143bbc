"""The CERIT-SC / Alea trace reader: node specs of every form, memory units, a hand-written file read
job by job, hand-checked lines of the real trace, and the whole bundled trace counted independently."""

import gzip
import re
from collections import Counter

import numpy as np
import pytest

from hpcsched.workload import cerit
from hpcsched.workload.cerit import (NodeClass, NodeSpecError, looks_like_cerit, parse_node_spec,
                                     read_cerit, read_cerit_with_report, read_machines)
from hpcsched.workload.swf import TraceError
from hpcsched.workload.traces import load_trace, trace_path

MIB = 1024 * 1024


# -- node specifications ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, chunks, props, excluded, hosts, exclusive, node_class", [
    ("1:ppn=64:x86_64:cl_zewura#excl", ((1, "64"),), ("x86_64", "cl_zewura"), (), (), True, "zewura"),
    ("8:ppn=8:x86_64:cl_zegox", ((8, "8"),), ("x86_64", "cl_zegox"), (), (), False, "zegox"),
    ("1:ppn=12", ((1, "12"),), (), (), (), False, None),
    ("2", ((2, None),), (), (), (), False, None),  # no ppn: one processor per node
    ("2:infiniband", ((2, None),), ("infiniband",), (), (), False, None),
    ("1:ppn=1.5:brno", ((1, "1.5"),), ("brno",), (), (), False, None),
    ("1:ppn=1+3:ppn=2", ((1, "1"), (3, "2")), (), (), (), False, None),
    ("zewura19.cerit-sc.cz:ppn=12:brno", ((1, "12"),), ("brno",), (), ("zewura19.cerit-sc.cz",),
     False, None),
    ("1:zewura15.cerit-sc.cz:ppn=12", ((1, "12"),), (), (), ("zewura15.cerit-sc.cz",), False, None),
    ("1:^zewura17.cerit-sc.cz:^zewura12.cerit-sc.cz:ppn=24", ((1, "24"),), (),
     ("zewura17.cerit-sc.cz", "zewura12.cerit-sc.cz"), (), False, None),
    ("1:ppn=5:host=zewura10", ((1, "5"),), (), (), ("zewura10",), False, None),
    ("1:ppn=1:^cl_zewura", ((1, "1"),), (), ("cl_zewura",), (), False, None),  # NOT zewura
    ("1:ppn=12:cl_zewura:cl_zewura:cl_zewura", ((1, "12"),), ("cl_zewura",), (), (), False,
     "zewura"),
    ("1:ppn=2#shared", ((1, "2"),), (), (), (), False, None),
])
def test_node_spec_forms(text, chunks, props, excluded, hosts, exclusive, node_class):
    spec = parse_node_spec(text)
    assert spec.chunks == chunks
    assert spec.properties == props
    assert spec.excluded == excluded
    assert spec.hosts == hosts
    assert spec.exclusive is exclusive
    assert spec.node_class == node_class
    assert spec.nodes == sum(c for c, _ in chunks)


def test_node_spec_resources_and_host_first():
    spec = parse_node_spec("1:ppn=14:mem=2gb")
    assert spec.resources == (("mem", "2gb"),) and spec.chunks == ((1, "14"),)
    assert parse_node_spec("zewura19.cerit-sc.cz:ppn=12").host_first
    assert not parse_node_spec("1:zewura15.cerit-sc.cz:ppn=12").host_first


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("0:ppn=2", "node count 0"),
    ("1:ppn=0", "not a positive number"),
    ("1:ppn=x", "not a positive number"),
    ("1:ppn=2:ppn=3", "ppn given twice"),
    ("1:ppn=2#weird", "unknown suffix #weird"),
    (":ppn=2", "starts with neither"),
    ("1::ppn=2", "empty item"),
])
def test_node_spec_errors(text, message):
    with pytest.raises(NodeSpecError, match=message):
        parse_node_spec(text)


# -- a hand-written file ---------------------------------------------------------------------------

MACHINES = "0\tzewura\t2\t80\t1\t1048576\n1\tzegox\t3\t12\t1\t524288\n"  # 1024 MB and 512 MB nodes


def _line(job, submit, run, procs, req_time, mem_bytes, ids, queue, spec, cpu_time=1, used_mem=1024):
    fields = [job, submit, 0, run, procs, cpu_time, used_mem, procs, req_time, mem_bytes, 1, 7, 1, 1,
              -1, 1, 1, 1]
    return " ".join(map(str, fields)) + " {" + ",".join(map(str, ids)) + "} " + queue + " " + spec


HAND = [
    "; a comment line, kept in the header",
    # job 0: exclusive on a zewura node: 80 cores, not 64; 1 GiB per job on one node
    _line(0, 1000, 100, 64, 3600, 1073741824, [11] * 64, "q_1d", "1:ppn=64:x86_64:cl_zewura#excl"),
    # job 1: 2 nodes of 8; 2 GiB for the job = 1024 MB per node
    _line(1, 1010, 50, 16, 7200, 2147483648, [21] * 8 + [22] * 8, "q_2d", "2:ppn=8:cl_zegox"),
    # job 2: ppn=1.5 -> the requested processors (1) over the node
    _line(2, 1020, 10, 1, 60, 419430400, [23], "q_1d", "1:ppn=1.5:brno"),
    # job 3: 1 + 3 x 2 = 7 processors on 4 nodes, each node asks for 2; 2000 MB / 4 nodes
    _line(3, 1030, 10, 7, 60, 2097152000, [21, 22, 22, 23, 23, 11, 11], "q_2h", "1:ppn=1+3:ppn=2"),
    # job 4: 2 nodes, no ppn: one processor each; 100 MB / 2
    _line(4, 1040, 10, 2, 60, 104857600, [21, 22], "q_2h", "2"),
    # job 5: a host in the node-count place: one node of 12
    _line(5, 1050, 10, 12, 60, 1073741824, [11] * 12, "q_2h", "zewura1.cerit-sc.cz:ppn=12:brno"),
    # job 6: negative run time (the log's end time 0)
    _line(6, 1060, -1061, 1, 0, 1048576, [23], "q_4d", "1:ppn=1"),
    # job 7: 2048 MB on one node: more than any node of the machine (1024 MB)
    _line(7, 1070, 10, 80, 60, 2147483648, [12] * 80, "q_4d", "1:ppn=80"),
    # job 8: exclusive, no class: the smallest class holding 4 cores is zegox (12)
    _line(8, 1080, 10, 4, 60, 1048576000, [21] * 4, "q_1d", "1:ppn=4#excl"),
    # job 9: mem= in the spec, an excluded host; cpu_time 5 and used_mem 2048 are not placeholders
    _line(9, 1090, 10, 2, 60, 1048576, [22, 22], "q_1d", "1:ppn=2:mem=3gb:^zegox1.cerit-sc.cz",
          cpu_time=5, used_mem=2048),
    # job 10: 2 x 2 != 6 requested processors; ran on 3 nodes where the spec asks 2
    _line(10, 1100, 10, 6, 60, 1048576, [21, 21, 22, 22, 23, 23], "q_1d", "2:ppn=2"),
]


@pytest.fixture
def hand(tmp_path):
    path = tmp_path / "toy.swf"
    path.write_text("\n".join(HAND) + "\n")
    (tmp_path / "toy.swf.machines").write_text(MACHINES)
    return path


def test_hand_file_request_columns(hand):
    jobs, report = read_cerit_with_report(hand)
    assert jobs.job_id.tolist() == list(range(11))
    assert jobs.nodes.tolist() == [1, 2, 1, 4, 2, 1, 1, 1, 1, 1, 2]
    assert jobs.cores_per_node.tolist() == [80, 8, 1, 2, 1, 12, 1, 80, 12, 2, 2]
    assert jobs.mem_per_node.tolist() == [1024, 1024, 400, 500, 50, 1024, 1, 2048, 1000, 1, 0.5]
    assert jobs.gpus_per_node.tolist() == [0] * 11
    # procs: what the job asked for, not the exclusive node's cores
    assert jobs.procs.tolist() == [64, 16, 1, 7, 2, 12, 1, 80, 4, 2, 6]
    # SWF's req_mem: KB per requested processor
    assert jobs.req_mem[0] == 1073741824 / 1024 / 64
    assert jobs.req_mem[3] == 2097152000 / 1024 / 7


def test_hand_file_other_fields(hand):
    jobs = read_cerit(hand)
    assert jobs.submit.tolist() == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert jobs.header.unix_start_time == 1000
    assert jobs.queue.tolist() == [1, 2, 1, 3, 3, 3, 4, 4, 1, 1, 1]
    assert jobs.header.fields["Queue"] == "1 q_1d\n2 q_2d\n3 q_2h\n4 q_4d"
    assert jobs.cpu_time.tolist() == [-1] * 9 + [5, -1]
    assert jobs.used_mem.tolist() == [-1] * 9 + [2048, -1]
    assert jobs.prev_job.tolist() == [-1] * 11 and jobs.think_time.tolist() == [-1] * 11
    assert jobs.partition.tolist() == [1] * 11 and jobs.status.tolist() == [1] * 11
    assert jobs.run_time[6] == -1061 and jobs.req_time[6] == 0
    assert jobs.line.tolist() == list(range(2, 13))
    assert jobs.header.comments == ("; a comment line, kept in the header",)
    assert (jobs.header.max_nodes, jobs.header.max_procs) == (5, 2 * 80 + 3 * 12)
    assert jobs.header.name == "toy"


def test_hand_file_report(hand):
    _, report = read_cerit_with_report(hand)
    assert report.machines == (NodeClass("zewura", 2, 80, 1048576), NodeClass("zegox", 3, 12, 524288))
    assert report.forms == {
        cerit.PLAIN: 7, cerit.EXCLUSIVE: 2, cerit.PPN_FRACTION: 1, cerit.CHUNKS: 1,
        cerit.NODES_ONLY: 1, cerit.HOST_FIRST: 1}
    notes = report.notes
    assert notes[cerit.CLASS] == 2 and report.examples[cerit.CLASS] == (0, 1)
    assert notes[cerit.HOSTS] == 1 and notes[cerit.NOT_HOSTS] == 1 and notes[cerit.SPEC_MEM] == 1
    assert notes[cerit.EXCLUSIVE_NO_CLASS] == 1 and report.examples[cerit.EXCLUSIVE_NO_CLASS] == (8,)
    assert notes[cerit.NEGATIVE_RUN] == 1 and report.examples[cerit.NEGATIVE_RUN] == (6,)
    assert notes[cerit.PROCS_DIFFER] == 1 and report.examples[cerit.PROCS_DIFFER] == (10,)
    assert notes[cerit.SPREAD_DIFFERS] == 1 and report.examples[cerit.SPREAD_DIFFERS] == (10,)
    assert report.too_big == (7,) and notes[cerit.TOO_BIG] == 1
    assert notes[f"cpu_time 1: {cerit.PLACEHOLDER}"] == 10
    assert notes[f"used_mem 1024: {cerit.PLACEHOLDER}"] == 10
    assert notes[f"prev_job 1: {cerit.PLACEHOLDER}"] == 11
    assert cerit.CLASS_UNKNOWN not in notes
    text = report.summary()
    assert "11 jobs for 2 x zewura (80 cores, 1024 MB) + 3 x zegox (12 cores, 512 MB)" in text
    assert f"{cerit.TOO_BIG}: 1 (jobs 7)" in text


def test_without_machines_nothing_is_judged_too_big(hand):
    (hand.parent / "toy.swf.machines").unlink()
    jobs, report = read_cerit_with_report(hand)
    assert report.machines == () and report.too_big == ()
    assert jobs.cores_per_node[0] == 64  # exclusive, but no class sizes known: the job's own ppn
    assert jobs.header.max_nodes is None
    # a machine file given by path
    other = hand.parent / "m.machines"
    other.write_text("0\tzewura\t1\t80\t1\t4194304\n")
    jobs, report = read_cerit_with_report(hand, machines=other)
    assert jobs.cores_per_node[0] == 80 and report.notes[cerit.CLASS_UNKNOWN] == 1  # cl_zegox
    assert report.too_big == (1, 3, 4, 10)  # the jobs on more than one node: the machine has one


def test_gzip_and_detection(hand, tmp_path):
    gz = tmp_path / "toy.swf.gz"
    gz.write_bytes(gzip.compress(hand.read_bytes()))
    assert looks_like_cerit(gz) and looks_like_cerit(hand)
    jobs, report = read_cerit_with_report(gz)  # toy.swf.machines beside toy.swf.gz
    assert report.too_big == (7,) and len(jobs) == 11
    assert len(load_trace(gz)) == 11  # load_trace recognises the format
    plain = tmp_path / "plain.swf"
    plain.write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 -1 -1 -1 -1\n")
    assert not looks_like_cerit(plain)


@pytest.mark.parametrize("bad, message", [
    (lambda l: l.rsplit(" ", 1)[0], r"line 3: expected 21 fields .* found 20"),
    (lambda l: l.replace(" 1010 ", " 10x0 ", 1), r"line 3, field 2 \(submit\): '10x0' is not a number"),
    (lambda l: l.replace(" 1010 ", " 1e400 ", 1), r"line 3, field 2 \(submit\): '1e400' is too large"),
    (lambda l: l.replace(" 1010 ", " nan ", 1), r"line 3, field 2 \(submit\): 'nan' is not a number"),
    (lambda l: l.replace("{", "[", 1), r"line 3, field 19 \(node ids\): expected a list in braces"),
    (lambda l: l.replace("2:ppn=8:cl_zegox", "2:ppn=8#nope"),
     r"line 3, field 21 \(node spec\): '2:ppn=8#nope': unknown suffix"),
])
def test_errors_name_line_and_field(tmp_path, bad, message):
    lines = list(HAND)
    lines[2] = bad(lines[2])
    path = tmp_path / "bad.swf"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=message) as err:
        read_cerit(path)
    assert str(err.value).startswith(f"{path}, line 3") and "\n" not in str(err.value)


def test_machines_errors(tmp_path):
    path = tmp_path / "x.machines"
    path.write_text("0 zewura 20 80 1\n")
    with pytest.raises(TraceError, match=r"line 1: expected 6 fields"):
        read_machines(path)
    path.write_text("0 zewura 20 eighty 1 5\n")
    with pytest.raises(TraceError, match=r"line 1, field 4 \(CPUs per node\): 'eighty'"):
        read_machines(path)
    path.write_text("\n")
    with pytest.raises(TraceError, match="no machine lines"):
        read_machines(path)


# -- the real trace --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real():
    return read_cerit_with_report(trace_path("cerit-2013"))


@pytest.fixture(scope="module")
def lines():
    return gzip.decompress(trace_path("cerit-2013").read_bytes()).decode().splitlines()


# (job, nodes, cores per node, MB per node, queue name): worked out by hand from each raw line
HAND_CHECKED = [
    # line 1: "... 64 1 1024 64 86400 68719476736 ... q_1d 1:ppn=64:x86_64:cl_zewura#excl"
    # 64 GiB = 65536 MB on one node; #excl on cl_zewura: all 80 cores of a zewura node
    (0, 1, 80, 65536, "q_1d"),
    # line 2: "... 12 ... 1209600 91268055040 ... q_2w 1:ppn=12": 85 GiB = 87040 MB
    (1, 1, 12, 87040, "q_2w"),
    # line 7: "... 64 ... 8589934592 ... q_1d 8:ppn=8:x86_64:cl_zegox": 8 GiB over 8 nodes
    (6, 8, 8, 1024, "q_1d"),
    # line 134: "... 1 ... 161061273600 ... q_1d 1:ppn=1.5:brno": 150 GiB; PBS gave one processor
    (133, 1, 1, 153600, "q_1d"),
    # line 5628: "... 12 ... 419430400 ... q_1d zewura19.cerit-sc.cz:ppn=12:brno": 400 MB
    (5627, 1, 12, 400, "q_1d"),
    # line 6403: "... 2 ... 419430400 ... q_2h 2:infiniband": 2 nodes of one processor, 200 MB each
    (6402, 2, 1, 200, "q_2h"),
    # line 8688: "... 80 ... 549755813888 ... q_4h 1:ppn=80": 512 GiB, more than a zewura node
    (8687, 1, 80, 524288, "q_4h"),
    # line 17617: "... 7 ... 419430400 ... q_2h 1:ppn=1+3:ppn=2": 4 nodes asking 2 each, 100 MB each
    (17616, 4, 2, 100, "q_2h"),
    # line 17900: "... 12 ... 42949672960 ... q_1d 1:ppn=12:cl_zegox": 40 GiB
    (17899, 1, 12, 40960, "q_1d"),
]


@pytest.mark.parametrize("job, nodes, cores, mem, queue", HAND_CHECKED)
def test_real_lines_by_hand(real, lines, job, nodes, cores, mem, queue):
    jobs, _ = real
    row = int(np.flatnonzero(jobs.job_id == job)[0])
    assert (jobs.nodes[row], jobs.cores_per_node[row], jobs.mem_per_node[row]) == (nodes, cores, mem)
    names = dict(q.split(" ") for q in jobs.header.fields["Queue"].split("\n"))
    assert names[str(int(jobs.queue[row]))] == queue
    raw = lines[int(jobs.line[row]) - 1].split()
    assert int(raw[0]) == job and raw[19] == queue
    assert jobs.submit[row] == int(raw[1]) - 1356996147  # the first job's Unix submit time


def test_real_header(real):
    jobs, report = real
    assert jobs.header.name == "wagap-2013"
    assert jobs.header.unix_start_time == 1356996147  # 2012-12-31 23:22:27 UTC
    assert (jobs.header.max_nodes, jobs.header.max_procs) == (68, 20 * 80 + 48 * 12)
    assert report.machines == (NodeClass("zewura", 20, 80, 529426432),
                               NodeClass("zegox", 48, 12, 94035968))


def test_whole_trace_counted_independently(real, lines):
    """Every count the reader reports is recounted here from the raw text, grep-style."""
    jobs, report = real
    specs = [line.split()[-1] for line in lines]
    ids = [line.split()[18] for line in lines]
    assert len(jobs) == len(lines) == 17900
    # multi-node jobs: node id lists with more than one distinct node
    multi = sum(len(set(i.strip("{}").split(","))) > 1 for i in ids)
    assert multi == 334 and int((jobs.nodes > 1).sum()) == multi
    # exclusive jobs: specs ending in #excl; each holds all 80 cores of a zewura node
    excl = [s.endswith("#excl") for s in specs]
    assert sum(excl) == 231 == report.forms[cerit.EXCLUSIVE]
    assert set(jobs.cores_per_node[np.array(excl)]) == {80}
    assert sum("+" in s for s in specs) == 12 == report.forms[cerit.CHUNKS]
    assert sum(bool(re.search(r"ppn=\d+\.\d", s)) for s in specs) == 20 \
        == report.forms[cerit.PPN_FRACTION]
    assert sum("ppn=" not in s for s in specs) == 25 == report.forms[cerit.NODES_ONLY]
    cl = sum(bool(re.search(r"(^|:)cl_", s)) for s in specs)
    assert cl == 895 == report.notes[cerit.CLASS]
    # memory: the bytes of the file, summed, are the request columns' MB x nodes x 2**20
    total_bytes = sum(int(line.split()[9]) for line in lines)
    assert np.isclose((jobs.mem_per_node * jobs.nodes).sum() * MIB, total_bytes, rtol=1e-12)
    # cores: where the spec is one chunk with a whole ppn and no #excl, nodes x ppn = field 8
    plain = np.array([("+" not in s and "#" not in s and bool(re.search(r"ppn=\d+(:|$)", s)))
                      for s in specs])
    assert np.array_equal((jobs.nodes * jobs.cores_per_node)[plain], jobs.req_procs[plain])
    # queues: 11 names
    assert len(Counter(line.split()[19] for line in lines)) == 11 == int(jobs.queue.max())
    # the two negative run times, and the one job no node of the machine holds
    assert [int(l.split()[0]) for l in lines if int(l.split()[3]) < 0] == [4185, 4199]
    assert report.examples[cerit.NEGATIVE_RUN] == (4185, 4199)
    assert report.too_big == (8687,)
    assert cerit.PROCS_DIFFER not in report.notes and cerit.SPREAD_DIFFERS not in report.notes


def test_bundled_by_name_and_alias():
    jobs = load_trace("cerit-2013")
    assert jobs.header.name == "cerit-2013" and len(jobs) == 17900
    assert load_trace("wagap-2013.swf").header.name == "cerit-2013"
