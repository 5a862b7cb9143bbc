"""SchedInspector's view of one run under a base heuristic (spec schedinspector.md sections 3-5):
the job the base proposes, each job's rejections, and the features the inspector observes, all
read from the engine's view. The environment (`envs.inspector.InspectEnv`) and the `inspect:`
policy (`agents.inspector_policy.InspectedPolicy`) share it, so that training and evaluation see
the same thing."""

from __future__ import annotations

import numpy as np

from hpcsched.envs.observation import check_choice
from hpcsched.envs.pick_job import METRICS as PICK_METRICS
from hpcsched.sim.decisions import Pick, Wait

ACCEPT, REJECT = 0, 1
MAX_INTERVAL = 600.0  # seconds a rejection waits at most (the paper's MAX_INTERVAL)
MAX_REJECTIONS = 72  # per job: 72 x 600 s = 12 h at most
FEATURE_SETS = {"code": 7, "paper": 8}

#: metric -> (key of the engine's metrics, sign: -1 where lower is better): pick_job's three
METRICS = {k: PICK_METRICS[k] for k in ("bsld", "wait", "utilization")}

_HALF_DAY = 43200.0  # the code's normaliser of waiting time and rejected time (12 h)
_QUEUE_SCALE = 128.0  # the code's queue-delay normaliser is (600 / 10) x 128
_TOP = 1.0 - 1e-5  # the code caps every feature just below 1


class Inspection:
    """The inspector's side of one run under a base heuristic: the proposed job, the rejection
    counts, and what the inspector observes (see the module docstring)."""

    def __init__(self, norm: dict[str, float], jobs: int, *, features: str = "code",
                 metric: str = "bsld", max_interval: float = MAX_INTERVAL,
                 max_rejections: int = MAX_REJECTIONS):
        self.features = check_choice("feature set", features, FEATURE_SETS)
        self.metric = check_choice("metric", metric, METRICS)
        self.max_interval = float(max_interval)
        self.max_rejections = int(max_rejections)
        self.max_run_time = max(float(norm.get("max_run_time", 0.0)), 1.0)
        self.max_procs = max(float(norm.get("max_procs", 0.0)), 1.0)
        self.rejected = np.zeros(jobs, dtype=np.int64)  # rejections per job
        self.inspections = 0
        self.rejections = 0
        self.forced_accepts = 0
        self.view = None
        self.row: int | None = None  # the proposed job

    @staticmethod
    def check(view) -> None:
        if view.profile_loop != "commit":
            raise ValueError(f"the inspector needs commit semantics (the schedinspector, "
                             f"schedinspector-paper or rlscheduler profile), not the "
                             f"{view.profile!r} profile")

    def propose(self, view, row: int | None) -> None:
        """The decision at hand (None at the end of the run) and the base heuristic's pick."""
        self.view = view
        self.row = row

    def can_reject(self) -> bool:
        return bool(self.rejected[self.row] < self.max_rejections and self.view.can_wait)

    def mask(self) -> np.ndarray:
        return np.array([True, self.can_reject()])

    def decision(self, action: int):
        """The engine decision for the inspector's action on the proposed job: accept is the
        base's pick; reject lets time pass, `max_interval` at most (a masked reject is an accept,
        counted)."""
        self.inspections += 1
        if action == REJECT and self.can_reject():
            self.rejections += 1
            self.rejected[self.row] += 1
            return Wait(until=self.view.now + self.max_interval)
        if action == REJECT:
            self.forced_accepts += 1
        return Pick(self.row)

    def observe(self) -> np.ndarray:
        """The features of the proposed job and the system (the code's order):
        wait / 12 h, request / longest run time of the trace, processors / the trace's processors,
        free nodes / nodes, runnable now, rejections / cap, queue delay; the "paper" set adds the
        backfilling contribution. The queue delay is the cost of idling 600 s summed over the
        queue: 600 / max(r, 10) per job (bsld form, the code's, always under "code"; also for
        utilization) or 600 per job (wait form, "paper" set with the wait metric), scaled by
        (600 / 10) x 128 or 600 x 128."""
        v, row = self.view, self.row
        queue = v.queue
        need = int(v.nodes_needed[row])
        free = v.free_nodes
        req = v.jobs.req_time
        if self.features == "paper" and self.metric == "wait":
            delay = len(queue) / _QUEUE_SCALE
        else:
            delay = float(np.sum(self.max_interval / np.maximum(req[queue], 10.0)))
            delay /= self.max_interval / 10.0 * _QUEUE_SCALE
        out = [
            (v.now - v.jobs.submit[row]) / _HALF_DAY,
            req[row] / self.max_run_time,
            v.jobs.procs[row] / self.max_procs,
            free / v.total_nodes,
            _TOP if need <= free else 1e-5,
            min(self.rejected[row] / self.max_rejections, 1.0),
            delay,
        ]
        if self.features == "paper":
            out.append(self._backfill_contribution(queue, need) / _QUEUE_SCALE)
        obs = np.minimum(np.asarray(out, dtype=np.float32), np.float32(_TOP))
        obs[5] = min(self.rejected[row] / self.max_rejections, 1.0)  # the code lets this reach 1
        return obs

    def _backfill_contribution(self, queue: np.ndarray, need: int) -> int:
        """With backfilling on and the proposed job not fitting: how many other waiting jobs fit
        now and would end (by their request) before the proposed job's reservation."""
        v = self.view
        running = v.running
        if v.backfill == "none" or need <= v.free_nodes or not running.size:
            return 0
        from hpcsched.sim.backfill import schedgym_shadow

        est = v.estimated_end
        running = running[np.argsort(est[running], kind="stable")].tolist()
        shadow = schedgym_shadow(v.now, v.jobs.procs[self.row], v.free_nodes, running,
                                 est.tolist(), v.nodes_needed.tolist(), v.procs_per_node)
        others = queue[queue != self.row]
        fits = (v.nodes_needed[others] <= v.free_nodes) & (v.now + v.jobs.req_time[others] < shadow)
        return int(np.count_nonzero(fits))

    def summary(self) -> dict[str, float]:
        """Counts of the run, for the result's metrics."""
        return {
            "inspections": self.inspections,
            "rejections": self.rejections,
            "rejection_ratio": self.rejections / self.inspections if self.inspections else 0.0,
            "forced_accepts": self.forced_accepts,
        }


__all__ = ["ACCEPT", "FEATURE_SETS", "Inspection", "MAX_INTERVAL", "MAX_REJECTIONS", "METRICS",
           "REJECT"]
