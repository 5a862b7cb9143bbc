"""Gymnasium environments, one module per learned scheduler.

Importing this package registers them with Gymnasium::

    import gymnasium as gym
    import hpcsched.envs  # noqa: F401
    env = gym.make("hpcsched/PickJob-v0", trace="lublin-1", metric="bsld")

(or, without the import, ``gym.make("hpcsched.envs:hpcsched/PickJob-v0")``).
"""

import gymnasium

from hpcsched.envs.dras import DrasEnv
from hpcsched.envs.inspector import InspectEnv, VecInspect
from hpcsched.envs.pick_job import PickJobEnv, observe
from hpcsched.envs.vec import VecPickJob

PICK_JOB = "hpcsched/PickJob-v0"
DEEPRM = "hpcsched/DeepRM-v0"
DRAS = "hpcsched/DRAS-v0"
INSPECT = "hpcsched/Inspect-v0"

if PICK_JOB not in gymnasium.registry:
    gymnasium.register(id=PICK_JOB, entry_point="hpcsched.envs.pick_job:PickJobEnv")
if DEEPRM not in gymnasium.registry:
    gymnasium.register(id=DEEPRM, entry_point="hpcsched.envs.deeprm:DeepRMEnv")

if DRAS not in gymnasium.registry:
    gymnasium.register(id=DRAS, entry_point="hpcsched.envs.dras:DrasEnv")
if INSPECT not in gymnasium.registry:
    gymnasium.register(id=INSPECT, entry_point="hpcsched.envs.inspector:InspectEnv")

__all__ = ["DEEPRM", "DRAS", "DrasEnv", "INSPECT", "InspectEnv", "PICK_JOB", "PickJobEnv",
           "VecInspect", "VecPickJob", "observe"]
