"""The README's DBF sweep tables, recomputed from the runs' logs:
`python benchmarks/dbf_sweep.py [--validations] [ARCHIVE ...]` (default: the two GPU archives in
benchmarks/data).

Each archive holds the run folders' log.csv, config.json and printed output (out.txt) of
`hpcsched train dbf ...` runs: the two GPU archives, `--device cuda` runs made side by side on one
GPU machine (one H100, 16 cores), each stopped by `timeout`; `dbf_cpu_mask_runs.tar.gz`, two CPU
runs on the 2-core machine, stopped by hand, one trained with the mask and one validated through
it (`--mask`, `--validate-masked`). Printed, per run: its settings that differ from the defaults,
the updates done, the median rollout and update seconds, the sampled AWT (the training
episodes' mean wait under the sampled policy) averaged over updates 11-20 and 41-50, and its
greedy validation AWTs (how many, lowest, highest); then the whole archive's throughput. Runs of
the same seed see the same training episodes at the same update (their starts are drawn from
(seed, update)), so their sampled AWTs compare pair by pair.
"""
import argparse
import csv
import io
import json
import tarfile
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
DEFAULT = [HERE / "data" / "dbf_gpu_sweep_short.tar.gz", HERE / "data" / "dbf_gpu_sweep_long.tar.gz"]
#: the settings a run may change, with the default they are compared with
SETTINGS = {"window": 32, "tail": 0, "pi_lr": 3e-4, "ent_coef": 0.01, "target_kl": 0.0,
            "minibatch": 128, "update_epochs": 2, "seed": 0, "mask": False}
#: the run options likewise (config.json's run_options)
RUN_OPTIONS = {"validate_masked": False}


def read_archive(path: Path) -> dict[str, dict]:
    """run name -> {"log": rows, "config": dict, "out": text}."""
    runs: dict[str, dict] = defaultdict(dict)
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if not m.isfile():
                continue
            run, name = m.name.split("/", 1)
            text = t.extractfile(m).read().decode()
            if name == "log.csv":
                runs[run]["log"] = list(csv.DictReader(io.StringIO(text)))
            elif name == "config.json":
                runs[run]["config"] = json.loads(text)
            elif name == "out.txt":
                runs[run]["out"] = text
    return dict(runs)


def mean_of(rows: list[dict], key: str, first: int, last: int) -> float:
    """The mean of `key` over updates first..last (1-based, inclusive); nan when absent."""
    vals = [float(r[key]) for r in rows if first <= int(r["epoch"]) <= last and r[key]]
    return float(np.mean(vals)) if len(vals) == last - first + 1 else float("nan")


def summary(name: str, run: dict) -> dict:
    rows, cfg = run["log"], run["config"]
    vals = [float(r["val_wait"]) for r in rows if r.get("val_wait")]
    changed = {k: cfg[k] for k, v in SETTINGS.items() if cfg.get(k, v) != v}
    opts = cfg.get("run_options", {})
    changed.update({k: opts[k] for k, v in RUN_OPTIONS.items() if opts.get(k, v) != v})
    return {"run": name, "changed": changed, "updates": len(rows),
            "episodes": len(rows) * cfg["trajectories_per_epoch"],
            "decisions": sum(int(r["decisions"]) for r in rows),
            "rollout_s": float(np.median([float(r["rollout_s"]) for r in rows])),
            "update_s": float(np.median([float(r["update_s"]) for r in rows])),
            "awt_11_20": mean_of(rows, "wait", 11, 20), "awt_41_50": mean_of(rows, "wait", 41, 50),
            "validations": len(vals), "val_all": vals, "val_min": min(vals, default=float("nan")),
            "val_max": max(vals, default=float("nan"))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archives", nargs="*", type=Path, default=DEFAULT)
    p.add_argument("--validations", action="store_true",
                   help="also print each run's greedy validation AWTs, in order")
    args = p.parse_args()
    for path in args.archives:
        runs = read_archive(path)
        print(f"\n{path.name}: {len(runs)} runs")
        print(f"{'run':22} {'changed':44} {'upd':>4} {'roll s':>6} {'upd s':>6} "
              f"{'AWT 11-20':>9} {'AWT 41-50':>9} {'val n':>5} {'val min':>9} {'val max':>9}")
        sums = [summary(name, runs[name]) for name in sorted(runs)]
        for s in sums:
            changed = ", ".join(f"{k}={v}" for k, v in s["changed"].items())
            print(f"{s['run']:22} {changed:44} {s['updates']:4d} {s['rollout_s']:6.1f} "
                  f"{s['update_s']:6.1f} {s['awt_11_20']:9,.0f} {s['awt_41_50']:9,.0f} "
                  f"{s['validations']:5d} {s['val_min']:9,.0f} {s['val_max']:9,.0f}")
            if args.validations:
                print("  validations: " + ", ".join(f"{v:,.0f}" for v in s["val_all"]))
        episodes = sum(s["episodes"] for s in sums)
        decisions = sum(s["decisions"] for s in sums)
        ref = [ln for r in runs.values() for ln in r.get("out", "").splitlines()
               if ln.startswith("validation AWT of the heuristics")]
        print(f"in all: {episodes:,} episodes, {decisions:,} decisions")
        if ref:
            print(ref[0])
        tail0 = [float(r["val_wait"]) for name, run in runs.items() if run["config"]["tail"] == 0
                 for r in run["log"] if r.get("val_wait")]
        if tail0:
            print(f"greedy validations of tail-0 runs: {len(tail0)}, "
                  f"{sum(v >= 130_000 for v in tail0)} of them >= 130,000 s; the lowest: "
                  + ", ".join(f"{v:,.0f}" for v in sorted(tail0)[:3]))


if __name__ == "__main__":
    main()
