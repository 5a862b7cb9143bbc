"""A deliberately plain simulator of SchedGym's semantics, used as the speed baseline.

It is written the way the authors' simulator is organised (one Python object per job, the waiting
queue re-sorted with a Python score function at every decision, the cluster as a list of node
objects), but it is our own code. `benchmarks/simulate.py` checks that it produces the same start
times as `hpcsched`'s engine before timing either.
"""

from __future__ import annotations

import math


class Job:
    def __init__(self, row, submit, run, req, procs):
        self.row, self.submit, self.run, self.req, self.procs = row, submit, run, req, procs
        self.start = -1.0
        self.nodes = []


class Node:
    def __init__(self, i):
        self.id = i
        self.busy_with = None


class Cluster:
    def __init__(self, n, ppn):
        self.nodes = [Node(i) for i in range(n)]
        self.ppn = ppn

    def free(self):
        return sum(1 for m in self.nodes if m.busy_with is None)

    def fits(self, job):
        return math.ceil(job.procs / self.ppn) <= self.free()

    def allocate(self, job):
        want = math.ceil(job.procs / self.ppn)
        got = []
        for m in self.nodes:
            if m.busy_with is None:
                m.busy_with = job.row
                got.append(m)
                if len(got) == want:
                    break
        return got

    def release(self, nodes):
        for m in nodes:
            m.busy_with = None


SCORES = {
    "fcfs": lambda j, now: j.submit,
    "sjf": lambda j, now: (j.req, j.submit),
    "f1": lambda j, now: (math.log10(j.req if j.req > 0 else 0.1) * j.procs
                          + 870 * math.log10(j.submit if j.submit > 0 else 0.1)),
    "wfp3-rls": lambda j, now: -math.pow((-1 - j.submit) / j.req, 3) * j.procs,
    "unicep-rls": lambda j, now: -((-1 - j.submit) + 1e-15) / (math.log2(j.procs + 1e-15) * j.req),
}


def simulate(submit, run, req, procs, nodes, ppn, policy, backfill):
    """Start time of every job, SchedGym's semantics; `backfill` is False or True (its variant)."""
    jobs = [Job(i, s, r, q, p) for i, (s, r, q, p) in enumerate(zip(submit, run, req, procs))]
    score = SCORES[policy]
    cluster = Cluster(nodes, ppn)
    now = jobs[0].submit
    queue, running = [jobs[0]], []
    nxt = 1

    def advance():
        nonlocal now, nxt
        running.sort(key=lambda j: j.start + j.run)
        first = running[0]
        if nxt < len(jobs) and jobs[nxt].submit <= first.start + first.run:
            now = max(now, jobs[nxt].submit)
            queue.append(jobs[nxt])
            nxt += 1
        else:
            now = max(now, first.start + first.run)
            cluster.release(first.nodes)
            running.pop(0)

    def start(job):
        job.start = now
        job.nodes = cluster.allocate(job)
        running.append(job)
        queue.remove(job)

    while True:
        queue.sort(key=lambda j: score(j, now))
        job = queue[0]
        if not cluster.fits(job):
            if backfill:
                running.sort(key=lambda j: j.start + j.req)
                free_procs = cluster.free() * ppn
                shadow = now
                for r in running:
                    free_procs += len(r.nodes) * ppn
                    shadow = r.start + r.req
                    if free_procs >= job.procs:
                        break
                while not cluster.fits(job):
                    queue.sort(key=lambda j: j.submit)
                    for c in list(queue):
                        if cluster.fits(c) and now + c.req < shadow:
                            start(c)
                    advance()
            else:
                while not cluster.fits(job):
                    advance()
        start(job)
        if not queue:
            if nxt >= len(jobs):
                break
            while not queue:
                if running:
                    running.sort(key=lambda j: j.start + j.run)
                    first = running[0]
                    if jobs[nxt].submit > first.start + first.run:
                        now = max(now, first.start + first.run)
                        cluster.release(first.nodes)
                        running.pop(0)
                        continue
                now = max(now, jobs[nxt].submit)
                queue.append(jobs[nxt])
                nxt += 1
    return [j.start for j in jobs]
