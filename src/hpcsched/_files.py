"""Files the package writes: with the permissions a plain `open(path, "w")` would give them.

Atomic writes go through a temporary file (`tempfile.mkstemp`), which is created readable by its
owner only (0600); renamed into place as it is, a model or a trace would stay unreadable by the
group, unlike every other file of a run. `new_file_mode` is what `open` would have used: 0666 less
the process's umask (0644 under the usual 022).
"""

from __future__ import annotations

import os


def new_file_mode() -> int:
    """The permissions a newly created file gets: 0666 less the umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def make_readable(path: str | os.PathLike) -> None:
    """Give a temporary file (0600) the permissions of a file created the usual way."""
    os.chmod(path, new_file_mode())


__all__ = ["make_readable", "new_file_mode"]
