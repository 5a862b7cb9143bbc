"""The `hpcsched` command.

The commands that work on traces and policies live in `core` (`evaluate` in `evaluate`); `train`
and `experiment` are generated from the registry of learned schedulers (`hpcsched.recipes`): each
recipe's `Command`s, plus the experiments of no learned scheduler (`EXPERIMENTS`). A subcommand's
code is imported when it is chosen, not when the commands are listed, so that `--help` imports no
network code (`_Parser`'s `fill`)."""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from hpcsched import __version__, recipes
from hpcsched.cli import cluster, core
from hpcsched.cli.common import TRAIN_EPILOG, fmt_parent, train_command
from hpcsched.cluster.pool import ClusterError
from hpcsched.recipes import Command

#: experiments of no learned scheduler (the recipes' own come from `hpcsched.recipes`)
EXPERIMENTS = (
    Command("herasched-grid",
            "Wang's thesis, Appendix B: 7 selectors x 3 allocators with EASY on Spartan-like "
            "workloads; the combined score (Fig. 4.8) and the heatmap (Fig. 4.5)",
            "hpcsched.cli.herasched:add_grid_arguments", "hpcsched.cli.herasched:cmd_grid"),
    Command("dbf-baselines",
            "Wang's thesis Fig. 3.4: DBF against FCFS, SJF, LCFS and SchedInspector (online "
            "and offline) on DBF's 1,000-job test episodes; the thesis's facts checked",
            "hpcsched.cli.dbf:add_baselines_arguments", "hpcsched.cli.dbf:cmd_baselines"),
    Command("dbf-window-sweep",
            "Wang's thesis Fig. 3.5-3.7: DBF's split window per (M, M_t): AWT, queue length, "
            "invisible jobs, wait per job type",
            "hpcsched.cli.dbf:add_sweep_arguments", "hpcsched.cli.dbf:cmd_sweep"),
)


class UsageError(Exception):
    """A command line argparse refused; the message names the option."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (`main` prints them as every other error)
    instead of the usage block. `fill(parser)`, when given, adds its options the first time it is
    used (parsed, or its help or usage shown): a subcommand's code is imported only when it is
    chosen."""

    def __init__(self, *args, fill: Callable[[argparse.ArgumentParser], None] | None = None,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._fill = fill

    def filled(self) -> "_Parser":
        if self._fill is not None:
            fill, self._fill = self._fill, None
            fill(self)
        return self

    def parse_known_args(self, args=None, namespace=None):
        self.filled()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self.filled()
        return super().format_help()

    def format_usage(self) -> str:
        self.filled()
        return super().format_usage()

    def error(self, message: str):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hpcsched",
        description="HPC batch-job scheduling: simulate classic heuristics and learned schedulers "
                    "on real traces.",
    )
    parser.add_argument("--version", action="version", version=f"hpcsched {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    fmt = fmt_parent()
    core.register(sub, fmt)
    cluster.register(sub, fmt)

    p = sub.add_parser("train", help="train a learned scheduler",
                       description="Train a learned scheduler; `hpcsched train ALGORITHM --help` "
                                   "lists its options.")
    train = p.add_subparsers(dest="algorithm", metavar="ALGORITHM")
    p.set_defaults(func=_needs(p))
    p = sub.add_parser("experiment", help="run a paper's evaluation protocol",
                       description="Run a paper's evaluation protocol; `hpcsched experiment NAME "
                                   "--help` says what it computes.")
    experiment = p.add_subparsers(dest="name", metavar="NAME")
    p.set_defaults(func=_needs(p))
    for recipe in recipes.recipes():
        if recipe.train_command is not None:
            _add_command(train, recipe.train_command, training=True)
        for command in recipe.experiments:
            _add_command(experiment, command)
    for command in EXPERIMENTS:
        _add_command(experiment, command)
    return parser


def _add_command(sub, command: Command, *, training: bool = False) -> None:
    """Add `command` to the subparsers `sub`, its options added when it is chosen: a train
    command's with --config and the paragraphs every train command's --help ends with."""
    if command.name in sub.choices:
        raise ValueError(f"two commands are named {command.name!r}")

    def fill(p: argparse.ArgumentParser) -> None:
        recipes.entry(command.arguments)(p)
        run = recipes.entry(command.run)
        if training:
            p.epilog = (p.epilog or "") + TRAIN_EPILOG
            train_command(p, run)
        else:
            p.set_defaults(func=run)

    sub.add_parser(command.name, help=command.help.replace("%", "%%"), fill=fill,
                   formatter_class=argparse.RawDescriptionHelpFormatter)


def _needs(parser: argparse.ArgumentParser):
    """The command of a parser whose subcommand was left out: its help, exit 2."""
    def show_help(args) -> int:
        parser.print_help()
        return 2
    return show_help


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(f"hpcsched: error: {exc}", file=sys.stderr)
        return 2
    if args.command is None:
        parser.print_help()
        return 2
    from hpcsched.workload.swf import TraceError

    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`hpcsched trace jobs ... | head`): quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (TraceError, ClusterError, ValueError, OSError) as exc:
        print(f"hpcsched: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hpcsched: interrupted", file=sys.stderr)
        return 130
