"""Plots written as PNG files (matplotlib's Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def training_curve(history: Sequence[dict[str, Any]], path: str | Path, metric: str,
                   title: str = "") -> Path:
    """The epoch's mean training metric (sampled actions) and, where it was measured, the greedy
    validation metric, against the epoch. Heuristic levels may be given as ``history`` rows with
    ``epoch`` None (they are drawn as horizontal lines)."""
    plt = _pyplot()
    path = Path(path)
    epochs = [h["epoch"] for h in history if h.get(metric) is not None]
    values = [h[metric] for h in history if h.get(metric) is not None]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    ax.plot(epochs, values, color="tab:blue", lw=1.2, label=f"training {metric} (sampled)")
    val = [(h["epoch"], h[f"val_{metric}"]) for h in history if h.get(f"val_{metric}") is not None]
    if val:
        ax.plot(*zip(*val), "o-", color="tab:orange", ms=3, lw=1.2,
                label=f"validation {metric} (greedy)")
    ax.set_xlabel("epoch")
    ax.set_ylabel(metric)
    if values and metric != "utilization" and min(values) > 0 and max(values) / min(values) > 20:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return save_figure(fig, path)


def save_figure(fig, path: str | Path) -> Path:
    """Lay out, write (making the folder) and close a figure; returns the path."""
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    _pyplot().close(fig)
    return path


__all__ = ["save_figure", "training_curve"]
