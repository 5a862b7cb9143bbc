"""Which half of HeraSched does what (issue 17)? Appendix B's grid with one more row, the model's
selector agent, and one more column, its allocator agent: each agent beside the heuristics of the
other half.

    python benchmarks/herasched_halves.py --cluster spartan-deeplearn \\
        [--models MODEL,...] [--periods test,test-high-load] [--selectors fcfs,...|none] \\
        [--jobs N] [--workers 2] [--json FILE]

MODEL: one per training seed (default: the partition's shipped models). A cell of the agent row is
``herasched:MODEL@allocator=A`` (the selector agent picks, heuristic A places); of the agent column
``herasched:MODEL@selector=S`` (heuristic S orders the jobs with HPCsim's backfilling behind its
head, as the grid's cells do, and the allocator agent places every job started); the corner is the
model itself. --selectors names the rows that get an agent-column cell (default: all seven;
``none``: the agent row alone, where HPCsim's backfilling in Python would take hours, as on
Physical's periods). --from-json FILE[,FILE] runs nothing and reports the runs earlier --json
files hold, several files' models together (--models names them, in order). With both options a model runs the grid's cell S + A exactly (tested), so each agent
cell differs from its neighbours in the grid by the one half it names.

Printed per period: the table (AWT / MWT in seconds; an agent cell gives the mean over the models),
then per agent cell each model's MWT, how many of the 21 heuristic cells the mean MWT is below, and
how many the mean S (S = AWT_cell / AWT + MWT_cell / MWT, averaged over the models) is above 2
against, the lowest mean S, and (unshown) how many placements of the allocator agent were of a job
its window did not show, which it was shown in the first slot (all models together). --json writes every run as a row (period, selector, allocator, model, wait, max_wait;
model is empty for a heuristic cell). Last line: name=value pairs. The runs are spread over
--workers processes; the numbers do not depend on it.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from herasched_reserve import _period, submit_grid

AGENT = "agent"


def spec(model: str, selector: str, allocator: str) -> str:
    """The model read with the halves named (`AGENT`: its own)."""
    options = ([] if selector == AGENT else [f"selector={selector}"]) + \
              ([] if allocator == AGENT else [f"allocator={allocator}"])
    return "@".join([model] + options)


def run_one(cluster, split, jobs, spec) -> dict:
    """One model read so on the period: its metrics and its policy's summary (the count of
    placements of jobs the allocator agent's window did not show, under @selector)."""
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.sim.run import simulate

    prepared = _period(cluster, split, jobs)
    policy = resolve_policy(f"herasched:{spec}", prepared)
    result = simulate(prepared, policy, backfill="easy")
    if "unstarted" in result.metrics:
        raise RuntimeError(f"herasched:{spec}: {result.metrics['unstarted']} job(s) never started")
    return {**result.metrics, **policy.summary()}


def read_rows(files, cluster, periods, models, agent_cells, cells) -> dict:
    """The runs of --json files (several: their models together), keyed as `main` keys its own:
    (period, cell, model; "" for a heuristic cell). A heuristic cell two files give differently,
    or a run the report needs and no file gives, is refused."""
    got: dict = {}
    for name in files:
        with open(name) as f:
            for r in json.load(f):
                if r["cluster"] != cluster or r["period"] not in periods:
                    continue
                key = (r["period"], (r["selector"], r["allocator"]), r["model"])
                value = {k: r[k] for k in ("wait", "max_wait", "unshown_placements") if k in r}
                if key in got and got[key] != value:
                    raise SystemExit(f"{name}: {key} is {value}, another file has {got[key]}")
                got[key] = value
    need = [(p, c, "") for p in periods for c in cells] + \
        [(p, c, m) for p in periods for c in agent_cells for m in models]
    missing = [k for k in need if k not in got]
    if missing:
        raise SystemExit(f"--from-json: {len(missing)} run(s) not in the files, the first "
                         f"{missing[0]}")
    return got


