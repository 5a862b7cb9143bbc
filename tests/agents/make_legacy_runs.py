"""Write tests/data/legacy/: run folders of the formats before the one model format (issue 15),
stopped half way, for `test_legacy.py` to load, resume and upgrade with today's code.

Run it against the code of commit 4436974 (the last one that wrote the old formats), whose API it
uses:

    git archive 4436974 src tests | (mkdir -p /tmp/before && tar -x -C /tmp/before)
    PYTHONPATH=/tmp/before/src python tests/agents/make_legacy_runs.py [OUT]

OUT (default tests/data/legacy, recorded on AMD EPYC machines): on a CPU of another vendor,
tests/data/legacy.VENDOR, which `test_legacy.py`'s resume test reads there
(`tests/agents/cpu_fixtures.py`: training's last bits depend on the kind of CPU).

Each folder is a tiny training run of 2 epochs (episodes) killed after its first, as a user's run
folder is left: model.pt (`hpcsched.ppo/1`, `hpcsched.deeprm/1`, `hpcsched.dras/1`), best.pt,
log.csv, config.json; and slim/ holds the old slim copies of each format.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE.parent / "data" / "legacy"
COMMIT = "4436974"
QUIET = dict(progress=False, log=lambda text: None)
TINY = dict(trace="lublin-1", episode_jobs=32, n_envs=4, trajectories_per_epoch=4, slots=16,
            train_pi_iters=3, train_v_iters=3, seed=3, threads=1, init="sjf", init_episodes=2,
            init_steps=3)
TINY_INSPECTOR = dict(trace="lublin-1", base="sjf", episode_jobs=32, trajectories_per_epoch=4,
                      n_envs=4, train_pi_iters=3, train_v_iters=3, threads=1)
TINY_DEEPRM = dict(load=0.5, steps=10, jobsets=4, rollouts=3, jobsets_per_update=2,
                   validate_jobsets=3, slots=3, backlog=20, hidden=4)
DRAS = dict(trace="toy", curriculum="real:2", jobset_jobs=40, train_days=5, validate_days=2,
            test_days=3, validate_first_days=0.25, validate_every=1, seed=1)


class Killed(Exception):
    pass


def killed_after(owner, name: str, calls: int):
    """Make `owner.name` raise `Killed` at its (calls + 1)-th call; returns the undo."""
    real = getattr(owner, name)
    seen = {"n": 0}

    def wrapper(*args, **kwargs):
        if seen["n"] == calls:
            raise Killed
        seen["n"] += 1
        return real(*args, **kwargs)

    setattr(owner, name, wrapper)
    return lambda: setattr(owner, name, real)


def half(run, owner, name: str, calls: int) -> None:
    undo = killed_after(owner, name, calls)
    try:
        run()
    except Killed:
        pass
    finally:
        undo()


def main() -> None:
    from hpcsched.agents.deeprm import DeepRM, DeepRMConfig
    from hpcsched.agents.inspector import InspectorConfig
    from hpcsched.agents.ppo import PPO, PPOConfig
    from hpcsched.experiments import deeprm as deeprm_training
    from hpcsched.experiments import dras_training as dt
    from hpcsched.experiments import inspector_training, training

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE).stdout.strip()
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    half(lambda: training.train(PPOConfig(**TINY), OUT / "rlscheduler", 2, validate_every=1,
                                validate_windows=1, validate_jobs=32, **QUIET),
         PPO, "_one_epoch", 1)
    half(lambda: inspector_training.train(InspectorConfig(**TINY_INSPECTOR), OUT / "inspector",
                                          2, validate_every=0, **QUIET),
         PPO, "_one_epoch", 1)
    half(lambda: deeprm_training.train(DeepRMConfig(**TINY_DEEPRM), OUT / "deeprm", 2, **QUIET),
         DeepRM, "update", 2)

    sys.path.insert(0, str(HERE.parent / "experiments"))
    from test_dras_training import trace

    from hpcsched.agents import dras_episode
    from hpcsched.sim.run import prepare

    toy = prepare(trace(per_day=300), "dras")
    dt.prepared_for = lambda config: toy
    for algo, agent in (("pg", {}), ("dql", {"replay": 100, "batch": 8})):
        config = dt.DrasRunConfig(algo=algo, **DRAS, agent={"fc1": 8, "fc2": 4, **agent})
        real = dras_episode.run_episode
        learned = {"n": 0}

        def run_episode(*args, **kwargs):
            if kwargs.get("learn"):
                if learned["n"] == 1:
                    raise Killed
                learned["n"] += 1
            return real(*args, **kwargs)

        dras_episode.run_episode = run_episode
        try:
            dt.train(config, OUT / f"dras-{algo}", **QUIET)
        except Killed:
            pass
        finally:
            dras_episode.run_episode = real

    from hpcsched.agents.deeprm_policy import slim as deeprm_slim
    from hpcsched.agents.dras_policy import slim as dras_slim
    from hpcsched.experiments.rlscheduler_seeds import slim as ppo_slim

    (OUT / "slim").mkdir()
    ppo_slim(OUT / "rlscheduler" / "best.pt", OUT / "slim" / "rlscheduler.pt")
    ppo_slim(OUT / "inspector" / "model.pt", OUT / "slim" / "inspector.pt")
    deeprm_slim(OUT / "deeprm" / "best.pt", OUT / "slim" / "deeprm.pt")
    dras_slim(OUT / "dras-pg" / "best.pt", OUT / "slim" / "dras-pg.pt")
    dras_slim(OUT / "dras-dql" / "best.pt", OUT / "slim" / "dras-dql.pt")
    for junk in OUT.rglob("*"):  # a run's plot and lock are not what is tested
        if junk.name in ("curve.png", ".lock") or junk.name == "tb":
            shutil.rmtree(junk) if junk.is_dir() else junk.unlink()
    (OUT / "README.md").write_text(
        f"Run folders and slim copies in the model-file formats before issue 15, written by "
        f"`tests/agents/make_legacy_runs.py` at commit {commit} (its code: {COMMIT}); read by "
        f"`tests/agents/test_legacy.py`.\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
