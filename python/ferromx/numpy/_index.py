"""``mx.np`` padding and index helpers composed of engine operators (``pad``, ``delete``,
``insert``, ``indices``, the ``*_indices_from`` family, ``unravel_index``, memory-sharing
tests)."""

import builtins
import numbers

import numpy as _onp

from .. import ndarray as _nd
from ..base import MXNetError as _MXNetError
from ._shape import _a, _ax, _index_array, flip, take, tril, triu

__all__ = [
    "delete",
    "diag_indices_from",
    "indices",
    "insert",
    "may_share_memory",
    "pad",
    "shares_memory",
    "tril_indices_from",
    "triu_indices_from",
    "unravel_index",
]


def indices(dimensions, dtype=None, ctx=None):
    """An array of index grids, shape ``(len(dimensions),) + dimensions``."""
    from . import arange, broadcast_to, stack

    dims = tuple(int(d) for d in dimensions)
    dt = dtype or "int32"  # MXNet 1.9.1's default
    if not dims:
        from . import zeros

        return zeros((0,), dtype=dt, ctx=ctx)
    grids = []
    for i, d in enumerate(dims):
        view = [1] * len(dims)
        view[i] = d
        grids.append(broadcast_to(arange(d, dtype=dt, ctx=ctx).reshape(view), dims))
    return stack(grids, axis=0)


def _nonzero_of(mask):
    from . import nonzero

    return nonzero(mask)


def tril_indices_from(arr, k=0):
    """Row and column indices of the lower triangle of a 2-d ``arr``."""
    from . import ones

    arr = _a(arr)
    if arr.ndim != 2:
        raise ValueError("tril_indices_from: input array must be 2-d")
    return _nonzero_of(tril(ones(arr.shape, ctx=arr.context), k))


def triu_indices_from(arr, k=0):
    """Row and column indices of the upper triangle of a 2-d ``arr``."""
    from . import ones

    arr = _a(arr)
    if arr.ndim != 2:
        raise ValueError("triu_indices_from: input array must be 2-d")
    return _nonzero_of(triu(ones(arr.shape, ctx=arr.context), k))


def diag_indices_from(arr):
    """Indices of the main diagonal of a square ``arr`` (one int64 array per axis)."""
    from . import arange

    arr = _a(arr)
    if arr.ndim < 2 or len(set(arr.shape)) != 1:
        raise ValueError("diag_indices_from: All dimensions of input must be of equal length")
    i = arange(arr.shape[0], dtype="int64", ctx=arr.context)
    return tuple(i.copy() for _ in range(arr.ndim))


def unravel_index(indices, shape, order="C"):
    """Flat ``indices`` as a tuple of coordinate arrays for ``shape`` (computed with integer
    division and modulo on the engine)."""
    if order != "C":
        raise NotImplementedError("unravel_index: only order='C' is supported")
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    idx = _index_array(indices, None)
    out = []
    rest = idx.astype("int64")
    for d in reversed(tuple(shape)):
        out.append(rest % int(d))
        rest = (rest - out[-1]) / int(d)
        rest = rest.astype("int64")
    return tuple(reversed(out))


def _same_storage(a, b):
    # views share their base's engine variable (and storage)
    return (isinstance(a, _nd.NDArray) and isinstance(b, _nd.NDArray) and a.size and b.size
            and a._var_id == b._var_id)


def _overlap(a, b, test):
    """Whether two arrays on one storage overlap, by NumPy's ``test`` on host views of their
    memory (DLPack, zero-copy; views of one array are disjoint slices of it). Where no host
    view can be made (device memory), views of one storage are taken to overlap."""
    try:
        ha, hb = _onp.from_dlpack(a), _onp.from_dlpack(b)
    except (BufferError, RuntimeError, TypeError, ValueError):
        return True
    return builtins.bool(test(ha, hb))


def may_share_memory(a, b, max_work=None):
    """Whether the memory bounds of ``a`` and ``b`` overlap (separate slices of one array
    do not; overlapping ones do)."""
    return builtins.bool(_same_storage(a, b)) and _overlap(a, b, _onp.may_share_memory)


def shares_memory(a, b, max_work=None):
    """Whether ``a`` and ``b`` share memory (separate slices of one array do not)."""
    return builtins.bool(_same_storage(a, b)) and _overlap(a, b, _onp.shares_memory)


