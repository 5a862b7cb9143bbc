"""benchmarks/sacct_traces.py writes sacct -P files whose every row's meaning it knows: the reader's
table matches that truth row by row on a file large enough that the columnar paths (hashed
categories, many distinct values, every form mixed) are exercised, not only the hand-written ones."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

from hpcsched.workload.sacct import read_sacct_with_report

_PATH = Path(__file__).parents[2] / "benchmarks" / "sacct_traces.py"
_spec = importlib.util.spec_from_file_location("sacct_traces", _PATH)
gen = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("sacct_traces", gen)
_spec.loader.exec_module(gen)


def test_same_seed_same_lines():
    assert gen.generate(500, seed=3)[0] == gen.generate(500, seed=3)[0] != gen.generate(500)[0]


def test_every_row_read_as_the_generator_meant(tmp_path, monkeypatch):
    import hpcsched.workload.accounting as accounting
    import hpcsched.workload.sacct as sacct

    monkeypatch.setattr(sacct, "BLOCK_ROWS", 4096)  # five blocks of rows, not one
    monkeypatch.setattr(accounting, "BLOCK", 1000)
    path = tmp_path / "synthetic.txt"
    truth = gen.write(str(path), 20_000, seed=2)
    jobs, report = read_sacct_with_report(path)
    kind = truth["kind"]
    assert report.rows_read == 20_000
    assert report.dropped == {
        "job step rows (123.batch, 123.extern, 123.0)": int(np.sum(kind == "step")),
        "pending array ranges (123_[5-10]: tasks never started)": int(np.sum(kind == "range")),
        "never started (PENDING)": int(np.sum(kind == "pending")),
        "not ended when sacct ran (RUNNING, SUSPENDED, ..., or no End): run time unknown":
            int(np.sum(kind == "running")),
    }
    assert len(jobs) == report.rows_kept == int(np.isin(kind, ["job", "array", "het"]).sum())
    ids = jobs.header.source.take("job_id", jobs.line)
    assert ids.tolist() == truth["job_id"].tolist()
    assert np.array_equal(jobs.submit, truth["submit"] - truth["submit"][0])
    assert np.array_equal(jobs.run_time, truth["run"])
    assert np.array_equal(jobs.req_time, truth["limit"])
    for name in ("nodes", "cores_per_node", "mem_per_node", "gpus_per_node"):
        assert np.array_equal(jobs[name], truth[name]), name
    assert jobs.header.source.take("state", jobs.line).tolist() == truth["state"].tolist()
    # every per-CPU ReqMem (4000Mc x CPUs) differs from its allocation (4G per CPU)
    assert report.changed["memory allocated (AllocTRES mem=) differs from ReqMem (the allocation "
                          "used)"] == int(truth["per_cpu"].sum())
