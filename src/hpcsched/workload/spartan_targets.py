"""What Wang's thesis says of Spartan's job traces, and how a trace measures up: each statistic the
generator (`hpcsched.workload.spartan`) is calibrated to, beside its target and its source.

    rows = calibration(jobs, "spartan-physical")   # jobs: any JobTable, e.g. a sacct file as read
    hpcsched trace stats physical-week.txt          # prints these rows for a Spartan partition

The rows are measured on the jobs as a reader gives them (a generated trace written to sacct's format
and read back gives the same rows as the generated table), so they check a file as much as the
generator. A statistic that depends on the span (jobs in the window) is compared with the thesis's
only where the trace spans the thesis's window (or its high-load day); the rate per day always is.
Statistics marked "real traces" are not the thesis's: they are the shapes measured on the real logs
(`hpcsched.workload.spartan_shapes`), shown so that a trace can be checked against them too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpcsched.workload import spartan_shapes as shapes
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.spartan import DAY, MAX_LIMIT_S, MODELS, Model, get_model

#: (low, high) of the mean cores and memory (GB of 1,000 MB) per node over the jobs a node type
#: was given, thesis Table 4.3; Deeplearn's values are the table's range (they cannot be mapped to
#: node types).
TABLE_4_3 = {
    "spartan-physical": ((2.6, 2.8), (25.8, 35.1)),
    "spartan-deeplearn": ((3.6, 4.4), (35.0, 44.0)),
}
#: The thesis's FCFS + EASY + best-fit average wait (s) that each offered load is calibrated to:
#: Tables B.1 to B.4; Sapphire's is Ch. 6's best cell, UNICEP + EASY + first-available.
WAIT_TARGETS = {
    ("spartan-physical", False): (2098.10, "fcfs", "best-fit", "thesis Table B.1"),
    ("spartan-physical", True): (1237.28, "fcfs", "best-fit", "thesis Table B.3"),
    ("spartan-deeplearn", False): (1361.02, "fcfs", "best-fit", "thesis Table B.2"),
    ("spartan-deeplearn", True): (15948.57, "fcfs", "best-fit", "thesis Table B.4"),
    ("spartan-sapphire", False): (1436.0, "unicep", "first-available", "thesis Ch. 6 (Sapphire)"),
}
COUNT_TOLERANCE = 0.02  # jobs: +- 2%
SHARE_TOLERANCE = 0.02  # one-core share: +- 2 points


@dataclass(frozen=True)
class Row:
    statistic: str
    target: str
    value: float
    shown: str
    ok: bool | None  # None: shown for information, no pass/fail
    source: str

    def as_dict(self) -> dict:
        return {"statistic": self.statistic, "target": self.target, "value": self.value,
                "this trace": self.shown, "ok": "" if self.ok is None else
                ("yes" if self.ok else "NO"), "source": self.source}


def model_for(jobs: JobTable) -> Model | None:
    """The Spartan model whose partition is the one partition the trace's jobs ran in, if any."""
    names = jobs.header.partitions
    if not names or len(jobs) == 0:
        return None
    used = {names[int(p)] for p in np.unique(jobs.partition) if 0 <= int(p) < len(names)}
    if len(used) != 1:
        return None
    (name,) = used
    return next((m for m in MODELS.values() if m.partition == name), None)


def span_days(jobs: JobTable) -> float:
    """Days from the first submission to the last, at least one hour's worth."""
    return max(float(jobs.submit.max() - jobs.submit.min()), 3600.0) / DAY


def offered_loads(jobs: JobTable, model: Model, days: float) -> dict[str, float]:
    """Work over the span / the partition's total, per resource (as the generator counts it)."""
    shares = model.shares(jobs.nodes, jobs.cores_per_node, jobs.mem_per_node, jobs.gpus_per_node)
    return {r: float((jobs.run_time * s).sum()) / (days * DAY) for r, s in shares.items()}