def delete(arr, obj, axis=None):
    """``arr`` without the entries ``obj`` (an int, slice or index list) along ``axis``.

    As in MXNet 1.9.1, out-of-range entries of an ``ndarray`` ``obj`` (negative ones too)
    are ignored; an out-of-range integer ``obj`` raises ``IndexError``."""
    arr = _a(arr)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    ax = _ax(axis, arr.ndim, "delete")
    n = arr.shape[ax]
    if isinstance(obj, builtins.slice):
        drop = set(range(n)[obj])
    elif isinstance(obj, _nd.NDArray):
        # an index parameter, as MXNet reads it; MXNet skips indices outside [0, n)
        drop = {int(i) for i in _onp.atleast_1d(obj.asnumpy()) if 0 <= int(i) < n}
    else:
        drop = {int(i) + n if int(i) < 0 else int(i) for i in _onp.atleast_1d(obj)}
        bad = [i for i in drop if not 0 <= i < n]
        if bad:
            raise IndexError(f"delete: index {bad[0]} is out of bounds for axis {axis} with "
                             f"size {n}")
    keep = [i for i in range(n) if i not in drop]
    if not drop:
        return arr.copy()
    return take(arr, keep, axis=ax)


def _insert_indices(obj, n, axis):
    """``obj`` of ``insert`` as a 1-d (or 0-d) NumPy integer array of positions in
    ``[-n, n]``."""
    if isinstance(obj, builtins.slice):
        return _onp.arange(*obj.indices(n))
    if isinstance(obj, _nd.NDArray):
        obj = obj.asnumpy()  # an index parameter, as MXNet reads it
    idx = _onp.asarray(obj)
    if idx.ndim > 1:
        raise ValueError(f"insert: index array argument obj must be one-dimensional or a "
                         f"scalar, got shape {idx.shape}")
    if idx.size == 0:
        return idx.astype("int64")
    if idx.dtype.kind not in "iu":
        raise IndexError(f"insert: index must be integers, got {idx.dtype}")
    bad = idx[(idx < -n) | (idx > n)]
    if bad.size:
        raise IndexError(f"insert: index {int(bad[0])} is out of bounds for axis {axis} with "
                         f"size {n}")
    return idx.astype("int64")


def insert(arr, obj, values, axis=None):
    """``values`` inserted before index or indices ``obj`` (an int, a slice, or a 1-d integer
    list or array) along ``axis`` (``None``: of the flattened array), with NumPy's rules:
    one index inserts ``values`` as a block (a scalar index puts ``values``' first axis
    along ``axis``), several indices insert one entry each, ``values`` broadcasting to
    the inserted part. Values are cast to ``arr``'s dtype; composed of recorded
    operators (differentiable in ``arr`` and ``values``)."""
    from . import array
    from ._shape import broadcast_to

    arr = _a(arr)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    ax = _ax(axis, arr.ndim, "insert")
    n = arr.shape[ax]
    idx = _insert_indices(obj, n, axis)
    if isinstance(values, _nd.NDArray):
        vals = _a(values)
        vals = vals if vals._dtype_name == arr._dtype_name else vals.astype(arr._dtype_name)
    else:
        vals = array(_onp.asarray(values), dtype=arr._dtype_name, ctx=arr.context)

    def fit(v, numnew):
        shp = list(arr.shape)
        shp[ax] = numnew
        try:
            return broadcast_to(v, tuple(shp))
        except (ValueError, _MXNetError) as e:
            raise ValueError(f"insert: values of shape {v.shape} cannot be broadcast to the "
                             f"inserted shape {tuple(shp)} (arr {arr.shape}, axis {axis})") \
                from e

    if idx.size == 1:
        pos = int(idx.item())
        pos = pos + n if pos < 0 else pos
        if vals.ndim < arr.ndim:
            vals = vals.reshape((1,) * (arr.ndim - vals.ndim) + vals.shape)
        if idx.ndim == 0 and vals.ndim > 1:  # a scalar index: values' first axis goes to axis
            perm = list(range(1, vals.ndim))
            perm.insert(ax, 0)
            vals = vals.transpose(perm)
        block = fit(vals, vals.shape[ax] if vals.ndim else 1)
        return _nd.concat(_nd.slice_axis(arr, axis=ax, begin=0, end=pos), block,
                          _nd.slice_axis(arr, axis=ax, begin=pos, end=n), dim=ax)
    idx = _onp.where(idx < 0, idx + n, idx)
    numnew = idx.size
    if numnew == 0:
        return arr.copy()
    # the position of each new entry in the result (NumPy's rule for repeated indices)
    order = _onp.argsort(idx, kind="mergesort")
    dest = idx.copy()
    dest[order] += _onp.arange(numnew)
    gather = _onp.empty(n + numnew, dtype="int64")
    old = _onp.ones(n + numnew, dtype=bool)
    old[dest] = False
    gather[old] = _onp.arange(n)
    gather[dest] = n + _onp.arange(numnew)
    both = _nd.concat(arr, fit(vals, numnew), dim=ax)
    return _nd.take(both, array(gather, dtype="int64", ctx=arr.context), axis=ax, mode="clip")


