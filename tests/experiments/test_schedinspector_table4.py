"""`experiment schedinspector-table4`: the authors' protocol by default (its base column is the
paper's Table 4), ours with `--windows ours`, and one-line errors for the options."""

import json
from pathlib import Path

import numpy as np
import pytest

from hpcsched.cli import main
from hpcsched.experiments import schedinspector as si

FIXTURE = json.loads((Path(__file__).parents[1] / "data" / "schedinspector_lublin.json")
                     .read_text())["traces"]["lublin-1"]


def base_line(rows, source="ours"):
    return next(x for x in si.side_by_side(rows) if x["source"] == source)


def test_the_default_protocol_is_the_authors_and_its_base_column_the_papers(tmp_path):
    rows = si.table4(["lublin-1"], ["sjf", "f1"], models=tmp_path)  # no models: base and rule
    sjf, f1 = (r for r in rows if r["source"] == "ours")
    assert sjf["profile"] == "schedinspector" and sjf["draw"] == "code" and sjf["windows"] == 50
    assert sjf["bsld"] == pytest.approx(np.mean([w["sjf_bsld"] for w in FIXTURE]), rel=1e-12)
    assert f1["bsld"] == pytest.approx(np.mean([w["f1_bsld"] for w in FIXTURE]), rel=1e-12)
    # printed to three decimals, so that the paper's truncated 333.19 shows as ours
    assert base_line(rows)["base_bsld"] == 333.196
    assert base_line(rows, "paper")["base_bsld"] == 333.19
    # the fixed rule wraps the profile's SJF too (SchedGym's SJF would give another number)
    assert base_line(rows, "rule")["inspected_bsld"] == 109.278


def test_windows_ours_keeps_the_shipped_models_protocol(tmp_path):
    rows = si.table4(["lublin-1"], ["sjf"], windows="ours", models=tmp_path, rule=False)
    sjf = rows[0]
    assert sjf["profile"] == "schedinspector-paper" and sjf["draw"] == "ours"
    assert round(sjf["bsld"], 2) == 300.07  # the README's table before the authors' protocol
    with pytest.raises(ValueError, match="code, ours"):
        si.table4(["lublin-1"], ["sjf"], windows="paper", models=tmp_path)


def test_the_cli_takes_a_draw_and_a_count(capsys, tmp_path):
    argv = ["experiment", "schedinspector-table4", "--traces", "lublin-1", "--bases", "sjf",
            "--no-rule", "--models", str(tmp_path), "--jobs", "64"]
    assert main(argv + ["--count", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["windows"] == 3 and rows[0]["draw"] == "code"
    assert main(argv + ["--count", "3", "--windows", "ours"]) == 0
    assert "schedinspector-paper profile" in capsys.readouterr().out
    assert main(argv + ["--windows", "50"]) == 2
    assert "--count 50" in capsys.readouterr().err
    assert main(argv + ["--count", "0"]) == 2
    assert "--count" in capsys.readouterr().err
