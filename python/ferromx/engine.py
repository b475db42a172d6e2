"""``ferromx.engine``: engine settings and the implicit-blocker guard.

``bulk``/``set_bulk_size`` are MXNet's bulk execution: operator calls of this thread are
pushed as engine ops of up to ``size`` calls each (one dependency-tracked op instead of
``size``), which saves the per-op engine cost of long runs of small operators. Any read,
wait or other push hands what was collected to the engine first, so results and their
order are those of separate pushes; a failing call fails every array its bulk writes, as
in MXNet. A hybridized block's forward is always bulked (``MXNET_EXEC_BULK_EXEC_INFERENCE``
/ ``MXNET_EXEC_BULK_EXEC_TRAIN=0`` switch that off).
"""

import atexit
import contextlib

from . import _native

__all__ = ["bulk", "info", "is_naive", "push_py", "set_bulk_size"]


def set_bulk_size(size):
    """Bulk this thread's operator calls in engine ops of up to ``size`` calls (0: off, the
    default). Pushes what was collected first; returns the previous size."""
    return _native.set_bulk_size(int(size))


@contextlib.contextmanager
def bulk(size):
    """``with engine.bulk(size):`` bulks the block's operator calls (see
    :func:`set_bulk_size`); the previous size is restored, and the collected calls pushed,
    on exit."""
    prev = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(prev)


def info():
    """Engine settings and counters (workers, bounds, in-flight ops/bytes, pool stats)."""
    return _native.engine_info()


def memory_info():
    """Host storage counters in bytes: ``live`` (buffers of live arrays, by allocation
    class), ``pooled`` (freed buffers kept for reuse), ``peak_live`` and ``peak_held``
    (high-water marks of live and of live + pooled since start or
    :func:`reset_memory_peaks`)."""
    d = _native.engine_info()
    return {"live": d["live_bytes"], "pooled": d["pool_bytes"], "peak_live": d["peak_live_bytes"],
            "peak_held": d["peak_held_bytes"]}


def reset_memory_peaks():
    """Resets the high-water marks of :func:`memory_info` to the current values."""
    _native.reset_memory_peaks()


def is_naive():
    """Whether ``FERROMX_ENGINE_TYPE=NaiveEngine`` (synchronous) mode is on."""
    return _native.engine_info()["naive"]


def push_py(func, reads=(), writes=(), ctx=None, name="_python_op", priority=0):
    """Push the Python callable ``func()`` as an engine operation.

    The op reads the NDArrays ``reads`` and writes ``writes``: it runs after every op
    pushed earlier that writes one of them (or, for ``writes``, reads one), and ops
    pushed later wait for it. It runs on a worker of ``ctx`` (default: the first
    array's context) holding the GIL; inside ``func`` the declared arrays are ready
    (``asnumpy`` works) and NDArray operations run at once on that thread. Only the
    declared arrays and new arrays should be used there: an array other pending work
    touches makes the op fail instead of deadlocking. An exception raised by ``func``
    becomes the op's error on ``writes``, raised (with ``name``) at their next read.
    Returns at once (``NaiveEngine``: after running ``func``).
    """
    reads, writes = list(reads), list(writes)
    if ctx is None:
        first = (writes or reads or [None])[0]
        ctx = first.context if first is not None else "cpu(0)"
    return _native.push_py(func, reads, writes, str(ctx), str(name), int(priority))


from . import _sync
from ._sync import SyncError, SyncWarning  # noqa: F401


def _drain_at_exit():
    """Let pending work (Python engine ops included) finish before the interpreter goes."""
    try:
        _native.waitall()
    except Exception:  # noqa: BLE001, S110 - errors nobody read are dropped at exit
        pass


atexit.register(_drain_at_exit)


def set_sync_warning(mode):
    """Implicit-blocker guard: ``'off'``, ``'warn'`` or ``'error'`` (also ``FERROMX_SYNC_DEBUG``).

    In ``warn``/``error`` mode every blocking read (``asnumpy``, ``item``,
    ``print``, ``wait_to_read``...) made while ``autograd.record()`` is active
    or inside :func:`no_sync` warns with :class:`SyncWarning` at the user's
    line, or raises :class:`SyncError`. Returns the previous mode.
    """
    return _sync.set_mode(mode)


@contextlib.contextmanager
def no_sync():
    """Marks a region (e.g. a training loop body) where blocking reads are flagged."""
    _sync.enter_region()
    try:
        yield
    finally:
        _sync.exit_region()


class LaggedReader:
    """Reads values one step late, so reading never stalls the engine.

    ``push(x)`` starts copying ``x`` to NumPy on the engine and returns the
    value pushed on the previous call (as NumPy), which by then is normally
    computed already: what the seed's hand-written ``LossBuffer`` does, plus
    the copy is asynchronous. ``flush()`` returns the last pending value.
    """

    def __init__(self, reduce=None):
        self._pending = None
        self._reduce = reduce
        self.last = None

    def push(self, x):
        """Queues ``x``; returns the previous value (NumPy) or None on the first call."""
        prev = self._collect()
        self._pending = x.asnumpy_async()
        return prev

    def _collect(self):
        if self._pending is None:
            return None
        v = self._pending.result()
        self._pending = None
        self.last = self._reduce(v) if self._reduce else v
        return self.last

    def flush(self):
        """Waits for and returns the last pushed value."""
        return self._collect()
