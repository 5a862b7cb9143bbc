"""hpcsched: HPC batch-job scheduling on one event-driven simulator, with classic heuristics and
learned (deep reinforcement learning) schedulers."""

__version__ = "0.1.0"
