"""The learned schedulers, registered in one place (DESIGN decision 13).

A learned scheduler is a `Recipe`: its name, the prefix of its policy names (``rl`` in
``rl:PATH``), its Gymnasium environment, the file names of its shipped models, the profile its
models run under, and where its code is: "module:attribute" strings, imported only when a model is
loaded or trained, so that listing the recipes or resolving a heuristic such as ``sjf`` imports no
network code. Registering a recipe is all it takes for ``PREFIX:PATH`` and
``PREFIX:pretrained/NAME`` to name policies of `simulate`, `compare` and the experiments::

    from hpcsched.recipes import Recipe, register
    register(Recipe(name="mine", prefix="mine", env_id="hpcsched/PickJob-v0",
                    load="mypackage.mine:policy"))

A recipe also names its commands (`Command`): ``hpcsched train NAME``, ``hpcsched experiment
NAME`` for each protocol of its paper, and how ``hpcsched evaluate`` scores its model files
(`Evaluation`). The command line is generated from the registry: a recipe registered before
``hpcsched.cli.main`` runs is listed under ``train``, ``experiment`` and ``evaluate`` like the four,
and its code is imported only when one of its commands is chosen (so ``--help`` imports no
network code).

Importing this package registers hpcsched's four, one module each: `rlscheduler` (``rl:``),
`schedinspector` (``inspect:``), `dras` (``dras:``) and `deeprm` (``deeprm:``); then the recipes
of plugins (`load_plugins`): the modules that installed packages name in the entry-point group
``hpcsched.recipes``, and the modules or Python files that ``$HPCSCHED_RECIPES`` names. A recipe
of the one PPO on PickJob is registered from its configuration alone by `pick_job.ppo_recipe`
(examples/smallest_job.py).

Every recipe names its learners at a tiny size (`Tiny`), on which tests/recipes/test_contract.py
checks the contract every learned scheduler keeps: its env passes gymnasium's checker, a few
learning steps change its choices, saved and loaded it is the same learner, and its model file
schedules through ``hpcsched simulate`` exactly as the learner in memory.

Model files are found by one rule for all (`locate`): ``pretrained/NAME`` is the shipped file
``data/pretrained/NAME.pt``; a file is itself; a run folder is its ``best.pt`` (the checkpoint its
validation chose), or its ``model.pt`` while it has no ``best.pt`` yet (said once on stderr).
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

PRETRAINED = Path(__file__).resolve().parent.parent / "data" / "pretrained"


@dataclass(frozen=True)
class Rule:
    """A name a recipe takes in place of a model file: a fixed rule, for reference."""

    name: str  # e.g. "reject-unfit"
    #: "module:function" called as ``f(prepared, *, option, seed, sample, name)``, -> a Policy
    entry: str
    usage: str  # how it is written after the prefix, e.g. "reject-unfit@BASE"
    help: str  # one line for `hpcsched policies`


@dataclass(frozen=True)
class Command:
    """A subcommand of a recipe: ``hpcsched train NAME`` or ``hpcsched experiment NAME``."""

    name: str
    help: str  # its line in the listing (`hpcsched train --help`), plain text
    #: "module:function" adding its options to its (empty) parser, ``f(parser)``; it may set the
    #: parser's description and epilog too. A train command's parser then gets --config and the
    #: paragraphs every train command ends with (`hpcsched.cli.common.train_command`).
    arguments: str | Callable
    #: "module:function" running it, ``f(args) -> exit status``
    run: str | Callable


@dataclass(frozen=True)
class Evaluation:
    """How ``hpcsched evaluate MODEL`` scores a recipe's model files."""

    #: the model files it scores: for hpcsched's model format their ``recipe`` (its own name), for
    #: a file of another format that ``format`` (see `model_kind`)
    kind: str
    #: "module:function" scoring one, ``f(path, checkpoint, args) -> exit status``
    run: str
    #: "module:function" adding the recipe's own options to the evaluate parser, ``f(parser)``
    #: (one argument group, its description saying what a model is scored on by default); each
    #: defaults to None, so that `hpcsched evaluate` can refuse one given for another recipe's model
    arguments: str | None = None


