"""``mx.np`` array manipulation composed of engine operators.

Stacking, splitting, flipping, rolling, tiling, triangles, scans and index helpers for
``ferromx.np``. Every function only composes existing ferromx operators (``concat``,
``slice_axis``, ``transpose``, ``reverse``, ``where`` ...), so results are computed on the
engine and gradients come from autograd.
"""

import builtins
import numbers

import numpy as _onp

from .. import ndarray as _nd
from .multiarray import _default_float

__all__ = [
    "append",
    "argsort",
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "broadcast_to",
    "column_stack",
    "copy",
    "cumsum",
    "diag",
    "diagflat",
    "diagonal",
    "diff",
    "dsplit",
    "dstack",
    "ediff1d",
    "flip",
    "fliplr",
    "flipud",
    "hsplit",
    "hstack",
    "logspace",
    "meshgrid",
    "moveaxis",
    "msort",
    "ndim",
    "repeat",
    "resize",
    "roll",
    "rollaxis",
    "rot90",
    "row_stack",
    "shape",
    "size",
    "sort",
    "split",
    "swapaxes",
    "take",
    "take_along_axis",
    "tile",
    "trace",
    "tril",
    "triu",
    "vsplit",
    "vstack",
]


def _a(x):
    from . import asarray

    return asarray(x)


