"""Gymnasium environments, one module per learned scheduler.

Importing this package registers them with Gymnasium::

    import gymnasium as gym
    import hpcsched.envs  # noqa: F401
    env = gym.make("hpcsched/PickJob-v0", trace="lublin-1", metric="bsld")

(or, without the import, ``gym.make("hpcsched.envs:hpcsched/PickJob-v0")``). PickJob, Inspect
and DBF also vectorise on their batched envs: ``gym.make_vec("hpcsched/PickJob-v0",
num_envs=64)`` is a `PickJobVectorEnv` (`hpcsched.envs.vector`; DBF's: `DBFVectorEnv` in
`hpcsched.envs.dbf_vec`); the other ids get gymnasium's `SyncVectorEnv`.
"""

import gymnasium

from hpcsched.envs.dbf import DBFEnv
from hpcsched.envs.dbf_vec import DBFVectorEnv, VecDBF
from hpcsched.envs.dras import DrasEnv
from hpcsched.envs.herasched import HeraSchedEnv
from hpcsched.envs.inspector import InspectEnv
from hpcsched.envs.pick_job import PickJobEnv, observe
from hpcsched.envs.vec import VecInspect, VecPickJob
from hpcsched.envs.vector import InspectVectorEnv, PickJobVectorEnv

PICK_JOB = "hpcsched/PickJob-v0"
DEEPRM = "hpcsched/DeepRM-v0"
DRAS = "hpcsched/DRAS-v0"
INSPECT = "hpcsched/Inspect-v0"
DBF = "hpcsched/DBF-v0"
HERASCHED = "hpcsched/HeraSched-v0"

if PICK_JOB not in gymnasium.registry:
    gymnasium.register(id=PICK_JOB, entry_point="hpcsched.envs.pick_job:PickJobEnv",
                       vector_entry_point="hpcsched.envs.vector:PickJobVectorEnv")
if DEEPRM not in gymnasium.registry:
    gymnasium.register(id=DEEPRM, entry_point="hpcsched.envs.deeprm:DeepRMEnv")

if DRAS not in gymnasium.registry:
    gymnasium.register(id=DRAS, entry_point="hpcsched.envs.dras:DrasEnv")
if INSPECT not in gymnasium.registry:
    gymnasium.register(id=INSPECT, entry_point="hpcsched.envs.inspector:InspectEnv",
                       vector_entry_point="hpcsched.envs.vector:InspectVectorEnv")

if DBF not in gymnasium.registry:
    gymnasium.register(id=DBF, entry_point="hpcsched.envs.dbf:DBFEnv",
                       vector_entry_point="hpcsched.envs.dbf_vec:DBFVectorEnv")

if HERASCHED not in gymnasium.registry:
    gymnasium.register(id=HERASCHED, entry_point="hpcsched.envs.herasched:HeraSchedEnv")

__all__ = ["DBF", "DBFEnv", "DBFVectorEnv", "DEEPRM", "DRAS", "DrasEnv", "HERASCHED", "HeraSchedEnv",
           "INSPECT", "InspectEnv",
           "InspectVectorEnv", "PICK_JOB", "PickJobEnv", "PickJobVectorEnv", "VecDBF", "VecInspect",
           "VecPickJob", "observe"]
