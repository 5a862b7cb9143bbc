"""DBF's checkpoints chosen for both metrics (README, "Choosing the checkpoint for both metrics";
benchmarks/dbf_choice.py): the saved output's arithmetic and rule, its agreement with the first
runs' logs (benchmarks/data/dbf_m32_seeds.tar.gz) and with the experiment's saved test rows
(dbf_m32_seeds_test.json), the README's numbers from it, and a bundled best.pt re-scored
on the 30 validation episodes."""

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
OUTPUT = DATA / "dbf_m32_choice.txt"
MARKER = "**Choosing the checkpoint for both metrics.**"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def num(s: str) -> float:
    return float(s.replace(",", ""))


def parsed(output: Path = OUTPUT) -> dict:
    """A saved output: heuristics {label: (AWT, queue)}, runs {seed: [(update, logged AWT,
    AWT, queue, util, margin)]}, each run's two picks, and the test lines."""
    heur, runs, picks, test = {}, {}, {}, {}
    seed = None
    for line in output.read_text().splitlines():
        if m := re.match(r"\s+(\S+)\s+AWT\s+([\d,]+) s\s+queue\s+([\d.]+)\s+util", line):
            heur[m.group(1)] = (num(m.group(2)), float(m.group(3)))
        elif m := re.match(r"[kfq]-s(\d): update", line):
            seed = int(m.group(1))
            runs[seed] = []
        elif m := re.match(r"\s+(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+) ([\d.]+)\s+([\d.]+)$", line):
            u, logged, awt, q, util, mg = m.groups()
            runs[seed].append((int(u), num(logged), num(awt), float(q), float(util), float(mg)))
        elif m := re.match(r"\s+margin rule keeps update (\d+) .*?(?:best\.pt|the log.s lowest) "
                           r"is update (\d+)", line):  # the log's lowest, said first
            picks[seed] = (int(m.group(1)), int(m.group(2)))
        elif m := re.match(r"\s+[kfq]-s(\d)@(\d+)\s+\((margin|best\.pt|lowest)\s*\) "
                           r"AWT\s+([\d,]+) s\s+queue\s+([\d.]+)", line):
            test[int(m.group(1)), m.group(3)] = (int(m.group(2)), num(m.group(4)),
                                                 float(m.group(5)))
        elif m := re.match(r"\s+margin rule, mean over runs: AWT ([\d,]+) \+- ([\d,]+) s, "
                           r"queue ([\d.]+) \+- ([\d.]+)", line):
            test["mean"] = m.groups()
    return {"heur": heur, "runs": runs, "picks": picks, "test": test}


def section(marker: str = MARKER) -> str:
    text = (ROOT / "README.md").read_text()
    a = text.index(marker)
    b = text.find("\n#", a)
    return " ".join(text[a:b].split())


@pytest.mark.parametrize("output", [OUTPUT, DATA / "dbf_m32_masked_choice.txt",
                                    DATA / "dbf_m32_queue_choice.txt"],
                         ids=["first", "fine-tuned", "queue-weighed"])
def test_the_margins_and_the_picks_follow_the_rule(output):
    out = parsed(output)
    heur = out["heur"]
    # the six heuristics of Fig. 3.4, with and without EASY (identical for sqf on one machine)
    assert sorted(heur) == sorted(["FCFS", "FCFS+EASY", "SJF", "SJF+EASY", "LCFS", "LCFS+EASY"])
    assert heur["SJF"] == heur["SJF+EASY"]
    best_w = min(w for w, _ in heur.values())
    best_q = min(q for _, q in heur.values())
    assert sorted(out["runs"]) == [0, 1, 2]
    for seed, rows in out["runs"].items():
        last = 60 if output == OUTPUT else 30
        assert [r[0] for r in rows] == list(range(5, last + 1, 5))  # every validated update
        for u, _, awt, q, _, mg in rows:
            # printed to 3 places from unrounded AWT and queue: within the roundings' reach
            assert mg == pytest.approx(max(awt / best_w, q / best_q), rel=3e-4, abs=1.2e-3), \
                (seed, u)
        kept = min(rows, key=lambda r: (r[5], r[0]))[0]
        logged_best = min(rows, key=lambda r: (r[1], r[0]))[0]
        assert out["picks"][seed] == (kept, logged_best)


def first_validations() -> dict[int, dict[int, float]]:
    """seed -> {update: 10-episode validation AWT} of the first runs (archived earlier)."""
    script = load("dbf_seeds")
    return {r["config"]["seed"]: dict(script.run_facts(n, r)["validations"])
            for n, r in script.read_archive(script.ARCHIVE).items()}


def starting_awt(run: dict) -> float:
    """A run's printed validation of the model it started from (`--init`)."""
    return num(re.search(r"starting greedy actor: validation AWT ([\d,]+) s", run["out"])[1])