def _ax(axis, ndim, fn):
    """``axis`` normalised to ``[0, ndim)``, or a clear error naming ``fn``."""
    a = int(axis)
    a = a + ndim if a < 0 else a
    if not 0 <= a < ndim:
        # MXNet's np operators raise MXNetError here; MXNetValueError is also a ValueError
        from ..base import MXNetValueError

        raise MXNetValueError(f"{fn}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return a


def _one_or_list(res):
    return res[0] if len(res) == 1 else res


def atleast_1d(*arys):
    """Inputs viewed as arrays with at least one dimension (a list for several inputs)."""
    return _one_or_list([x.reshape(1) if x.ndim == 0 else x for x in map(_a, arys)])


def atleast_2d(*arys):
    """Inputs as arrays with at least two dimensions (1-d ``(n,)`` becomes ``(1, n)``)."""
    out = []
    for x in map(_a, arys):
        out.append(x.reshape(1, 1) if x.ndim == 0 else x.reshape(1, -1) if x.ndim == 1 else x)
    return _one_or_list(out)


def atleast_3d(*arys):
    """Inputs as arrays with at least three dimensions (``(n,)`` -> ``(1, n, 1)``,
    ``(m, n)`` -> ``(m, n, 1)``)."""
    out = []
    for x in map(_a, arys):
        if x.ndim == 0:
            x = x.reshape(1, 1, 1)
        elif x.ndim == 1:
            x = x.reshape(1, -1, 1)
        elif x.ndim == 2:
            x = x.reshape(x.shape + (1,))
        out.append(x)
    return _one_or_list(out)


def _cat(arrays, axis, fn):
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{fn}: need at least one array to concatenate")
    return _nd.concat(*arrays, dim=axis)


def hstack(tup):
    """Stack column-wise (along axis 1; axis 0 for 1-d inputs)."""
    arrs = [atleast_1d(x) for x in tup]
    return _cat(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, "hstack")


def vstack(tup):
    """Stack row-wise (1-d inputs become rows)."""
    return _cat([atleast_2d(x) for x in tup], 0, "vstack")


row_stack = vstack


def dstack(tup):
    """Stack along the third axis."""
    return _cat([atleast_3d(x) for x in tup], 2, "dstack")


def column_stack(tup):
    """1-d arrays as columns of a 2-d array (2-d arrays stacked as they are)."""
    arrs = []
    for x in map(_a, tup):
        arrs.append(x.reshape(-1, 1) if x.ndim < 2 else x)
    return _cat(arrs, 1, "column_stack")


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections, or at the given indices (a list of arrays)."""
    ary = _a(ary)
    ax = _ax(axis, ary.ndim, "split")
    if isinstance(indices_or_sections, numbers.Integral):
        n = ary.shape[ax]
        if indices_or_sections <= 0 or n % indices_or_sections:
            raise ValueError(f"split: array split does not result in an equal division "
                             f"(axis {axis} of length {n} into {indices_or_sections})")
        step = n // indices_or_sections
        indices_or_sections = [step * i for i in range(1, indices_or_sections)]
    return _split_at(ary, list(indices_or_sections), ax)


def _split_at(ary, idx, ax):
    n = ary.shape[ax]
    bounds = [0] + [builtins.min(builtins.max(int(i) + n if i < 0 else int(i), 0), n)
                    for i in idx] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        hi = builtins.max(lo, hi)
        out.append(_nd.slice_axis(ary, axis=ax, begin=lo, end=hi))
    return out


def array_split(ary, indices_or_sections, axis=0):
    """Like :func:`split`, but sections may be unequal (the first ones one longer)."""
    ary = _a(ary)
    ax = _ax(axis, ary.ndim, "array_split")
    if isinstance(indices_or_sections, numbers.Integral):
        s = int(indices_or_sections)
        if s <= 0:
            raise ValueError("array_split: number sections must be larger than 0")
        n = ary.shape[ax]
        sizes = [n // s + 1] * (n % s) + [n // s] * (s - n % s)
        idx = list(_onp.cumsum(sizes)[:-1])
        return _split_at(ary, idx, ax)
    return _split_at(ary, list(indices_or_sections), ax)


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-d arrays)."""
    ary = _a(ary)
    if ary.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split along axis 0 (arrays of 2 or more dimensions)."""
    ary = _a(ary)
    if ary.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2 (arrays of 3 or more dimensions)."""
    ary = _a(ary)
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def _axes(axis, ndim, fn):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    return tuple(_ax(a, ndim, fn) for a in axis)


def flip(m, axis=None, out=None):
    """Reverse the order of elements along ``axis`` (all axes when None)."""
    m = _a(m)
    axes = _axes(axis, m.ndim, "flip")
    res = _nd.reverse(m, axis=axes) if axes else m.copy()
    return _out(res, out)


def _out(res, out):
    if out is not None:
        out[...] = res
        return out
    return res


def fliplr(m):
    """Flip along axis 1."""
    m = _a(m)
    if m.ndim < 2:
        raise ValueError("fliplr: input must be at least 2-d")
    return flip(m, 1)


def flipud(m):
    """Flip along axis 0."""
    m = _a(m)
    if m.ndim < 1:
        raise ValueError("flipud: input must be at least 1-d")
    return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    m = _a(m)
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2")
    a0, a1 = _ax(axes[0], m.ndim, "rot90"), _ax(axes[1], m.ndim, "rot90")
    if a0 == a1:
        raise ValueError("rot90: axes must be different")
    k %= 4
    if k == 0:
        return m.copy()
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return flip(m, a1).transpose(perm)
    return flip(m.transpose(perm), a1)


def roll(a, shift, axis=None):
    """Roll elements along ``axis`` (the flattened array when None)."""
    a = _a(a)
    if axis is None:
        return roll(a.reshape(-1), shift, 0).reshape(a.shape)
    shifts = (shift,) if isinstance(shift, numbers.Integral) else tuple(shift)
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("roll: 'shift' and 'axis' should be scalars or 1D sequences of the "
                         "same length")
    res = a
    for s, ax in zip(shifts, axes):
        ax = _ax(ax, a.ndim, "roll")
        n = a.shape[ax]
        s = int(s) % n if n else 0
        if s:
            res = _nd.concat(_nd.slice_axis(res, axis=ax, begin=n - s, end=n),
                             _nd.slice_axis(res, axis=ax, begin=0, end=n - s), dim=ax)
    return res if res is not a else a.copy()


def tile(A, reps):
    """``A`` repeated ``reps`` times per axis (NumPy's rules for unequal lengths)."""
    reps = (reps,) if isinstance(reps, numbers.Integral) else tuple(reps)
    return _nd.tile(_a(A), reps=reps)


def repeat(a, repeats, axis=None):
    """Each element repeated ``repeats`` times (the flattened array when ``axis`` is None)."""
    a = _a(a)
    if not isinstance(repeats, numbers.Integral):
        raise NotImplementedError("repeat: only an integer 'repeats' is supported")
    if axis is None:
        return _nd.repeat(a.reshape(-1), repeats=int(repeats), axis=0)
    return _nd.repeat(a, repeats=int(repeats), axis=_ax(axis, a.ndim, "repeat"))


def swapaxes(a, axis1, axis2):
    """``a`` with two axes interchanged (a new array)."""
    a = _a(a)
    return _nd.swapaxes(a, dim1=_ax(axis1, a.ndim, "swapaxes"), dim2=_ax(axis2, a.ndim,
                                                                          "swapaxes"))


def moveaxis(a, source, destination):
    """Axes moved from ``source`` to ``destination`` (others keep their order)."""
    a = _a(a)
    src = _axes(source, a.ndim, "moveaxis")
    dst = _axes(destination, a.ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("moveaxis: `source` and `destination` arguments must have the same "
                         "number of elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(order)


def rollaxis(a, axis, start=0):
    """Roll ``axis`` backwards until it lies before position ``start``."""
    a = _a(a)
    axis = _ax(axis, a.ndim, "rollaxis")
    start = start + a.ndim if start < 0 else start
    if not 0 <= start <= a.ndim:
        raise ValueError(f"rollaxis: start {start} out of range for dimension {a.ndim}")
    if axis < start:
        start -= 1
    if axis == start:
        return a.copy()
    order = [n for n in range(a.ndim) if n != axis]
    order.insert(start, axis)
    return a.transpose(order)


def broadcast_to(array, shape):
    """``array`` broadcast to ``shape`` (a new array)."""
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(int(d) for d in shape)
    array = _a(array)
    if -2 in shape:  # MXNet's extension: -2 keeps the input's size on that axis
        lead = len(shape) - array.ndim
        shape = tuple(array.shape[ax - lead] if d == -2 and ax >= lead else d
                      for ax, d in enumerate(shape))
    if array.shape == shape:
        return array.copy()
    if len(shape) < array.ndim or _onp.broadcast_shapes(array.shape, shape) != shape:
        raise ValueError(f"broadcast_to: input operand of shape {array.shape} cannot be "
                         f"broadcast to {shape}")
    return _broadcast(array, shape)


def _broadcast(x, shape):
    """``x`` broadcast to the (valid) ``shape``; a 0 there is a size, as in NumPy (the
    legacy operator reads it as "keep"): broadcast to size 1 then take an empty slice."""
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    src = (1,) * lead + tuple(x.shape)
    empty = [ax for ax, d in enumerate(shape) if d == 0 and src[ax] == 1]
    full = tuple(1 if ax in empty else d for ax, d in enumerate(shape))
    res = x.broadcast_to(full)
    for ax in empty:
        res = _nd.slice_axis(res, axis=ax, begin=0, end=0)
    return res


def broadcast_arrays(*args):
    """The inputs broadcast against each other (a list)."""
    arrs = [_a(x) for x in args]
    try:
        shp = _onp.broadcast_shapes(*(x.shape for x in arrs))
    except ValueError as e:
        raise ValueError(f"broadcast_arrays: shapes {[x.shape for x in arrs]} cannot be "
                         f"broadcast together") from e
    return [_broadcast(x, shp) for x in arrs]


def append(arr, values, axis=None):
    """``values`` appended at the end (both flattened when ``axis`` is None)."""
    arr, values = _a(arr), _a(values)
    if axis is None:
        return _nd.concat(arr.reshape(-1), values.reshape(-1).astype(arr._dtype_name), dim=0)
    return _nd.concat(arr, values, dim=_ax(axis, arr.ndim, "append"))


def resize(a, new_shape):
    """A new array of ``new_shape`` filled with ``a``'s data repeated in order."""
    from . import zeros

    a = _a(a)
    new_shape = (new_shape,) if isinstance(new_shape, numbers.Integral) else tuple(new_shape)
    total = int(_onp.prod(new_shape))
    if a.size == 0 or total == 0:
        return zeros(new_shape, dtype=a._dtype_name, ctx=a.context)
    flat = a.reshape(-1)
    reps = -(-total // a.size)
    if reps > 1:
        flat = _nd.tile(flat, reps=(reps,))
    return _nd.slice_axis(flat, axis=0, begin=0, end=total).reshape(new_shape)


def shape(a):
    """The shape of ``a``."""
    return _a(a).shape


def size(a, axis=None):
    """The number of elements (along ``axis``)."""
    a = _a(a)
    return a.size if axis is None else a.shape[_ax(axis, a.ndim, "size")]


def ndim(a):
    """The number of dimensions."""
    return _a(a).ndim


def copy(a):
    """A copy of ``a``."""
    return _a(a).copy()


def diag(v, k=0):
    """The ``k``-th diagonal of a 2-d array, or a 2-d array with 1-d ``v`` on it."""
    v = _a(v)
    if v.ndim not in (1, 2):
        raise ValueError(f"diag: input must be 1- or 2-d, got shape {v.shape}")
    return _nd.diag(v, k=k)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal over ``axis1``/``axis2`` (appended as the last axis)."""
    a = _a(a)
    return _nd.diag(a, k=offset, axis1=_ax(axis1, a.ndim, "diagonal"),
                    axis2=_ax(axis2, a.ndim, "diagonal"))


def diagflat(v, k=0):
    """A 2-d array with the flattened ``v`` on diagonal ``k``."""
    return _nd.diag(_a(v).reshape(-1), k=k)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal. As in MXNet, an input under 2-d or equal axes raise
    ``MXNetError`` (an ``MXNetValueError``, so also a ``ValueError``)."""
    from ..base import MXNetValueError

    a = _a(a)
    if a.ndim < 2:
        raise MXNetValueError(f"trace: the input must be at least 2-d, got shape {a.shape}")
    ax1, ax2 = (_ax(x, a.ndim, "trace") for x in (axis1, axis2))
    if ax1 == ax2:
        raise MXNetValueError(f"trace: axis1 and axis2 cannot refer to the same axis {ax1}")
    return _out(diagonal(a, offset, axis1, axis2).sum(axis=-1, dtype=dtype), out)


def _tri_mask(m, k, lower):
    from . import arange

    r, c = m.shape[-2], m.shape[-1]
    rows = arange(r, dtype="int64", ctx=m.context).reshape(r, 1)
    cols = arange(c, dtype="int64", ctx=m.context).reshape(1, c)
    mask = (cols <= rows + k) if lower else (cols >= rows + k)
    return mask.broadcast_to(m.shape)


def _tri(m, k, lower, fn):
    from . import zeros_like

    m = _a(m)
    if m.ndim == 1:
        m = m.reshape(1, -1).broadcast_to((m.shape[0], m.shape[0]))
    if m.ndim < 2:
        raise ValueError(f"{fn}: input must be at least 1-d, got shape {m.shape}")
    return _nd.where(_tri_mask(m, int(k), lower), m, zeros_like(m))


def tril(m, k=0):
    """The lower triangle (elements above diagonal ``k`` zeroed)."""
    return _tri(m, k, True, "tril")


def triu(m, k=0):
    """The upper triangle (elements below diagonal ``k`` zeroed)."""
    return _tri(m, k, False, "triu")


def _index_array(indices, ctx):
    from . import array

    if isinstance(indices, _nd.NDArray):
        return indices
    return array(_onp.asarray(indices), dtype="int64", ctx=ctx)


def take(a, indices, axis=None, mode="raise", out=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (the flattened array when None).

    ``mode``: ``'raise'`` (out-of-range indices raise ``IndexError``; the bounds are read
    from the engine), ``'clip'`` or ``'wrap'``."""
    a = _a(a)
    if mode not in ("raise", "clip", "wrap"):
        raise ValueError(f"take: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
    idx = _index_array(indices, a.context)
    if axis is None:
        a, axis = a.reshape(-1), 0
    ax = _ax(axis, a.ndim, "take")
    if mode == "raise" and idx.size:
        n = a.shape[ax]
        lo, hi = int(idx.min().item()), int(idx.max().item())
        if lo < -n or hi >= n:
            raise IndexError(f"take: index {hi if hi >= n else lo} is out of bounds for axis "
                             f"{axis} with size {n}")
        idx = _nd.where(idx < 0, idx + n, idx) if lo < 0 else idx
    res = _nd.take(a, idx, axis=ax,
                   mode="wrap" if mode == "wrap" else "clip")
    return _out(res, out)


def take_along_axis(arr, indices, axis):
    """Values of ``arr`` at ``indices`` along ``axis`` (indices broadcast over the rest)."""
    from . import arange, stack

    arr = _a(arr)
    idx = _index_array(indices, arr.context)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    if idx.ndim != arr.ndim:
        raise ValueError(f"take_along_axis: indices (shape {idx.shape}) and arr (shape "
                         f"{arr.shape}) must have the same number of dimensions")
    ax = _ax(axis, arr.ndim, "take_along_axis")
    shp = list(_onp.broadcast_shapes(
        tuple(1 if i == ax else d for i, d in enumerate(arr.shape)),
        tuple(1 if i == ax else d for i, d in enumerate(idx.shape))))
    shp[ax] = idx.shape[ax]
    shp = tuple(shp)
    idx = idx.astype("int64")
    n = arr.shape[ax]
    idx = _nd.where(idx < 0, idx + n, idx)
    grids = []
    for i in range(arr.ndim):
        if i == ax:
            g = idx if idx.shape == shp else idx.broadcast_to(shp)
        else:
            view = [1] * arr.ndim
            view[i] = shp[i]
            g = arange(shp[i], dtype="int64", ctx=arr.context).reshape(view).broadcast_to(shp)
        grids.append(g)
    return _nd.gather_nd(arr, stack(grids, axis=0))


def sort(a, axis=-1, kind=None, order=None):
    """A sorted copy (ascending; the flattened array when ``axis`` is None)."""
    a = _a(a)
    if order is not None:
        raise NotImplementedError("sort: 'order' (structured arrays) is not supported")
    if axis is None:
        a, axis = a.reshape(-1), 0
    return _nd.sort(a, axis=_ax(axis, a.ndim, "sort"))


def argsort(a, axis=-1, kind=None, order=None):
    """Indices that sort ``a`` (int64; the flattened array when ``axis`` is None)."""
    a = _a(a)
    if order is not None:
        raise NotImplementedError("argsort: 'order' (structured arrays) is not supported")
    if axis is None:
        a, axis = a.reshape(-1), 0
    return _nd.argsort(a, axis=_ax(axis, a.ndim, "argsort"), dtype="int64")


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (the flattened array when None).

    The table operator ``_np_cumsum``: one sequential pass per line, added in the
    array's dtype as NumPy and MXNet add (a float16 sum rounds at every step); integers
    keep their dtype (MXNet's np: int32 stays int32), bool accumulates in int64."""
    from ..ndarray.ndarray import invoke

    a = _a(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    ax = _ax(axis, a.ndim, "cumsum")
    if dtype is not None:
        a = a.astype(dtype)
    elif a._dtype_name == "bool":
        a = a.astype("int64")
    res = invoke("_np_cumsum", [a], axis=ax)
    return _out(res, out)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis``."""
    a = _a(a)
    ax = _ax(axis, a.ndim, "diff")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    parts = []
    for extra in (prepend, a, append):
        if extra is None:
            continue
        if extra is a:
            parts.append(a)
            continue
        e = _a(extra) if isinstance(extra, _nd.NDArray) else None
        if e is None:
            shp = list(a.shape)
            shp[ax] = 1
            from . import full

            e = full(tuple(shp), extra, dtype=a._dtype_name, ctx=a.context)
        parts.append(e)
    if len(parts) > 1:
        a = _nd.concat(*parts, dim=ax)
    for _ in range(n):
        m = a.shape[ax]
        if m == 0:
            break
        a = _nd.slice_axis(a, axis=ax, begin=1, end=m) - _nd.slice_axis(a, axis=ax, begin=0,
                                                                         end=m - 1)
    if a._dtype_name == "bool":
        a = a.astype("bool")
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened array."""
    ary = _a(ary).reshape(-1)
    parts = []
    for extra, first in ((to_begin, True), (None, None), (to_end, False)):
        if first is None:
            parts.append(diff(ary))
        elif extra is not None:
            from . import array

            e = extra if isinstance(extra, _nd.NDArray) else array(_onp.atleast_1d(extra),
                                                                   dtype=ary._dtype_name,
                                                                   ctx=ary.context)
            parts.append(e.reshape(-1).astype(ary._dtype_name))
    return parts[0] if len(parts) == 1 else _nd.concat(*parts, dim=0)


def meshgrid(*xi, **kwargs):
    """Coordinate matrices from coordinate vectors (``indexing='xy'`` or ``'ij'``)."""
    indexing = kwargs.pop("indexing", "xy")
    sparse = kwargs.pop("sparse", False)
    kwargs.pop("copy", True)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [_a(x).reshape(-1) for x in xi]
    nd_ = len(xs)
    out = []
    for i, x in enumerate(xs):
        view = [1] * nd_
        view[i] = -1
        if indexing == "xy" and nd_ > 1 and i < 2:
            view[0], view[1] = view[1], view[0]
        out.append(x.reshape(view))
    if not sparse and out:
        shp = _onp.broadcast_shapes(*(o.shape for o in out))
        out = [o.broadcast_to(shp) for o in out]
    return out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, ctx=None):
    """``base ** linspace(start, stop, num)``."""
    from . import linspace

    if axis != 0:
        raise NotImplementedError("logspace: only axis=0 is supported")
    y = linspace(start, stop, num=num, endpoint=endpoint, dtype="float64" if dtype is None or
                 not _onp.issubdtype(_onp.dtype(dtype), _onp.floating) else dtype, ctx=ctx)
    return (float(base) ** y).astype(dtype or _default_float())


def msort(a):
    """A copy sorted along the first axis."""
    return sort(a, axis=0)


