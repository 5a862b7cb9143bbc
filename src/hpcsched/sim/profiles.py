"""Profiles: the small choices that every published simulator made differently, bundled and named.

Reproducing a paper means choosing its profile; nothing else changes. A profile says how the trace is
cleaned, whether a chosen job blocks later decisions until it starts (commit), whether a job is killed
at its requested time, when an episode ends and how utilization is divided.
"""

from __future__ import annotations

from dataclasses import dataclass

BACKFILLS = ("none", "easy", "conservative", "schedgym")


@dataclass(frozen=True)
class Profile:
    name: str
    #: cleaning rules of `hpcsched.workload.cleaning`
    cleaning: str
    #: True: the chosen job is committed and blocks every later decision until it starts (SchedGym).
    #: False: a decision at every arrival and completion; a job that does not fit is only reserved.
    commit: bool
    #: True: a job that runs past its requested time is killed there.
    kill_at_request: bool
    #: "last_start": the episode ends when the last job starts (running jobs are not finished);
    #: "last_finish": it ends when every job has finished.
    end: str
    #: "last_start": SchedGym's utilization, sum(run*procs) / ((T_end - first submit) * total procs);
    #: "makespan": executed area / ((last finish - first submit) * total procs).
    utilization: str
    description: str = ""
    #: "pass": the textbook loop (`passes.py`); "cqsim": CQSim's scheduling instances with one
    #: reservation and a backfill pass that a learned agent may order (`cqsim.py`: the cqsim and
    #: dras profiles);
    #: "discrete": discrete time steps and a pool of several resource types (DeepRM,
    #: `discrete.py`), a trace being mapped into the grid before it is simulated
    loop: str = "pass"
    #: cqsim loop only (spec dras.md section 16, items 1-3; defaults are the paper's reading):
    #: who gets the reservation, "agent_pick" (the first pick that does not fit) or "fcfs_head"
    #: (the oldest waiting job, as the released code does)
    reserve: str = "agent_pick"
    #: whether the reservation persists across instances until its job starts (the code) or is
    #: chosen anew at every instance (the paper)
    persist: bool = False
    #: the duration backfilling plans with for waiting jobs: "estimate" (the request, textbook
    #: EASY) or "actual" (the logged run time, CQSim's oracle quirk)
    backfill_runtime: str = "estimate"
    #: cqsim loop only: when a scheduling instance runs. "event_time": once per instant, after
    #: every event of that instant (the DRAS models' training); "event": after every single event,
    #: as CQSim's code does (completions before arrivals, completions of one instant in the order
    #: their jobs started, arrivals in row order)
    instance: str = "event_time"
    #: the pool of identical nodes a trace header describes when no cluster is given: "header"
    #: (MaxNodes nodes of MaxProcs / MaxNodes processors, SchedGym's rule) or "procs" (MaxProcs
    #: single-processor nodes: CQSim's node model, where a job asks for processors only)
    pool: str = "header"
    #: pass loop: after a backfilling call that started something, the pass goes on (HPCsim's)
    backfill_repeats: bool = False
    #: whose heuristics, allocators and backfilling a name means under this profile: "" (ours) or
    #: "hpcsim" (`--policy f1` is then HPCsim's f_1, `--allocator best-fit` its best fit, and
    #: `--backfill easy` its backfilling)
    dialect: str = ""
    #: the allocator of a heterogeneous cluster when none is named
    allocator: str = "best-fit"
    #: heuristics this profile's simulator defines its own way: (name, the labelled variant the
    #: name means under this profile), e.g. ("sjf", "sjf-procs") where SJF breaks ties by
    #: processors; every other profile keeps the standard heuristic
    heuristics: tuple[tuple[str, str], ...] = ()
    #: discrete loop only: "bounded" (DeepRM's: M slots + the backlog; an arrival that finds them
    #: full is dropped, and counted) or "unbounded" (every arrival waits)
    queue: str = "bounded"

    def __post_init__(self) -> None:
        if self.reserve not in ("agent_pick", "fcfs_head"):
            raise ValueError(f"reserve must be agent_pick or fcfs_head, not {self.reserve!r}")
        if self.backfill_runtime not in ("estimate", "actual"):
            raise ValueError(f"backfill_runtime must be estimate or actual, not "
                             f"{self.backfill_runtime!r}")
        if self.queue not in ("bounded", "unbounded"):
            raise ValueError(f"queue must be bounded or unbounded, not {self.queue!r}")
        if self.loop not in ("pass", "cqsim", "discrete"):
            raise ValueError(f"loop must be pass, cqsim or discrete, not {self.loop!r}")
        if self.instance not in ("event_time", "event"):
            raise ValueError(f"instance must be event_time or event, not {self.instance!r}")
        if self.pool not in ("header", "procs"):
            raise ValueError(f"pool must be header or procs, not {self.pool!r}")

    @property
    def discrete(self) -> bool:
        return self.loop == "discrete"

    def heuristic(self, name: str) -> str:
        """The heuristic `name` means under this profile (its own variant, or `name` itself)."""
        key = name.strip().lower()
        return dict(self.heuristics).get(key, key)


