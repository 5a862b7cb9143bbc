"""DRAS's shipped models judged over training seeds: each recipe trained with seeds 0, 1 and 2, each
seed's `best.pt` (chosen on the validation period, which the test period follows) scored on the
test period exactly as `experiment dras` scores the shipped model, beside FCFS+EASY.

    hpcsched experiment dras-seeds                       # data/pretrained/seeds/NAME-sK.pt
    hpcsched experiment dras-seeds --models runs/dseeds  # NAME-sK.pt or NAME-sK/best.pt

Per seed: the episode of its best.pt, its validation wait over FCFS+EASY's on the same validation
days, and its test wait, slowdown and max wait over FCFS+EASY's. Per recipe: the mean and sample
sd of the test wait ratios, how many seeds wait less than FCFS+EASY, the seed chosen on validation
(by what its runs chose best.pt with: the lowest validation wait, or the highest validation
reward) and the seed shipped as `dras:pretrained/NAME`.
`export(runs)` writes the slim seed files from run folders and the chosen seed's as the shipped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from hpcsched.experiments.dras import model_name, run_heuristic, run_model, test_period
from hpcsched.experiments.dras_training import DrasRunConfig, load, prepared_for
from hpcsched.workload.jobsets import first_days, split
from hpcsched.experiments.policyspec import PRETRAINED
from hpcsched.experiments.seeds import SEEDS, seed_path
from hpcsched.experiments.seeds import shipped_seed as named_shipped_seed

#: (method, trace, reward) of the recipes judged over seeds
SEED_ROWS: tuple[tuple[str, str, str], ...] = (("dras-dql", "ricc", "capability"),
                                               ("dras-pg", "hpc2n", "capacity"),
                                               ("dras-dql", "hpc2n", "capacity"))

#: the test metrics reported as ratios to FCFS+EASY's
RATIOS = ("wait", "slowdown", "max_wait")


def best_validation(ck: dict) -> tuple[int, float]:
    """(episode, validation wait) of a `best.pt`: the average wait its run chose it with, from its
    own episode's entry in its history (NaN when that episode was not validated)."""
    for h in reversed(ck["history"]):
        if h.get("episode") == ck["epoch"] and "val_wait" in h:
            return int(ck["epoch"]), float(h["val_wait"])
    return int(ck["epoch"]), math.nan


def selection(ck: dict) -> tuple[str, float]:
    """(select, score) of a `best.pt`: what its run chose best.pt by (`select`: "wait", the
    lowest validation wait, or "reward", the highest validation reward) and its own episode's
    value of it (NaN when that episode was not validated)."""
    select = ck["config"].get("select", "reward")
    key = "val_wait" if select == "wait" else "val_reward"
    for h in reversed(ck["history"]):
        if h.get("episode") == ck["epoch"] and key in h:
            return select, float(h[key])
    return select, math.nan


_VALIDATION_FCFS: dict[tuple, float] = {}


def validation_fcfs(config: DrasRunConfig) -> float:
    """FCFS+EASY's average wait on the days a run validated on (the first `validate_first_days` of
    its validation period, its own split and profile options): what its validation wait is
    measured against. Neither the run's history nor its config holds it, so it is computed (once
    per distinct period)."""
    key = (config.trace, config.reserve, config.persist, config.backfill_runtime,
           config.train_days, config.validate_days, config.test_days, config.validate_first_days)
    if key not in _VALIDATION_FCFS:
        prepared = prepared_for(config)
        _, validate, _ = split(prepared.jobs, config.train_days, config.validate_days,
                               config.test_days)
        jobs = first_days(validate, config.validate_first_days)
        _VALIDATION_FCFS[key] = float(run_heuristic("fcfs-easy", prepared, jobs).metrics["wait"])
    return _VALIDATION_FCFS[key]


def shipped_seed(name: str) -> int | None:
    """The training seed of the shipped `dras:pretrained/NAME` (None when there is none)."""
    return named_shipped_seed(name)

