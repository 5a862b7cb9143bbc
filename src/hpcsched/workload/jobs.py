"""JobTable: a workload held as immutable numpy columns, one row per job.

The column names follow the 18 fields of the Parallel Workloads Archive's Standard Workload Format
(SWF v2.2), in the same order. Every column is float64 so that SWF's fractional fields and its -1
("unknown") survive unchanged; integer-valued times are exact in float64 up to 2**53 s.

A JobTable knows nothing of how it will be simulated: the cleaning rules of a profile (see
`hpcsched.workload.cleaning`) turn a raw table into the one an engine runs, and report every row they
changed or dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

import numpy as np

#: SWF field names, in file order (field 1 .. field 18).
SWF_FIELDS: tuple[str, ...] = (
    "job_id",  # 1  job number
    "submit",  # 2  submit time (s)
    "wait",  # 3  wait time recorded by the real scheduler (s)
    "run_time",  # 4  actual run time (s)
    "alloc_procs",  # 5  number of allocated processors
    "cpu_time",  # 6  average CPU time used (s)
    "used_mem",  # 7  used memory (KB per processor)
    "req_procs",  # 8  requested number of processors
    "req_time",  # 9  requested (estimated) time (s)
    "req_mem",  # 10 requested memory (KB per processor)
    "status",  # 11 status
    "user",  # 12 user id
    "group",  # 13 group id
    "executable",  # 14 executable (application) number
    "queue",  # 15 queue number
    "partition",  # 16 partition number
    "prev_job",  # 17 preceding job number
    "think_time",  # 18 think time from preceding job (s)
)

#: The effective processor count a profile derived for each job (what the simulator allocates).
PROCS = "procs"
#: 1-based line number of each job in the file it came from (0 for generated jobs); for error messages.
LINE = "line"

#: What a job asks of each node it runs on, where the trace says (Slurm accounting, HPCsim's
#: traces): the number of nodes, and per node the cores, memory (MB) and GPUs. -1 means the trace is
#: silent: an SWF job asks for processors only, and the cluster turns them into whole nodes (see
#: `hpcsched.cluster.request`). A table built without these columns gets -1 in all of them.
REQUEST_COLUMNS: tuple[str, ...] = ("nodes", "cores_per_node", "mem_per_node", "gpus_per_node")

COLUMNS: tuple[str, ...] = SWF_FIELDS + (PROCS, LINE) + REQUEST_COLUMNS


@dataclass(frozen=True)
class TraceHeader:
    """What an SWF header says about the machine and the log (None where the header is silent)."""

    name: str = ""  # short name or file name, for tables and messages
    path: str = ""  # the file it was read from ("" for generated workloads)
    max_nodes: int | None = None
    max_procs: int | None = None
    unix_start_time: int | None = None
    fields: Mapping[str, str] = field(default_factory=dict)  # every "; Key: value" line, verbatim
    comments: tuple[str, ...] = ()  # every header line, verbatim, for round-tripping
    # names of the partitions the `partition` column indexes, where the trace names them (Slurm
    # accounting); empty for SWF, whose partition field is a number already
    partitions: tuple[str, ...] = ()
    #: the line of the file each "; Key: value" was read from (its first), for messages
    key_lines: Mapping[str, int] = field(default_factory=dict)


def _unknown(n: int) -> np.ndarray:
    arr = np.full(n, -1.0)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True)
class JobTable:
    """Jobs as columns. Immutable: every transformation returns a new table.

    `columns` maps each name of COLUMNS to a 1-D float64 array; all have the same length.
    """

    columns: Mapping[str, np.ndarray]
    header: TraceHeader = field(default_factory=TraceHeader)

    def __post_init__(self) -> None:
        n = None
        cols = {}
        for name in COLUMNS:
            if name not in self.columns:
                if name in REQUEST_COLUMNS and n is not None:
                    cols[name] = _unknown(n)
                    continue
                raise ValueError(f"JobTable: missing column {name!r}")
            arr = np.asarray(self.columns[name], dtype=np.float64)
            if arr.ndim != 1:
                raise ValueError(f"JobTable: column {name!r} must be 1-D, got shape {arr.shape}")
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValueError(f"JobTable: column {name!r} has {arr.shape[0]} rows, expected {n}")
            arr = arr.copy() if arr.flags.writeable else arr
            arr.flags.writeable = False
            cols[name] = arr
        unknown = set(self.columns) - set(COLUMNS)
        if unknown:
            raise ValueError(f"JobTable: unknown columns {sorted(unknown)}")
        object.__setattr__(self, "columns", cols)

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def from_columns(cls, header: TraceHeader | None = None, **cols: Iterable[float]) -> "JobTable":
        """Build a table from some columns; missing SWF fields and request columns are -1, `procs`
        defaults to max(alloc_procs, req_procs) and `line` to 0. Handy for tests and generated workloads."""
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in cols.items()}
        if not arrays:
            raise ValueError("JobTable.from_columns needs at least one column")
        n = len(next(iter(arrays.values())))
        full = {name: arrays.get(name, np.full(n, -1.0)) for name in SWF_FIELDS}
        if "job_id" not in arrays:
            full["job_id"] = np.arange(1, n + 1, dtype=np.float64)
        full[PROCS] = arrays.get(PROCS, np.maximum(full["alloc_procs"], full["req_procs"]))
        full[LINE] = arrays.get(LINE, np.zeros(n))
        full.update({k: arrays[k] for k in REQUEST_COLUMNS if k in arrays})
        return cls(full, header or TraceHeader())

    # -- access ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.columns["job_id"])

    def __getattr__(self, name: str) -> np.ndarray:
        # Columns read as attributes: jobs.submit, jobs.req_time, ...
        cols = self.__dict__.get("columns")
        if cols is not None and name in cols:
            return cols[name]
        raise AttributeError(name)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    # -- transformations ---------------------------------------------------------------------------
    def take(self, rows: np.ndarray | slice) -> "JobTable":
        """The table restricted to `rows` (indices, a boolean mask or a slice), in that order."""
        return JobTable({k: v[rows] for k, v in self.columns.items()}, self.header)

    def window(self, start: int, n: int) -> "JobTable":
        """`n` consecutive jobs from 0-based position `start`."""
        if start < 0 or n <= 0 or start + n > len(self):
            raise ValueError(
                f"window [{start}, {start + n}) is outside the trace {self.header.name or ''} "
                f"of {len(self)} jobs"
            )
        return self.take(slice(start, start + n))

    def with_columns(self, **cols: np.ndarray) -> "JobTable":
        new = dict(self.columns)
        new.update(cols)
        return JobTable(new, self.header)

    def with_header(self, **changes) -> "JobTable":
        return JobTable(self.columns, replace(self.header, **changes))
