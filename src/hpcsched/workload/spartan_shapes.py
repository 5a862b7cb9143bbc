"""The shapes of the Spartan-like generator that Wang's thesis does not give, measured on real traces.

The thesis gives counts, shares and means (see `hpcsched.workload.spartan`); it gives no arrival
rhythm, no run times, no memory per core, no group (job-array) sizes. Those come from here: tables
measured once on the real traces of `shared/traces/` (provenance in its SOURCES.md) by `derive`, and
stored below so that generation needs no trace file. `python -m hpcsched.workload.spartan_shapes
FOLDER` prints them again from the files; a test checks that the stored tables are what the files give.

Sources:

* ``SWF_TRACES``: the Parallel Workloads Archive logs HPC2N, CTC-SP2, KTH-SP2, SDSC-BLUE, LLNL-Atlas,
  RICC, and CERIT-SC's ``wagap-2013`` (an SWF with multi-resource extras). Each counts equally
  (its own shares or quantiles, then averaged), so a big log does not drown a small one.
* ``CERIT``: ``wagap-2013.swf.gz`` alone, the one real multi-resource trace we have: field 10 is the
  job's memory in bytes and the last field the PBS node spec ``N:ppn=P``, which give nodes, cores
  per node and memory per core.

Every quantile table holds the values at probabilities 0, 1/(K-1), ..., 1; sampling interpolates
between them (linearly in the logarithm for sizes and times, linearly for ratios).
"""

from __future__ import annotations

import gzip
import os
import re
import sys

import numpy as np

#: The traces whose rhythms and times are pooled, with the time zone of their clock.
SWF_TRACES: dict[str, tuple[str, str]] = {
    "hpc2n": ("HPC2N-2002-2.2-cln.swf.gz", "Europe/Stockholm"),
    "ctc-sp2": ("CTC-SP2-1996-3.1-cln.swf.gz", "US/Eastern"),
    "kth-sp2": ("KTH-SP2-1996-2.1-cln.swf.gz", "Europe/Stockholm"),
    "sdsc-blue": ("SDSC-BLUE-2000-4.2-cln.swf.gz", "US/Pacific"),
    "llnl-atlas": ("LLNL-Atlas-2006-2.1-cln.swf.gz", "US/Pacific"),
    "ricc": ("RICC-2010-2.swf.gz", "Asia/Tokyo"),
    "cerit": ("wagap-2013.swf.gz", "Europe/Prague"),  # no header: times are Unix seconds
}
CERIT = "wagap-2013.swf.gz"
MAX_LIMIT_S = 30 * 86400  # Spartan's longest time limit (thesis Tables 4.1, 6.1)
QUANTILES = 41  # points of each quantile table (every 2.5%)
GROUP_BUCKETS = 12  # group sizes in [1], [2, 3], [4, 7], ..., [2048, 4095]

# ---- the stored tables (printed by `python -m hpcsched.workload.spartan_shapes FOLDER`) -----------

#: Arrivals: share of jobs submitted in each hour of each weekday (Monday first, local time), in
#: units of 1/100,000; pooled over SWF_TRACES.
WEEK_PROFILE: tuple[tuple[int, ...], ...] = ((307, 272, 347, 265, 200, 153, 187, 261, 464, 803,
                                             1689, 1209, 1169, 1016, 1169, 1237, 1046, 971, 915,
                                             655, 491, 611, 427, 346),
                                            (349, 301, 216, 122, 159, 132, 179, 345, 481, 987,
                                             1080, 1041, 947, 1067, 2237, 1112, 1135, 978, 784,
                                             740, 554, 763, 493, 560),
                                            (437, 390, 258, 146, 185, 181, 231, 256, 539, 1390,
                                             1695, 1318, 1129, 1263, 1470, 1201, 1288, 1053, 769,
                                             543, 895, 601, 488, 376),
                                            (573, 322, 274, 278, 147, 179, 341, 331, 520, 970,
                                             1074, 1373, 1125, 1491, 1409, 1397, 1577, 1092, 795,
                                             658, 573, 533, 613, 430),
                                            (435, 296, 196, 201, 150, 176, 178, 517, 507, 828,
                                             1177, 1329, 1108, 1254, 1203, 1225, 1226, 892, 725,
                                             411, 343, 377, 312, 312),
                                            (302, 194, 191, 166, 169, 143, 128, 245, 204, 282, 345,
                                             459, 425, 409, 574, 506, 412, 376, 399, 331, 284, 395,
                                             441, 256),
                                            (219, 484, 222, 130, 127, 96, 129, 149, 180, 336, 579,
                                             407, 364, 412, 388, 428, 397, 416, 370, 404, 519, 335,
                                             423, 319))

