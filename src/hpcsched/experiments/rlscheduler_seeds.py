"""RLScheduler's learned rows judged over training seeds: every shipped recipe trained with seeds
0, 1 and 2, each seed's `best.pt` (chosen on validation windows that share no job with the test windows)
scored on the tables' windows, beside the best heuristic of the same run.

    hpcsched experiment rlscheduler-seeds            # the shipped seeds (data/pretrained/seeds/)
    hpcsched experiment rlscheduler-seeds --models runs/seeds   # NAME-sK/best.pt or NAME-sK.pt

A row reports each seed's score, their mean and sample standard deviation, how many seeds beat the
best heuristic, and which seed is shipped as `rl:pretrained/NAME`: the one with the best validation
score (never the test score). `export(runs, names)` writes the slim seed files from run folders and
copies the chosen seed's `best.pt` as the shipped model.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from hpcsched.experiments.policyspec import PRETRAINED
from hpcsched.experiments.seeds import SEED_FOLDER, SEEDS, seed_path, shipped_seed
from hpcsched.experiments.rlscheduler import (AS_CODED, BACKFILL, HEURISTICS, _run, _windows,
                                              model_name)
from hpcsched.sim.run import prepare


#: (trace, metric, backfilling) of the rows judged over seeds: Table V's six and Table VIII's two
#: (fairness on HPC2N). The CTC-SP2 models (Table VII only) have one seed each.
SEED_ROWS: tuple[tuple[str, str, bool], ...] = (
    *((t, "bsld", b) for t in ("lublin-1", "lublin-2", "hpc2n") for b in (False, True)),
    ("hpc2n", "fairness", False), ("hpc2n", "fairness", True),
)

def table_key(metric: str) -> str:
    """The column a row is scored by: bsld, or the largest per-user mean bsld for fairness."""
    return "max_user_bsld" if metric == "fairness" else "bsld"


def best_validation(checkpoint: dict, metric: str) -> float:
    """The greedy validation score a `best.pt` was chosen with: its own epoch's entry in its
    history (NaN when that epoch was not validated)."""
    from hpcsched.envs.pick_job import metric_key

    key = f"val_{metric_key(metric)}"
    for h in reversed(checkpoint["history"]):
        if h.get("epoch") == checkpoint["epoch"] and key in h:
            return float(h[key])
    return math.nan


def seed_study(rows: Iterable[tuple[str, str, bool]] = SEED_ROWS, *,
               models: str | Path | None = None, seeds: Sequence[int] = SEEDS,
               windows: int = 10, jobs: int = 1024, first: int = 10000,
               progress: Callable[[int], None] | None = None) -> list[dict]:
    """One dict per row: the heuristics' best, each seed's test score (`s0`, `s1`, ...) and its
    validation score (`val_s0`, ...), `mean`, `sd` (sample, ddof=1), `min`, `max`, `beats`
    (seeds better than the best heuristic), `shipped_seed` and `chosen_seed` (the best on
    validation)."""
    from hpcsched.modelfile import read_model

    out = []
    prepared: dict[str, object] = {}
    for trace, metric, backfilling in rows:
        prep = prepared.get(trace) or prepared.setdefault(trace, prepare(trace, "rlscheduler"))
        starts = _windows(prep, windows, jobs, first)
        backfill = BACKFILL["rlscheduler"] if backfilling else "none"
        key = table_key(metric)
        name = model_name(trace, metric, backfilling)
        paths = {s: seed_path(name, s, models) for s in seeds}
        labelled = [(AS_CODED[c], AS_CODED[c]) for c in HEURISTICS]
        labelled += [(f"s{s}", f"rl:{p}") for s, p in paths.items()]
        result = {r["policy"]: r[key] for r in
                  _run(prep, labelled, backfill, starts, jobs, "rlscheduler", progress)}
        heur = {AS_CODED[c]: result[AS_CODED[c]] for c in HEURISTICS}
        best_h = min(heur, key=heur.get)
        scores = np.array([result[f"s{s}"] for s in seeds], dtype=np.float64)
        val = {s: best_validation(read_model(p), metric) for s, p in paths.items()}
        chosen = (max if metric == "utilization" else min)(
            seeds, key=lambda s: (val[s] if not math.isnan(val[s]) else math.inf))
        row = {"trace": trace, "backfilling": "yes" if backfilling else "no", "metric": key,
               "model": name, "best_heuristic": best_h, "best": heur[best_h]}
        row.update({f"s{s}": float(v) for s, v in zip(seeds, scores)})
        row.update(mean=float(scores.mean()),
                   sd=float(scores.std(ddof=1)) if len(scores) > 1 else math.nan,
                   min=float(scores.min()), max=float(scores.max()),
                   beats=f"{int((scores < heur[best_h]).sum())}/{len(seeds)}",
                   mean_ratio=float(scores.mean() / heur[best_h]),
                   chosen_seed=chosen, shipped_seed=shipped_seed(name) if models is None else None)
        row.update({f"val_s{s}": val[s] for s in seeds})
        out.append(row)
    return out


def simulations(rows: Sequence = SEED_ROWS, seeds: Sequence[int] = SEEDS,
                windows: int = 10) -> int:
    """How many windows `seed_study` simulates (for its progress bar)."""
    return len(rows) * (len(HEURISTICS) + len(seeds)) * windows


def export(runs: str | Path, rows: Iterable[tuple[str, str, bool]] = SEED_ROWS,
           seeds: Sequence[int] = SEEDS, to: str | Path = PRETRAINED) -> list[dict]:
    """From run folders `runs/NAME-sK/` write `to/seeds/NAME-sK.pt` (slim exports,
    `modelfile.slim`: the policy, config, normalisation and history) and copy the seed
    with the best validation score's best.pt to `to/NAME.pt`. Returns what was chosen, per
    model."""
    from hpcsched.modelfile import read_model, slim

    runs, to = Path(runs), Path(to)
    chosen = []
    for trace, metric, backfilling in rows:
        name = model_name(trace, metric, backfilling)
        val = {}
        for s in seeds:
            best = runs / f"{name}-s{s}" / "best.pt"
            slim(best, to / "seeds" / f"{name}-s{s}.pt")
            val[s] = best_validation(read_model(best), metric)
        pick = (max if metric == "utilization" else min)(seeds, key=lambda s: val[s])
        shutil.copyfile(runs / f"{name}-s{pick}" / "best.pt", to / f"{name}.pt")
        chosen.append({"model": name, "seed": pick, **{f"val_s{s}": v for s, v in val.items()}})
    return chosen


__all__ = ["SEEDS", "SEED_FOLDER", "SEED_ROWS", "best_validation", "export", "seed_path",
           "seed_study", "shipped_seed", "simulations", "table_key"]
