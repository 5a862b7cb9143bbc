"""Which checkpoint should a DBF run keep (issue 16)? Every validated checkpoint of one or more
runs, read through the mask (`dbf:FILE@masked`), on more validation episodes than training
validated on, beside the six heuristics of Fig. 3.4 (FCFS, Ch. 3's SJF `sqf`, LCFS, each without
backfilling and with EASY) on the same episodes; then the checkpoint each rule would keep.

    python benchmarks/dbf_choice.py RUN [RUN ...] [--episodes 30] [--workers 2] [--test]

RUN is a run folder of `hpcsched train dbf ... --validate-masked --keep-validated`, holding
`validated/epoch-N.pt` for each validated update and its log.csv (the 10-episode validation AWT
that chose best.pt, `val_wait`). The episodes are DBF's validation split (`dbf_starts`, nested:
its first 10 are training's own), so the choice never sees a test episode.

The rule, fixed before any of these checkpoints was read on the test episodes: keep the
checkpoint with the lowest `margin = max(AWT / lowest heuristic AWT, queue / lowest heuristic
queue)` on the validation episodes; below 1 it is below every heuristic on both, which is what
the issue asks of DBF on the test episodes. Ties: the earlier update. Printed per checkpoint:
update, the log's 10-episode AWT, then AWT, queue length and utilisation on the episodes, and
the margin; per run the choice of this rule and of the log's lowest validation (best.pt's, but
in a run started from another model with `--init`, whose best.pt may be the starting model, update
0, which is said). With --test, the chosen checkpoints (each rule's) are also read on the 100
test episodes and printed beside the heuristics there. Last line: name=value pairs.
"""
import argparse
import csv
import re
import sys
from pathlib import Path

import numpy as np

TRACE = "lublin-1"
KEYS = ("wait", "queue_length", "utilization")


def checkpoints(run: Path) -> list[tuple[int, Path]]:
    """(update, file) of a run's kept checkpoints, in update order."""
    found = []
    for f in (run / "validated").glob("epoch-*.pt"):
        m = re.fullmatch(r"epoch-(\d+)\.pt", f.name)
        if m:
            found.append((int(m.group(1)), f))
    if not found:
        sys.exit(f"{run}: no validated/epoch-N.pt (train with --keep-validated)")
    return sorted(found)


def logged_validation(run: Path) -> dict[int, float]:
    with open(run / "log.csv", newline="") as fh:
        return {int(r["epoch"]): float(r["val_wait"]) for r in csv.DictReader(fh)
                if r.get("val_wait")}


def score(methods, starts, workers):
    """Mean over `starts` of each method's AWT, queue length and utilisation."""
    from hpcsched.experiments.dbf import Context, episode_means, run_online

    ctx = Context(TRACE, tuple(methods))
    res = run_online(ctx, {i: list(starts) for i in range(len(methods))}, workers=workers)
    return [episode_means(res[(i, 0)], KEYS) for i in range(len(methods))]


def margin(row, best_wait, best_queue) -> float:
    return max(row["wait"] / best_wait, row["queue_length"] / best_queue)