@dataclass(frozen=True)
class Recipe:
    """A learned scheduler. Entry points are "module:attribute" strings, or the functions
    themselves (see `entry`)."""

    name: str  # "rlscheduler"
    prefix: str  # of its policy names: "rl" in rl:PATH
    env_id: str  # the Gymnasium environment it trains on
    #: the model file as an engine Policy: ``f(path, prepared, *, option, seed, sample, name)``;
    #: `prepared` is the trace it schedules (or None), `option` what follows `separator`
    load: str | Callable
    #: its trainer (``f(config, out, ...)``), None where it has none
    train: str | None = None
    #: its learners by the name its model files give them (their ``learner``): "module:class"
    #: whose ``load(path)`` reads such a file to learn on from it (`load_learner`)
    learners: dict[str, str | Callable] = field(default_factory=dict)
    #: file-name prefixes of its shipped models in data/pretrained; None: the files no other
    #: recipe's prefixes claim (RLScheduler's, named by trace and metric)
    shipped: tuple[str, ...] | None = ()
    #: the profile its models run under when the command names none (None: the command's default)
    profile: str | None = None
    #: "module:function" reading that profile from a model file (``f(path) -> str``), if it varies
    profile_of: str | None = None
    #: what separates the model from an option in its names: "@" in inspect:PATH@BASE
    separator: str = ""
    #: its models choose the nodes of every job themselves (an allocator agent): a name with an
    #: allocator of the engine (SELECTOR+ALLOCATOR) is refused for them
    places_jobs: bool = False
    rules: tuple[Rule, ...] = ()
    #: under a discrete-time profile every name is this recipe's: its models, or these heuristics
    #: (``f(name, seed=) -> Policy``); None: it runs under the event-driven profiles
    heuristics: str | None = None
    #: {name: description} of those heuristics, for `hpcsched policies`
    heuristic_help: str | None = None
    title: str = ""  # the heading of its models in `hpcsched policies`
    usage: str = ""  # e.g. "inspect:PATH[@BASE]"
    #: ``hpcsched train NAME`` (None: it has none)
    train_command: Command | None = None
    #: ``hpcsched experiment NAME``, one per protocol of its paper
    experiments: tuple[Command, ...] = ()
    #: how ``hpcsched evaluate`` scores its model files (None: it does not)
    evaluation: Evaluation | None = None
    #: "module:function" giving its learners at a tiny size, ``f() -> Tiny | tuple[Tiny, ...]``:
    #: what the contract every recipe must keep is checked on (tests/recipes/test_contract.py)
    tiny: str | Callable | None = None

    def split(self, arg: str) -> tuple[str, str]:
        """(model, option) of what follows the prefix in a policy name."""
        if not self.separator:
            return arg, ""
        model, _, option = arg.partition(self.separator)
        return model, option

    def rule(self, model: str) -> Rule | None:
        return next((r for r in self.rules if r.name == model), None)


