"""The NDArray class.

``NDArray`` is the native class from ``ferromx._native``; its arithmetic,
shape, autograd and waiting methods are implemented in Rust. This module adds
the Python-side methods (conversion to NumPy, printing, indexing, fluent
operator methods) to that same class, so every array an operator returns is a
complete ``NDArray`` with no wrapping cost.
"""

import contextlib
import numbers

import numpy as np

from .. import _native
from .._sync import check as _check_sync
from ..base import MXNetError, MXNetTypeError  # noqa: F401 - MXNetError: ndarray.MXNetError, as before
from ..context import Context, _ctx_str

__all__ = ["AsyncCopy", "NDArray", "array", "empty", "invoke", "py_slice"]

NDArray = _native.NDArray
invoke = _native.invoke
#: Python's ``slice`` (MXNet's ``ndarray.py`` names it ``py_slice`` to keep it apart from ``nd.slice``)
py_slice = slice

_NP_DTYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "uint8": np.uint8,
    "int8": np.int8,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
}


def _dtype_name(dtype):
    """Normalises a dtype given as a NumPy type, dtype, or string."""
    if dtype is None:
        return "float32"
    if isinstance(dtype, str):
        if dtype == "bfloat16":
            return dtype
        return np.dtype(dtype).name
    return np.dtype(dtype).name


def _shape_arg(op, shape):
    """Checks a creation routine's ``shape`` (an int or a sequence of ints) and returns it
    as a tuple; otherwise raises a TypeError naming ``op``."""

    def is_int(d):
        return isinstance(d, (numbers.Integral, np.integer)) and not isinstance(d, (bool, np.bool_))

    if is_int(shape):
        return (int(shape),)
    if isinstance(shape, (tuple, list)) and all(is_int(d) for d in shape):
        return tuple(int(d) for d in shape)
    raise MXNetTypeError(f"{op}: shape must be an int or a tuple of ints, got {shape!r}")


