"""``ferromx.nd``: MXNet's NDArray API.

Operator functions are generated from the native operator table (``_op.py``,
``ferromx._op_gen``): one per operator and alias, with MXNet's parameters.
This module adds the hand-written helpers where MXNet's Python layer does more
than call one operator (creation routines, ``split``, file I/O).
"""

import os

import numpy as np

from .. import _native, _op_gen
from ..context import Context, _ctx_str, current_context
from . import ndarray as _nd_mod
from .ndarray import NDArray, array, empty, invoke, _dtype_name, AsyncCopy
from .ndarray import _number_arg, _shape_arg
from ..base import MXNetIndexError as _MXNetIndexError
from ..base import MXNetTypeError as _MXNetTypeError
from ..base import MXNetValueError as _MXNetValueError

from ._op import *  # noqa: E402,F401,F403 - generated from the operator table
from ._op import finish as _finish
from ._op import __all__ as _GENERATED

_g = globals()
# The unary elementwise operators (from the table; tests walk this list).
_UNARY = [d["name"] for d in _op_gen.TABLE if d["scalar"] is not None and d["scalar"][0] == "unary"]


def _update_fn(gen):
    """An optimizer update op with MXNet's contract: the result goes to ``out`` (a new array
    when omitted), so ``weight`` changes only with ``out=weight``; state inputs (momentum,
    moments, history) are updated in place. The native op updates its first input in place."""

    def fn(weight, *args, out=None, **kwargs):
        if out is weight:
            gen(weight, *args, **kwargs)
            return weight
        return _finish(gen(weight.copy(), *args, **kwargs), out)

    fn.__name__ = gen.__name__
    fn.__doc__ = gen.__doc__ + " Pass ``out=weight`` to update the weight in place."
    return fn


for _d in _op_gen.TABLE:  # operators that write their first input (the weight) in place
    if 0 in _d["mutates"]:
        _g[_d["name"]] = _update_fn(_g[_d["name"]])


# ----------------------------------------------------------------------------- creation


def zeros(shape, ctx=None, dtype=None, out=None, **kwargs):
    """Zeros of ``shape`` (written into ``out`` when given, as MXNet's ``out=``)."""
    res = invoke(
        "_zeros", [], shape=_shape_arg("zeros", shape), ctx=_ctx_str(ctx), dtype=_dtype_name(dtype)
    )
    return _finish(res, out)


def ones(shape, ctx=None, dtype=None, out=None, **kwargs):
    """Ones of ``shape`` (written into ``out`` when given, as MXNet's ``out=``)."""
    res = invoke(
        "_ones", [], shape=_shape_arg("ones", shape), ctx=_ctx_str(ctx), dtype=_dtype_name(dtype)
    )
    return _finish(res, out)


def full(shape, val, ctx=None, dtype=None, out=None):
    """``val`` everywhere."""
    value = _number_arg("full", "val", val)
    res = invoke(
        "_full",
        [],
        shape=_shape_arg("full", shape),
        value=value,
        ctx=_ctx_str(ctx),
        dtype=_dtype_name(dtype),
    )
    return _finish(res, out)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, ctx=None, dtype=None):
    """MXNet ``arange`` (values repeated ``repeat`` times)."""
    return invoke(
        "_arange",
        [],
        start=_number_arg("arange", "start", start),
        stop=None if stop is None else _number_arg("arange", "stop", stop),
        step=_number_arg("arange", "step", step),
        repeat=int(repeat),
        ctx=_ctx_str(ctx),
        dtype=_dtype_name(dtype),
    )


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """``num`` evenly spaced values."""
    return invoke(
        "_linspace",
        [],
        start=_number_arg("linspace", "start", start),
        stop=_number_arg("linspace", "stop", stop),
        num=int(num),
        endpoint=bool(endpoint),
        ctx=_ctx_str(ctx),
        dtype=_dtype_name(dtype),
    )


def eye(N, M=0, k=0, ctx=None, dtype=None):
    """2-d array with ones on diagonal ``k``."""
    return invoke(
        "_eye", [], N=int(N), M=int(M), k=int(k), ctx=_ctx_str(ctx), dtype=_dtype_name(dtype)
    )


def full_like(data, fill_value, out=None):
    """``fill_value`` with the shape, dtype and context of ``data`` (MXNet lacks this; NumPy has it)."""
    return _finish(invoke("full_like", [data], fill_value=float(fill_value)), out)


