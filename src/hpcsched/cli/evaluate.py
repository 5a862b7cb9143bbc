"""`hpcsched evaluate MODEL`: a trained model of any registered learned scheduler beside heuristics.

The model file is found by `recipes.locate` (a run folder: its best.pt), its recipe by the kind of
the file (`recipes.model_of`), and the recipe's `Evaluation` scores it: on windows of a trace
(`on_windows`: RLScheduler, SchedInspector and DRAS models, and DeepRM's on a trace) or on a
protocol of its own (DeepRM's synthetic jobsets). Each recipe adds its own options as one group;
an option of one recipe given for another's model is refused."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Callable

from hpcsched import recipes
from hpcsched.cli.common import (add_cluster_args, add_window_args, check_backfills, csv_list,
                                 prepare_from_args, resolve)
from hpcsched.report.progress import Progress
from hpcsched.report.table import format_rows
from hpcsched.sim.profiles import PROFILES

EPILOG = """examples:
  hpcsched evaluate runs/l1 --trace lublin-1 --windows 10 --jobs 1024      # its best.pt
  hpcsched evaluate pretrained/hpc2n-bsld --trace ctc-sp2 --backfill none,schedgym --json
  hpcsched evaluate pretrained/inspect-lublin-1-sjf --base f1 --against f1   # an inspector
  hpcsched evaluate pretrained/dras-pg-ricc --against fcfs,sjf --jobs 2000   # DRAS: its test period
  hpcsched evaluate pretrained/deeprm-load-70 --load 0.7,1.1                 # DeepRM: its jobsets

Each kind of model is scored by default as its paper's experiment scores it: the groups below say
how, and hold each kind's own options (refused for another kind's model). A run folder is its
best.pt (its model.pt while validation has not written one yet, said on stderr).
"""

#: options of the window protocol (`on_windows`), for a protocol that has no windows to refuse
WINDOW_OPTIONS = ("start", "starts", "windows", "jobs", "first", "paper_windows", "backfill",
                  "profile", "cluster", "partition", "allocator", "nodes", "procs_per_node",
                  "drop_oversized")


def register(sub, fmt) -> None:
    """Add `evaluate` to the top-level subparsers (its options when it is chosen)."""
    sub.add_parser("evaluate", parents=[fmt], help="evaluate a trained model beside heuristics",
                   epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                   fill=add_arguments)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a model file, a run folder (its best.pt; its model.pt before its "
                                 "first validation), or pretrained/NAME")
    p.add_argument("--trace", help="trace to evaluate on (default: the one it was trained on; a "
                                   "DeepRM model: its synthetic jobsets)")
    p.add_argument("--against", type=csv_list,
                   help="heuristics to show beside it (default: fcfs,sjf,f1; a DeepRM model: "
                        "sjf,packer,tetris:0.1; 'none' for none)")
    p.add_argument("--backfill", type=csv_list,
                   help="backfilling choices (default: the one it was trained with)")
    p.add_argument("--profile", choices=list(PROFILES),
                   help="simulation semantics (default: the one it was trained with)")
    p.add_argument("--sample", action="store_true",
                   help="sample the model's actions instead of taking the most probable job")
    add_window_args(p)
    add_cluster_args(p)
    owners: dict[str, tuple[str, recipes.Recipe]] = {}
    for recipe in recipes.recipes():
        if recipe.evaluation is None or recipe.evaluation.arguments is None:
            continue
        known, groups = set(map(id, p._actions)), set(map(id, p._action_groups))
        recipes.entry(recipe.evaluation.arguments)(p)
        for action in p._actions:
            if id(action) not in known:
                owners[action.dest] = (action.option_strings[0], recipe)
        for group in p._action_groups:  # the raw formatter (for the epilog) wraps no text
            if id(group) not in groups and group.description:
                group.description = textwrap.fill(" ".join(group.description.split()), 96)
    p.set_defaults(func=cmd_evaluate, recipe_options=owners)


def cmd_evaluate(args) -> int:
    path = recipes.locate(args.model)
    recipe, checkpoint = recipes.model_of(path)
    for dest, (option, owner) in args.recipe_options.items():
        if owner is not recipe and getattr(args, dest) is not None:
            raise ValueError(f"{option}: {path} is not a {owner.name} model ({owner.prefix}:); it "
                             f"is {recipe.name}'s ({recipe.prefix}:)")
    return recipes.entry(recipe.evaluation.run)(path, checkpoint, args)


def given(args, options) -> list[str]:
    """Those of `options` (dests) given on the command line, as options (--start, ...)."""
    return [f"--{d.replace('_', '-')}" for d in options if getattr(args, d, None) not in (None, False)]


def chosen_windows(args, prepared) -> tuple[list[int], int]:
    """The windows the window options choose (`experiments.compare.choose_windows`)."""
    from hpcsched.experiments.compare import choose_windows

    return choose_windows(prepared, start=args.start, starts=args.starts, windows=args.windows,
                          jobs=args.jobs, first=args.first, seed=args.seed,
                          paper=args.paper_windows)


def drawn_windows(count: int, jobs: int) -> Callable:
    """A default of `on_windows`: unless windows are placed (--start, --starts) or counted
    (--windows), `count` windows of --jobs (default `jobs`) jobs, drawn as --first, --seed and
    --paper-windows say (`experiments.compare.choose_windows`)."""
    def windows(args, prepared) -> tuple[list[int], int]:
        if args.start is None and not args.starts and args.windows is None:
            args.windows, args.jobs = count, args.jobs or jobs
        return chosen_windows(args, prepared)
    return windows


def on_windows(args, path: Path, *, label: str, about: str, trace: str, profile: str,
               backfills: list[str], windows: Callable,
               against: tuple[str, ...] = ("fcfs", "sjf", "f1")) -> int:
    """Print model `label` (at `path`) beside the heuristics of --against (default `against`),
    mean over windows of --trace (default `trace`) under --profile (default `profile`) with each
    --backfill (default `backfills`): the windows `windows(args, prepared)` chooses (its
    family's experiment's by default, e.g. `drawn_windows`). `about` says what the model is."""
    args.trace = args.trace or trace
    args.profile = args.profile or profile
    backfills = args.backfill or backfills
    check_backfills(backfills)
    prepared = prepare_from_args(args)
    starts, length = windows(args, prepared)
    from hpcsched.experiments.compare import compare

    policies = [(label, resolve(label, args.seed or 0, prepared, sample=args.sample))]
    policies += [(h, resolve(h, args.seed or 0, prepared))
                 for h in (args.against or against) if h != "none"]
    total = len(policies) * len(backfills) * len(starts)
    with Progress(total, "evaluating") as bar:
        rows = compare(prepared, policies, backfills, starts, length, progress=bar.update)
    if args.fmt is None:
        print(f"{prepared.summary()}\nmodel {path} ({about}); {len(starts)} window(s) of "
              f"{length} jobs, starts {','.join(map(str, starts))}; mean over windows\n")
    print(format_rows(rows, args.fmt or "table"))
    if args.fmt is None and any("rejection_ratio" in r for r in rows):
        from hpcsched.experiments.schedinspector import inspector_summary

        print("\n" + "\n".join(inspector_summary(rows, policies)))
    return 0


__all__ = ["WINDOW_OPTIONS", "add_arguments", "chosen_windows", "cmd_evaluate", "drawn_windows",
           "given", "on_windows", "register"]
