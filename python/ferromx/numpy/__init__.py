"""``ferromx.np``: MXNet's NumPy-semantics API.

Arrays are :class:`ndarray` (``ferromx.numpy.ndarray``), a subclass of the legacy
``NDArray`` sharing its storage, engine and autograd (``as_np_ndarray()`` /
``as_nd_ndarray()`` convert both ways without copying). Functions follow NumPy's names and
MXNet 1.9.1's np semantics: Python lists become float32 (float64 after
``npx.set_np(dtype=True)``), comparisons give bool arrays, full reductions 0-d arrays, and
every result is an ``ndarray``.
"""

import numpy as _onp

from .. import _native
from .. import ndarray as _nd
from ..base import MXNetError as _MXNetError
from ..base import MXNetValueError as _MXNetValueError
from ..context import _ctx_str, current_context  # noqa: F401
from ..ndarray.ndarray import _dtype_name, _np_default_dtype, _shape_arg
from ._ufunc import check_ufunc_call as _ufunc_call
from .multiarray import _default_float, ndarray

float32, float64, float16 = _onp.float32, _onp.float64, _onp.float16
int8, int32, int64, uint8, bool_ = _onp.int8, _onp.int32, _onp.int64, _onp.uint8, _onp.bool_
bool = _onp.bool_
pi, e, inf, nan, newaxis = _onp.pi, _onp.e, _onp.inf, _onp.nan, None
euler_gamma, PZERO, NZERO = _onp.euler_gamma, 0.0, -0.0


def _np(r):
    """``r`` (an array or a list of arrays) as ``ndarray``s (zero-copy)."""
    if isinstance(r, list):
        return [_np(x) for x in r]
    return r if r._is_np else r._as_np()


def _dt(dtype):
    return _default_float() if dtype is None else _dtype_name(dtype)


def array(object, dtype=None, ctx=None):
    """Creates an ``ndarray`` by copying ``object``.

    As in MXNet's np, Python lists and scalars become float32 (float64 after
    ``npx.set_np(dtype=True)``), NumPy arrays and scalars keep their dtype, and an ``ndarray``
    is copied (cast when ``dtype`` is given).
    """
    if isinstance(object, _nd.NDArray):
        res = _np(object.copyto(ctx or object.context))
        return res.astype(dtype) if dtype is not None else res
    if dtype is None:
        # NumPy arrays and scalars (anything with a NumPy dtype) keep it, as in MXNet
        numpy_typed = isinstance(object, (_onp.ndarray, _onp.generic))
        dtype = _np_default_dtype(object) if numpy_typed else _default_float()
    return _nd.array(object, ctx=ctx, dtype=dtype, _np=True)


def asarray(a, dtype=None, ctx=None):
    """``a`` as an ``ndarray`` (itself when it already is one of that dtype)."""
    if isinstance(a, ndarray) and (dtype is None or _dtype_name(dtype) == a._dtype_name):
        return a
    return array(a, dtype=dtype, ctx=ctx)


def _fill(op, shape, value, dtype, ctx, order="C"):
    if order != "C":
        raise NotImplementedError(f"{op.strip('_')}: order={order!r} is not supported (only 'C')")
    attrs = {"shape": _shape_arg(op, shape), "ctx": _ctx_str(ctx), "dtype": _dt(dtype)}
    if value is not None:
        attrs["value"] = float(value)
    return _native.invoke_np(op, [], **attrs)


def zeros(shape, dtype=None, order="C", ctx=None):
    """An array of zeros (float32 unless ``dtype``)."""
    return _fill("_zeros", shape, None, dtype, ctx, order)


def ones(shape, dtype=None, order="C", ctx=None):
    """An array of ones (float32 unless ``dtype``)."""
    return _fill("_ones", shape, None, dtype, ctx, order)


def full(shape, fill_value, dtype=None, order="C", ctx=None, out=None):
    """``fill_value`` everywhere (float32 unless ``dtype``)."""
    if isinstance(fill_value, _nd.NDArray):
        res = _np(fill_value).astype(dtype or fill_value.dtype).broadcast_to(_shape_arg("full", shape))
    else:
        res = _fill("_full", shape, fill_value, dtype, ctx, order)
    if out is not None:
        out[...] = res
        return out
    return res


