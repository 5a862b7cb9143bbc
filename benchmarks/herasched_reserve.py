"""How long may the oldest job wait before HeraSched holds EASY's reservation for it (issue 17)?
Each model, as it is and with ``@reserve=AGE`` for each AGE given, against the 21 cells of
Appendix B on the protocol's validation periods, and the AGE a rule fixed in advance picks.

    python benchmarks/herasched_reserve.py --cluster spartan-physical \\
        [--models MODEL,...] [--ages none,0,1:00:00,4:00:00,12:00:00] \\
        [--periods validation,validation-high-load] [--jobs N] [--workers 2]

MODEL: one per training seed (default: the partition's shipped models); AGE: ``none`` (the model
as trained) or a Slurm duration (``0``: a reservation for the oldest job at every decision).
Printed per period: the grid's lowest AWT and MWT; then per AGE each model's AWT and MWT, their
means, the lowest mean S over the cells (S = AWT_cell / AWT_H + MWT_cell / MWT_H, the mean over
the models, as `experiment herasched` computes it) and how many cells that mean S beats by S > 2
and the mean MWT by MWT. The rule: the AGE whose lowest mean S over the cells of all the periods
is highest (the earliest AGE given on a tie). Last line: name=value pairs.

The runs (cells and models) are spread over --workers processes; the numbers do not depend on it.
"""
from __future__ import annotations

import argparse
import functools
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np


@functools.lru_cache(maxsize=None)
def _period(cluster: str, split: str, jobs: int | None):
    from hpcsched.experiments.herasched_eval import period_prepared

    return period_prepared(cluster, split, jobs)


def run_cell(cluster, split, jobs, selector, allocator) -> dict:
    from hpcsched.experiments.herasched_grid import run_grid

    grid = run_grid(_period(cluster, split, jobs), selectors=[selector], allocators=[allocator])
    return grid.metrics[selector, allocator]


def run_one(cluster, split, jobs, spec) -> dict:
    from hpcsched.experiments.herasched_eval import run_model

    return run_model(_period(cluster, split, jobs), spec).metrics


def submit_grid(pool, cluster: str, periods, jobs, model: str) -> dict:
    """Check that `model` can schedule the periods' cluster, then submit the 21 cells of each
    period to `pool`: {(period, (selector, allocator)): future}."""
    from hpcsched.experiments.herasched_eval import check_model
    from hpcsched.experiments.herasched_grid import ALLOCATORS, SELECTORS

    for split in periods:
        check_model(model, _period(cluster, split, jobs).cluster, cluster)
    return {(split, (s, a)): pool.submit(run_cell, cluster, split, jobs, s, a)
            for split in periods for s in SELECTORS for a in ALLOCATORS}


def spec_of(model: str, age: str) -> str:
    return model if age == "none" else f"{model}@reserve={age}"


def main() -> None:
    from hpcsched.experiments.herasched_grid import ALLOCATORS, SELECTORS, cell_name
    from hpcsched.sim.metrics import combined_score
    from hpcsched.cli.herasched_eval import _default_models
    from hpcsched.workload.hera_periods import PERIODS

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cluster", required=True, choices=sorted(PERIODS))
    ap.add_argument("--models", help="comma-separated (default: the shipped models)")
    ap.add_argument("--ages", default="none,0,1:00:00,4:00:00,12:00:00")
    ap.add_argument("--periods", default="validation,validation-high-load")
    ap.add_argument("--jobs", type=int, help="only the first N jobs of each period")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args()
    models = args.models.split(",") if args.models else _default_models(args.cluster)
    ages = args.ages.split(",")
    periods = args.periods.split(",")
    if not models:
        raise SystemExit(f"no model given and none shipped for {args.cluster}")
    for age in ages:  # a bad AGE fails before any run
        from hpcsched.recipes.herasched import reserve_after

        if age != "none":
            try:
                reserve_after(f"reserve={age}", f"--ages {age}")
            except ValueError as e:
                raise SystemExit(f"herasched_reserve.py: {e}") from None
    cells = [(s, a) for s in SELECTORS for a in ALLOCATORS]
    t0, cpu0 = time.time(), time.process_time()
    with ProcessPoolExecutor(args.workers) as pool:
        jobs = submit_grid(pool, args.cluster, periods, args.jobs, models[0])
        for split in periods:
            for age in ages:
                for m in models:
                    jobs[split, age, m] = pool.submit(run_one, args.cluster, split, args.jobs,
                                                      spec_of(m, age))
        got = {k: f.result() for k, f in jobs.items()}
    lowest = {age: (np.inf, "") for age in ages}
    for split in periods:
        grid = {c: got[split, c] for c in cells}
        awt_cell = min(cells, key=lambda c: grid[c]["wait"])
        mwt_cell = min(cells, key=lambda c: grid[c]["max_wait"])
        print(f"\n{args.cluster}, {split}: lowest AWT {grid[awt_cell]['wait']:,.1f} s "
              f"({cell_name(awt_cell)}), lowest MWT {grid[mwt_cell]['max_wait']:,.0f} s "
              f"({cell_name(mwt_cell)})")
        print(f"{'AGE':>10}  {'AWT (s) per model':<32} {'MWT (s) per model':<32} "
              f"{'mean AWT':>9} {'mean MWT':>9}  {'lowest mean S (cell)':<28} S>2  MWT<")
        for age in ages:
            ms = [got[split, age, m] for m in models]
            mean_s = {c: float(np.mean([combined_score(m, grid[c]) for m in ms])) for c in cells}
            low = min(cells, key=mean_s.get)
            if mean_s[low] < lowest[age][0]:
                lowest[age] = (mean_s[low], f"{split}, {cell_name(low)}")
            awt = float(np.mean([m["wait"] for m in ms]))
            mwt = float(np.mean([m["max_wait"] for m in ms]))
            awts = ", ".join(format(m["wait"], ",.1f") for m in ms)
            mwts = ", ".join(format(m["max_wait"], ",.0f") for m in ms)
            low_text = f"{mean_s[low]:.3f} ({cell_name(low)})"
            print(f"{age:>10}  {awts:<32} {mwts:<32} {awt:>9,.1f} {mwt:>9,.0f}  {low_text:<28} "
                  f"{sum(v > 2 for v in mean_s.values()):>4}  "
                  f"{sum(grid[c]['max_wait'] > mwt for c in cells):>4}")
    chosen = max(ages, key=lambda a: lowest[a][0])  # the first of the highest
    print("\nlowest mean S over the periods' cells, per AGE: "
          + "; ".join(f"{a}: {lowest[a][0]:.3f} ({lowest[a][1]})" for a in ages))
    print(f"the rule picks: {chosen}")
    print(f"\nchosen={chosen} models={len(models)} runs={len(got)} wall_s={time.time() - t0:.0f} "
          f"main_cpu_s={time.process_time() - cpu0:.1f} workers={args.workers} "
          f"load={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
