"""``mx.nd._internal``: operators under their internal (underscore) names, as MXNet
exposes them: every operator of the table whose name starts with ``_``
(``_plus_scalar``, ``_random_uniform``, ...), generated from the table, plus the region
assignments ``_slice_assign`` / ``_crop_assign`` and ``_slice_assign_scalar`` /
``_crop_assign_scalar``."""

import builtins

from .. import _op_gen
from ._op import _Env
from .ndarray import NDArray


def _region(begin, end, step, ndim, op):
    """MXNet's ``begin``/``end``/``step`` (entries may be ``None``) as an index key."""
    begin, end = tuple(begin), tuple(end)
    step = tuple(step) if step else ()
    if len(begin) != len(end) or len(begin) > ndim or len(step) > len(begin):
        raise ValueError(f"{op}: begin {begin}, end {end} and step {step} must have the same "
                         f"length, at most the data's ndim {ndim}")
    step = step + (None,) * (len(begin) - len(step))
    for s in step:
        if s == 0:
            raise ValueError(f"{op}: step must not be 0, got {step}")
    return tuple(builtins.slice(b, e, s) for b, e, s in zip(begin, end, step))


def _target(lhs, out, op):
    """Where the result goes: ``out`` (filled with ``lhs`` unless it is ``lhs``) or a copy."""
    if not isinstance(lhs, NDArray):
        raise TypeError(f"{op}: data must be an NDArray, got {type(lhs).__name__}")
    if out is None:
        return lhs.copy()
    if out is not lhs:
        if out.shape != lhs.shape:
            raise ValueError(f"{op}: out= has shape {out.shape}, data has {lhs.shape}")
        out[:] = lhs
    return out


def _slice_assign(lhs, rhs, begin=(), end=(), step=(), out=None, name=None):
    """``lhs`` with the region ``begin:end:step`` replaced by ``rhs`` (its shape)."""
    del name
    key = _region(begin, end, step, lhs.ndim, "_slice_assign")
    region = lhs[key].shape
    if tuple(rhs.shape) != tuple(region):
        raise ValueError(f"_slice_assign: rhs has shape {rhs.shape}, the region "
                         f"{begin}:{end}:{step} of {lhs.shape} is {region}")
    dst = _target(lhs, out, "_slice_assign")
    dst[key] = rhs
    return dst


def _slice_assign_scalar(data, scalar=0.0, begin=(), end=(), step=(), out=None, name=None):
    """``data`` with the region ``begin:end:step`` set to ``scalar``."""
    del name
    key = _region(begin, end, step, data.ndim, "_slice_assign_scalar")
    dst = _target(data, out, "_slice_assign_scalar")
    dst[key] = float(scalar)
    return dst


_crop_assign = _slice_assign
_crop_assign_scalar = _slice_assign_scalar

# MXNet's internal names of the update compositions in ``_updates`` (AdamW, multi-tensor LAMB)
from . import _updates as _u

_adamw_update = _u.adamw_update
_mp_adamw_update = _u.mp_adamw_update
_multi_adamw_update = _u.multi_adamw_update
_multi_mp_adamw_update = _u.multi_mp_adamw_update
_multi_lamb_update = _u.multi_lamb_update
_multi_mp_lamb_update = _u.multi_mp_lamb_update
_contrib_group_adagrad_update = _u.group_adagrad_update


def __getattr__(name):
    """An operator of the table by its internal name (built on first use)."""
    d = _op_gen.BY_NAME.get(name)
    if d is None or not name.startswith("_"):
        raise AttributeError(f"module 'mxnet.ndarray._internal' has no attribute {name!r}")
    make = _op_gen.make_ufunc if _op_gen.is_binary(d) else _op_gen.make_op
    fn = make(d, name, _Env)
    globals()[name] = fn
    return fn


def __dir__():
    return sorted(set(globals()) | {n for n in _op_gen.BY_NAME if n.startswith("_")})