def calibration(jobs: JobTable, model: str | Model, *, high_load_day: bool | None = None
                ) -> list[Row]:
    """Each calibrated statistic of `jobs` beside the thesis's value for `model`.

    `high_load_day`: whether the trace stands for the thesis's high-load day (default: when it
    spans at most a day and holds more than twice the ordinary day's jobs).
    """
    m = get_model(model) if isinstance(model, str) else model
    n = len(jobs)
    if n == 0:
        raise ValueError("calibration: the trace has no jobs")
    if (jobs.nodes < 1).any() or (jobs.cores_per_node < 1).any() or (jobs.mem_per_node < 0).any():
        raise ValueError(f"{jobs.header.name or 'the trace'}: the calibration needs every job's "
                         f"nodes, cores and memory per node (a Slurm accounting file has them; "
                         f"this trace does not)")
    days = span_days(jobs)
    if high_load_day is None:
        high_load_day = (m.high_load_jobs is not None and days <= 1.0
                         and n > 2 * m.jobs_per_day)
    rows: list[Row] = []

    def add(statistic, target, value, shown, ok, source):
        rows.append(Row(statistic, target, float(value), shown, ok, source))

    def count_ok(value: float, target: float) -> bool:
        return abs(value / target - 1) <= COUNT_TOLERANCE

    if high_load_day:
        add("jobs in the high-load day", f"{m.high_load_jobs:,} +- 2%", n, f"{n:,}",
            count_ok(n, m.high_load_jobs), "thesis §4.4.7 (Tables B.3, B.4)")
    else:
        if abs(days - m.window_days) <= 0.5:
            add(f"jobs in the thesis's window ({m.window_days} days)", f"{m.jobs:,} +- 2%", n,
                f"{n:,}", count_ok(n, m.jobs), _WINDOW_SOURCE[m.name])
        rate = n / days
        add("jobs per day", f"{m.jobs_per_day:,.1f} +- 2%", rate, f"{rate:,.1f}",
            count_ok(rate, m.jobs_per_day) if days >= 1 else None, _WINDOW_SOURCE[m.name])
        if m.name == "spartan-physical":
            add("jobs per day over 13 months", "11,352 (the week is 5.9% busier)", rate,
                f"{rate:,.1f}", None, "thesis Ch. 5: 4,608,924 jobs in 406 days")
    procs = jobs.nodes * jobs.cores_per_node
    if m.one_core_share is not None:
        share = float(np.mean(procs == 1))
        source = "thesis §4.4.1, Fig. 4.3" if m.name == "spartan-physical" else \
            "assumed as Physical's (thesis: median 1 core, Fig. 6.2)"
        add("one-core jobs", f"{m.one_core_share:.1%} +- 2 points", share, f"{share:.2%}",
            abs(share - m.one_core_share) <= SHARE_TOLERANCE, source)
        med_nodes, med_procs = float(np.median(jobs.nodes)), float(np.median(procs))
        add("median nodes / cores", "1 / 1", med_procs, f"{med_nodes:g} / {med_procs:g}",
            med_nodes == 1 and med_procs == 1, "thesis §4.4.1, §6.5.2")
        mean_procs = float(procs.mean())
        add("mean cores per job", "well above the median (1)", mean_procs,
            f"{mean_procs:.2f}", mean_procs > 1.5, "thesis §6.5.2, Fig. 6.2")
        tail = "thesis §4.4.1" if m.name == "spartan-physical" else \
            "assumed as Physical's (thesis §4.4.1)"
        wide = int((jobs.nodes > 15).sum())
        add("jobs on more than 15 nodes", "some", wide, f"{wide}", wide > 0, tail)
        most = int(procs.max())
        add("largest job (cores)", "hundreds", most, f"{most}", most >= 100, tail)
    else:
        gpu = float(np.mean(jobs.gpus_per_node >= 1))
        add("jobs with >= 1 GPU per node", "100%", gpu, f"{gpu:.2%}", gpu == 1.0,
            "thesis §4.4.1 (GPU-bound; decision of thesis_ch2_3_4.md §6.8)")
        per_node = max(k.gpus for k in m.kinds)
        most = per_node // max(int(jobs.gpus_per_node.min()), 1)
        add("jobs on one node at most", "4", most, f"{most}", most <= 4,
            "thesis §4.4.1 (4 GPUs a node, >= 1 GPU a job)")
        med_nodes, med_cores = float(np.median(jobs.nodes)), float(np.median(jobs.cores_per_node))
        add("median nodes / cores per node", "1 / more than Physical's 1", med_cores,
            f"{med_nodes:g} / {med_cores:g}", med_nodes == 1 and med_cores > 1,
            "thesis §4.4.1, Fig. 6.2")
        multi = float(np.mean(jobs.nodes > 1))
        add("multi-node jobs", "fewer than on Physical", multi, f"{multi:.2%}", None,
            "thesis §4.4.1")
    if m.name in TABLE_4_3:
        (c_lo, c_hi), (g_lo, g_hi) = TABLE_4_3[m.name]
        cores = float(jobs.cores_per_node.mean())
        mem = float(jobs.mem_per_node.mean()) / 1000
        add("mean cores per node", f"{c_lo:g}-{c_hi:g} (+- 5%)", cores, f"{cores:.2f}",
            c_lo * 0.95 <= cores <= c_hi * 1.05, "thesis Table 4.3")
        add("mean memory per node (GB)", f"{g_lo:g}-{g_hi:g} (+- 10%)", mem, f"{mem:.1f}",
            g_lo * 0.9 <= mem <= g_hi * 1.1, "thesis Table 4.3")
    longest = float(jobs.req_time.max())
    add("longest time limit (days)", "at most 30", longest / DAY, f"{longest / DAY:.1f}",
        longest <= MAX_LIMIT_S, "thesis Tables 4.1, 6.1")
    loads = offered_loads(jobs, m, days)
    dominant = max(loads, key=loads.get)
    target = m.high_load_offered_load if high_load_day else m.offered_load
    wait, policy, allocator, where = WAIT_TARGETS[(m.name, bool(high_load_day))]
    add(f"offered load ({dominant}, the busiest resource)", f"{target:g} +- 5%", loads[dominant],
        f"{loads[dominant]:.3f}", abs(loads[dominant] / target - 1) <= 0.05,
        f"calibrated: {policy.upper()} + EASY + {allocator} waits {wait:,.0f} s on average "
        f"({where}); see the README")
    rows += _real_trace_rows(jobs)
    return rows


