"""The README's "The thesis's network against ours: Deeplearn, two seeds" against the runs' files
in benchmarks/data/herasched_thesis_net/ (each seed's log.csv, config.json and printed output, and
`experiment herasched`'s output, experiment.txt): the runs are the command printed, the table's
thesis rows and the update times are theirs, its rows of ours are MODELS.md's, the weight counts
are the networks' own, and the reading's ratios follow from the table. The models themselves
(41 MB each) are not bundled, so nothing here re-runs them."""

import csv
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "herasched_thesis_net"


def section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("**The thesis's network against ours: Deeplearn, two seeds.**")
    return text[start:text.index("**The shipped Physical models:", start)]


def flat() -> str:
    return " ".join(section().split())


def rows(seed: int) -> list[dict[str, str]]:
    with open(DATA / f"s{seed}" / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def table() -> dict[str, list[str]]:
    """The README table's rows: 'thesis, 0' -> its cells."""
    out = {}
    for line in section().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| thesis,") or line.startswith("| ours,"):
            out[cells[0].replace(" (shipped)", "")] = cells[1:]
    return out


def num(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.parametrize("seed", [0, 1])
def test_each_run_is_the_command_printed(seed):
    c = json.loads((DATA / f"s{seed}" / "config.json").read_text())
    assert (c["net"], c["seed"], c["epochs"], c["selector_every"], c["allocator_every"],
            c["gamma"], c["pi_lr"], c["cluster"], c["trace"]) == \
        ("thesis", seed, 100, 1, 1, 0.99, 1e-4, "spartan-deeplearn", "dl-train.txt")
    o = c["run_options"]
    assert (o["validate_trace"], o["validate_jobs"], o["validate_subsets"]) == \
        ("dl-validation.txt", 5000, 1)
    assert "--net thesis --epochs 100 --selector-every 1 --allocator-every 1 --gamma 0.99 " \
           "--pi-lr 1e-4" in flat()
    assert "--validate-jobs 5000 --validate-subsets 1" in flat()
    assert len(rows(seed)) == 100


def test_the_thesis_rows_are_the_runs_and_the_experiments():
    got = table()
    printed = (DATA / "experiment.txt").read_text()
    test, high = printed.split("== deeplearn-test-high-load")
    for seed in (0, 1):
        update, score = got[f"thesis, {seed}"][0].split(", ")
        logged = [(float(r["val_score"]), int(r["epoch"])) for r in rows(seed) if r["val_score"]]
        best = max(logged)
        assert (int(update), float(score)) == (best[1], round(best[0], 3))
        for part, (awt_mwt, beaten) in ((test, got[f"thesis, {seed}"][1:3]),
                                        (high, got[f"thesis, {seed}"][3:5])):
            awt, mwt = awt_mwt.split(" / ")
            line = re.search(rf"tn-s{seed}: AWT ([\d,.]+) s, MWT ([\d,]+) s;.*S > 2 against "
                             rf"(\d+) of 21", part)
            assert (num(line[1]), num(line[2])) == (num(awt), num(mwt))
            assert beaten == f"{line[3]} of 21"


def test_the_rows_of_ours_are_the_shipped_models():
    models = (ROOT / "src" / "hpcsched" / "data" / "pretrained" / "MODELS.md").read_text()
    got = table()
    for seed in (0, 1):
        first = re.search(rf"\| herasched-deeplearn-s{seed} \| {seed} \| (\d+), ([\d.]+) \|", models)
        assert got[f"ours, {seed}"][0] == f"{first[1]}, {first[2]}"
        for period, (awt_mwt, beaten) in (("test", got[f"ours, {seed}"][1:3]),
                                          ("test-high-load", got[f"ours, {seed}"][3:5])):
            row = re.search(rf"\| herasched-deeplearn-s{seed} \| {period} \| ([\d,.]+) \| "
                            rf"([\d,]+) \| (\d+) \|", models)
            assert awt_mwt == f"{row[1]} / {row[2]}" and beaten == f"{row[3]} of 21"


def test_the_reading_follows_from_the_table():
    got, text = table(), flat()
    t = {k: [num(x) for x in v[1].split(" / ")] for k, v in got.items()}
    h = {k: [num(x) for x in v[3].split(" / ")] for k, v in got.items()}
    awt = [round(t[f"thesis, {s}"][0] / t[f"ours, {s}"][0], 1) for s in (0, 1)]
    mwt = [round(t[f"thesis, {s}"][1] / t[f"ours, {s}"][1], 1) for s in (0, 1)]
    assert f"waits {awt[0]} and {awt[1]} times longer" in text
    assert f"largest wait is {mwt[0]} and {mwt[1]} times ours" in text
    assert all(h[f"ours, {s}"][1] < h[f"thesis, {s}"][1] for s in (0, 1))  # "MWT lower on both"
    # the one count the thesis's network wins: seed 1's AWT on the high-load day
    wins = [(s, i) for s in (0, 1) for i in (0, 1) if h[f"thesis, {s}"][i] < h[f"ours, {s}"][i]]
    wins += [(s, i) for s in (0, 1) for i in (0, 1) if t[f"thesis, {s}"][i] < t[f"ours, {s}"][i]]
    assert wins == [(1, 0)]
    best = max(float(got[f"thesis, {s}"][0].split(", ")[1]) for s in (0, 1))
    assert best < 2 and f"never reached S 2 (best {best:.3f})" in text


def test_the_update_times_are_the_logs():
    text = flat()
    means = [sum(float(r["epoch_s"]) for r in rows(s)) / 100 for s in (0, 1)]
    assert f"({means[0]:.1f} and {means[1]:.1f} s;" in text
    assert f"an update took {round(sum(means) / 2)} s on average" in text
    share = sum(float(r["rollout_s"]) for s in (0, 1) for r in rows(s)) / \
        sum(float(r["epoch_s"]) for s in (0, 1) for r in rows(s))
    assert f"{round(100 * share)} % of it the rollout" in text
    (low, high) = re.search(r"against ([\d.]+)-([\d.]+) s for ours", text).groups()
    models = (ROOT / "src" / "hpcsched" / "data" / "pretrained" / "MODELS.md").read_text()
    walls = [int(w.replace(",", "")) for w in
             re.findall(r"\| 100, [\d,]+, ([\d,]+) s \|", models)]
    assert (round(min(walls) / 100, 1), round(max(walls) / 100, 1)) == (float(low), float(high))


def test_the_weight_counts_are_the_networks():
    from hpcsched.agents.herasched_nets import agent_networks
    from hpcsched.cluster.load import load_cluster
    from hpcsched.envs.hera_observation import HeraLayout
    from hpcsched.envs.herasched import window_of

    layout = HeraLayout.of(load_cluster("spartan-deeplearn"),
                           *window_of("spartan-deeplearn", None, None))
    counts = {}
    for net in ("thesis", "default"):
        for agent in ("selector", "allocator"):
            actor, critic = agent_networks(net, layout, agent)
            counts[net, agent] = (sum(p.numel() for p in actor.parameters()),
                                  sum(p.numel() for p in critic.parameters()))
    text = flat()
    assert f"{counts['thesis', 'selector'][0]:,} weights in the selector's actor and " \
           f"{counts['thesis', 'allocator'][0]:,} in the allocator's" in text
    total = sum(a + c for (net, _), (a, c) in counts.items() if net == "thesis")
    assert f"({total / 1e6:.1f} M in the four networks)" in text
    assert f"against {counts['default', 'selector'][0]:,} and " \
           f"{counts['default', 'allocator'][0]:,} in ours" in text
    ours = sum(a + c for (net, _), (a, c) in counts.items() if net == "default")
    bench = " ".join((ROOT / "BENCHMARKS.md").read_text().split())
    assert f"{total / 1e6:.1f} M weights in the four networks against {ours / 1e3:.1f} k in " \
           f"ours" in bench


def test_the_benchmarks_table_is_the_logs():
    text = (ROOT / "BENCHMARKS.md").read_text()
    for seed in (0, 1):
        r = rows(seed)
        updates = sum(float(x["epoch_s"]) for x in r)
        line = re.search(rf"\| `--net thesis --seed {seed}` \| (\d+) \| ([\d,]+) / ([\d,]+) \| "
                         rf"([\d,]+) s \| (\d+) \| (\d+) % \|", text)
        assert line, seed
        sel = sum(int(x["selector_steps"]) for x in r)
        assert (int(line[1]), num(line[2]), num(line[3]), num(line[4])) == \
            (len(r), sel, sum(int(x["allocator_steps"]) for x in r), round(updates))
        assert int(line[5]) == round(sel / updates)
        assert int(line[6]) == round(100 * sum(float(x["rollout_s"]) for x in r) / updates)
