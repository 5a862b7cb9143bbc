"""DBF over three training seeds on the 2-core machine (issue 16): the runs' training facts from
their logs, and their best.pt on the 100 test episodes beside the heuristics, from the saved rows.

    python benchmarks/dbf_seeds.py [ARCHIVE] [--rows ROWS.json]
    python benchmarks/dbf_seeds.py benchmarks/data/dbf_window_seeds.tar.gz \
        --rows benchmarks/data/dbf_window_seeds_test.json

ARCHIVE (default benchmarks/data/dbf_m32_seeds.tar.gz) holds each run's log.csv, config.json and
printed output (out.txt) of `hpcsched train dbf ...` (M = 32, tail 4, lr 1e-4, entropy 0.001,
validated through the mask, seeds 0, 1, 2; each stopped after 120 updates; or, in
dbf_window_seeds.tar.gz, the split-window grid: M = 8, 10, 16 and 20 without a tail and with
one tail slot, and 10 all tail, three seeds each, stopped after the same number of updates).
Printed per run: its
seed, updates, episodes, decisions, the updates' wall time (log.csv's epoch_s summed, validation
excluded), the sampled AWT (training episodes, sampled actions) over the first and last ten
updates, every greedy validation (through the mask) in order, and best.pt's update and AWT, the
lowest. ROWS (default benchmarks/data/dbf_m32_seeds_test.json) is the `--json` output of
`hpcsched experiment dbf-baselines` with the three best.pt files as one method over seeds, or of
`hpcsched experiment dbf-window-sweep` with each grid entry's three files; from it the table of
the methods on the test episodes (and the sweep's jobs of more than 128 cores) and the thesis's
facts, as the experiment judges them. Last line: `name=value` pairs.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from dbf_sweep import read_archive  # noqa: E402  (the archives' one reader)

ARCHIVE = HERE / "data" / "dbf_m32_seeds.tar.gz"
ROWS = HERE / "data" / "dbf_m32_seeds_test.json"


def run_facts(name: str, run: dict) -> dict:
    """One run's training facts from its log.csv and config.json."""
    rows, cfg = run["log"], run["config"]
    vals = [(int(r["epoch"]), float(r["val_wait"])) for r in rows if r.get("val_wait")]
    best_epoch, best = min(vals, key=lambda v: (v[1], v[0]))
    waits = [float(r["wait"]) for r in rows]
    return {"run": name, "seed": cfg["seed"], "updates": len(rows),
            "episodes": len(rows) * cfg["trajectories_per_epoch"],
            "decisions": sum(int(r["decisions"]) for r in rows),
            "wall_s": sum(float(r["epoch_s"]) for r in rows),
            "wall_to_best_s": sum(float(r["epoch_s"]) for r in rows
                                  if int(r["epoch"]) <= best_epoch),
            "rollout_s": float(np.median([float(r["rollout_s"]) for r in rows])),
            "update_s": float(np.median([float(r["update_s"]) for r in rows])),
            "sampled_first10": float(np.mean(waits[:10])),
            "sampled_last10": float(np.mean(waits[-10:])),
            "validations": vals, "best_epoch": best_epoch, "best": best}


def reference_line(runs: dict) -> str:
    """The heuristics' validation AWT as the runs printed it (the same in each run)."""
    lines = {ln for r in runs.values() for ln in r.get("out", "").splitlines()
             if ln.startswith("validation AWT of the heuristics")}
    if len(lines) != 1:
        raise ValueError(f"the runs disagree on the heuristics' validation AWT: {sorted(lines)}")
    return lines.pop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archive", nargs="?", type=Path, default=ARCHIVE)
    p.add_argument("--rows", type=Path, default=ROWS)
    p.add_argument("--only", default="", metavar="NAME,...",
                   help="only these runs (a run's name, or a window's prefix: w10-0 for its "
                        "seeds) to show those that ran together and their decisions per second "
                        "together")
    args = p.parse_args()
    runs = read_archive(args.archive)
    if args.only:
        runs = {n: r for n, r in runs.items()
                if any(n == k or n.startswith(f"{k}-s") for k in args.only.split(","))}
    facts = [run_facts(n, runs[n]) for n in sorted(runs)]
    print(f"{args.archive.name}: {len(facts)} runs")
    print(reference_line(runs))
    for f in facts:
        print(f"\n{f['run']} (seed {f['seed']}): {f['updates']} updates, "
              f"{f['episodes']:,} episodes, {f['decisions']:,} decisions, "
              f"{f['wall_s']:,.0f} s of updates "
              f"({f['wall_to_best_s']:,.0f} s to best.pt)")
        print(f"  an update (median): rollout {f['rollout_s']:.1f} s, "
              f"update {f['update_s']:.1f} s; {f['decisions'] / f['wall_s']:,.0f} decisions/s")
        print(f"  sampled AWT, first 10 updates {f['sampled_first10']:,.0f} s, last 10 "
              f"{f['sampled_last10']:,.0f} s")
        print("  validations (through the mask): "
              + ", ".join(f"{e}: {v:,.0f}" for e, v in f["validations"]))
        print(f"  best.pt: update {f['best_epoch']}, validation AWT {f['best']:,.0f} s")
    total, longest = sum(f["decisions"] for f in facts), max(f["wall_s"] for f in facts)
    print(f"\nall {len(facts)} runs: {total:,} decisions in {longest:,.0f} s (the longest run's "
          f"updates): {total / longest:,.0f} decisions/s together")
    if len({f["seed"] for f in facts}) == len(facts):  # one configuration: by seed
        pairs = {f"best_s{f['seed']}": round(f["best"]) for f in facts}
        pairs["best_mean"] = round(float(np.mean([f["best"] for f in facts])))
    else:  # a grid of configurations: by run
        pairs = {f"best_{f['run']}": round(f["best"]) for f in facts}
    pairs["updates"] = ",".join(str(f["updates"]) for f in facts)
    if args.rows.exists():
        saved = json.loads(args.rows.read_text())
        show = print_sweep if _is_sweep(saved) else print_baselines
        pairs.update(show(saved, args.rows.name))
    print("\n" + " ".join(f"{k}={v}" for k, v in pairs.items()))


