"""numba's `njit`, or a stand-in that leaves a function as plain Python when numba is missing.

Compiled code in this package (the allocators' bodies, the compiled pass loops) is written once, as
plain Python over numpy arrays and scalars, and decorated with `njit(cache=True)`. With numba it is
compiled on first use and the machine code is cached beside the module; without numba the very same
functions run as Python (identical results, much slower), so that nothing but speed depends on
numba being installed.
"""

from __future__ import annotations

try:
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised by a test that hides numba
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        """Stand-in for numba.njit: leaves the function as plain Python."""
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda fn: fn


__all__ = ["HAVE_NUMBA", "njit"]
