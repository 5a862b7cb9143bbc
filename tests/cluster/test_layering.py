"""DESIGN.md's layering: `cluster/` knows nothing above it (no simulator, policy, env, agent, CLI)."""

import ast
from pathlib import Path

import hpcsched.cluster

ABOVE = ("hpcsched.sim", "hpcsched.policies", "hpcsched.envs", "hpcsched.agents",
         "hpcsched.experiments", "hpcsched.cli", "hpcsched.report")


def test_cluster_imports_nothing_from_above():
    offending = []
    for path in Path(hpcsched.cluster.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offending += [f"{path.name}: {n}" for n in names if n.startswith(ABOVE)]
    assert not offending