#: Requested time (s) quantiles, pooled over SWF_TRACES (jobs with a requested time; a limit above
#: Spartan's 30 days, such as a few of RICC's, counts as 30 days).
LIMIT_QUANTILES: tuple[float, ...] = (1.0, 125.0, 300.0, 540.0, 600.0, 900.0, 900.0, 1320.0, 1800.0,
                                     1800.0, 1800.0, 1800.0, 3600.0, 3600.0, 5400.0, 7200.0,
                                     7200.0, 7200.0, 7200.0, 7200.0, 10800.0, 13800.0, 14400.0,
                                     16200.0, 21600.0, 21600.0, 28800.0, 39600.0, 43200.0, 53940.0,
                                     57600.0, 64800.0, 72000.0, 86400.0, 86400.0, 172800.0,
                                     259200.0, 259200.0, 291419.0, 432000.0, 2592000.0)

#: Run time / requested time quantiles, pooled over SWF_TRACES, capped at 1 (>= 1: ran to its limit).
RATIO_QUANTILES: tuple[float, ...] = (0.0, 0.0, 7e-05, 0.00032, 0.00079, 0.00169, 0.0028, 0.00444,
                                     0.00604, 0.0083, 0.01154, 0.01611, 0.02124, 0.02754, 0.03667,
                                     0.04667, 0.05444, 0.06944, 0.08749, 0.10786, 0.13212, 0.16167,
                                     0.19329, 0.22595, 0.26375, 0.30667, 0.35, 0.40224, 0.46228,
                                     0.52515, 0.59999, 0.66379, 0.72397, 0.79221, 0.85519, 0.9153,
                                     0.97202, 0.99722, 1.0, 1.0, 1.0)

#: Share of jobs per SWF status, pooled over the SWF_TRACES that record a status other than
#: "completed" for some job: (completed, failed, cancelled).
STATUS_SHARES: tuple[float, float, float] = (0.7547, 0.1466, 0.0987)

#: Group sizes: jobs submitted by one user with the same request and limit, each within 10 s of the
#: previous one (what a job array or a submission script looks like in a log). Share of groups (in
#: units of 1/100,000) whose size is in [1], [2, 3], [4, 7], ... [2048, 4095], for groups of one-core
#: jobs and for the others, pooled over SWF_TRACES (those that have such jobs).
GROUP_SIZES_ONE_CORE: tuple[int, ...] = (79991, 6723, 3509, 3923, 2383, 1140, 586, 919, 768, 57, 2,
                                        1)
GROUP_SIZES_OTHER: tuple[int, ...] = (93421, 3662, 1409, 854, 255, 245, 95, 30, 26, 1, 2, 0)

