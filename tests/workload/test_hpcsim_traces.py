"""benchmarks/hpcsim_traces.py: the generator of HPCsim-format traces is deterministic, and what it
writes reads back through `read_hpcsim` with the properties it promises."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from hpcsched.workload.slurm import (
    ALLOC_RULE,
    CAP_RULE,
    DROP_PARTITION,
    REORDERED,
    read_hpcsim_with_report,
)

_PATH = Path(__file__).parents[2] / "benchmarks" / "hpcsim_traces.py"
_spec = importlib.util.spec_from_file_location("hpcsim_traces", _PATH)
gen = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("hpcsim_traces", gen)  # dataclasses look their module up there
_spec.loader.exec_module(gen)


def test_same_seed_same_bytes(tmp_path):
    a, b, c = tmp_path / "a.tsv.gz", tmp_path / "b.tsv.gz", tmp_path / "c.tsv.gz"
    gen.write_trace(gen.generate("physical", 300, seed=4), a)
    gen.write_trace(gen.generate("physical", 300, seed=4), b)
    gen.write_trace(gen.generate("physical", 300, seed=5), c)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


@pytest.mark.parametrize("partition", ["physical", "deeplearn"])
def test_generated_jobs_fit_and_read_back(tmp_path, partition):
    rows = gen.generate(partition, 600, seed=7, units=True, alloc_differs=0.1, foreign=0.05,
                        shuffle=0.02, zero_run=0.02, no_gpu=0.1)
    assert len(rows) == 630
    path = tmp_path / "t.tsv"
    gen.write_trace(rows, path)
    jobs, report = read_hpcsim_with_report(path, partition)
    assert len(jobs) == 600
    assert report.dropped == {DROP_PARTITION: 30}
    assert {ALLOC_RULE, CAP_RULE, REORDERED} <= set(report.changed)
    assert report.changed[ALLOC_RULE] > 30
    # exact multiples: per-node requests are whole numbers
    per_node = np.stack([jobs.cores_per_node, jobs.mem_per_node, jobs.gpus_per_node])
    assert (per_node == np.trunc(per_node)).all()
    assert (jobs.cores_per_node * jobs.nodes == jobs.procs).all()
    # every job fits the empty partition
    kinds = gen.PARTITIONS[partition]
    for n, c, m, g in zip(jobs.nodes, jobs.cores_per_node, jobs.mem_per_node, jobs.gpus_per_node):
        assert sum(k.count for k in kinds if k.cores >= c and k.memory_mb >= m and k.gpus >= g) >= n
    assert (jobs.run_time == 0).sum() >= 3
    assert (np.diff(jobs.submit) == 0).sum() > 100  # bursts share one Submit second


def test_physical_holds_big_memory_and_whole_node_jobs():
    rows = gen.generate("physical", 2000, seed=3)
    unit = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 ** 2}
    per_node_mb = [float(r["Allmem"][:-1]) * unit[r["Allmem"][-1]] / int(r["AllocNodes"])
                   for r in rows]
    assert sum(m > 710000 for m in per_node_mb) >= 20       # fit only the 14 big-memory nodes
    assert sum(r["AllocCPUS"] == str(72 * int(r["AllocNodes"])) for r in rows) >= 50
    assert sum(r["AllocCPUS"] == "1" for r in rows) / len(rows) == pytest.approx(0.66, abs=0.05)