@dataclass(frozen=True)
class Tiny:
    """A recipe's learner at a tiny size, built, trained a few steps, saved, loaded and run through
    `simulate` in seconds: what the contract test of every recipe uses
    (tests/recipes/test_contract.py), and a quick way to try a recipe. A recipe with several
    learners (DRAS: PG, DQL, Decima-PG) gives one each, told apart by `name`.

    A learner is used through SB3's verbs only: ``predict``, ``save`` and its class's ``load``
    (`act`, `save_model`, `load_model`); where a learner's verbs take other arguments than those,
    the recipe says how to call them (`predict`, `save`, `load`). Its model file is run as
    ``PREFIX:PATH`` names it, through the recipe's `load`."""

    #: ``gymnasium.make(recipe.env_id, **env)``: the small environment it learns on
    env: dict[str, Any]
    #: a fresh learner at tiny settings, ``make(env, seed)``; `env` is that environment, unwrapped
    make: Callable[[Any, int], Any]
    #: a few learning steps, ``learn(learner, env)``; they must change some of its greedy choices
    learn: Callable[[Any, Any], Any]
    #: the learner in memory as an engine Policy, ``policy(learner, prepared, name)``, as its
    #: training's validation runs it: its model file must schedule exactly as this does
    policy: Callable[[Any, Any, str], Any]
    #: where its model files are run through ``hpcsched simulate TRACE --policy PREFIX:PATH``: a
    #: trace (a bundled name or a file), the window ``--start``/``--jobs``, ``--backfill``, and
    #: ``--profile`` (None: as the command line chooses for the model, `model_profiles`)
    trace: str
    start: int = 0
    jobs: int = 64
    backfill: str = "none"
    profile: str | None = None
    name: str = ""
    #: ``save(learner, path)``, writing a file ``PREFIX:PATH`` names (None: ``learner.save(path)``)
    save: Callable[[Any, Path], Any] | None = None
    #: ``load(path)``, the learner back (None: ``type(learner).load(path)`` of the learner saved)
    load: Callable[[Path], Any] | None = None
    #: ``predict(learner, obs, mask) -> action`` of one observation as the environment gives it
    #: (None: ``learner.predict(obs, mask)``, greedy)
    predict: Callable[[Any, Any, Any], Any] | None = None

    def act(self, learner, obs, mask) -> int:
        """The learner's greedy action on one observation of the environment."""
        if self.predict is not None:
            return int(self.predict(learner, obs, mask))
        return int(learner.predict(obs, mask))

    def save_model(self, learner, path: str | Path) -> Path:
        if self.save is not None:
            self.save(learner, Path(path))
        else:
            learner.save(path)
        return Path(path)

    def load_model(self, path: str | Path, saved) -> Any:
        """The learner in the file at `path`, which holds a learner like `saved`."""
        return self.load(Path(path)) if self.load is not None else type(saved).load(path)


def tiny_learners(recipe: Recipe) -> tuple[Tiny, ...]:
    """`recipe`'s tiny learners (see `Tiny`); none when it names no ``tiny``."""
    if recipe.tiny is None:
        return ()
    found = entry(recipe.tiny)()
    return (found,) if isinstance(found, Tiny) else tuple(found)


_REGISTRY: dict[str, Recipe] = {}


def register(recipe: Recipe) -> Recipe:
    """Add `recipe`; its prefix, its train command's name, its experiments' names and the kind of
    its model files must be new (registering the same recipe again is a no-op)."""
    if ":" in recipe.prefix or not recipe.prefix:
        raise ValueError(f"recipe {recipe.name}: a prefix is a word without ':' "
                         f"(not {recipe.prefix!r})")
    held = _REGISTRY.get(recipe.prefix)
    if held == recipe:
        return recipe
    if held is not None:
        raise ValueError(f"the prefix {recipe.prefix}: is {held.name}'s already")
    names = [c.name for c in recipe.experiments]
    if len(set(names)) < len(names):
        raise ValueError(f"recipe {recipe.name}: an experiment name is given twice ({names})")
    for other in _REGISTRY.values():
        if recipe.train_command and other.train_command and \
                recipe.train_command.name == other.train_command.name:
            raise ValueError(f"recipe {recipe.name}: `hpcsched train {recipe.train_command.name}` "
                             f"is {other.name}'s already")
        taken = set(names) & {c.name for c in other.experiments}
        if taken:
            raise ValueError(f"recipe {recipe.name}: `hpcsched experiment {taken.pop()}` is "
                             f"{other.name}'s already")
        if recipe.evaluation and other.evaluation and \
                recipe.evaluation.kind == other.evaluation.kind:
            raise ValueError(f"recipe {recipe.name}: model files of kind "
                             f"{recipe.evaluation.kind!r} are {other.name}'s already")
    _REGISTRY[recipe.prefix] = recipe
    return recipe


def recipes() -> tuple[Recipe, ...]:
    """The registered recipes, in the order they were registered."""
    return tuple(_REGISTRY.values())


def find(prefix: str) -> Recipe | None:
    return _REGISTRY.get(prefix)


def get(prefix: str) -> Recipe:
    """The recipe of policy-name prefix `prefix`; an unknown one is a one-line error naming the
    known prefixes."""
    recipe = _REGISTRY.get(prefix)
    if recipe is None:
        raise ValueError(f"no learned scheduler has the prefix {prefix + ':'!r} (known: "
                         f"{', '.join(p + ':' for p in _REGISTRY)}; see `hpcsched policies`)")
    return recipe


