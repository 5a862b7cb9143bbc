"""Wang's thesis Ch. 3, the split window: Fig. 3.5 (AWT and queue length per (M, M_t)), Fig. 3.6
(invisible jobs) and Fig. 3.7 (wait per job type), on the episodes of `experiments.dbf`.

**Invisible jobs** (Fig. 3.6) are measured at every *scheduling cycle* of the episode: each
instant a job arrives or completes while jobs wait, which is where the DBF environment opens a
cycle and the engine makes a pass; the queue length L is taken as the cycle opens (arrivals and
completions of the instant done, before anything starts). A window of M slots then misses
L - M jobs when L > M (`visibility`: their mean over the cycles, and the share of cycles with
L > M, "partially observed"). It is read from the episode's schedule, so it is the same for a
heuristic and for a model, and for the model it counts cycles, not the environment's steps (a
cycle holds one step per job started in it, plus its Fwd). The split (M_t) does not change how
many jobs are invisible in a given state; it changes the states the policy leads to.

**Job types** (Fig. 3.7): requested cores x requested time, in the classes `CORE_EDGES` and
`TIME_EDGES` (the thesis does not give its bins). Per type: the jobs that arrived during the
episodes, how many were placed (started by the episode's end) and their mean wait. Jobs of more
than 128 cores form the last core class; the share of them not placed is the starvation the
thesis warns of for the all-tail window.
"""

from __future__ import annotations

import re
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from hpcsched.experiments import dbf
from hpcsched.experiments.dbf import Method

#: Fig. 3.5's window sizes (the reference heuristics' invisible jobs are measured for these
#: when no model says otherwise)
WINDOWS = (8, 10, 16, 20, 32, 64)
#: the thesis's mean queue length at M = 20 without a split (section 3.4.3)
THESIS_QUEUE_M20 = 31.0
#: Fig. 3.7's window
HEATMAP_WINDOW = 10
HEATMAP_EPISODES = 1000
#: upper bounds of the requested-core classes: 1, 2-8, 9-32, 33-64, 65-128, >128
CORE_EDGES = (1, 8, 32, 64, 128)
CORE_LABELS = ("1", "2-8", "9-32", "33-64", "65-128", ">128")
#: upper bounds (s) of the requested-time classes: <= 1 min, 1-10 min, 10 min-1 h, 1-4 h,
#: 4-12 h, > 12 h
TIME_EDGES = (60, 600, 3600, 4 * 3600, 12 * 3600)
TIME_LABELS = ("<=1m", "1-10m", "10m-1h", "1-4h", "4-12h", ">12h")
BIG_JOB_CORES = 128


# -- invisible jobs ----------------------------------------------------------------------------------
def queue_lengths_at(submit: np.ndarray, start: np.ndarray, executed: np.ndarray, t0: float,
                     t1: float) -> np.ndarray:
    """The queue length as each scheduling cycle in [t0, t1] opens: at every instant a job
    arrives or completes (in time order), the jobs submitted by then that have not started
    before then; instants with no job waiting are no cycle and are left out. `start` NaN: not
    started (waiting to the end)."""
    submit = np.asarray(submit, dtype=np.float64)
    start = np.asarray(start, dtype=np.float64)
    begun = np.isfinite(start)
    ends = start[begun] + np.asarray(executed, dtype=np.float64)[begun]
    times = np.concatenate([submit[(submit >= t0) & (submit <= t1)],
                            ends[(ends >= t0) & (ends <= t1)]])
    times = np.unique(times)
    arrived = np.searchsorted(np.sort(submit), times, side="right")
    started = np.searchsorted(np.sort(np.where(begun, start, np.inf)), times, side="left")
    lengths = arrived - started
    return lengths[lengths > 0]


def cycle_queue_lengths(episode) -> np.ndarray:
    """`queue_lengths_at` of an `experiments.dbf.Episode`."""
    return queue_lengths_at(episode.jobs.submit, episode.start_time, episode.executed,
                            episode.t0, episode.t1)


