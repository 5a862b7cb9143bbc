"""Why DBF can wait less than every heuristic and still queue more jobs (issue 16): the queue
length of DBF's episodes split by where it comes from.

    python benchmarks/dbf_queue_parts.py [--models NAME=P1,P2,...] [--episodes 100] [--workers 2]

An episode (`experiments.dbf`) is cut at its 1,000th start. Its AWT is the mean wait of the jobs
started by the cut; its queue length is the time average, over [t0, t1], of the number of jobs
waiting, which also counts the jobs still waiting at the cut. So the two can disagree: a policy
that leaves more (or longer-waiting) jobs behind at the cut is not charged for them in the AWT.
Per method, the means over the test episodes (`Episode.queue_parts`): the AWT, the queue length
and its two shares (``started``: the waits of the jobs started by the cut; ``left``: the waits so
far of those still waiting there), how many are left waiting and their mean wait so far, the
span t1 - t0, the jobs that arrived by the cut, and ``wait_all``: the mean wait of every job that
arrived by the cut, the waits of those still waiting cut at t1, which is the queue length times
the span over the jobs arrived. A method with several policies (training seeds) is averaged
over them, and each one's numbers are printed.

Default models: the three M = 32, tail 4 seeds of the README, read through the mask
(``benchmarks/data/dbf_m32_seeds/s0..s2.pt``). Last line: name=value pairs.
"""
import argparse
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
TRACE = "lublin-1"
SEEDS = tuple(f"dbf:{HERE / 'data' / 'dbf_m32_seeds' / f's{k}.pt'}@masked" for k in range(3))
#: the columns, in the order printed: (key, header, format)
COLUMNS = (("wait", "AWT s", "{:8,.0f}"), ("wait_all", "all s", "{:8,.0f}"),
           ("queue_length", "queue", "{:6.2f}"), ("queue_started", "started", "{:7.2f}"),
           ("queue_left", "left", "{:6.2f}"), ("left_waiting", "n left", "{:6.1f}"),
           ("wait_left", "left s", "{:8,.0f}"), ("span", "span h", "{:6.1f}"),
           ("arrived", "arrived", "{:7.1f}"))


def parts_means(results) -> dict[str, float]:
    """The means over one policy's episodes of the metrics and queue parts."""
    out = {}
    for k, _, _ in COLUMNS:
        src = "metrics" if k in ("wait", "queue_length") else "parts"
        out[k] = float(np.mean([r[src][k] for r in results]))
    out["span"] /= 3600.0
    return out


def line(label: str, row: dict) -> str:
    return f"{label:16s} " + " ".join(f.format(row[k]) for k, _, f in COLUMNS)


def main(argv=None) -> int:
    from hpcsched.envs.dbf import as_dbf_trace
    from hpcsched.experiments.dbf import Context, Method, heuristic_methods, run_online, test_starts

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", action="append", default=None,
                    help="LABEL=POLICY[,POLICY...]: one method over its policies (repeatable; "
                         "default: the three M = 32 seeds through the mask)")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)

    methods = list(heuristic_methods())
    for spec in a.models or [f"M32-4@masked={','.join(SEEDS)}"]:
        label, sep, policies = spec.partition("=")
        if not sep or not policies:
            ap.error(f"--models {spec!r}: expected LABEL=POLICY[,POLICY...]")
        names = tuple(p for p in policies.split(",") if p)
        methods.append(Method(label, names[0], kind="model", seeds=names))
    starts = test_starts(len(as_dbf_trace(TRACE).jobs), a.episodes)
    ctx = Context(TRACE, tuple(methods), queue_parts=True)
    res = run_online(ctx, {i: starts for i in range(len(methods))}, workers=a.workers)

    print(f"{a.episodes} test episodes of {TRACE}; means over the episodes (AWT: the started "
          f"jobs'; all: every job arrived by the cut, waits cut there)")
    print(f"{'method':16s} " + " ".join(f"{h:>{len(f.format(0))}s}" for _, h, f in COLUMNS))
    rows = {}
    for i, m in enumerate(methods):
        per = [parts_means(res[(i, k)]) for k in range(len(m.policies()))]
        rows[m.label] = {k: float(np.mean([p[k] for p in per])) for k, _, _ in COLUMNS}
        print(line(m.label, rows[m.label]))
        if len(per) > 1:
            for k, p in enumerate(per):
                print(line(f"  seed {k}", p))
    heur = [m.label for m in methods if m.kind == "heuristic"]
    summary = {}
    for m in methods[len(heur):]:
        r = rows[m.label]
        for key in ("wait", "wait_all", "queue_length"):
            best = min(heur, key=lambda h: rows[h][key])
            below = sum(r[key] < rows[h][key] for h in heur)
            print(f"{m.label}: {key} {r[key]:,.2f} below {below} of {len(heur)} heuristics "
                  f"(lowest: {best}, {rows[best][key]:,.2f})")
            summary[f"{m.label}_{key}_below"] = below
    summary.update({f"{lab}_{k}": round(rows[lab][k], 2) for lab in rows
                    for k in ("wait", "wait_all", "queue_length", "left_waiting")})
    print(" ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
