"""The README's numbers for the shipped SchedInspector, DeepRM and DRAS models, recomputed.

Every table cell the README prints for these families' learned models (and the heuristics printed
beside them) is recomputed by the command the README names and compared with the README's text at
the precision printed, so a README number cannot drift from what the code gives. The whole tables
are `slow` (minutes: `pytest -m slow tests/experiments/test_readme_learned_numbers.py`); a few cells,
one per family, run in the default suite.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpcsched.cli import main

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


# -- reading the README -----------------------------------------------------------------------------
def section(anchor: str) -> str:
    """The README from the first line holding `anchor` to the next heading."""
    start = README.index(anchor)
    nxt = re.search(r"^#", README[start + len(anchor):], flags=re.M)
    return README[start: start + len(anchor) + (nxt.start() if nxt else len(README))]


def tables(anchor: str) -> list[list[list[str]]]:
    """The Markdown tables of `section(anchor)`: rows (header first) of stripped cells."""
    out, current = [], None
    for line in section(anchor).splitlines():
        line = line.strip()
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set(line) <= set("|-: "):
                continue  # the rule under the header
            if current is None:
                current = []
                out.append(current)
            current.append(cells)
        else:
            current = None
    return out


def matches(printed: str, value: float, scale: float = 1.0) -> bool:
    """Whether `value * scale` prints as `printed` ("**2.43**", "11.2%", "1,400") at the
    number of decimals printed."""
    text = printed.replace("**", "").replace("%", "").replace(",", "").strip()
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{value * scale:.{decimals}f}" == text


def check(row_label: str, cells: dict[str, str], values: dict[str, float],
          scales: dict[str, float] | None = None) -> list[str]:
    """The cells of one printed row that the recomputed values do not match."""
    scales = scales or {}
    return [f"{row_label} / {k}: README {cells[k]}, computed {v * scales.get(k, 1.0):.6g}"
            for k, v in values.items() if not matches(cells[k], v, scales.get(k, 1.0))]


# -- SchedInspector: `experiment schedinspector-table4 --markdown`, line for line ---------------------
T4_CODE = "### Results: the paper's Table 4 protocol"
T4_OURS = "### Results: our protocol (`--windows ours`)"


def table4_lines(capsys, *argv: str) -> list[str]:
    assert main(["experiment", "schedinspector-table4", "--markdown", *argv]) == 0
    return capsys.readouterr().out.strip().splitlines()[2:]  # the rows, without the header


def assert_lines_printed(lines: list[str], anchor: str) -> None:
    """Every row of the command's that the README prints (by trace, base, backfill and source),
    the model's rows ("ours") all, is printed in the README as the command prints it."""
    def key(line: str) -> tuple[str, ...]:
        return tuple(c.strip() for c in line.strip().strip("|").split("|")[:4])

    printed = {key(line): line.strip() for line in section(anchor).splitlines()
               if line.startswith("| ") and len(key(line)) == 4}
    wrong = [f"README: {printed.get(key(line), '(no row)')}\ncommand: {line}" for line in lines
             if printed.get(key(line), line if key(line)[3] != "ours" else None) != line]
    assert not wrong, "README rows that differ from the command's:\n" + "\n".join(wrong)


def test_an_inspector_cell_of_table4_is_the_readmes(capsys):
    lines = table4_lines(capsys, "--traces", "hpc2n", "--bases", "f1", "--no-rule")
    assert any(" | ours | " in line for line in lines)
    assert_lines_printed(lines, T4_CODE)


@pytest.mark.slow
@pytest.mark.parametrize("anchor,argv", [
    (T4_CODE, []),
    (T4_CODE, ["--backfill", "schedgym", "--bases", "sjf,f1"]),
    (T4_CODE, ["--traces", "lublin-1", "--bases", "fcfs"]),
    (T4_OURS, ["--windows", "ours"]),
    (T4_OURS, ["--windows", "ours", "--backfill", "schedgym", "--bases", "sjf,f1"]),
    (T4_OURS, ["--windows", "ours", "--traces", "lublin-1", "--bases", "fcfs"]),
], ids=["code", "code-backfill", "code-fcfs", "ours", "ours-backfill", "ours-fcfs"])
def test_table4_is_the_readmes(capsys, anchor, argv):
    assert_lines_printed(table4_lines(capsys, *argv), anchor)


# -- SchedInspector over training seeds: `experiment schedinspector-seeds --markdown` ------------------
SEEDS_SECTION = "#### Judged over training seeds (both protocols)"


