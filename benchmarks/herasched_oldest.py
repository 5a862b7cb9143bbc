"""Where does the longest wait of a HeraSched model go: before its job became the oldest waiting
job, or after (issue 17, `@reserve`)?

    python benchmarks/herasched_oldest.py --cluster spartan-physical --period test-high-load \\
        MODEL[@reserve=AGE] ...

For each model (or grid cell SELECTOR+ALLOCATOR, run under EASY as in the grid) on the whole
period: its AWT and MWT, and for the jobs with the K longest waits (--top, default 5) the split of
each wait into the time until the job became the oldest waiting one (every job submitted before
it had started; ties in submission go by row) and the time it then waited as the oldest. A
reservation for the oldest job can only shorten the second part. Last line: name=value pairs.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def oldest_since(submit: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per job, when it became the oldest waiting job: its submission, or the latest start of the
    jobs submitted before it (by submission, then row), whichever is later; its own start if it
    started before that (passed ahead of an older job)."""
    order = np.lexsort((np.arange(len(submit)), submit))
    before = np.maximum.accumulate(start[order])
    latest = np.empty_like(before)
    latest[0] = -np.inf
    latest[1:] = before[:-1]
    out = np.empty_like(submit, dtype=np.float64)
    out[order] = np.minimum(np.maximum(submit[order], latest), start[order])
    return out


def main() -> None:
    from hpcsched.experiments.herasched_eval import BACKFILL, period_prepared
    from hpcsched.experiments.herasched_grid import selector_policy
    from hpcsched.experiments.policyspec import resolve_policy
    from hpcsched.sim.factory import make_engine
    from hpcsched.sim.run import simulate

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--period", default="test-high-load")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("specs", nargs="+", help="herasched models (MODEL[@reserve=AGE]) or cells "
                                              "SELECTOR+ALLOCATOR")
    args = ap.parse_args()
    prepared = period_prepared(args.cluster, args.period)
    t0, cpu0 = time.time(), time.process_time()
    pairs = {}
    for spec in args.specs:
        if "+" in spec and "/" not in spec:
            sel, alloc = spec.split("+", 1)
            engine = make_engine(prepared.jobs, prepared.cluster, prepared.profile, BACKFILL,
                                 allocator=alloc)
            result = engine.run(selector_policy(sel, prepared.profile.name))
        else:
            result = simulate(prepared, resolve_policy(f"herasched:{spec}", prepared),
                              backfill=BACKFILL)
        submit = np.asarray(result.jobs.submit, dtype=np.float64)
        start = np.asarray(result.start, dtype=np.float64)
        wait = start - submit
        since = oldest_since(submit, start)
        top = np.argsort(-wait, kind="stable")[:args.top]
        print(f"\n{spec} on {args.cluster} {args.period}: AWT {result.metrics['wait']:,.1f} s, "
              f"MWT {result.metrics['max_wait']:,.0f} s")
        print(f"{'job':>10} {'wait (s)':>10} {'before oldest':>14} {'as oldest':>10}")
        for j in top.tolist():
            print(f"{int(result.jobs.job_id[j]):>10} {wait[j]:>10,.0f} "
                  f"{since[j] - submit[j]:>14,.0f} {start[j] - since[j]:>10,.0f}")
        j = int(top[0])
        pairs[spec] = (since[j] - submit[j]) / wait[j] if wait[j] > 0 else 0.0
    print("\n" + " ".join(f"before_share[{k}]={v:.3f}" for k, v in pairs.items())
          + f" wall_s={time.time() - t0:.0f} cpu_s={time.process_time() - cpu0:.0f} "
          f"load={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