def test_the_logged_validations_are_the_first_runs():
    """The re-runs' 10-episode validation AWT is, update by update, the first runs' (archived
    in an earlier session): the runs reproduce them."""
    first = first_validations()
    for seed, rows in parsed()["runs"].items():
        for u, logged, *_ in rows:
            assert logged == round(first[seed][u]), (seed, u)


def test_the_test_lines_are_the_experiments_rows():
    """The chosen checkpoints on the 100 test episodes give, seed by seed, the experiment's saved
    rows for the three bundled best.pt files (a separate run of `experiment dbf-baselines`)."""
    saved = {r["method"]: r for r in json.loads((DATA / "dbf_m32_seeds_test.json").read_text())}
    model = saved["M32-4@masked-3s"]
    test = parsed()["test"]
    for seed in (0, 1, 2):
        for which in ("margin", "best.pt"):
            _, awt, q = test[seed, which]
            assert awt == round(model["wait_per_seed"][seed])
            assert q == pytest.approx(model["queue_length_per_seed"][seed], abs=0.005)


def test_the_readme_numbers_come_from_the_output():
    readme = section()
    out = parsed()
    heur, runs = out["heur"], out["runs"]
    best_w = min(w for w, _ in heur.values())
    best_q = min(q for _, q in heur.values())
    assert heur["LCFS"][0] == best_w and f"LCFS's without backfilling ({best_w:,.0f} s)" in readme
    assert heur["SJF"][1] == best_q and f"(`sqf`, {best_q:.2f} jobs)" in readme
    rows = [r for rs in runs.values() for r in rs]
    assert len(rows) == 36 and "No checkpoint of the 36" in readme
    qs, ws = [r[3] for r in rows], [r[2] for r in rows]
    assert min(qs) > best_q and min(ws) > best_w  # the README's "no checkpoint ... nor"
    assert f"({min(qs):.2f}-{max(qs):.2f})" in readme
    assert f"({min(ws):,.0f}-{max(ws):,.0f} s)" in readme
    assert f"({min(qs) / best_q:.2f}-{max(qs) / best_q:.2f})" in readme
    assert f"({min(ws) / best_w:.2f}-{max(ws) / best_w:.2f})" in readme
    pct = f"{round(100 * (min(qs) / best_q - 1))}-{round(100 * (max(qs) / best_q - 1))} %"
    assert pct in readme
    kept = [out["picks"][s][0] for s in (0, 1, 2)]
    assert f"kept updates {kept[0]}, {kept[1]} and {kept[2]}" in readme
    w, w_sd, q, q_sd = out["test"]["mean"]  # the script's, from the unrounded values
    assert f"{w} ± {w_sd} s and {q} ± {q_sd} jobs" in readme
    test = [out["test"][s, "margin"] for s in (0, 1, 2)]
    assert num(w) == pytest.approx(np.mean([t[1] for t in test]), abs=1)
    assert float(q) == pytest.approx(np.mean([t[2] for t in test]), abs=0.005)


def test_the_margin_is_below_one_only_below_every_heuristic():
    """The rule's score on its own: above 1 as soon as either metric is above the lowest."""
    margin = load("dbf_choice").margin
    assert margin({"wait": 90.0, "queue_length": 9.0}, 100.0, 10.0) == pytest.approx(0.9)
    assert margin({"wait": 90.0, "queue_length": 11.0}, 100.0, 10.0) == pytest.approx(1.1)
    assert margin({"wait": 120.0, "queue_length": 9.0}, 100.0, 10.0) == pytest.approx(1.2)


def test_a_bundled_best_pt_scores_its_row():
    """Seed 0's bundled best.pt (update 15) on the 30 validation episodes, through the mask, and
    LCFS and SJF there: the saved output's rows (about 15 s on 2 cores)."""
    from hpcsched.experiments.dbf import Method
    from hpcsched.workload.windows import dbf_starts

    script = load("dbf_choice")
    starts = dbf_starts(10000, "validation", 30)
    path = DATA / "dbf_m32_seeds" / "s0.pt"
    got = script.score([Method("LCFS", "lcfs"), Method("SJF", "sqf"),
                        Method("s0", f"dbf:{path}@masked", kind="model")], starts, 2)
    out = parsed()
    row = next(r for r in out["runs"][0] if r[0] == 15)
    assert round(got[2]["wait"]) == row[2] and round(got[2]["queue_length"], 2) == row[3]
    assert round(got[0]["wait"]) == out["heur"]["LCFS"][0]
    assert round(got[1]["queue_length"], 2) == out["heur"]["SJF"][1]


