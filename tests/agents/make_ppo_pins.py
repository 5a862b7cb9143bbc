"""Write tests/data/ppo_pins.json: what short PPO trainings computed before issue 15 merged the two
PPO implementations (RLScheduler's `PPO` and SchedInspector's `InspectorPPO`) into one.

Run it against the code of commit e81ef52 (the last one with both), whose API it uses:

    git archive e81ef52 src | (mkdir -p /tmp/before && tar -x -C /tmp/before)
    PYTHONPATH=/tmp/before/src python tests/agents/make_ppo_pins.py [OUT]

OUT (default tests/data/ppo_pins.json, recorded on AMD EPYC machines): on a CPU of another
vendor, tests/data/ppo_pins.VENDOR.json (`tests/agents/cpu_fixtures.py`).

For each case it records a digest of every tensor the training leaves (both networks and both
optimisers' states) and every logged value but the timings. `test_ppo_pins.py` trains the same
cases with today's code and asks for the same digests and values: the merge was to change nothing.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import torch

COMMIT = "e81ef52"
OUT = Path(__file__).resolve().parents[1] / "data" / "ppo_pins.json"
TIMINGS = ("rollout_s", "update_s", "epoch_s", "pi_s", "v_s")
EPOCHS = 2

#: (name, kind, settings, warm start). Small real trainings on Lublin-1, each a few seconds.
RLS = dict(trace="lublin-1", episode_jobs=48, slots=32, n_envs=6, trajectories_per_epoch=6,
           train_pi_iters=8, train_v_iters=8, seed=3, threads=1)
INSPECT = dict(trace="lublin-1", base="sjf", episode_jobs=32, n_envs=6, trajectories_per_epoch=6,
               train_pi_iters=8, train_v_iters=8, seed=3, threads=1)
CASES = [
    ("kernel", "rlscheduler", RLS, False),
    # a KL small enough that the early stop cuts the policy iterations short
    ("relative-reward", "rlscheduler", {**RLS, "reward_baseline": "sjf", "pi_lr": 3e-2,
                                        "target_kl": 0.002}, False),
    ("filter-stages", "rlscheduler", {**RLS, "filter": "fixed", "filter_windows": 30,
                                      "filter_epochs": 1}, False),
    ("warm-start", "rlscheduler", {**RLS, "init": "sjf", "init_episodes": 6, "init_steps": 20},
     True),
    ("fairness", "rlscheduler", {**RLS, "metric": "fairness"}, False),
    # 44 x 48 decisions: the flat networks' gradients in two chunks of at most 2,048 decisions
    ("flat-chunked", "rlscheduler", {**RLS, "policy": "mlp-v2", "value": "flat", "n_envs": 44,
                                     "trajectories_per_epoch": 44}, False),
    ("side-by-side", "rlscheduler", {**RLS, "threads": 2, "metric": "wait", "backfill": "easy"},
     False),
    ("inspector", "schedinspector", {**INSPECT, "pi_lr": 0.05, "target_kl": 0.001}, False),
    ("inspector-rule", "schedinspector", {**INSPECT, "init_accept": 0.9,
                                          "init_rule": "reject-unfit", "init_episodes": 6,
                                          "features": "paper", "reward": "code"}, True),
    ("inspector-2-threads", "schedinspector", {**INSPECT, "threads": 2}, False),
]


def digest(t: torch.Tensor) -> str:
    t = t.detach().contiguous()
    h = hashlib.sha256(f"{t.dtype} {tuple(t.shape)}".encode())
    h.update(t.numpy().tobytes())
    return h.hexdigest()[:32]


def tensors(state, prefix: str = "") -> dict[str, str]:
    """Digests of every tensor in a (nested) state dict, by path."""
    out: dict[str, str] = {}
    if isinstance(state, torch.Tensor):
        out[prefix] = digest(state)
    elif isinstance(state, dict):
        for k, v in state.items():
            out.update(tensors(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(state, (list, tuple)):
        for i, v in enumerate(state):
            out.update(tensors(v, f"{prefix}.{i}"))
    return out


def record(model) -> dict:
    parts = {"policy": model.policy.state_dict(), "value": model.value.state_dict(),
             "pi_optimizer": model.pi_optimizer.state_dict()["state"],
             "v_optimizer": model.v_optimizer.state_dict()["state"]}
    history = [{k: v for k, v in h.items() if k not in TIMINGS} for h in model.history]
    return {"tensors": tensors(parts), "history": history}


def train(kind: str, settings: dict, warm: bool):
    if kind == "rlscheduler":
        from hpcsched.agents.ppo import PPO, PPOConfig

        model = PPO(PPOConfig(**settings))
        if warm:
            model.warm_start()
    else:
        from hpcsched.agents.inspector import InspectorConfig, InspectorPPO

        model = InspectorPPO(InspectorConfig(**settings))
        if warm:
            model.imitate_rule()
    return model.learn(EPOCHS)


def main() -> None:
    import hpcsched

    src = Path(hpcsched.__file__).resolve().parents[1]
    pins = {"commit": COMMIT, "made_by": "tests/agents/make_ppo_pins.py", "epochs": EPOCHS,
            "torch": torch.__version__, "cases": {}}
    for name, kind, settings, warm in CASES:
        print(f"{name} ...", file=sys.stderr, flush=True)
        pins["cases"][name] = {"kind": kind, "settings": settings, "warm_start": warm,
                               **record(train(kind, settings, warm))}
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.write_text(json.dumps(pins, indent=1) + "\n")
    rev = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "(not a checkout)"
    print(f"wrote {out} from the code in {src} (git: {rev})", file=sys.stderr)


if __name__ == "__main__":
    main()
