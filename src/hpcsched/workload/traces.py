"""The traces that come with the package, by short name, and loading a trace by name or path.

    jobs = load_trace("lublin-1")              # a bundled trace
    jobs = load_trace("lublin_256.swf")        # the same, by its original file name
    jobs = load_trace("~/logs/my-cluster.swf") # any SWF file, plain or gzip
    jobs = load_trace("jobs.txt", partition="gpu")     # Slurm accounting: `sacct -P` output
    jobs = load_trace("jobs.tsv", partition="physical")  # HPCsim's Slurm-accounting format

A file's format is recognised from its first non-blank line (`hpcsched.workload.formats`): Slurm's
``sacct -P`` output (`hpcsched.workload.sacct`) when it is a '|'-separated header naming JobID or
JobIDRaw and another of sacct's columns; HPCsim's tab-separated Slurm accounting
(`hpcsched.workload.slurm`) when it is a tab-separated header naming JobID, TimelimitRaw,
AdminComment, AllocCPUS and Submit; otherwise SWF, read as the CERIT-SC / Alea extension of SWF
(`hpcsched.workload.cerit`: 21 fields, the 19th a `{...}` node id list) when its first job line has
that shape.

Loading gives the raw table; `hpcsched.workload.cleaning.clean` applies a profile's rules. Where the
bundled files come from is written in `hpcsched/data/traces/PROVENANCE.md`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hpcsched.workload.cerit import looks_like_cerit, read_cerit
from hpcsched.workload.formats import sniff_file
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.sacct import read_sacct
from hpcsched.workload.slurm import read_hpcsim
from hpcsched.workload.swf import TraceError, read_swf

PWA = "https://www.cs.huji.ac.il/labs/parallel/workload/logs.html"


@dataclass(frozen=True)
class TraceInfo:
    """A known trace: its file, what it is, and whether the package ships it."""

    name: str
    file: str
    description: str
    bundled: bool = True
    original: str = ""  # the file name it was published under, when not `file`
    reader: str = "swf"  # "swf", or "cerit" (hpcsched.workload.cerit)
    #: jobs that the trace's own published machine cannot hold, by job id, with why: a simulation
    #: drops them (named and counted) instead of stopping, where they do not fit its cluster
    known_oversized: tuple[tuple[int, str], ...] = ()

    def aliases(self) -> set[str]:
        """Other spellings that name the trace: its file names, with and without ".gz"."""
        names = {self.file, self.original or self.file}
        return {n.lower() for name in names for n in (name, name.removesuffix(".gz"))}


_KNOWN = [
    TraceInfo("lublin-1", "lublin_256.swf.gz",
              "Lublin-Feitelson model, 256 procs, 10,000 jobs (RLScheduler's Lublin-1)",
              original="lublin_256.swf"),
    TraceInfo("lublin-2", "lublin_256_new2.gz",
              "Lublin-Feitelson model, 256 procs, 10,000 jobs (RLScheduler's Lublin-2)",
              original="lublin_256_new2"),
    TraceInfo("lublin-3", "lublin-aaroh.swf.gz",
              "Lublin-Feitelson model, 256 procs, 10,000 jobs (from RLScheduler's data folder; "
              "not in its paper)", original="lublin-aaroh.swf"),
    TraceInfo("hpc2n", "HPC2N-2002-2.2-cln.swf.gz",
              "HPC2N Seth Linux cluster 2002-2006, 240 procs, 202,871 jobs"),
    TraceInfo("ctc-sp2", "CTC-SP2-1996-3.1-cln.swf.gz",
              "Cornell Theory Center IBM SP2 1996-1997, 338 procs, 77,222 jobs"),
    TraceInfo("kth-sp2", "KTH-SP2-1996-2.1-cln.swf.gz",
              "KTH IBM SP2 1996-1997, 100 procs, 28,476 jobs", original="KTH-SP2-1996-2.1-cln.swf"),
    TraceInfo("nasa-ipsc", "NASA-iPSC-1993-3.1-cln.swf.gz",
              "NASA Ames iPSC/860 1993, 128 procs, 18,239 jobs"),
    TraceInfo("sdsc-blue", "SDSC-BLUE-2000-4.2-cln.swf.gz",
              "SDSC Blue Horizon 2000-2003, 1152 procs, 243,306 jobs", bundled=False),
    TraceInfo("ricc", "RICC-2010-2-8weeks.swf.gz",
              "RIKEN RICC 2010, 1024 nodes x 8 procs, its first 8 weeks: 86,643 of 447,794 jobs "
              "(the DRAS experiment's period)"),
    TraceInfo("llnl-atlas", "LLNL-Atlas-2006-2.1-cln.swf.gz",
              "LLNL Atlas 2006-2007, 9216 procs, 43,778 jobs", bundled=False),
    TraceInfo("cerit-2013", "wagap-2013.swf.gz",
              "CERIT-SC zewura + zegox 2013 (20 x 80 + 48 x 12 cores), 17,900 jobs over 89 days "
              "with nodes, cores per node and memory (cluster cerit-zewura)",
              original="wagap-2013.swf", reader="cerit",
              known_oversized=((8687, "it asks for 512 GiB on one zewura node, whose published "
                                      "description (wagap-2013.swf.machines) has 505 GiB; it ran in "
                                      "2013, the nodes letting jobs use a little more"),)),
]

#: every known trace by short name, bundled or not
TRACES: dict[str, TraceInfo] = {t.name: t for t in _KNOWN}
_ALIASES: dict[str, TraceInfo] = {a: t for t in _KNOWN for a in t.aliases()}


def trace_names(include_unbundled: bool = False) -> list[str]:
    """Short names of the bundled traces (and of the known but unbundled ones if asked)."""
    return [t.name for t in _KNOWN if t.bundled or include_unbundled]


def describe_traces() -> dict[str, str]:
    """Short name -> one line about the trace, for `hpcsched trace list`."""
    return {
        t.name: t.description if t.bundled else f"{t.description} (not bundled: {t.file}, {PWA})"
        for t in _KNOWN
    }


def known_oversized(name: str) -> dict[int, str]:
    """Job id -> why, for the jobs of a known trace that its own machine cannot hold (empty for a
    name that is not a known trace)."""
    info = _lookup(name)
    return dict(info.known_oversized) if info is not None else {}


def trace_path(name: str) -> Path:
    """The file of a bundled trace."""
    info = _lookup(name)
    if info is None:
        raise TraceError(_unknown_message(name))
    if not info.bundled:
        raise TraceError(_not_bundled_message(info))
    return Path(str(resources.files("hpcsched") / "data" / "traces" / info.file))


def load_trace(name_or_path: str | os.PathLike, *, partition: str | None = None,
               drop_unbalanced: bool = False) -> JobTable:
    """The raw (uncleaned) jobs of a bundled trace, by short name (or original file name), or of
    any SWF, ``sacct -P`` or HPCsim (tab-separated Slurm accounting) file by path; the format is
    recognised from the file's first line.

    `partition` keeps only that partition's jobs (Slurm-accounting files only) and
    `drop_unbalanced` drops the jobs HPCsim cannot schedule for their AdminComment (HPCsim traces
    only, see `hpcsched.workload.slurm.read_hpcsim`); a file of another format given either is an
    error. A Slurm-accounting table's header holds the reading report (``header.report``) and the
    source's own job ids, users and states (``header.source``).

    An existing file path wins over a name of the same spelling. Raises TraceError naming the known
    traces when the argument is neither, and saying where to get a known trace that is not bundled.
    """
    text = os.fspath(name_or_path)
    path = os.path.expanduser(text)
    if os.path.exists(path):
        fmt = sniff_file(path) if os.path.isfile(path) else ""
        if fmt == "hpcsim":
            return read_hpcsim(path, partition, drop_unbalanced=drop_unbalanced)
        if fmt == "sacct":
            if drop_unbalanced:
                raise TraceError(f"{text}: sacct output; drop_unbalanced= applies to HPCsim "
                                 f"traces (their AdminComment) only")
            return read_sacct(path, partition)
        _swf_takes_no_slurm_options(text, partition, drop_unbalanced)
        if os.path.isfile(path) and looks_like_cerit(path):
            return read_cerit(path)
        return read_swf(path)
    info = _lookup(text)
    if info is not None:
        _swf_takes_no_slurm_options(text, partition, drop_unbalanced)
        if info.reader == "cerit":
            return read_cerit(trace_path(info.name), name=info.name)
        return read_swf(trace_path(info.name), name=info.name)
    raise TraceError(_unknown_message(text))


def cerit_file(name_or_path: str | os.PathLike) -> Path | None:
    """The CERIT-SC / Alea file (`hpcsched.workload.cerit`) that a trace name or path stands for
    (the file `load_trace` reads it from), or None when it names a trace of another format."""
    path = os.path.expanduser(os.fspath(name_or_path))
    if os.path.exists(path):
        return Path(path) if os.path.isfile(path) and looks_like_cerit(path) else None
    info = _lookup(os.fspath(name_or_path))
    if info is not None and info.reader == "cerit" and info.bundled:
        return trace_path(info.name)
    return None


def is_slurm_file(name_or_path: str | os.PathLike) -> bool:
    """Whether a path names a Slurm-accounting file (sacct -P output or an HPCsim trace)."""
    path = os.path.expanduser(os.fspath(name_or_path))
    return os.path.isfile(path) and sniff_file(path) in ("sacct", "hpcsim")


def _swf_takes_no_slurm_options(text: str, partition: str | None, drop_unbalanced: bool) -> None:
    if partition is not None or drop_unbalanced:
        raise TraceError(f"{text}: an SWF trace; partition= and drop_unbalanced= apply to Slurm "
                         f"accounting files (sacct -P output, HPCsim's tab-separated format) only")


def _lookup(name: str) -> TraceInfo | None:
    """A known trace by short name, or by one of its file names (the bundled one or the one it was
    published under, with or without .gz), as the papers' scripts and the fixtures name them."""
    key = name.strip().lower()
    return TRACES.get(key) or _ALIASES.get(key)


def _unknown_message(name: str) -> str:
    return (
        f"{name}: no such file, and not a known trace; known traces: "
        f"{', '.join(trace_names())} (not bundled: "
        f"{', '.join(n for n in trace_names(True) if not TRACES[n].bundled)})"
    )


def _not_bundled_message(info: TraceInfo) -> str:
    return (
        f"{info.name}: this trace is not bundled with hpcsched ({info.description}); download "
        f"{info.file} from the Parallel Workloads Archive ({PWA}) and pass the file's path instead"
    )


__all__ = ["TRACES", "TraceInfo", "cerit_file", "describe_traces", "is_slurm_file",
           "known_oversized", "load_trace", "trace_names", "trace_path"]