# -- the masked fine-tuning of the three kept checkpoints --------------------------------------
TUNED = DATA / "dbf_m32_masked_choice.txt"
TUNED_RUNS = DATA / "dbf_m32_masked_runs.tar.gz"
TUNED_MARKER = "**Fine-tuned with the mask.**"
STARTS = {0: 15, 1: 10, 2: 50}  # seed -> the update of the first run each started from


def tuned_runs() -> dict[int, dict]:
    runs = load("dbf_sweep").read_archive(TUNED_RUNS)
    return {r["config"]["seed"]: r for r in runs.values()}


def test_the_fine_tuning_runs_are_the_command_the_readme_names():
    readme = section(TUNED_MARKER)
    runs = tuned_runs()
    assert sorted(runs) == [0, 1, 2]
    for seed, run in runs.items():
        cfg = run["config"]
        assert (cfg["window"], cfg["tail"], cfg["mask"], cfg["pi_lr"], cfg["ent_coef"]) == \
            (32, 4, True, 3e-5, 0.001)
        assert cfg["run_options"]["init"] == f"k-s{seed}/validated/epoch-{STARTS[seed]}.pt"
        assert len(run["log"]) == 30 and cfg["trajectories_per_epoch"] == 16
    assert "updates 15, 10 and 50" in readme and "for 30 updates (480 episodes" in readme
    decisions = [sum(int(r["decisions"]) for r in run["log"]) / 1e6 for run in runs.values()]
    assert all(round(d, 1) == 1.4 for d in decisions) and "1.4 M decisions each" in readme
    secs = [float(r["epoch_s"]) for run in runs.values() for r in run["log"]]
    assert f"{min(secs):.0f}-{max(secs):.0f} s an update with its validation" in readme


def test_no_update_beat_its_start_on_the_runs_own_validation():
    """Each run's starting actor scored what the first run's validation recorded for that
    checkpoint (archived earlier), and no later validation was lower: best.pt is the start."""
    readme = section(TUNED_MARKER)
    first = first_validations()
    starts = []
    for seed, run in tuned_runs().items():
        start = starting_awt(run)
        assert start == round(first[seed][STARTS[seed]])
        starts.append(start)
        vals = [float(r["val_wait"]) for r in run["log"] if r["val_wait"]]
        assert min(vals) > start
        calm = [v for v in vals if v < 100_000]
        assert f"{min(calm):,.0f}-{max(calm):,.0f}" in readme, seed
        stalls = [(int(r["epoch"]), float(r["val_wait"])) for r in run["log"]
                  if r["val_wait"] and float(r["val_wait"]) >= 100_000]
        if stalls:
            assert stalls == [(25, pytest.approx(722_631, abs=0.5))] and seed == 2
            assert "seed 2's update 25, 722,631 s" in readme
    assert "{:,.0f}, {:,.0f} and {:,.0f} s at the start".format(*starts) in readme
    assert "each run's best.pt is the model it started from" in readme


def quoted_test_numbers(readme: str, out: dict):
    """Check the picks and the test episodes' mean and per-seed AWT and queue of a fine-tuning's
    output quoted in its README paragraph; returns (mean AWT, mean queue, per-seed lines)."""
    kept = [out["picks"][s][0] for s in (0, 1, 2)]
    assert "keeps updates {}, {} and {}".format(*kept) in readme
    w, w_sd, q, q_sd = out["test"]["mean"]
    assert f"AWT {w} ± {w_sd} s" in readme and f"queue {q} ± {q_sd} jobs" in readme
    test = [out["test"][s, "margin"] for s in (0, 1, 2)]
    assert "({:,.0f}, {:,.0f}, {:,.0f})".format(*[t[1] for t in test]) in readme
    assert "({:.2f}, {:.2f}, {:.2f})".format(*[t[2] for t in test]) in readme
    return w, q, test


def test_the_fine_tuned_test_numbers_come_from_the_output():
    readme = section(TUNED_MARKER)
    out = parsed(TUNED)
    w, q, test = quoted_test_numbers(readme, out)
    # the verdict: the queue lower than the starting models', not below SJF's; AWT above
    # LCFS with EASY's on every seed (the heuristics' test lines as the first output has them)
    first = parsed()["test"]["mean"]
    assert float(q) < float(first[2]) and f"came down from {first[2]}" in readme
    sjf_q, lcfs_w = 11.64, 3259
    assert "lowest heuristic AWT 3,259 s, queue 11.64" in TUNED.read_text()
    assert float(q) > sjf_q and all(t[1] > lcfs_w for t in test)
    episodes = [16 * STARTS[s] + 480 for s in (0, 1, 2)]
    assert f"{min(episodes):,} to {max(episodes):,} training episodes" in readme
    assert f"1/{100_000 // min(episodes)} to 1/{100_000 // max(episodes)}" in readme


