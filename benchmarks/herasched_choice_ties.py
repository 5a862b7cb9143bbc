"""Would choosing best.pt over tie draws choose better (issue 17)? The ten validated checkpoints
of each of the three Deeplearn runs of "Which checkpoint" (benchmarks/data/herasched_choice_sS)
scored on the validation period (its first 5,000 jobs, as the runs validated) and on both
held-out periods, on the period as generated and over 1 + K schedules with the run times of jobs
alike dealt again (`experiment herasched --tie-draws K`), each by S against FCFS + best-fit.

    python benchmarks/herasched_choice_ties.py --json choice.json      # the runs (~25 min)
    python benchmarks/herasched_choice_ties.py --from benchmarks/data/herasched_ties/choice.json

Printed per seed, both held-out periods judged on their K + 1 schedules: the checkpoint the
validation S of one schedule keeps and the one its mean over K + 1 schedules keeps, each with
its test and high-load S; and Spearman's rank correlation of each validation score with the
test S and with the high-load day's S over the ten checkpoints.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from herasched_choice import spearman  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SEEDS = (0, 1, 2)
SPLITS = {"validation": 5000, "test": None, "test-high-load": None}
KEEP = ("policy", "allocator", "kind", "wait", "max_wait", "max_wait_draws")
REFERENCE = ("fcfs", "best-fit")


def run(draws: int) -> dict:
    """{"as-generated" | "tie-draws-K": {"sS": {split: slim rows}}}."""
    from hpcsched.experiments.herasched_eval import evaluate_tie_draws, period_prepared

    out = {}
    for key, k in (("as-generated", 0), (f"tie-draws-{draws}", draws)):
        for seed in SEEDS:
            folder = f"benchmarks/data/herasched_choice_s{seed}"
            snaps = [f"{folder}/snap-{u}.pt" for u in range(10, 101, 10)]
            for split, jobs in SPLITS.items():
                prepared = period_prepared("spartan-deeplearn", split, jobs)
                ev = evaluate_tie_draws(prepared, snaps, cluster="spartan-deeplearn",
                                        period=split, draws=k)
                rows = [{f: r[f] for f in KEEP if f in r} for r in ev.rows()
                        if r["policy"] != "herasched"]
                out.setdefault(key, {}).setdefault(f"s{seed}", {})[split] = rows
                print(f"{key} seed {seed} {split}: done", file=sys.stderr, flush=True)
    return out


def scores(rows: list[dict]) -> dict[int, float]:
    """{update: S against FCFS + best-fit} of the checkpoints' rows."""
    from hpcsched.sim.metrics import combined_score

    ref = next(r for r in rows if (r["policy"], r["allocator"]) == REFERENCE)
    return {int(r["policy"].rsplit("snap-", 1)[1].removesuffix(".pt")): combined_score(r, ref)
            for r in rows if r["kind"] == "herasched"}


def table(data: dict) -> list[dict]:
    drawn = next(k for k in data if k.startswith("tie-draws-"))
    out = []
    for seed in SEEDS:
        one = scores(data["as-generated"][f"s{seed}"]["validation"])
        many = scores(data[drawn][f"s{seed}"]["validation"])
        test = scores(data[drawn][f"s{seed}"]["test"])
        high = scores(data[drawn][f"s{seed}"]["test-high-load"])
        updates = sorted(one)
        by_one = max(updates, key=lambda u: one[u])  # the first of the highest, as training keeps
        by_many = max(updates, key=lambda u: many[u])
        out.append({
            "seed": seed, "by_one": by_one, "by_many": by_many,
            "one": (test[by_one], high[by_one]), "many": (test[by_many], high[by_many]),
            "rho_test": (spearman([one[u] for u in updates], [test[u] for u in updates]),
                         spearman([many[u] for u in updates], [test[u] for u in updates])),
            "rho_high": (spearman([one[u] for u in updates], [high[u] for u in updates]),
                         spearman([many[u] for u in updates], [high[u] for u in updates])),
            "validation_one": one})
    return out


def lines(data: dict) -> list[str]:
    drawn = next(k for k in data if k.startswith("tie-draws-"))
    n = int(drawn.rsplit("-", 1)[1]) + 1
    out = [f"| seed | best.pt by one validation schedule: update: test S, high-load S | by {n} "
           f"schedules | correlation with test S: one, {n} | with the high-load day's S |",
           "|---|---|---|---|---|"]
    for t in table(data):
        out.append(f"| {t['seed']} | {t['by_one']}: {t['one'][0]:.2f}, {t['one'][1]:.2f} | "
                   f"{t['by_many']}: {t['many'][0]:.2f}, {t['many'][1]:.2f} | "
                   f"{t['rho_test'][0]:+.2f}, {t['rho_test'][1]:+.2f} | "
                   f"{t['rho_high'][0]:+.2f}, {t['rho_high'][1]:+.2f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=9, help="K, the shuffled copies (default 9)")
    ap.add_argument("--json", help="write the rows here (with the runs)")
    ap.add_argument("--from", dest="source", help="read stored rows instead of running")
    args = ap.parse_args()
    if args.source:
        data = json.loads(Path(args.source).read_text())
    else:
        data = run(args.draws)
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=0) + "\n")
    print("\n".join(lines(data)))
    t = table(data)
    print(f"mean correlation with test S: one {np.mean([x['rho_test'][0] for x in t]):+.2f}, "
          f"many {np.mean([x['rho_test'][1] for x in t]):+.2f}; with the high-load day's: one "
          f"{np.mean([x['rho_high'][0] for x in t]):+.2f}, many "
          f"{np.mean([x['rho_high'][1] for x in t]):+.2f}")


if __name__ == "__main__":
    main()
