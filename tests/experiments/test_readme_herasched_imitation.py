"""The README's "A warm start by imitation" paragraph against its data
(benchmarks/data/herasched_imitation/): each run is the command quoted (config.json), its best.pt
is the update its validation scores say (the start counting), the imitation's figures are its
output's, and every wait, count and score of the bullets is recomputed from the evaluations'
outputs and rows; the Deeplearn starts made again with --epochs 1 are the 40-update runs' starts;
the stored models, rescored, give the outputs' waits."""

import csv
import json
import re
import statistics
from pathlib import Path

import pytest

from tests.experiments.test_readme_herasched_physical import flat

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_imitation"


def readme() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**A warm start by imitation (`--imitate`)")
    return flat(text[start:text.index("**The two networks on Physical", start)])


def log(run: str, seed: int) -> list[dict]:
    with open(DATA / run / f"s{seed}" / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def output(run: str, seed: int) -> str:
    return (DATA / run / f"s{seed}" / "output.txt").read_text()


def config(run: str, seed: int) -> dict:
    return json.loads((DATA / run / f"s{seed}" / "config.json").read_text())


def start_score(run: str, seed: int) -> float:
    """The imitated start's validation S: exact in the model file's history (its update 0),
    printed to 3 decimals in the output."""
    from hpcsched.modelfile import read_model

    name = "start.pt" if run == "deeplearn-start" else "best.pt"
    history = read_model(DATA / run / f"s{seed}" / name)["history"]
    score = next(h["val_score"] for h in history if h["epoch"] == 0)
    printed = re.search(r"starting greedy model: validation S ([\d.]+)", output(run, seed))[1]
    assert printed == f"{score:.3f}"
    return score


def scores(run: str, seed: int) -> list[tuple[int, float]]:
    """(update, validation S), the start's first."""
    return [(0, start_score(run, seed))] + [(int(r["epoch"]), float(r["val_score"]))
                                            for r in log(run, seed) if r["val_score"]]


def best_update(run: str, seed: int) -> int:
    """best.pt's update: the first of the highest score (a later equal one does not replace it)."""
    s = scores(run, seed)
    top = max(v for _, v in s)
    return next(e for e, v in s if v == top)


def n(text: str) -> float:
    return float(text.replace(",", ""))


def period(text: str, name: str) -> str:
    """One period's part of an `experiment herasched` output."""
    start = text.index(f"== {name}:")
    end = text.find("\n== ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def criteria(text: str) -> dict:
    """The criteria lines of one period: per-model (AWT, MWT), and the mean's MWT, cells below
    and cells with S > 2."""
    per = {m: (n(a), n(w)) for m, a, w in
           re.findall(r"\n  (\S+): AWT ([\d,.]+) s, MWT ([\d,]+) s;", text)}
    mean = re.search(r"MWT below every cell's: (?:yes|no) \(([\d,]+) s, mean of 3 models;.*"
                     r"below (\d+) of 21 cells\)\n- S > 2 against (\d+) of 21", text)
    return {"per": per, "mwt": n(mean[1]), "below": int(mean[2]), "s2": int(mean[3])}


def test_the_runs_are_the_commands_quoted():
    text = readme()
    for run, seeds, epochs in (("physical", 3, 30), ("deeplearn", 3, 40),
                               ("deeplearn-start", 3, 1), ("cerit", 1, 30)):
        for seed in range(seeds):
            c = config(run, seed)
            assert c["seed"] == seed and len(log(run, seed)) == epochs == c["epochs"]
            assert (c["selector_every"], c["allocator_every"], c["gamma"], c["pi_lr"]) == \
                (1, 1, 0.99, 1e-4)
            imitate, place_with, reserve = {
                "physical": ("first-fit", "best-fit", None),
                "deeplearn": ("first-fit+topology", None, 0.0),
                "deeplearn-start": ("first-fit+topology", None, 0.0),
                "cerit": ("first-fit", "best-fit", 0.0)}[run]
            assert c["run_options"]["imitate"] == imitate
            assert (c["place_with"], c["reserve_after"]) == (place_with, reserve)
            if run.startswith("deeplearn"):
                assert (c["selector_reward"], c["trace"]) == ("squared", "dl-train-mixed.txt")
                assert c["run_options"]["validate_also"] == "dl-validation-high-load.txt"
            if run != "deeplearn-start":
                from hpcsched.modelfile import read_model

                best = read_model(DATA / run / f"s{seed}" / "best.pt")
                assert best["epoch"] == best_update(run, seed)
    assert "--imitate first-fit+topology" in text and "--reserve-after 0" in text


def test_the_imitation_figures_are_the_outputs():
    text = readme()

    def span(values, fmt):
        return f"{fmt(min(values))}-{fmt(max(values))}"

    lines = {run: [re.search(r"imitating (\S+): the selector on 2,048 decisions \(greedy agrees on "
                             r"([\d.]+)%, loss ([\d.]+)\)(?: and the allocator on [\d,]+ decisions "
                             r"\(greedy agrees on ([\d.]+)%)?", output(run, s))
                   for s in range(3)] for run in ("physical", "deeplearn")}
    ph = [float(m[2]) for m in lines["physical"]]
    dl = [float(m[2]) for m in lines["deeplearn"]]
    alloc = [float(m[4]) for m in lines["deeplearn"]]
    assert f"{span(ph, str)} % of their demonstrations on Physical and {span(dl, str)} %" in text
    assert f"allocators take topology's nodes on {span(alloc, str)} %" in text
    assert {m[3] for m in lines["physical"]} >= {"2.475"}
    assert "the fitted loss stays at 2.475" in text
    # the starts made again with --epochs 1 are the 40-update runs' (the same imitation)
    for seed in range(3):
        assert start_score("deeplearn-start", seed) == start_score("deeplearn", seed)
        first = lambda run: log(run, seed)[0]  # noqa: E731
        assert first("deeplearn-start")["mean_reward"] == first("deeplearn")["mean_reward"]


def test_the_physical_bullets():
    text = readme()
    starts = [start_score("physical", s) for s in range(3)]
    assert f"S {starts[0]:.3f}, {starts[1]:.3f} and {starts[2]:.3f} on the" in text
    assert [best_update("physical", s) for s in range(3)] == [0, 30, 0]
    assert f"Seed 1 scored {dict(scores('physical', 1))[30]:.3f} at update 30" in text
    test = criteria((DATA / "physical-test.txt").read_text())
    per = [test["per"][f"runs/pi-s{s}"][1] for s in range(3)]
    assert (f"mean MWT {test['mwt']:,.0f} ± {statistics.stdev(per):,.0f} s (per seed "
            f"{per[0]:,.0f}, {per[1]:,.0f} and {per[2]:,.0f} s), below {test['below']} of the 21 "
            f"cells, S > 2 against {test['s2']}") in text
    assert statistics.mean(per) == pytest.approx(test["mwt"], abs=0.5)
    rows = json.loads((DATA / "physical-update30-test.json").read_text())
    late = [r["max_wait"] for r in rows if "epoch-30.pt" in r["policy"]]
    assert f"update 30 wait {late[0]:,.0f}, {late[1]:,.0f} and {late[2]:,.0f} s" in text
    high = criteria(period((DATA / "physical-high.txt").read_text(), "physical-test-high-load"))
    hper = [high["per"][f"runs/pi-s{s}"][1] for s in range(3)]
    assert (f"High-load day: {high['mwt']:,.0f} ± {statistics.stdev(hper):,.0f} s ({hper[0]:,.0f}, "
            f"{hper[1]:,.0f} and {hper[2]:,.0f} s), below {high['below']} cells") in text


def rule_rows() -> dict:
    rows = json.loads((DATA / "deeplearn-flat-reserve.json").read_text())
    out = {}
    for r in rows:
        if r["policy"].startswith("herasched:"):
            out[r["period"], r["policy"].split("@", 1)[1]] = r
        elif not r["policy"].startswith("herasched"):
            out.setdefault((r["period"], "cells"), []).append(r)
    return out


def test_the_rule_itself_on_deeplearn():
    text = readme()
    rows = rule_rows()
    for name in ("test", "test-high-load"):
        rule = rows[name, "reserve@allocator=topology"]
        cells = rows[name, "cells"]
        assert len(cells) == 21
        s = [c["wait"] / rule["wait"] + c["max_wait"] / rule["max_wait"] for c in cells]
        lowest = min(c["max_wait"] for c in cells)
        assert f"AWT {rule['wait']:,.1f} s and MWT {rule['max_wait']:,.0f} s" in text
        if name == "test":  # equal to the lowest cell's MWT, S > 2 against all
            assert rule["max_wait"] == lowest and min(s) > 2
            fcfs = next(c for c in cells if (c["policy"], c["allocator"]) == ("fcfs", "topology"))
            assert fcfs["max_wait"] == lowest
            assert f"(FCFS + topology, AWT {fcfs['wait']:.1f} s)" in text
            assert "S > 2 against all 21 cells" in text
        else:  # below every cell's MWT, S > 2 against few
            assert rule["max_wait"] < lowest and f"the lowest is {lowest:,.0f} s" in text
            assert f"with S > 2 against {sum(v > 2 for v in s)} cells" in text
        free = rows[name, "allocator=topology"]
        assert free["max_wait"] > rule["max_wait"]
    free = [rows[p, "allocator=topology"]["max_wait"] for p in ("test", "test-high-load")]
    assert f"Without the reservation the same rule waits {free[0]:,.0f} and {free[1]:,.0f} s" \
        in text


def test_the_deeplearn_bullets():
    text = readme()
    out = {k: (DATA / f"{k}.txt").read_text() for k in ("deeplearn", "deeplearn-start")}
    for key, prefix in (("deeplearn-start", "runs/di0-s{}/validated/epoch-0.pt"),
                        ("deeplearn", "runs/di-s{}")):
        test = criteria(period(out[key], "deeplearn-test"))
        high = criteria(period(out[key], "deeplearn-test-high-load"))
        t = [test["per"][prefix.format(s)][1] for s in range(3)]
        h = [high["per"][prefix.format(s)][1] for s in range(3)]
        assert f"MWT {test['mwt']:,.0f} s ({t[0]:,.0f}, {t[1]:,.0f} and {t[2]:,.0f} s)" in text
        assert f"{high['mwt']:,.0f} s ({h[0]:,.0f}, {h[1]:,.0f} and {h[2]:,.0f} s)" in text
        if key == "deeplearn-start":
            starts_test, starts_high = test["mwt"], h
            assert high["below"] == 21 and f"with S > 2 against {high['s2']} cells" in text
        else:
            assert f"below {test['below']} of 21 cells, S > 2 against {test['s2']}" in text
            assert f"below {high['below']} cells, S > 2 against {high['s2']}" in text
            assert test["mwt"] < starts_test  # PPO lowered the test period's
            assert f"(sd {statistics.stdev(t):,.0f} s)" in text
            worse = sum(a > b for a, b in zip(h, starts_high))
            assert worse == 2 and "on two seeds of three" in text
    best = [best_update("deeplearn", s) for s in range(3)]
    assert f"best.pt came at updates {best[0]}, {best[1]} and {best[2]}" in text
    tops = [dict(scores("deeplearn", s))[b] for s, b in enumerate(best)]
    starts = [start_score("deeplearn", s) for s in range(3)]
    assert all(t > s for t, s in zip(tops, starts))
    assert (f"({tops[0]:.3f}, {tops[1]:.3f} and {tops[2]:.3f}, against {starts[0]:.3f}, "
            f"{starts[1]:.3f} and {starts[2]:.3f})") in text


def test_the_cerit_bullet():
    text = readme()
    val = scores("cerit", 0)
    assert {f"{v:.3f}" for _, v in val} == {"1.500"} and [e for e, _ in val] == [0, 10, 20, 30]
    waits = [float(r["wait"]) for r in log("cerit", 0) if r["wait"]]
    assert min(waits) == 0 and f"0 to {max(waits):.1f} s per update" in text
    rows = json.loads((DATA / "cerit-test.json").read_text())
    model = next(r for r in rows if r["policy"] == "herasched:runs/cr-s0")
    fcfs = next(r for r in rows if (r["policy"], r["allocator"]) == ("fcfs", "best-fit"))
    assert (f"waits {model['wait']:,.1f} s on average and {model['max_wait']:,.0f} s at most, "
            f"against FCFS + best-fit's {fcfs['max_wait']:,.0f} s") in text
    assert model["max_wait"] > fcfs["max_wait"]


def test_the_stored_deeplearn_models_rescored():
    """best.pt and the starts, on the test period: the outputs' waits."""
    from hpcsched.experiments.herasched_eval import period_prepared, run_model

    prepared = period_prepared("spartan-deeplearn", "test")
    for key, name, label in (("deeplearn", "best.pt", "runs/di-s{}"),
                             ("deeplearn-start", "start.pt", "runs/di0-s{}/validated/epoch-0.pt")):
        per = criteria(period((DATA / f"{key}.txt").read_text(), "deeplearn-test"))["per"]
        for seed in range(3):
            run = run_model(prepared, str(DATA / key / f"s{seed}" / name))
            assert (f"{run.awt:,.1f}", f"{run.mwt:,.0f}") == \
                (f"{per[label.format(seed)][0]:,.1f}", f"{per[label.format(seed)][1]:,.0f}")


def test_the_physical_runs_with_both_agents_imitating():
    from hpcsched.modelfile import read_model

    text = readme()
    run = "physical-both"
    agree = []
    for seed in range(3):
        c = config(run, seed)
        assert (c["seed"], c["place_with"], c["run_options"]["imitate"]) == \
            (seed, None, "first-fit+best-fit")
        rows = log(run, seed)
        assert [int(r["epoch"]) for r in rows] == list(range(1, 25))  # stopped after 24
        start = read_model(DATA / run / f"s{seed}" / "start.pt")
        assert start["epoch"] == 0
        score = start["history"][0]["val_score"]
        later = [float(r["val_score"]) for r in rows if r["val_score"]]
        assert f"{score:.3f}" == "3.359" and len(later) == 2 and max(later) <= score
        out = output(run, seed)
        assert f"starting greedy model: validation S {score:.3f}" in out
        agree.append(float(re.search(r"allocator on [\d,]+ decisions \(greedy agrees on "
                                     r"([\d.]+)%", out)[1]))
    assert f"best-fit's nodes on only {min(agree)}-{max(agree)} %" in text
    assert "each start scored S 3.359" in text and "stopped after 24 updates" in text
    starts = [start_score("physical", s) for s in range(3)]
    assert f"selector-only starts above scored {min(starts):.3f}-{max(starts):.3f}" in text
    assert "| Physical, high-load day | its own agent | 320,746 |" in \
        (ROOT / "README.md").read_text()  # the shipped models', in "Against a flat selector"
    assert "about what the shipped models wait (320,746 s)" in text
    test = criteria((DATA / "physical-both-test.txt").read_text())
    label = "runs/pa-s{}/validated/epoch-0.pt"
    per = [test["per"][label.format(s)][1] for s in range(3)]
    assert (test["below"], test["s2"]) == (21, 21)
    assert (f"mean MWT {test['mwt']:,.0f} s ({per[0]:,.0f}, {per[1]:,.0f} and {per[2]:,.0f} s), "
            f"below every cell (the lowest is 90,396 s), with S > 2 against all 21 cells") in text
    assert sum(p < 90_396 for p in per) == 2 and "on two seeds of three" in text
    high = criteria(period((DATA / "physical-both-high.txt").read_text(),
                           "physical-test-high-load"))
    hper = [high["per"][label.format(s)][1] for s in range(3)]
    assert (f"High-load day, the starts: mean MWT {high['mwt']:,.0f} s ({hper[0]:,.0f}, "
            f"{hper[1]:,.0f} and {hper[2]:,.0f} s), below {high['below']} of the 21 cells, "
            f"with S > 2 against {high['s2']}") in text


@pytest.mark.slow
def test_the_stored_physical_starts_rescored():
    """The three starts of both agents imitating, on Physical's test period: the output's waits."""
    from hpcsched.experiments.herasched_eval import period_prepared, run_model

    per = criteria((DATA / "physical-both-test.txt").read_text())["per"]
    prepared = period_prepared("spartan-physical", "test")
    for seed in range(3):
        run = run_model(prepared, str(DATA / "physical-both" / f"s{seed}" / "start.pt"))
        awt, mwt = per[f"runs/pa-s{seed}/validated/epoch-0.pt"]
        assert (f"{run.awt:,.1f}", f"{run.mwt:,.0f}") == (f"{awt:,.1f}", f"{mwt:,.0f}")
        assert run.placed == "agent"