def concat(*data, dim=1, num_args=None, out=None, name=None):  # noqa: ARG001
    """Joins arrays along ``dim``. ``num_args``, MXNet's count of inputs, is optional and
    checked when given."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = data[0]
    if num_args is not None and num_args != len(data):
        raise _MXNetValueError(f"concat: num_args={num_args}, but {len(data)} inputs were given")
    return _finish(invoke("concat", list(data), dim=dim), out)


def stack(*data, axis=0, num_args=None, out=None, name=None):  # noqa: ARG001
    """Joins arrays along a new ``axis``. ``num_args`` is checked when given."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = data[0]
    if num_args is not None and num_args != len(data):
        raise _MXNetValueError(f"stack: num_args={num_args}, but {len(data)} inputs were given")
    return _finish(invoke("stack", list(data), axis=axis), out)


def concatenate(arrays, axis=0, always_copy=True):  # noqa: ARG001 - copies always
    """MXNet's ``nd.concatenate``: joins a list of arrays along ``axis`` (default 0)."""
    return concat(*arrays, dim=axis)


_NONE_INDEX = -(2**63)  # how `None` entries of slice's begin/end/step reach the operator


def slice(data, begin, end, step=(), out=None, name=None):  # noqa: A001,ARG001 - MXNet's name
    """MXNet ``slice``: ``begin``/``end``/``step`` tuples over the leading axes; ``None``
    entries take the default for their axis. Always a copy."""

    def ints(t):
        return tuple(_NONE_INDEX if v is None else int(v) for v in (t or ()))

    return _finish(invoke("slice", [data], begin=ints(begin), end=ints(end), step=ints(step)), out)


def split(data, num_outputs, axis=1, squeeze_axis=False, out=None, name=None):
    """Splits into ``num_outputs`` equal parts (a list, or one array when ``num_outputs == 1``).
    With ``squeeze_axis=True`` the axis is removed, so its size must equal ``num_outputs``."""
    if squeeze_axis and isinstance(data, NDArray) and isinstance(axis, (int, np.integer)):
        shape = data.shape
        if -len(shape) <= axis < len(shape) and shape[axis] != num_outputs:
            raise _MXNetValueError(
                f"split: with squeeze_axis=True the size of the split axis must equal "
                f"num_outputs, got axis {axis} of size {shape[axis]} and "
                f"num_outputs={num_outputs} (shape {shape})"
            )
    res = invoke("split", [data], num_outputs=num_outputs, axis=axis, squeeze_axis=squeeze_axis)
    if out is not None:
        outs = [out] if isinstance(out, NDArray) else list(out)
        parts = [res] if isinstance(res, NDArray) else res
        if len(outs) != len(parts):
            raise _MXNetValueError(f"split: {len(parts)} outputs, but {len(outs)} out arrays")
        res = [_finish(p, o) for p, o in zip(parts, outs)]
        return res[0] if len(res) == 1 else res
    return res


