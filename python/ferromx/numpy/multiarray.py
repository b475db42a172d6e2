"""``ferromx.numpy.ndarray``: MXNet's NumPy-semantics array.

The class is native (``ferromx._native.ndarray``, a subclass of ``NDArray``): it shares
storage, engine vars and autograd with the legacy class, and every operator, method and
arithmetic operator called on it creates its result as an ``ndarray`` in Rust (no Python
wrapper per call). This module adds the methods where MXNet's ``np`` differs from the
legacy ``nd``:

* ``dtype`` is a NumPy dtype object (``dtype('float32')``); ``repr`` is ``array([...])``
  (with ``dtype=`` unless float32 or bool, ``ctx=`` off the CPU), ``str`` NumPy's;
* ``reshape``, ``flatten``, ``ravel``, ``squeeze``, ``T``/``transpose`` return new
  arrays (MXNet's np copies: writing into ``x.reshape(3, 4)`` leaves ``x`` alone), while
  basic first-axis slices (``x[0]``, ``x[1:]``, ``x[...]``, ``x[None]``) stay views;
* comparisons give bool arrays, ``&``/``|``/``^``/``~`` are logical on bool arrays,
  integer true division gives float32 (all in the native dunders);
* full reductions give 0-d arrays; ``sum``/``prod`` of bool are int64, ``mean`` of
  integers float32.
"""

import numbers

import numpy as _onp

from .. import _native
from ..base import MXNetValueError
from ..ndarray import ndarray as _ndmod

ndarray = _native.ndarray
invoke = _native.invoke
NDArray = _native.NDArray

_FLOATS = ("float16", "float32", "float64", "bfloat16")


def _default_float():
    from ..util import is_np_default_dtype

    return "float64" if is_np_default_dtype() else "float32"


def _np_dtype(self):
    name = self._dtype_name
    return _onp.dtype(name) if name != "bfloat16" else name


def _repr(self):
    a = _ndmod._to_numpy(self, "print")
    s = repr(a)
    name = self._dtype_name
    default = _default_float()
    if "dtype=" in s:
        if name == default:
            s = s[: s.rindex(",")] + ")"
    elif name not in (default, "bool"):
        s = s[:-1] + f", dtype={name})"
    ctx = self.context
    if ctx.device_type != "cpu":
        s = s[:-1] + f", ctx={ctx})"
    return s


def _str(self):
    return _ndmod._np_str(_ndmod._to_numpy(self, "print"))


def _shape_of(self, shape):
    """A NumPy ``reshape`` target (ints, one ``-1``) resolved against ``self.size``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(d) for d in shape)
    if sum(1 for d in shape if d == -1) > 1:
        raise MXNetValueError(f"reshape: can only specify one unknown dimension, got {shape}")
    if any(d < -1 for d in shape):
        raise MXNetValueError(f"reshape: negative dimensions are not allowed, got {shape}")
    known = 1
    for d in shape:
        if d != -1:
            known *= d
    if -1 in shape:
        if known == 0 or self.size % known:
            raise MXNetValueError(f"reshape: cannot reshape array of size {self.size} into shape {shape}")
        shape = tuple(self.size // known if d == -1 else d for d in shape)
    elif known != self.size:
        raise MXNetValueError(f"reshape: cannot reshape array of size {self.size} into shape {shape}")
    return shape


def _reshape(self, *shape, order="C", **kwargs):
    """A new array with the same data in ``shape`` (MXNet's np copies; not a view)."""
    if order != "C":
        raise NotImplementedError(f"reshape: order={order!r} is not supported (only 'C')")
    if "newshape" in kwargs:
        shape = (kwargs.pop("newshape"),)
    if kwargs:
        raise TypeError(f"reshape: unexpected keyword arguments {sorted(kwargs)}")
    return self._reshape(list(_shape_of(self, shape))).copy()


def _flatten(self, order="C"):
    """A 1-d copy."""
    return _reshape(self, -1, order=order)


def _transpose(self, *axes):
    """Permuted axes (a new array); ``axes`` as one tuple or separate ints."""
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return invoke("transpose", [self], axes=tuple(axes) if axes else ())


def _squeeze(self, axis=None):
    """Size-1 axes removed (a new array)."""
    if axis is None:
        shape = [d for d in self.shape if d != 1]
    else:
        axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
        if self.ndim == 0 and set(axes) <= {0, -1}:  # NumPy's 0-d special case
            return self.copy()
        axes = {a + self.ndim if a < 0 else a for a in axes}
        for a in axes:
            if not 0 <= a < self.ndim or self.shape[a] != 1:
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has "
                                 f"size not equal to one (axis {axis}, shape {self.shape})")
        shape = [d for i, d in enumerate(self.shape) if i not in axes]
    return self._reshape(shape).copy()


