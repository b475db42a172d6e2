"""``ferromx.np.linalg``: MXNet 1.9.1's ``mxnet.numpy.linalg`` on engine operators.

The factorizations are Rust operators of the ``linalg`` family (``faer`` for Cholesky, LU,
SVD and the eigendecompositions; Householder reflections with LAPACK's signs for QR), batched
over leading axes, with MXNet's gradients (``cholesky``, ``inv``, ``det``, ``slogdet``,
``solve``, ``svd``, ``tensorinv``, ``tensorsolve``; ``eigh``/``eigvalsh`` too, where MXNet's
gradient is zero). ``norm``, ``cond``, ``lstsq``, ``matrix_rank``, ``matrix_power``,
``multi_dot``, ``pinv``, ``tensorinv`` and ``tensorsolve`` are composed of those operators.
Nothing is computed on the host.
"""

import math
import numbers
import warnings

import numpy as _onp

from .. import _native
from .. import ndarray as _nd
from ..base import MXNetError
from .multiarray import _FLOATS, _default_float

__all__ = [
    "cholesky",
    "cond",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "fallback_linalg",
    "inv",
    "lstsq",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "tensorinv",
    "tensorsolve",
]


def _arr(a):
    from . import asarray

    return asarray(a)


def _call(op, arrays, _name=None, **kw):
    """Runs operator ``op``; with ``_name``, an error at the call is prefixed with the public
    function's name (the native message names the operator and the shapes)."""
    try:
        res = _native.invoke(op, list(arrays), **kw)
    except MXNetError as err:
        if _name is None:
            raise
        raise type(err)(f"linalg.{_name}: {err}") from None
    return tuple(res) if isinstance(res, list) else res


def _square(name, a):
    """For compositions that may not reach a native operator (``matrix_power``)."""
    if a.ndim < 2:
        raise ValueError(f"{name}: {a.ndim}-dimensional array given; array must be at least "
                         f"two-dimensional (shape {a.shape})")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: last 2 dimensions of the array must be square "
                         f"(shape {a.shape})")


def _mm(a, b):
    """Batched ``a @ b`` of arrays of the same rank (≥ 2)."""
    return _call("linalg_gemm2", [a, b])


def _t(a):
    return a.swapaxes(-1, -2)


def cholesky(a):
    """Lower Cholesky factor ``L`` (``a = L @ L.T``) of each symmetric positive-definite matrix
    (the lower triangle is read). A matrix that is not positive definite is an error."""
    a = _arr(a)
    return _call("_linalg_potrf", [a], _name="cholesky")


def inv(a):
    """Inverse of each square matrix; a singular matrix is an error (as MXNet)."""
    a = _arr(a)
    return _call("_linalg_inverse", [a], _name="inv")


def det(a):
    """Determinant of each square matrix."""
    a = _arr(a)
    return _call("_linalg_det", [a], _name="det")


def slogdet(a):
    """``[sign, logabsdet]`` of each square matrix's determinant (a list, as MXNet)."""
    a = _arr(a)
    return list(_call("_linalg_slogdet", [a], _name="slogdet"))


def solve(a, b):
    """Solution ``x`` of ``a @ x = b``; ``b`` is a vector per matrix when it has one axis
    fewer than ``a``."""
    a, b = _arr(a), _arr(b)
    return _call("_npi_solve", [a, b], _name="solve")


def svd(a):
    """MXNet's SVD: ``(ut, l, v)`` with ``a = ut @ diag(l) @ v`` for ``(..., M, N)`` arrays
    with ``M <= N`` (``ut`` ``(..., M, M)``, ``l`` ``(..., M)`` descending, ``v``
    ``(..., M, N)``)."""
    a = _arr(a)
    return _call("_npi_svd", [a])


def _float64_if_int(a):
    """Integer and bool matrices are decomposed in float64, as MXNet's eig/eigh do."""
    return a.astype("float64") if a._dtype_name in _INTS else a


_INTS = ("bool", "uint8", "int8", "int32", "int64")


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix, reading the
    ``UPLO`` triangle."""
    a = _float64_if_int(_arr(a))
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO argument must be 'L' or 'U', got {UPLO!r}")
    return _call("_npi_eigh", [a], _name="eigh", UPLO=UPLO)


def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of each symmetric matrix."""
    return eigh(a, UPLO)[0]


def eig(a):
    """Eigenvalues and unit eigenvectors (columns) of each square matrix. Complex eigenvalues
    are an error (as MXNet: ferromx arrays are real). The order may differ from LAPACK's."""
    a = _float64_if_int(_arr(a))
    return _call("_npi_eig", [a], _name="eig")


def eigvals(a):
    """Eigenvalues of each square matrix (real ones only, as MXNet)."""
    return eig(a)[0]