class _SplitArgError(_MXNetValueError, TypeError):
    """A bad ``indices_or_sections`` (a ``ValueError`` in MXNet, a ``TypeError`` in NumPy)."""


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits at increasing indices (a tuple) or into equal sections (an int), like
    ``numpy.split``; a single piece is returned as an NDArray, several as a list. With
    ``squeeze_axis=True`` every piece must have size 1 along ``axis``, which is removed."""
    if not isinstance(ary, NDArray):
        raise _MXNetTypeError(f"split_v2: ary must be an NDArray, got {type(ary).__name__}")
    shape = ary.shape
    if not _is_int(axis):
        raise _MXNetTypeError(f"split_v2: axis must be an int, got {axis!r}")
    if not -len(shape) <= axis < len(shape):
        raise _MXNetIndexError(f"split_v2: axis {axis} is out of bounds for array of shape {shape}")
    ax = int(axis) % len(shape)
    n = shape[ax]
    if _is_int(indices_or_sections):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise _MXNetValueError(
                f"split_v2: the number of sections must be positive, got {sections} "
                f"(shape {shape}, axis {axis})"
            )
        if n % sections:
            raise _MXNetValueError(
                f"split_v2: array split does not result in an equal division: axis {axis} of "
                f"size {n} into {sections} sections (shape {shape})"
            )
        bounds = [i * (n // sections) for i in range(sections)] + [n]
    elif isinstance(indices_or_sections, (tuple, list)) and all(
        _is_int(i) for i in indices_or_sections
    ):
        idx = [int(i) for i in indices_or_sections]
        bounds = [0] + idx + [n]
        for k, (b, e) in enumerate(zip(bounds[:-1], bounds[1:])):
            if b > e or e > n:
                raise _MXNetValueError(
                    f"split_v2: indices must be increasing and within [0, {n}] (the size of "
                    f"axis {axis} of shape {shape}), got {tuple(idx)}: piece {k} would span "
                    f"[{b}, {e})"
                )
    else:
        raise _SplitArgError(
            f"split_v2: indices_or_sections must be an int or a tuple of ints, got "
            f"{indices_or_sections!r} (shape {shape})"
        )
    if squeeze_axis:
        for k, (b, e) in enumerate(zip(bounds[:-1], bounds[1:])):
            if e - b != 1:
                raise _MXNetValueError(
                    f"split_v2: squeeze_axis=True needs pieces of size 1 along axis {axis}, "
                    f"but piece {k} has size {e - b} (shape {shape})"
                )
    parts = [
        slice_axis(ary, axis=ax, begin=b, end=e)  # noqa: F821
        for b, e in zip(bounds[:-1], bounds[1:])
    ]
    if squeeze_axis:
        parts = [p.squeeze(axis=ax) for p in parts]
    return parts[0] if len(parts) == 1 else parts


def imdecode(str_img, clip_rect=(0, 0, 0, 0), out=None, index=0, channels=3, mean=None):
    """MXNet's deprecated legacy decoder (use ``mx.image.imdecode``): image bytes to a
    (channels, H, W) float32 array (``mean``'s dtype when given) in OpenCV's BGR order,
    clipped to ``clip_rect`` = (x0, y0, x1, y1) (all zero: the whole image), minus
    ``mean`` (channels, h, w). With ``out`` it writes there: a (c, h, w) array, or slice
    ``index`` of an (n, c, h, w) one, and returns ``out``. (MXNet 1.9.1's own function
    fails on Python 3 bytes; this is what its C++ body does.)"""
    from ..image.image import imdecode as _decode

    channels = int(channels)
    if channels not in (1, 3):
        raise _MXNetValueError(f"imdecode: channels must be 1 or 3, got {channels}")
    img = _decode(str_img, flag=0 if channels == 1 else 1, to_rgb=False)
    h, w = img.shape[:2]
    x0, y0, x1, y1 = (int(v) for v in clip_rect)
    if y1 - y0 == 0:
        x0, y0, x1, y1 = 0, 0, w, h
    if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
        raise _MXNetValueError(
            f"imdecode: clip_rect {tuple(clip_rect)} is not inside the {w}x{h} image")
    res = img[y0:y1, x0:x1, :channels].transpose((2, 0, 1))
    res = res.astype(mean.dtype if mean is not None else "float32")
    if mean is not None:
        if mean.shape != res.shape:
            raise _MXNetValueError(
                f"imdecode: mean must have the clipped image's shape {res.shape}, got {mean.shape}")
        res = res - mean
    if out is None:
        return res
    if out.ndim == 4:
        if not 0 <= int(index) < out.shape[0]:
            raise _MXNetIndexError(f"imdecode: index {index} is out of range for out {out.shape}")
        target = out[int(index)]
    elif out.ndim == 3:
        target = out
    else:
        raise _MXNetValueError(f"imdecode: out must be (c, h, w) or (n, c, h, w), got {out.shape}")
    if target.shape != res.shape:
        raise _MXNetValueError(f"imdecode: out slice {target.shape} does not match the image {res.shape}")
    target[:] = res
    return out


def waitall():
    """Blocks until every pushed operation has finished; raises the first error."""
    from .._sync import check

    check("waitall")
    _native.waitall()


def load(fname):
    """Loads arrays saved by :func:`save` or by MXNet: a list, or a dict when the file
    has names (MXNet's binary NDArray format, see :mod:`ferromx.serialization`).

    A safetensors file (recognised by its content) loads as a dict, or as a list when it
    was saved from a list (see :mod:`ferromx._safetensors`).

    Note: files written by older ferromx versions (NumPy ``.npz`` archives, recognised by
    the zip magic) still load, as do ``.npy`` files (a list of one array).
    """
    from .. import _safetensors, serialization

    with open(fname, "rb") as f:
        head = f.read(9)
    if _safetensors.is_safetensors(head, os.path.getsize(fname)):
        return _safetensors.load_safetensors(fname, np_array=False)
    if head.startswith(b"PK\x03\x04"):  # ferromx < MXNet-format: an .npz archive
        with np.load(fname, allow_pickle=False) as f:
            keys = list(f.keys())
            if keys and all(k.startswith("__list__") for k in keys):
                keys.sort(key=lambda k: int(k[8:]))
                return [array(f[k], dtype=f[k].dtype) for k in keys]
            return {k: array(f[k], dtype=f[k].dtype) for k in keys}
    if head.startswith(b"\x93NUMPY"):
        value = np.load(fname, allow_pickle=False)
        return [array(value, dtype=value.dtype)]
    return serialization.load(fname)


def save(fname, data):
    """Saves an NDArray, a list or a dict of str -> NDArray in MXNet's binary format
    (readable by MXNet's ``nd.load``), atomically.

    A file name ending in ``.safetensors`` writes a safetensors file instead (see
    :mod:`ferromx._safetensors`)."""
    from .. import _safetensors, serialization

    if _safetensors.wants_safetensors(fname):
        _safetensors.save_safetensors(fname, data)
        return
    serialization.save(fname, data)


def from_numpy(ndarray, zero_copy=True, array_cls=None):
    """An NDArray from a NumPy array: shared memory by default (``zero_copy=True``, as in
    MXNet 1.9.1: the array must be C-contiguous and is made read-only), or a copy."""
    if zero_copy:
        if not ndarray.flags["C_CONTIGUOUS"]:
            raise ValueError("from_numpy: only C-contiguous arrays are supported for zero-copy, "
                             f"got an array of shape {ndarray.shape}")
        if not ndarray.flags["WRITEABLE"]:  # already shared (read-only): share it again
            try:
                ndarray.flags["WRITEABLE"] = True
            except ValueError as exc:
                raise ValueError("from_numpy: zero-copy needs an array whose memory NumPy "
                                 "may write (this one is a read-only view)") from exc
        res = from_dlpack(ndarray)
        ndarray.flags["WRITEABLE"] = False  # as MXNet: NumPy must not write under the engine
        if array_cls is not None and not isinstance(res, array_cls):
            res = res.as_np_ndarray() if hasattr(array_cls, "as_nd_ndarray") else res
        return res
    return array(ndarray, dtype=ndarray.dtype)


def from_dlpack(dlpack):
    """An NDArray sharing memory with a DLPack capsule or an object with ``__dlpack__``."""
    return _native.from_dlpack(dlpack)


def to_dlpack_for_read(data):
    """A DLPack capsule sharing ``data``'s memory, after its pending writes finish."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A DLPack capsule sharing ``data``'s memory, after pending reads and writes finish."""
    return data.to_dlpack_for_write()


def softmax_cross_entropy(data, label, out=None, name=None):  # noqa: ARG001
    """Sum over the batch of the cross-entropy of ``softmax(data)`` at ``label`` (shape (1,))."""
    return _finish(invoke("softmax_cross_entropy", [data, label]), out)


def smooth_l1(data, scalar=1.0, out=None, name=None):  # noqa: ARG001
    """Smooth L1: ``0.5 (σx)² / σ... `` as MXNet's ``smooth_l1``."""
    s2 = float(scalar) ** 2
    a = abs(data)
    quad = 0.5 * s2 * data * data
    lin = a - 0.5 / s2
    mask = a < (1.0 / s2)
    return _finish(where(mask, quad, lin), out)  # noqa: F821


# MXNet's legacy (symbol-era) operator names
Reshape = reshape  # noqa: F821 - generated above
Flatten = flatten  # noqa: F821
Concat = concat
SliceChannel = split
SwapAxis = swapaxes  # noqa: F821
crop = slice
Cast = cast  # noqa: F821


def Custom(*inputs, op_type=None, **kwargs):  # noqa: N802 - MXNet's name
    """Run the Python operator registered with ``mx.operator.register(op_type)``."""
    from ..operator import Custom as _custom

    return _custom(*inputs, op_type=op_type, **kwargs)


from . import random, linalg, contrib, image  # noqa: E402
from . import _internal  # noqa: F401 - mx.nd._internal
from ._cached_op import CachedOp  # noqa: F401 - mx.nd.CachedOp
from . import _extra  # noqa: E402
from ._extra import *  # noqa: E402,F403
from ._updates import *  # noqa: E402,F403
from . import utils  # noqa: E402
from ._fluent import install as _install_fluent  # noqa: E402
from ._legacy_random import *  # noqa: F403 - MXNet's random_*/sample_* names
from ._mx_semantics import install as _install_mx_semantics

shuffle = random.shuffle

_install_fluent(globals())
_install_mx_semantics(globals())


def __getattr__(name):
    """``nd.numpy``, ``nd.numpy_extension``/``nd.npx`` and ``nd.op``: the modules
    MXNet exposes under ``mx.nd`` (bound lazily: they import this package)."""
    import importlib

    target = {"numpy": "ferromx.numpy", "npx": "ferromx.numpy_extension",
              "numpy_extension": "ferromx.numpy_extension", "op": "ferromx.ndarray._op"}
    if name in target:
        return importlib.import_module(target[name])
    raise AttributeError(f"module 'ferromx.ndarray' has no attribute {name!r}")