def seed_rows_printed(draws, rows=None) -> list[str]:
    """The command's Markdown rows (without the header) for these protocols and recipes."""
    from hpcsched.experiments import schedinspector_seeds as S
    from hpcsched.report.table import format_rows

    kwargs = {"rows": rows} if rows else {}
    table, cols = S.printed(S.seed_study(draws=draws, **kwargs))
    return format_rows(table, "markdown", columns=cols).splitlines()[2:]


def assert_seed_rows_printed(lines: list[str]) -> None:
    def key(line: str) -> tuple[str, ...]:
        return tuple(c.strip() for c in line.strip().strip("|").split("|")[:4])

    printed = {key(line): line.strip() for line in section(SEEDS_SECTION).splitlines()
               if line.startswith("| ") and len(key(line)) == 4}
    wrong = [f"README: {printed.get(key(line), '(no row)')}\ncommand: {line}" for line in lines
             if printed.get(key(line)) != line]
    assert not wrong, "seed rows that differ from the command's:\n" + "\n".join(wrong)


def test_an_inspector_seed_row_is_the_readmes():
    lines = seed_rows_printed(["ours"], rows=[("hpc2n", "f1", "none")])
    assert len(lines) == 1
    assert_seed_rows_printed(lines)


@pytest.mark.slow
def test_the_inspector_seed_table_is_the_readmes():
    lines = seed_rows_printed(["code", "ours"])
    assert len(lines) == 26
    assert_seed_rows_printed(lines)


# -- DeepRM over training seeds: `experiment deeprm-seeds --markdown` --------------------------------
DEEPRM_SEEDS = "**Three training seeds per recipe; the shipped model is the one validation chose.**"


@pytest.mark.parametrize("argv, lines", [(["--loads", "1.1"], 6),
                                         pytest.param(["--sweep"], 21, marks=pytest.mark.slow)],
                         ids=["110", "sweep"])
def test_the_deeprm_seed_tables_are_the_readmes(capsys, argv, lines):
    assert main(["experiment", "deeprm-seeds", "--markdown", *argv]) == 0
    out = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    text = section(DEEPRM_SEEDS).splitlines()
    missing = [line for line in out if line not in text]
    assert len(out) == lines and not missing, "\n".join(missing)


# -- DeepRM: the load sweep (Fig. 4), Fig. 5, Fig. 7 and the Lublin-1 runs -----------------------------
SWEEP = "Our sweep (`hpcsched experiment deeprm-load-sweep`"
SWEEP_COLUMNS = {"SJF": "sjf", "Packer": "packer", "Tetris*": "tetris:0.1", "Random": "random",
                 "DeepRM": "deeprm"}


def sweep_rows() -> dict[str, list[str]]:
    head, *rows = tables(SWEEP)[0]
    return {r[0]: dict(zip(head, r)) for r in rows}


def test_deeprm_at_70_percent_is_the_readmes():
    """One row's DeepRM cells, computed as the sweep computes them (the heuristics' cells are
    left out here: DeepRM's own code pins them, `test_deeprm_exact.py`)."""
    from hpcsched.agents.deeprm_policy import load_deeprm_policy
    from hpcsched.experiments.deeprm import model_loads
    from hpcsched.sim.discrete_batch import DiscreteBatch, run_batch
    from hpcsched.workload.deeprm import TEST_SEED, generate, rate_for_load

    trained = model_loads(None, "slowdown")
    near = min(trained, key=lambda x: abs(x - 0.7))
    jobs = generate(100, rate_for_load(0.7), 50, seed=TEST_SEED)
    m = run_batch(DiscreteBatch(), jobs, load_deeprm_policy(trained[near]),
                  max_decisions=20_000).metrics()
    values = {"DeepRM": m["slowdown"], "withheld": m["withheld_share"], "model": near}
    bad = check("70%", sweep_rows()["70%"], values, {"withheld": 100.0, "model": 100.0})
    assert not bad, "\n".join(bad)


