"""The implicit-blocker guard.

Every blocking read (``asnumpy``, ``item``, ``print``, ``wait_to_read``,
``waitall``...) calls :func:`check`. When the guard is on (``FERROMX_SYNC_DEBUG=warn|error``
or :func:`ferromx.engine.set_sync_warning`), a blocking read made while
``autograd.record()`` is active, or inside a region the user marked with
:func:`ferromx.engine.no_sync`, emits a :class:`SyncWarning` pointing at the
user's line, or raises :class:`SyncError`. Like ``torch.cuda.set_sync_debug_mode``
and ``jax.transfer_guard``, for the async engine.
"""

import os
import sys
import threading
import warnings

from . import _native
from .base import MXNetError

_MODES = ("off", "warn", "error")
_state = {"mode": os.environ.get("FERROMX_SYNC_DEBUG", "off").lower()}
if _state["mode"] not in _MODES:
    _state["mode"] = "off"
_local = threading.local()
_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep


class SyncWarning(UserWarning):
    """A blocking read stalled the engine where the guard forbids it."""


class SyncError(MXNetError):
    """Raised instead of :class:`SyncWarning` in ``error`` mode."""


def set_mode(mode):
    """Sets ``off`` / ``warn`` / ``error``; returns the previous mode."""
    if mode not in _MODES:
        raise ValueError(f"sync warning mode must be one of {_MODES}, got {mode!r}")
    prev, _state["mode"] = _state["mode"], mode
    return prev


def get_mode():
    """Current mode."""
    return _state["mode"]


def enter_region():
    _local.depth = getattr(_local, "depth", 0) + 1


def exit_region():
    _local.depth = getattr(_local, "depth", 1) - 1


def _user_stacklevel():
    f = sys._getframe(1)
    level = 1
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG):
        f = f.f_back
        level += 1
    return level


class TracedRead(MXNetError):
    """A value was read while a graph was traced from placeholder arrays: the graph would
    bake in the placeholder's value (``symbol._record_trace``)."""


_tracing = threading.local()
_TRACING = [0]  # how many threads trace now: the common check stays one comparison


def enter_trace(what):
    """Blocking reads on this thread raise :class:`TracedRead` until :func:`exit_trace`."""
    _TRACING[0] += 1
    prev, _tracing.what = getattr(_tracing, "what", None), what
    return prev


def exit_trace(prev):
    _TRACING[0] -= 1
    _tracing.what = prev


def check(call):
    """Called by every blocking read; cheap when the guard is off."""
    if _TRACING[0] and getattr(_tracing, "what", None):
        raise TracedRead(f"{call}() reads a value while {_tracing.what}")
    mode = _state["mode"]
    if mode == "off":
        return
    where = None
    if _native.is_recording():
        where = "inside autograd.record()"
    elif getattr(_local, "depth", 0) > 0:
        where = "inside a no_sync() region"
    if where is None:
        return
    msg = (f"{call}() blocks until the engine computes the value, {where}; "
           "read it after the step, or use asnumpy_async()/engine.LaggedReader")
    if mode == "error":
        raise SyncError(msg)
    warnings.warn(msg, SyncWarning, stacklevel=_user_stacklevel())