def main(argv=None) -> int:
    from hpcsched.envs.dbf import as_dbf_trace
    from hpcsched.experiments.dbf import Method, heuristic_methods
    from hpcsched.modelfile import read_model
    from hpcsched.workload.windows import dbf_starts

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--episodes", type=int, default=30, help="validation episodes (30)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--test", action="store_true", help="also read the choices on the test")
    a = ap.parse_args(argv)

    heur = heuristic_methods()  # Fig. 3.4's six: FCFS, SJF (sqf), LCFS, without and with EASY
    n_jobs = len(as_dbf_trace(TRACE).jobs)
    runs = {run: checkpoints(run) for run in a.runs}
    models = [Method(f"{run.name}@{u}", f"dbf:{f}@masked", kind="model")
              for run, found in runs.items() for u, f in found]
    starts = dbf_starts(n_jobs, "validation", a.episodes)
    rows = score(heur + models, starts, a.workers)
    href, mrows = rows[:len(heur)], rows[len(heur):]
    best_wait = min(r["wait"] for r in href)
    best_queue = min(r["queue_length"] for r in href)
    print(f"{a.episodes} validation episodes (dbf_starts 'validation': {starts[0]}..{starts[-1]})")
    for method, r in zip(heur, href):
        print(f"  {method.label:10s} AWT {r['wait']:8,.0f} s  queue {r['queue_length']:6.2f}  "
              f"util {r['utilization']:.3f}")
    print(f"  lowest heuristic AWT {best_wait:,.0f} s, queue {best_queue:.2f}")
    pairs, i = [], 0
    for run, found in runs.items():
        logged = logged_validation(run)
        print(f"\n{run.name}: update, log's 10-episode AWT, AWT, queue, util, margin")
        scored = []
        for u, f in found:
            r = mrows[i]
            i += 1
            mg = margin(r, best_wait, best_queue)
            scored.append((mg, u, f, r))
            print(f"  {u:4d} {logged.get(u, float('nan')):9,.0f} {r['wait']:9,.0f} "
                  f"{r['queue_length']:6.2f} {r['utilization']:.3f} {mg:6.3f}")
        rule = min(scored, key=lambda s: (s[0], s[1]))
        best_u = min(logged.items(), key=lambda kv: (kv[1], kv[0]))[0]
        log_pick = next(s for s in scored if s[1] == best_u)
        kept = read_model(run / "best.pt")["epoch"] if (run / "best.pt").exists() else best_u
        said = (f"best.pt is update {best_u}" if kept == best_u else
                f"the log's lowest is update {best_u}; best.pt is update {kept}, not kept here")
        print(f"  margin rule keeps update {rule[1]} (margin {rule[0]:.3f}); "
              f"{said} (margin {log_pick[0]:.3f})")
        pairs.append((run.name, rule, log_pick, "best.pt" if kept == best_u else "lowest"))
    summary = {f"{name}_margin_update": rule[1] for name, rule, _, _ in pairs}
    summary.update({f"{name}_best_update": lp[1] for name, _, lp, _ in pairs})
    if a.test:
        test = dbf_starts(n_jobs, "test", 100)
        picks = [Method(f"{name}@{s[1]}", f"dbf:{s[2]}@masked", kind="model")
                 for name, rule, lp, _ in pairs for s in (rule, lp)]
        trows = score(heur + picks, test, a.workers)
        th, tp = trows[:len(heur)], trows[len(heur):]
        tw, tq = min(r["wait"] for r in th), min(r["queue_length"] for r in th)
        print(f"\n100 test episodes; lowest heuristic AWT {tw:,.0f} s, queue {tq:.2f}")
        for (name, _, _, second), k in zip(pairs, range(0, len(tp), 2)):
            for which, r, m in (("margin", tp[k], picks[k]), (second, tp[k + 1], picks[k + 1])):
                print(f"  {m.label:14s} ({which:7s}) AWT {r['wait']:8,.0f} s  queue "
                      f"{r['queue_length']:6.2f}  util {r['utilization']:.3f}")
        for which, off in (("margin", 0), ("best", 1)):
            w = [tp[k]["wait"] for k in range(off, len(tp), 2)]
            q = [tp[k]["queue_length"] for k in range(off, len(tp), 2)]
            sd = (lambda x: float(np.std(x, ddof=1)) if len(x) > 1 else 0.0)
            print(f"  {which} rule, mean over runs: AWT {np.mean(w):,.0f} +- {sd(w):,.0f} s, "
                  f"queue {np.mean(q):.2f} +- {sd(q):.2f}")
            summary[f"test_{which}_wait"] = round(float(np.mean(w)))
            summary[f"test_{which}_queue"] = round(float(np.mean(q)), 2)
    print(" ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
