"""A progress bar for long work: drawn on a terminal, silent in pipes and files; or, for work long
enough to be watched in a log (`lines=True`), one plain line per step where the stream is not a
terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    """`with Progress(total, "windows") as bar: ... bar.update(1)`; `bar.note(text)` sets a suffix.

    `lines`: where the stream is not a terminal (a log file, a pipe), write one line per
    `update` instead of staying silent."""

    def __init__(self, total: int, label: str = "", stream=None, enabled: bool | None = None,
                 lines: bool = False):
        self.total = max(int(total), 1)
        self.label = label
        self.stream = stream or sys.stderr
        tty = self.stream.isatty()
        self.enabled = tty if enabled is None else enabled
        self.lines = lines and enabled is None and not tty
        self.done = 0
        self.suffix = ""
        self._t0 = time.monotonic()
        self._last = 0.0

    def __enter__(self) -> "Progress":
        self._draw(force=True)
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()

    def update(self, k: int = 1) -> None:
        self.done += k
        if self.lines:
            elapsed = time.monotonic() - self._t0
            self.stream.write(f"{self.label} {self.done}/{self.total} {elapsed:.0f}s "
                              f"{self.suffix}".rstrip() + "\n")
            self.stream.flush()
        self._draw()

    def note(self, text: str) -> None:
        self.suffix = text
        self._draw()

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        frac = min(self.done / self.total, 1.0)
        width = 30
        filled = int(frac * width)
        elapsed = now - self._t0
        eta = elapsed / frac - elapsed if frac > 0 else 0.0
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} "
                          f"{elapsed:.0f}s<{eta:.0f}s {self.suffix}".ljust(79))
        self.stream.flush()
