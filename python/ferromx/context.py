"""Device contexts (MXNet's ``mxnet.context``)."""

import operator
import threading
from typing import ClassVar

from .base import MXNetError, _MXClassPropertyMetaClass, check_call, classproperty, with_metaclass  # noqa: F401 - MXNet's module exposes them

__all__ = [
    "Context",
    "cpu",
    "cpu_pinned",
    "cpu_shared",
    "current_context",
    "gpu",
    "gpu_memory_info",
    "num_gpus",
]


_MAX_DEVICE_ID = 2**31 - 1  # MXNet's dev_id is a C int


def _device_id(device_type, device_id):
    """``device_id`` as an int in [0, 2**31); raises naming the context otherwise."""
    if isinstance(device_id, bool):
        raise TypeError(f"{device_type}: device id must be an int, got {device_id!r}")
    try:
        dev = operator.index(device_id)
    except TypeError:
        if not (isinstance(device_id, float) and device_id.is_integer()):
            raise TypeError(f"{device_type}: device id must be an int, got {device_id!r}") from None
        dev = int(device_id)
    if not 0 <= dev <= _MAX_DEVICE_ID:
        raise ValueError(f"{device_type}: device id {dev} is out of range (0 to {_MAX_DEVICE_ID})")
    return dev


class Context(metaclass=_MXClassPropertyMetaClass):
    """A device: ``cpu(i)``, ``cpu_pinned(i)``, ``cpu_shared(i)`` or ``gpu(i)``.

    Usable as a context manager to set the default context of new arrays (per thread).
    There is no GPU backend yet: arrays cannot be created on ``gpu(i)``.
    ``cpu_shared(i)`` (MXNet's shared-memory CPU context, used to pass arrays between
    processes) is a context of its own, as in MXNet, but ferromx has no shared-memory
    storage: its arrays live in ordinary host memory (DataLoader workers pass batches
    through pickling instead).
    """

    _default_ctx = threading.local()
    devtype2str: ClassVar[dict] = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type: ClassVar[dict] = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in self.devstr2type:
            raise ValueError(f"unknown device type {device_type!r}")
        self.device_type = device_type
        self.device_id = _device_id(device_type, device_id)
        self._old = None

    @property
    def device_typeid(self):
        """MXNet's numeric device type."""
        return self.devstr2type[self.device_type]

    def __str__(self):
        return f"{self.device_type}({self.device_id})"

    __repr__ = __str__

    def __eq__(self, other):
        return (
            isinstance(other, Context)
            and self.device_type == other.device_type
            and self.device_id == other.device_id
        )

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __enter__(self):
        self._old = getattr(Context._default_ctx, "value", None)
        Context._default_ctx.value = self
        return self

    def __exit__(self, *exc):
        Context._default_ctx.value = self._old

    @classproperty
    def default_ctx(cls):
        """The default context of this thread (``cpu(0)`` unless set)."""
        return getattr(cls._default_ctx, "value", None) or Context("cpu", 0)

    @default_ctx.setter
    def default_ctx(cls, val):
        cls._default_ctx.value = val

    def _check(self):
        if self.device_type == "gpu":
            raise MXNetError(
                f"{self}: ferromx has no GPU backend yet (num_gpus() is 0); use mx.cpu()"
            )
        return str(self)

    def empty_cache(self):
        """No-op on CPU."""


def cpu(device_id=0):
    """The CPU context ``cpu(device_id)``; each id has its own engine worker pool."""
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    """Pinned host memory context."""
    return Context("cpu_pinned", device_id)


def cpu_shared(device_id=0):
    """Shared-memory CPU context; ferromx keeps such arrays in ordinary host memory."""
    return Context("cpu_shared", device_id)


def gpu(device_id=0):
    """A GPU context. Creating arrays on it raises ``MXNetError``: no GPU backend exists yet."""
    return Context("gpu", device_id)


def num_gpus():
    """Number of GPUs usable (always 0)."""
    return 0


def gpu_memory_info(device_id=0):
    """``(free, total)`` bytes of GPU ``device_id``; raises ``MXNetError`` (no GPU backend)."""
    raise MXNetError(f"gpu_memory_info({device_id}): ferromx has no GPU backend (num_gpus() is 0)")


def current_context():
    """The default context of this thread (``cpu(0)`` unless changed with ``with ctx:``)."""
    return getattr(Context._default_ctx, "value", None) or Context("cpu", 0)


# MXNet exposes the thread-local default as ``context._current`` too
_current = Context._default_ctx


def _ctx_str(ctx):
    if ctx is None:
        return current_context()._check()
    if isinstance(ctx, str):
        kind, _, rest = ctx.partition("(")
        try:
            dev = int(rest[:-1]) if rest else 0
        except ValueError:
            raise ValueError(f"bad context string {ctx!r} (expected e.g. 'cpu(0)')") from None
        if rest and not rest.endswith(")"):
            raise ValueError(f"bad context string {ctx!r} (expected e.g. 'cpu(0)')")
        ctx = Context(kind, dev)
    return ctx._check()
