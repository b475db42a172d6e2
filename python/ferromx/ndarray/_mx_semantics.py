"""Places where MXNet 1.9.1's legacy ``nd`` differs from a view-based NumPy reading, made
exact: ``flatten``/``Flatten``/``squeeze``/``expand_dims`` (functions and methods) return
new arrays, not views of their input; ``tostype``; ``from_numpy(zero_copy=True)`` makes
the NumPy array read-only, as MXNet does, so NumPy cannot write under the engine."""

import functools

from ..base import MXNetError
from .ndarray import NDArray

_COPYING = ("flatten", "Flatten", "squeeze", "expand_dims")
_STYPES = ("default", "csr", "row_sparse")


def _copying(fn):
    @functools.wraps(fn)
    def wrapper(*args, inplace=False, **kwargs):
        res = fn(*args, **kwargs)
        # MXNet's ``inplace=True`` (methods) returns a view sharing the input's memory.
        if inplace or kwargs.get("out") is not None or not isinstance(res, NDArray):
            return res
        return res.copy()

    return wrapper


def tostype(self, stype):
    """A copy of the array in storage ``stype``: only ``'default'`` (dense) storage exists
    in ferromx, so ``'csr'``/``'row_sparse'`` raise ``MXNetError``."""
    if stype == "default":
        return self.copy()
    if stype in _STYPES:
        raise MXNetError(
            f"tostype: sparse storage '{stype}' is not supported by ferromx (dense only); "
            f"array of shape {self.shape}"
        )
    raise MXNetError(f"tostype: invalid stype {stype!r}, valid values are {_STYPES}")


def install(ns):
    """Replaces the view-returning functions of namespace ``ns`` (and the NDArray methods)
    with copying ones and adds ``tostype``."""
    for name in _COPYING:
        fn = ns.get(name)
        if fn is not None and not getattr(fn, "_mx_copying", False):
            wrapped = _copying(fn)
            wrapped._mx_copying = True
            ns[name] = wrapped
    for name in ("flatten", "squeeze", "expand_dims"):
        meth = getattr(NDArray, name, None)
        if meth is not None and not getattr(meth, "_mx_copying", False):
            wrapped = _copying(meth)
            wrapped._mx_copying = True
            setattr(NDArray, name, wrapped)
    NDArray.tostype = tostype
    NDArray._fresh_grad = property(
        lambda self: self.grad_fresh(),
        lambda self, v: self._set_grad_fresh(bool(v)),
        doc="Whether backward wrote this variable's gradient since it was last marked stale.",
    )
