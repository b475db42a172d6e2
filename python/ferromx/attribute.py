"""Attribute scopes (MXNet's ``mxnet.attribute``): :class:`AttrScope`.

``with AttrScope(ctx_group='dev1'):`` makes those string attributes the defaults of
everything created inside; nested scopes merge, inner values winning. The active scope is
per thread.
"""

import threading
import warnings
from collections import defaultdict
from typing import ClassVar

from .base import (
    _MXClassPropertyMetaClass,
    classproperty,
    string_types,
    with_metaclass,  # noqa: F401 - MXNet's module exposes it
)

__all__ = ["AttrScope"]


class AttrScope(metaclass=_MXClassPropertyMetaClass):
    """A set of string attributes applied to everything created inside the ``with`` block.

    Raises ``ValueError`` if any attribute value is not a string.
    """

    _current = threading.local()
    _subgraph_names: ClassVar[defaultdict] = defaultdict(int)

    def __init__(self, **kwargs):
        bad = [k for k, v in kwargs.items() if not isinstance(v, string_types)]
        if bad:
            raise ValueError(f"Attributes need to be string (not for {', '.join(sorted(bad))})")
        self._attr = dict(kwargs)
        self._old_scope = None

    def get(self, attr):
        """The scope's attributes updated with ``attr`` (a dict, may be ``None``)."""
        merged = dict(self._attr)
        if attr:
            merged.update(attr)
        return merged

    def __enter__(self):
        self._old_scope = AttrScope._thread_current()
        merged = dict(self._old_scope._attr)
        merged.update(self._attr)
        self._attr = merged
        AttrScope._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        AttrScope._current.value = self._old_scope

    @staticmethod
    def _thread_current():
        if getattr(AttrScope._current, "value", None) is None:
            AttrScope._current.value = AttrScope()
        return AttrScope._current.value

    @classproperty
    def current(cls):
        """The active scope of this thread (deprecated in MXNet: use ``with``)."""
        warnings.warn("AttrScope.current has been deprecated. It is advised to use the `with` "
                      "statement with AttrScope.", DeprecationWarning, stacklevel=2)
        return AttrScope._thread_current()

    @current.setter
    def current(cls, val):
        cls._current.value = val
