"""Which checkpoint should a HeraSched run keep (issue 17)? One run's validated checkpoints
scored on the validation period both ways `train herasched` can (the whole span, K = 1, and the
median of K interleaved subsets, `--validate-subsets K`), and each on the held-out periods, so
that the two choices of best.pt can be compared where it matters.

    python benchmarks/herasched_choice.py RUN [--periods test,test-high-load]

RUN is a run folder of `hpcsched train herasched` on a protocol partition (`--validate-trace`
its validation period, or its last `--validate-jobs` jobs, `--validate-subsets K` with K > 1)
holding, beside its log.csv and config.json, a copy of model.pt taken at each validated
update: `validated/epoch-UPDATE.pt`, which `train herasched --keep-validated` keeps, or
`snap-UPDATE.pt` (the runs of session 31, trained before that option: a watcher copied model.pt
as each validation was logged). Printed per checkpoint:
the validation's whole-span S (against FCFS + best-fit with EASY, from the log's val_wait and
val_max_wait, floored at 1 s as training scores) and the median of the K subsets' S (the log's
val_score); then, re-run here, its AWT and MWT on the validation period (they must equal the
log's: the file is the checkpoint validated) and on each held-out period, with the cells of the
21-cell grid it beats by S > 2 and by MWT. Then each rule's choice and the Spearman correlation
of each validation score with the held-out S against FCFS + best-fit. Last line: name=value
pairs.
"""
import argparse
import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np


def ranks(x) -> np.ndarray:
    """Ranks of `x` from 0, tied values sharing their mean rank."""
    x = np.asarray(x, dtype=float)
    r = np.empty(len(x))
    r[np.argsort(x, kind="stable")] = np.arange(len(x))
    for v in np.unique(x):
        r[x == v] = r[x == v].mean()
    return r


def spearman(a, b) -> float:
    """Spearman's rank correlation (numpy only: scipy is not a dependency)."""
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def kept(run: Path, epoch: int) -> Path:
    """The copy of `run`'s model validated after update `epoch`: --keep-validated's, else a
    watcher's snap-EPOCH.pt (the one named when neither exists)."""
    from hpcsched.experiments.runfolder import kept_path

    path, snap = kept_path(run, "epoch", epoch), run / f"snap-{epoch}.pt"
    return snap if snap.exists() and not path.exists() else path


def main() -> None:
    from hpcsched.experiments.herasched_eval import evaluate, period_prepared
    from hpcsched.experiments.herasched_training import floored_score

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path)
    p.add_argument("--periods", default="test,test-high-load")
    args = p.parse_args()
    config = json.loads((args.run / "config.json").read_text())
    k = config["run_options"]["validate_subsets"]
    if k < 2:
        raise SystemExit(f"{args.run}: validated whole (--validate-subsets {k}); nothing to compare")
    with open(args.run / "log.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["val_score"]]
    snaps = {int(r["epoch"]): kept(args.run, int(r["epoch"])) for r in rows}
    missing = [str(s) for s in snaps.values() if not s.exists()]
    if missing:
        raise SystemExit(f"no copy of the validated model: {', '.join(missing)}")
    cluster = config["cluster"]
    order = sorted(snaps)
    paths = [str(snaps[e]) for e in order]

    prepared = period_prepared(cluster, "validation")
    n, span = len(prepared.jobs), int(config["run_options"]["validate_jobs"])
    if span < n:  # training validated the period's last `span` jobs (on Physical, 5,000 of 12,019)
        prepared = replace(prepared, jobs=prepared.jobs.window(n - span, span))
    val = evaluate(prepared, paths, cluster=cluster, period="validation")
    ref = val.grid.metrics["fcfs", "best-fit"]
    by_epoch = {int(r["epoch"]): r for r in rows}
    whole, median = {}, {}
    for e, run in zip(order, val.runs):
        r = by_epoch[e]
        logged = (float(r["val_wait"]), float(r["val_max_wait"]))
        if (run.awt, run.mwt) != logged:
            raise SystemExit(f"{snaps[e]}: validation AWT/MWT {run.awt}/{run.mwt} here, "
                             f"{logged[0]}/{logged[1]} in the log: not the validated model")
        whole[e] = floored_score({"wait": run.awt, "max_wait": run.mwt}, ref)
        median[e] = float(r["val_score"])

    held = {}
    for period in args.periods.split(","):
        ev = evaluate(period_prepared(cluster, period), paths, cluster=cluster, period=period)
        cells = ev.grid.cells()
        for e, run in zip(order, ev.runs):
            s = ev.scores(run)
            held[e, period] = {"awt": run.awt, "mwt": run.mwt,
                               "s_fcfs": s["fcfs", "best-fit"],
                               "above": sum(v > 2 for v in s.values()),
                               "mwt_below": sum(ev.grid.mwt(c) > run.mwt for c in cells),
                               "lowest": min(s.values())}

    periods = args.periods.split(",")
    print(f"{args.run}: {len(order)} validated checkpoints, validation scored whole and as the "
          f"median of {k} subsets; S > 2 and MWT below count the 21 cells")
    head = "  ".join(f"{p}: AWT / MWT (s), S vs FCFS+BF, S>2, MWT below" for p in periods)
    print(f"{'update':>6} {'whole S':>8} {'median S':>9}  {head}")
    for e in order:
        cells = "  ".join(f"{held[e, p]['awt']:9,.1f} / {held[e, p]['mwt']:8,.0f} "
                          f"{held[e, p]['s_fcfs']:5.2f} {held[e, p]['above']:3} "
                          f"{held[e, p]['mwt_below']:3}" for p in periods)
        print(f"{e:6} {whole[e]:8.3f} {median[e]:9.3f}  {cells}")
    # best.pt as training keeps it: the highest score, the earliest on a tie
    pick_whole = max(order, key=lambda e: (whole[e], -e))
    pick_median = max(order, key=lambda e: (median[e], -e))
    pairs = {"pick_whole": pick_whole, "pick_median": pick_median}
    for name, e in (("whole span", pick_whole), (f"median of {k}", pick_median)):
        print(f"\nbest.pt by the {name}: update {e}")
        for p in periods:
            h = held[e, p]
            print(f"  {p}: AWT {h['awt']:,.1f} s, MWT {h['mwt']:,.0f} s, S {h['s_fcfs']:.2f} "
                  f"against FCFS + best-fit; S > 2 against {h['above']} of 21, MWT below "
                  f"{h['mwt_below']}, lowest S {h['lowest']:.2f}")
    print("\nSpearman correlation of the validation score with the held-out S against FCFS + "
          "best-fit, over the checkpoints:")
    for p in periods:
        s = [held[e, p]["s_fcfs"] for e in order]
        cw, cm = spearman([whole[e] for e in order], s), spearman([median[e] for e in order], s)
        print(f"  {p}: whole span {cw:+.2f}, median of {k} {cm:+.2f}")
        pairs[f"rho_whole_{p}"] = round(cw, 2)
        pairs[f"rho_median_{p}"] = round(cm, 2)
    print("\n" + " ".join(f"{a}={b}" for a, b in pairs.items()))


if __name__ == "__main__":
    main()
