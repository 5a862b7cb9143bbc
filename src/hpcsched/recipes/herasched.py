"""HeraSched (Wang's thesis Ch. 4): a PPO job selector and a PPO node allocator in a hierarchy, on
`hpcsched/HeraSched-v0` (`envs/herasched.py`, `agents/herasched.py`,
`experiments/herasched_training.py`).

``herasched:PATH`` runs a model file (a run folder: its best.pt) on the engine
(`agents.herasched_policy`): at each instant the selector picks jobs of its split window, the
allocator places each on nodes it picks one by one, until the selector chooses Forward or nothing
in the window fits. It needs a cluster of named nodes (``--cluster``; an SWF trace under the hpcsim
profile gets identical shared nodes). There is no separate backfiller: ``--backfill easy`` leaves
its schedule as it is (the engine's backfilling only runs behind a job that could not start, and
HeraSched starts only jobs that fit); ``conservative`` is refused. Models run under the ``hpcsim``
profile (the thesis's simulator) unless the command names another pass-loop profile. Options follow
the path, joined by '@': ``@reserve[=AGE]`` (EASY's reservation for the oldest job once it has
waited AGE), ``@allocator=NAME`` (topology, best-fit or first-available places the selector's
jobs in place of the model's allocator agent) and ``@selector=NAME`` (one of the grid's seven
selectors, with HPCsim's backfilling, picks the jobs the allocator agent places)."""

from __future__ import annotations

from dataclasses import dataclass

from hpcsched.envs import HERASCHED
from hpcsched.recipes import Command, Evaluation, Recipe, Tiny, register

CLI = "hpcsched.cli.herasched_train"


#: what ``@allocator=NAME`` may name: the grid's three allocators (Appendix B's columns), read in
#: the profile's dialect as the grid's cells read them (under hpcsim, HPCsim's own)
ALLOCATOR_OPTIONS = ("topology", "best-fit", "first-available")
#: what ``@selector=NAME`` may name: the grid's seven selectors (Appendix B's rows)
SELECTOR_OPTIONS = ("fcfs", "lcfs", "sjf", "wfp3", "unicep", "f1", "f2")


@dataclass(frozen=True)
class ModelOptions:
    """What follows a HeraSched model's name (``herasched:PATH@OPTION[@OPTION]``)."""

    #: ``@reserve[=AGE]``: the wait (s) after which the oldest job is reserved for; None: none
    reserve_after: float | None = None
    #: ``@allocator=NAME``: a heuristic allocator places the selector's jobs in place of the
    #: model's allocator agent; None: the model's own
    allocator: str | None = None
    #: ``@selector=NAME``: a heuristic orders the jobs with HPCsim's backfilling behind its head
    #: (the grid's cells) in place of the model's selector agent; None: the model's own
    selector: str | None = None
    #: ``@work-conserving``: the selector is not offered Forward while a job it may pick fits
    work_conserving: bool = False


def _unknown(option: str, name: str) -> ValueError:
    return ValueError(f"{name}: unknown option {option!r} after '@'; a HeraSched model takes "
                      f"@reserve or @reserve=AGE (a Slurm duration: MM, HH:MM:SS, D-HH, ...): "
                      f"once the oldest waiting job has waited AGE, start only it, or what EASY "
                      f"would backfill behind it; @allocator=NAME (one of "
                      f"{', '.join(ALLOCATOR_OPTIONS)}): that heuristic places the selector's "
                      f"jobs in place of the model's allocator; @selector=NAME (one of "
                      f"{', '.join(SELECTOR_OPTIONS)}): that heuristic with HPCsim's "
                      f"backfilling picks the jobs in place of the model's selector; "
                      f"@work-conserving: the selector is not offered Forward while a job it "
                      f"may pick fits now")


def model_options(option: str, name: str) -> ModelOptions:
    """The options of a HeraSched model, `option` being what follows its first '@' (options
    joined by '@', each at most once), refused (`name` in the message) if unknown or malformed."""
    from hpcsched.workload.sacct import parse_duration

    found: dict[str, object] = {}
    for part in option.split("@") if option else ():
        key, eq, value = part.partition("=")
        if key not in ("reserve", "allocator", "selector", "work-conserving") or \
                (eq and not value) or (key in ("allocator", "selector") and not eq) or \
                (key == "work-conserving" and eq):
            raise _unknown(part, name)
        if key in found:
            raise ValueError(f"{name}: @{key} is given twice")
        if key == "work-conserving":
            found[key] = True
        elif key != "reserve":
            names = ALLOCATOR_OPTIONS if key == "allocator" else SELECTOR_OPTIONS
            if value not in names:
                raise ValueError(f"{name}: @{key}={value}: not one of the grid's {key}s "
                                 f"({', '.join(names)})")
            found[key] = value
        elif not eq:
            found[key] = 0.0
        else:
            seconds = parse_duration(value)
            if seconds is None:
                raise ValueError(f"{name}: @reserve={value}: not a Slurm duration (MM, MM:SS, "
                                 f"HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS)")
            found[key] = seconds
    if "selector" in found and "reserve" in found:
        raise ValueError(f"{name}: @selector backfills as HPCsim does (the grid's cells); it takes "
                         f"no @reserve")
    if "selector" in found and "work-conserving" in found:
        raise ValueError(f"{name}: @selector replaces the model's selector, so @work-conserving "
                         f"has nothing to act on")
    return ModelOptions(reserve_after=found.get("reserve"), allocator=found.get("allocator"),
                        selector=found.get("selector"),
                        work_conserving=bool(found.get("work-conserving", False)))


