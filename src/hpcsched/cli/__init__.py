"""The `hpcsched` command.

The commands that work on traces and policies live in `core`; each learned scheduler adds its own
`train ALGORITHM` and `experiment NAME` subcommands from a module of its own, listed in `FAMILIES`
(a module with ``register(train, experiment, fmt)``)."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from hpcsched import __version__
from hpcsched.cli import cluster, core
from hpcsched.cli.common import fmt_parent
from hpcsched.cluster.pool import ClusterError

# one module per learned scheduler, under hpcsched.cli
FAMILIES = ("rlscheduler", "inspector", "deeprm", "dras", "herasched")


class UsageError(Exception):
    """A command line argparse refused; the message names the option."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (`main` prints them as every other error)
    instead of the usage block."""

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
    for family in FAMILIES:
        importlib.import_module(f"hpcsched.cli.{family}").register(train, experiment, fmt)
    return parser


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
