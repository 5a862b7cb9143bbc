"""DRAS's evaluation (IPDPS'21 section V; spec dras.md sections 11-12, 15): `hpcsched experiment dras`.

Every method schedules the whole test period of the chronological split (`workload.jobsets.split`)
from an empty machine, under the `dras` profile (CQSim as the shipped models were trained on it):

- FCFS+EASY (`fcfs` with CQSim's reservation and profile-based backfilling);
- BinPacking, Random, Optimization (0-1 knapsack), no reservation and no backfilling
  (`hpcsched.policies.packing`);
- Decima-PG (one-level PG agent), DRAS-PG and DRAS-DQL: trained models (shipped under
  `hpcsched/data/pretrained/`, or from `--models DIR`), greedy, frozen unless `online` (the paper's
  updates every 10 instances during testing).

Rows: trace, policy, backfill, jobs, wait, max_wait, slowdown, turnaround (the paper's "response"),
utilization, bsld, and the mode shares of Table IV (`ready_jobs_pct`, ..., `backfilled_nodeh_pct`).
Plots: a Kiviat chart with min-max normalisation of 1/wait, 1/max wait, 1/slowdown, 1/response and
utilization (Fig. 6), wait by job size (Fig. 7) and by execution mode (Fig. 8).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from hpcsched.agents.dras_episode import run_episode
from hpcsched.experiments.dras_training import DrasRunConfig, load_agent, make_env, prepared_for
from hpcsched.workload.jobsets import split
from hpcsched.sim.cqsim import MODE_NAMES
from hpcsched.report.plots import _pyplot, save_figure
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import Prepared
from hpcsched.workload.jobs import JobTable

HEURISTICS = ("fcfs-easy", "binpacking", "random", "optimization")
LEARNED = {"decima-pg": "decima", "dras-pg": "pg", "dras-dql": "dql"}
METHODS = HEURISTICS + tuple(LEARNED)
ROW_KEYS = ("jobs", "wait", "max_wait", "slowdown", "turnaround", "utilization", "bsld",
            "ready_jobs_pct", "reserved_jobs_pct", "backfilled_jobs_pct", "ready_nodeh_pct",
            "reserved_nodeh_pct", "backfilled_nodeh_pct")
KIVIAT_AXES = (("wait", "1/avg wait"), ("max_wait", "1/max wait"), ("slowdown", "1/avg slowdown"),
               ("turnaround", "1/avg response"), ("utilization", "utilization"))


def model_name(method: str, trace: str, reward: str) -> str:
    """The shipped model's name: dras-pg-ricc, decima-pg-ricc, dras-dql-hpc2n-capacity, ..."""
    return f"{method}-{trace}" + ("" if reward == "capability" else f"-{reward}")


def model_file(method: str, trace: str, reward: str, models: str | Path | None) -> Path:
    """The model of `method` for `trace` and `reward`: the shipped one, or NAME.pt or the run
    folder NAME/ (its best.pt) in the folder `models`."""
    from hpcsched.recipes import PRETRAINED, in_folder

    name = model_name(method, trace, reward)
    folder = PRETRAINED if models is None else Path(models)
    path = in_folder(folder, name)
    if path is None:
        raise ValueError(f"no {method} model for {trace} ({reward}): no {folder / name}.pt nor run "
                         f"folder {folder / name}; train one with `hpcsched train dras --algo "
                         f"{LEARNED[method]} --trace {trace} --reward {reward} --out DIR/{name}` "
                         f"and pass --models DIR")
    return path


def heuristic(method: str, seed: int = 0):
    from hpcsched.policies.packing import BinPacking, Knapsack, RandomFit
    from hpcsched.policies.priority import get_policy

    return {"fcfs-easy": lambda: get_policy("fcfs"), "binpacking": BinPacking,
            "random": lambda: RandomFit(seed), "optimization": Knapsack}[method]()


