"""DBF's test protocol on the engine (Wang's thesis Ch. 3): any policy, heuristic or ``dbf:``, run
on DBF's episodes rather than on closed windows.

An episode starts from an empty machine at job `start` of the trace, jobs keep arriving as logged
(the engine holds ``episode_jobs + lookahead`` of them, as `DBFEnv` does), and it ends at the
instant its `episode_jobs`-th job starts (with backfilling several may start at that instant);
its metrics are `sim.metrics.interval_metrics` from the first decision to that instant, the
numbers `DBFEnv` puts in ``info["metrics"]``. A ``dbf:`` policy run so gives exactly the env's
schedule (tests/agents/test_dbf_agent.py). Starts: `workload.windows.dbf_starts`.

    rows = compare_episodes(prepared, [("fcfs", fcfs), ("dbf:m", policy)], ["none", "easy"],
                            dbf_starts(prepared, "test", 100), episode_jobs=1000)
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

#: the metrics of an episode, in the order rows show them
EPISODE_METRICS = ("wait", "bsld", "utilization", "queue_length", "job_load", "jobs")


def run_episode(prepared, policy, start: int, *, episode_jobs: int = 1000,
                lookahead: int | None = None, backfill: str = "none") -> dict[str, float]:
    """`policy` on the DBF episode of `prepared` starting at job `start`: its metrics (the
    episode itself, its schedule cut at the `episode_jobs`-th start: `experiments.dbf.run_episode`)."""
    from hpcsched.experiments import dbf

    n = len(prepared.jobs)
    if not 0 <= start <= n - episode_jobs:
        raise ValueError(f"an episode of {episode_jobs} jobs starts in [0, {n - episode_jobs}], "
                         f"not at {start}")
    return dbf.run_episode(prepared, policy, start, backfill=backfill, episode_jobs=episode_jobs,
                           lookahead=lookahead).metrics()


def compare_episodes(prepared, policies: Sequence[tuple[str, object]], backfills: Sequence[str],
                     starts: Sequence[int], *, episode_jobs: int = 1000,
                     progress: Callable[[int], None] | None = None) -> list[dict]:
    """One flat row per (policy, backfilling): trace, policy, backfill, episodes, jobs, the
    mean of each episode metric over the episodes from `starts` (`progress(1)` after each), and
    how the episodes' AWTs spread: `wait_median` and `wait_worst` (the largest), since a few
    episodes of a long queue can carry the mean."""
    rows = []
    for label, policy in policies:
        for backfill in backfills:
            runs = []
            for s in starts:
                runs.append(run_episode(prepared, policy, int(s), episode_jobs=episode_jobs,
                                        backfill=backfill))
                if progress:
                    progress(1)
            row = {"trace": prepared.name, "profile": prepared.profile.name, "policy": label,
                   "backfill": backfill, "episodes": len(starts), "jobs": episode_jobs}
            row.update({k: float(np.mean([r[k] for r in runs])) for k in EPISODE_METRICS})
            waits = [r["wait"] for r in runs]
            row.update(wait_median=float(np.median(waits)), wait_worst=float(np.max(waits)))
            rows.append(row)
    return rows


__all__ = ["EPISODE_METRICS", "compare_episodes", "run_episode"]
