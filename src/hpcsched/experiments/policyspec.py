"""Policies named on the command line: a heuristic (`sjf`), or a learned scheduler's model,
``PREFIX:MODEL`` with the prefix of a recipe registered in `hpcsched.recipes` (``rl``, ``inspect``,
``dras``, ``deeprm``). MODEL is a model file, a run folder (its best.pt; its model.pt while it has
none) or ``pretrained/NAME``, a model shipped with the package (see `hpcsched.data.pretrained`).

`inspect:PATH` is a SchedInspector model around the base heuristic it was trained with;
`inspect:PATH@BASE` puts it around another base heuristic. `inspect:reject-unfit@BASE` is a fixed
rule in the inspector's place, for reference: reject the proposed job exactly when it does not fit
in the free nodes now.

On a cluster of named nodes, ``SELECTOR+ALLOCATOR`` (``fcfs+best-fit``, ``unicep+topology``) runs
a policy with an allocator of its own instead of the command's (`split_allocator`); a HeraSched
model places its jobs itself and takes none.

`dras:PATH` (e.g. `dras:pretrained/dras-pg-ricc`) is a trained DRAS-PG, DRAS-DQL or Decima-PG
agent; it runs under the dras profile, with `--backfill easy` (Decima-PG: `none`). Under a
discrete-time profile (deeprm) the names are DeepRM's: its heuristics and `deeprm:PATH`."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from hpcsched import recipes
from hpcsched.recipes import PRETRAINED, Recipe
from hpcsched.sim.run import Prepared


def pretrained_models(prefix: str | None = None) -> list[str]:
    """Names of the shipped models of the recipe with policy prefix `prefix` (default:
    RLScheduler's, ``rl``); a file-name prefix such as ``inspect-`` selects by name."""
    recipe = recipes.find(prefix or "rl")
    if recipe is not None:
        return recipes.shipped_models(recipe)
    return [n for n in recipes.shipped_models() if n.startswith(prefix)]


def model_path(spec: str, prefix: str | None = None) -> Path:
    """The checkpoint file a model spec names (without its ``rl:``, ``inspect:``, ... prefix), by
    `hpcsched.recipes.locate`; `prefix`: the recipe whose shipped models to list when a pretrained
    name is unknown (default: all)."""
    return recipes.locate(spec, recipes.get(prefix) if prefix else None)


def _recipe_of(spec: str) -> tuple[Recipe | None, str]:
    """(the recipe a name's prefix registers, what follows the prefix); (None, spec) for a name
    without one."""
    prefix, colon, arg = spec.partition(":")
    return (recipes.find(prefix), arg) if colon else (None, spec)


def resolve_policy(spec: str, prepared: Prepared | None = None, *, seed: int = 0,
                   sample: bool = False, discrete: bool | None = None):
    """The `Policy` a name stands for. A trained model observes with the constants of the trace it
    schedules (`prepared`), like the authors' test script; `sample=True` samples its actions.
    Under a discrete profile (`prepared`'s, or `discrete=True`) the names are those of the
    recipe that runs there (DeepRM's: sjf, packer, tetris[:KNOB], random, deeprm:PATH)."""
    recipe, arg = _recipe_of(spec)
    if discrete is None:
        discrete = prepared is not None and prepared.profile.discrete
    if discrete:
        grid = recipes.discrete_recipe()
        if recipe is not grid:  # its heuristics (which refuse other recipes' models)
            return recipes.entry(grid.heuristics)(spec, seed=seed)
    if recipe is not None:
        return _model(recipe, arg, prepared, spec, seed=seed, sample=sample)
    if ":" in spec:  # no heuristic's name has one: an unknown prefix
        try:
            recipes.get(spec.partition(":")[0])
        except ValueError as e:
            raise ValueError(f"unknown policy {spec!r}: {e}") from None
    from hpcsched.policies.priority import get_policy

    return get_policy(spec, seed=seed, profile=prepared.profile if prepared is not None else None)


def placing_allocators() -> tuple[str, ...]:
    """The allocators a SELECTOR+ALLOCATOR name may give (`cluster.allocate`'s, less HPCsim's
    own, which the hpcsim profile picks by the same names)."""
    from hpcsched.cluster.allocate import ALLOCATORS

    return tuple(a for a in ALLOCATORS if not a.startswith("hpcsim-"))


def split_allocator(spec: str) -> tuple[str, str | None]:
    """(policy, allocator) of a name ``SELECTOR+ALLOCATOR`` (``fcfs+best-fit``,
    ``rl:runs/x+topology``); (spec, None) for a name without one. An unknown allocator is a
    one-line error naming the allowed ones; so is an allocator given to a model that places its
    jobs itself (``herasched:PATH``: its allocator agent). A model path that itself holds a ``+``
    is kept whole."""
    if "+" not in spec:
        return spec, None
    recipe, arg = _recipe_of(spec)
    if recipe is not None and Path(arg).exists():
        return spec, None
    policy, _, allocator = spec.rpartition("+")
    allocator = allocator.strip().lower()
    allowed = placing_allocators()
    if allocator not in allowed:
        raise ValueError(f"{spec!r}: unknown allocator {allocator!r} after '+'; the allocators: "
                         f"{', '.join(allowed)}")
    if recipe is not None and recipe.places_jobs:
        other = f" (or {policy.strip()}@allocator={allocator}: that heuristic in place of the " \
                f"agent)" if "@allocator=" in recipe.usage else ""
        raise ValueError(f"{spec!r}: a {recipe.name} model places its jobs with its own allocator "
                         f"agent; name it without '+{allocator}'{other}")
    if not policy.strip():
        raise ValueError(f"{spec!r}: no policy before '+{allocator}'")
    return policy.strip(), allocator


def require_named_nodes(prepared: Prepared, names: Sequence[str]) -> None:
    """Refuse, in one line, SELECTOR+ALLOCATOR `names` on a pool of identical nodes: an
    allocator places jobs on named nodes (nothing to refuse when `names` is empty)."""
    from hpcsched.cluster.nodes import Cluster

    if names and not isinstance(prepared.cluster, Cluster):
        raise ValueError(f"{', '.join(names)}: an allocator places jobs on named nodes; run on a "
                         f"cluster of them (--cluster spartan-deeplearn, a slurm.conf, ...)")


def allocator_label(policy, prepared: Prepared, allocator: str | None = None) -> str:
    """The allocator a run of `policy` on `prepared` places jobs with, as its row names it:
    `allocator`, else the trace's (--allocator), else the profile's; ``agent`` for a policy that
    places its jobs itself (a HeraSched model's allocator agent), or the heuristic's name that
    places them in its place (``herasched:MODEL@allocator=NAME``)."""
    if getattr(policy, "places_jobs", False):
        return getattr(policy, "place_with", None) or "agent"
    return allocator or prepared.allocator or prepared.profile.allocator


def _model(recipe: Recipe, arg: str, prepared: Prepared | None, name: str, *, seed: int,
           sample: bool):
    model, option = recipe.split(arg)
    rule = recipe.rule(model)
    if rule is not None:
        return recipes.entry(rule.entry)(prepared, option=option, seed=seed, sample=sample,
                                         name=name)
    return recipes.entry(recipe.load)(recipes.locate(model, recipe), prepared, option=option,
                                      seed=seed, sample=sample, name=name)


def model_profiles(specs: list[str]) -> dict[str, str]:
    """{spec: profile} for the models among `specs` whose recipe names the profile they run under:
    the one a SchedInspector model was trained with (the fixed reject-unfit rule: schedinspector),
    DRAS's dras. Heuristics and recipes without one (`rl:` models keep the standard default they
    have always had) are left out."""
    out: dict[str, str] = {}
    for spec in specs:
        recipe, arg = _recipe_of(spec)
        if recipe is None:
            continue
        model, _ = recipe.split(arg)
        if recipe.profile_of is not None and recipe.rule(model) is None:
            out[spec] = recipes.entry(recipe.profile_of)(recipes.locate(model, recipe))
        elif recipe.profile is not None:
            out[spec] = recipe.profile
    return out


def listing() -> list[str]:
    """The lines of `hpcsched policies` after the heuristics: each recipe's names and shipped
    models."""
    lines: list[str] = []
    for recipe in recipes.recipes():
        lines.append("")
        shipped = recipes.shipped_models(recipe)
        if recipe.heuristics is not None:  # a discrete profile's own heuristics come first
            lines.append(f"{recipe.title}:")
            for name, text in recipes.entry(recipe.heuristic_help).items():
                lines.append(f"  {name:<10}{text}")
            lines.append(f"  {recipe.usage}" + (", or a shipped one:" if shipped else ""))
        else:
            lines.append(f"{recipe.title}: {recipe.usage}" +
                         (", or a shipped one:" if shipped else ""))
        lines += [f"  {recipe.prefix}:pretrained/{name}" for name in shipped]
        lines += [f"  {recipe.prefix}:{rule.usage} ({rule.help})" for rule in recipe.rules]
    return lines


__all__ = ["PRETRAINED", "allocator_label", "listing", "model_path", "model_profiles",
           "placing_allocators", "pretrained_models", "require_named_nodes", "resolve_policy",
           "split_allocator"]
