"""DRAS's commands: help with examples, the experiment's flat JSON rows, trace generation, and
one-line errors."""

import json

import pytest

from hpcsched.cli import main
from hpcsched.workload.swf import read_swf


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", [["train", "dras", "--help"], ["experiment", "dras", "--help"]])
def test_help_has_examples(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    assert "examples:" in capsys.readouterr().out


def test_experiment_heuristics_json(capsys):
    code, out, err = run_cli(capsys, "experiment", "dras", "--trace", "ricc", "--test-days", "1",
                             "--methods", "fcfs-easy,binpacking", "--json")
    assert code == 0, err
    rows = json.loads(out)
    # flat rows (pandas.DataFrame(rows) works): scalars only, the same keys in every row
    assert all(not isinstance(v, (dict, list)) for r in rows for v in r.values())
    assert rows[0].keys() == rows[1].keys()
    assert [r["policy"] for r in rows] == ["fcfs-easy", "binpacking"]
    for key in ("trace", "backfill", "wait", "max_wait", "slowdown", "turnaround", "utilization",
                "ready_jobs_pct", "reserved_jobs_pct", "backfilled_jobs_pct"):
        assert key in rows[0]
    fcfs, bp = rows
    assert fcfs["ready_jobs_pct"] + fcfs["reserved_jobs_pct"] + fcfs["backfilled_jobs_pct"] == \
        pytest.approx(100.0)
    assert bp["ready_jobs_pct"] == 100.0 and bp["backfill"] == "none"
    assert fcfs["jobs"] == bp["jobs"]


def test_experiment_unknown_method_is_one_line(capsys):
    code, out, err = run_cli(capsys, "experiment", "dras", "--methods", "fcfs-easy,sjf")
    assert code == 2 and "unknown sjf" in err and len(err.strip().splitlines()) == 1


def test_missing_model_says_how_to_train_it(capsys, tmp_path):
    code, out, err = run_cli(capsys, "experiment", "dras", "--test-days", "1", "--methods",
                             "dras-pg", "--models", str(tmp_path))
    assert code == 2 and "hpcsched train dras --algo pg" in err


def test_train_rejects_a_bad_curriculum(capsys, tmp_path):
    code, out, err = run_cli(capsys, "train", "dras", "--out", str(tmp_path / "r"),
                             "--curriculum", "weekly:3")
    assert code == 2 and "PHASE:COUNT" in err


def test_trace_generate_lublin(capsys, tmp_path):
    dest = tmp_path / "l.swf"
    code, out, err = run_cli(capsys, "trace", "generate", "lublin", str(dest), "--jobs", "300",
                             "--nodes", "64", "--seed", "2")
    assert code == 0, err
    jobs = read_swf(dest)
    assert len(jobs) == 300 and jobs.header.max_nodes == 64
    assert jobs.req_procs.max() <= 64


def test_dql_options_reach_the_agent_and_are_refused_for_pg(capsys, tmp_path, monkeypatch):
    import hpcsched.experiments.dras_training as dt

    seen = {}
    monkeypatch.setattr(dt, "train", lambda config, out, resume=False: seen.setdefault("c", config)
                        and [])
    code, out, err = run_cli(capsys, "train", "dras", "--algo", "dql", "--out", str(tmp_path / "a"),
                             "--epsilon-decay", "0.99", "--target-every", "5", "--replay", "100",
                             "--keep-validated")
    assert code == 0, err
    c = seen["c"]
    assert c.agent == {"epsilon_decay": 0.99, "target_every": 5, "replay": 100}
    assert c.keep_validated
    code, out, err = run_cli(capsys, "train", "dras", "--algo", "pg", "--out", str(tmp_path / "b"),
                             "--target-every", "5")
    assert code == 2 and "--target-every" in err and "--algo dql" in err


def test_curriculum_plot_takes_seeds(capsys, tmp_path):
    for name, vals in (("a", (1.0, 3.0)), ("b", (2.0, 5.0)), ("c", (0.5, 0.7))):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "log.csv").write_text(
            "episode,val_reward,val_wait\n" + "".join(f"{i + 1},{v},100\n" for i, v in
                                                      enumerate(vals)))
    out_png = tmp_path / "c.png"
    code, out, err = run_cli(capsys, "experiment", "dras-curriculum", "--runs",
                             f"full={tmp_path / 'a'}+{tmp_path / 'b'},real={tmp_path / 'c'}",
                             "--out", str(out_png))
    assert code == 0, err
    assert out_png.stat().st_size > 0
    assert "best validation reward 3.0 at episode 2" in out and "5.0 at episode 2" in out
    code, out, err = run_cli(capsys, "experiment", "dras-curriculum", "--runs",
                             f"full={tmp_path / 'a'}+{tmp_path / 'nothing'}", "--out", str(out_png))
    assert code == 2 and "nothing" in err
