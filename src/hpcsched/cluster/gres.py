"""Read Slurm's `gres.conf` for the GPUs of each node, and reconcile it with slurm.conf's `Gres=`.

    NodeName=gpu[01-04] Name=gpu Type=a100 File=/dev/nvidia[0-3]   # 4 GPUs on each of 4 nodes
    NodeName=big1 Name=gpu Count=8                                  # Count without devices
    Name=gpu File=/dev/nvidia0                                      # no NodeName: every node
    AutoDetect=nvml                                                 # reported, not supported

What is read (gres.conf(5)): lines with `Name=gpu` (other GRES, such as `mps` or `shard`, are
skipped); `NodeName=` a host list (without it the line is for every node, as each slurmd reads such
a line for itself); the count is `Count=` (a number, with Slurm's K/M/G/T suffixes of powers of
1024), else the number of device files in `File=` (a host-list style range: `/dev/nvidia[0-3]` is 4),
else 1, as the manual says; with `MultipleFiles=` one GPU owns all its files. A `Count=` that
differs from the number of `File=` entries is an error. Several lines for one node add up (one per
GPU type, say). `Type`, `Cores`, `Links`, `Flags` are read and not used (the engine counts GPUs).
`AutoDetect=` (nvml, rsmi, nvidia, oneapi, ...) asks slurmd to probe the hardware, which a file
reader cannot do: such a line is reported in the cluster's notes, and the nodes it covers keep what
the other lines and slurm.conf say (`AutoDetect=off`, which probes nothing, is what we do anyway). Lines for hosts that slurm.conf does not define are skipped and
noted (a shared gres.conf often describes several clusters).

Which wins, as Slurm does: the controller schedules the count configured in slurm.conf (`Gres=` on
the NodeName line); gres.conf describes what each node has. When a node's gres.conf count is higher,
Slurm ignores the excess ("Ignoring excess count"), so slurm.conf's count is kept; a node with GPUs
in gres.conf and none in slurm.conf therefore has none. When it is lower, Slurm drains the node
("gres/gpu count reported lower than configured"): that is an error here, naming both lines, unless
slurm.conf sets `SlurmdParameters=config_overrides`, under which Slurm keeps the configured count,
and so do we. Every disagreement is written to the cluster's notes. (Slurm's `_node_config_validate`
in `src/common/gres.c`.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hpcsched.cluster.hostlist import compress_hostlist, expand_hostlist, split_outside_brackets
from hpcsched.cluster.slurm import ClusterFileError, conf_lines, parse_line

#: gres.conf keys (gres.conf(5)); any other is an error
KEYS = frozenset({"autodetect", "count", "cores", "cpus", "file", "flags", "links",
                  "multiplefiles", "name", "nodename", "type"})
_COUNT = re.compile(r"^(\d+)([kKmMgGtTpP]?)$")
_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


@dataclass
class GresConf:
    """GPUs per host by gres.conf, the line that gave each host its first GPU line, and notes."""

    path: str
    gpus: dict[str, int] = field(default_factory=dict)
    line_of: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def read_gres_conf(path: str | Path, hosts: list[str]) -> GresConf:
    """The GPUs gres.conf gives each of `hosts` (the nodes slurm.conf defines); hosts it does not
    mention are absent from `gpus`."""
    path = Path(path)
    out = GresConf(str(path))
    known = set(hosts)
    for number, text in conf_lines(path):
        line = parse_line(path, number, text)
        for key in line.values:
            if key not in KEYS:
                raise line.error(f"unknown gres.conf key (known: {', '.join(sorted(KEYS))})", key)
        if "nodename" in line.values:
            try:
                named = expand_hostlist(line.values["nodename"])
            except ValueError as exc:
                raise line.error(str(exc), "nodename") from None
            covered = [h for h in named if h in known]
            strangers = len(named) - len(covered)
            if strangers:
                out.notes.append(f"{path}:{number}: {strangers} host(s) of "
                                 f"{line.values['nodename']} are not in slurm.conf: skipped")
        else:
            covered = list(hosts)
        if line.values.get("autodetect", "off").lower() != "off":
            where = f"for {line.values['nodename']}" if "nodename" in line.values else "for every node"
            out.notes.append(f"{path}:{number}: AutoDetect={line.values['autodetect']} {where} is "
                             f"not supported (devices cannot be probed from a file): GPU counts "
                             f"come from slurm.conf's Gres= and gres.conf's Count/File")
        name = line.values.get("name")
        if name is None:
            if "autodetect" not in line.values:
                raise line.error("a gres.conf line needs Name= (or is an AutoDetect= line)")
            continue
        if name.lower() != "gpu":
            continue
        count = _count(line)
        for host in covered:
            out.gpus[host] = out.gpus.get(host, 0) + count
            out.line_of.setdefault(host, number)
    return out


def _count(line) -> int:
    files = None
    if "file" in line.values:
        try:
            files = sum(len(expand_hostlist(part))
                        for part in split_outside_brackets(line.values["file"]))
        except ValueError as exc:
            raise line.error(str(exc), "file") from None
        if "multiplefiles" in line.values:
            raise line.error("give File= or MultipleFiles=, not both", "file")
    if "multiplefiles" in line.values:
        files = 1
    if "count" not in line.values:
        return files if files is not None else 1
    m = _COUNT.match(line.values["count"])
    if m is None:
        raise line.error(f"expected a whole number (with an optional K, M, G, T or P), got "
                         f"{line.values['count']!r}", "count")
    count = int(m.group(1)) * 1024 ** _POWER[m.group(2).lower()]
    if files is not None and count != files:
        raise line.error(f"{count} GPUs, but File= names {files} device(s)", "count")
    return count


def reconcile(gres: GresConf, hosts: list[str], configured: list[int], node_line: list[str],
              overrides: bool) -> None:
    """Check gres.conf against slurm.conf's configured GPU counts (`configured`, one per host), which
    stand: raise where Slurm would drain a node, and append every other disagreement to
    `gres.notes`, one note per (gres.conf line, slurm.conf line, counts)."""
    groups: dict[tuple, list[str]] = {}
    for i, host in enumerate(hosts):
        if host not in gres.gpus:
            continue
        found, config = gres.gpus[host], configured[i]
        if found == config:
            continue
        key = (gres.line_of[host], node_line[i], found, config)
        if found < config and not overrides:
            raise ClusterFileError(
                gres.path, gres.line_of[host],
                f"node {host!r} has {found} GPU(s) here, but {node_line[i]} configures {config} "
                f"(Gres=): Slurm drains such a node (gres/gpu count reported lower than "
                f"configured). Make the files agree, or set SlurmdParameters=config_overrides in "
                f"slurm.conf to keep slurm.conf's count")
        groups.setdefault(key, []).append(host)
    for (gline, sline, found, config), members in groups.items():
        if found > config:
            why = ("slurm.conf configures none (Slurm ignores GPUs slurm.conf does not configure)"
                   if config == 0 else f"slurm.conf ({sline}) configures {config}: Slurm ignores "
                   f"the excess")
        else:
            why = f"slurm.conf ({sline}) configures {config}: kept (SlurmdParameters=config_overrides)"
        gres.notes.append(f"{gres.path}:{gline}: {compress_hostlist(members)}: {found} GPU(s) per "
                          f"node here; {why}; {config} used")