@pytest.mark.slow
def test_the_deeprm_load_sweep_is_the_readmes():
    from hpcsched.experiments.deeprm import SWEEP_LOADS, load_sweep

    rows = load_sweep()
    printed = sweep_rows()
    assert len(printed) == len(SWEEP_LOADS)
    bad = []
    for label, cells in printed.items():
        load = min(SWEEP_LOADS, key=lambda x: abs(100 * x - float(label.rstrip("%"))))
        got = {r["policy"]: r for r in rows if r["load"] == load}
        values = {col: got[p]["slowdown"] for col, p in SWEEP_COLUMNS.items()}
        values.update(offered=got["deeprm"]["offered_load"], model=got["deeprm"]["model_load"],
                      withheld=got["deeprm"]["withheld_share"])
        bad += check(label, cells, values, {"offered": 100.0, "model": 100.0, "withheld": 100.0})
    assert not bad, "\n".join(bad)


@pytest.mark.slow
def test_deeprm_fig5_is_the_readmes():
    from hpcsched.experiments.deeprm import load_sweep

    head, *rows = tables("Fig. 5 (130% load")[0]
    slowdown_model = {r["policy"]: r for r in load_sweep([1.3])}
    completion_model = {r["policy"]: r for r in load_sweep([1.3], reward="completion")}
    bad = []
    for cells in rows:
        metric = cells[0]
        printed = dict(zip(head, cells))
        values = {col: slowdown_model[p][metric] for col, p in SWEEP_COLUMNS.items()
                  if col != "DeepRM"}
        values[head[5]] = slowdown_model["deeprm"][metric]
        values[head[6]] = completion_model["deeprm"][metric]
        bad += check(metric, printed, values)
    assert len(rows) == 2 and not bad, "\n".join(bad)


@pytest.mark.slow
def test_deeprm_fig7_is_the_readmes():
    from hpcsched.agents.deeprm_policy import load_deeprm_policy
    from hpcsched.experiments.deeprm import what_it_learned
    from hpcsched.experiments.policyspec import PRETRAINED

    model, tetris = what_it_learned(load_deeprm_policy(PRETRAINED / "deeprm-load-110.pt"), 1.1)
    text = " ".join(section("Beside the paper (Fig. 4 and Fig. 7").split())
    assert (f"small {model['slowdown_short']:.2f} against {tetris['slowdown_short']:.2f}, large "
            f"{model['slowdown_long']:.2f} against {tetris['slowdown_long']:.2f}") in text
    assert (f"{100 * model['withheld_share']:.1f}% of time steps; "
            f"{100 * model['withheld_long_share']:.0f}% of the held-back job-steps") in text


@pytest.mark.slow
def test_deeprm_on_lublin_1_is_the_readmes(capsys):
    import json

    argv = ["compare", "lublin-1", "--backfill", "none", "--jobs", "2000", "--json", "--policies",
            "packer,tetris:0.1,deeprm:pretrained/deeprm-load-110"]
    assert main([*argv, "--profile", "deeprm-unbounded"]) == 0
    unbounded = {r["policy"]: r for r in json.loads(capsys.readouterr().out)}
    assert main([*argv, "--profile", "deeprm"]) == 0
    bounded = {r["policy"]: r for r in json.loads(capsys.readouterr().out)}
    model = "deeprm:pretrained/deeprm-load-110"
    text = " ".join(section("- **Traces** (`simulate --profile deeprm`)").split())
    assert (f"`{model}` gets {unbounded[model]['slowdown']:.1f} against Packer's "
            f"{unbounded['packer']['slowdown']:.1f} and Tetris*'s "
            f"{unbounded['tetris:0.1']['slowdown']:.1f}") in text
    assert (f"it drops {bounded[model]['dropped']:.0f} of the 1,949 mapped jobs, Packer "
            f"{bounded['packer']['dropped']:.0f} and Tetris* {bounded['tetris:0.1']['dropped']:.0f}"
            ) in text


# -- DRAS: `experiment dras`, the rows and the ratios against FCFS+EASY --------------------------------
DRAS_COLUMNS = {"avg wait (h)": ("wait", 1 / 3600), "max wait (h)": ("max_wait", 1 / 3600),
                "avg slowdown": ("slowdown", 1.0), "avg response (h)": ("turnaround", 1 / 3600),
                "utilization": ("utilization", 1.0), "ready % jobs": ("ready_jobs_pct", 1.0),
                "reserved % jobs": ("reserved_jobs_pct", 1.0),
                "backfilled % jobs": ("backfilled_jobs_pct", 1.0),
                "ready % node-h": ("ready_nodeh_pct", 1.0),
                "reserved % node-h": ("reserved_nodeh_pct", 1.0),
                "backfilled % node-h": ("backfilled_nodeh_pct", 1.0)}
