"""``ferromx.nd``: MXNet's NDArray API.

Operator functions are generated from the native operator table (each
operator's input and attribute names, in MXNet's positional order), plus
hand-written helpers where MXNet's Python layer does more than call one
operator (scalar handling, ``out=``, creation routines).
"""

import math
import operator

import numpy as np

from .. import _native
from ..context import Context, _ctx_str, current_context
from . import ndarray as _nd_mod
from .ndarray import NDArray, array, empty, invoke, _dtype_name, AsyncCopy
from .ndarray import _number_arg, _shape_arg
from ..base import MXNetIndexError as _MXNetIndexError
from ..base import MXNetTypeError as _MXNetTypeError
from ..base import MXNetValueError as _MXNetValueError

_OPS = {name: (inputs, attrs) for name, inputs, attrs in _native.op_table()}

_UNARY = [
    "negative",
    "abs",
    "sign",
    "square",
    "relu",
    "sqrt",
    "rsqrt",
    "cbrt",
    "exp",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "floor",
    "ceil",
    "round",
    "rint",
    "fix",
    "trunc",
    "reciprocal",
    "sigmoid",
    "softsign",
    "erf",
    "gamma",
    "gammaln",
    "logical_not",
    "degrees",
    "radians",
]
_REDUCE = ["sum", "mean", "prod", "max", "min", "nansum", "nanprod"]
_BINARY = {
    "add": "add",
    "subtract": "sub",
    "multiply": "mul",
    "divide": "div",
    "modulo": "mod",
    "power": "pow",
    "maximum": "maximum",
    "minimum": "minimum",
    "hypot": "hypot",
    "equal": "equal",
    "not_equal": "not_equal",
    "greater": "greater",
    "greater_equal": "greater_equal",
    "lesser": "lesser",
    "lesser_equal": "lesser_equal",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "logical_xor": "logical_xor",
}


def _finish(res, out):
    """Handles MXNet's ``out=`` argument: copy the result into ``out`` and return it."""
    if out is None:
        return res
    if isinstance(out, NDArray) and isinstance(res, NDArray):
        if out is not res:
            if out.shape != res.shape:
                raise ValueError(f"out= has shape {out.shape}, result has {res.shape}")
            out._slice_assign([], res)
        return out
    return res


def _make_op(name, inputs, attrs, public):
    variadic = bool(inputs) and inputs[0].startswith("*")

    def fn(*args, out=None, name=None, **kwargs):  # noqa: ARG001 - `name` as in MXNet
        args = list(args)
        if variadic:
            if args and isinstance(args[0], (list, tuple)):
                ins, rest = list(args[0]), args[1:]
            else:
                ins = [a for a in args if isinstance(a, NDArray)]
                rest = [a for a in args if not isinstance(a, NDArray)]
        else:
            ins, rest = [], []
            for i, a in enumerate(args):
                if i < len(inputs):
                    ins.append(a)
                else:
                    rest.append(a)
            for nm in inputs[len(ins) :]:
                ins.append(kwargs.pop(nm, None))
            for a in ins:
                if a is not None and not isinstance(a, NDArray):
                    raise TypeError(f"{public}: input must be an NDArray, got {type(a).__name__}")
        for nm, v in zip(attrs, rest):
            kwargs[nm] = v
        for k in ("ctx",):
            if k in kwargs or k in attrs:
                kwargs[k] = _ctx_str(kwargs.get(k))
        if "dtype" in kwargs and kwargs["dtype"] is not None:
            kwargs["dtype"] = _dtype_name(kwargs["dtype"])
        return _finish(invoke(name_, ins, **kwargs), out)

    name_ = name
    fn.__name__ = public
    fn.__doc__ = f"``{public}({', '.join(inputs + attrs)})`` — runs on the engine."
    return fn


_g = globals()
for _name, (_inputs, _attrs) in _OPS.items():
    if not _name.startswith("_"):
        _g[_name] = _make_op(_name, list(_inputs), list(_attrs), _name)


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