def empty(shape, dtype=None, order="C", ctx=None):
    """An uninitialised array (ferromx fills it with zeros)."""
    return zeros(shape, dtype=dtype, order=order, ctx=ctx)


def zeros_like(a, dtype=None, order="C", ctx=None, out=None):
    """Zeros with ``a``'s shape (and dtype unless ``dtype``)."""
    return full_like(a, 0, dtype=dtype, ctx=ctx, out=out)


def ones_like(a, dtype=None, order="C", ctx=None, out=None):
    """Ones with ``a``'s shape (and dtype unless ``dtype``)."""
    return full_like(a, 1, dtype=dtype, ctx=ctx, out=out)


def full_like(a, fill_value, dtype=None, order="C", ctx=None, out=None):
    """``fill_value`` with ``a``'s shape (and dtype unless ``dtype``)."""
    dt = a._dtype_name if dtype is None else dtype
    return full(a.shape, fill_value, dtype=dt, ctx=ctx or a.context, out=out)


def empty_like(prototype, dtype=None, order="C", subok=False, shape=None):
    """An uninitialised (zero) array like ``prototype``."""
    return zeros(shape or prototype.shape, dtype=dtype or prototype._dtype_name,
                 ctx=prototype.context)


def arange(start, stop=None, step=1, dtype=None, ctx=None):
    """Evenly spaced values in ``[start, stop)`` (float32 unless ``dtype``)."""
    step = 1 if step is None else step
    return _np(_nd.arange(start, stop, step, ctx=ctx, dtype=_dt(dtype)))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    res = _np(_nd.linspace(start, stop, num, endpoint, ctx=ctx, dtype=_dt(dtype)))
    if retstep:
        div = (num - 1) if endpoint else num
        return res, (stop - start) / div if div > 0 else float("nan")
    return res


def eye(N, M=None, k=0, dtype=None, ctx=None):
    """A 2-d array with ones on diagonal ``k``."""
    if N < 0 or (M is not None and M < 0):
        raise _MXNetError(f"eye: negative dimensions are not allowed (N={N}, M={M})")
    if M == 0 or N == 0:  # the legacy operator reads M=0 as "M = N"
        return zeros((N, 0 if M is None else M), dtype=dtype, ctx=ctx)
    return _np(_nd.eye(N, M or 0, k, ctx=ctx, dtype=_dt(dtype)))


def identity(n, dtype=None, ctx=None):
    """The ``n`` x ``n`` identity."""
    return eye(n, dtype=dtype, ctx=ctx)