def _pad_widths(pad_width, ndim):
    pw = _onp.asarray(pad_width, dtype="int64")
    if pw.ndim == 0:
        pw = _onp.full((ndim, 2), int(pw))
    elif pw.ndim == 1:
        pw = _onp.broadcast_to(pw.reshape(-1)[:2] if pw.size >= 2 else
                               _onp.repeat(pw, 2), (ndim, 2))
    pw = _onp.broadcast_to(pw, (ndim, 2))
    if (pw < 0).any():
        raise ValueError("pad: index can't contain negative values")
    return [(int(a), int(b)) for a, b in pw]


def _pad_side(x, ax, width, mode, before, value):
    from . import full

    n = x.shape[ax]
    if mode == "constant":
        shp = list(x.shape)
        shp[ax] = width
        return full(tuple(shp), value, dtype=x._dtype_name, ctx=x.context)
    if mode == "edge":
        edge = _nd.slice_axis(x, axis=ax, begin=0, end=1) if before else \
            _nd.slice_axis(x, axis=ax, begin=n - 1, end=n)
        return _nd.repeat(edge, repeats=width, axis=ax)
    if mode in ("maximum", "minimum", "mean"):
        red = {"maximum": "max", "minimum": "min", "mean": "mean"}[mode]
        stat = getattr(x, red)(axis=ax, keepdims=True)
        return _nd.repeat(stat, repeats=width, axis=ax)
    # reflect / symmetric, possibly wider than the array: build repeatedly
    parts, got = [], 0
    cur = x
    while got < width:
        if mode == "reflect":
            if n < 2:
                return _pad_side(x, ax, width, "edge", before, value)
            src = _nd.slice_axis(cur, axis=ax, begin=1, end=n) if before else \
                _nd.slice_axis(cur, axis=ax, begin=0, end=n - 1)
        else:
            src = cur
        src = flip(src, ax)
        take_n = builtins.min(width - got, src.shape[ax])
        piece = _nd.slice_axis(src, axis=ax, begin=src.shape[ax] - take_n, end=src.shape[ax]) \
            if before else _nd.slice_axis(src, axis=ax, begin=0, end=take_n)
        parts.append(piece)
        got += take_n
        cur = flip(cur, ax)
    if before:
        parts = parts[::-1]
    return parts[0] if len(parts) == 1 else _nd.concat(*parts, dim=ax)


def pad(array, pad_width, mode="constant", **kwargs):
    """``array`` padded per axis by ``pad_width`` (``((before, after), ...)``).

    Modes: ``'constant'`` (``constant_values``), ``'edge'``, ``'reflect'``, ``'symmetric'``,
    ``'maximum'``, ``'minimum'``, ``'mean'``."""
    x = _a(array)
    modes = ("constant", "edge", "reflect", "symmetric", "maximum", "minimum", "mean")
    if mode not in modes:
        raise ValueError(f"pad: mode {mode!r} is not supported (one of {modes})")
    value = kwargs.pop("constant_values", 0)
    kwargs.pop("reflect_type", None)
    if kwargs:
        raise TypeError(f"pad: unexpected keyword arguments {sorted(kwargs)}")
    if not isinstance(value, numbers.Number):
        raise NotImplementedError("pad: only a scalar constant_values is supported")
    widths = _pad_widths(pad_width, x.ndim)
    for ax, (b, a) in enumerate(widths):
        if (b or a) and x.shape[ax] == 0 and mode != "constant":
            raise ValueError(f"pad: can't extend empty axis {ax} using modes other than "
                             f"'constant'")
    if mode in ("constant", "edge") or (mode == "reflect" and all(
            b < n and a < n for (b, a), n in zip(widths, x.shape) if b or a)):
        # one engine operator (MXNet's Pad; repeated reflection falls through)
        return _nd.pad(x, mode=mode, pad_width=tuple(w for p in widths for w in p),
                       constant_value=float(value))
    res = x
    for ax, (b, a) in enumerate(widths):
        if b == 0 and a == 0:
            continue
        parts = []
        if b:
            parts.append(_pad_side(res, ax, b, mode, True, value))
        parts.append(res)
        if a:
            parts.append(_pad_side(res, ax, a, mode, False, value))
        res = _nd.concat(*parts, dim=ax)
    return res if res is not x else x.copy()