def _is_sweep(rows: list[dict]) -> bool:
    return bool(rows) and "table" in rows[0]


def _per_seed(r: dict, key: str, digits: int) -> str:
    each = r.get(f"{key}_per_seed") or []
    return ", ".join(f"{x:,.{digits}f}" for x in each)


def _sd(r: dict, key: str, spec: str, width: int) -> str:
    """A row's KEY_sd in `spec`, or blanks of `width` for a row of one seed."""
    return format(r[f"{key}_sd"], spec) if r.get(f"{key}_sd") is not None else " " * width


def print_baselines(rows: list[dict], name: str) -> dict:
    """dbf-baselines' rows sorted by AWT (seeds' mean, sd and each) and Fig. 3.4's facts;
    returns name=value pairs of the method over seeds."""
    from hpcsched.experiments.dbf import claims, sort_by_wait

    rows = sort_by_wait(rows)
    print(f"\n{name}: {rows[0]['episodes']} test episodes, sorted by AWT")
    print(f"{'method':26} {'backfill':8} {'AWT':>8} {'sd':>6} {'queue':>6} {'sd':>5} "
          f"{'util':>6}  per seed (AWT; queue)")
    for r in rows:
        seeds = (f"{_per_seed(r, 'wait', 0)}; {_per_seed(r, 'queue_length', 1)}"
                 if r.get("wait_per_seed") else "")
        print(f"{r['method']:26} {r['backfill']:8} {r['wait']:8,.0f} {_sd(r, 'wait', '6,.0f', 6)} "
              f"{r['queue_length']:6.1f} {_sd(r, 'queue_length', '5.1f', 5)} "
              f"{r['utilization']:6.3f}  {seeds}")
    print("\nthe thesis's facts, on these rows:")
    for c in claims(rows):
        print(f"- {c.line()}")
    model = next(r for r in rows if r.get("wait_per_seed"))
    return dict(test_wait=round(model["wait"]), test_wait_sd=round(model["wait_sd"]),
                test_queue=round(model["queue_length"], 1))


def print_sweep(rows: list[dict], name: str) -> dict:
    """The window sweep's rows: AWT and queue per configuration (seeds' mean, sd and each),
    the jobs of more than 128 cores, and the split-window facts; returns name=value pairs."""
    from hpcsched.experiments.dbf_window import claims_of

    windows = [r for r in rows if r["table"] == "windows"]
    starve = [r for r in rows if r["table"] == "starvation"]
    print(f"\n{name}: {windows[0]['episodes']} test episodes")
    print(f"{'method':12} {'M':>3} {'tail':>4} {'AWT':>8} {'sd':>6} {'queue':>6} {'sd':>5} "
          f"{'invis':>6}  per seed (AWT; queue)")
    for r in windows:
        tail = "-" if r.get("tail") is None else r["tail"]
        print(f"{r['method']:12} {r['window']:3} {tail:>4} {r['wait']:8,.0f} "
              f"{_sd(r, 'wait', '6,.0f', 6)} {r['queue_length']:6.1f} "
              f"{_sd(r, 'queue_length', '5.1f', 5)} {r['invisible']:6.2f}  "
              f"{_per_seed(r, 'wait', 0)}; {_per_seed(r, 'queue_length', 1)}")
    print("\njobs of more than 128 cores (all episodes of all seeds):")
    for r in starve:
        each = ", ".join(f"{100 * x:.1f}%" for x in r.get("big_not_placed_per_seed") or [])
        print(f"{r['method']:12} arrived {r['big_arrived']:6,} placed {r['big_placed']:6,} "
              f"not placed {100 * r['big_not_placed']:5.1f}%" + (f" (per seed {each})"
                                                                    if each else ""))
    print("\nthe thesis's facts, on these rows:")
    for c in claims_of(windows, starve):
        print(f"- {c.line()}")
    pairs = {}
    for r in windows:
        if r.get("kind") == "model":
            pairs[f"wait_{r['method']}"] = round(r["wait"])
            pairs[f"queue_{r['method']}"] = round(r["queue_length"], 1)
    return pairs


if __name__ == "__main__":
    main()
