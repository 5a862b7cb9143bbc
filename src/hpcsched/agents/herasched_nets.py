"""HeraSched's networks: four per model, an actor and a critic for each agent (thesis §4.3: separate
networks; spec §9 item 33), in two families (`NETS`):

``thesis``: the thesis's (Table 4.2): MLPs over the flat observation, Tanh, hidden layers
[2048, 1024] (Deeplearn) or [4096, 2048, 1024] (Physical); the selector reads the selector's input
(7W + 1 + the node blocks), the allocator that and its last number (the chosen slot). Their sizes
are the layout's: a model of this family schedules only clusters and windows of its own shape. On
Physical the first layer alone of each network is 35,340 x 4,096 = 145 M weights.

``default``: ours, built to train on a laptop's CPU and to carry over between clusters. Every
number of the layout is read where it sits (`HeraParser`), then:

- each occupied placeholder of a node (a running job) is encoded by one small layer, and a node's
  encodings are summed and divided by its placeholder count (a measure of what
  runs there that does not depend on the node's size); with the node's 5 numbers and the share of
  its placeholders taken, a shared per-node MLP gives each node an embedding;
- a shared per-job MLP gives each window slot an embedding;
- a small context MLP summarises the cluster and the queue: the mean node embedding, the mean
  embedding of the jobs shown and L(t);
- the selector scores every job from (its embedding, the context) with one shared scorer, and
  Forward from the context; the allocator scores every node from (its embedding, the context, the
  chosen job's embedding) with one shared scorer; the critics read the context (and the chosen
  job's embedding).

ReLU throughout (the thesis's Tanh costs 5x as much per value on a CPU, and a Physical observation
has up to 6,264 placeholders). Every weight is shared across jobs and across nodes, so the
parameter count does not depend on the window or the node count, permuting the nodes permutes the allocator's scores (and the jobs the
selector's), and one model's weights load on any cluster and window (`set_layout`), as
RLScheduler's kernel network scores a queue of any length.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import torch
from torch import nn

from hpcsched.agents.nets import MaskedPolicy, ValueNet, apply_mask
from hpcsched.envs.hera_observation import (HeraLayout, JOB_FEATURES, NODE_FEATURES,
                                            SLOT_FEATURES)

NETS = ("default", "thesis")
#: Table 4.2's hidden layers, by the size of the cluster: Physical's for 87 nodes and more
THESIS_HIDDEN_SMALL = (2048, 1024)
THESIS_HIDDEN_LARGE = (4096, 2048, 1024)
#: the default family's widths: embeddings, and each placeholder's encoding
WIDTH = 32
SLOT_WIDTH = 16


class ModelShape(NamedTuple):
    """What the thesis's MLPs' sizes depend on (a model file's `norm` keeps it)."""

    n_selector: int
    window: int
    nodes: int

    @property
    def n_allocator(self) -> int:
        return self.n_selector + 1


def thesis_hidden(layout: HeraLayout | ModelShape) -> tuple[int, ...]:
    """Table 4.2's hidden layers for a cluster: [4096, 2048, 1024] from Physical's size up (80
    nodes), else Deeplearn's [2048, 1024]."""
    return THESIS_HIDDEN_LARGE if layout.nodes >= 80 else THESIS_HIDDEN_SMALL


def tanh_mlp(sizes: Sequence[int], last_tanh: bool = False) -> nn.Sequential:
    """Linear layers of `sizes` with Tanh between them (and after the last with `last_tanh`)."""
    return _mlp(sizes, nn.Tanh, last_tanh)


def relu_mlp(sizes: Sequence[int], last_relu: bool = False) -> nn.Sequential:
    """Linear layers of `sizes` with ReLU between them (and after the last with `last_relu`)."""
    return _mlp(sizes, nn.ReLU, last_relu)


def _mlp(sizes: Sequence[int], activation, last: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last:
            layers.append(activation())
    return nn.Sequential(*layers)


# ---- the thesis's MLPs --------------------------------------------------------------------------

class ThesisActor(MaskedPolicy):
    """An MLP from the first `n_in` numbers of the observation to `n_actions` masked logits."""

    def __init__(self, n_in: int, n_actions: int, hidden: Sequence[int]):
        super().__init__()
        self.n_in = int(n_in)
        self.net = tanh_mlp([self.n_in, *hidden, n_actions])

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return apply_mask(self.net(obs[..., :self.n_in]), mask)


class ThesisCritic(ValueNet):
    def __init__(self, n_in: int, hidden: Sequence[int]):
        super().__init__()
        self.n_in = int(n_in)
        self.net = tanh_mlp([self.n_in, *hidden, 1])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs[..., :self.n_in]).squeeze(-1)


# ---- ours: shared per-job and per-node scorers ------------------------------------------------

class HeraParser:
    """Where the layout's numbers sit, as index tensors (not weights: a model's weights load on
    any layout). `parse(obs)` -> jobs (B, W, 7), L (B,), nodes (B, N, 5), placeholders
    (B, N, P, 5) with P the most placeholders of a node (zeros beyond a node's own), each node's
    placeholder count (N,), the chosen slot (B,) (-1: none)."""

    def __init__(self, layout: HeraLayout):
        self.layout = layout
        w, n, p = layout.window, layout.nodes, layout.max_slots
        base = torch.as_tensor(layout.node_base, dtype=torch.int64)
        self.node_index = base[:, None] + torch.arange(NODE_FEATURES)[None, :]
        slot = torch.arange(p)[None, :, None]
        index = base[:, None, None] + NODE_FEATURES + SLOT_FEATURES * slot \
            + torch.arange(SLOT_FEATURES)[None, None, :]
        real = slot < torch.as_tensor(layout.slots)[:, None, None]
        pad = layout.n_allocator  # the zero appended after the observation
        self.slot_index = torch.where(real, index, torch.full_like(index, pad)).reshape(-1)
        self.slots = torch.as_tensor(layout.slots, dtype=torch.float32)
        self.shape = (w, n, p)
        #: every node has as many placeholders: the node blocks are one (N, 5 + 5P) array
        self.regular = bool((layout.slots == p).all())

    def parse(self, obs: torch.Tensor):
        w, n, p = self.shape
        lead = obs.shape[0]
        first = JOB_FEATURES * w
        jobs = obs[:, :first].reshape(lead, w, JOB_FEATURES)
        queued = obs[:, first]
        if self.regular:  # views, no copy
            blocks = obs[:, first + 1:-1].reshape(lead, n, NODE_FEATURES + SLOT_FEATURES * p)
            nodes = blocks[..., :NODE_FEATURES]
            placed = blocks[..., NODE_FEATURES:].reshape(lead, n, p, SLOT_FEATURES)
        else:
            padded = torch.cat([obs, obs.new_zeros(lead, 1)], dim=1)
            nodes = padded[:, self.node_index.reshape(-1)].reshape(lead, n, NODE_FEATURES)
            placed = padded[:, self.slot_index].reshape(lead, n, p, SLOT_FEATURES)
        chosen = torch.round(obs[:, -1] * w).long() - 1
        return jobs, queued, nodes, placed, chosen


class HeraEncoder(nn.Module):
    """Job embeddings (B, W, D), which slots hold a job (B, W), node embeddings (B, N, D) and the
    context (B, D) of observations; see the module docstring. `layout` may be None (a model
    loaded before it knows the cluster it will schedule: `set_layout` then)."""

    def __init__(self, layout: HeraLayout | None, width: int = WIDTH, slot_width: int = SLOT_WIDTH):
        super().__init__()
        self.slot_enc = relu_mlp([SLOT_FEATURES, slot_width], last_relu=True)
        self.node_mlp = relu_mlp([NODE_FEATURES + slot_width + 1, width, width], last_relu=True)
        self.job_mlp = relu_mlp([JOB_FEATURES, width, width], last_relu=True)
        self.context = relu_mlp([2 * width + 1, width], last_relu=True)
        self.set_layout(layout)

    def set_layout(self, layout: HeraLayout | None) -> None:
        """Read observations of `layout` from now on (None: none yet, until one is set)."""
        self.parser = HeraParser(layout) if layout is not None else None

    def forward(self, obs: torch.Tensor):
        if self.parser is None:
            raise RuntimeError("the network has no layout yet: set_layout(layout) first")
        jobs, queued, nodes, placed, chosen = self.parser.parse(obs)
        occupied = placed.sum(-1) > 0  # (B, N, P); every number is >= 0, an empty one all 0
        slots = self.parser.slots.to(obs.dtype)[None, :, None]
        # each occupied placeholder encoded (only those: a loaded node may hold 72), summed per node
        lead, n = occupied.shape[:2]
        where = occupied.nonzero()
        encoded = self.slot_enc(placed[occupied])
        running = obs.new_zeros(lead * n, encoded.shape[-1]).index_add_(
            0, where[:, 0] * n + where[:, 1], encoded).reshape(lead, n, -1) / slots
        share = occupied.sum(2, keepdim=True).to(obs.dtype) / slots
        h_node = self.node_mlp(torch.cat([nodes, running, share], -1))
        present = jobs[..., 2] > 0  # a job asks for one node at least; a padding slot is zeros
        h_job = self.job_mlp(jobs)
        weight = present.to(obs.dtype)[..., None]
        shown = (h_job * weight).sum(1) / weight.sum(1).clamp(min=1.0)
        ctx = self.context(torch.cat([h_node.mean(1), shown, queued[:, None]], -1))
        return h_job, present, h_node, ctx, chosen


def chosen_embedding(h_job: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """(B, D): each row's chosen job's embedding (zeros where no slot is chosen)."""
    index = chosen.clamp(min=0)[:, None, None].expand(-1, 1, h_job.shape[-1])
    picked = h_job.gather(1, index).squeeze(1)
    return picked * (chosen >= 0).to(h_job.dtype)[:, None]


class SharedScorer(nn.Module):
    """One score per item (a job, a node) from (the item's embedding, a context shared by the
    row's items): ReLU(A item + B context + b) -> a linear score, the same function as an MLP on
    their concatenation, the context's product computed once per row instead of once per item."""

    def __init__(self, item: int, context: int, width: int):
        super().__init__()
        self.item = nn.Linear(item, width)
        self.context = nn.Linear(context, width, bias=False)
        self.out = nn.Linear(width, 1)

    def forward(self, items: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.item(items) + self.context(context)[:, None, :])
        return self.out(hidden).squeeze(-1)


class SelectorActor(MaskedPolicy):
    """W + 1 logits: a shared scorer over (job, context) for each slot, then Forward's from the
    context."""

    def __init__(self, layout: HeraLayout, width: int = WIDTH):
        super().__init__()
        self.encoder = HeraEncoder(layout, width)
        self.score = SharedScorer(width, width, width)
        self.forward_score = relu_mlp([width, width, 1])

    def set_layout(self, layout: HeraLayout) -> None:
        self.encoder.set_layout(layout)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h_job, _, _, ctx, _ = self.encoder(obs)
        logits = torch.cat([self.score(h_job, ctx), self.forward_score(ctx)], -1)
        return apply_mask(logits, mask)


class SelectorCritic(ValueNet):
    def __init__(self, layout: HeraLayout, width: int = WIDTH):
        super().__init__()
        self.encoder = HeraEncoder(layout, width)
        self.head = relu_mlp([width, width, 1])

    def set_layout(self, layout: HeraLayout) -> None:
        self.encoder.set_layout(layout)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(obs)[3]).squeeze(-1)


class AllocatorActor(MaskedPolicy):
    """N logits: a shared scorer over (node, context, the chosen job) for each node."""

    def __init__(self, layout: HeraLayout, width: int = WIDTH):
        super().__init__()
        self.encoder = HeraEncoder(layout, width)
        self.score = SharedScorer(width, 2 * width, width)

    def set_layout(self, layout: HeraLayout) -> None:
        self.encoder.set_layout(layout)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h_job, _, h_node, ctx, chosen = self.encoder(obs)
        context = torch.cat([ctx, chosen_embedding(h_job, chosen)], -1)
        return apply_mask(self.score(h_node, context), mask)


class AllocatorCritic(ValueNet):
    def __init__(self, layout: HeraLayout, width: int = WIDTH):
        super().__init__()
        self.encoder = HeraEncoder(layout, width)
        self.head = relu_mlp([2 * width, width, 1])

    def set_layout(self, layout: HeraLayout) -> None:
        self.encoder.set_layout(layout)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        h_job, _, _, ctx, chosen = self.encoder(obs)
        return self.head(torch.cat([ctx, chosen_embedding(h_job, chosen)], -1)).squeeze(-1)


# ---- the four networks of a model ------------------------------------------------------------

AGENTS = ("selector", "allocator")


def agent_networks(net: str, layout: HeraLayout, agent: str,
                   hidden: Sequence[int] | None = None,
                   width: int = WIDTH) -> tuple[MaskedPolicy, ValueNet]:
    """(actor, critic) of `agent` ("selector" or "allocator") in family `net` for `layout`
    (`hidden`: the thesis family's layers, default Table 4.2's for the cluster's size; `width`:
    ours). The thesis's family needs only the layout's sizes (a `ModelShape` will do); ours reads
    any layout, and may be built without one (None)."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; HeraSched's are {', '.join(AGENTS)}")
    selector = agent == "selector"
    if net == "thesis":
        hidden = tuple(hidden) if hidden else thesis_hidden(layout)
        n_in = layout.n_selector if selector else layout.n_allocator
        n_out = layout.window + 1 if selector else layout.nodes
        return ThesisActor(n_in, n_out, hidden), ThesisCritic(n_in, hidden)
    if net == "default":
        if selector:
            return SelectorActor(layout, width), SelectorCritic(layout, width)
        return AllocatorActor(layout, width), AllocatorCritic(layout, width)
    raise ValueError(f"unknown HeraSched network {net!r}; choose one of: {', '.join(NETS)}")


def make_networks(net: str, layout: HeraLayout, hidden: Sequence[int] | None = None,
                  width: int = WIDTH) -> dict[str, nn.Module]:
    """{"selector_policy", "selector_value", "allocator_policy", "allocator_value"} (see
    `agent_networks`)."""
    out: dict[str, nn.Module] = {}
    for agent in AGENTS:
        out[f"{agent}_policy"], out[f"{agent}_value"] = agent_networks(net, layout, agent,
                                                                       hidden, width)
    return out


def fits_layout(net: str, networks: dict[str, nn.Module], layout: HeraLayout) -> None:
    """Make `networks` read `layout` (ours: any layout; the thesis's: only its own shape, else a
    one-line error saying what differs)."""
    if net == "default":
        for module in networks.values():
            module.set_layout(layout)
        return
    s = networks["selector_policy"]
    a = networks["allocator_policy"]
    want = (s.n_in, s.net[-1].out_features - 1, a.net[-1].out_features)
    have = (layout.n_selector, layout.window, layout.nodes)
    if want != have:
        raise ValueError(f"this thesis-network model reads {want[0]:,} inputs (a window of "
                         f"{want[1]}, {want[2]} nodes); this cluster and window give "
                         f"{have[0]:,} (a window of {have[1]}, {have[2]} nodes): the thesis's "
                         f"MLPs schedule only clusters of their own shape (the default network "
                         f"carries over)")


__all__ = ["AGENTS", "AllocatorActor", "AllocatorCritic", "HeraEncoder", "HeraParser",
           "ModelShape", "NETS", "SelectorActor", "SelectorCritic", "SharedScorer",
           "THESIS_HIDDEN_LARGE", "THESIS_HIDDEN_SMALL", "ThesisActor", "ThesisCritic",
           "agent_networks", "fits_layout", "make_networks", "thesis_hidden", "relu_mlp",
           "tanh_mlp"]
