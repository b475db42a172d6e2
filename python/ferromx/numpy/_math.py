"""``mx.np`` math, statistics and products composed of engine operators.

Floating-point tests (``isnan`` ...), rounding, sign manipulation, reductions (``var``,
``std``, ``average``, ``all``/``any``, quantiles via ``sort``), products (``outer``,
``tensordot``, ``einsum`` via ``dot``/``batch_dot``), ``polyval``, ``bincount``, ``unique``.
Everything runs as ferromx operators on the engine (``unique`` and ``bincount``'s output
length are read on the host, as MXNet does), so gradients come from autograd.
"""

import builtins
import numbers

import numpy as _onp

from .. import _native
from .. import ndarray as _nd
from ..util import in_graph_fallback as _in_graph_fallback
from .multiarray import _FLOATS, _default_float

__all__ = [
    "all",
    "allclose",
    "alltrue",
    "any",
    "argwhere",
    "around",
    "array_equal",
    "array_equiv",
    "average",
    "bincount",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "count_nonzero",
    "cross",
    "einsum",
    "fabs",
    "flatnonzero",
    "float_power",
    "heaviside",
    "inner",
    "invert",
    "isclose",
    "kron",
    "nan_to_num",
    "outer",
    "percentile",
    "polyval",
    "positive",
    "product",
    "ptp",
    "quantile",
    "real",
    "round",
    "round_",
    "sometrue",
    "std",
    "tensordot",
    "unique",
    "var",
    "vdot",
]


def _a(x):
    from . import asarray

    return asarray(x)


def _out(res, out):
    if out is not None:
        out[...] = res
        return out
    return res


def _is_float(x):
    return x._dtype_name in _FLOATS