def _accumulator(name, dtype):
    """The dtype ``sum``/``prod`` of a ``name`` array add in when ``dtype`` is asked for
    (MXNet's: a wide accumulator, then the cast; integers in int64, floats in the wider of
    the two)."""
    def size(n):
        return 2 if n == "bfloat16" else _onp.dtype(n).itemsize

    want = _ndmod._dtype_name(dtype)
    if name not in _FLOATS:
        return "int64"
    if want in _FLOATS and size(want) > size(name):
        return want
    return name


def _int_mean(x, axis, dtype, out, keepdims):
    """``mean`` of an integer array in an integer ``dtype``: NumPy's (and MXNet's) sum in
    that dtype (wrapping), divided, truncated."""
    x = x.astype(dtype)
    total = x.sum(axis=axis, keepdims=keepdims)
    count = x.size // max(total.size, 1) if x.size else 0
    res = (total.astype("float64") / max(count, 1)).astype(dtype)
    if out is not None:
        out[...] = res
        return out
    return res


def _reduce(op):
    def fn(self, axis=None, dtype=None, out=None, keepdims=False):
        x = self
        name = self._dtype_name
        if op in ("sum", "prod") and name == "bool":
            x = x.astype("int64")
        elif op == "mean" and name not in _FLOATS:
            if dtype is not None and _ndmod._dtype_name(dtype) not in _FLOATS:
                return _int_mean(x, axis, dtype, out, keepdims)
            x = x.astype(_default_float())
        elif op in ("sum", "prod") and dtype is not None:
            x = x.astype(_accumulator(name, dtype))
        if axis == ():
            res = x.copy()
        else:
            res = invoke(op, [x], axis=axis, keepdims=keepdims)
        if dtype is not None:
            res = res.astype(dtype)
        if out is not None:
            out[...] = res
            return out
        return res

    fn.__name__ = op
    fn.__doc__ = f"``{op}`` over ``axis`` with NumPy's result dtype (0-d for a full reduction)."
    return fn


def _arg(op):
    def fn(self, axis=None, out=None):
        if self.ndim == 0 and axis in (0, -1):  # NumPy (and MXNet) accept these on 0-d
            axis = None
        res = invoke(op, [self], axis=axis).astype("int64")
        if out is not None:
            out[...] = res
            return out
        return res

    fn.__name__ = op
    fn.__doc__ = f"``{op}`` indices (int64)."
    return fn


def _logical(op, name):
    def fn(self, other):
        if not isinstance(other, NDArray):
            if isinstance(other, (numbers.Integral, _onp.integer)) and not isinstance(
                    other, (bool, _onp.bool_)) and self._dtype_name not in _FLOATS + ("bool",):
                return invoke("_npi_bitwise_" + name.split("_")[1] + "_scalar", [self],
                              scalar=int(other))
            if isinstance(other, (bool, _onp.bool_, numbers.Integral)):
                other = _native.invoke_np("_full", [], shape=self.shape, value=float(other),
                                          dtype="bool", ctx=str(self.context))
            else:
                return NotImplemented
        if self._dtype_name not in _FLOATS and other._dtype_name not in _FLOATS and (
                self._dtype_name != "bool" or other._dtype_name != "bool"):
            return invoke("_npi_bitwise_" + name.split("_")[1], [self, other])
        if self._dtype_name != "bool" or other._dtype_name != "bool":
            raise TypeError(f"{name}: only bool arrays are supported (got {self._dtype_name} and "
                            f"{other._dtype_name})")
        return invoke(op, [self, other]).astype("bool")

    fn.__name__ = name
    return fn


