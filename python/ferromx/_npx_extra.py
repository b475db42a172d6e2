"""``npx`` functions composed of engine operators: ``reshape`` (MXNet's special codes),
``arange_like``, ``shape_array``, ``nonzero``, ``constraint_check``."""

import math
import numbers

import numpy as _onp

from . import ndarray as _nd
from .base import MXNetError, MXNetValueError


def _np(x):
    return x if x._is_np else x._as_np()


def _npx_shape(src, newshape, reverse):
    """Target shape for MXNet's ``npx.reshape`` codes (-1 infer, -2 copy, -3 drop a size-1
    axis, -4 copy the rest, -5 merge two, -6 split one into the next two values)."""
    src = list(src)
    spec = list(newshape)
    if reverse:
        src, spec = src[::-1], spec[::-1]
        # a -6 split reads its two values after it; reversed they precede it
        fixed, i = [], 0
        while i < len(spec):
            if i + 2 < len(spec) and spec[i + 2] == -6:
                fixed += [-6, spec[i + 1], spec[i]]
                i += 3
            else:
                fixed.append(spec[i])
                i += 1
        spec = fixed
    out, infer, i, j = [], None, 0, 0
    while i < len(spec):
        c = spec[i]
        if c > 0 or c == 0:
            out.append(c)
            j += 1
        elif c == -1:
            if infer is not None:
                raise ValueError("npx.reshape: only one -1 is allowed")
            infer = len(out)
            out.append(-1)
            j += 1
        elif c == -2:
            out.append(src[j])
            j += 1
        elif c == -3:
            if src[j] != 1:
                raise ValueError(f"npx.reshape: -3 skips only size-1 axes (axis {j} has size "
                                 f"{src[j]})")
            j += 1
        elif c == -4:
            out += src[j:]
            j = len(src)
        elif c == -5:
            out.append(src[j] * src[j + 1])
            j += 2
        elif c == -6:
            d1, d2 = spec[i + 1], spec[i + 2]
            if d1 == -1:
                d1 = src[j] // d2
            if d2 == -1:
                d2 = src[j] // d1
            if d1 * d2 != src[j]:
                raise ValueError(f"npx.reshape: cannot split axis of size {src[j]} into "
                                 f"({spec[i + 1]}, {spec[i + 2]})")
            out += [d1, d2]
            j += 1
            i += 2
        else:
            raise ValueError(f"npx.reshape: invalid shape code {c}")
        i += 1
    if infer is not None:
        known = math.prod(d for d in out if d != -1)
        total = math.prod(src)
        if known == 0 or total % known:
            raise ValueError(f"npx.reshape: cannot infer -1 for shape {tuple(src)} -> {newshape}")
        out[infer] = total // known
    return tuple(out[::-1] if reverse else out)


def reshape(a, newshape, reverse=False, order="C"):
    """Reshape with MXNet's special codes (-1, -2, -3, -4, -5, -6); a new array."""
    if order != "C":
        raise NotImplementedError("npx.reshape: only order='C' is supported")
    a = _np(a)
    if isinstance(newshape, numbers.Integral):
        newshape = (newshape,)
    shape = _npx_shape(a.shape, newshape, reverse)
    if math.prod(shape) != a.size:
        raise ValueError(f"npx.reshape: cannot reshape array of shape {a.shape} into {shape} "
                         f"(from {tuple(newshape)})")
    return a.reshape(shape)


def arange_like(data, start=0.0, step=1.0, repeat=1, ctx=None, axis=None):
    """``start, start + step, ...`` shaped like ``data`` (or of ``data.shape[axis]``)."""
    from . import numpy as _mnp

    n = data.size if axis is None else data.shape[axis]
    cnt = -(-n // int(repeat))
    vals = _mnp.arange(start, start + step * cnt, step, dtype=data._dtype_name,
                       ctx=ctx or data.context)
    vals = _nd.slice_axis(vals, axis=0, begin=0, end=cnt)
    if repeat != 1:
        vals = _nd.slice_axis(_nd.repeat(vals, repeats=int(repeat), axis=0), axis=0, begin=0,
                              end=n)
    res = vals.reshape(data.shape) if axis is None else vals
    return res if data._is_np else res.as_nd_ndarray()


def shape_array(data):
    """``data``'s shape as a 1-d int64 array."""
    from . import numpy as _mnp

    return _mnp.array(_onp.asarray(data.shape, dtype="int64"), dtype="int64", ctx=data.context)


def nonzero(a):
    """Indices of nonzero elements as an ``(N, a.ndim)`` int64 array."""
    from .numpy import argwhere

    return argwhere(_np(a))


def constraint_check(input, msg="Constraint violated!"):
    """``input`` (bool) if every element is true; raises ``msg`` otherwise, as MXNet a
    ``ValueError`` (``MXNetValueError``, also an ``MXNetError``)."""
    from .numpy import all as _all

    if not bool(_all(_np(input))):
        raise MXNetValueError(msg)
    return _np(input).astype("bool")


def get_cuda_compute_capability(ctx):
    """The CUDA compute capability of a GPU context; ferromx has no CUDA devices."""
    if ctx.device_type != "gpu":
        raise ValueError(f"get_cuda_compute_capability: expecting a gpu context, got {ctx}")
    raise MXNetError("get_cuda_compute_capability: ferromx has no CUDA devices")