# -- the same fine-tuning with the queue weighed more (--reward-weights 0.2,0.6,0.2) ---------------
QUEUE = DATA / "dbf_m32_queue_choice.txt"
QUEUE_RUNS = DATA / "dbf_m32_queue_runs.tar.gz"
QUEUE_MARKER = "**Fine-tuned with the queue weighed more (`--reward-weights`).**"


def queue_runs() -> dict[int, dict]:
    runs = load("dbf_sweep").read_archive(QUEUE_RUNS)
    return {r["config"]["seed"]: r for r in runs.values()}


def test_the_queue_weighed_runs_differ_from_the_fine_tuning_only_in_the_weights():
    """The same settings as the equal-weight fine-tuning, seed by seed, but the weights; and
    the first update's sampled episodes are the same (the same random starts: the weights move
    the rewards, not the draw), so the runs compare pair by pair."""
    readme = section(QUEUE_MARKER)
    tuned, runs = tuned_runs(), queue_runs()
    assert sorted(runs) == [0, 1, 2]
    for seed, run in runs.items():
        cfg, other = dict(run["config"]), dict(tuned[seed]["config"])
        assert cfg.pop("reward_weights") == [0.2, 0.6, 0.2]
        assert other.pop("reward_weights", [1 / 3] * 3) == [1 / 3] * 3  # saved before the option
        for c in (cfg, other):
            c.pop("epochs"), c.pop("episodes")  # the stop (960 asked, stopped at 30; 480)
        assert cfg == other, seed
        first, first_tuned = run["log"][0], tuned[seed]["log"][0]
        assert (first["wait"], first["queue_length"], first["decisions"]) == (
            first_tuned["wait"], first_tuned["queue_length"], first_tuned["decisions"])
        assert first["mean_reward"] != first_tuned["mean_reward"]
        assert len(run["log"]) == (31 if seed == 1 else 30)  # seed 1's 31st, said
    assert "seed 1 logged a 31st update" in readme
    secs = [float(r["epoch_s"]) for run in runs.values() for r in run["log"][:30]]
    assert f"{min(secs):.0f}-{max(secs):.0f} s an update with its validation" in readme
    for key, text in (("queue_length", "{:.2f}, {:.2f} and {:.2f} jobs on average"),
                      ("wait", "{:,.0f}, {:,.0f} and {:,.0f} s against")):
        ours = [np.mean([float(r[key]) for r in runs[s]["log"][:30]]) for s in (0, 1, 2)]
        theirs = [np.mean([float(r[key]) for r in tuned[s]["log"][:30]]) for s in (0, 1, 2)]
        assert text.format(*ours) in readme, key
        assert all(o < t for o, t in zip(ours, theirs)), key  # lower, seed by seed
        if key == "queue_length":
            assert "{:.2f}, {:.2f} and {:.2f} with equal weights".format(*theirs) in readme
            assert max(1 - o / t for o, t in zip(ours, theirs)) < 0.01  # "under 1 % fewer"
        else:
            assert "{:,.0f}, {:,.0f} and {:,.0f} s.".format(*theirs) in readme


def test_the_queue_weighed_numbers_come_from_the_output():
    readme = section(QUEUE_MARKER)
    out = parsed(QUEUE)
    first = first_validations()
    lows = []
    for seed, run in queue_runs().items():
        start = starting_awt(run)
        assert start == round(first[seed][STARTS[seed]])  # the same starts
        vals = [float(r["val_wait"]) for r in run["log"] if r["val_wait"]]
        assert min(vals) > start and max(vals) < 100_000  # best.pt: the start; no stall
        lows.append(min(vals))
    assert "(lowest afterwards {:,.0f}, {:,.0f} and {:,.0f} s)".format(*lows) in readme
    rows = [r for rs in out["runs"].values() for r in rs]
    best_q = min(q for _, q in out["heur"].values())
    qs = [r[3] for r in rows]
    assert len(rows) == 18 and "the 18 checkpoints queue" in readme
    assert f"queue {min(qs):.2f}-{max(qs):.2f} jobs, all above SJF's {best_q:.2f}" in readme
    assert min(qs) > best_q
    w, q, test = quoted_test_numbers(readme, out)
    # the verdict: AWT below LCFS with EASY's on the mean and on 2 of 3 seeds; the queue above
    # SJF's on every seed, where the starting models and the equal-weight fine-tuning had it
    sjf_q, lcfs_w = 11.64, 3259
    assert "lowest heuristic AWT 3,259 s, queue 11.64" in QUEUE.read_text()
    assert num(w) < lcfs_w and sum(t[1] < lcfs_w for t in test) == 2
    assert all(t[2] > sjf_q for t in test) and float(q) > sjf_q
    start_q, tuned_q = parsed()["test"]["mean"][2], parsed(TUNED)["test"]["mean"][2]
    assert f"({start_q} at the start, {tuned_q} after the" in readme