def reserve_after(option: str, name: str) -> float | None:
    """The wait after which the oldest job is reserved for, of ``@reserve[=AGE]`` (in `option`;
    AGE a Slurm duration: MM, HH:MM:SS, D-HH, ...; ``@reserve`` alone: 0); None without one."""
    return model_options(option, name).reserve_after


def policy(path, prepared, *, option: str, seed: int, sample: bool, name: str):
    """The HeraSched model at `path` as an engine Policy (it reads the cluster it is given);
    ``@reserve[=AGE]`` (`option`) holds an EASY reservation for the oldest waiting job once it
    has waited AGE (`agents.herasched_policy.HeraSchedPolicy`'s `reserve_after`);
    ``@allocator=NAME`` places the selector's jobs with that heuristic allocator instead of the
    model's allocator agent (an ablation: which half of the hierarchy does what)."""
    from hpcsched.agents.herasched_policy import load_herasched
    from hpcsched.envs.herasched import check_profile

    options = model_options(option, name)
    if prepared is not None:
        check_profile(prepared)
    return load_herasched(path, sample=sample, seed=seed, name=name,
                          reserve_after=options.reserve_after, place_with=options.allocator,
                          order_by=options.selector, work_conserving=options.work_conserving)


def tiny() -> Tiny:
    """Our network on Lublin-1 under the hpcsim profile (256 shared single-core nodes), a window
    of 8 (tail 2), 64-job episodes two at a time, rewards every 16 selector actions and 8 jobs,
    three updates of 64 selector steps at a rate that changes its mind in so few."""
    from hpcsched.agents.herasched import HeraSched, HeraSchedConfig
    from hpcsched.agents.herasched_policy import as_policy

    env = dict(trace="lublin-1", cluster=None, profile="hpcsim", window=8, tail=2,
               episode_jobs=64, selector_every=16, allocator_every=8)

    def make(_env, seed: int) -> HeraSched:
        return HeraSched(HeraSchedConfig(**env, num_envs=2, update_every=64, minibatch=32,
                                         update_epochs=2, pi_lr=3e-2, vf_lr=3e-2, seed=seed))

    return Tiny(env=env, make=make, learn=lambda model, _env: model.learn(3),
                policy=lambda model, prepared, name: as_policy(model, name=name),
                trace="lublin-1", start=2000, jobs=128, profile="hpcsim")


RECIPE = register(Recipe(
    name="herasched", prefix="herasched", env_id=HERASCHED,
    learners={"hierarchical-ppo": "hpcsched.agents.herasched:HeraSched"},
    load="hpcsched.recipes.herasched:policy",
    train="hpcsched.experiments.herasched_training:train", shipped=("herasched-",),
    profile="hpcsim", places_jobs=True, separator="@",
    title="HeraSched models (Wang's thesis Ch. 4; hpcsim profile, a cluster of named nodes)",
    usage="herasched:PATH[@reserve[=AGE]][@allocator=NAME][@selector=NAME][@work-conserving] "
          "(a model file, or a run folder: its best.pt; @reserve: hold an EASY reservation for "
          "the oldest job once it has waited AGE; @allocator: topology, best-fit or "
          "first-available places the jobs in place of the model's allocator; @selector: fcfs, "
          "sjf, ... with HPCsim's backfilling picks them in place of its selector; "
          "@work-conserving: no Forward while a job the selector may pick fits)",
    train_command=Command("herasched", "HeraSched (Wang's thesis Ch. 4): a PPO job selector and a "
                                       "PPO node allocator for heterogeneous clusters",
                          f"{CLI}:add_train_arguments", f"{CLI}:cmd_train"),
    experiments=(Command("herasched", "Wang's thesis Ch. 4: HeraSched's models against Appendix "
                                      "B's 21 cells on held-out periods (Figs 4.5, 4.6, 4.8, "
                                      "Table 4.3)",
                         "hpcsched.cli.herasched_eval:add_arguments",
                         "hpcsched.cli.herasched_eval:cmd_eval"),),
    evaluation=Evaluation("herasched", f"{CLI}:evaluate"),
    tiny="hpcsched.recipes.herasched:tiny"))