def entry(ref: str | Callable) -> Any:
    """The attribute a "module:attribute" string names, its module imported now; a function given
    in its place (by a recipe whose module is imported anyway: `hpcsched.recipes.pick_job`) is
    itself."""
    if callable(ref):
        return ref
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def discrete_recipe() -> Recipe:
    """The recipe whose names a discrete-time profile reads (DeepRM's)."""
    found = next((r for r in _REGISTRY.values() if r.heuristics), None)
    if found is None:
        raise ValueError("no learned scheduler runs under a discrete-time profile")
    return found


def shipped_models(recipe: Recipe | None = None) -> list[str]:
    """Names of the models shipped in data/pretrained (not in its seeds/): `recipe`'s, or all."""
    names = sorted(p.stem for p in PRETRAINED.glob("*.pt"))
    if recipe is None:
        return names
    if recipe.shipped is None:
        claimed = tuple(p for r in _REGISTRY.values() for p in (r.shipped or ()))
        return [n for n in names if not n.startswith(claimed)]
    return [n for n in names if n.startswith(recipe.shipped)]


_NOTED: set[Path] = set()


def is_run(folder: Path) -> bool:
    """Whether `folder` is a training run's folder (it holds best.pt or model.pt)."""
    return (folder / "best.pt").is_file() or (folder / "model.pt").is_file()


def locate(spec: str | Path, recipe: Recipe | None = None) -> Path:
    """The model file `spec` names: ``pretrained/NAME`` the shipped one, a file itself, a run
    folder its best.pt, or its model.pt while it has no best.pt yet (noted once on stderr). An
    unknown pretrained name is an error listing `recipe`'s shipped models (all, without one)."""
    spec = str(spec)
    if spec.startswith("pretrained/"):
        name = spec[len("pretrained/"):].removesuffix(".pt")
        path = PRETRAINED / f"{name}.pt"
        if not path.is_file():
            known = ", ".join(shipped_models(recipe)) or "none"
            whose = f" ({recipe.prefix}:)" if recipe is not None else ""
            raise ValueError(f"no pretrained model {name!r}; shipped models{whose}: {known}")
        return path
    path = Path(spec)
    if path.is_dir():
        if (path / "best.pt").is_file():
            return path / "best.pt"
        if not (path / "model.pt").is_file():
            raise ValueError(f"no model file in {path}: neither best.pt nor model.pt")
        if path.resolve() not in _NOTED:
            _NOTED.add(path.resolve())
            print(f"note: {path} has no best.pt yet (no validation so far): using its model.pt",
                  file=sys.stderr)
        return path / "model.pt"
    if not path.exists():
        raise ValueError(f"no model file at {path}")
    return path


def model_kind(checkpoint: dict) -> str:
    """What kind of model a checkpoint holds: the ``recipe`` of a file in hpcsched's model format
    (``rlscheduler``, ``schedinspector``, ``dras``, ``deeprm``: `hpcsched.modelfile`), else its
    ``format``."""
    return str(checkpoint.get("recipe") or checkpoint.get("format") or "")


def model_of(path: str | Path) -> tuple[Recipe, dict]:
    """(the recipe whose model the file at `path` is, by its kind (`model_kind`), the file's
    checkpoint). A file that is no checkpoint, a damaged one, or one of no registered recipe is a
    one-line ValueError."""
    import torch

    from hpcsched.modelfile import is_model, load_checkpoint, read_model

    try:  # a first look, for the format to check the file against
        peek = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001
        read_model(path)  # says in one line what is wrong: damaged, truncated, not torch's
        raise
    if not isinstance(peek, dict) or not isinstance(peek.get("format"), str):
        raise ValueError(f"{path} is not an hpcsched model checkpoint (it names no format)")
    # hpcsched's own format (an older one upgraded as it is read), or a recipe's own
    checkpoint = read_model(path) if is_model(peek) else None
    kind = model_kind(checkpoint if checkpoint is not None else peek)
    found = next((r for r in _REGISTRY.values()
                  if r.evaluation is not None and r.evaluation.kind == kind), None)
    if found is None:
        known = ", ".join(f"{r.evaluation.kind} ({r.prefix}:)" for r in _REGISTRY.values()
                          if r.evaluation is not None)
        raise ValueError(f"{path} is a model of kind {kind!r}, which no registered learned "
                         f"scheduler evaluates (known: {known})")
    return found, (checkpoint if checkpoint is not None
                   else load_checkpoint(path, fmt=peek["format"]))