def report(cluster, split, models, cells, agent_cells, got) -> None:
    """The period's table, then each agent cell against the 21 heuristic cells."""
    from hpcsched.experiments.herasched_grid import ALLOCATORS, SELECTORS
    from hpcsched.sim.metrics import combined_score

    grid = {c: got[split, c, ""] for c in cells}
    runs = {c: [got[split, c, m] for m in models] for c in agent_cells}
    mean = {c: {k: float(np.mean([r[k] for r in rs])) for k in ("wait", "max_wait")}
            for c, rs in runs.items()}
    print(f"\n{cluster}, {split}, {len(models)} model(s): AWT / MWT (s); a cell with "
          f"an agent: the mean over the models")
    print(f"| selector | {' | '.join(ALLOCATORS)} | {AGENT} (allocator) |")
    print("|---" * (len(ALLOCATORS) + 2) + "|")
    for s in list(SELECTORS) + [AGENT]:
        line = []
        for a in list(ALLOCATORS) + [AGENT]:
            m = grid.get((s, a)) or mean.get((s, a))
            line.append("" if m is None else f"{m['wait']:,.1f} / {m['max_wait']:,.0f}")
        print(f"| {s if s != AGENT else 'agent (selector)'} | {' | '.join(line)} |")
    width = max(44, 9 * len(models))
    print(f"\n{'cell':<24} {'MWT (s) per model':<{width}} {'MWT below':>9} {'S > 2':>6} "
          f"{'lowest mean S':>13} {'unshown':>8}")
    for c in agent_cells:
        mean_s = {h: float(np.mean([combined_score(r, grid[h]) for r in runs[c]]))
                  for h in cells}
        name = "HeraSched" if c == (AGENT, AGENT) else f"{c[0]} + {c[1]}"
        mwts = ", ".join(format(r["max_wait"], ",.0f") for r in runs[c])
        below = sum(grid[h]["max_wait"] > mean[c]["max_wait"] for h in cells)
        known = [r["unshown_placements"] for r in runs[c] if "unshown_placements" in r]
        unshown = str(sum(known)) if len(known) == len(runs[c]) else "-"
        print(f"{name:<24} {mwts:<{width}} {below:>6}/21 {sum(v > 2 for v in mean_s.values()):>3}"
              f"/21 {min(mean_s.values()):>13.3f} {unshown:>8}")


def main() -> None:
    from hpcsched.cli.herasched_eval import _default_models
    from hpcsched.experiments.herasched_grid import ALLOCATORS, SELECTORS
    from hpcsched.workload.hera_periods import PERIODS

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cluster", required=True, choices=sorted(PERIODS))
    ap.add_argument("--models", help="comma-separated (default: the shipped models)")
    ap.add_argument("--periods", default="test,test-high-load")
    ap.add_argument("--selectors", help="the rows given an agent-column cell, comma-separated, "
                                        "or none (default: all seven)")
    ap.add_argument("--jobs", type=int, help="only the first N jobs of each period")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--json", metavar="FILE", help="write every run as a row")
    ap.add_argument("--from-json", metavar="FILE[,FILE]",
                    help="run nothing: report the runs of earlier --json files (several: their "
                         "models together; --models names which, in order)")
    args = ap.parse_args()
    models = args.models.split(",") if args.models else _default_models(args.cluster)
    periods = args.periods.split(",")
    if not models:
        raise SystemExit(f"no model given and none shipped for {args.cluster}")
    with_agent = list(SELECTORS) if args.selectors is None else \
        [] if args.selectors == "none" else args.selectors.split(",")
    unknown = sorted(set(with_agent) - set(SELECTORS))
    if unknown:
        raise SystemExit(f"--selectors: {', '.join(unknown)}: not the grid's (one of "
                         f"{', '.join(SELECTORS)}, or none)")
    cells = [(s, a) for s in SELECTORS for a in ALLOCATORS]
    agent_cells = [(AGENT, a) for a in ALLOCATORS] + [(s, AGENT) for s in with_agent] + \
        [(AGENT, AGENT)]
    t0, cpu0 = time.time(), time.process_time()
    if args.from_json:
        got = read_rows(args.from_json.split(","), args.cluster, periods, models, agent_cells,
                        cells)
    else:
        with ProcessPoolExecutor(args.workers) as pool:
            jobs = {(split, c, ""): f for (split, c), f in
                    submit_grid(pool, args.cluster, periods, args.jobs, models[0]).items()}
            for split in periods:
                for c in agent_cells:
                    for m in models:
                        jobs[split, c, m] = pool.submit(run_one, args.cluster, split, args.jobs,
                                                        spec(m, *c))
            got = {k: f.result() for k, f in jobs.items()}
    rows = [{"cluster": args.cluster, "period": split, "selector": c[0], "allocator": c[1],
             "model": m, "wait": float(r["wait"]), "max_wait": float(r["max_wait"]),
             **({"unshown_placements": int(r["unshown_placements"])}
                if "unshown_placements" in r else {})}
            for (split, c, m), r in got.items()]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    for split in periods:
        report(args.cluster, split, models, cells, agent_cells, got)
    print(f"\nmodels={len(models)} runs={len(got)} wall_s={time.time() - t0:.0f} "
          f"main_cpu_s={time.process_time() - cpu0:.1f} workers={args.workers} "
          f"load={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
