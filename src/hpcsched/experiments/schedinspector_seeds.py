"""SchedInspector's inspectors judged over training seeds: every shipped recipe trained with
seeds 0, 1 and 2, each seed's `best.pt` (chosen on validation windows that share no job with either
protocol's test windows) scored on `experiment schedinspector-table4`'s windows, both protocols.

    hpcsched experiment schedinspector-seeds                 # data/pretrained/seeds/
    hpcsched experiment schedinspector-seeds --models runs   # NAME-sK.pt or NAME-sK/best.pt

A row: the base heuristic's bsld, each seed's inspected bsld and its gain over the base, the mean
and sample sd of the gains, how many seeds improve on the base (by at least 0.1 %, as printed),
and the seed shipped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from hpcsched.experiments.seeds import SEEDS, seed_path, shipped_seed
from hpcsched.experiments.schedinspector import (BASES, TRACES, WINDOWS, evaluate, model_name,
                                                 protocol_windows)

#: (trace, base, backfill) of every shipped inspector
SEED_ROWS: tuple[tuple[str, str, str], ...] = (
    *((t, b, bf) for bf in ("none", "schedgym") for t in TRACES for b in BASES),
    ("lublin-1", "fcfs", "none"),
)


def best_validation(path: Path) -> float:
    """The greedy validation improvement a `best.pt` was chosen with (its own epoch's entry)."""
    from hpcsched.modelfile import read_model

    ck = read_model(path)
    for h in reversed(ck["history"]):
        if h.get("epoch") == ck["epoch"] and "val_improvement" in h:
            return float(h["val_improvement"])
    return math.nan


def improving(gains) -> int:
    """How many relative gains are positive once printed in % to one decimal (>= 0.05 %)."""
    return sum(round(100 * float(g), 1) > 0 for g in gains)


def seed_study(rows: Sequence[tuple[str, str, str]] = SEED_ROWS, *,
               draws: Sequence[str] = ("code", "ours"), models: str | Path | None = None,
               seeds: Sequence[int] = SEEDS, count: int = 50, jobs: int = 256,
               progress: Callable[[int], None] | None = None) -> list[dict]:
    """One dict per (draw, trace, base, backfill): `base_bsld`, per seed `bsld_sK` and `gain_sK`
    (the relative bsld gain over the base), `mean_gain`, `sd_gain` (ddof=1), `improve` (seeds whose
    gain is positive at the printed precision, 0.1 %: a gain of 0.01 % is not counted),
    `chosen_seed` (the best validation improvement; the first seed on a tie), `shipped_seed`
    (the training seed of the shipped `pretrained/NAME`)."""
    from hpcsched.sim.run import estimated_trace

    out = []
    for draw in draws:
        profile = WINDOWS[draw][0]
        prepared: dict[str, object] = {}
        for trace, base, backfill in rows:
            prep = prepared.get(trace) or prepared.setdefault(
                trace, estimated_trace(trace, None, profile))
            starts = protocol_windows(prep, draw, count, jobs)
            name = model_name(trace, base, backfill)
            row = {"draw": draw, "trace": trace, "base": base, "backfill": backfill,
                   "model": name}
            gains, vals = [], {}
            for s in seeds:
                path = seed_path(name, s, models)
                base_row, inspected = evaluate(prep, base, path, starts, jobs, backfill, progress,
                                               f"s{s}")
                row["base_bsld"] = base_row["bsld"]
                row[f"bsld_s{s}"] = inspected["bsld"]
                gain = (base_row["bsld"] - inspected["bsld"]) / base_row["bsld"]
                row[f"gain_s{s}"] = gain
                gains.append(gain)
                vals[s] = best_validation(path)
            g = np.array(gains)
            row.update(mean_gain=float(g.mean()),
                       sd_gain=float(g.std(ddof=1)) if len(g) > 1 else math.nan,
                       improve=f"{improving(g)}/{len(g)}",
                       chosen_seed=max(seeds, key=lambda s: (vals[s] if not math.isnan(vals[s])
                                                             else -math.inf)))
            row["shipped_seed"] = shipped_seed(name)
            row.update({f"val_s{s}": vals[s] for s in seeds})
            out.append(row)
    return out


#: the gains, printed in % to one decimal
GAINS = ("gain_s0", "gain_s1", "gain_s2", "mean_gain", "sd_gain")
#: the columns of the printed table
COLUMNS = ("draw", "trace", "base", "backfill", "base_bsld", *(f"{k}_%" for k in GAINS),
           "improve", "chosen_seed", "shipped_seed")


def printed(rows: Sequence[dict]) -> tuple[list[dict], list[str]]:
    """`seed_study`'s rows as the command prints them: the gains in % to one decimal, as text (a
    table's floats print with three), and the columns shown."""
    table = [{**r, **{f"{k}_%": f"{100 * r[k]:.1f}" for k in GAINS if k in r}} for r in rows]
    return table, list(COLUMNS)


def simulations(rows: Sequence = SEED_ROWS, seeds: Sequence[int] = SEEDS, count: int = 50,
                draws: int = 2) -> int:
    return draws * len(rows) * len(seeds) * 2 * count


def export(runs: str | Path, rows: Sequence[tuple[str, str, str]] = SEED_ROWS,
           seeds: Sequence[int] = SEEDS, to: str | Path | None = None) -> list[dict]:
    """From run folders `runs/NAME-sK/` write `to/seeds/NAME-sK.pt` (slim exports,
    `modelfile.slim`) and copy the seed with the best validation improvement's best.pt to
    `to/NAME.pt`."""
    import shutil

    from hpcsched.modelfile import slim
    from hpcsched.experiments.policyspec import PRETRAINED

    runs, to = Path(runs), Path(to or PRETRAINED)
    chosen = []
    for trace, base, backfill in rows:
        name = model_name(trace, base, backfill)
        val = {s: best_validation(runs / f"{name}-s{s}" / "best.pt") for s in seeds}
        for s in seeds:
            slim(runs / f"{name}-s{s}" / "best.pt", to / "seeds" / f"{name}-s{s}.pt")
        pick = max(seeds, key=lambda s: val[s])
        shutil.copyfile(runs / f"{name}-s{pick}" / "best.pt", to / f"{name}.pt")
        chosen.append({"model": name, "seed": pick, **{f"val_s{s}": v for s, v in val.items()}})
    return chosen


__all__ = ["SEED_ROWS", "COLUMNS", "best_validation", "export", "improving", "printed",
           "seed_path", "seed_study", "shipped_seed", "simulations"]