for _u in (
    "sgd_update",
    "sgd_mom_update",
    "nag_mom_update",
    "adam_update",
    "rmsprop_update",
    "adagrad_update",
):
    if _u in _g:
        _g[_u] = _update_fn(_g[_u])


def _unary_fn(op):
    def fn(data, out=None, name=None):  # noqa: ARG001
        return _finish(invoke("_unary", [data], op=op), out)

    fn.__name__ = op
    fn.__doc__ = f"Elementwise ``{op}`` (runs on the engine)."
    return fn


for _u in _UNARY:
    _g[_u] = _unary_fn(_u)


def _reduce_fn(op):
    def fn(data, axis=None, keepdims=False, exclude=False, out=None, name=None):  # noqa: ARG001
        if axis is None or axis == ():  # MXNet: no axes (even with exclude) means all axes
            axis, exclude = None, False
        return _finish(
            invoke("_reduce", [data], op=op, axis=axis, keepdims=keepdims, exclude=exclude), out
        )

    fn.__name__ = op
    fn.__doc__ = f"``{op}`` over ``axis`` (int or tuple, negative allowed; None: all)."
    return fn


for _r in _REDUCE:
    _g[_r] = _reduce_fn(_r)


# What MXNet's ``nd.<op>`` returns when both arguments are scalars: a Python scalar
# (``nd.add(2, 3) == 5``, ``nd.lesser(2, 3) == 1``). MXNet lacks ``nd.hypot``.
_SCALAR_FNS = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "modulo": operator.mod,
    "power": operator.pow,
    "maximum": lambda x, y: x if x > y else y,  # noqa: FURB136 - `max` is nd.max here
    "minimum": lambda x, y: x if x < y else y,  # noqa: FURB136 - `min` is nd.min here
    "hypot": math.hypot,
    "equal": lambda x, y: 1 if x == y else 0,
    "not_equal": lambda x, y: 1 if x != y else 0,
    "greater": lambda x, y: 1 if x > y else 0,
    "greater_equal": lambda x, y: 1 if x >= y else 0,
    "lesser": lambda x, y: 1 if x < y else 0,
    "lesser_equal": lambda x, y: 1 if x <= y else 0,
    "logical_and": lambda x, y: 1 if x and y else 0,
    "logical_or": lambda x, y: 1 if x or y else 0,
    "logical_xor": lambda x, y: 1 if bool(x) ^ bool(y) else 0,
}
# NumPy's names, for a scalar combined with a NumPy array or list
_NP_NAMES = {"modulo": "mod", "lesser": "less", "lesser_equal": "less_equal"}
_SCALAR_TYPES = (int, float, np.generic)


def _binary_fn(public, op):
    def fn(lhs, rhs, out=None, name=None):  # noqa: ARG001
        if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
            return _finish(invoke("_binary", [lhs, rhs], op=op), out)
        if isinstance(lhs, NDArray):
            return _finish(invoke("_scalar", [lhs], op=op, scalar=float(rhs), reverse=False), out)
        if isinstance(rhs, NDArray):
            return _finish(invoke("_scalar", [rhs], op=op, scalar=float(lhs), reverse=True), out)
        if isinstance(lhs, _SCALAR_TYPES) and isinstance(rhs, _SCALAR_TYPES):
            return _SCALAR_FNS[public](lhs, rhs)
        return array(getattr(np, _NP_NAMES.get(public, public))(lhs, rhs))

    fn.__name__ = public
    fn.__doc__ = f"Broadcasting ``{public}``; either side may be a scalar."
    return fn


for _pub, _op in _BINARY.items():
    _g[_pub] = _binary_fn(_pub, _op)
    _g[
        "broadcast_"
        + (
            "sub"
            if _pub == "subtract"
            else (
                "mul"
                if _pub == "multiply"
                else "div" if _pub == "divide" else "mod" if _pub == "modulo" else _pub
            )
        )
    ] = _g[_pub]
    _g[
        "elemwise_"
        + (
            "sub"
            if _pub == "subtract"
            else "mul" if _pub == "multiply" else "div" if _pub == "divide" else _pub
        )
    ] = _g[_pub]