def pinv(a, rcond=1e-15, hermitian=False):
    """Moore-Penrose pseudo-inverse from the SVD; singular values up to ``rcond`` times the
    largest count as zero (``rcond`` a float or an array of the batch shape). With
    ``hermitian=True`` only the lower triangle is read, as NumPy (MXNet 1.9.1 raises)."""
    a = _arr(a)
    if a.ndim < 2:
        raise ValueError(f"pinv: the array must be at least two-dimensional (shape {a.shape})")
    if hermitian:
        # NumPy reads the lower triangle only (its eigh); the SVD of that symmetric matrix
        # gives the same pseudo-inverse.
        from . import tril

        if a.shape[-1] != a.shape[-2]:
            raise ValueError(f"pinv: hermitian=True needs square matrices (shape {a.shape})")
        a = tril(a) + _t(tril(a, -1))
    if isinstance(rcond, numbers.Number):
        return _call("_npi_pinv", [a], rcond=float(rcond))
    r = _arr(rcond).astype(a._dtype_name)
    r = r.broadcast_to(a.shape[:-2]) if r.shape != a.shape[:-2] else r
    return _call("_npi_pinv", [a, r])


def _prod(xs):
    return int(math.prod(xs)) if xs else 1


def tensorinv(a, ind=2):
    """The inverse of ``a`` seen as a linear map from its first ``ind`` axes to the rest."""
    a = _arr(a)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    out_shape = a.shape[ind:] + a.shape[:ind]
    rows, cols = _prod(a.shape[:ind]), _prod(a.shape[ind:])
    if rows != cols:
        raise ValueError(f"tensorinv: prod(a.shape[:ind]) must equal prod(a.shape[ind:]) "
                         f"(shape {a.shape}, ind {ind})")
    return inv(a.reshape((rows, cols))).reshape(out_shape)


def tensorsolve(a, b, axes=None):
    """Solve the tensor equation ``tensordot(a, x, x.ndim) = b`` for ``x``."""
    a, b = _arr(a), _arr(b)
    if axes is not None:
        allaxes = list(range(a.ndim))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(a.ndim, k)
        a = a.transpose(allaxes)
    # NumPy's rule, also where a.ndim == b.ndim (then x has a's whole shape)
    old = a.shape[-(a.ndim - b.ndim):]
    prod = _prod(old)
    if _prod(a.shape) != prod * prod:
        raise ValueError(f"tensorsolve: a's shape {a.shape} does not make a square system "
                         f"for b's shape {b.shape}")
    x = solve(a.reshape((prod, prod)), b.reshape((prod,)))
    return x.reshape(old)


def _svals(x):
    """Singular values (descending) over the last two axes, differentiable."""
    if x.shape[-2] > x.shape[-1]:
        x = _t(x)
    return svd(x)[1]


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


