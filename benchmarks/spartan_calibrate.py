"""How the Spartan-like generator's offered loads were chosen, and how well its traces match the
thesis: the average and maximum wait of the thesis's reference cell on generated traces, beside the
thesis's numbers, over several seeds, under the `hpcsim` profile (the thesis's simulator) and
`standard`.

    python benchmarks/spartan_calibrate.py                     # every model, seeds 1-10
    python benchmarks/spartan_calibrate.py --models physical --seeds 1-3 --loads 0.9,0.94,1.0

Reference cells (thesis Appendix B; Sapphire: Ch. 6's best cell, the only Sapphire numbers):
Physical week, Table B.1, FCFS + EASY + best-fit 2,098 / 81,105 s; Deeplearn year, B.2, 1,361 /
55,885 s; Physical high-load day, B.3, 1,237 / 64,032 s; Deeplearn high-load day, B.4, 15,949 /
38,269 s; Sapphire 6 days, UNICEP + EASY + first-available, 1,436 / 20,560 s. Each model's offered
load (`hpcsched.workload.spartan.MODELS`) is the one whose geometric mean AWT over seeds 1-10 under
`hpcsim` is closest to its cell's AWT; `--loads` tries others. Sapphire runs on the bundled
`spartan-sapphire` cluster where it exists, else on 52 identical nodes of 128 cores and 977,000 MB.

Prints one table row per (model, load, profile): AWT and MWT, geometric mean / min / max over the
seeds, and the seed-1 calibration table (`hpcsched trace stats` shows the same); as its last line,
`name=value` pairs.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from hpcsched.cluster.load import BUNDLED_CLUSTERS
from hpcsched.cluster.nodes import Cluster
from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import prepare, simulate
from hpcsched.workload.spartan import MODELS, generate
from hpcsched.workload.spartan_targets import WAIT_TARGETS, calibration, format_calibration

CASES = {  # name: (model, high-load day, thesis MWT)
    "physical": ("spartan-physical", False, 81105),
    "deeplearn": ("spartan-deeplearn", False, 55885),
    "physical-high-load": ("spartan-physical", True, 64032),
    "deeplearn-high-load": ("spartan-deeplearn", True, 38269),
    "sapphire": ("spartan-sapphire", False, 20560),
}


def cluster_for(model: str):
    if model in BUNDLED_CLUSTERS:
        return model
    m = MODELS[model]
    (kind,) = m.kinds
    return Cluster.identical(kind.count, kind.cores, kind.memory_mb)


def seeds_arg(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def gmean(x) -> float:
    return float(math.exp(np.mean(np.log(np.maximum(x, 1.0)))))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(CASES),
                    help=f"comma-separated among {', '.join(CASES)}")
    ap.add_argument("--seeds", type=seeds_arg, default=list(range(1, 11)))
    ap.add_argument("--loads", help="comma-separated offered loads to try (default: the model's)")
    ap.add_argument("--profiles", default="hpcsim,standard")
    ap.add_argument("--quiet", action="store_true", help="no calibration tables")
    a = ap.parse_args(argv)
    pairs = {}
    print(f"{'case':<20} {'load':>5} {'profile':<9} {'AWT gmean':>9} {'min':>7} {'max':>7} "
          f"{'thesis':>7} {'MWT gmean':>10} {'thesis':>7}  cpu s")
    for case in a.models.split(","):
        model, high, thesis_mwt = CASES[case]
        thesis_awt, policy, allocator, _ = WAIT_TARGETS[(model, high)]
        m = MODELS[model]
        loads = ([float(x) for x in a.loads.split(",")] if a.loads else
                 [m.high_load_offered_load if high else m.offered_load])
        cluster = cluster_for(model)
        for load in loads:
            traces = [generate(model, seed=s, high_load_day=high, load=load) for s in a.seeds]
            if not a.quiet:
                print(f"\n{case}, load {load:g}, seed {a.seeds[0]}: {traces[0].summary()}")
                print(format_calibration(calibration(traces[0].jobs, model,
                                                     high_load_day=high)))
                print()
            for profile in a.profiles.split(","):
                awt, mwt = [], []
                t0 = time.process_time()
                for trace in traces:
                    prepared = prepare(trace.jobs, profile, cluster=cluster, allocator=allocator)
                    heuristic = get_policy(policy, dialect="hpcsim" if profile == "hpcsim"
                                           else "")
                    result = simulate(prepared, heuristic, backfill="easy")
                    awt.append(result.metrics["wait"])
                    mwt.append(result.metrics["max_wait"])
                cpu = time.process_time() - t0
                print(f"{case:<20} {load:>5g} {profile:<9} {gmean(awt):>9.0f} {min(awt):>7.0f} "
                      f"{max(awt):>7.0f} {thesis_awt:>7.0f} {gmean(mwt):>10.0f} "
                      f"{thesis_mwt:>7}  {cpu:.0f}", flush=True)
                key = f"{case}_{profile}_{load:g}"
                pairs[f"{key}_awt"] = round(gmean(awt))
                pairs[f"{key}_awt_ratio"] = round(gmean(awt) / thesis_awt, 3)
                pairs[f"{key}_mwt"] = round(gmean(mwt))
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))


if __name__ == "__main__":
    main()