def seed_study(rows: Sequence[tuple[str, str, str]] = SEED_ROWS, *,
               models: str | Path | None = None, seeds: Sequence[int] = SEEDS,
               test_days: float = 21.0, progress: Callable[[int], None] | None = None
               ) -> list[dict]:
    """One dict per (method, trace, reward): FCFS+EASY's test `fcfs_wait`, `fcfs_slowdown`,
    `fcfs_max_wait`; per seed `episode_sK`, `val_wait_sK`, `val_fcfs_wait_sK`, `val_ratio_sK`,
    `wait_sK`, `wait_ratio_sK`, `slowdown_ratio_sK`, `max_wait_ratio_sK`; `mean_wait_ratio`,
    `sd_wait_ratio` (ddof=1), `beats` (seeds whose wait ratio, to 3 decimals, is below 1.000),
    `select` (what the runs chose best.pt by), `chosen_seed` (the best validation score by it,
    the first on a tie) and `shipped_seed`.
    `test_days` shortens the test period (its first days; 21 is `experiment dras`'s)."""
    import torch

    torch.set_num_threads(1)
    out = []
    for method, trace, reward in rows:
        name = model_name(method, trace, reward)
        paths = {s: seed_path(name, s, models) for s in seeds}  # all named before any run
        prepared, test = test_period(trace, reward=reward, test_days=test_days)
        fcfs = run_heuristic("fcfs-easy", prepared, test).metrics
        if progress:
            progress(1)
        row = {"method": method, "trace": trace, "reward": reward, "model": name,
               "test_days": test_days, "jobs": len(test),
               **{f"fcfs_{k}": float(fcfs[k]) for k in RATIOS}}
        val, score = {}, {}
        for s, path in paths.items():
            ck = load(path)
            episode, val[s] = best_validation(ck)
            select, score[s] = selection(ck)
            ref = validation_fcfs(DrasRunConfig.from_dict(ck["config"]))
            res = run_model(method, path, prepared, test, reward=reward).metrics
            row.update({f"episode_s{s}": episode, f"val_wait_s{s}": val[s],
                        f"val_fcfs_wait_s{s}": ref, f"val_ratio_s{s}": ratio(val[s], ref),
                        f"wait_s{s}": float(res["wait"])})
            row.update({f"{k}_ratio_s{s}": ratio(res[k], fcfs[k]) for k in RATIOS})
            if progress:
                progress(1)
        ratios = np.array([row[f"wait_ratio_s{s}"] for s in seeds], dtype=np.float64)
        row.update(mean_wait_ratio=float(ratios.mean()),
                   sd_wait_ratio=float(ratios.std(ddof=1)) if len(ratios) > 1 else math.nan,
                   beats=f"{int((np.round(ratios, 3) < 1.0).sum())}/{len(seeds)}",
                   select=select, chosen_seed=chosen(score, select),
                   shipped_seed=shipped_seed(name))
        out.append(row)
    return out


def ratio(value: float, fcfs: float) -> float:
    """value / FCFS+EASY's; NaN where FCFS+EASY's is 0 (a period where no job waited)."""
    return float(value) / float(fcfs) if fcfs else math.nan


def chosen(val: dict[int, float], select: str = "wait") -> int:
    """The seed a recipe's runs would choose: the lowest validation wait (`select` "wait") or the
    highest validation reward ("reward"); the first on a tie, a NaN never."""
    sign = 1.0 if select == "wait" else -1.0
    return min(val, key=lambda s: sign * val[s] if not math.isnan(val[s]) else math.inf)


def per_seed(rows: Sequence[dict], seeds: Sequence[int] = SEEDS) -> list[dict]:
    """`seed_study`'s rows unfolded, one per (recipe, seed), for a table people read."""
    out = []
    for r in rows:
        for s in seeds:
            out.append({"model": r["model"], "seed": s, "episode": r[f"episode_s{s}"],
                        "val_ratio": r[f"val_ratio_s{s}"], "wait": r[f"wait_s{s}"],
                        **{f"{k}_ratio": r[f"{k}_ratio_s{s}"] for k in RATIOS},
                        "chosen": "yes" if s == r["chosen_seed"] else "",
                        "shipped": "yes" if s == r["shipped_seed"] else ""})
    return out


def simulations(rows: Sequence = SEED_ROWS, seeds: Sequence[int] = SEEDS) -> int:
    """How many test-period runs `seed_study` makes (for its progress bar)."""
    return len(rows) * (1 + len(seeds))


def export(runs: str | Path, rows: Sequence[tuple[str, str, str]] = SEED_ROWS,
           seeds: Sequence[int] = SEEDS, to: str | Path | None = None) -> list[dict]:
    """From run folders `runs/NAME-sK/` write `to/seeds/NAME-sK.pt` and `to/NAME.pt` (the seed
    with the lowest validation wait), slim exports (`modelfile.slim`) as the shipped
    files are."""
    from hpcsched.modelfile import slim

    runs, to = Path(runs), Path(to or PRETRAINED)
    picked = []
    for method, trace, reward in rows:
        name = model_name(method, trace, reward)
        best = {s: runs / f"{name}-s{s}" / "best.pt" for s in seeds}
        val = {s: best_validation(load(p))[1] for s, p in best.items()}
        sel = {s: selection(load(p)) for s, p in best.items()}
        for s, p in best.items():
            slim(p, to / "seeds" / f"{name}-s{s}.pt")
        pick = chosen({s: v for s, (_, v) in sel.items()}, sel[seeds[0]][0])
        slim(best[pick], to / f"{name}.pt")
        picked.append({"model": name, "seed": pick, **{f"val_wait_s{s}": v
                                                        for s, v in val.items()}})
    return picked


__all__ = ["RATIOS", "SEED_ROWS", "best_validation", "chosen", "export", "per_seed", "ratio",
           "seed_path", "seed_study", "selection", "shipped_seed", "simulations", "validation_fcfs"]