broadcast_plus = add  # noqa: F821 - generated above
broadcast_minus = subtract  # noqa: F821
broadcast_lesser = lesser  # noqa: F821 - generated above
mod = modulo  # noqa: F821
softrelu = _unary_fn("softrelu")


# ----------------------------------------------------------------------------- creation


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """Zeros of ``shape``."""
    return invoke(
        "_zeros", [], shape=_shape_arg("zeros", shape), ctx=_ctx_str(ctx), dtype=_dtype_name(dtype)
    )


def ones(shape, ctx=None, dtype=None, **kwargs):
    """Ones of ``shape``."""
    return invoke(
        "_ones", [], shape=_shape_arg("ones", shape), ctx=_ctx_str(ctx), dtype=_dtype_name(dtype)
    )


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


def pad(data, mode="constant", pad_width=None, constant_value=0.0, out=None):
    """Pads any rank (MXNet: 4-D/5-D only) in 'constant', 'edge' or 'reflect' mode.

    ``pad_width`` is MXNet's flat tuple: (before_0, after_0, before_1, after_1, ...).
    """
    if pad_width is None or len(pad_width) != 2 * data.ndim:
        raise ValueError(
            f"pad: pad_width must have 2*ndim={2 * data.ndim} entries, got {pad_width}"
        )
    res = data
    for ax in range(data.ndim):
        b, a = int(pad_width[2 * ax]), int(pad_width[2 * ax + 1])
        if b < 0 or a < 0:
            raise ValueError("pad: widths must be non-negative")
        if b == 0 and a == 0:
            continue
        n = res.shape[ax]
        if mode == "constant":
            parts = []
            if b:
                s = list(res.shape)
                s[ax] = b
                parts.append(full(s, constant_value, ctx=res.context, dtype=res.dtype))
            parts.append(res)
            if a:
                s = list(res.shape)
                s[ax] = a
                parts.append(full(s, constant_value, ctx=res.context, dtype=res.dtype))
            res = concat(*parts, dim=ax)
        elif mode in ("edge", "reflect"):
            if mode == "reflect" and (b >= n or a >= n):
                raise ValueError(f"pad: reflect width must be smaller than the axis size {n}")
            if mode == "edge":
                idx = [0] * b + list(range(n)) + [n - 1] * a
            else:
                idx = list(range(b, 0, -1)) + list(range(n)) + list(range(n - 2, n - 2 - a, -1))
            res = take(res, array(idx, dtype="int64", ctx=res.context), axis=ax)  # noqa: F821
        else:
            raise ValueError(f"pad: unknown mode {mode!r} (constant, edge, reflect)")
    return _finish(res, out)


def waitall():
    """Blocks until every pushed operation has finished; raises the first error."""
    from .._sync import check

    check("waitall")
    _native.waitall()


def load(fname):
    """Loads arrays saved by :func:`save` or by MXNet: a list, or a dict when the file
    has names (MXNet's binary NDArray format, see :mod:`ferromx.serialization`).

    Note: files written by older ferromx versions (NumPy ``.npz`` archives, recognised by
    the zip magic) still load, as do ``.npy`` files (a list of one array).
    """
    from .. import serialization

    with open(fname, "rb") as f:
        head = f.read(8)
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
    (readable by MXNet's ``nd.load``), atomically."""
    from .. import serialization

    serialization.save(fname, data)


def from_numpy(ndarray, zero_copy=False):
    """An NDArray from a NumPy array: a copy, or shared memory with ``zero_copy=True``
    (the array must be C-contiguous; NumPy must not write to it while ferromx uses it)."""
    if zero_copy:
        return from_dlpack(ndarray)
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
Pad = pad
crop = slice
Cast = cast  # noqa: F821

from . import random, linalg, contrib  # noqa: E402
from ._fluent import install as _install_fluent  # noqa: E402

_install_fluent(globals())