def _number_arg(op, name, value):
    """``value`` as a float, or a TypeError naming ``op`` and the argument."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise MXNetTypeError(f"{op}: {name} must be a number, got {value!r}") from None


def _np_dtype(name):
    return _NP_DTYPES.get(name)


# ----------------------------------------------------------------------------- properties


def _dtype(self):
    t = _np_dtype(self._dtype_name)
    return t if t is not None else self._dtype_name


def _context(self):
    kind, i = self._ctx
    return Context(kind, i)


NDArray.dtype = property(_dtype, doc="Element type (a NumPy type, like MXNet).")
NDArray.context = property(_context, doc="The array's device context.")
NDArray.ctx = NDArray.context
NDArray.stype = property(lambda self: "default", doc="Storage type (always 'default').")
NDArray.T = property(lambda self: invoke("transpose", [self]), doc="Transpose.")
NDArray.handle = property(
    lambda self: self._var_id, doc="Engine var id (stands in for MXNet's handle)."
)

# ----------------------------------------------------------------------------- blocking reads


def _to_numpy(self, call):
    _check_sync(call)
    name = self._dtype_name
    if name == "bfloat16":
        return _to_numpy(invoke("cast", [self], dtype="float32"), call)
    out = np.empty(self.shape, dtype=_np_dtype(name))
    self._read_into(out.reshape(-1).view(np.uint8), call)
    return out


def asnumpy(self):
    """Copies the contents into a new NumPy array. Blocks until the value is computed.

    The copy itself runs on the engine; the calling thread waits with the GIL
    released and can be interrupted with Ctrl-C.
    """
    return _to_numpy(self, "asnumpy")


def wait_to_read(self):
    """Blocks until every pending write of this array has run (GIL released)."""
    _check_sync("wait_to_read")
    self._wait_to_read("wait_to_read")


class AsyncCopy:
    """A future for ``asnumpy_async()``: the copy runs on the engine.

    ``done()`` never blocks, ``result(timeout)`` waits (raising ``TimeoutError``
    when it runs out, or the engine error of a failed computation), and
    ``add_done_callback(fn)`` calls ``fn(self)`` once the result is read or
    immediately if it is already done.
    """

    def __init__(self, arr):
        self._dtype = _np_dtype(arr._dtype_name) or np.float32
        src = arr if arr._dtype_name != "bfloat16" else invoke("cast", [arr], dtype="float32")
        self._out = np.empty(src.shape, dtype=self._dtype)
        self._ticket = src._copy_out(self._out.reshape(-1).view(np.uint8), "asnumpy_async")
        self._callbacks = []
        self._finished = False
        self._error = None

    def done(self):
        """Whether the copy finished (never blocks)."""
        return self._finished or self._ticket.done()

    def result(self, timeout=None):
        """The NumPy array; waits up to ``timeout`` seconds (None: forever)."""
        if not self._finished:
            if not self._ticket.wait(timeout):
                raise TimeoutError(f"asnumpy_async: result not ready after {timeout} s")
            try:
                self._ticket.finish()
            except Exception as e:  # noqa: BLE001 - re-raised below, kept for later calls
                self._error = e
            self._finished = True
            for cb in self._callbacks:
                cb(self)
            self._callbacks = []
        if self._error is not None:
            raise self._error
        return self._out

    def exception(self, timeout=None):
        """The engine error of the copy, or None."""
        try:
            self.result(timeout)
        except TimeoutError:
            raise
        except Exception as e:  # noqa: BLE001
            return e
        return None

    def add_done_callback(self, fn):
        """Calls ``fn(self)`` when the result is collected (at once if already done)."""
        if self.done():
            with contextlib.suppress(Exception):  # the callback inspects exception()
                self.result(0)
            fn(self)
        else:
            self._callbacks.append(fn)


def asnumpy_async(self):
    """Starts copying to NumPy on the engine; returns an :class:`AsyncCopy` future."""
    return AsyncCopy(self)


def asscalar(self):
    """The value of a size-1 array as a NumPy scalar (blocks)."""
    if self.size != 1:
        raise ValueError(f"The current array is not a scalar (shape {self.shape})")
    return _to_numpy(self, "asscalar").reshape(())[()]


def item(self):
    """The value of a size-1 array as a Python scalar (blocks)."""
    if self.size != 1:
        raise ValueError(
            f"can only convert an array of size 1 to a Python scalar (shape {self.shape})"
        )
    return _to_numpy(self, "item").reshape(()).item()


def tolist(self):
    """Nested Python lists (blocks)."""
    return _to_numpy(self, "tolist").tolist()


def _bool(self):
    if self.size == 0:
        return False
    if self.size != 1:
        raise ValueError("The truth value of an NDArray with more than one element is ambiguous.")
    return bool(_to_numpy(self, "bool").reshape(()).item())


def _float(self):
    if self.size != 1:
        raise TypeError("only size-1 NDArrays can be converted to Python scalars")
    return float(_to_numpy(self, "float").reshape(()).item())


def _int(self):
    if self.size != 1:
        raise TypeError("only size-1 NDArrays can be converted to Python scalars")
    return int(_to_numpy(self, "int").reshape(()).item())


def _array(self, dtype=None, copy=None):
    """NumPy conversion (NumPy 2 signature). Waits for pending writes first.

    ``copy=False`` shares memory (zero-copy through DLPack; the NDArray's
    storage stays alive while the NumPy array does, and writes through it
    bypass the engine, as MXNet's ``to_dlpack_for_write`` does). Otherwise the
    result is a fresh copy, like ``asnumpy()``.
    """
    if copy is False:
        if dtype is not None and np.dtype(dtype) != np.dtype(self.dtype):
            raise ValueError("__array__(copy=False) cannot change the dtype without a copy")
        _check_sync("__array__")
        return np.from_dlpack(self)
    a = _to_numpy(self, "__array__")
    if dtype is not None:
        a = a.astype(dtype, copy=False)
    return a


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    for i in range(self.shape[0]):
        yield self[i]



_INT_NAMES = ("uint8", "int8", "int32", "int64")


def _int_result(arr, other):
    """Whether ``arr op other`` stays integer (a scalar takes the array's dtype, as in MXNet)."""
    return arr._dtype_name in _INT_NAMES and (
        not isinstance(other, NDArray) or other._dtype_name in _INT_NAMES
    )


def _floordiv(self, other):
    """``self // other``, rounding toward -inf like Python (integer division truncates)."""
    if _int_result(self, other):
        return (self - self % other) / other  # exact: `%` has the divisor's sign
    return (self / other).floor()


def _rfloordiv(self, other):
    if _int_result(self, other):
        return (other - other % self) / self
    return (other / self).floor()


def _matmul(self, other):
    return invoke("dot", [self, other])


NDArray.__floordiv__ = _floordiv
NDArray.__rfloordiv__ = _rfloordiv
NDArray.__matmul__ = _matmul
NDArray.__pos__ = lambda self: self


# ----------------------------------------------------------------------------- construction


# NumPy dtypes ferromx lacks, mapped to the smallest supported dtype that holds every value
_NP_WIDEN = {"int16": "int32", "uint16": "int32", "uint32": "int64", "uint64": "int64"}


def _default_dtype(source_array):
    """The dtype ``array`` gives ``source_array`` when none is asked for: float32, as in
    MXNet's ``nd.array`` (NumPy arrays included)."""
    return "float32"


def _np_default_dtype(source_array):
    """The dtype ``np.array`` keeps for a NumPy array (ferromx lacks int16/uint16/uint32/
    uint64: they widen without loss)."""
    dt = source_array.dtype
    if dt.name in _NP_DTYPES:
        return dt.name
    if dt.name in _NP_WIDEN:
        return _NP_WIDEN[dt.name]
    if dt.kind == "f":  # long double
        return "float64"
    return "float32"  # MXNet's default for everything else


def _to_np(source_array, np_dtype):
    """``source_array`` as a C-ordered NumPy array of ``np_dtype`` (0-d stays 0-d). Out of
    range integers wrap, as MXNet's C cast (and NumPy 1.x) do; NumPy 2 raises for them."""
    try:
        return np.asarray(source_array, dtype=np_dtype, order="C")
    except OverflowError:
        pass
    a = np.asarray(source_array)
    with np.errstate(all="ignore"):
        if a.dtype.kind == "f" and np.dtype(np_dtype).kind in "iu":
            a = a.astype(np.int64)  # truncate, then wrap: 300.5 -> 44 in uint8, as in MXNet
        return np.asarray(a.astype(np_dtype), order="C")


def array(source_array, ctx=None, dtype=None, _np=False):
    """Creates an NDArray by copying ``source_array`` (a NumPy array, list, scalar or NDArray).

    Like MXNet, the default dtype is float32 (for lists, scalars and NumPy arrays of
    any dtype). Scalars and 0-d arrays give 0-d NDArrays, as in MXNet. Out-of-range values
    wrap when cast to an integer dtype. Later writes to the source do not show
    in the result.
    """
    if isinstance(source_array, NDArray):
        res = source_array.copyto(ctx or source_array.context)
        if res._is_np != bool(_np):
            res = res._as_np() if _np else res._as_nd()
        return res.astype(dtype) if dtype is not None else res
    name = _default_dtype(source_array) if dtype is None else _dtype_name(dtype)
    np_name = "float32" if name == "bfloat16" else name
    if np_name not in _NP_DTYPES:
        raise TypeError(
            f"array: unsupported dtype {name!r} (supported: bfloat16, " f"{', '.join(_NP_DTYPES)})"
        )
    try:
        a = _to_np(source_array, _NP_DTYPES[np_name])
    except (ValueError, TypeError, OverflowError) as e:
        raise TypeError(
            f"array: cannot convert {type(source_array).__name__} to an NDArray: {e}"
        ) from e
    res = _native.array_from_buffer(
        a.reshape(-1).view(np.uint8), list(a.shape), np_name, _ctx_str(ctx), _np
    )
    if name == "bfloat16":
        res = invoke("cast", [res], dtype="bfloat16")
    return res


def _rebuild(data, shape, dtype, is_np=False):
    """Unpickling helper (``is_np``: rebuild a ``ferromx.numpy.ndarray``)."""
    return _native.array_from_buffer(
        np.frombuffer(data, dtype=np.uint8).copy(), list(shape), dtype, _ctx_str(None), is_np
    )


def _getstate(self):
    """MXNet's pickled state: ``{'handle': <the array's NDArray record>}``."""
    from ..serialization import dump_record

    return {"handle": bytearray(dump_record(self))}


def _setstate(self, state):
    """Makes this object the array of an MXNet pickled state (``{'handle': record}``). A
    record saved from a GPU array loads on the CPU, as in MXNet without GPUs."""
    from ..serialization import load_record, to_ndarray

    handle = state.get("handle") if isinstance(state, dict) else None
    if handle is None:
        raise ValueError("NDArray.__setstate__: the state has no 'handle' (an NDArray record)")
    arr = to_ndarray(load_record(bytes(handle), "NDArray.__setstate__"))
    if arr is None:
        raise ValueError("NDArray.__setstate__: the record holds no array (MXNet's none array)")
    self._replace_with(arr._as_np() if self._is_np else arr)


NDArray.__getstate__ = _getstate
NDArray.__setstate__ = _setstate


def empty(shape, ctx=None, dtype=None):
    """An uninitialised array (ferromx fills it with zeros)."""
    return invoke(
        "_zeros", [], shape=_shape_arg("empty", shape), ctx=_ctx_str(ctx), dtype=_dtype_name(dtype)
    )


# ----------------------------------------------------------------------------- fluent methods


def _copy(self):
    """A deep copy (a new chunk)."""
    return invoke("_copy", [self])


def _copyto(self, other):
    """Copies into ``other`` (an NDArray, in place) or onto a context (a new array)."""
    if isinstance(other, NDArray):
        if other.shape != self.shape:
            raise ValueError(f"copyto: shape mismatch {self.shape} vs {other.shape}")
        other._slice_assign([], self)
        return other
    ctx = _ctx_str(other)  # validates (no GPU backend) and normalises, e.g. "cpu(1)"
    if ctx == str(self.context):
        return invoke("_copy", [self])
    # cross-context copy: an engine op reading this array and writing a new one on `ctx`
    return _native.copy_to_context(self, ctx)


def _as_in_context(self, ctx):
    """This array if already on ``ctx``, else a copy there."""
    return self if self.context == ctx else self.copyto(ctx)


def _astype(self, dtype, copy=True):
    """Casts to ``dtype`` (a copy; with ``copy=False`` returns self when unchanged)."""
    name = _dtype_name(dtype)
    if not copy and name == self._dtype_name:
        return self
    return invoke("cast", [self], dtype=name)


def _reshape(self, *shape, **kwargs):
    """MXNet reshape with special codes 0, -1, -2, -3, -4 and ``reverse``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if "shape" in kwargs:
        shape = tuple(kwargs.pop("shape"))
    return invoke("reshape", [self], shape=tuple(shape), reverse=kwargs.get("reverse", False))


def _zeros_like(self):
    return invoke("zeros_like", [self])


def _ones_like(self):
    return invoke("ones_like", [self])


def _as_np_ndarray(self):
    """This array as a ``ferromx.numpy.ndarray``, sharing storage, engine var and autograd
    (zero-copy; a NumPy-semantics array returns itself)."""
    return self if self._is_np else self._as_np()


def _as_nd_ndarray(self):
    """This array as a legacy ``NDArray``, sharing storage, engine var and autograd
    (zero-copy; a legacy array returns itself)."""
    return self._as_nd() if self._is_np else self


NDArray.as_np_ndarray = _as_np_ndarray
NDArray.as_nd_ndarray = _as_nd_ndarray
NDArray.copy = _copy
NDArray.__copy__ = _copy
NDArray.__deepcopy__ = lambda self, memo: _copy(self)
NDArray.copyto = _copyto
NDArray.as_in_context = _as_in_context
NDArray.as_in_ctx = _as_in_context
NDArray.astype = _astype
NDArray.reshape = _reshape
NDArray.zeros_like = _zeros_like
NDArray.ones_like = _ones_like
NDArray.wait_to_write = NDArray.wait_to_write


# The printing and indexing methods live in their own modules, which import this one.
from ._indexing import (
    _basic_indexing_slice_is_contiguous,
    _getitem,
    _norm_index,  # noqa: F401
    _setitem,
)
from ._printing import _f32_exp_formatter, _fmt, _np_str  # noqa: F401

NDArray.asnumpy = asnumpy
NDArray.wait_to_read = wait_to_read
NDArray.asnumpy_async = asnumpy_async
NDArray.asscalar = asscalar
NDArray.item = item
NDArray.tolist = tolist
NDArray.__bool__ = _bool
NDArray.__float__ = _float
NDArray.__int__ = _int
NDArray.__array__ = _array
NDArray.__repr__ = _fmt
NDArray.__str__ = _fmt
NDArray.__iter__ = _iter
NDArray.__getitem__ = _getitem
NDArray.__setitem__ = _setitem
NDArray._basic_indexing_slice_is_contiguous = staticmethod(_basic_indexing_slice_is_contiguous)
NDArray.__array_priority__ = 1000.0