def test_period(trace: str = "ricc", *, reward: str = "capability", test_days: float = 21.0,
                seed: int = 0) -> tuple[Prepared, JobTable]:
    """(the trace prepared under the dras profile, its test period's jobs): the first `test_days`
    days after the training and validation periods of `DrasRunConfig`'s split."""
    config = DrasRunConfig(trace=trace, reward=reward, test_days=test_days, seed=seed)
    prepared = prepared_for(config)
    _, _, test = split(prepared.jobs, config.train_days, config.validate_days, config.test_days)
    return prepared, test


def backfill_of(method: str) -> str:
    """The backfilling a method schedules with: EASY for FCFS and the two-level agents (their
    level 2), none for the packing methods and one-level Decima-PG."""
    if method in HEURISTICS:
        return "easy" if method == "fcfs-easy" else "none"
    return "easy" if LEARNED[method] != "decima" else "none"


def run_heuristic(method: str, prepared: Prepared, jobs: JobTable, seed: int = 0):
    """The engine's result of heuristic `method` scheduling `jobs` from an empty machine."""
    engine = make_engine(jobs, prepared.cluster, prepared.profile, backfill_of(method))
    return engine.run(heuristic(method, seed))


def run_model(method: str, path: str | Path, prepared: Prepared, jobs: JobTable, *,
              reward: str = "capability", online: bool = False, seed: int = 0):
    """The result of the trained model at `path` (a `method` of `LEARNED`) scheduling `jobs` from
    an empty machine, greedy; `online`: updating as it goes (the paper's test-time learning)."""
    agent, run_config = load_agent(path)
    env = make_env(DrasRunConfig(algo=LEARNED[method], reward=reward, window=run_config.window,
                                 seed=seed), prepared)  # the env reads no trace setting
    return run_episode(agent, env, jobs, learn=online, explore=False)["result"]


def evaluate(trace: str = "ricc", *, reward: str = "capability", methods=METHODS,
             models: str | Path | None = None, online: bool = False, test_days: float = 21.0,
             seed: int = 0, progress: Callable[[int], Any] | None = None) -> tuple[list, dict]:
    """(rows, results by method) of every method on the test period of `trace`."""
    import torch

    torch.set_num_threads(1)
    prepared, test = test_period(trace, reward=reward, test_days=test_days, seed=seed)
    rows, results = [], {}
    for method in methods:
        if method in HEURISTICS:
            res = run_heuristic(method, prepared, test, seed)
        elif method in LEARNED:
            res = run_model(method, model_file(method, trace, reward, models), prepared, test,
                            reward=reward, online=online, seed=seed)
        else:
            raise ValueError(f"unknown method {method!r}; choose among: {', '.join(METHODS)}")
        results[method] = res
        row = {"trace": trace, "policy": method, "backfill": backfill_of(method),
               "reward": reward, "online": online and method in LEARNED}
        row.update({k: res.metrics[k] for k in ROW_KEYS})
        rows.append(row)
        if progress:
            progress(1)
    return rows, results


def verdicts(rows: list[dict], results: dict | None = None) -> list[dict]:
    """The paper's pattern, row by row against FCFS+EASY: lower average wait and slowdown, max wait
    within 2x of FCFS's; the packing methods' max wait several times FCFS's. With `results` (by
    method), also `jobs_over_fcfs_max`: how many jobs waited longer than FCFS+EASY's longest wait."""
    by = {r["policy"]: r for r in rows}
    fcfs = by.get("fcfs-easy")
    if fcfs is None:
        return []
    out = []
    for r in rows:
        if r["policy"] == "fcfs-easy":
            continue
        v = {"policy": r["policy"], "wait_vs_fcfs": r["wait"] / fcfs["wait"],
             "slowdown_vs_fcfs": r["slowdown"] / fcfs["slowdown"],
             "max_wait_vs_fcfs": r["max_wait"] / fcfs["max_wait"]}
        if results is not None and r["policy"] in results:
            res = results[r["policy"]]
            v["jobs_over_fcfs_max"] = int(np.sum(res.start - res.jobs.submit > fcfs["max_wait"]))
        out.append(v)
    return out