def _spectral(x, ord, axis, keepdims):
    r, c = axis
    nd_ = x.ndim
    rest = [i for i in range(nd_) if i not in (r, c)]
    m = x.transpose(rest + [r, c])
    s = _svals(m)
    res = s.max(axis=-1) if ord == 2 else s.min(axis=-1) if ord == -2 else s.sum(axis=-1)
    if keepdims:
        shape = list(x.shape)
        shape[r] = shape[c] = 1
        res = res.reshape(tuple(shape))
    return res


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
        res = _spectral(x, ord, axis, keepdims)
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    return res


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (NumPy's ``ord`` rules; ``axis`` an int or a pair; the spectral
    norms 2, -2 and 'nuc' from singular values). As MXNet, ``ord`` may also be the strings
    ``'inf'`` and ``'-inf'``."""
    x = _arr(x)
    if isinstance(ord, str) and ord in ("inf", "-inf"):
        ord = float(ord)
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


def _eps(x):
    return float(_onp.finfo(x._dtype_name).eps)


# the functions MXNet 1.9.1 runs with NumPy on the host (its ``fallback_linalg``), here composed
# of engine operators
def cond(x, p=None):
    """Condition number of each matrix (``p`` as NumPy: None/2/-2 from singular values, else
    ``norm(x, p) * norm(inv(x), p)``)."""
    x = _arr(x)
    if p is None or p in (2, -2):
        s = _call("_npi_svdvals", [x])
        r = s.max(axis=-1) / s.min(axis=-1)
        return 1.0 / r if p == -2 else r
    xinv = _call("_linalg_inverse", [x], _name="cond")
    return norm(x, p, axis=(-2, -1)) * norm(xinv, p, axis=(-2, -1))


def matrix_rank(A, tol=None, hermitian=False):
    """Number of singular values above ``tol`` (default ``s.max() * max(M, N) * eps``)."""
    A = _arr(A)
    if A._dtype_name not in _FLOATS:
        A = A.astype(_default_float())
    if A.ndim < 2:
        return (A != 0).astype("int64").max() if A.size else _arr(0).astype("int64")
    s = _call("_npi_svdvals", [A])
    if tol is None:
        tol = s.max(axis=-1, keepdims=True) * (max(A.shape[-2:]) * _eps(A))
    elif not isinstance(tol, numbers.Number):
        tol = _arr(tol).expand_dims(-1)
    return (s > tol).astype("int64").sum(axis=-1)


def lstsq(a, b, rcond="warn"):
    """Least-squares solution of ``a @ x = b``: ``(x, residuals, rank, s)`` as NumPy."""
    a, b = _arr(a), _arr(b)
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise ValueError(f"lstsq: a must be 2-d and b 1-d or 2-d (shapes {a.shape}, {b.shape})")
    m, n = a.shape
    if b.shape[0] != m:
        raise ValueError(f"lstsq: incompatible dimensions (shapes {a.shape}, {b.shape})")
    if rcond == "warn":
        warnings.warn("`rcond` parameter will change to the default of machine precision "
                      "times ``max(M, N)`` where M and N are the input matrix dimensions.\n"
                      "To use the future default and silence this warning we advise to pass "
                      "`rcond=None`, to keep using the old, explicitly pass `rcond=-1`.",
                      FutureWarning, stacklevel=2)
        rcond = -1
    if rcond is None:
        rcond = _eps(a) * max(m, n)
    elif rcond < 0:
        rcond = _eps(a)
    s = _call("_npi_svdvals", [a])
    rank = (s > s.max() * rcond).astype("int64").sum()
    b2 = b.reshape((m, 1)) if b.ndim == 1 else b
    x = _mm(pinv(a, rcond=rcond), b2)
    r = int(rank.item())
    if r == n and m > n:
        resid = ((b2 - _mm(a, x)) ** 2).sum(axis=0)
    else:
        resid = _arr(_onp.zeros((0,), dtype=a._dtype_name))
    return (x.reshape((n,)) if b.ndim == 1 else x), resid, r, s


def matrix_power(a, n):
    """``a`` to the integer power ``n`` (repeated squaring; negative powers invert first)."""
    a = _arr(a)
    _square("matrix_power", a)
    if not isinstance(n, numbers.Integral):
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}")
    if n == 0:
        from . import eye

        e = eye(a.shape[-1], dtype=a._dtype_name, ctx=a.context)
        return e.broadcast_to(a.shape) if a.ndim > 2 else e
    if n < 0:
        a, n = inv(a), -n
    res, base = None, a
    while n:
        if n & 1:
            res = base if res is None else _mm(res, base)
        n >>= 1
        if n:
            base = _mm(base, base)
    return res


def multi_dot(arrays, *, out=None):
    """``arrays[0] @ arrays[1] @ ...`` in the cheapest order for three (left to right for
    more); a 1-d first (last) array is a row (column) vector, as NumPy."""
    arrays = [_arr(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    first, last = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first:
        arrays[0] = arrays[0].reshape((1, -1))
    if last:
        arrays[-1] = arrays[-1].reshape((-1, 1))
    for x in arrays:
        if x.ndim != 2:
            raise ValueError(f"multi_dot: {x.ndim}-dimensional array given; arrays must be "
                             f"two-dimensional")
    if len(arrays) == 3:
        a, b, c = arrays
        cost1 = a.shape[0] * a.shape[1] * b.shape[1] + a.shape[0] * b.shape[1] * c.shape[1]
        cost2 = b.shape[0] * b.shape[1] * c.shape[1] + a.shape[0] * a.shape[1] * c.shape[1]
        res = _mm(_mm(a, b), c) if cost1 <= cost2 else _mm(a, _mm(b, c))
    else:
        res = arrays[0]
        for x in arrays[1:]:
            res = _mm(res, x)
    if first and last:
        res = res.reshape(())
    elif first or last:
        res = res.reshape((-1,))
    if out is not None:
        out[...] = res
        return out
    return res


def qr(a, mode="reduced"):
    """QR factorization of each matrix (NumPy's ``reduced``/``complete``/``r``/``raw`` modes;
    Householder reflections with LAPACK's signs). ``raw`` gives NumPy's ``(h, tau)``: ``h`` is
    LAPACK's ``geqrf`` output transposed, ``tau`` the reflectors' scales."""
    a = _arr(a)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"qr: unrecognized mode {mode!r} (reduced, complete, r, raw)")
    if a.ndim < 2:
        raise ValueError(f"qr: the array must be at least two-dimensional (shape {a.shape})")
    return _call("_npi_qr", [a], mode=mode)


from . import fallback_linalg  # MXNet's module of the six functions above