def isnan(x):
    """NaN test (``_npi_isnan``) for this module's compositions."""
    return _native.invoke("_npi_isnan", [x])


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` elementwise (equal infinities are close)."""
    a, b = _a(a), _a(b)
    a = a.astype("float64") if not _is_float(a) else a
    b = b.astype(a._dtype_name)
    close = _nd.abs(a - b) <= atol + rtol * _nd.abs(b)
    res = close | (a == b)
    if equal_nan:
        res = res | (isnan(a) & isnan(b))
    return res


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element is close (a Python bool, as NumPy's)."""
    return builtins.bool(all(isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    """Whether the arrays have equal shapes and elements (a Python bool)."""
    a1, a2 = _a(a1), _a(a2)
    if a1.shape != a2.shape:
        return False
    eq = a1 == a2
    if equal_nan:
        eq = eq | (isnan(a1) & isnan(a2))
    return builtins.bool(all(eq))


def array_equiv(a1, a2):
    """Whether the arrays are equal after broadcasting (a Python bool)."""
    a1, a2 = _a(a1), _a(a2)
    try:
        _onp.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return False
    return builtins.bool(all(a1 == a2))


def around(x, decimals=0, out=None):
    """Round to ``decimals`` places (halves to even, as NumPy and MXNet's np)."""
    x = _a(x)
    if not _is_float(x):
        if decimals >= 0 or x._dtype_name == "bool":
            return _out(x.copy(), out)
        # negative decimals round integers too (to tens, hundreds ...), in float64
        return _out(around(x.astype("float64"), decimals).astype(x._dtype_name), out)
    if decimals == 0:
        return _out(_half_even(x), out)
    f = 10.0 ** decimals
    return _out(_half_even(x * f) / f, out)


def _half_even(x):
    r = _nd.floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = _nd.broadcast_mod(r, _nd.ones_like(r) * 2) != 0
    return _nd.where(tie & odd, r - 1, r)


round = round_ = around


def fabs(x, out=None):
    """Absolute values (float)."""
    x = _a(x)
    return _out(_nd.abs(x if _is_float(x) else x.astype(_default_float())), out)


def positive(x, out=None):
    """``+x`` (a copy)."""
    return _out(_a(x).copy(), out)


def float_power(x1, x2, out=None):
    """``x1 ** x2`` in float64."""
    x1 = _a(x1).astype("float64")
    x2 = _a(x2).astype("float64") if isinstance(x2, _nd.NDArray) else float(x2)
    return _out(x1 ** x2, out)


def heaviside(x1, x2, out=None):
    """The Heaviside step (``x2`` where ``x1 == 0``)."""
    x1 = _a(x1)
    h0 = _a(x2).astype(x1._dtype_name) if isinstance(x2, _nd.NDArray) else None
    from . import full_like, where

    if h0 is None:
        h0 = full_like(x1, x2)
    return _out(where(x1 < 0, full_like(x1, 0), where(x1 > 0, full_like(x1, 1), h0)), out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by finite numbers (the dtype's extremes by default)."""
    x = _a(x)
    if not _is_float(x):
        return x.copy() if copy else x
    info = _onp.finfo(_onp.dtype(x._dtype_name))
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    ones = _nd.ones_like(x)
    res = _nd.where(isnan(x), ones * nan, x)
    res = _nd.where(x == _onp.inf, ones * posinf, res)
    res = _nd.where(x == -_onp.inf, ones * neginf, res)
    # in a hybridized block's graph the operator writes a new array (MXNet's symbol form)
    if not copy and not _in_graph_fallback():
        x[...] = res
        return x
    return res


def real(val):
    """The real part (a copy; ferromx arrays are real)."""
    return _a(val).copy()


def invert(x, out=None):
    """Bitwise NOT: logical not of bool arrays, ``-x - 1`` (two's complement) of signed
    integers, ``max - x`` of unsigned ones."""
    x = _a(x)
    name = x._dtype_name
    if name == "bool":
        return _out(~x, out)
    if name in _FLOATS:
        raise TypeError(f"invert: ufunc 'invert' not supported for the input type {name}")
    if name == "uint8":
        return _out(255 - x, out)
    return _out(-x - 1, out)


bitwise_not = invert


def _bitwise(op):
    def fn(x1, x2, out=None):
        arr1, arr2 = isinstance(x1, _nd.NDArray), isinstance(x2, _nd.NDArray)
        if not arr1 and not arr2 and not isinstance(x1, (list, tuple, _onp.ndarray)) \
                and not isinstance(x2, (list, tuple, _onp.ndarray)):
            return getattr(_onp, f"bitwise_{op}")(x1, x2)  # two Python scalars, as MXNet
        if not arr1 and isinstance(x1, (numbers.Integral, _onp.integer, _onp.bool_)):
            x1, x2 = x2, x1  # commutative: the array first
        x1 = _a(x1)
        if isinstance(x2, (numbers.Integral, _onp.integer, _onp.bool_)):
            res = _native.invoke(f"_npi_bitwise_{op}_scalar", [x1], scalar=int(x2))
        elif isinstance(x2, numbers.Number):
            raise TypeError(f"bitwise_{op}: ufunc 'bitwise_{op}' not supported for a "
                            f"{type(x2).__name__} operand")
        else:
            res = _native.invoke(f"_npi_bitwise_{op}", [x1, _a(x2)])
        return _out(res, out)

    fn.__name__ = f"bitwise_{op}"
    fn.__doc__ = (f"Bitwise {op.upper()} of integer (or bool) arrays, with broadcasting; a "
                  f"Python integer operand is cast to the array's dtype (wrapping, as MXNet).")
    return fn


bitwise_and, bitwise_or, bitwise_xor = _bitwise("and"), _bitwise("or"), _bitwise("xor")


def average(a, axis=None, weights=None, returned=False):
    """Weighted average along ``axis``."""
    a = _a(a)
    if not _is_float(a):
        a = a.astype(_default_float())
    if weights is None:
        avg = a.mean(axis=axis)
        scl = a.size / avg.size if avg.size else 0
        wsum = avg * 0 + scl
    else:
        w = _a(weights).astype(a._dtype_name)
        if w.shape != a.shape:
            if axis is None or w.ndim != 1:
                raise TypeError("average: Axis must be specified when shapes of a and weights "
                                "differ.")
            ax = axis + a.ndim if axis < 0 else axis
            if w.shape[0] != a.shape[ax]:
                raise ValueError("average: Length of weights not compatible with specified "
                                 "axis.")
            view = [1] * a.ndim
            view[ax] = -1
            w = w.reshape(view).broadcast_to(a.shape)
        wsum = w.sum(axis=axis)
        avg = (a * w).sum(axis=axis) / wsum
    return (avg, wsum) if returned else avg


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Variance along ``axis`` (``ddof`` delta degrees of freedom)."""
    a = _a(a)
    if not _is_float(a):
        a = a.astype(_default_float())
    mu = a.mean(axis=axis, keepdims=True)
    sq = (a - mu) ** 2
    n = sq.size if axis is None else int(_onp.prod([a.shape[i] for i in _norm_axes(axis,
                                                                                a.ndim)]))
    res = sq.sum(axis=axis, keepdims=keepdims) / builtins.max(n - ddof, 0)
    if dtype is not None:
        res = res.astype(dtype)
    return _out(res, out)


def _norm_axes(axis, ndim):
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    return [x + ndim if x < 0 else x for x in axes]


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Standard deviation along ``axis``."""
    return _out(_nd.sqrt(var(a, axis, dtype, None, ddof, keepdims)), out)


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (max - min) along ``axis``."""
    a = _a(a)
    return _out(a.max(axis=axis, keepdims=keepdims) - a.min(axis=axis, keepdims=keepdims), out)


def all(a, axis=None, out=None, keepdims=False):
    """Whether all elements along ``axis`` are true (a bool array)."""
    a = _a(a)
    zeros = (a == 0).astype("int64")
    return _out(zeros.sum(axis=axis, keepdims=keepdims) == 0, out)


def any(a, axis=None, out=None, keepdims=False):
    """Whether any element along ``axis`` is true (a bool array)."""
    a = _a(a)
    nz = (a != 0).astype("int64")
    return _out(nz.sum(axis=axis, keepdims=keepdims) > 0, out)


alltrue, sometrue = all, any


def product(a, axis=None, dtype=None, out=None, keepdims=False):
    """Product along ``axis`` (``prod``)."""
    return _a(a).prod(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero elements along ``axis`` (int64)."""
    return (_a(a) != 0).astype("int64").sum(axis=axis, keepdims=keepdims)


def outer(a, b, out=None):
    """The outer product of the flattened inputs."""
    a, b = _a(a).reshape(-1, 1), _a(b).reshape(1, -1)
    return _out(a * b, out)


def tensordot(a, b, axes=2):
    """Sum of products over ``axes`` (an int: the last/first ``axes`` axes; or two lists)."""
    a, b = _a(a), _a(b)
    if isinstance(axes, numbers.Integral):
        if axes < 0 or axes > builtins.min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} is out of range for shapes {a.shape} "
                             f"and {b.shape}")
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, numbers.Integral) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, numbers.Integral) else list(ax_b)
        ax_a = [x + a.ndim if x < 0 else x for x in ax_a]
        ax_b = [x + b.ndim if x < 0 else x for x in ax_b]
    if len(ax_a) != len(ax_b) or builtins.any(a.shape[i] != b.shape[j]
                                              for i, j in zip(ax_a, ax_b)):
        raise ValueError(f"tensordot: shape-mismatch for sum (shapes {a.shape} and {b.shape}, "
                         f"axes {ax_a} and {ax_b})")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    def size(shape, axes):
        return int(_onp.prod([shape[i] for i in axes]))

    # explicit sizes, not -1: any of them may be zero
    k, m, n = size(a.shape, ax_a), size(a.shape, free_a), size(b.shape, free_b)
    at = a.transpose(free_a + ax_a).reshape(m, k)
    bt = b.transpose(ax_b + free_b).reshape(k, n)
    res = _nd.dot(at, bt)
    return res.reshape(tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))


def inner(a, b):
    """Sum of products over the last axes."""
    a, b = _a(a), _a(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([-1], [-1]))


def vdot(a, b):
    """Dot product of the flattened inputs (0-d)."""
    return _nd.dot(_a(a).reshape(-1), _a(b).reshape(-1))


def kron(a, b):
    """The Kronecker product."""
    a, b = _a(a), _a(b)
    nd_ = builtins.max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd_ - a.ndim) + a.shape)
    b = b.reshape((1,) * (nd_ - b.ndim) + b.shape)
    ia = [x for d in a.shape for x in (d, 1)]
    ib = [x for d in b.shape for x in (1, d)]
    res = a.reshape(ia) * b.reshape(ib)
    return res.reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors along the last axis."""
    a, b = _a(a), _a(b)
    if axis is not None or (axisa, axisb, axisc) != (-1, -1, -1):
        raise NotImplementedError("cross: only the last axis is supported")
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError(f"cross: incompatible dimensions for cross product (shapes {a.shape} "
                         f"and {b.shape}; ferromx supports 3-vectors)")
    def c(x, i):
        return _nd.slice_axis(x, axis=-1, begin=i, end=i + 1)

    parts = [c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1), c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
             c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)]
    return _nd.concat(*parts, dim=-1)


def _einsum_ellipsis(subscripts, operands):
    """``subscripts`` with each ``...`` spelled out in unused letters (the broadcast axes,
    right-aligned across operands, as NumPy)."""
    import string

    lhs, arrow, out = subscripts.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(operands)} operands")
    counts = []
    for s, op in zip(ins, operands):
        if s.count("...") > 1 or s.replace("...", "").count("."):
            raise ValueError(f"einsum: invalid subscripts {s!r} (one '...' at most)")
        e = op.ndim - len(s.replace("...", "")) if "..." in s else 0
        if e < 0:
            raise ValueError(f"einsum: subscripts {s!r} do not match operand shape {op.shape}")
        counts.append(e)
    if out.count("...") > 1 or out.replace("...", "").count("."):
        raise ValueError(f"einsum: invalid output subscripts {out!r}")
    ne = builtins.max(counts) if counts else 0
    free = [c for c in string.ascii_letters if c not in subscripts]
    if len(free) < ne:
        raise ValueError("einsum: too many subscripts")
    ell = "".join(free[:ne])
    # the broadcast axes right-aligned over the operands (their sizes broadcast later)
    new_ins = [s.replace("...", ell[ne - e:]) for s, e in zip(ins, counts)]
    if arrow:
        out = out.replace("...", ell)
    else:  # implicit output: the broadcast axes first, then the letters seen once
        letters = "".join(new_ins)
        once = "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
        out = ell + once
    return ",".join(new_ins) + "->" + out


def _einsum_parse(subscripts, operands):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
    else:
        lhs = subscripts
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(operands)} operands")
    for s, op in zip(ins, operands):
        if len(s) != op.ndim:
            raise ValueError(f"einsum: subscripts {s!r} do not match operand shape {op.shape}")
    return ins, out


def _einsum_broadcast(ins, ops, subscripts):
    """The operands with their size-1 axes broadcast to the size a letter has elsewhere (as
    NumPy broadcasts them)."""
    sizes = {}
    for sub, op in zip(ins, ops):
        for c, d in zip(sub, op.shape):
            if d != 1 and sizes.setdefault(c, d) != d:
                raise ValueError(f"einsum: operands could not be broadcast together "
                                 f"(shapes {[o.shape for o in ops]}, subscripts "
                                 f"{subscripts!r}): {c!r} is {sizes[c]} and {d}")
    res = []
    for sub, op in zip(ins, ops):
        shp = tuple(sizes.get(c, 1) for c in sub)
        res.append(op if shp == op.shape else op.broadcast_to(shp))
    return res


def _einsum_single(x, sub, keep):
    """Sum ``x`` (with subscripts ``sub``) over letters not in ``keep``; take diagonals of
    repeated letters."""
    while len(set(sub)) != len(sub):
        c = next(ch for ch in sub if sub.count(ch) > 1)
        i = sub.index(c)
        j = sub.index(c, i + 1)
        x = _nd.diag(x, k=0, axis1=i, axis2=j)
        sub = "".join(ch for k, ch in enumerate(sub) if k not in (i, j)) + c
    drop = [k for k, ch in enumerate(sub) if ch not in keep]
    if drop:
        x = x.sum(axis=tuple(drop))
        sub = "".join(ch for k, ch in enumerate(sub) if k not in drop)
    return x, sub


def _einsum_pair(x, sx, y, sy, keep):
    batch = [c for c in sx if c in sy and c in keep]
    contract = [c for c in sx if c in sy and c not in keep]
    fx = [c for c in sx if c not in sy]
    fy = [c for c in sy if c not in sx]
    dims = {c: x.shape[sx.index(c)] for c in sx}
    dims.update({c: y.shape[sy.index(c)] for c in sy})
    p = int(_onp.prod([dims[c] for c in batch]))
    m = int(_onp.prod([dims[c] for c in fx]))
    k = int(_onp.prod([dims[c] for c in contract]))
    n = int(_onp.prod([dims[c] for c in fy]))
    xt = x.transpose([sx.index(c) for c in batch + fx + contract]).reshape(p, m, k)
    yt = y.transpose([sy.index(c) for c in batch + contract + fy]).reshape(p, k, n)
    res = _nd.batch_dot(xt, yt)
    sub = "".join(batch + fx + fy)
    return res.reshape(tuple(dims[c] for c in sub)), sub


def einsum(*operands, **kwargs):
    """Einstein summation (``'ij,jk->ik'``, ``'...ij,...jk'`` ...), as products of
    ``batch_dot`` and sums (recorded, differentiable). ``...`` stands for broadcast axes, as
    in NumPy."""
    out = kwargs.pop("out", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected keyword arguments {sorted(kwargs)}")
    subscripts, ops = operands[0], [_a(o) for o in operands[1:]]
    if "." in subscripts:
        subscripts = _einsum_ellipsis(subscripts.replace(" ", ""), ops)
    ins, target = _einsum_parse(subscripts, ops)
    ops = _einsum_broadcast(ins, ops, subscripts)
    x, sx = None, ""
    for i, (op, sub) in enumerate(zip(ops, ins)):
        later = "".join(ins[i + 1:]) + target
        keep = set(later) | (set(sx) if x is not None else set())
        op, sub = _einsum_single(op, sub, keep | set(target))
        if x is None:
            x, sx = op, sub
            continue
        x, sx = _einsum_single(x, sx, set(sub) | set(later))
        x, sx = _einsum_pair(x, sx, op, sub, set(later))
    x, sx = _einsum_single(x, sx, set(target))
    res = x.transpose([sx.index(c) for c in target]) if target else x
    return _out(res if target != sx or not target else res.copy(), out)


def _quantile(a, q, axis, interpolation, keepdims, fn):
    from . import array

    a = _a(a)
    if not _is_float(a):
        a = a.astype(_default_float())
    qa = _a(q) if isinstance(q, _nd.NDArray) else array(_onp.asarray(q, dtype="float64"),
                                                        ctx=a.context)
    if axis is None:
        x, ax = a.reshape(-1), 0
    else:
        ax = axis + a.ndim if axis < 0 else axis
        x = a
    n = x.shape[ax]
    s = _nd.sort(x, axis=ax)
    s = _nd.moveaxis(s, source=ax, destination=0) if ax else s
    pos = qa.astype("float64") * (n - 1)
    lo = _nd.floor(pos)
    hi = _nd.ceil(pos)
    if interpolation == "lower":
        res = _nd.take(s, lo.astype("int64"), axis=0)
    elif interpolation == "higher":
        res = _nd.take(s, hi.astype("int64"), axis=0)
    elif interpolation == "nearest":
        res = _nd.take(s, _half_even(pos).astype("int64"), axis=0)
    elif interpolation in ("linear", "midpoint"):
        vlo = _nd.take(s, lo.astype("int64"), axis=0)
        vhi = _nd.take(s, hi.astype("int64"), axis=0)
        frac = (pos - lo).astype(a._dtype_name)
        if interpolation == "midpoint":
            frac = frac * 0 + 0.5
            frac = _nd.where(hi == lo, frac * 0, frac)
        frac = frac.reshape(frac.shape + (1,) * (vlo.ndim - frac.ndim))
        res = vlo + (vhi - vlo) * frac
    else:
        raise ValueError(f"{fn}: interpolation must be one of 'linear', 'lower', 'higher', "
                         f"'midpoint' or 'nearest', got {interpolation!r}")
    if keepdims:
        shp = list(a.shape) if axis is not None else [1] * a.ndim
        if axis is not None:
            shp[ax] = 1
        res = res.reshape(qa.shape + tuple(shp))
    return res


def percentile(a, q, axis=None, out=None, overwrite_input=None, interpolation="linear",
               keepdims=False):
    """The ``q``-th percentiles (``q`` in [0, 100]) along ``axis``."""
    qq = _a(q) / 100.0 if isinstance(q, _nd.NDArray) else _onp.asarray(q, dtype="float64") / 100
    return _out(_quantile(a, qq, axis, interpolation, keepdims, "percentile"), out)


def quantile(a, q, axis=None, out=None, overwrite_input=None, interpolation="linear",
             keepdims=False):
    """The ``q``-th quantiles (``q`` in [0, 1]) along ``axis``."""
    return _out(_quantile(a, q, axis, interpolation, keepdims, "quantile"), out)


def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest first) at ``x`` (Horner's rule)."""
    p, x = _a(p), _a(x)
    if p.ndim != 1:
        raise ValueError(f"polyval: p must be 1-d, got shape {p.shape}")
    res = x * 0
    for i in range(p.shape[0]):
        res = res * x + p[i]
    return res


def bincount(x, weights=None, minlength=0):
    """Counts of each non-negative integer in ``x`` (sums of ``weights``).

    The output length (``max(x) + 1``) is read from the engine, as MXNet does; the counts are
    a ``one_hot`` sum on the engine."""
    x = _a(x)
    if x.ndim != 1:
        raise ValueError(f"bincount: x must be 1-d, got shape {x.shape}")
    if x._dtype_name in _FLOATS:
        raise TypeError("bincount: input must be an integer array")
    if minlength < 0:
        raise ValueError("bincount: minlength must be non-negative")
    if x.size and builtins.int(x.min().item()) < 0:
        raise ValueError("bincount: input should not contain negative values")
    depth = builtins.max(builtins.int(x.max().item()) + 1 if x.size else 0, minlength)
    if weights is None:
        oh = _nd.one_hot(x, depth=depth, dtype="int64")
        return oh.sum(axis=0)
    w = _a(weights)
    oh = _nd.one_hot(x, depth=depth, dtype=w._dtype_name if _is_float(w) else "float64")
    return (oh * w.reshape(-1, 1).astype(oh._dtype_name)).sum(axis=0)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """The sorted unique elements (of the flattened array when ``axis`` is None).

    The output size depends on the data: the values are read to the host and NumPy picks the
    unique ones there, as MXNet's ``np.unique`` (whose CPU kernel also sorts on the host)."""
    from . import array

    ar = _a(ar)
    res = _onp.unique(ar.asnumpy(), return_index, return_inverse, return_counts, axis)
    if not isinstance(res, tuple):
        return array(res, dtype=ar._dtype_name, ctx=ar.context)
    first = array(res[0], dtype=ar._dtype_name, ctx=ar.context)
    return (first,) + tuple(array(r, dtype="int64", ctx=ar.context) for r in res[1:])


def argwhere(a):
    """Indices of nonzero elements, one row per element (int64)."""
    from . import nonzero, stack, zeros

    a = _a(a)
    nz = nonzero(a)
    if not nz or nz[0].size == 0:
        return zeros((0, a.ndim), dtype="int64", ctx=a.context)
    return stack(list(nz), axis=1)


def flatnonzero(a):
    """Indices of nonzero elements of the flattened array."""
    from . import nonzero

    return nonzero(_a(a).reshape(-1))[0]