#: CERIT-SC: lowest cores per node of each class of `MEM_PER_NODE_QUANTILES`.
MEM_CLASSES: tuple[int, ...] = (1, 2, 5, 13, 33)
#: CERIT-SC: memory per node (MB) quantiles of the single-node jobs whose cores fall in each class of
#: MEM_CLASSES (1, 2-4, 5-12, 13-32, 33 and more). Per class, because memory grows with the job's
#: width (the correlation of their logarithms is 0.63 on CERIT) but not in proportion: a one-core
#: job asks up to 150 GB, a 32-core one at most 16 GB per core. Per node, so that no draw exceeds
#: what some CERIT job asked of one node (at most one 512-GiB node).
MEM_PER_NODE_QUANTILES: tuple[tuple[float, ...], ...] = (
    (50.0, 200.0, 200.0, 200.0, 200.0, 200.0, 200.0, 300.0, 300.0, 300.0, 300.0, 300.0, 400.0,
    500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 1024.0, 1024.0, 1024.0, 2048.0,
    4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 5120.0, 5120.0, 5120.0, 5120.0, 5120.0,
    5120.0, 16384.0, 153600.0),
    (400.0, 400.0, 400.0, 400.0, 400.0, 500.0, 500.0, 1000.0, 1024.0, 2048.0, 2048.0, 4000.0,
    4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0, 4096.0,
    4096.0, 4096.0, 4096.0, 4096.0, 5120.0, 10240.0, 12288.0, 12288.0, 16384.0, 16384.0, 20000.0,
    20480.0, 32768.0, 40960.0, 61440.0, 81920.0, 512000.0),
    (400.0, 400.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0, 500.0,
    500.0, 500.0, 2048.0, 4096.0, 5120.0, 10000.0, 10240.0, 12288.0, 12288.0, 12288.0, 16384.0,
    20000.0, 20480.0, 20480.0, 24576.0, 24576.0, 30000.0, 30720.0, 40960.0, 44000.0, 50000.0,
    51200.0, 51200.0, 60000.0, 87040.0, 100000.0, 131072.0, 512000.0),
    (400.0, 3072.0, 6144.0, 10000.0, 10240.0, 15360.0, 16384.0, 16384.0, 16384.0, 16384.0, 16384.0,
    16384.0, 16384.0, 16384.0, 16384.0, 16384.0, 16384.0, 16384.0, 16384.0, 16384.0, 16384.0,
    16384.0, 16384.0, 16384.0, 20480.0, 20480.0, 25600.0, 32768.0, 32768.0, 46080.0, 49152.0,
    51200.0, 60000.0, 60000.0, 81920.0, 100000.0, 122880.0, 163840.0, 163840.0, 204800.0,
    512000.0),
    (400.0, 400.0, 4096.0, 6144.0, 6144.0, 10240.0, 13107.2, 20070.4, 30720.0, 32768.0, 32768.0,
    40960.0, 46080.0, 61440.0, 64716.8, 65536.0, 65536.0, 65536.0, 65536.0, 65536.0, 65536.0,
    65536.0, 65536.0, 65536.0, 65536.0, 65536.0, 65536.0, 65536.0, 65536.0, 65536.0, 65536.0,
    81920.0, 81920.0, 81920.0, 81920.0, 90112.0, 134348.8, 223232.0, 244531.2, 256000.0, 524288.0),
)
#: CERIT-SC: memory per node (MB) quantiles of the multi-node jobs (whatever their width): CERIT's
#: asked at most 40 GB per node, where single-node jobs of the same width asked up to 512 GB.
MEM_PER_NODE_MULTI_QUANTILES: tuple[float, ...] = (
    66.7, 341.3, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0,
    1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1024.0, 1092.3, 2048.0, 2048.0, 2048.0, 2048.0,
    2355.2, 3840.0, 6826.7, 7680.0, 8192.0, 8192.0, 8192.0, 8192.0, 10240.0, 10240.0, 10240.0,
    10240.0, 10513.1, 12288.0, 20480.0, 20480.0, 40960.0)
#: CERIT-SC: the most memory any job asked of one node (MB).
LARGEST_MEM_PER_NODE: float = 524288.0
#: CERIT-SC: cores per node of single-node jobs of more than one core, (value, count).
CORES_SINGLE_NODE: tuple[tuple[int, int], ...] = ((2, 1319), (3, 103), (4, 724), (5, 135),
                                                 (6, 1130), (7, 11), (8, 935), (9, 1), (10, 283),
                                                 (11, 2), (12, 754), (14, 6), (15, 16), (16, 309),
                                                 (18, 7), (19, 1), (20, 548), (21, 6), (22, 1),
                                                 (23, 1), (24, 126), (25, 3), (26, 18), (27, 2),
                                                 (28, 2), (29, 1), (30, 9), (31, 12), (32, 1253),
                                                 (34, 2), (35, 2), (36, 2), (38, 11), (40, 109),
                                                 (42, 11), (48, 25), (50, 7), (51, 12), (52, 1),
                                                 (54, 10), (60, 9), (64, 232), (72, 5), (78, 2),
                                                 (80, 109))
#: CERIT-SC: cores per node of multi-node jobs, (value, count).
CORES_MULTI_NODE: tuple[tuple[int, int], ...] = ((1, 19), (2, 19), (3, 24), (4, 14), (8, 156),
                                                (10, 2), (12, 71), (16, 2), (32, 2), (40, 4),
                                                (64, 4))
