"""Automatic naming (MXNet's ``mxnet.name``): :class:`NameManager` and :class:`Prefix`.

ferromx has no symbolic graph; these scopes are kept for programs that use them to build
names (``NameManager.current.get(None, 'fc')`` gives ``'fc0'``, ``'fc1'`` ...). The active
manager is per thread.
"""

import threading
import warnings

from .base import (
    _MXClassPropertyMetaClass,
    classproperty,
    with_metaclass,  # noqa: F401 - MXNet's module exposes it
)

__all__ = ["NameManager", "Prefix"]


class NameManager(metaclass=_MXClassPropertyMetaClass):
    """Hands out names: a given name unchanged, else ``hint`` plus a per-hint counter.

    Use it as ``with NameManager():`` to start fresh counters inside the block.
    """

    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """The name to use: ``name`` when given, else ``f"{hint}{n}"`` (n counts per hint)."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    def __enter__(self):
        self._old_manager = NameManager._thread_current()
        NameManager._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        NameManager._current.value = self._old_manager

    @staticmethod
    def _thread_current():
        if getattr(NameManager._current, "value", None) is None:
            NameManager._current.value = NameManager()
        return NameManager._current.value

    @classproperty
    def current(cls):
        """The active manager of this thread (deprecated in MXNet: use ``with``)."""
        warnings.warn("NameManager.current has been deprecated. It is advised to use the `with` "
                      "statement with NameManager.", DeprecationWarning, stacklevel=2)
        return NameManager._thread_current()

    @current.setter
    def current(cls, val):
        cls._current.value = val


class Prefix(NameManager):
    """A :class:`NameManager` that puts ``prefix`` in front of every name it returns."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        """``prefix`` + the name :meth:`NameManager.get` gives."""
        return self._prefix + super().get(name, hint)
