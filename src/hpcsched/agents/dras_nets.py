"""DRAS's networks (IPDPS'21, Table III; spec dras.md section 5).

input [rows, 2] -> "convolution": one 1x2 filter with a bias, shared by every row (3 parameters),
giving one value per row -> FC1 (no bias) -> FC2 (no bias) -> output (with a bias). These bias
conventions are the ones that reproduce the paper's parameter counts (spec section 17).

- `PolicyNet` (DRAS-PG, Decima-PG): rows = 2W + N, output W logits; invalid slots are masked, which
  is the code's "cut and renormalise".
- `QNet` (DRAS-DQL): the paper scores one job at a time from [2 + N, 2] (its block and the nodes)
  and outputs one value. Scoring a window of W jobs that way repeats the nodes' share of FC1 W
  times; `QNet.forward` computes it once and adds each job's share, which is the same arithmetic
  (FC1 is linear in its input) for a W-th of the cost. The output is linear (the code's sigmoid
  squashes a Q-value into (0, 1), wrong for returns above 1).

Hidden sizes are scaled to the cluster: FC1 = input rows x 4000/4460 and FC2 = FC1 / 4, both
rounded to a multiple of 10 (Theta's 4460 rows give exactly the paper's 4000 and 1000).
"""

from __future__ import annotations

import torch
from torch import nn

ACTIVATIONS = {"leaky_relu": nn.LeakyReLU, "relu": nn.ReLU}


def scaled_sizes(rows: int) -> tuple[int, int]:
    """FC1 and FC2 for an input of `rows` rows, in Theta's proportions."""
    fc1 = max(10, int(round(rows * 4000 / 4460 / 10)) * 10)
    fc2 = max(10, int(round(fc1 / 4 / 10)) * 10)
    return fc1, fc2


class PolicyNet(nn.Module):
    def __init__(self, rows: int, fc1: int, fc2: int, out: int, activation: str = "leaky_relu"):
        super().__init__()
        self.conv = nn.Linear(2, 1)  # the 1x2 filter: w . [a, b] + bias, on every row
        self.fc1 = nn.Linear(rows, fc1, bias=False)
        self.fc2 = nn.Linear(fc1, fc2, bias=False)
        self.out = nn.Linear(fc2, out)
        self.act = ACTIVATIONS[activation]()

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """FC2 and the output, from FC1's pre-activation `h`."""
        return self.out(self.act(self.fc2(self.act(h))))

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [B, W] from observations [B, rows, 2]; masked slots get -inf."""
        return masked(self.head(self.fc1(self.conv(obs).squeeze(-1))), mask)


class QNet(PolicyNet):
    """One Q-value per job from [its 2 rows + N node rows]; see the module docstring."""

    def __init__(self, nodes: int, fc1: int, fc2: int, activation: str = "leaky_relu"):
        super().__init__(2 + nodes, fc1, fc2, 1, activation)
        self.nodes = nodes

    def score_one(self, job_and_nodes: torch.Tensor) -> torch.Tensor:
        """The paper's form: Q [B] from [B, 2 + N, 2]."""
        return super().forward(job_and_nodes).squeeze(-1)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Q [B, W] for every job slot of window observations [B, 2W + N, 2]."""
        c = self.conv(obs).squeeze(-1)  # [B, 2W + N]
        w = (c.shape[1] - self.nodes) // 2
        jobs = c[:, : 2 * w].reshape(c.shape[0], w, 2)
        weight = self.fc1.weight  # [fc1, 2 + N]: the job's two rows come first
        h = jobs @ weight[:, :2].T + (c[:, 2 * w:] @ weight[:, 2:].T)[:, None, :]
        return masked(self.head(h).squeeze(-1), mask)

    def score_slots(self, obs: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """Q [B] of one slot per observation (what a TD update needs, a W-th of `forward`)."""
        c = self.conv(obs).squeeze(-1)
        w = (c.shape[1] - self.nodes) // 2
        idx = torch.stack([2 * slots, 2 * slots + 1], dim=1)  # [B, 2]
        x = torch.cat([c.gather(1, idx), c[:, 2 * w:]], dim=1)
        return self.head(self.fc1(x)).squeeze(-1)


def per_job_net(rows: int, config) -> QNet:
    """The per-job network of an agent `config` (its window, FC sizes, 0: scaled, activation) on
    observations of `rows` rows."""
    nodes = rows - 2 * config.window
    fc1, fc2 = (config.fc1, config.fc2) if config.fc1 else scaled_sizes(2 + nodes)
    return QNet(nodes, fc1, fc2, config.activation)


def masked(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return scores if mask is None else scores.masked_fill(~mask, float("-inf"))


def paper_parameter_counts() -> dict[str, int]:
    """Trainable parameters of Table III's four networks, built on the meta device (no memory)."""
    from hpcsched.agents.nets import count_parameters

    with torch.device("meta"):
        return {
            "theta_pg": count_parameters(PolicyNet(4460, 4000, 1000, 50)),
            "theta_dql": count_parameters(QNet(4360, 4000, 1000)),
            "cori_pg": count_parameters(PolicyNet(12176, 10000, 4000, 50)),
            "cori_dql": count_parameters(QNet(12076, 10000, 4000)),
        }


__all__ = ["PolicyNet", "QNet", "paper_parameter_counts", "per_job_net", "scaled_sizes"]