PROFILES: dict[str, Profile] = {
    "standard": Profile(
        name="standard",
        cleaning="standard",
        commit=False,
        kill_at_request=True,
        end="last_finish",
        utilization="makespan",
        description="textbook: a decision at every arrival and completion, jobs killed at their "
        "requested time, utilization over the makespan",
    ),
    "rlscheduler": Profile(
        name="rlscheduler",
        cleaning="rlscheduler",
        commit=True,
        kill_at_request=False,
        end="last_start",
        utilization="last_start",
        description="SchedGym (RLScheduler, SC'20) exactly: the chosen job blocks later decisions "
        "until it starts, no kill at the request, the episode ends at the last start",
    ),
    "deeprm": Profile(
        name="deeprm",
        cleaning="standard",
        commit=False,
        kill_at_request=False,
        end="last_finish",
        utilization="makespan",
        description="DeepRM (HotNets'16) exactly: discrete time steps, d resources of R units "
        "planned T steps ahead, M job slots and a backlog of 60; an arrival that finds them full "
        "is dropped (and counted); a trace is scaled into the grid",
        loop="discrete",
    ),
    "deeprm-unbounded": Profile(
        name="deeprm-unbounded",
        cleaning="standard",
        commit=False,
        kill_at_request=False,
        end="last_finish",
        utilization="makespan",
        description="as deeprm, but the backlog has no bound: no arrival is dropped (the image "
        "still shows 60 backlogged jobs)",
        loop="discrete",
        queue="unbounded",
    ),
    "cqsim": Profile(
        name="cqsim",
        cleaning="cqsim",
        commit=False,
        kill_at_request=False,  # the cleaning has clamped run times to the request, as CQSim's does
        end="last_finish",
        utilization="makespan",
        loop="cqsim",
        instance="event",
        backfill_runtime="actual",
        pool="procs",
        description="CQSim's code exactly (SPEAR-UIC/CQSim): its SWF filter, MaxProcs "
        "single-processor nodes, a scheduling pass after every single event, EASY or "
        "conservative backfilling planned with the waiting jobs' logged run times",
    ),
    "dras": Profile(
        name="dras",
        cleaning="dras",
        commit=False,
        kill_at_request=True,
        end="last_finish",
        utilization="makespan",
        loop="cqsim",
        description="CQSim as the shipped DRAS models (IPDPS'21) were trained on it: run times "
        "clamped to the request, one scheduling instance per event time, one reservation, "
        "profile-based backfilling planned with requests, the header's nodes",
    ),
    "schedinspector": Profile(
        name="schedinspector",
        cleaning="schedinspector",
        commit=True,
        kill_at_request=False,
        end="last_start",
        utilization="makespan",
        heuristics=(("sjf", "sjf-procs"),),
        description="SchedInspector (HPDC'22) exactly as its code runs: SchedGym's semantics, its "
        "loader (every request set to the run time, zero-length jobs kept), SJF's ties broken by "
        "processors, utilization over the makespan (spec schedinspector.md sections 2, 6, 8)",
    ),
    "schedinspector-paper": Profile(
        name="schedinspector-paper",
        cleaning="rlscheduler",
        commit=True,
        kill_at_request=False,
        end="last_start",
        utilization="makespan",
        description="SchedInspector as its paper reads on SchedGym: the users' requested times, "
        "SchedGym's loader and SJF (ties by submit time), utilization over the makespan; the "
        "shipped inspector models were trained under it",
    ),
    "hpcsim": Profile(
        name="hpcsim",
        cleaning="hpcsim",
        commit=False,
        kill_at_request=True,
        end="last_finish",
        utilization="makespan",
        backfill_repeats=True,
        dialect="hpcsim",
        description="HPCsim, the simulator of Wang's thesis, exactly: one pass per event time, "
        "its selectors, allocators (best fit ignores memory) and backfilling (the head's earliest "
        "start must not move), shared nodes",
    ),
}


def get_profile(name: str | Profile) -> Profile:
    if isinstance(name, Profile):
        return name
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(
            f"unknown profile {name!r}; known profiles: {', '.join(PROFILES)}"
        ) from None


def check_backfill(name: str) -> str:
    if name not in BACKFILLS:
        raise ValueError(f"unknown backfilling {name!r}; choose one of: {', '.join(BACKFILLS)}")
    return name
