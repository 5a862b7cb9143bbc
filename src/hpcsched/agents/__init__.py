"""Networks and learning algorithms that learn from `hpcsched.envs` and are then used as a `Policy`.

    from hpcsched.agents import PPO, RLSchedulerConfig, load_policy

    model = PPO(RLSchedulerConfig(trace="lublin-1")).learn(epochs=100)
    model.save("runs/lublin-1.pt")
    policy = load_policy("runs/lublin-1.pt")      # engine.run(policy), like any heuristic

Names are imported on first use, so that importing `hpcsched.agents` costs nothing without torch.
"""

from importlib import import_module

_WHERE = {
    "PPO": "ppo", "PPOParams": "ppo", "RLSchedulerConfig": "rlscheduler",
    "InspectorConfig": "inspector",
    "KernelPolicy": "nets", "KernelValue": "nets", "FlatValue": "nets", "MLPPolicy": "nets",
    "LeNetPolicy": "nets", "make_policy": "nets", "make_value": "nets",
    "load_policy": "rlscheduler_policy", "RLPolicy": "rlscheduler_policy",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(import_module(f"hpcsched.agents.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'hpcsched.agents' has no attribute {name!r}")
