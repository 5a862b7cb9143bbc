"""How fast a large ``sacct -P`` file loads: `read_sacct` on a synthetic file of the issue's column
set (benchmarks/sacct_traces.py), against a plain row-by-row Python reader of the same file run in
the same process (split each line, parse each field it needs: the cost the columnar reader avoids).

    python benchmarks/sacct_load.py                       # 2,500,000 rows
    python benchmarks/sacct_load.py --rows 500000 --file /tmp/s.txt --gzip

The file is written once (to --file, default a temporary one) and reused when it exists with the
same row count. Prints wall and CPU seconds and rows per second, then, as its last line,
``name=value`` pairs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import sacct_traces  # noqa: E402

from hpcsched.workload.sacct import read_sacct_with_report  # noqa: E402


def naive_read(path: str, limit: int) -> int:
    """The baseline: the first `limit` rows parsed one field at a time in Python (ids classified,
    three instants, counts, limit, memory); returns the rows it kept."""
    kept = 0
    with open(path) as f:
        names = f.readline().rstrip("\n").split("|")
        at = {n: i for i, n in enumerate(names)}
        for k, line in enumerate(f):
            if k >= limit:
                break
            v = line.rstrip("\n").split("|")
            jid = v[at["JobID"]]
            if "." in jid or "[" in jid or v[at["Start"]] == "Unknown" or \
                    v[at["End"]] == "Unknown":
                continue
            dt.datetime.fromisoformat(v[at["Submit"]])
            dt.datetime.fromisoformat(v[at["Start"]])
            dt.datetime.fromisoformat(v[at["End"]])
            int(v[at["ElapsedRaw"]]), int(v[at["NNodes"]]), int(v[at["NCPUS"]])
            lim = v[at["TimelimitRaw"]]
            _ = -1 if lim == "UNLIMITED" else int(lim) * 60
            mem = v[at["ReqMem"]]
            _ = float(mem.rstrip("MGcn"))
            dict(item.split("=") for item in v[at["AllocTRES"]].split(","))
            kept += 1
    return kept


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_500_000)
    ap.add_argument("--file", help="where to write the synthetic file (kept for the next run)")
    ap.add_argument("--gzip", action="store_true", help="also time the gzipped file")
    ap.add_argument("--baseline-rows", type=int, default=200_000,
                    help="rows the row-by-row baseline parses (its rate is per row)")
    args = ap.parse_args()

    path = args.file or os.path.join(tempfile.gettempdir(), f"sacct-{args.rows}.txt")
    stamp = path + ".rows"
    if not (os.path.exists(path) and os.path.exists(stamp)
            and Path(stamp).read_text() == str(args.rows)):
        t = time.perf_counter()
        sacct_traces.write(path, args.rows, seed=0)
        Path(stamp).write_text(str(args.rows))
        print(f"wrote {args.rows:,} rows to {path} in {time.perf_counter() - t:.1f} s")
    size_mb = os.path.getsize(path) / 2 ** 20
    load = os.getloadavg()[0]

    def timed(target: str):
        w, c = time.perf_counter(), time.process_time()
        jobs, report = read_sacct_with_report(target)
        return time.perf_counter() - w, time.process_time() - c, jobs, report

    wall, cpu, jobs, report = timed(path)
    print(f"read_sacct: {report.rows_read:,} rows ({size_mb:.0f} MB), {len(jobs):,} jobs kept")
    print(f"  wall {wall:.2f} s, CPU {cpu:.2f} s: {report.rows_read / wall:,.0f} rows/s "
          f"(wall), {report.rows_read / cpu:,.0f} rows/s (CPU)")
    pairs = {"rows": report.rows_read, "jobs": len(jobs), "wall_s": round(wall, 2),
             "cpu_s": round(cpu, 2), "rows_per_s": round(report.rows_read / wall),
             "rows_per_cpu_s": round(report.rows_read / cpu)}
    if args.gzip:
        gz = path + ".gz"
        if not os.path.exists(gz) or os.path.getmtime(gz) < os.path.getmtime(path):
            with open(path, "rb") as f, gzip.open(gz, "wb", compresslevel=6) as g:
                g.write(f.read())
        gwall, gcpu, _, _ = timed(gz)
        print(f"  gzipped: wall {gwall:.2f} s, CPU {gcpu:.2f} s")
        pairs.update(gz_wall_s=round(gwall, 2), gz_cpu_s=round(gcpu, 2))

    n = min(args.baseline_rows, args.rows)
    c = time.process_time()
    naive_read(path, n)
    naive_cpu = time.process_time() - c
    naive_rate = n / naive_cpu
    print(f"row-by-row Python baseline: {n:,} rows in {naive_cpu:.2f} CPU s, {naive_rate:,.0f} "
          f"rows/s; columnar is {report.rows_read / cpu / naive_rate:.1f}x faster per CPU second")
    print(f"load average (1 min) at the start: {load:.2f}")
    pairs.update(naive_rows_per_cpu_s=round(naive_rate),
                 speedup=round(report.rows_read / cpu / naive_rate, 1), load=round(load, 2))
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
