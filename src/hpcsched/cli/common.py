"""Pieces every command shares: list arguments, the cluster/profile/window options, the output
format options, loading a trace under a profile, and turning a policy name into a `Policy`."""

from __future__ import annotations

import argparse

from hpcsched.sim.profiles import PROFILES


def add_format_options(p: argparse.ArgumentParser) -> None:
    """--json / --csv / --markdown (dest ``fmt``; None means a human table)."""
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", dest="fmt", action="store_const", const="json",
                     help="print JSON (flat rows)")
    out.add_argument("--csv", dest="fmt", action="store_const", const="csv", help="print CSV")
    out.add_argument("--markdown", dest="fmt", action="store_const", const="markdown",
                     help="print a Markdown table")


def fmt_parent() -> argparse.ArgumentParser:
    """A parent parser with the format options (`add_format_options`)."""
    fmt = argparse.ArgumentParser(add_help=False)
    add_format_options(fmt)
    return fmt


def csv_list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


def int_list(text: str) -> list[int]:
    try:
        return [int(t) for t in csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def start_list(text: str) -> list[int]:
    """Comma-separated window starts (0-based positions: none negative)."""
    values = int_list(text)
    if min(values) < 0:
        raise argparse.ArgumentTypeError(f"positions start at 0, got {min(values)}")
    return values


def at_least(low: int):
    """An argparse type: an integer no smaller than `low` (a count or a position)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value
    parse.__name__ = "count" if low > 0 else "position"
    return parse


#: argparse types of integer options: counts and sizes (at least 1), positions and counts where
#: 0 means none or off (at least 0)
positive_int = at_least(1)
nonnegative_int = at_least(0)


def positive_float(text: str) -> float:
    """An argparse type: a finite number greater than 0 (a time, a rate, a load)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number greater than 0, not {text}")
    return value


def nonnegative_float(text: str) -> float:
    """An argparse type: a finite number, 0 or more (0 meaning off, where the help says so)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (0 <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number, 0 or more, not {text}")
    return value


def add_cluster_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster (default: identical nodes sized by the trace's header)")
    g.add_argument("--cluster", metavar="NAME|FILE",
                   help="a heterogeneous cluster: a bundled one (spartan-physical, "
                        "spartan-deeplearn, spartan-sapphire, cerit-zewura; `hpcsched cluster "
                        "list`), a slurm.conf (with topology.conf and gres.conf beside it), a "
                        "cluster table (NAME.cluster, see hpcsched.cluster.table), or HPCsim's "
                        "topology file with nodes.csv beside it")
    g.add_argument("--partition", help="one partition of --cluster (a Slurm-accounting trace then "
                                       "keeps that partition's jobs)")
    from hpcsched.cluster.allocate import ALLOCATORS

    g.add_argument("--allocator", choices=[a for a in ALLOCATORS if not a.startswith("hpcsim-")],
                   help="which nodes a job gets on --cluster (default: best-fit); under --profile "
                        "hpcsim these are HPCsim's own")
    g.add_argument("--nodes", type=positive_int,
                   help="number of nodes (default: the trace header's MaxNodes)")
    g.add_argument("--procs-per-node", type=positive_int,
                   help="processors per node (default: MaxProcs / MaxNodes from the header)")
    g.add_argument("--drop-oversized", action="store_true",
                   help="drop jobs that can never run on the cluster (counted, the first named "
                        "with why) instead of stopping (a bundled trace's known ones, such as "
                        "cerit-2013's job 8687, are dropped so without it)")


def add_profile_arg(p: argparse.ArgumentParser, *, from_models: bool = False) -> None:
    """`--profile`. With `from_models` its default is None, resolved by `resolve_profile` from the
    policies named (a SchedInspector model's own profile; standard otherwise)."""
    if from_models:
        p.add_argument("--profile", default=None, choices=list(PROFILES),
                       help="simulation semantics: standard (textbook), rlscheduler (SchedGym's, "
                            "exactly), schedinspector (its code's, exactly), schedinspector-paper "
                            "(users' requests), cqsim (CQSim's code, exactly), dras (CQSim as the "
                            "DRAS models were trained on it), deeprm (DeepRM's code, exactly: a "
                            "full queue drops arrivals), deeprm-unbounded, hpcsim (the "
                            "thesis's simulator, exactly) (default: the profile the inspect: "
                            "models were trained with when they agree, else standard)")
    else:
        p.add_argument("--profile", default="standard", choices=list(PROFILES),
                       help="simulation semantics: standard (textbook, default) or rlscheduler "
                            "(SchedGym's, exactly)")


def resolve_profile(args, specs: list[str]) -> str:
    """Fill in ``args.profile`` when the user gave none: the profile the learned policies among
    `specs` were trained with if they all agree, else standard. Returns a note saying why, printed
    in the summary ("" when the user chose)."""
    if args.profile is not None:
        return ""
    from hpcsched.experiments.policyspec import model_profiles

    profiles = model_profiles(specs)
    chosen = set(profiles.values())
    if len(chosen) == 1:
        args.profile = chosen.pop()
        return f"profile {args.profile}: the one {', '.join(profiles)} was trained with"
    args.profile = "standard"
    if chosen:
        listed = ", ".join(f"{s}: {p}" for s, p in profiles.items())
        return f"profile standard: the models were trained under different profiles ({listed})"
    return ""


def add_validation_args(g, *, windows: int, jobs: int) -> None:
    """A PPO trainer's greedy validation options (RLScheduler, SchedInspector) on group `g`."""
    g.add_argument("--validate-every", type=nonnegative_int, default=5,
                   help="greedy validation every K epochs, keeping best.pt (0: off)")
    g.add_argument("--validate-windows", type=positive_int, default=windows)
    g.add_argument("--validate-jobs", type=positive_int, default=jobs)


#: a `train` command's options that are no setting of its run: the run's folder, whether to
#: continue it, the file of options; they keep their defaults and are given on the command line
NOT_SETTINGS = ("out", "resume", "config")
#: options that a config file may give like the settings, but that are not settings either
#: (`option_values` leaves them out): how long to train
NOT_COMPARED = ("epochs",)


def add_keep_validated(g) -> None:
    """`--keep-validated` (a trainer's `keep_validated` argument, not a setting of the run: the
    command pops it from `option_values`) on group `g`."""
    g.add_argument("--keep-validated", action="store_true", default=False,
                   help="also keep a copy of model.pt at every validated update "
                        "(validated/epoch-N.pt), to choose a checkpoint another way afterwards; "
                        "may be given on --resume")

CONFIG_HELP = ("take options from a TOML file (JSON when FILE ends in .json) whose keys are the "
               "options' names, dashes or underscores alike (epochs = 20, pi-lr = 3e-4); an "
               "option given on the command line overrides the file's")

#: the paragraphs every `train` command's --help ends with
TRAIN_EPILOG = """
Progress: a bar on a terminal; elsewhere (nohup, a batch system's log, a pipe) one line per epoch
(DRAS: per episode). log.csv has one row per epoch; tb/ gets TensorBoard events grouped as
rollout/, train/, eval/ (validation) and time/ when tensorboard is installed
(pip install 'hpcsched[tensorboard]').

--config FILE gives options from a file instead of the command line: TOML (JSON when FILE ends in
.json), one key per option, named as the option with dashes or underscores (epochs = 20,
init = "tetris", validate-every = 2; a flag is true or false). An option given on the command line
overrides the file's; an unknown key, a value of the wrong type or an unreadable file is refused in
one line naming the file and the key. --out, --resume and --config itself are given on the command
line. The file is just another way of giving options: with --resume, its values must repeat the
run's own, as options given must.
"""


def train_command(p: argparse.ArgumentParser, func) -> None:
    """Finish a `train ALGORITHM` parser: add --config, defer its options' defaults
    (`defer_defaults`) and run `func(args)` with the config file's options filled in (`with_config`)
    and the defaults of `NOT_COMPARED` where neither gave them."""
    p.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    defer_defaults(p)
    p.set_defaults(func=lambda args: func(with_config(p, args)))


def defer_defaults(p: argparse.ArgumentParser, *, keep=NOT_SETTINGS) -> None:
    """Let a `train` command tell an option left out from one given its default value (a resumed
    run takes the left-out ones from its folder, and refuses given ones that differ): every option
    of `p` but `keep` defaults to None, its real default kept for `option_values`."""
    defaults = {}
    for action in p._actions:
        if action.option_strings and action.dest not in keep and action.dest != "help":
            defaults[action.dest] = action.default
            action.default = None
    p.set_defaults(option_defaults=defaults)


def option_values(args, *, given_only: bool) -> dict:
    """The values of a `defer_defaults` command's settings (its options but `NOT_COMPARED`):
    those given (on the command line or in its --config file: `with_config`; `given_only`), or
    every one, the defaults filling in the rest."""
    defaults = {k: v for k, v in args.option_defaults.items() if k not in NOT_COMPARED}
    given = {k: getattr(args, k) for k in defaults if getattr(args, k) is not None}
    return given if given_only else {**defaults, **given}


def with_config(p: argparse.ArgumentParser, args):
    """`args` of `train` parser `p` with its --config file's options (`read_config`) where the
    command line gave none, and the defaults of `NOT_COMPARED` where neither did."""
    if getattr(args, "config", None) is not None:
        for dest, value in read_config(args.config, p).items():
            if getattr(args, dest) is None:  # the command line's own win
                setattr(args, dest, value)
    for dest in NOT_COMPARED:
        if dest in args.option_defaults and getattr(args, dest) is None:
            setattr(args, dest, args.option_defaults[dest])
    return args


def read_config(path: str, p: argparse.ArgumentParser) -> dict:
    """{dest: value} of the options in the TOML (or, named *.json, JSON) file `path`, for parser
    `p`: its keys are `p`'s long options without the dashes in front, `-` and `_` alike; the
    values are checked as the command line's are (type, range, choices). A file that cannot be
    read or parsed, an unknown key, one of `NOT_SETTINGS` or a wrong value is refused with a
    one-line ValueError naming the file (and the key)."""
    import json
    import tomllib
    from pathlib import Path

    where = f"--config {path}"
    try:
        text = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"{where}: cannot read it ({e.strerror or e})") from None
    try:
        if str(path).lower().endswith(".json"):
            data = json.loads(text)
        else:
            data = tomllib.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError, TOMLDecodeError
        kind = "JSON" if str(path).lower().endswith(".json") else "TOML"
        raise ValueError(f"{where}: not valid {kind} ({_one_line(e)})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a table of options (key = value), not "
                         f"{type(data).__name__}")
    actions = {s[2:].replace("-", "_"): a for a in p._actions for s in a.option_strings
               if s.startswith("--") and a.dest != "help"}
    values: dict = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name in NOT_SETTINGS:
            raise ValueError(f"{where}: key {key!r}: give --{name.replace('_', '-')} on the "
                             f"command line, not in the file")
        action = actions.get(name)
        if action is None:
            import difflib

            near = difflib.get_close_matches(name, list(actions), n=1)
            hint = f"; did you mean {near[0].replace('_', '-')}?" if near else ""
            raise ValueError(f"{where}: unknown key {key!r} (not an option of `{p.prog}`{hint})")
        if action.dest in values:
            raise ValueError(f"{where}: key {key!r}: that option is given twice")
        values[action.dest] = _config_value(where, key, value, action)
    return values


def _one_line(e: Exception) -> str:
    """An error's message on one line (a TOML or JSON error may span several)."""
    return " ".join(str(e).split())


def _config_value(where: str, key: str, value, action: argparse.Action):
    """A config file's `value` for `action`, checked and converted as the command line's."""
    def wrong(expected: str) -> ValueError:
        return ValueError(f"{where}: key {key!r}: expected {expected}, not {value!r}")

    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if action.type in (int, positive_int, nonnegative_int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
    elif action.type in (float, positive_float, nonnegative_float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong("a number")
    elif not isinstance(value, str):
        raise wrong("a string")
    if action.type is not None:
        try:  # the command line's own check and conversion (str() of a float reads back equal)
            value = action.type(str(value))
        except (argparse.ArgumentTypeError, ValueError) as e:
            raise ValueError(f"{where}: key {key!r}: {_one_line(e)}") from None
    if action.choices is not None and value not in action.choices:
        raise ValueError(f"{where}: key {key!r}: {value!r} is not one of "
                         f"{', '.join(map(str, action.choices))}")
    return value


def add_window_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("windows (0-based positions in the trace as loaded under the profile)")
    g.add_argument("--start", type=nonnegative_int, help="first job of the window")
    g.add_argument("--jobs", type=positive_int, help="jobs per window")
    g.add_argument("--starts", type=start_list, help="several window starts, comma-separated")
    g.add_argument("--windows", type=positive_int, help="draw this many windows at random")
    g.add_argument("--first", type=positive_int,
                   help="draw windows from the first N jobs (rlscheduler profile: 10000)")
    g.add_argument("--seed", type=int,
                   help="seed of the draw (rlscheduler profile without a seed: the paper's windows)")
    g.add_argument("--paper-windows", action="store_true",
                   help="RLScheduler's own draw under any profile (default 10 x 1024 jobs from "
                        "the first 10000)")



def resolve(spec: str, seed: int = 0, prepared=None, sample: bool = False):
    """The `Policy` a command-line name stands for (see `hpcsched.experiments.policyspec`)."""
    from hpcsched.experiments.policyspec import resolve_policy

    return resolve_policy(spec, prepared, seed=seed, sample=sample)


def prepare_from_args(args):
    """The trace named by ``args.trace`` loaded under ``args.profile`` with the cluster options."""
    from hpcsched.sim.run import prepare

    return prepare(args.trace, args.profile, nodes=args.nodes,
                   procs_per_node=args.procs_per_node, drop_oversized=args.drop_oversized,
                   cluster=getattr(args, "cluster", None), partition=getattr(args, "partition", None),
                   allocator=getattr(args, "allocator", None))


def check_backfills(backfills) -> None:
    from hpcsched.sim.profiles import BACKFILLS

    for b in backfills:
        if b not in BACKFILLS:
            raise ValueError(f"unknown backfilling {b!r}; choose among {', '.join(BACKFILLS)}")