def _invert(self):
    if self._dtype_name not in _FLOATS + ("bool",):
        from ._math import invert

        return invert(self)
    if self._dtype_name != "bool":
        raise TypeError(f"invert: only bool arrays are supported (got {self._dtype_name})")
    return invoke("logical_not", [self]).astype("bool")


def _clip(self, min=None, max=None, out=None):
    """Values limited to ``[min, max]`` (``ndarray.clip`` takes ``min``/``max``)."""
    from . import clip

    return clip(self, min, max, out=out)


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """Casts to ``dtype`` (NumPy's signature; ``copy=False`` returns self when unchanged)."""
    return NDArray.astype(self, dtype, copy=copy)


def _item(self, *args):
    """The value as a Python scalar (``item(i)`` picks flat element ``i``)."""
    if args:
        return self.reshape(-1)[int(args[0])].item()
    return NDArray.item(self)


def _copy(self, order="C"):
    """A copy (new storage)."""
    if order not in ("C", "K"):
        raise NotImplementedError(f"copy: order={order!r} is not supported (only 'C')")
    return NDArray.copy(self)


def _format(self, spec):
    """``format(x, spec)``: a 0-d array formats as its scalar, as NumPy's does."""
    if self.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise TypeError(f"unsupported format string {spec!r} for an array of shape {self.shape}")
    return str(self)


def _getitem(self, key):
    if isinstance(key, NDArray) and key.ndim == 0 and key._dtype_name == "bool":
        return self[None] if bool(key) else self[None][0:0]  # NumPy: a 0-d mask adds an axis
    return _ndmod._getitem(self, key)


_INPLACE_MSG = ("Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with "
                "autograd.")


def _setitem(self, key, value):
    from .. import autograd
    from ..base import MXNetError

    if autograd.is_recording() and any(
        isinstance(v, NDArray) and v._grad_req != "null" for v in (self, value)
    ):
        raise MXNetError(f"__setitem__: {_INPLACE_MSG}")
    k = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if isinstance(k, NDArray) and k.ndim == 0 and k._dtype_name == "bool":
        # NumPy: a 0-d mask selects everything or nothing; decided on the engine
        from . import where

        _ndmod._setitem(self, Ellipsis, where(k, value, self).astype(self._dtype_name))
        return
    _ndmod._setitem(self, key, value)


ndarray.copy = ndarray.__copy__ = _copy
ndarray.__format__ = _format
ndarray.__getitem__ = _getitem
ndarray.__setitem__ = _setitem
ndarray.dtype = property(_np_dtype, doc="Element type (a NumPy dtype object, as in MXNet's np).")
ndarray.__repr__ = _repr
ndarray.__str__ = _str
ndarray.reshape = _reshape
ndarray.flatten = _flatten
ndarray.ravel = _flatten
ndarray.transpose = _transpose
ndarray.T = property(lambda self: _transpose(self), doc="Transpose (a new array).")
ndarray.squeeze = _squeeze
ndarray.astype = _astype
ndarray.clip = _clip
ndarray.item = _item
for _op in ("sum", "mean", "prod", "max", "min"):
    setattr(ndarray, _op, _reduce(_op))
ndarray.argmax = _arg("argmax")
ndarray.argmin = _arg("argmin")
ndarray.__and__ = ndarray.__rand__ = _logical("broadcast_logical_and", "logical_and")
ndarray.__or__ = ndarray.__ror__ = _logical("broadcast_logical_or", "logical_or")
ndarray.__xor__ = ndarray.__rxor__ = _logical("broadcast_logical_xor", "logical_xor")
ndarray.__invert__ = _invert
ndarray.__module__ = "ferromx.numpy"

from ._protocol import _NUMPY_ARRAY_FUNCTION_DICT, _NUMPY_ARRAY_UFUNC_DICT  # noqa: F401