def _real_trace_rows(jobs: JobTable) -> list[Row]:
    """The shapes that come from the real traces, for information."""
    rows = []
    ok = jobs.req_time > 0
    ratio = np.minimum(jobs.run_time[ok] / jobs.req_time[ok], 1.0)
    pooled = float(np.interp(0.5, np.linspace(0, 1, len(shapes.RATIO_QUANTILES)),
                             shapes.RATIO_QUANTILES))
    rows.append(Row("median run time / limit", f"{pooled:.3f}", float(np.median(ratio)),
                    f"{float(np.median(ratio)):.3f}", None, "real traces (7 logs pooled)"))
    if jobs.header.unix_start_time is not None:
        start = np.datetime64(int(jobs.header.unix_start_time), "s")
        t = start + jobs.submit.astype(np.int64).astype("timedelta64[s]")
        hours = t.astype("datetime64[h]").astype(np.int64)
        week_hour = (hours + 72) % 168  # 1970-01-01 was a Thursday: hour 72 of its week
        profile = np.asarray(shapes.WEEK_PROFILE, dtype=np.float64).ravel()
        office = np.zeros(168, dtype=bool)
        for d in range(5):
            office[d * 24 + 9:d * 24 + 17] = True
        covered = np.arange(hours.min(), hours.max() + 1)
        weights = profile[(covered + 72) % 168]
        expected = float(weights[office[(covered + 72) % 168]].sum() / weights.sum())
        got = float(np.mean(office[week_hour]))
        rows.append(Row("submitted Mon-Fri 9-17 h", f"{expected:.1%}", got, f"{got:.1%}", None,
                        "real traces (7 logs pooled; over the hours this trace covers)"))
    return rows


_WINDOW_SOURCE = {
    "spartan-physical": "thesis Table 4.1 (2022-09-23 to 09-30)",
    "spartan-deeplearn": "thesis Table 4.1 (2021-09-20 to 2022-09-30)",
    "spartan-sapphire": "thesis Table 6.1 (2024-05-01 to 05-07)",
}


def format_calibration(rows: list[Row]) -> str:
    """The rows as an aligned table."""
    from hpcsched.report.table import format_table

    return format_table([r.as_dict() for r in rows],
                        columns=["statistic", "target", "this trace", "ok", "source"])


__all__ = ["Row", "TABLE_4_3", "WAIT_TARGETS", "calibration", "format_calibration", "model_for",
           "offered_loads", "span_days"]
