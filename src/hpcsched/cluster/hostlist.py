"""Slurm host lists: `spartan-bm[053-066],gpu[1-2,7]` <-> the hostnames they stand for.

Slurm writes sets of hosts as a prefix followed by a bracketed list of numbers and ranges; a range
keeps the zero padding of its first number as written (`[053-066]` gives `spartan-bm053` ..
`spartan-bm066`, `[8-10]` gives `8`, `9`, `10`). Several brackets in one name expand as their
product, the last bracket varying fastest, as Slurm's own hostlist code does.
"""

from __future__ import annotations

import re

_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def split_outside_brackets(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` where the separator is not inside [...] or (...)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _expand_bracket(body: str, where: str) -> list[str]:
    values = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            raise ValueError(f"empty item in [{body}] of {where!r}")
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"bad range {item!r} in [{body}] of {where!r} (expected N or N-M)")
        if not sep:
            values.append(lo)
            continue
        first, last = int(lo), int(hi)
        if last < first:
            raise ValueError(f"range {item!r} of {where!r} runs backwards")
        width = len(lo) if lo.startswith("0") else 0
        values.extend(f"{i:0{width}d}" for i in range(first, last + 1))
    return values


def expand_hostlist(text: str) -> list[str]:
    """Every hostname in a Slurm host list, in the order written. Raises ValueError on a malformed
    list (the caller adds the file and line)."""
    names: list[str] = []
    for part in split_outside_brackets(text):
        pieces = _BRACKET.split(part)  # literal, bracket body, literal, ...
        if "[" in "".join(pieces[0::2]) or "]" in "".join(pieces[0::2]):
            raise ValueError(f"unbalanced brackets in {part!r}")
        expanded = [""]
        for i, piece in enumerate(pieces):
            options = _expand_bracket(piece, part) if i % 2 else [piece]
            expanded = [head + option for head in expanded for option in options]
        names.extend(expanded)
    return names


_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(names: list[str] | tuple[str, ...]) -> str:
    """A short Slurm host list for `names` (for printing): hosts sharing a prefix and a number width
    are merged into one bracket of ranges, groups in order of first appearance. A number written
    with leading zeros fixes its group's width; one without joins a group of its length if there is
    one (`bm099`, `bm100` -> `bm[099-100]`), else the unpadded group (`n9`, `n10` -> `n[9-10]`)."""
    split = [_TRAILING_NUMBER.match(name) for name in names]
    padded = {(m.group(1), len(m.group(2))) for m in split if m and m.group(2).startswith("0")}
    groups: dict[tuple[str, int], list[int]] = {}
    order: list[tuple[str, int] | str] = []
    for name, m in zip(names, split):
        if not m:
            order.append(name)
            continue
        prefix, digits = m.groups()
        key = (prefix, len(digits)) if (prefix, len(digits)) in padded else (prefix, 0)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(digits))
    out = []
    for key in order:
        if isinstance(key, str):
            out.append(key)
            continue
        prefix, width = key
        numbers = sorted(set(groups[key]))
        if len(numbers) == 1:
            out.append(f"{prefix}{numbers[0]:0{width}d}")
            continue
        ranges, lo, prev = [], numbers[0], numbers[0]
        for n in numbers[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{lo:0{width}d}" if lo == prev else f"{lo:0{width}d}-{prev:0{width}d}")
            if n is not None:
                lo = prev = n
        out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)