RATIO_COLUMNS = {"avg wait": "wait_vs_fcfs", "avg slowdown": "slowdown_vs_fcfs",
                 "max wait": "max_wait_vs_fcfs", "jobs over FCFS's max wait": "jobs_over_fcfs_max"}
RICC = "### RICC, capability reward (Eq. 1)"
RICC_CAPACITY = "### RICC, capacity reward (an extra)"
HPC2N = "### HPC2N, capacity reward"


def dras_mismatches(anchor: str, rows: list[dict], results: dict | None = None) -> list[str]:
    """Every cell of the section's first table (and, with `results`, of its ratio table) that the
    recomputed rows do not print."""
    from hpcsched.experiments.dras import verdicts

    found = tables(anchor)
    assert found[0][0][0] == "method" and (results is None or found[1][0][0] == "method")
    head, *printed = found[0]
    by = {r["policy"]: r for r in rows}
    fcfs = by["fcfs-easy"]
    bad = []
    for cells in printed:
        cells = dict(zip(head, cells))
        if cells["method"] not in by:
            continue
        r = by[cells["method"]]
        values = {col: r[key] * scale for col, (key, scale) in DRAS_COLUMNS.items()}
        values["max wait / FCFS"] = r["max_wait"] / fcfs["max_wait"]
        bad += check(cells["method"], cells, values)
    if results is not None:
        head, *printed = found[1]
        ratios = {v["policy"]: v for v in verdicts(rows, results)}
        for cells in printed:
            cells = dict(zip(head, cells))
            v = ratios[cells["method"]]
            bad += check(cells["method"], cells, {c: v[k] for c, k in RATIO_COLUMNS.items()})
    return bad


def dras_rows(trace: str, reward: str, methods):
    from hpcsched.experiments.dras import evaluate

    return evaluate(trace, reward=reward, methods=methods)


def test_dras_pg_on_hpc2n_is_the_readmes():
    rows, _ = dras_rows("hpc2n", "capacity", ("fcfs-easy", "dras-pg"))
    bad = dras_mismatches(HPC2N, rows)
    assert not bad, "\n".join(bad)


@pytest.mark.slow
@pytest.mark.parametrize("anchor,trace,reward,methods", [
    (HPC2N, "hpc2n", "capacity", None),
    (RICC_CAPACITY, "ricc", "capacity", ("fcfs-easy", "dras-pg", "dras-dql")),
], ids=["hpc2n-capacity", "ricc-capacity"])
def test_dras_tables_are_the_readmes(anchor, trace, reward, methods):
    from hpcsched.experiments.dras import METHODS

    rows, _ = dras_rows(trace, reward, methods or METHODS)
    assert len(rows) == len(tables(anchor)[0]) - 1  # every printed row recomputed
    bad = dras_mismatches(anchor, rows)
    assert not bad, "\n".join(bad)


@pytest.mark.slow
def test_the_dras_seed_tables_are_the_readmes(capsys):
    """`experiment dras-seeds --markdown`'s two tables, printed in the README line for line (every recipe), and
    the seeds' rows of the DRAS-DQL runs table (about 5 minutes)."""
    assert main(["experiment", "dras-seeds", "--markdown"]) == 0
    out = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    text = section(RICC)
    missing = [line for line in out if line not in text.splitlines()]
    assert len(out) == 14 and not missing, "\n".join(missing)  # 2 headers, 9 seeds, 3 recipes
    per_seed = {r[1]: r for r in (c.strip("|").split("|") for c in out[1:4])}
    head, *body = runs_table("DRAS-DQL run")
    for row in body:
        seed = row[0].split("seed ")[1].split()[0]
        cells = dict(zip(head, row))
        got = [c.strip() for c in per_seed[f" {seed} "]]
        assert cells["best.pt episode"] == got[2] and cells["validation wait / FCFS"] == got[3]
        assert cells["test wait / FCFS"] == got[5] and cells["test slowdown / FCFS"] == got[6]
        assert matches(cells["test max wait / FCFS"], float(got[7]))