def weekly_waits(res, origin: float, week: float = 7 * 86400.0) -> tuple[np.ndarray, np.ndarray]:
    """(mean wait in s, processor-seconds of work submitted) per week of submission, weeks counted
    from `origin`; a week without jobs has a NaN mean. Work is processors x time executed."""
    jobs = res.jobs
    k = np.floor((jobs.submit - origin) / week).astype(np.int64)
    if k.size and k.min() < 0:
        raise ValueError("weekly_waits: a job was submitted before the origin")
    n = int(k.max()) + 1 if k.size else 0
    count = np.bincount(k, minlength=n)
    wait = np.bincount(k, weights=res.start - jobs.submit, minlength=n)
    work = np.bincount(k, weights=jobs.procs * res.executed, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, wait / count, np.nan), work


# -- plots -----------------------------------------------------------------------------------------
def kiviat_scores(rows: list[dict]) -> dict[str, list[float]]:
    """Per method, each Kiviat axis min-max normalised across methods: 1 = best, 0 = worst."""
    scores = {}
    cols = []
    for key, _ in KIVIAT_AXES:
        v = np.array([r[key] for r in rows], dtype=float)
        v = v if key == "utilization" else 1.0 / np.maximum(v, 1e-9)
        span = v.max() - v.min()
        cols.append((v - v.min()) / span if span > 0 else np.ones_like(v))
    for i, r in enumerate(rows):
        scores[r["policy"]] = [float(c[i]) for c in cols]
    return scores


def kiviat(rows: list[dict], path: str | Path, title: str = "") -> Path:
    plt = _pyplot()
    scores = kiviat_scores(rows)
    labels = [label for _, label in KIVIAT_AXES]
    angles = np.linspace(0, 2 * np.pi, len(labels), endpoint=False).tolist()
    fig = plt.figure(figsize=(6, 6), dpi=110)
    ax = fig.add_subplot(111, polar=True)
    for name, vals in scores.items():
        ax.plot(angles + angles[:1], vals + vals[:1], lw=1.3, label=name)
        ax.fill(angles + angles[:1], vals + vals[:1], alpha=0.06)
    ax.set_xticks(angles)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylim(0, 1)
    ax.legend(loc="upper right", bbox_to_anchor=(1.3, 1.1), fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return save_figure(fig, path)


def wait_by_size(results: dict, nodes_of: Callable, path: str | Path, title: str = "") -> Path:
    """Mean and max wait (h) per job-size class (nodes: 1, 2-8, 9-64, 65-256, >256)."""
    plt = _pyplot()
    edges = [1, 2, 9, 65, 257, 10**9]
    names = ["1", "2-8", "9-64", "65-256", ">256"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=110)
    width = 0.8 / max(len(results), 1)
    for k, (method, res) in enumerate(results.items()):
        need = nodes_of(res.jobs)
        wait = (res.start - res.jobs.submit) / 3600.0
        means, maxes = [], []
        for lo, hi in zip(edges[:-1], edges[1:]):
            sel = (need >= lo) & (need < hi)
            means.append(float(np.nanmean(wait[sel])) if sel.any() else 0.0)
            maxes.append(float(np.nanmax(wait[sel])) if sel.any() else 0.0)
        x = np.arange(len(names)) + k * width
        axes[0].bar(x, means, width, label=method)
        axes[1].bar(x, maxes, width, label=method)
    for ax, what in zip(axes, ("mean wait (h)", "max wait (h)")):
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
        ax.set_xticklabels(names)
        ax.set_xlabel("job size (nodes)")
        ax.set_ylabel(what)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)


