"""``mx.np`` interpolation, binning, windows and integer helpers composed of engine
operators (``interp``, ``trapz``, ``searchsorted``, ``digitize``, ``histogram``, the
``hamming``/``hanning``/``blackman`` windows). ``gcd``/``lcm`` and ``fmod``/``fmax``/``fmin``
are table operators (``_npi_gcd`` ...), bound by the operator table."""

import builtins
import numbers

import numpy as _onp

from .. import ndarray as _nd
from ._math import _a, _default_float, _is_float

__all__ = [
    "blackman",
    "digitize",
    "hamming",
    "hanning",
    "histogram",
    "interp",
    "searchsorted",
    "trapz",
]


def interp(x, xp, fp, left=None, right=None, period=None):
    """1-d piecewise-linear interpolation of ``(xp, fp)`` at ``x`` (on the engine)."""
    if period is not None:
        raise NotImplementedError("interp: 'period' is not supported")
    x, xp, fp = _a(x), _a(xp), _a(fp)
    if xp.ndim != 1 or fp.shape != xp.shape:
        raise ValueError(f"interp: xp and fp must be 1-d of equal length (got {xp.shape} and "
                         f"{fp.shape})")
    dt = _default_float() if not _is_float(fp) else fp._dtype_name
    x, xp, fp = x.astype(dt), xp.astype(dt), fp.astype(dt)
    n = xp.shape[0]
    flat = x.reshape(-1, 1)
    idx = (flat >= xp.reshape(1, -1)).astype("int64").sum(axis=1)
    hi = _nd.clip(idx, 1, builtins.max(n - 1, 1))
    lo = hi - 1
    x0, x1 = _nd.take(xp, lo), _nd.take(xp, hi)
    y0, y1 = _nd.take(fp, lo), _nd.take(fp, hi)
    den = x1 - x0
    den = _nd.where(den == 0, _nd.ones_like(den), den)
    xf = flat.reshape(-1)
    res = y0 + (y1 - y0) * (xf - x0) / den
    lv = fp[0] if left is None else left
    rv = fp[n - 1] if right is None else right
    ones = _nd.ones_like(res)
    res = _nd.where(xf < xp[0], ones * lv, res)
    res = _nd.where(xf > xp[n - 1], ones * rv, res)
    res = _nd.where(xf == xp[n - 1], ones * fp[n - 1], res)
    return res.reshape(x.shape)


def trapz(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule."""
    from ._shape import diff

    y = _a(y)
    if not _is_float(y):
        y = y.astype(_default_float())
    ax = axis + y.ndim if axis < 0 else axis
    n = y.shape[ax]
    mid = (_nd.slice_axis(y, axis=ax, begin=1, end=n) + _nd.slice_axis(y, axis=ax, begin=0,
                                                                         end=n - 1)) / 2.0
    if x is None:
        return (mid * dx).sum(axis=ax)
    d = diff(_a(x).astype(y._dtype_name), axis=-1)
    if d.ndim == 1:
        view = [1] * y.ndim
        view[ax] = -1
        d = d.reshape(view)
    return (mid * d).sum(axis=ax)


def searchsorted(a, v, side="left", sorter=None):
    """Insertion indices of ``v`` into sorted 1-d ``a`` (counts of smaller elements)."""
    a = _a(a)
    if sorter is not None:
        a = _nd.take(a, _a(sorter).astype("int64"))
    vv = _a(v) if isinstance(v, _nd.NDArray) else None
    from . import array

    if vv is None:
        vv = array(_onp.asarray(v), dtype=a._dtype_name, ctx=a.context)
    flat = vv.reshape(-1, 1).astype(a._dtype_name)
    cmp = (a.reshape(1, -1) < flat) if side == "left" else (a.reshape(1, -1) <= flat)
    return cmp.astype("int64").sum(axis=1).reshape(vv.shape)


def digitize(x, bins, right=False):
    """Indices of the bins (increasing ``bins``) to which each value belongs."""
    bins = _a(bins)
    x = _a(x)
    flat = x.reshape(-1, 1).astype(bins._dtype_name)
    cmp = (bins.reshape(1, -1) < flat) if right else (bins.reshape(1, -1) <= flat)
    return cmp.astype("int64").sum(axis=1).reshape(x.shape)


def _window(M, fn, coeffs):
    from . import arange, array, ones, zeros

    if M < 1:
        return zeros((0,), dtype=_default_float())
    if M == 1:
        return ones((1,), dtype=_default_float())
    n = arange(M, dtype="float64")
    res = n * 0
    for k, c in enumerate(coeffs):
        res = res + c * _nd.cos(2.0 * _onp.pi * k * n / (M - 1))
    del array
    return res.astype(_default_float())


def blackman(M, dtype=None, ctx=None):
    """The Blackman window of ``M`` points."""
    return _window(M, "blackman", (0.42, -0.5, 0.08)).astype(dtype or _default_float())


def hamming(M, dtype=None, ctx=None):
    """The Hamming window of ``M`` points."""
    return _window(M, "hamming", (0.54, -0.46)).astype(dtype or _default_float())


def hanning(M, dtype=None, ctx=None):
    """The Hann window of ``M`` points."""
    return _window(M, "hanning", (0.5, -0.5)).astype(dtype or _default_float())


def histogram(a, bins=10, range=None, normed=None, weights=None, density=None):
    """Counts of ``a`` in ``bins`` equal-width bins (or given edges); returns
    ``(hist, bin_edges)``. The default range is read from the data (``min``/``max``)."""
    from . import array, linspace

    a = _a(a).reshape(-1)
    if weights is not None or density or normed:
        raise NotImplementedError("histogram: weights and density are not supported")
    if isinstance(bins, numbers.Integral):
        if range is None:
            lo, hi = (a.min().item(), a.max().item()) if a.size else (0.0, 1.0)
        else:
            lo, hi = range
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = linspace(lo, hi, int(bins) + 1, dtype="float64", ctx=a.context)
    else:
        edges = _a(bins) if isinstance(bins, _nd.NDArray) else array(
            _onp.asarray(bins, dtype="float64"), ctx=a.context)
    af = a.astype(edges._dtype_name).reshape(-1, 1)
    nb = edges.shape[0] - 1
    ge = (af >= edges.reshape(1, -1)).astype("int64")
    idx = ge.sum(axis=1) - 1
    last = edges[nb]
    idx = _nd.where(af.reshape(-1) == last, idx * 0 + (nb - 1), idx)
    inside = (idx >= 0) & (idx < nb)
    oh = _nd.one_hot(_nd.where(inside, idx, idx * 0), depth=nb, dtype="int64")
    counts = (oh * inside.astype("int64").reshape(-1, 1)).sum(axis=0)
    return counts, edges.astype(_default_float()) if isinstance(bins, numbers.Integral) \
        else edges
