"""RLScheduler's (SC'20) evaluation protocol: 10 windows of 1024 jobs from the first 10,000 of each
trace (the paper's own draw), the same windows for every scheduler, mean over the windows.

- `table5`: bsld of the heuristics and of the trained models, without and with backfilling, on
  Lublin-1, Lublin-2 and HPC2N (the paper's Table V). The heuristics run twice: under the
  `rlscheduler` profile with the code's WFP3/UNICEP (which reproduces the paper to the printed
  precision), and under the `standard` profile with correct WFP3/UNICEP and textbook EASY. The models
  run under the profile they were trained with (`rlscheduler`).
- `table7`: every bsld model applied to every trace, CTC-SP2 included (Table VII).
- `table8`: per-user fairness on HPC2N, the largest per-user mean bsld (Table VIII).

Rows are flat (trace, policy, backfill, source, the metric keys), the project's convention; `pivot`
lays them out as the paper's tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

from hpcsched.experiments.compare import compare
from hpcsched.experiments.policyspec import PRETRAINED, resolve_policy
from hpcsched.recipes import in_folder
from hpcsched.sim.run import prepare
from hpcsched.workload.windows import paper_windows

HEURISTICS = ("FCFS", "WFP3", "UNICEP", "SJF", "F1")
TRACES = ("lublin-1", "lublin-2", "hpc2n")
CROSS_TRACES = ("lublin-1", "lublin-2", "hpc2n", "ctc-sp2")

#: Table V of the paper, heuristic columns (trace, backfilling) -> FCFS, WFP3, UNICEP, SJF, F1; and RL
TABLE_V = {
    ("lublin-1", False): ((7273.77, 19753.53, 22274.74, 277.35, 258.37), 254.67),
    ("lublin-1", True): ((235.82, 133.87, 307.23, 73.31, 75.07), 58.64),
    ("lublin-2", False): ((7842.47, 9523.18, 11265.31, 787.89, 698.34), 724.51),
    ("lublin-2", True): ((247.61, 318.35, 379.59, 91.99, 148.25), 118.79),
    ("hpc2n", False): ((297.18, 426.99, 609.77, 157.71, 118.01), 117.01),
    ("hpc2n", True): ((127.38, 97.39, 175.12, 122.04, 71.95), 86.14),
}
#: the paper's SDSC-SP2 rows exist too, but that trace could not be obtained (traces/SOURCES.md)

#: Table VII: (trace Y, backfilling) -> RL-Lublin-1, RL-HPC2N, RL-Lublin-2 applied to Y (the
#: paper's RL-SDSC-SP2 column is left out: no SDSC-SP2 here; nor is ANL Intrepid)
TABLE_VII = {
    ("lublin-1", False): (254.67, 283.00, 334.73),
    ("hpc2n", False): (169.91, 186.42, 236.00),
    ("lublin-2", False): (665.49, 648.52, 724.51),
    ("lublin-1", True): (58.64, 54.65, 64.45),
    ("hpc2n", True): (115.93, 115.79, 144.54),
    ("lublin-2", True): (172.15, 139.80, 118.79),
}

#: Table VIII, HPC2N: max over users of their mean bsld; FCFS, WFP3, UNICEP, SJF, F1, RL
TABLE_VIII = {
    ("hpc2n", False): ((2058, 5107, 5145, 1255, 1310), 1147),
    ("hpc2n", True): ((1502, 2125, 2081, 1491, 583), 519),
}

#: how each heuristic column is computed under each profile
AS_CODED = {"FCFS": "fcfs", "WFP3": "wfp3-rls", "UNICEP": "unicep-rls", "SJF": "sjf", "F1": "f1"}
CORRECT = {"FCFS": "fcfs", "WFP3": "wfp3", "UNICEP": "unicep", "SJF": "sjf", "F1": "f1"}
BACKFILL = {"rlscheduler": "schedgym", "standard": "easy"}


def model_name(trace: str, metric: str = "bsld", backfilling: bool = False) -> str:
    """The name of a shipped model: ``hpc2n-bsld``, ``lublin-1-bsld-backfill``, ..."""
    return f"{trace}-{metric}" + ("-backfill" if backfilling else "")


def model_spec(name: str, models: str | Path | None = None) -> str:
    """`rl:pretrained/NAME`, or the model called NAME in folder `models` (NAME.pt, or a run folder
    NAME/: its best.pt, or its model.pt before its first validation)."""
    if models is None or Path(models).resolve() == PRETRAINED:
        return f"rl:pretrained/{name}"
    path = in_folder(models, name)
    if path is None:
        raise ValueError(f"no model {name!r} in {models} (looked for {name}.pt and a run folder "
                         f"{name}/ holding best.pt or model.pt)")
    return f"rl:{path}"


def _windows(prepared, windows: int, jobs: int, first: int) -> list[int]:
    return paper_windows(first=min(first, len(prepared.jobs)), count=windows, length=jobs)


def _run(prepared, labelled: Sequence[tuple[str, str]], backfill: str, starts, jobs: int,
         source: str, progress) -> list[dict]:
    """Rows of `compare` for (label, policy spec) pairs, tagged with `source`."""
    policies = [(label, resolve_policy(spec, prepared)) for label, spec in labelled]
    rows = compare(prepared, policies, [backfill], starts, jobs, progress=progress)
    for r in rows:
        r["source"] = source
    return rows


def _paper_rows(trace: str, backfill: str, names: dict[str, float], key: str) -> list[dict]:
    return [{"trace": trace, "policy": p, "backfill": backfill, "source": "paper", key: v}
            for p, v in names.items()]


def table5(traces: Iterable[str] = TRACES, *, models: str | Path | None = None,
           with_models: bool = True, windows: int = 10, jobs: int = 1024, first: int = 10000,
           progress: Callable[[int], None] | None = None) -> list[dict]:
    """Rows for Table V: source "paper" (bsld only), "rlscheduler" (the heuristics as coded and the
    models, under SchedGym's semantics) and "standard" (correct heuristics, textbook EASY)."""
    rows = []
    for trace in traces:
        for profile in ("rlscheduler", "standard"):
            prep = prepare(trace, profile)
            starts = _windows(prep, windows, jobs, first)
            for backfilling in (False, True):
                backfill = BACKFILL[profile] if backfilling else "none"
                names = AS_CODED if profile == "rlscheduler" else CORRECT
                labelled = [(names[c], names[c]) for c in HEURISTICS]
                if profile == "rlscheduler":
                    if (trace, backfilling) in TABLE_V:
                        heur, rl = TABLE_V[(trace, backfilling)]
                        paper = dict(zip((AS_CODED[c] for c in HEURISTICS), heur))
                        paper["rl"] = rl
                        rows += _paper_rows(trace, backfill, paper, "bsld")
                    if with_models:
                        spec = model_spec(model_name(trace, "bsld", backfilling), models)
                        labelled.append((spec, spec))
                rows += _run(prep, labelled, backfill, starts, jobs, profile, progress)
    return rows


def table7(traces: Iterable[str] = CROSS_TRACES, model_traces: Iterable[str] = CROSS_TRACES, *,
           models: str | Path | None = None, windows: int = 10, jobs: int = 1024,
           first: int = 10000, progress: Callable[[int], None] | None = None) -> list[dict]:
    """Rows for Table VII: on each trace, the heuristics (as coded) and every trace's bsld model
    (the one trained without backfilling for the rows without, and with for the rows with)."""
    rows = []
    model_traces = list(model_traces)
    for trace in traces:
        prep = prepare(trace, "rlscheduler")
        starts = _windows(prep, windows, jobs, first)
        for backfilling in (False, True):
            backfill = BACKFILL["rlscheduler"] if backfilling else "none"
            if (trace, backfilling) in TABLE_VII:
                paper = {f"rl:pretrained/{model_name(t, 'bsld', backfilling)}": v for t, v in
                         zip(("lublin-1", "hpc2n", "lublin-2"), TABLE_VII[(trace, backfilling)])}
                rows += _paper_rows(trace, backfill, paper, "bsld")
            labelled = [(AS_CODED[c], AS_CODED[c]) for c in HEURISTICS]
            labelled += [(f"rl:pretrained/{model_name(t, 'bsld', backfilling)}",
                          model_spec(model_name(t, "bsld", backfilling), models))
                         for t in model_traces]
            rows += _run(prep, labelled, backfill, starts, jobs, "rlscheduler", progress)
    return rows


def table8(trace: str = "hpc2n", *, models: str | Path | None = None, windows: int = 10,
           jobs: int = 1024, first: int = 10000,
           progress: Callable[[int], None] | None = None) -> list[dict]:
    """Rows for Table VIII: the heuristics and the fairness models on `trace`; the column that
    matters is `max_user_bsld` (the largest per-user mean bsld)."""
    rows = []
    prep = prepare(trace, "rlscheduler")
    starts = _windows(prep, windows, jobs, first)
    for backfilling in (False, True):
        backfill = BACKFILL["rlscheduler"] if backfilling else "none"
        if (trace, backfilling) in TABLE_VIII:
            heur, rl = TABLE_VIII[(trace, backfilling)]
            paper = dict(zip((AS_CODED[c] for c in HEURISTICS), heur))
            paper[f"rl:pretrained/{model_name(trace, 'fairness', backfilling)}"] = rl
            rows += _paper_rows(trace, backfill, paper, "max_user_bsld")
        labelled = [(AS_CODED[c], AS_CODED[c]) for c in HEURISTICS]
        label = f"rl:pretrained/{model_name(trace, 'fairness', backfilling)}"
        labelled.append((label, model_spec(model_name(trace, "fairness", backfilling), models)))
        rows += _run(prep, labelled, backfill, starts, jobs, "rlscheduler", progress)
    return rows


def simulations(experiment: str, windows: int = 10, with_models: bool = True) -> int:
    """How many windows an experiment simulates (for its progress bar)."""
    per = {"rlscheduler-table5": len(TRACES) * 2 * (2 * len(HEURISTICS) + int(with_models)),
           "rlscheduler-table7": len(CROSS_TRACES) * 2 * (len(HEURISTICS) + len(CROSS_TRACES)),
           "rlscheduler-table8": 2 * (len(HEURISTICS) + 1)}
    return per[experiment] * windows


def column(policy: str) -> str:
    """The paper's column a policy belongs to: a heuristic's name, or RL for a model."""
    for c in HEURISTICS:
        if policy in (AS_CODED[c], CORRECT[c]):
            return c
    if policy == "rl" or policy.startswith("rl:"):
        return "RL"
    return policy


def pivot(rows: list[dict], key: str = "bsld", columns: Callable[[str], str] = column
          ) -> list[dict]:
    """One row per (trace, backfilling, source) with a column per scheduler: the paper's layout."""
    out: dict[tuple, dict] = {}
    for r in rows:
        if key not in r:
            continue
        backfilling = "no" if r["backfill"] == "none" else "yes"
        k = (r["trace"], backfilling, r["source"])
        row = out.setdefault(k, {"trace": r["trace"], "backfilling": backfilling,
                                 "source": r["source"]})
        row[columns(r["policy"])] = r[key]
    order = {"paper": 0, "rlscheduler": 1, "standard": 2}
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    return sorted(out.values(), key=lambda r: (traces.index(r["trace"]), r["backfilling"],
                                               order.get(r["source"], 9)))


def verdicts(rows: list[dict], key: str = "bsld", source: str = "rlscheduler",
             learned: Callable[[str], bool] = lambda p: p.startswith("rl:")) -> list[dict]:
    """Per (trace, backfilling): each learned policy against the best and worst heuristic of our own
    run (lower `key` is better): ratio to the best, whether it beats the best, and whether it is
    worse than the worst."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("source") == source and key in r:
            groups.setdefault((r["trace"], r["backfill"]), []).append(r)
    out = []
    for (trace, backfill), group in groups.items():
        heur = [r for r in group if not learned(r["policy"])]
        if not heur:
            continue
        best = min(heur, key=lambda r: r[key])
        worst = max(heur, key=lambda r: r[key])
        for r in group:
            if learned(r["policy"]):
                out.append({"trace": trace, "backfill": backfill, "policy": r["policy"],
                            key: r[key], "best_heuristic": best["policy"], "best": best[key],
                            "worst_heuristic": worst["policy"], "worst": worst[key],
                            "ratio_to_best": r[key] / best[key],
                            "beats_best": r[key] < best[key],
                            "worse_than_worst": r[key] > worst[key]})
    return out


__all__ = ["AS_CODED", "CORRECT", "CROSS_TRACES", "HEURISTICS", "TABLE_V", "TABLE_VII",
           "TABLE_VIII", "TRACES", "column", "simulations", "model_name", "model_spec", "pivot", "table5",
           "table7", "table8", "verdicts"]
