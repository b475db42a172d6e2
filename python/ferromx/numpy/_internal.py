"""``mx.np._internal``: the internal ``_npi`` operators that MXNet 1.9.1's tests and some
user code call directly.

Only the boolean-mask assignments live here (``boolean_mask_assign_scalar`` and
``boolean_mask_assign_tensor``, what ``a[mask] = v`` lowers to in MXNet). They are written
in terms of ``np.ndarray.__setitem__`` with a boolean mask, which runs on the engine.
"""

from ..base import MXNetError

__all__ = ["boolean_mask_assign_scalar", "boolean_mask_assign_tensor"]


def _assign(data, mask, value, start_axis, out, name):
    from . import ndarray

    if not isinstance(data, ndarray) or not isinstance(mask, ndarray):
        raise TypeError(f"{name}: data and mask must be mxnet.numpy.ndarray")
    start = int(start_axis)
    if start < 0 or start + mask.ndim > data.ndim:
        raise MXNetError(
            f"{name}: a mask of shape {mask.shape} at start_axis {start_axis} does not fit "
            f"data of shape {data.shape}"
        )
    if tuple(data.shape[start : start + mask.ndim]) != tuple(mask.shape):
        raise MXNetError(
            f"{name}: mask shape {mask.shape} does not match data shape {data.shape} "
            f"at axis {start}"
        )
    target = data.copy() if out is None else out
    if out is not None and out is not data:
        target[...] = data
    target[(slice(None),) * start + (mask,)] = value
    return target


def boolean_mask_assign_scalar(data, mask, value, start_axis=0, out=None):
    """``data[(:,)*start_axis, mask] = value`` for a scalar ``value``; writes ``out``
    (``out=data`` assigns in place, as MXNet's tests call it) or a copy."""
    return _assign(data, mask, float(value), start_axis, out, "boolean_mask_assign_scalar")


def boolean_mask_assign_tensor(data, mask, value, start_axis=0, out=None):
    """``data[(:,)*start_axis, mask] = value`` for an array ``value`` (the selected
    elements' shape, or broadcastable to it)."""
    return _assign(data, mask, value, start_axis, out, "boolean_mask_assign_tensor")