def sum(a, axis=None, dtype=None, out=None, keepdims=False):
    """Sum over ``axis`` (bool sums are int64; a full sum is 0-d)."""
    return asarray(a).sum(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """Mean over ``axis`` (integers average in float32)."""
    return asarray(a).mean(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def max(a, axis=None, out=None, keepdims=False):
    """Max over ``axis``."""
    return asarray(a).max(axis=axis, out=out, keepdims=keepdims)


def min(a, axis=None, out=None, keepdims=False):
    """Min over ``axis``."""
    return asarray(a).min(axis=axis, out=out, keepdims=keepdims)


amax, amin = max, min


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
    """Product over ``axis`` (bool products are int64)."""
    return asarray(a).prod(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def argmax(a, axis=None, out=None):
    """Indices of maxima (int64)."""
    return asarray(a).argmax(axis=axis, out=out)


def argmin(a, axis=None, out=None):
    """Indices of minima (int64)."""
    return asarray(a).argmin(axis=axis, out=out)


def dot(a, b, out=None):
    """Dot product (two vectors give a 0-d array). NumPy's rule for N-d ``b``: ``a``'s last
    axis against ``b``'s second-to-last (``b``'s axes are moved for the engine's ``dot``,
    which contracts with the first)."""
    a, b = asarray(a), asarray(b)
    if a.ndim > 0 and b.ndim > 2:
        b = b.transpose((b.ndim - 2, *range(b.ndim - 2), b.ndim - 1))
    return _nd.dot(a, b, out=out)


def matmul(a, b, out=None):
    """Matrix product with NumPy's rules: 1-d operands get a temporary unit axis, leading
    (batch) axes broadcast; runs ``dot`` or ``batch_dot`` on the engine."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise _MXNetValueError("matmul: Input operand does not have enough dimensions")
    if a.ndim <= 2 and b.ndim <= 2:
        return dot(a, b, out=out)
    va, vb = a.ndim == 1, b.ndim == 1
    a2 = a.reshape((1,) + a.shape) if va else a
    b2 = b.reshape(b.shape + (1,)) if vb else b
    if a2.shape[-1] != b2.shape[-2]:
        raise _MXNetValueError(f"matmul: shapes {a.shape} and {b.shape} do not match in the "
                               f"contracted dimension ({a2.shape[-1]} vs {b2.shape[-2]})")
    try:
        batch = _onp.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise _MXNetValueError(f"matmul: batch shapes of {a.shape} and {b.shape} cannot be "
                               "broadcast together") from None
    (n, k), m = a2.shape[-2:], b2.shape[-1]
    from ._shape import broadcast_to

    size = int(_onp.prod(batch))
    a3 = broadcast_to(a2, batch + (n, k)).reshape((size, n, k))
    b3 = broadcast_to(b2, batch + (k, m)).reshape((size, k, m))
    res = _nd.batch_dot(a3, b3).reshape(batch + (n, m))
    res = _np(res.reshape(res.shape[:-2] + (m,)) if va else res)
    res = res.reshape(res.shape[:-1]) if vb else res
    if out is not None:
        out[...] = res
        return out
    return res


def reshape(a, newshape, order="C"):
    """``a``'s data in ``newshape`` (a new array, as MXNet's np)."""
    return asarray(a).reshape(newshape, order=order)


def ravel(x, order="C"):
    """A 1-d copy."""
    return asarray(x).reshape(-1, order=order)


def squeeze(x, axis=None):
    """Size-1 axes removed (a new array)."""
    return asarray(x).squeeze(axis=axis)


def expand_dims(a, axis):
    """A new size-1 axis at ``axis`` (a new array)."""
    a = asarray(a)
    ax = axis + a.ndim + 1 if axis < 0 else axis
    if not 0 <= ax <= a.ndim:
        raise ValueError(f"expand_dims: axis {axis} is out of bounds for an array of "
                         f"dimension {a.ndim}")
    return a._reshape(list(a.shape[:ax]) + [1] + list(a.shape[ax:])).copy()


def transpose(a, axes=None):
    """Permute axes (a new array)."""
    return asarray(a).transpose(axes)


def concatenate(seq, axis=0, out=None):
    """Join along ``axis`` (``None``: of the flattened arrays)."""
    arrs = [asarray(x) for x in seq]
    if axis is None:
        arrs, axis = [x.reshape(-1) for x in arrs], 0
    return _nd.concat(*arrs, dim=axis, out=out)


def stack(arrays, axis=0, out=None):
    """Join along a new axis."""
    return _nd.stack(*[asarray(x) for x in arrays], axis=axis, out=out)


def where(condition, x=None, y=None):
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (broadcast; scalars too)."""
    if x is None and y is None:
        return nonzero(condition)
    condition = asarray(condition)
    arrs = [v for v in (x, y) if isinstance(v, _nd.NDArray)]
    dt = arrs[0]._dtype_name if arrs else _default_float()
    shape = _onp.broadcast_shapes(condition.shape, *(v.shape for v in arrs))

    def b(v):
        if not isinstance(v, _nd.NDArray):
            return full(shape, v, dtype=dt, ctx=condition.context)
        v = _np(v)
        return v if v.shape == shape else v.broadcast_to(shape)

    c = condition if condition.shape == shape else condition.broadcast_to(shape)
    return _nd.where(c, b(x), b(y))


def nonzero(a):
    """Indices of nonzero elements, one int64 array per axis."""
    a = asarray(a)
    if a.ndim == 0:  # MXNet 1.9.1 treats a 0-d array as 1-d (NumPy now refuses it)
        a = a.reshape(1)
    idx = _onp.nonzero(a.asnumpy())
    return tuple(array(i, dtype="int64", ctx=a.context) for i in idx)


def clip(a, a_min=None, a_max=None, out=None):
    """Values limited to ``[a_min, a_max]``."""
    return _nd.clip(asarray(a), a_min, a_max, out=out)


def logical_and(x1, x2, out=None, **kwargs):
    """Elementwise logical and (a bool array)."""
    if kwargs:
        _ufunc_call("logical_and", kwargs)
    return _logic("broadcast_logical_and", x1, x2, out)


def logical_or(x1, x2, out=None, **kwargs):
    """Elementwise logical or (a bool array)."""
    if kwargs:
        _ufunc_call("logical_or", kwargs)
    return _logic("broadcast_logical_or", x1, x2, out)


def logical_xor(x1, x2, out=None, **kwargs):
    """Elementwise logical xor (a bool array)."""
    if kwargs:
        _ufunc_call("logical_xor", kwargs)
    return _logic("broadcast_logical_xor", x1, x2, out)


def _logic(op, x1, x2, out):
    x1 = asarray(x1)
    x2 = asarray(x2) if isinstance(x2, _nd.NDArray) else full(x1.shape, x2, ctx=x1.context)
    res = _native.invoke(op, [x1, x2]).astype("bool")
    if out is not None:
        out[...] = res
        return out
    return res


from .. import _op_gen as _gen
from ._ufunc import _ALSO as _UFUNC_ALSO

# the table's elementwise operators become one-function ufuncs (keyword check inline)
_gen.install_aliases(globals(), "np", _nd, ufunc_check=_ufunc_call, also=_UFUNC_ALSO)

from . import (  # noqa: F401
    _internal,
    _math,
    _shape,
    arrayprint,
    fallback,
    fallback_linalg,
    function_base,
    linalg,
    random,
    stride_tricks,
    utils,
)
from ._index import *
from ._math import *
from ._misc import *
from ._shape import *
from .arrayprint import set_printoptions  # noqa: F401
from .fallback import *
from .io import genfromtxt as genfromtxt
from .io import load as load
from .io import save as save
from .io import savez as savez
from .utils import NAN, NINF, PINF, NaN, finfo  # noqa: F401


def _all_method(self, axis=None, out=None, keepdims=False):
    """Whether all elements along ``axis`` are true (a bool array)."""
    return _math.all(self, axis=axis, out=out, keepdims=keepdims)


def _any_method(self, axis=None, out=None, keepdims=False):
    """Whether any element along ``axis`` is true (a bool array)."""
    return _math.any(self, axis=axis, out=out, keepdims=keepdims)


def _cumsum_method(self, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis``."""
    return _shape.cumsum(self, axis=axis, dtype=dtype, out=out)


def _std_method(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Standard deviation along ``axis``."""
    return _math.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


def _var_method(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Variance along ``axis``."""
    return _math.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


def _nonzero_method(self):
    """Indices of the nonzero elements, one int64 array per axis."""
    return nonzero(self)


ndarray.all, ndarray.any, ndarray.cumsum = _all_method, _any_method, _cumsum_method
ndarray.std, ndarray.var, ndarray.nonzero = _std_method, _var_method, _nonzero_method


def _true_divide(name, x1, x2, out, kwargs):
    if kwargs:
        _ufunc_call(name, kwargs)
    if isinstance(x1, _nd.NDArray):
        res = _np(x1) / x2
    elif isinstance(x2, _nd.NDArray):
        res = x1 / _np(x2)
    else:
        return array(_onp.true_divide(x1, x2))
    if out is not None:
        out[...] = res
        return out
    return res


def true_divide(x1, x2, out=None, **kwargs):
    """``x1 / x2`` with the np operator's result dtype (integer and bool inputs give the
    default float; the legacy ``broadcast_div`` keeps their dtype)."""
    return _true_divide("true_divide", x1, x2, out, kwargs)


def divide(x1, x2, out=None, **kwargs):
    """``x1 / x2``: :func:`true_divide` under its own name (errors name ``divide``)."""
    return _true_divide("divide", x1, x2, out, kwargs)


for _f in (logical_and, logical_or, logical_xor, true_divide, divide):
    _f._ferromx_ufunc = True  # the keyword check is inline: wrap_ufuncs leaves them

from ._ufunc import wrap_ufuncs as _wrap_ufuncs

_wrap_ufuncs(globals())
