"""``mx.np`` functions that MXNet 1.9.1 runs with official NumPy on the host.

MXNet's ``mxnet.numpy.fallback`` binds these names to NumPy's functions; called with
``mx.np.ndarray`` arguments they convert them to NumPy arrays, run NumPy on the host and
convert array results back (``__array_function__``). ferromx does the same, explicitly:
array arguments (also inside lists/tuples) are read with ``asnumpy()``, NumPy computes, and
NumPy-array results come back as ``ferromx.np.ndarray`` on the first argument's context.
These functions have no autograd gradient (MXNet's have none either). The names that ferromx
computes on the engine instead live in ``_shape``/``_math``.
"""

import functools

import numpy as _onp

from .. import ndarray as _nd

_NAMES = [
    "apply_along_axis", "apply_over_axes", "argpartition", "choose", "compress", "corrcoef",
    "correlate", "cov", "divmod", "extract", "frexp", "histogram2d", "histogram_bin_edges",
    "histogramdd", "i0", "in1d", "intersect1d", "isin", "ix_", "lexsort", "min_scalar_type",
    "modf", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax",
    "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "partition",
    "piecewise", "packbits", "poly", "polyadd", "polydiv", "polyfit", "polyint", "polymul",
    "polysub", "promote_types", "result_type", "roots", "select",
    "setdiff1d", "setxor1d", "spacing", "trim_zeros", "union1d", "unpackbits", "unwrap",
    "vander",
]

__all__ = list(_NAMES)


def _to_host(v):
    if isinstance(v, _nd.NDArray):
        return v.asnumpy()
    if isinstance(v, (list, tuple)):
        return type(v)(_to_host(x) for x in v)
    return v


def _ctx_of(args):
    for v in args:
        if isinstance(v, _nd.NDArray):
            return v.context
        if isinstance(v, (list, tuple)):
            c = _ctx_of(v)
            if c is not None:
                return c
    return None


def _to_dev(v, ctx):
    from . import array

    if isinstance(v, _onp.ndarray) and v.dtype != object:
        return array(v, dtype=v.dtype, ctx=ctx)
    if isinstance(v, tuple):
        return tuple(_to_dev(x, ctx) for x in v)
    if isinstance(v, list):
        return [_to_dev(x, ctx) for x in v]
    return v


def _wrap(name):
    fn = getattr(_onp, name, None)
    if fn is None and name == "in1d":  # NumPy 2.4 removed in1d: isin of the flattened input
        def fn(ar1, ar2, assume_unique=False, invert=False, kind=None):
            return _onp.isin(_onp.ravel(ar1), ar2, assume_unique=assume_unique,
                             invert=invert, kind=kind)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        ctx = _ctx_of(args) or _ctx_of(list(kwargs.values()))
        res = fn(*_to_host(args), **{k: _to_host(v) for k, v in kwargs.items()})
        return _to_dev(res, ctx)

    run.__doc__ = (f"NumPy's ``{name}`` run on the host (an MXNet fallback operator).\n\n"
                   + (fn.__doc__ or ""))
    run.__module__ = __name__
    return run


for _n in _NAMES:
    globals()[_n] = _wrap(_n)
