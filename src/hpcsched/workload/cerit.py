"""Read the CERIT-SC workload of 2013 (`wagap-2013.swf`, as shipped with the Alea simulator): an SWF
trace whose lines carry three more fields, and whose jobs say how many nodes they want, how many
processors on each and how much memory, and sometimes that they want their nodes to themselves.

    jobs = read_cerit("wagap-2013.swf.gz")                # the .machines file beside it is read too
    jobs, report = read_cerit_with_report("wagap-2013.swf.gz")
    print(report.summary())
    write_cerit_lines("wagap-2013.swf.gz", jobs.line[rows], "part.swf")  # those jobs, as they are

A line is the 18 SWF fields, then a list of node ids in braces (one entry per processor the job got:
`{1241,1241}` is two processors of node 1241), a queue name and a PBS node specification, e.g.

    0 1356996147 0 56011 64 1 1024 64 86400 68719476736 1 62 1 1 -1 1 1 1 {1241,...} q_1d 1:ppn=64:x86_64:cl_zewura#excl

What each part becomes in the JobTable:

* SWF fields 1-5, 8, 9, 11-14, 16 as read. `submit` is made relative to the first job's submit time
  (the file holds Unix times), which becomes the header's `unix_start_time`.
* Field 10 holds the job's memory request in **bytes, for the whole job** (PBS's `mem`), not SWF's
  KB per processor. It is stored in `req_mem` as SWF means it (bytes / 1024 / requested processors),
  and per node in `mem_per_node` = bytes / nodes / 2**20 (MB as Slurm counts them, 1 MB = 2**20
  bytes; fractional where the nodes do not divide it: the cluster rounds up). Alea reads the same
  field as KB per *node* (`ram = bytes / 1024`); the two agree on the 98% of jobs that use one node.
* Fields 6, 7, 17 and 18 hold the same placeholders on every line (1, 1024, 1, 1: Alea's, not
  measurements; a think time of 1 s after job 1 for every job is no dependency). They are read as -1
  (unknown), counted in the report.
* Field 15 (queue) is -1 in the file; the queue's name is on the line, so `queue` becomes its number
  in order of first appearance (1, 2, ...), and the header's `fields["Queue"]` lists "1 q_1d", ...,
  one per line, as the Parallel Workloads Archive's headers do.
* The node specification (PBS `-l nodes=`; see `parse_node_spec`) gives `nodes` and
  `cores_per_node`. `N:ppn=P` is N nodes of P processors; `N` alone is N nodes of one; a host name
  in the node-count place is one node. Chunks joined by `+` (`1:ppn=1+3:ppn=2`) are added up:
  `nodes` = 4, and since a JobTable asks the same of every node, `cores_per_node` is the largest
  chunk's (2): the job holds 8 cores where it asked for 7 (counted). A `ppn` that is not a whole
  number (`ppn=1.5`) is replaced by the requested processors over the nodes (field 8; PBS granted
  one) (counted). `gpus_per_node` is 0: the machine had none.
* `#excl` (exclusive nodes) is represented in the request itself, because the engine knows only a
  cluster-wide exclusivity: such a job asks on each node for **all the cores of its node class**
  (80 on a `cl_zewura` node). No other job can share a node whose cores are all taken (every job
  needs a core), so the job has its nodes to itself, and only nodes of that class can hold it,
  which `cl_zewura` asks for anyway. Its memory request is kept as asked; `procs` stays what the
  job asked for (64), so a policy that ranks by size sees the job's own size. An exclusive job that
  names no class gets the cores of the smallest class that holds its ppn (counted). The
  class sizes come from the trace's `.machines` file.
* Node properties are not constraints the engine can keep: a job that asks for `cl_zegox` nodes may
  run on a zewura node in the simulation. Such jobs, and those naming or excluding hosts
  (`zewura2.cerit-sc.cz`, `host=...`, `^zewura12.cerit-sc.cz`), are counted, not changed. A
  `mem=3gb` inside a node specification is counted too; field 10 stays the memory request.

Nothing is dropped. What could not be read as a plain `N:ppn=P` job is counted in the report
(`CeritReport.forms` and `CeritReport.notes`), and so are the jobs larger than the machine of the
`.machines` file (Alea's format: id, name, nodes, CPUs per node, speed, RAM per node in KB; read
when it lies beside the trace as `<trace>.machines`, or given): a job that no set of its nodes can
hold even on an empty machine. Whether such a job is dropped or stops the run is the simulation's
choice (`--drop-oversized`), as for any trace; the bundled `cerit-2013` lists its one such job
(8687) as known (`hpcsched.workload.traces.TraceInfo.known_oversized`), so that a simulation drops
it, named and counted with the reason, by default.

A part of such a trace is written back as its own lines (`write_cerit_lines`, what `hpcsched
trace convert` does with a CERIT-SC source), with the `.machines` file beside: the table cannot be
written as SWF without losing what the node specification says (nodes, cores on each, memory per
node, exclusive nodes), and reading the lines again gives the same requests.

Every error is a `TraceError` naming the file, the line and the field.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from hpcsched.workload.formats import head as file_head
from hpcsched.workload.jobs import LINE, PROCS, SWF_FIELDS, JobTable, TraceHeader
from hpcsched.workload.swf import _LARGEST, TraceError, _read_bytes

#: the fields of a line after the 18 of SWF
EXTRA_FIELDS: tuple[str, ...] = ("node ids", "queue", "node spec")
N_FIELDS = len(SWF_FIELDS) + len(EXTRA_FIELDS)  # 21

MB = 2 ** 20  # bytes; Slurm's MB, the unit of the JobTable's mem_per_node

#: SWF fields that hold placeholders in this format, and the placeholder each holds.
PLACEHOLDERS: dict[str, float] = {"cpu_time": 1.0, "used_mem": 1024.0, "prev_job": 1.0,
                                  "think_time": 1.0}

# what the report calls each form of node specification, and each thing it counts
PLAIN = "N:ppn=P (with or without properties)"
NODES_ONLY = "N, no ppn (one processor per node)"
HOST_FIRST = "a host name for the node count (one node)"
CHUNKS = "several chunks joined by '+' (every node gets the largest chunk's ppn)"
PPN_FRACTION = "ppn not a whole number (cores per node from the requested processors)"
EXCLUSIVE = "#excl: exclusive nodes (all the cores of the node class)"
EXCLUSIVE_NO_CLASS = "#excl without a node class (all the cores of the smallest class that holds it)"
CLASS = "a node class (cl_...) asked for: not enforced by the engine"
CLASS_UNKNOWN = "a node class not in the .machines file"
HOSTS = "a host asked for by name: not enforced"
NOT_HOSTS = "hosts or classes excluded (^...): not enforced"
SPEC_MEM = "mem=... in the node spec (field 10 kept as the memory request)"
PROCS_DIFFER = "nodes x ppn differs from the requested processors (field 8)"
SPREAD_DIFFERS = "ran on a different number of nodes than the spec asks (node id list)"
PLACEHOLDER = "placeholder read as unknown (-1)"
NEGATIVE_RUN = "run time negative in the log (cleaning drops these)"
TOO_BIG = "larger than the machine of the .machines file"


class NodeSpecError(ValueError):
    """A node specification this reader does not understand."""


@dataclass(frozen=True)
class NodeSpec:
    """A PBS `-l nodes=` specification, parsed.

    `chunks` is one (node count, ppn) pair per `+`-separated part, ppn as written (a string, because
    the log holds `1.5`) or None where the chunk gives none (PBS then gives one processor per node).
    `properties` are the node properties asked for (`cl_zewura`, `x86_64`, `nfs4`, ...), `excluded`
    those negated with `^`, `hosts` the nodes named (a host name in the node-count place, `host=X`, or
    a property with a dot), `resources` other `key=value` items (`mem=3gb`), and `exclusive` the
    `#excl` suffix.
    """

    text: str
    chunks: tuple[tuple[int, str | None], ...]
    properties: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    resources: tuple[tuple[str, str], ...] = ()
    exclusive: bool = False
    host_first: bool = False

    @property
    def nodes(self) -> int:
        return sum(count for count, _ in self.chunks)

    @property
    def node_class(self) -> str | None:
        """The node class asked for (`cl_zewura` -> `zewura`), None if none."""
        classes = [p[3:] for p in self.properties if p.startswith("cl_")]
        return classes[0] if classes else None


_HOST = re.compile(r"^[A-Za-z][\w-]*(\.[\w-]+)+$")  # a dotted name: zewura2.cerit-sc.cz
_PPN = re.compile(r"^\d+(\.\d+)?$")


@lru_cache(maxsize=4096)
def parse_node_spec(text: str) -> NodeSpec:
    """Parse a PBS node specification (`-l nodes=...`, as the CERIT-SC log writes it):
    `CHUNK[+CHUNK...][#excl]`, a chunk being a node count (or one node's host name) followed by
    `:`-separated items: `ppn=P`, `host=NAME`, `^NAME` (not this host or property), `KEY=VALUE`, a
    dotted host name or a property. Raises NodeSpecError on anything else."""
    spec, _, suffix = text.partition("#")
    exclusive = False
    if suffix:
        if suffix.lower() not in ("excl", "shared"):
            raise NodeSpecError(f"unknown suffix #{suffix} (known: #excl, #shared)")
        exclusive = suffix.lower() == "excl"
    if not spec:
        raise NodeSpecError("empty node specification")
    chunks, props, excluded, hosts, resources = [], [], [], [], []
    host_first = False
    for chunk in spec.split("+"):
        items = chunk.split(":")
        head, rest = items[0], items[1:]
        if head.isdigit():
            count = int(head)
            if count < 1:
                raise NodeSpecError(f"node count {head} in {chunk!r}")
        elif head and not head.startswith("^") and "=" not in head:
            # a host name (or a property) in the count's place names one node
            count, host_first = 1, True
            (hosts if _HOST.match(head) else props).append(head)
        else:
            raise NodeSpecError(f"chunk {chunk!r} starts with neither a node count nor a name")
        ppn = None
        for item in rest:
            key, eq, value = item.partition("=")
            if not item:
                raise NodeSpecError(f"empty item in {chunk!r}")
            if eq:
                if key == "ppn":
                    if not _PPN.match(value) or float(value) <= 0:
                        raise NodeSpecError(f"ppn={value} in {chunk!r} is not a positive number")
                    if ppn is not None:
                        raise NodeSpecError(f"ppn given twice in {chunk!r}")
                    ppn = value
                elif key == "host":
                    hosts.append(value)
                else:
                    resources.append((key, value))
            elif item.startswith("^"):
                excluded.append(item[1:])
            elif _HOST.match(item):
                hosts.append(item)
            else:
                props.append(item)
        chunks.append((count, ppn))
    return NodeSpec(text, tuple(chunks), tuple(dict.fromkeys(props)), tuple(excluded),
                    tuple(hosts), tuple(resources), exclusive, host_first)


# -- the machine ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeClass:
    """One line of an Alea `.machines` file: a cluster of identical nodes."""

    name: str
    nodes: int
    cpus: int
    ram_kb: int

    @property
    def memory_mb(self) -> float:
        return self.ram_kb / 1024.0


def read_machines(path: str | os.PathLike) -> tuple[NodeClass, ...]:
    """Alea's machine description: one line per cluster, TAB-separated `id name nodes cpus speed
    ram_per_node_KB` (KB = 1024 bytes)."""
    where = os.fspath(path)
    try:
        text = Path(where).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise TraceError(f"{where}: cannot read ({exc.strerror or exc})") from None
    out = []
    names = ("id", "name", "nodes", "CPUs per node", "speed", "RAM per node (KB)")
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) != len(names):
            raise TraceError(f"{where}, line {number}: expected {len(names)} fields (id, name, "
                             f"nodes, CPUs per node, speed, RAM per node in KB), found {len(tokens)}")
        values = []
        for i in (2, 3, 5):
            try:
                values.append(int(tokens[i]))
            except ValueError:
                raise TraceError(f"{where}, line {number}, field {i + 1} ({names[i]}): "
                                 f"{tokens[i]!r} is not a whole number") from None
            if values[-1] <= 0 and i != 5:
                raise TraceError(f"{where}, line {number}, field {i + 1} ({names[i]}): must be "
                                 f"positive, got {values[-1]}")
        out.append(NodeClass(tokens[1], *values))
    if not out:
        raise TraceError(f"{where}: no machine lines")
    return tuple(out)


def machines_beside(path: str | os.PathLike) -> Path | None:
    """The `.machines` file that goes with a trace, Alea's way: `X.swf.machines` beside `X.swf`
    (or beside `X.swf.gz`)."""
    p = Path(path)
    for candidate in (Path(str(p) + ".machines"), p.with_suffix(".machines") if p.suffix == ".gz"
                      else None):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


# -- the report ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class CeritReport:
    """What reading found. `forms` counts the jobs by the form of their node specification (a job may
    count under several), `notes` counts the other things the reader noticed, `examples` gives the
    first few job ids of each, and `too_big` the ids of the jobs larger than the machine (empty when
    no `.machines` file was read)."""

    path: str
    jobs: int
    machines: tuple[NodeClass, ...] = ()
    forms: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    examples: dict[str, tuple[int, ...]] = field(default_factory=dict)
    too_big: tuple[int, ...] = ()

    def summary(self) -> str:
        """A few lines for a human."""
        lines = [f"{self.path}: {self.jobs} jobs"]
        if self.machines:
            lines[0] += " for " + " + ".join(
                f"{c.nodes} x {c.name} ({c.cpus} cores, {c.memory_mb:.0f} MB)" for c in self.machines)
        lines += [f"  node spec {form}: {n}" for form, n in self.forms.items()]
        for what, n in self.notes.items():
            ids = self.examples.get(what, ())
            more = f" (jobs {', '.join(map(str, ids))}{', ...' if n > len(ids) else ''})" if ids else ""
            lines.append(f"  {what}: {n}{more}")
        return "\n".join(lines)


# -- reading -------------------------------------------------------------------------------------

def looks_like_cerit(path: str | os.PathLike) -> bool:
    """Whether the file's first job line has 21 fields, the 19th a `{...}` node id list (the
    CERIT-SC / Alea extension of SWF). Reads only the beginning of the file."""
    data = file_head(path)
    if data is None:
        return False
    for raw in data.split(b"\n")[:-1] or data.split(b"\n"):
        tokens = raw.split()
        if not tokens or tokens[0].startswith(b";"):
            continue
        return (len(tokens) == N_FIELDS and tokens[18].startswith(b"{")
                and tokens[18].endswith(b"}"))
    return False


def read_cerit(path: str | os.PathLike, *, machines: str | os.PathLike | None = None,
               name: str | None = None) -> JobTable:
    """The jobs of a CERIT-SC / Alea SWF file as a JobTable with its request columns filled (see
    the module docstring). `machines`: the `.machines` file (default: the one beside the trace)."""
    return read_cerit_with_report(path, machines=machines, name=name)[0]


def read_cerit_with_report(path: str | os.PathLike, *, machines: str | os.PathLike | None = None,
                           name: str | None = None) -> tuple[JobTable, CeritReport]:
    """`read_cerit`, and what it found (`CeritReport`)."""
    where = os.fspath(path)
    data = _read_bytes(where)
    machine_path = machines if machines is not None else machines_beside(where)
    classes = read_machines(machine_path) if machine_path is not None else ()

    numbers, specs, queues, spreads, slots, line_no, comments = [], [], [], [], [], [], []
    for number, raw in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
        tokens = raw.split()
        if not tokens:
            continue
        if tokens[0].startswith(";"):
            comments.append(raw.rstrip("\r"))
            continue
        if len(tokens) != N_FIELDS:
            raise TraceError(f"{where}, line {number}: expected {N_FIELDS} fields (18 SWF fields, "
                             f"a node id list, a queue and a node spec), found {len(tokens)}")
        row = []
        for k, tok in enumerate(tokens[:18]):
            try:
                value = float(tok)
            except ValueError:
                raise TraceError(f"{where}, line {number}, field {k + 1} ({SWF_FIELDS[k]}): "
                                 f"{tok!r} is not a number") from None
            if not abs(value) <= _LARGEST:  # infinity, NaN, or beyond exact whole numbers
                raise TraceError(f"{where}, line {number}, field {k + 1} ({SWF_FIELDS[k]}): "
                                 f"{tok!r} is {'not a number' if value != value else 'too large'}")
            row.append(value)
        ids = tokens[18]
        if not (ids.startswith("{") and ids.endswith("}")):
            raise TraceError(f"{where}, line {number}, field 19 (node ids): expected a list in "
                             f"braces, got {ids[:40]!r}")
        id_list = [x for x in ids[1:-1].split(",") if x]
        numbers.append(row)
        spreads.append(len(set(id_list)))
        slots.append(len(id_list))
        queues.append(tokens[19])
        specs.append(tokens[20])
        line_no.append(number)
    if not numbers:
        raise TraceError(f"{where}: no job lines")

    values = np.array(numbers, dtype=np.float64)
    cols = {f: values[:, i].copy() for i, f in enumerate(SWF_FIELDS)}
    n = len(values)
    req_procs = cols["req_procs"]
    log = _Log()

    nodes = np.empty(n)
    cores = np.empty(n)
    exclusive = np.zeros(n, dtype=bool)
    smallest_class = _smallest_holding(classes)
    class_cores = {c.name: c.cpus for c in classes}
    for i, text in enumerate(specs):
        job = int(cols["job_id"][i])
        try:
            spec = parse_node_spec(text)
        except NodeSpecError as exc:
            raise TraceError(f"{where}, line {line_no[i]}, field 21 (node spec): {text!r}: "
                             f"{exc}") from None
        ppns = [p for _, p in spec.chunks]
        whole = all(p is None or float(p).is_integer() for p in ppns)
        nodes[i] = spec.nodes
        if not whole:
            cores[i] = np.ceil(max(req_procs[i], 1) / spec.nodes)
            log.form(PPN_FRACTION, job)
        else:
            per_chunk = [int(float(p)) if p is not None else 1 for p in ppns]
            cores[i] = max(per_chunk)
            if len(spec.chunks) > 1:
                log.form(CHUNKS, job)
            if sum(c * p for (c, _), p in zip(spec.chunks, per_chunk)) != req_procs[i]:
                log.note(PROCS_DIFFER, job)
        if spec.host_first:
            log.form(HOST_FIRST, job)
        elif all(p is None for p in ppns):
            log.form(NODES_ONLY, job)
        elif len(spec.chunks) == 1 and whole:
            log.form(PLAIN, job)
        if spec.node_class is not None:
            log.note(CLASS, job)
            if classes and spec.node_class not in class_cores:
                log.note(CLASS_UNKNOWN, job)
        if spec.hosts:
            log.note(HOSTS, job)
        if spec.excluded:
            log.note(NOT_HOSTS, job)
        if any(k == "mem" for k, _ in spec.resources):
            log.note(SPEC_MEM, job)
        if spec.exclusive:
            exclusive[i] = True
            log.form(EXCLUSIVE, job)
            if spec.node_class in class_cores:
                cores[i] = class_cores[spec.node_class]
            elif classes:
                log.note(EXCLUSIVE_NO_CLASS, job)
                cores[i] = smallest_class(cores[i])
        if spreads[i] != spec.nodes:
            log.note(SPREAD_DIFFERS, job)

    memory = cols["req_mem"]  # bytes per job in this format
    known = memory > 0
    mem_per_node = np.where(known, memory / MB / nodes, -1.0)
    cols["req_mem"] = np.where(known, memory / 1024.0 / np.maximum(req_procs, 1), -1.0)
    for col, placeholder in PLACEHOLDERS.items():
        is_placeholder = cols[col] == placeholder
        log.count(f"{col} {placeholder:g}: {PLACEHOLDER}", int(is_placeholder.sum()))
        cols[col] = np.where(is_placeholder, -1.0, cols[col])
    for i in np.flatnonzero(cols["run_time"] < 0):
        log.note(NEGATIVE_RUN, int(cols["job_id"][i]))

    queue_names = list(dict.fromkeys(queues))
    queue_number = {q: k + 1 for k, q in enumerate(queue_names)}
    cols["queue"] = np.array([queue_number[q] for q in queues], dtype=np.float64)

    too_big = []
    if classes:
        fits = _fits(classes, nodes, cores, np.maximum(mem_per_node, 0.0))
        for i in np.flatnonzero(~fits):
            log.note(TOO_BIG, int(cols["job_id"][i]))
            too_big.append(int(cols["job_id"][i]))

    t0 = float(cols["submit"].min())
    cols["submit"] = cols["submit"] - t0
    cols[PROCS] = np.maximum(cols["alloc_procs"], req_procs)
    cols[LINE] = np.array(line_no, dtype=np.float64)
    cols.update(nodes=nodes, cores_per_node=cores, mem_per_node=mem_per_node,
                gpus_per_node=np.zeros(n))

    base = os.path.basename(where)
    for suffix in (".gz", ".swf"):
        base = base.removesuffix(suffix)
    fields = {"Format": "CERIT-SC / Alea SWF (node ids, queue and PBS node spec per line)",
              "Queue": "\n".join(f"{queue_number[q]} {q}" for q in queue_names),
              "TimeZoneString": "Europe/Prague"}
    if classes:
        fields["MaxNodes"] = str(sum(c.nodes for c in classes))
        fields["MaxProcs"] = str(sum(c.nodes * c.cpus for c in classes))
    header = TraceHeader(
        name=name or base, path=where, unix_start_time=int(t0),
        max_nodes=sum(c.nodes for c in classes) or None,
        max_procs=sum(c.nodes * c.cpus for c in classes) or None,
        fields=fields, comments=tuple(comments))
    report = CeritReport(where, n, classes, dict(log.forms), dict(log.notes),
                         {k: tuple(v) for k, v in log.examples.items()}, tuple(too_big))
    return JobTable(cols, header), report


# -- writing a part of a trace ------------------------------------------------------------------

def write_cerit_lines(source: str | os.PathLike, lines, dest: str | os.PathLike, *,
                      note: str | None = None) -> Path | None:
    """Write the job lines `lines` of the CERIT-SC / Alea file `source` (1-based line numbers, as
    the `LINE` column of `read_cerit`'s table holds them, in the order given) to `dest` as they
    are, after the source's comment lines and `note` (written as one more comment line), so that
    reading `dest` gives those jobs with every request the reader takes from their lines. The
    source's `.machines` file (`machines_beside`) is copied beside `dest` as DEST.machines, where
    the reader looks for it; returns that file, or None where the source has none. `dest` is
    gzipped when its name ends in .gz; both files are written atomically."""
    from hpcsched.workload.slurm_write import write_lines

    where = os.fspath(source)
    text = _read_bytes(where).decode("utf-8", errors="replace").split("\n")
    header = [raw.rstrip("\r") for raw in text if raw.split() and raw.split()[0].startswith(";")]
    if note:
        header.append("; " + note.removeprefix(";").strip())
    body = []
    for number in np.asarray(lines, dtype=np.int64):
        raw = text[number - 1].rstrip("\r") if 1 <= number <= len(text) else ""
        tokens = raw.split()
        if not tokens or tokens[0].startswith(";"):
            raise TraceError(f"{where}, line {number}: not a job line")
        body.append(raw)
    write_lines(dest, [header, body])
    machines = machines_beside(where)
    if machines is None:
        return None
    target = Path(os.fspath(dest) + ".machines")
    write_lines(target, [machines.read_text(encoding="utf-8-sig").splitlines()])
    return target


class _Log:
    """Counts by form and by note, with the first few job ids of each."""

    EXAMPLES = 5

    def __init__(self) -> None:
        self.forms: dict[str, int] = {}
        self.notes: dict[str, int] = {}
        self.examples: dict[str, list[int]] = {}

    def form(self, what: str, job: int) -> None:
        self.forms[what] = self.forms.get(what, 0) + 1

    def note(self, what: str, job: int) -> None:
        self.notes[what] = self.notes.get(what, 0) + 1
        ids = self.examples.setdefault(what, [])
        if len(ids) < self.EXAMPLES:
            ids.append(job)

    def count(self, what: str, n: int) -> None:
        if n:
            self.notes[what] = self.notes.get(what, 0) + n


def _smallest_holding(classes: tuple[NodeClass, ...]):
    def pick(ppn: float) -> float:
        holding = sorted(c.cpus for c in classes if c.cpus >= ppn)
        return float(holding[0]) if holding else ppn
    return pick


def _fits(classes: tuple[NodeClass, ...], nodes: np.ndarray, cores: np.ndarray,
          mem_per_node: np.ndarray) -> np.ndarray:
    """(n,) bool: enough nodes of the machine hold each job's per-node request (memory rounded up
    to a whole MB, as the cluster rounds it)."""
    held = np.zeros(len(nodes))
    mem = np.ceil(np.round(mem_per_node, 6))
    for c in classes:
        held += np.where((cores <= c.cpus) & (mem <= c.memory_mb), c.nodes, 0)
    return held >= nodes


__all__ = ["CeritReport", "NodeClass", "NodeSpec", "NodeSpecError", "looks_like_cerit",
           "machines_beside", "parse_node_spec", "read_cerit", "read_cerit_with_report",
           "read_machines", "write_cerit_lines"]