#: CERIT-SC: nodes of multi-node jobs, (value, count).
NODES_MULTI_NODE: tuple[tuple[int, int], ...] = ((2, 90), (3, 9), (4, 89), (6, 9), (8, 118),
                                                (10, 2))
#: CERIT-SC: share of multi-node jobs among the jobs of more than one core.
MULTI_NODE_SHARE: float = 0.03693
#: CERIT-SC: share of one-core jobs (a realism check beside the thesis's 71.5% on Physical).
ONE_CORE_SHARE: float = 0.51933


# ---- derivation --------------------------------------------------------------------------------


def _read(path: str) -> tuple[np.ndarray, int, list[str]]:
    """(rows x 18 float array, UnixStartTime (0 when absent), each line's trailing text)."""
    start = 0
    rows, extra = [], []
    with gzip.open(path, "rt", errors="replace") as f:
        for line in f:
            if line.startswith(";"):
                m = re.match(r";\s*UnixStartTime:\s*(\d+)", line)
                if m:
                    start = int(m.group(1))
                continue
            fields = line.split()
            if len(fields) < 18:
                continue
            rows.append([float(x) for x in fields[:18]])
            extra.append(" ".join(fields[18:]))
    return np.asarray(rows), start, extra


def _local_week_hours(seconds: np.ndarray, zone: str) -> np.ndarray:
    """Hour of the week (0 = Monday 00:00-01:00) of each Unix time, in the zone's local time."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(zone)
    hours = np.floor(seconds / 3600).astype(np.int64)
    out = np.empty(hours.size, dtype=np.int64)
    uniq, inverse = np.unique(hours, return_inverse=True)
    for k, h in enumerate(uniq):  # one conversion per distinct hour, not per job
        local = dt.datetime.fromtimestamp(int(h) * 3600 + 1800, tz)
        out_k = local.weekday() * 24 + local.hour
        uniq[k] = out_k
    out[:] = uniq[inverse]
    return out


def _quantiles(samples: list[np.ndarray], k: int = QUANTILES) -> np.ndarray:
    """Quantiles of the equal-weight mixture of several samples."""
    grid = np.linspace(0, 1, 2001)
    pooled = np.concatenate([np.quantile(s, grid) for s in samples if s.size])
    return np.quantile(pooled, np.linspace(0, 1, k))


def _groups(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sizes of submission groups and whether each is of one-core jobs (see GROUP_SIZES_*)."""
    submit, procs, req, user = a[:, 1], np.maximum(a[:, 4], a[:, 7]), a[:, 8], a[:, 11]
    last: dict[float, tuple[int, int]] = {}
    group = np.empty(len(a), dtype=np.int64)
    n = 0
    for i in range(len(a)):
        prev = last.get(user[i])
        if prev is not None:
            j, g = prev
            if procs[j] == procs[i] and req[j] == req[i] and submit[i] - submit[j] <= 10:
                group[i] = g
                last[user[i]] = (i, g)
                continue
        group[i] = n
        last[user[i]] = (i, n)
        n += 1
    sizes = np.bincount(group)
    first = np.unique(group, return_index=True)[1]
    return sizes, procs[first] == 1


def _buckets(samples: list[np.ndarray]) -> tuple[int, ...]:
    """Equal-weight mixture of the samples' shares of sizes in [1], [2, 3], [4, 7], ..."""
    shares = [np.bincount(np.floor(np.log2(s)).astype(np.int64), minlength=GROUP_BUCKETS)
              [:GROUP_BUCKETS] / s.size for s in samples if s.size]
    return tuple(int(round(x * 1e5)) for x in np.mean(shares, axis=0))


def _counts(values: np.ndarray) -> tuple[tuple[int, int], ...]:
    v, c = np.unique(values.astype(np.int64), return_counts=True)
    return tuple((int(a), int(b)) for a, b in zip(v, c))


