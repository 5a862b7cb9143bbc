"""`hpcsched trace generate` for the Spartan-like models, `trace stats` on what it writes, and the
simulate command of the issue on a generated file."""

import json

import pytest

from hpcsched.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_generate_then_stats_then_simulate(capsys, tmp_path):
    path = tmp_path / "physical-day.txt"
    code, _, err = run_cli(capsys, "trace", "generate", "spartan-physical", "--days", "1",
                           "--seed", "1", "-o", str(path))
    assert code == 0 and "wrote 12019 jobs" in err
    assert path.read_text().startswith("JobIDRaw|JobID|User|")

    code, out, _ = run_cli(capsys, "trace", "stats", str(path))
    assert code == 0
    assert "beside the thesis's spartan-physical" in out
    assert "one-core jobs" in out and "71.5% +- 2 points" in out and "71.50%" in out
    assert "real traces" in out

    code, out, _ = run_cli(capsys, "trace", "stats", str(path), "--calibration", "--json")
    rows = json.loads(out)
    assert {r["statistic"] for r in rows} >= {"jobs per day", "one-core jobs"}
    assert all(r["ok"] in ("yes", "") for r in rows), rows

    code, out, _ = run_cli(capsys, "simulate", str(path), "--profile", "hpcsim", "--cluster",
                           "spartan-physical", "--policy", "fcfs", "--allocator", "best-fit",
                           "--backfill", "easy", "--json")
    row = json.loads(out)
    assert code == 0 and row["jobs"] == 12019 and row["wait"] > 0


def test_generate_high_load_day_and_hpcsim_format(capsys, tmp_path):
    path = tmp_path / "busy.tsv"
    code, _, err = run_cli(capsys, "trace", "generate", "spartan-deeplearn", "--high-load-day",
                           "--format", "hpcsim", "-o", str(path))
    assert code == 0 and "wrote 1137 jobs" in err and "high-load day" in err
    assert path.read_text().startswith("JobID\tUID\tGID\t")


def test_generate_help_labels_what_is_calibrated_and_what_is_borrowed(capsys):
    with pytest.raises(SystemExit):
        main(["trace", "generate", "--help"])
    out = capsys.readouterr().out
    assert "Calibrated to the thesis" in out and "Borrowed from real traces" in out
    assert "wagap-2013" in out and "spartan-physical --days 7 --seed 1" in out


@pytest.mark.parametrize("argv, needle", [
    (["spartan-physical"], "no output file"),
    (["spartan-physical", "a.txt", "-o", "b.txt"], "not both"),
    (["spartan-sapphire", "--high-load-day", "-o", "x.txt"], "no high-load day"),
    (["lublin", "x.swf", "--days", "3"], "--days"),
    (["spartan-physical", "--days", "-1", "-o", "x.txt"], "days must be positive")])
def test_generate_errors_are_one_line(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "trace", "generate", *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err, err


def test_lublin_still_generates(capsys, tmp_path):
    code, _, err = run_cli(capsys, "trace", "generate", "lublin", str(tmp_path / "l.swf"),
                           "--jobs", "200", "--nodes", "64", "--seed", "2")
    assert code == 0 and "wrote 200 jobs" in err