def visibility(lengths: np.ndarray, window: int) -> tuple[float, int, int]:
    """(the sum over cycles of the jobs a window of `window` slots cannot show, max(L - M, 0);
    the cycles with L > M; the cycles): sums, so that episodes add up (`visibility_means`)."""
    lengths = np.asarray(lengths)
    excess = np.maximum(lengths - window, 0)
    return float(excess.sum()), int(np.count_nonzero(excess)), int(lengths.size)


def visibility_means(parts: Sequence[tuple[float, int, int]]) -> dict[str, float]:
    """`invisible`: the mean number of invisible jobs per cycle; `partial`: the share of cycles
    partially observed (L > M); over every cycle of the episodes given."""
    excess = sum(p[0] for p in parts)
    partial = sum(p[1] for p in parts)
    cycles = sum(p[2] for p in parts)
    return {"invisible": excess / cycles if cycles else 0.0,
            "partial": partial / cycles if cycles else 0.0, "cycles": cycles}


# -- job types ---------------------------------------------------------------------------------------
def job_classes(procs: np.ndarray, req_time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(core class, time class) of each job (indices into CORE_LABELS and TIME_LABELS)."""
    cores = np.searchsorted(np.asarray(CORE_EDGES), np.asarray(procs), side="left")
    times = np.searchsorted(np.asarray(TIME_EDGES, dtype=np.float64),
                            np.asarray(req_time, dtype=np.float64), side="left")
    return cores, times


def job_type_counts(episode) -> dict[str, list]:
    """Per (core class, time class), as nested lists: `arrived` (submitted in the episode),
    `placed` (started by its end) and `wait` (the placed jobs' summed wait)."""
    jobs = episode.jobs
    arrived = jobs.submit <= episode.t1
    placed = np.isfinite(episode.start_time)
    cores, times = job_classes(jobs.procs, jobs.req_time)
    shape = (len(CORE_LABELS), len(TIME_LABELS))
    a = np.zeros(shape, dtype=np.int64)
    p = np.zeros(shape, dtype=np.int64)
    w = np.zeros(shape)
    np.add.at(a, (cores[arrived], times[arrived]), 1)
    np.add.at(p, (cores[placed], times[placed]), 1)
    np.add.at(w, (cores[placed], times[placed]),
              episode.start_time[placed] - jobs.submit[placed])
    return {"arrived": a.tolist(), "placed": p.tolist(), "wait": w.tolist()}


def job_type_rows(label: str, parts: Sequence[dict[str, list]]) -> list[dict]:
    """One row per job type of a configuration, summed over its episodes: arrived, placed, the
    share not placed, and the placed jobs' mean wait."""
    a = sum(np.asarray(p["arrived"]) for p in parts)
    pl = sum(np.asarray(p["placed"]) for p in parts)
    w = sum(np.asarray(p["wait"], dtype=np.float64) for p in parts)
    rows = []
    for i, cores in enumerate(CORE_LABELS):
        for j, time in enumerate(TIME_LABELS):
            rows.append({"method": label, "cores": cores, "runtime": time,
                         "arrived": int(a[i, j]), "placed": int(pl[i, j]),
                         "not_placed": float(1 - pl[i, j] / a[i, j]) if a[i, j] else None,
                         "wait": float(w[i, j] / pl[i, j]) if pl[i, j] else None})
    return rows


def starvation(parts: Sequence[dict[str, list]]) -> dict[str, float]:
    """Jobs of more than 128 cores over the episodes: arrived, placed, the share not placed,
    their mean wait."""
    a = sum(np.asarray(p["arrived"])[-1].sum() for p in parts)
    pl = sum(np.asarray(p["placed"])[-1].sum() for p in parts)
    w = sum(np.asarray(p["wait"], dtype=np.float64)[-1].sum() for p in parts)
    return {"big_arrived": int(a), "big_placed": int(pl),
            "big_not_placed": float(1 - pl / a) if a else None,
            "big_wait": float(w / pl) if pl else None}


# -- the grid ----------------------------------------------------------------------------------------
_LABEL = re.compile(r"^(\d+)-(\d+)$")


def parse_grid(items: Sequence[str]) -> list[tuple[int, int, str, str]]:
    """``MH-MT=MODEL`` items (the thesis's labels: 9-1 is M = 10 with one tail slot; MODEL a
    policy name, a model file or a run folder, as ``dbf:PATH``) -> (M, M_t, label, policy)."""
    out = []
    for item in items:
        label, sep, model = item.partition("=")
        m = _LABEL.match(label.strip())
        if not sep or not m or not model.strip():
            raise ValueError(f"--grid {item!r}: give MH-MT=MODEL, the thesis's label of the "
                             f"window (head and tail slots, e.g. 9-1 for M = 10 with one tail "
                             f"slot) and a policy name, model file or run folder")
        head, tail = int(m.group(1)), int(m.group(2))
        if head + tail == 0:
            raise ValueError(f"--grid {item!r}: a window of 0 slots")
        out.append((head + tail, tail, label.strip(), dbf.as_policy_name(model.strip())))
    return out


def grid_methods(grid: Sequence[tuple[int, int, str, str]],
                 seeds: dict[str, Sequence[str]] | None = None) -> list[Method]:
    """A model method per grid entry (its training seeds from `seeds`, by label); a seeds label
    that is no grid label must be one (MH-MT) and adds an entry."""
    seeds = dict(seeds or {})
    entries = list(grid)
    for label in seeds:
        if label not in {e[2] for e in entries}:
            entries += [(*e[:3], "") for e in parse_grid([f"{label}=x"])]
    out = []
    for window, tail, label, name in entries:
        prefix = (name or "dbf:").partition(":")[0] or "dbf"
        chosen = tuple(dbf.as_policy_name(s, prefix) for s in seeds.get(label, ()))
        first = chosen[0] if chosen else name
        out.append(Method(label, first, "none", dbf.model_profile(first), kind="model",
                          window=window, tail=tail, seeds=chosen or None))
    return out


def shipped_grid() -> tuple[list[Method], list[str]]:
    """The shipped DBF models as grid entries, where their window can be read."""
    from hpcsched.recipes import PRETRAINED

    names = sorted(p.stem for p in PRETRAINED.glob("dbf-*.pt"))
    if not names:
        return [], ["no DBF model is shipped and none is given (--grid MH-MT=MODEL,...): the "
                     "rows below are the reference heuristics' alone"]
    methods = [Method(n, f"dbf:pretrained/{n}", "none", dbf.model_profile(f"dbf:pretrained/{n}"),
                      kind="model") for n in names]
    return methods, []


def reference_methods(names: Sequence[str]) -> list[Method]:
    """Heuristics named NAME or NAME+BACKFILL (fcfs+easy), for the model-free queue."""
    out = []
    for name in names:
        policy, _, backfill = name.lower().partition("+")
        backfill = backfill or "none"
        if backfill not in ("none", "easy", "conservative"):
            raise ValueError(f"reference {name!r}: the backfilling after '+' is easy or "
                             f"conservative")
        out += dbf.heuristic_methods((policy,), (backfill,))
    return out


# -- the sweep ---------------------------------------------------------------------------------------
@dataclass
class Sweep:
    """What `window_sweep` measured: Fig. 3.5/3.6's rows, Fig. 3.7's job types, and notes."""

    rows: list[dict]
    #: label -> Fig. 3.7's job-type parts, per episode, of every training seed (pooled)
    types: dict[str, list[dict]]
    heatmap_episodes: int
    notes: list[str]
    #: label -> the same parts per training seed, where a method has more than one
    seed_types: dict[str, list[list[dict]]] = field(default_factory=dict)

    def type_rows(self) -> list[dict]:
        return [r for label, parts in self.types.items() for r in job_type_rows(label, parts)]

    def starvation_rows(self) -> list[dict]:
        """Per method, its jobs of more than 128 cores over all its episodes (all seeds pooled),
        and for a method over seeds each seed's share not placed (`big_not_placed_per_seed`)."""
        out = []
        for label, parts in self.types.items():
            row = {"method": label, **starvation(parts)}
            if len(self.seed_types.get(label, ())) > 1:
                row["big_not_placed_per_seed"] = [starvation(p)["big_not_placed"]
                                                  for p in self.seed_types[label]]
            out.append(row)
        return out


def window_sweep(trace: str = "lublin-1", models: Sequence[Method] = (), *,
                 references: Sequence[str] = ("fcfs",), episodes: int = 100,
                 heatmap_episodes: int = HEATMAP_EPISODES,
                 heatmap_window: int = HEATMAP_WINDOW, windows: Sequence[int] | None = None,
                 episode_jobs: int = dbf.EPISODE_JOBS, workers: int = 1,
                 progress: Callable[[int], None] | None = None) -> Sweep:
    """Fig. 3.5 and 3.6 for every model (its own M), and for each reference heuristic (no
    backfilling, the model-free queue) at every M of the models (`WINDOWS` when there is none);
    Fig. 3.7's job types over `heatmap_episodes` for the models with M = `heatmap_window` and the
    references. The `episodes` test starts are among the heatmap's (`dbf_starts` draws nest)."""
    models = list(models)
    refs = reference_methods(references)
    methods = models + refs
    ms = tuple(sorted({m.window for m in models if m.window})) or tuple(windows or WINDOWS)
    heat = {i for i, m in enumerate(methods)
            if heatmap_episodes and (m.kind != "model" or m.window == heatmap_window)}
    std = dbf._prepared(trace, "standard")
    table = dbf.test_starts(len(std.jobs), episodes, episode_jobs=episode_jobs)
    heat_starts = (dbf.test_starts(len(std.jobs), heatmap_episodes, episode_jobs=episode_jobs)
                   if heat else [])
    wanted = set(heat_starts)
    both = table + sorted(wanted - set(table))  # the table's first, then the heatmap's others
    in_heat = [k for k, s in enumerate(both) if s in wanted]
    context = dbf.Context(trace, tuple(methods), episode_jobs, windows=ms, job_types=bool(heat))
    plan = {i: both if i in heat else table for i in range(len(methods))}
    results = dbf.run_online(context, plan, workers=workers, progress=progress)
    rows, types, seed_types = [], {}, {}
    for i, m in enumerate(methods):
        runs = [results[i, k] for k in range(len(m.policies()))]
        per_seed = []
        for eps in runs:
            first = eps[:episodes]
            means = dbf.episode_means(first, dbf.METRICS)
            for w in ((m.window,) if m.window else ms):
                means.update({f"{k}@{w}": v for k, v in visibility_means(
                    [e["visible"][w] for e in first]).items()})
            per_seed.append(means)
        for w in ((m.window,) if m.window else ms):
            keys = dbf.METRICS + ("invisible", "partial")
            row = dbf.method_row(replace(m, window=w), std.name,
                                 [{**{k: s.get(k) for k in dbf.METRICS},
                                   "invisible": s[f"invisible@{w}"],
                                   "partial": s[f"partial@{w}"]} for s in per_seed],
                                 min(episodes, len(runs[0])), keys)
            row["cycles"] = per_seed[0][f"cycles@{w}"]
            rows.append(row)
        if i in heat:
            each = [[eps[k]["types"] for k in in_heat] for eps in runs]
            types[m.label] = [part for parts in each for part in parts]
            if len(each) > 1:
                seed_types[m.label] = each
    return Sweep(rows, types, heatmap_episodes if heat else 0, [], seed_types)


def simulations(models: Sequence[Method], references: Sequence[str], episodes: int,
                heatmap_episodes: int, heatmap_window: int = HEATMAP_WINDOW) -> int:
    total = 0
    for m in models:
        n = max(episodes, heatmap_episodes if m.window == heatmap_window else 0)
        total += n * len(m.policies())
    return total + len(references) * max(episodes, heatmap_episodes)


# -- the thesis's claims (section 3.4.4), checked -----------------------------------------------------
def claims(sweep: Sweep) -> list[dbf.Claim]:
    """Section 4.7's split-window facts on our rows: the queue length at M = 20 (31); with
    M <= 20 one tail slot lowers AWT and queue length; splitting cuts the invisible jobs for
    M = 8 and 10; the all-tail window of M = 10 has the best AWT but places fewer big jobs. A
    model over training seeds is judged on its mean; the text gives its sd and each seed's value,
    and how many seeds hold by themselves."""
    return claims_of(sweep.rows, sweep.starvation_rows())


def claims_of(rows: Sequence[dict], starvation_rows: Sequence[dict]) -> list[dbf.Claim]:
    """`claims` on a sweep's rows and starvation rows as `--json` gives them (table "windows"
    and "starvation"; the key `table` is ignored)."""
    out = []
    models = [r for r in rows if r.get("kind") == "model"]
    at = {(r["window"], r["tail"]): r for r in models}
    m20 = at.get((20, 0))
    refs = [r for r in rows if r.get("kind") != "model" and r.get("window") == 20]
    ref = ("; on the same episodes: " + ", ".join(f"{r['method']} {r['queue_length']:.1f}"
                                                  for r in refs)) if refs else ""
    if m20 is None:
        out.append(dbf.Claim("mean queue length with M = 20, M_t = 0", "31",
                             "no model 20-0 in the grid" + ref, "not judged"))
    else:
        q = m20["queue_length"]
        out.append(dbf.Claim("mean queue length with M = 20, M_t = 0", "31",
                             _spread(m20, "queue_length", 1) + ref,
                             "holds" if 0.8 * 31 <= q <= 1.2 * 31 else "does not hold"))
    pairs = [(w, at[w, 0], at[w, 1]) for w in sorted({w for w, _ in at})
             if w <= 20 and (w, 0) in at and (w, 1) in at]
    if not pairs:
        out.append(dbf.Claim("with M <= 20, one tail slot lowers AWT and queue length",
                             "a large gain", "no M <= 20 with both tail 0 and 1 in the grid",
                             "not judged"))
    else:
        halves = [(a["wait"] > b["wait"], a["queue_length"] > b["queue_length"])
                  for _, a, b in pairs]
        text = "; ".join(
            f"M = {w}: AWT {_spread(a, 'wait', 0)} -> {_spread(b, 'wait', 0)} s, queue "
            f"{_spread(a, 'queue_length', 1)} -> {_spread(b, 'queue_length', 1)}"
            + (f"; seeds below tail 0's mean: "
               f"{dbf.seeds_below(b, a['wait'], a['queue_length'])}"
               if b.get("wait_per_seed") else "")
            + f" (AWT {'lower' if lw else 'not lower'}, queue {'lower' if lq else 'not lower'})"
            for (w, a, b), (lw, lq) in zip(pairs, halves))
        out.append(dbf.Claim("with M <= 20, one tail slot lowers AWT and queue length",
                             "a large gain", text,
                             "holds" if all(lw and lq for lw, lq in halves) else "does not hold"))
    split = []
    for w in (8, 10):
        if (w, 0) in at and any(t > 0 for ww, t in at if ww == w):
            best = min((at[w, t] for ww, t in at if ww == w and t > 0),
                       key=lambda r: r["invisible"])
            split.append((w, at[w, 0], best))
    if not split:
        out.append(dbf.Claim("splitting cuts the invisible jobs for M = 8 and 10", "sharply",
                             "no M = 8 or 10 with and without a tail in the grid",
                             "not judged"))
    else:
        holds = all(b["invisible"] < a["invisible"] for _, a, b in split)
        text = "; ".join(f"M = {w}: {a['invisible']:.1f} -> {b['invisible']:.1f} invisible "
                         f"({b['method']}), partial {100 * a['partial']:.0f}% -> "
                         f"{100 * b['partial']:.0f}%" for w, a, b in split)
        out.append(dbf.Claim("splitting cuts the invisible jobs for M = 8 and 10", "sharply",
                             text, "holds" if holds else "does not hold"))
    w = HEATMAP_WINDOW
    tails = {r["tail"]: r for r in models if r["window"] == w}
    starve = {s["method"]: s for s in starvation_rows}
    if w in tails and 0 in tails and tails[w]["method"] in starve and \
            tails[0]["method"] in starve:
        full, head = tails[w], tails[0]
        sf, sh = starve[full["method"]], starve[head["method"]]
        best = min(tails.values(), key=lambda r: r["wait"])
        fewer = (sf["big_not_placed"] or 0) > (sh["big_not_placed"] or 0)
        each = sf.get("big_not_placed_per_seed")
        seeds = ""
        if each:
            above = sum((x or 0) > (sh["big_not_placed"] or 0) for x in each)
            seeds = (f" (per seed {', '.join(_pct(x) for x in each)}; {above} of {len(each)} "
                     f"seeds above {head['method']}'s)")
        text = (f"best AWT: {best['method']} ({_spread(best, 'wait', 0)} s; "
                + ", ".join(f"{r['method']} {r['wait']:,.0f}" for r in tails.values()
                            if r is not best)
                + f" s); jobs > 128 cores not placed: {_pct(sf['big_not_placed'])} with "
                f"{full['method']}{seeds} against {_pct(sh['big_not_placed'])} with "
                f"{head['method']} (best AWT {'all-tail' if best is full else 'not all-tail'}, "
                f"big jobs placed {'less' if fewer else 'not less'} often)")
        out.append(dbf.Claim("the all-tail window (0-10): best AWT, big jobs placed less often",
                             "starvation risk", text,
                             "holds" if best is full and fewer else "does not hold"))
    else:
        out.append(dbf.Claim("the all-tail window (0-10): best AWT, big jobs placed less often",
                             "starvation risk", "no 10-0 and 0-10 models in the heatmap",
                             "not judged"))
    return out


def _spread(row: dict, key: str, digits: int) -> str:
    """A row's `key`: the value, and for a method over seeds its sd and each seed's value."""
    each = row.get(f"{key}_per_seed")
    text = f"{row[key]:,.{digits}f}"
    if each and len(each) > 1:
        sd = row.get(f"{key}_sd")
        text += (f" ± {sd:,.{digits}f}" if sd is not None else "") + " (" + ", ".join(
            f"{x:,.{digits}f}" for x in each) + ")"
    return text


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


# -- figures -----------------------------------------------------------------------------------------
def plot_sweep(rows: Sequence[dict], path) -> Any:
    """Fig. 3.5 (top: AWT and queue length against M_t, one panel per M) and Fig. 3.6 (bottom:
    invisible jobs and the share of partially observed cycles)."""
    from hpcsched.report.plots import _pyplot, save_figure

    plt = _pyplot()
    models = [r for r in rows if r.get("kind") == "model" and r.get("tail") is not None]
    ms = sorted({r["window"] for r in models})
    fig, axes = plt.subplots(2, max(len(ms), 1), figsize=(3.2 * max(len(ms), 1), 6), dpi=100,
                             squeeze=False)
    for j, w in enumerate(ms):
        pts = sorted((r for r in models if r["window"] == w), key=lambda r: r["tail"])
        tails = [r["tail"] for r in pts]
        ax = axes[0][j]
        ax.plot(tails, [r["wait"] for r in pts], "o", color="tab:red", label="AWT (s)")
        ax2 = ax.twinx()
        ax2.plot(tails, [r["queue_length"] for r in pts], "x", color="tab:green",
                 label="queue length")
        ax.set_title(f"M = {w}", fontsize=9)
        ax.set_xlabel("M_t")
        ax = axes[1][j]
        ax.bar(tails, [r["invisible"] for r in pts], color="tab:blue", alpha=0.7)
        ax.set_xlabel("M_t")
        ax3 = ax.twinx()
        ax3.plot(tails, [100 * r["partial"] for r in pts], "s-", color="tab:orange", ms=3)
        if j == 0:
            axes[0][0].set_ylabel("average waiting time (s)")
            ax.set_ylabel("invisible jobs (bars)")
        if j == len(ms) - 1:
            ax2.set_ylabel("average queue length (x)")
            ax3.set_ylabel("partially observed cycles, % (line)")
    fig.suptitle("DBF split window: Fig. 3.5 (top) and Fig. 3.6 (bottom)", fontsize=10)
    return save_figure(fig, path)


def plot_heatmap(sweep: Sweep, path) -> Any:
    """Fig. 3.7: per configuration, a circle per job type (cores x requested time), its size the
    jobs placed, its colour their mean wait (one scale for all panels)."""
    from matplotlib.colors import LogNorm

    from hpcsched.report.plots import _pyplot

    plt = _pyplot()
    labels = list(sweep.types)
    fig, axes = plt.subplots(1, max(len(labels), 1), figsize=(3.6 * max(len(labels), 1), 4),
                             dpi=100, squeeze=False)
    tables = {lb: job_type_rows(lb, sweep.types[lb]) for lb in labels}
    waits = [r["wait"] for t in tables.values() for r in t if r["wait"]]
    norm = LogNorm(vmin=max(min(waits), 1.0), vmax=max(max(waits), 10.0)) if waits else None
    most = max((r["placed"] for t in tables.values() for r in t), default=1) or 1
    scatter = None
    for ax, label in zip(axes[0], labels):
        pts = [r for r in tables[label] if r["placed"]]
        x = [CORE_LABELS.index(r["cores"]) for r in pts]
        y = [TIME_LABELS.index(r["runtime"]) for r in pts]
        scatter = ax.scatter(x, y, s=[20 + 400 * r["placed"] / most for r in pts],
                             c=[max(r["wait"], 1.0) for r in pts], cmap="viridis", norm=norm)
        ax.set_xticks(range(len(CORE_LABELS)))
        ax.set_xticklabels(CORE_LABELS, fontsize=7, rotation=30)
        ax.set_yticks(range(len(TIME_LABELS)))
        ax.set_yticklabels(TIME_LABELS, fontsize=7)
        ax.set_xlim(-0.6, len(CORE_LABELS) - 0.4)
        ax.set_ylim(-0.6, len(TIME_LABELS) - 0.4)
        ax.set_xlabel("requested cores")
        ax.set_title(label, fontsize=9)
    axes[0][0].set_ylabel("requested time")
    if scatter is not None:
        fig.colorbar(scatter, ax=list(axes[0]), label="mean wait (s)")
    fig.suptitle(f"wait per job type over {sweep.heatmap_episodes} episodes (Fig. 3.7; circle: "
                 f"jobs placed)", fontsize=10)
    # the colour bar spans the panels, which tight_layout (save_figure's) cannot lay out
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


__all__ = ["CORE_EDGES", "CORE_LABELS", "HEATMAP_EPISODES", "HEATMAP_WINDOW", "Sweep",
           "THESIS_QUEUE_M20", "TIME_EDGES", "TIME_LABELS", "WINDOWS", "claims",
           "cycle_queue_lengths", "grid_methods", "job_classes", "job_type_counts",
           "job_type_rows", "parse_grid", "plot_heatmap", "plot_sweep", "queue_lengths_at",
           "reference_methods",
           "shipped_grid", "simulations", "starvation", "visibility", "visibility_means",
           "window_sweep"]
