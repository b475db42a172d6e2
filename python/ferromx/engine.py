"""``ferromx.engine``: engine settings and the implicit-blocker guard.

``bulk``/``set_bulk_size`` are accepted for MXNet compatibility and do
nothing: ferromx's engine has no bulk-execution mode (per-op cost is already
well under MXNet's bulked cost).
"""

import contextlib
import os

from . import _native

__all__ = ["set_bulk_size", "bulk", "info", "is_naive"]

_bulk_size = 0


def set_bulk_size(size):
    """Accepted for compatibility; returns the previous value. No effect."""
    global _bulk_size
    prev, _bulk_size = _bulk_size, int(size)
    return prev


@contextlib.contextmanager
def bulk(size):
    """Accepted for compatibility; no effect."""
    prev = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(prev)


def info():
    """Engine settings and counters (workers, bounds, in-flight ops/bytes, pool stats)."""
    return _native.engine_info()


def is_naive():
    """Whether ``FERROMX_ENGINE_TYPE=NaiveEngine`` (synchronous) mode is on."""
    return _native.engine_info()["naive"]


_SYNC_MODE = os.environ.get("FERROMX_SYNC_DEBUG", "off")
