"""Fluent NDArray methods (``x.sum(axis=1)``, ``x.exp()``, ...), installed on the class.

The operators marked fluent in the operator table become methods, plus the few
hand-written ``nd`` helpers that MXNet also offers as methods.
"""

from .. import _op_gen
from .ndarray import NDArray

# ``nd`` functions written in Python (not single operators) that are also methods.
_PY_FLUENT = ["maximum", "minimum", "pad", "split_v2"]


def method_names():
    """The names installed as methods (``reshape`` is native)."""
    return [n for n in _op_gen.fluent_names() + _PY_FLUENT if n != "reshape"]


def install(ns):
    """Adds each fluent operator (and ``_PY_FLUENT``) found in namespace ``ns`` as an
    NDArray method calling the namespace's function."""
    for name in method_names():
        fn = ns.get(name)
        if fn is None:
            continue

        def method(self, *args, _fn=fn, **kwargs):
            return _fn(self, *args, **kwargs)

        method.__name__ = name
        method.__doc__ = fn.__doc__
        setattr(NDArray, name, method)
