"""Our `hpcsim-*` allocators and platform reader against HPCsim's own code.

`tests/data/hpcsim_allocators.json.gz` holds what HPCsim's `Cluster` and `Allocator` (commit 8806459,
run unmodified; see tests/data/README.md) answered on 1,400 random states of spartan-physical,
spartan-deeplearn and a three-level toy platform: the free vector of every node, a per-node request,
a node count, whether the job fits, and each allocator's nodes in its order.
"""

import gzip
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from hpcsched.cluster.allocate import fitting_nodes, get_allocator
from hpcsched.cluster.load import load_cluster

DATA = Path(__file__).parents[1] / "data"
HPCSIM_NAMES = {"first_available": "hpcsim-first-available", "best_fit": "hpcsim-best-fit",
                "topology_aware": "hpcsim-topology"}


@lru_cache(maxsize=None)
def reference() -> dict:
    with gzip.open(DATA / "hpcsim_allocators.json.gz", "rt") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def cluster(name: str):
    if name == "toy":
        return load_cluster(DATA / "hpcsim_toy" / "toy_topology.txt")
    return load_cluster(f"spartan-{name}")


@pytest.mark.parametrize("name", ["physical", "deeplearn", "toy"])
def test_reader_builds_hpcsims_nodes(name):
    """Hostname, cores, memory, GPUs and switch id (HPCsim's `s<i>`) of every node `n<i>`."""
    rows = reference()["clusters"][name]
    c = cluster(name)
    assert list(c.names) == [r[0] for r in rows]
    assert c.capacity.tolist() == [r[1:4] for r in rows]
    assert c.leaf.tolist() == [int(r[4][1:]) for r in rows]


def test_reference_covers_each_cluster_and_discriminates():
    """The cases must be able to catch a wrong allocator: the three HPCsim answers differ often."""
    cases = reference()["cases"]
    fitting = [c for c in cases if c["fits"]]
    assert {c["cluster"] for c in fitting} == {"physical", "deeplearn", "toy"}
    assert len(fitting) >= 900 and len(cases) - len(fitting) >= 100
    assert sum(c["best_fit"] != c["topology_aware"] for c in fitting) > 300
    assert sum(c["best_fit"] != c["first_available"] for c in fitting) > 300
    assert sum(c["count"] > 1 for c in fitting) > 300


@pytest.mark.parametrize("part", ["physical", "deeplearn", "toy"])
def test_allocators_match_hpcsim(part):
    allocators = {key: get_allocator(name) for key, name in HPCSIM_NAMES.items()}
    wrong = []
    for i, case in enumerate(reference()["cases"]):
        if case["cluster"] != part:
            continue
        c = cluster(part)
        free = np.array(case["free"], dtype=np.int64)
        request = np.array(case["request"], dtype=np.int64)
        fits = fitting_nodes(c, free, request)
        assert (fits.sum() >= case["count"]) == case["fits"], f"case {i}: feasibility"
        for key, alloc in allocators.items():
            for mask in (None, fits):  # computed here, and given by the engine
                got = alloc.allocate(c, free, request, case["count"], fits=mask)
                want = case.get(key)
                if (got is None) != (want is None) or (got is not None and got.tolist() != want):
                    wrong.append((i, key, None if got is None else got.tolist(), want))
    assert not wrong, f"{len(wrong)} answers differ from HPCsim's, first: {wrong[:3]}"