def runs_table(first_header: str) -> list[list[str]]:
    """The RICC section's table whose first column is `first_header` (the seeds' runs)."""
    return next(t for t in tables(RICC) if t[0][0] == first_header)


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
def test_dras_on_ricc_is_the_readmes():
    """The RICC table, its ratios, the shipped runs' test columns in the seeds' tables and the
    weekly waits of the text."""
    from hpcsched.experiments.dras import METHODS, verdicts, weekly_waits

    rows, results = dras_rows("ricc", "capability", METHODS)
    assert len(rows) == len(tables(RICC)[0]) - 1
    bad = dras_mismatches(RICC, rows, results)
    ratios = {v["policy"]: v for v in verdicts(rows, results)}
    for method, table, label in (("dras-dql", runs_table("DRAS-DQL run"),
                                  "discount 0.9, seed 0 (shipped)"),
                                 ("dras-pg", runs_table("DRAS-PG run"), "seed 0 (shipped)")):
        cells = dict(zip(table[0], next(r for r in table[1:] if r[0] == label)))
        v = ratios[method]
        bad += check(label, cells, {"test wait / FCFS": v["wait_vs_fcfs"],
                                    "test slowdown / FCFS": v["slowdown_vs_fcfs"],
                                    "test max wait / FCFS": v["max_wait_vs_fcfs"]})
    assert not bad, "\n".join(bad)
    origin = min(float(r.jobs.submit.min()) for r in results.values())
    week = {m: " / ".join(f"{w / 3600:.1f}" for w in weekly_waits(results[m], origin)[0])
            for m in ("fcfs-easy", "dras-dql")}
    assert (f"({week['dras-dql']} h against FCFS+EASY's {week['fcfs-easy']} h)"
            in flat(section(RICC)))


# -- MODELS.md: the DRAS models' validation with the greedy rule ----------------------------------------
MODELS_MD = (Path(__file__).resolve().parents[2] / "src" / "hpcsched" / "data" / "pretrained"
             / "MODELS.md").read_text()


def validation(name: str):
    """(total reward, mean wait) of a shipped DRAS model on its own run's validation days, and
    FCFS+EASY's mean wait there."""
    from hpcsched.agents.dras_episode import run_episode
    from hpcsched.agents.dras_policy import checked_agent
    from hpcsched.experiments.dras_training import DrasRunConfig, load, make_env, prepared_for
    from hpcsched.workload.jobsets import first_days, split
    from hpcsched.experiments.policyspec import PRETRAINED
    from hpcsched.policies.priority import get_policy
    from hpcsched.sim.factory import make_engine

    ck = load(PRETRAINED / f"{name}.pt")
    config = DrasRunConfig.from_dict(ck["config"])
    prepared = prepared_for(config)
    jobs = first_days(split(prepared.jobs, config.train_days, config.validate_days,
                            config.test_days)[1], config.validate_first_days)
    run = run_episode(checked_agent(name, ck), make_env(config, prepared), jobs,
                      learn=False)
    fcfs = make_engine(jobs, prepared.cluster, prepared.profile, "easy").run(get_policy("fcfs"))
    return run["reward"], run["result"].metrics["wait"], fcfs.metrics["wait"]


@pytest.mark.slow
def test_the_dras_models_validation_is_models_md():
    start = MODELS_MD.index("| name |", MODELS_MD.index("The same validation with the rule"))
    table = MODELS_MD[start:].split("\n\n")[0].splitlines()[2:]  # the rows, under the header
    rows = [line.strip().strip("|").split("|") for line in table]
    bad = []
    for name, reward, wait in ([c.strip() for c in r] for r in rows):
        if "," in name:  # "unchanged": the training's own values, in the tables above
            for model in (n.strip() for n in name.split(",")):
                row = next(line for line in MODELS_MD.splitlines()
                           if line.startswith(f"| {model} |")).split("|")
                reward, wait = row[3].strip(), row[4].strip()
                got = validation(model)
                bad += check(model, {"reward": reward, "wait": wait},
                             {"reward": got[0], "wait": got[1]})
            continue
        got = validation(name)
        bad += check(name, {"reward": reward.split()[0], "wait": wait},
                     {"reward": got[0], "wait": got[1]})
        if name == "dras-dql-ricc":  # and the README's validation wait / FCFS of that run
            head, *body = runs_table("DRAS-DQL run")
            cells = dict(zip(head, next(r for r in body if r[0].endswith("(shipped)"))))
            bad += check(name, cells, {"validation wait / FCFS": got[1] / got[2]})
        if name == "dras-pg-ricc":
            head, *body = runs_table("DRAS-PG run")
            cells = dict(zip(head, next(r for r in body if r[0].endswith("(shipped)"))))
            bad += check(name, cells, {"validation reward (4 days)": got[0]})
    assert len(rows) == 6 and not bad, "\n".join(bad)
