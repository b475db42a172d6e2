"""``ferromx.np``: a NumPy-compatible interface over NDArray.

Arrays are the same ``NDArray`` type; functions follow NumPy's names and
defaults (``np.array(list)`` is float32 as in MXNet's np; ``item()`` returns a
Python scalar). Comparison results are bool arrays.
"""

import numpy as _onp

from .. import ndarray as _nd
from ..ndarray import NDArray as ndarray  # noqa: N813
from ..context import current_context

float32, float64, float16 = _onp.float32, _onp.float64, _onp.float16
int8, int32, int64, uint8, bool_ = _onp.int8, _onp.int32, _onp.int64, _onp.uint8, _onp.bool_
pi, e, inf, nan, newaxis = _onp.pi, _onp.e, _onp.inf, _onp.nan, None


def array(obj, dtype=None, ctx=None):
    """Creates an array (float32 for Python lists, like MXNet's np)."""
    if isinstance(obj, ndarray):
        return obj.astype(dtype) if dtype is not None else obj.copy()
    if dtype is None and not isinstance(obj, _onp.ndarray):
        a = _onp.asarray(obj)
        dtype = "bool" if a.dtype == _onp.bool_ else "float32"
    return _nd.array(obj, ctx=ctx, dtype=dtype)


asarray = array


def zeros(shape, dtype=None, ctx=None):
    """Zeros."""
    return _nd.zeros(shape, ctx=ctx, dtype=dtype)


def ones(shape, dtype=None, ctx=None):
    """Ones."""
    return _nd.ones(shape, ctx=ctx, dtype=dtype)


def full(shape, fill_value, dtype=None, ctx=None):
    """``fill_value`` everywhere."""
    return _nd.full(shape, fill_value, ctx=ctx, dtype=dtype)


def empty(shape, dtype=None, ctx=None):
    """Uninitialised (zero-filled) array."""
    return _nd.zeros(shape, ctx=ctx, dtype=dtype)


def zeros_like(a, dtype=None):
    """Zeros like ``a``."""
    return _nd.zeros_like(a) if dtype is None else _nd.zeros(a.shape, a.context, dtype)


def ones_like(a, dtype=None):
    """Ones like ``a``."""
    return _nd.ones_like(a) if dtype is None else _nd.ones(a.shape, a.context, dtype)


def full_like(a, fill_value, dtype=None):
    """``fill_value`` like ``a``."""
    r = _nd.full_like(a, fill_value)
    return r if dtype is None else r.astype(dtype)


def arange(start, stop=None, step=1, dtype=None, ctx=None):
    """NumPy arange (float32 default)."""
    return _nd.arange(start, stop, step, ctx=ctx, dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None, ctx=None):
    """NumPy linspace."""
    return _nd.linspace(start, stop, num, endpoint, ctx=ctx, dtype=dtype)


def eye(N, M=None, k=0, dtype=None, ctx=None):
    """Identity-like matrix."""
    return _nd.eye(N, M or 0, k, ctx=ctx, dtype=dtype)


def _axis(axis):
    return axis


def sum(a, axis=None, keepdims=False):  # noqa: A001
    """Sum over ``axis``."""
    if axis == ():  # NumPy: reduce over no axes (nd, like MXNet, reads () as all)
        return a.copy()
    return _nd.sum(a, axis=axis, keepdims=keepdims)


def mean(a, axis=None, keepdims=False):
    """Mean over ``axis``."""
    if axis == ():  # NumPy: reduce over no axes (nd, like MXNet, reads () as all)
        return a.copy()
    return _nd.mean(a, axis=axis, keepdims=keepdims)


def max(a, axis=None, keepdims=False):  # noqa: A001
    """Max over ``axis``."""
    if axis == ():  # NumPy: reduce over no axes (nd, like MXNet, reads () as all)
        return a.copy()
    return _nd.max(a, axis=axis, keepdims=keepdims)


def min(a, axis=None, keepdims=False):  # noqa: A001
    """Min over ``axis``."""
    if axis == ():  # NumPy: reduce over no axes (nd, like MXNet, reads () as all)
        return a.copy()
    return _nd.min(a, axis=axis, keepdims=keepdims)


def prod(a, axis=None, keepdims=False):
    """Product over ``axis``."""
    if axis == ():  # NumPy: reduce over no axes (nd, like MXNet, reads () as all)
        return a.copy()
    return _nd.prod(a, axis=axis, keepdims=keepdims)


def argmax(a, axis=None):
    """Indices of maxima (int64)."""
    return _nd.argmax(a, axis=axis).astype("int64")


def argmin(a, axis=None):
    """Indices of minima (int64)."""
    return _nd.argmin(a, axis=axis).astype("int64")


def dot(a, b):
    """Matrix product."""
    return _nd.dot(a, b)


matmul = dot


def reshape(a, newshape):
    """Reshape."""
    return a.reshape(newshape)


def transpose(a, axes=None):
    """Permute axes."""
    return _nd.transpose(a, axes=axes)


def concatenate(seq, axis=0):
    """Join along ``axis``."""
    return _nd.concat(*seq, dim=axis)


def stack(arrays, axis=0):
    """Join along a new axis."""
    return _nd.stack(*arrays, axis=axis)


def where(condition, x, y):
    """Select."""
    return _nd.where(condition, x, y)


def clip(a, a_min, a_max):
    """Clip."""
    return _nd.clip(a, a_min, a_max)


def _cmp(op):
    def fn(x1, x2):
        return getattr(_nd, op)(x1, x2).astype("bool")

    fn.__name__ = op
    return fn


equal, not_equal = _cmp("equal"), _cmp("not_equal")
greater, greater_equal = _cmp("greater"), _cmp("greater_equal")
less, less_equal = _cmp("lesser"), _cmp("lesser_equal")


from .. import _op_gen as _gen  # noqa: E402

_gen.install_aliases(globals(), "np", _nd)

from . import random  # noqa: E402,F401


from .io import load as load, save as save, savez as savez  # noqa: E402