def load_learner(path: str | Path):
    """The learner of the model file at `path` (`PPO`, `DeepRM`, `DrasPG`, `DrasDQL`, ..., as its
    recipe names the file's learner in `Recipe.learners`), ready to `learn` on from where it
    stopped, or to `predict`. A slim export is refused (it has no training state): to decide with
    one, use its recipe's policy (``PREFIX:PATH``)."""
    from hpcsched.modelfile import OtherKindError, read_model, training_of

    ck = read_model(path)
    ref = next((r.learners.get(ck["learner"]) for r in _REGISTRY.values()
                if r.name == ck["recipe"]), None)
    if ref is None:
        raise OtherKindError(f"{path} is a {ck['recipe']} model trained by {ck['learner']}, which "
                             f"no registered learned scheduler reads")
    training_of(path, ck)
    return entry(ref).load(path)


def in_folder(folder: str | Path, name: str) -> Path | None:
    """Model `name` of a folder of models (`--models DIR`): DIR/NAME.pt, else the run folder
    DIR/NAME/ (by `locate`); None when there is neither."""
    path = Path(folder) / f"{name}.pt"
    if path.is_file():
        return path
    run = Path(folder) / name
    return locate(run) if run.is_dir() and is_run(run) else None


#: the entry-point group of installed packages' recipes, and the variable naming others
PLUGIN_GROUP = "hpcsched.recipes"
PLUGIN_VARIABLE = "HPCSCHED_RECIPES"


def load_plugin(ref: str):
    """Import `ref`, a module that registers recipes when imported: a module name
    (``mypackage.recipes``) or a Python file (``examples/smallest_job.py``, imported as a module
    named by its stem, so that its "module:function" entries can name it). Returns the module."""
    if ref.endswith(".py") or "/" in ref or os.sep in ref:
        import importlib.util

        path = Path(ref).expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {ref}")
        held = sys.modules.get(path.stem)
        if held is not None:
            if getattr(held, "__file__", None) and Path(held.__file__).resolve() == path:
                return held
            raise ValueError(f"{ref}: a module named {path.stem!r} is imported already (from "
                             f"{getattr(held, '__file__', None) or 'built-in'}); rename the file")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[path.stem]
            raise
        return module
    return importlib.import_module(ref)


def load_plugins() -> None:
    """Register the recipes of plugins: every entry point of the group ``hpcsched.recipes`` of
    the installed packages (a module, imported; or a `Recipe`, registered), then every module or
    Python file that ``$HPCSCHED_RECIPES`` names (separated by commas or the path separator).
    One that fails is said in one line on stderr and left out: the other commands keep working."""
    from importlib.metadata import entry_points

    refs = [(ep.value, ep.load) for ep in entry_points(group=PLUGIN_GROUP)]
    names = os.environ.get(PLUGIN_VARIABLE, "").replace(os.pathsep, ",").split(",")
    refs += [(name, lambda name=name: load_plugin(name)) for name in map(str.strip, names)
             if name]
    for ref, load in refs:
        try:
            found = load()
            if isinstance(found, Recipe):
                register(found)
        except Exception as e:  # noqa: BLE001
            print(f"hpcsched: warning: the recipes of {ref!r} are not loaded: "
                  f"{type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)


# the package's own, in the order `hpcsched policies` lists them; then the plugins'
from hpcsched.recipes import rlscheduler, schedinspector, dras, deeprm, dbf, herasched  # noqa: E402,F401,I001

load_plugins()

__all__ = ["PLUGIN_GROUP", "PLUGIN_VARIABLE", "PRETRAINED", "Command", "Evaluation", "Recipe", "Rule",
           "Tiny", "discrete_recipe", "entry", "find", "get", "in_folder", "is_run", "load_learner",
           "load_plugin", "load_plugins", "locate", "model_kind", "model_of", "recipes", "register",
           "shipped_models", "tiny_learners"]
