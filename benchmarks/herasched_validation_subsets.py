"""How much one job's wait moves HeraSched's validation score (issue 17 part 4), for each way of
scoring the validation period in parts (`experiments.herasched_training`, `validate_subsets`).

    python benchmarks/herasched_validation_subsets.py

On the protocol's two validation periods (Deeplearn's, generated, 2,566 jobs; CERIT-SC's, cut from
the real log, 2,684 jobs), the 21 heuristic cells of the grid stand in for 21 models, each scored
against FCFS + best-fit with EASY (the validation's reference) as a validation scores a model:

- whole: the span as one, today's S (K = 1);
- windows K, mean: K consecutive windows of equal job counts, the mean of their S;
- subsets K, median: K interleaved subsets (job i in subset i mod K), the median of their S (what
  `train herasched --validate-subsets K` does).

Per period it prints the reference's AWT in 4 consecutive windows (where it waits at all), then per
scoring: the spread of S over the 21 cells (sd: how far models differ), how far S falls on average
when one job drawn at random (30 draws per cell, seed 0) waits a day longer or 10 minutes longer,
and their ratio, sd / fall for a day (the larger, the less one job decides the choice between two
models). A job's extra wait is added to its wait alone, the rest of the schedule kept: a measure of
the score, not of a scheduler. Last line: `name=value` pairs.
"""
import time

import numpy as np

from hpcsched.experiments import herasched_eval as he
from hpcsched.experiments import herasched_grid as hg
from hpcsched.experiments.herasched_training import floored_score, validation_score
from hpcsched.sim.factory import make_engine

DRAWS = 30
DAY, TEN_MINUTES = 86_400.0, 600.0


def cell_waits(prepared) -> dict:
    """{cell: every job's wait} of the 21 cells on the prepared period."""
    out = {}
    for sel in hg.SELECTORS:
        policy = hg.selector_policy(sel, "hpcsim")
        for alloc in hg.ALLOCATORS:
            r = make_engine(prepared.jobs, prepared.cluster, prepared.profile, "easy",
                            allocator=alloc).run(policy)
            out[sel, alloc] = r.start - r.jobs.submit
    return out


def parts(waits: np.ndarray, k: int, interleaved: bool) -> list[dict]:
    if interleaved:
        chunks = [waits[i::k] for i in range(k)]
    else:
        chunks = np.array_split(waits, k)
    return [{"wait": c.mean(), "max_wait": c.max()} for c in chunks]


def scorer(k: int, interleaved: bool):
    def score(waits, ref):
        s = [floored_score(w, r) for w, r in zip(parts(waits, k, interleaved),
                                                   parts(ref, k, interleaved))]
        return validation_score(s) if interleaved else float(np.mean(s))
    return score


SCORINGS = [("whole", scorer(1, False))] + [
    (f"windows {k}, mean", scorer(k, False)) for k in (2, 4, 8)] + [
    (f"subsets {k}, median", scorer(k, True)) for k in (2, 3, 4, 8)]

t0 = time.perf_counter()
rng = np.random.default_rng(0)
summary = {}
for cluster in ("spartan-deeplearn", "cerit-zewura"):
    prepared = he.period_prepared(cluster, "validation")
    waits = cell_waits(prepared)
    ref = waits["fcfs", "best-fit"]
    n = len(ref)
    quarters = [p["wait"] for p in parts(ref, 4, False)]
    print(f"\n{cluster} validation, {n:,} jobs: the reference's AWT {ref.mean():,.1f} s, MWT "
          f"{ref.max():,.0f} s; in 4 consecutive windows its AWT is "
          + ", ".join(f"{q:,.1f}" for q in quarters) + " s\n")
    draws = rng.integers(n, size=(len(waits), DRAWS))
    print(f"{'scoring':<20} {'S: min':>7} {'max':>6} {'sd':>6} {'+1 day':>7} {'+10 min':>8} "
          f"{'sd/fall':>8}")
    for name, score in SCORINGS:
        base, fall_day, fall_ten = [], [], []
        for (cell, w), jobs in zip(waits.items(), draws):
            s = score(w, ref)
            base.append(s)
            for j in jobs:
                for extra, falls in ((DAY, fall_day), (TEN_MINUTES, fall_ten)):
                    late = w.copy()
                    late[j] += extra
                    falls.append(s - score(late, ref))
        base = np.array(base)
        ratio = base.std() / np.mean(fall_day)
        print(f"{name:<20} {base.min():>7.2f} {base.max():>6.2f} {base.std():>6.3f} "
              f"{np.mean(fall_day):>7.3f} {np.mean(fall_ten):>8.4f} {ratio:>8.2f}")
        key = cluster.split("-")[-1] + "_" + name.replace(", ", "_").replace(" ", "")
        summary[key] = round(float(ratio), 2)
print()
print(" ".join(f"{k}={v}" for k, v in summary.items())
      + f" seconds={time.perf_counter() - t0:.1f}")
