"""Fluent NDArray methods (``x.sum(axis=1)``, ``x.exp()``, ...), installed on the class.

The operators marked fluent in the operator table become methods, plus the few
hand-written ``nd`` helpers that MXNet also offers as methods.
"""

from .. import _op_gen
from .ndarray import NDArray

# ``nd`` functions written in Python (not single operators) that are also methods.
_PY_FLUENT = ["maximum", "minimum", "split_v2"]


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

        if name == "transpose":
            method = _transpose_method(fn)
        method.__name__ = name
        method.__doc__ = fn.__doc__
        setattr(NDArray, name, method)


def _transpose_method(fn):
    """``x.transpose(0, 2, 1, 3)``: separate integer axes (NumPy's method form) are one
    ``axes`` tuple; ``x.transpose((0, 2, 1, 3))`` and ``axes=`` work as before."""

    def method(self, *args, **kwargs):
        if len(args) > 1 and all(isinstance(a, int) for a in args):
            args = (tuple(args),)
        return fn(self, *args, **kwargs)

    return method