def derive(folder: str) -> dict:
    """Every stored table, measured again on the trace files in `folder` (shared/traces)."""
    week, limits, ratios, groups1, groups2, status = [], [], [], [], [], []
    cerit = None
    for name, (file, zone) in SWF_TRACES.items():
        a, start, extra = _read(os.path.join(folder, file))
        if file == CERIT:
            cerit = (a, extra)
        hours = _local_week_hours(a[:, 1] + start, zone)
        share = np.bincount(hours, minlength=168) / len(a)
        week.append(share)
        ok = a[:, 8] > 0
        limits.append(np.minimum(a[ok, 8], MAX_LIMIT_S))
        ratios.append(np.minimum(np.maximum(a[ok, 3], 0) / a[ok, 8], 1.0))
        sizes, one = _groups(a)
        groups1.append(sizes[one].astype(float))
        groups2.append(sizes[~one].astype(float))
        st = a[:, 10]
        if np.any((st != 1) & (st >= 0)):
            status.append([np.mean(st == 1), np.mean(st == 0), np.mean(st == 5)])
    profile = np.mean(week, axis=0)
    out: dict = {
        "WEEK_PROFILE": tuple(tuple(int(round(x * 1e5)) for x in profile[d * 24:(d + 1) * 24])
                              for d in range(7)),
        "LIMIT_QUANTILES": tuple(float(round(x)) for x in _quantiles(limits)),
        "RATIO_QUANTILES": tuple(round(float(x), 5) for x in _quantiles(ratios)),
        "GROUP_SIZES_ONE_CORE": _buckets(groups1),
        "GROUP_SIZES_OTHER": _buckets(groups2),
    }
    s = np.mean(status, axis=0)
    out["STATUS_SHARES"] = tuple(round(float(x / s.sum()), 4) for x in s)

    a, extra = cerit
    spec = [re.match(r"(\d+):ppn=(\d+)", e.split()[-1]) if e else None for e in extra]
    known = np.array([m is not None for m in spec])
    nodes = np.array([int(m.group(1)) if m else 0 for m in spec])
    ppn = np.array([int(m.group(2)) if m else 0 for m in spec])
    procs = np.maximum(a[:, 7], 1)
    single = ~known | (nodes == 1)
    classes = np.where(single, np.searchsorted(MEM_CLASSES, np.where(known, ppn, procs),
                                               side="right") - 1, -1)
    mem_per_node = a[:, 9] / np.where(known, np.maximum(nodes, 1), 1) / 2**20  # bytes -> MB
    out["MEM_PER_NODE_QUANTILES"] = tuple(
        tuple(float(round(x, 1)) for x in np.quantile(
            mem_per_node[(a[:, 9] > 0) & (classes == k)], np.linspace(0, 1, QUANTILES)))
        for k in range(len(MEM_CLASSES)))
    out["MEM_PER_NODE_MULTI_QUANTILES"] = tuple(
        float(round(x, 1)) for x in np.quantile(mem_per_node[(a[:, 9] > 0) & known & (nodes > 1)],
                                                np.linspace(0, 1, QUANTILES)))
    out["LARGEST_MEM_PER_NODE"] = float(round(mem_per_node.max(), 1))
    multi_core = known & (nodes * ppn > 1)
    out["CORES_SINGLE_NODE"] = _counts(ppn[multi_core & (nodes == 1)])
    out["CORES_MULTI_NODE"] = _counts(ppn[known & (nodes > 1)])
    out["NODES_MULTI_NODE"] = _counts(nodes[known & (nodes > 1)])
    out["MULTI_NODE_SHARE"] = round(float(np.mean(nodes[multi_core] > 1)), 5)
    out["ONE_CORE_SHARE"] = round(float(np.mean(procs == 1)), 5)
    return out


def stored() -> dict:
    """The stored tables, as `derive` returns them."""
    return {k: globals()[k] for k in (
        "WEEK_PROFILE", "LIMIT_QUANTILES", "RATIO_QUANTILES", "GROUP_SIZES_ONE_CORE",
        "GROUP_SIZES_OTHER", "STATUS_SHARES", "MEM_PER_NODE_QUANTILES",
        "MEM_PER_NODE_MULTI_QUANTILES", "LARGEST_MEM_PER_NODE",
        "CORES_SINGLE_NODE",
        "CORES_MULTI_NODE", "NODES_MULTI_NODE", "MULTI_NODE_SHARE", "ONE_CORE_SHARE")}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    folder = argv[0] if argv else os.path.join("..", "shared", "traces")
    for key, value in derive(folder).items():
        print(f"{key} = {value!r}\n")


if __name__ == "__main__":
    main()