def wait_by_mode(results: dict, path: str | Path, title: str = "") -> Path:
    """Mean wait (h) of the jobs started in each execution mode, per method (Fig. 8)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    modes = list(MODE_NAMES.items())
    width = 0.8 / max(len(results), 1)
    for k, (method, res) in enumerate(results.items()):
        mode = res.modes
        wait = (res.start - res.jobs.submit) / 3600.0
        vals = [float(np.nanmean(wait[mode == m])) if mode is not None and np.any(mode == m)
                else 0.0 for m, _ in modes]
        ax.bar(np.arange(len(modes)) + k * width, vals, width, label=method)
    ax.set_xticks(np.arange(len(modes)) + 0.4 - width / 2)
    ax.set_xticklabels([name for _, name in modes])
    ax.set_ylabel("mean wait (h)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return save_figure(fig, path)


def wait_by_week(results: dict, origin: float, path: str | Path, title: str = "") -> Path:
    """The paper's Fig. 9: the work submitted per week (processor-hours, top) and every method's mean
    wait per week of submission (h, bottom): how each copes with the load's changes."""
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5.5), dpi=110, sharex=True,
                                      gridspec_kw={"height_ratios": [1, 2]})
    n_weeks = 0
    for k, (method, res) in enumerate(results.items()):
        mean, work = weekly_waits(res, origin)
        weeks = np.arange(1, mean.size + 1)
        n_weeks = max(n_weeks, mean.size)
        if k == 0:
            top.bar(weeks, work / 3600.0, color="0.6")
        bottom.plot(weeks, mean / 3600.0, "o-", ms=4, lw=1.3, label=method)
    bottom.set_xticks(np.arange(1, n_weeks + 1))
    top.set_ylabel("processor-hours\nsubmitted")
    bottom.set_ylabel("mean wait (h)")
    bottom.set_xlabel("week of the test period (by submission)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    bottom.legend(fontsize=7)
    if title:
        top.set_title(title, fontsize=9)
    return save_figure(fig, path)


def read_log(path: str | Path) -> list[dict]:
    import csv

    with open(path) as f:
        return [{k: (float(v) if k not in ("phase",) and v not in ("", None) else v)
                 for k, v in row.items()} for row in csv.DictReader(f)]


def curriculum_plot(runs: dict[str, Any], path: str | Path, key: str = "val_reward",
                    title: str = "") -> Path:
    """Validation curves of training runs against the episode (the paper's Fig. 4): `runs` maps
    a label to a run folder (its log.csv) or to a list of folders (seeds of the same settings:
    each seed thin, their mean over the episodes all of them validated thick)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    for i, (label, folders) in enumerate(runs.items()):
        folders = [folders] if isinstance(folders, (str, Path)) else list(folders)
        color = f"C{i}"
        curves = []
        for folder in folders:
            log = [r for r in read_log(Path(folder) / "log.csv") if r.get(key) not in ("", None)]
            curves.append({int(r["episode"]): float(r[key]) for r in log})
        if len(curves) == 1:
            c = curves[0]
            ax.plot(list(c), list(c.values()), "o-", ms=3, lw=1.2, color=color, label=label)
            continue
        for c in curves:
            ax.plot(list(c), list(c.values()), "-", lw=0.7, alpha=0.45, color=color)
        common = sorted(set.intersection(*(set(c) for c in curves)))
        ax.plot(common, [float(np.mean([c[e] for c in curves])) for e in common], "o-", ms=3,
                lw=1.8, color=color, label=f"{label} (mean of {len(curves)} seeds)")
    ax.set_xlabel("episode (one jobset each)")
    ax.set_ylabel(key.replace("_", " "))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return save_figure(fig, path)


__all__ = ["HEURISTICS", "KIVIAT_AXES", "LEARNED", "METHODS", "ROW_KEYS", "backfill_of",
           "curriculum_plot", "evaluate", "kiviat", "kiviat_scores", "model_file", "model_name",
           "read_log", "run_heuristic", "run_model", "test_period", "verdicts", "wait_by_mode",
           "wait_by_size", "wait_by_week", "weekly_waits"]
