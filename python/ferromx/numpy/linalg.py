"""``ferromx.np.linalg``: the parts composed of engine operators.

``norm`` (vector and matrix norms) is composed of ``abs``/``sum``/``max``/``sqrt`` on the
engine, with autograd gradients. The decompositions (``svd``, ``cholesky``, ``inv``,
``det``, ``slogdet``, ``solve``, ``eig*``, ``pinv``, ``tensor*``) need Rust linear-algebra
kernels and are not provided yet.
"""

import numbers

from .. import ndarray as _nd
from . import fallback_linalg
from .fallback_linalg import *
from .multiarray import _FLOATS, _default_float

__all__ = ["norm"] + fallback_linalg.__all__


def _vector_norm(x, ord, axis, keepdims):
    a = _nd.abs(x)
    if ord is None or ord == 2:
        return _nd.sqrt((x * x).sum(axis=axis, keepdims=keepdims))
    if ord == float("inf"):
        return a.max(axis=axis, keepdims=keepdims)
    if ord == -float("inf"):
        return a.min(axis=axis, keepdims=keepdims)
    if ord == 0:
        return (x != 0).astype(x._dtype_name).sum(axis=axis, keepdims=keepdims)
    if ord == 1:
        return a.sum(axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")  # noqa: TRY004
    return (a ** float(ord)).sum(axis=axis, keepdims=keepdims) ** (1.0 / float(ord))


def _matrix_norm(x, ord, axis, keepdims):
    r, c = axis
    a = _nd.abs(x)
    if ord in (None, "fro"):
        res = _nd.sqrt((x * x).sum(axis=axis, keepdims=keepdims))
    elif ord in (1, -1):
        s = a.sum(axis=r, keepdims=True)
        res = s.max(axis=c, keepdims=True) if ord == 1 else s.min(axis=c, keepdims=True)
        if not keepdims:
            res = res.squeeze(axis=(r, c))
    elif ord in (float("inf"), -float("inf")):
        s = a.sum(axis=c, keepdims=True)
        res = s.max(axis=r, keepdims=True) if ord > 0 else s.min(axis=r, keepdims=True)
        if not keepdims:
            res = res.squeeze(axis=(r, c))
    elif ord == "nuc" or ord in (2, -2):
        raise NotImplementedError(f"norm: ord={ord!r} needs singular values (Rust linalg "
                                  f"kernels, not provided yet)")
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    return res


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (NumPy's ``ord`` rules; ``axis`` an int or a pair)."""
    from . import asarray

    x = asarray(x)
    if x._dtype_name not in _FLOATS:
        x = x.astype(_default_float())
    if axis is None:
        if ord is None:
            return _vector_norm(x.reshape(-1), None, None, False).reshape(
                (1,) * x.ndim if keepdims else ())
        if x.ndim == 1:
            return _vector_norm(x, ord, None, keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, ord, (0, 1), keepdims)
        raise ValueError(f"norm: improper number of dimensions to norm (shape {x.shape})")
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    axis = tuple(a + x.ndim if a < 0 else a for a in axis)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis[0], keepdims)
    if len(axis) == 2:
        if axis[0] == axis[1]:
            raise ValueError("norm: duplicate axes given")
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError(f"norm: improper number of dimensions to norm (axis {axis})")
