"""The NDArray class.

``NDArray`` is the native class from ``ferromx._native``; its arithmetic,
shape, autograd and waiting methods are implemented in Rust. This module adds
the Python-side methods (conversion to NumPy, printing, indexing, fluent
operator methods) to that same class, so every array an operator returns is a
complete ``NDArray`` with no wrapping cost.
"""

import numbers

import numpy as np

from .. import _native
from .._sync import check as _check_sync
from ..base import MXNetError, MXNetTypeError
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
            try:
                self.result(0)
            except Exception:  # noqa: BLE001 - the callback inspects exception()
                pass
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


_NUMPY2 = int(np.__version__.split(".")[0]) >= 2


def _f32_exp_formatter(a, opts):
    """NumPy 1.23 (MXNet 1.9.1's) float formatter where NumPy 2 would choose differently.

    NumPy 1.23 tests the smallest nonzero magnitude against ``0.0001`` in float64;
    NumPy 2 compares in the array's dtype, so float32 ``1e-4`` (slightly below
    ``0.0001``) prints ``0.0001`` instead of ``1.e-04``. That value is the only case
    left once ``legacy='1.25'`` restores the ``1e8`` cutoff: returns a formatter
    forcing scientific notation for it, else None.
    """
    if a.dtype != np.float32 or a.size == 0 or opts["suppress"] or opts["formatter"]:
        return None
    from numpy._core import arrayprint as _ap

    data = _ap._leading_trailing(a, opts["edgeitems"]) if a.size > opts["threshold"] else a
    finite = data[np.isfinite(data)]
    mags = np.abs(finite[finite != 0])
    if mags.size == 0 or mags.min() != np.float32(0.0001):
        return None

    class _Exp(_ap.FloatingFormat):
        def fillFormat(self, data):
            self.exp_format = True
            super().fillFormat(data)

    return _Exp(data, opts["precision"], opts["floatmode"], False, opts["sign"], legacy=125)


def _np_str(a):
    """``str(a)`` as NumPy 1.23, which MXNet 1.9.1 prints with, formats it (NumPy 2 picks
    scientific notation differently: ``1e6`` in float32 prints ``1.e+06``, not ``1000000.``).
    Other print options (precision, threshold, a legacy mode set by the user) apply."""
    opts = np.get_printoptions()
    if opts["legacy"] is not False or not _NUMPY2:  # NumPy 1.x prints like 1.23
        return str(a)
    with np.printoptions(legacy="1.25"):
        fmt = _f32_exp_formatter(a, opts) if a.ndim else None
        if fmt is None:
            return str(a)
        return np.array2string(a, separator=" ", formatter={"float_kind": fmt})


def _fmt(self):
    a = _to_numpy(self, "print")
    shape = "x".join(str(d) for d in self.shape)  # empty for 0-d arrays, as in MXNet
    return f"\n{_np_str(a)}\n<NDArray {shape} @{self.context}>"


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    for i in range(self.shape[0]):
        yield self[i]


# ----------------------------------------------------------------------------- indexing


def _norm_index(self, key):
    """Turns a basic index into (spec, final_shape) or None for advanced indexing."""
    if not isinstance(key, tuple):
        key = (key,)
    if not self.shape and key == (slice(None),):
        key = ()  # MXNet accepts `x[:]` on a 0-d array as the whole array, like `x[()]`
    # a 0-d integer NumPy array indexes like an int (as in NumPy)
    key = tuple(
        int(k) if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu" else k
        for k in key
    )
    if any(isinstance(k, (NDArray, np.ndarray, list, tuple)) for k in key):
        return None  # a nested tuple is a sequence index, as in NumPy: x[((0, 1),)] == x[[0, 1]]
    shape = self.shape
    # expand Ellipsis
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > len(shape):
        raise IndexError(f"too many indices for array of dimension {len(shape)}")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (len(shape) - n_real))
        else:
            out.append(k)
    if Ellipsis not in key:
        out.extend([slice(None)] * (len(shape) - n_real))
    spec, final, axis = [], [], 0
    for k in out:
        if k is None:
            final.append(1)
            continue
        d = shape[axis]
        if isinstance(k, (bool, np.bool_)):
            return None
        if isinstance(k, (numbers.Integral, np.integer)):
            i = int(k)
            if i < -d or i >= d:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {d}")
            i = i + d if i < 0 else i
            spec.append((axis, i, i + 1, 1))
        elif isinstance(k, slice):
            start, stop, step = k.indices(d)
            if (start, stop, step) != (0, d, 1):
                spec.append((axis, start, stop, step))
            final.append(len(range(start, stop, step)))
        else:
            raise TypeError(
                f"NDArray indices must be integers, slices, None, Ellipsis or arrays, not {type(k).__name__}"
            )
        axis += 1
    return spec, tuple(final)


def _legacy_scalar(self, res):
    """MXNet's legacy ``NDArray`` has no 0-d arrays unless NumPy shape semantics are on:
    ``x[1, 2]`` (and ``x[1]`` of a vector) gives shape ``(1,)``."""
    if res.ndim == 0 and self.ndim > 0 and not self._is_np and not _np_shape():
        return res._reshape([1])
    return res


def _np_shape():
    from ..util import is_np_shape

    return is_np_shape()


def _getitem(self, key):
    return _legacy_scalar(self, _getitem_impl(self, key))


def _getitem_impl(self, key):
    if (
        isinstance(key, (numbers.Integral, np.integer))
        and not isinstance(key, bool)
        and self.ndim > 0
    ):
        i, d = int(key), self.shape[0]
        if not -d <= i < d:  # checked here: a huge int would overflow the native index
            raise IndexError(f"index {i} is out of bounds for axis 0 with size {d}")
        return self._at(i)
    if isinstance(key, tuple):
        key = tuple(list(k) if isinstance(k, tuple) else k for k in key)
    basic = _norm_index(self, key)
    if basic is None:
        return _advanced_getitem(self, key)
    spec, final = basic
    neg = [t for t in spec if t[3] < 0]
    if neg:
        res = self
        pos = [t for t in spec if t[3] > 0]
        if pos:
            res = res._slice(pos)
        for ax, b, e, s in neg:
            res = _neg_slice(res, ax, b, e, s)
        return res._reshape(list(final)) if res.shape != final else res
    if not spec:
        res = self._reshape(list(self.shape))
    else:
        res = self._slice(spec)
    return res._reshape(list(final)) if res.shape != final else res


def _neg_slice(arr, ax, b, e, s):
    idx = list(range(b, e, s))
    return invoke("take", [arr, array(idx, dtype="int64", ctx=arr.context)], axis=ax)


def _np_index(k):
    """An index component for NumPy: NDArrays become integer (or bool mask) NumPy arrays;
    float index arrays, MXNet's default dtype, are cast to int64."""
    if not isinstance(k, NDArray):
        return k
    a = k.asnumpy()
    return a if a.dtype == np.bool_ or a.dtype.kind in "iu" else a.astype(np.int64)


def _check_object_index(k, n):
    """An index list NumPy could not make integer (e.g. holding ints beyond int64): an
    IndexError for an out-of-range integer, as NumPy raises, else a TypeError."""
    for v in k.reshape(-1):
        if not isinstance(v, (numbers.Integral, np.integer)) or isinstance(v, bool):
            raise TypeError(f"NDArray index arrays must hold integers, got {type(v).__name__}")
        if not -n <= int(v) < n:
            raise IndexError(f"index {int(v)} is out of bounds for axis 0 with size {n}")


def _engine_key(self, key):
    """``key`` for the native indexer (``_index``/``_index_assign``, which run on the
    engine): host lists and NumPy arrays become int64 or bool NDArrays, with host
    integer indices bounds-checked here (an IndexError at the call, as in NumPy).
    ``None`` when the key needs the NumPy fallback (several array entries, bools)."""
    items = key if isinstance(key, tuple) else (key,)
    out, n_adv, axis = [], 0, 0
    n_ell = sum(1 for k in items if k is Ellipsis)
    consumed = sum(
        (k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1)
        for k in items
        if k is not None and k is not Ellipsis
    )
    for k in items:
        if isinstance(k, (bool, np.bool_)):
            return None
        if isinstance(k, (list, tuple, np.ndarray)):
            a = np.asarray(k)
            if a.dtype == np.bool_:
                k = array(a, ctx=self.context, dtype="bool")
            elif a.dtype.kind in "iu" or a.size == 0:
                a = a.astype(np.int64)
                if axis < self.ndim and a.size:
                    d = self.shape[axis]
                    if a.min() < -d or a.max() >= d:
                        bad = a[(a < -d) | (a >= d)][0]
                        raise IndexError(
                            f"index {bad} is out of bounds for axis {axis} with size {d}"
                        )
                k = array(a, ctx=self.context, dtype="int64")
            else:
                return None
        if isinstance(k, NDArray):
            n_adv += 1
            axis += max(k.ndim, 1) if k._dtype_name == "bool" else 1
        elif k is Ellipsis:
            axis += max(self.ndim - consumed, 0) if n_ell == 1 else 0
        elif k is not None:
            axis += 1
        out.append(k)
    if n_adv > 1:
        return None
    return tuple(out)


def _assignable(k):
    """Whether the native assignment takes engine key ``k``: an array entry combines
    with full slices (and Ellipsis) only."""
    if not any(isinstance(e, NDArray) for e in k):
        return True
    return all(isinstance(e, NDArray) or e is Ellipsis or e == slice(None) for e in k)


def _engine_getitem(self, k, arrays):
    """``self[key]`` on the engine, from the key converted by ``_engine_key`` (``k``) or,
    when that is None, the leading index arrays from ``_leading_int_arrays``."""
    if k is not None:
        return self._index(k)
    # x[a0, a1, ..., ak-1, :, ...]: one gather_nd.
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    idx = invoke("stack", [a.broadcast_to(shape) for a in arrays], axis=0)
    return invoke("gather_nd", [self, idx])


def _advanced_getitem(self, key):
    k = _engine_key(self, key)
    arrays = _leading_int_arrays(self, key) if k is None else None
    if k is None and arrays is None:
        return _numpy_getitem(self, key)
    return _engine_getitem(self, k, arrays)


def _leading_int_arrays(self, key):
    """The integer index arrays (as int64 NDArrays) of a key made of two or more
    integer arrays on the leading axes followed only by full slices / Ellipsis;
    ``None`` for any other key. Host arrays are bounds-checked here."""
    items = key if isinstance(key, tuple) else (key,)
    arrays = []
    for k in items:
        if isinstance(k, NDArray) and k._dtype_name != "bool":
            arrays.append(k if k._dtype_name == "int64" else k.astype("int64"))
        elif isinstance(k, (list, tuple, np.ndarray)) and np.asarray(k).dtype.kind in "iu":
            a = np.asarray(k).astype(np.int64)
            ax = len(arrays)
            d = self.shape[ax] if ax < self.ndim else 0
            if a.size and (a.min() < -d or a.max() >= d):
                bad = a[(a < -d) | (a >= d)][0]
                raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {d}")
            arrays.append(array(a, ctx=self.context, dtype="int64"))
        else:
            break
    rest = items[len(arrays) :]
    if len(arrays) < 2 or len(arrays) > self.ndim:
        return None
    if any(not (k is Ellipsis or (isinstance(k, slice) and k == slice(None))) for k in rest):
        return None
    try:
        np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError as err:
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together with shapes "
            + " ".join(str(a.shape) for a in arrays)
        ) from err
    return arrays


def _numpy_getitem(self, key):
    """Several advanced entries at once: NumPy's semantics on a host copy."""
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) == 1 and isinstance(key[0], (list, np.ndarray, NDArray)):
        k = key[0]
        if isinstance(k, (list, np.ndarray)):
            k = np.asarray(k)
            if k.dtype == object:
                _check_object_index(k, self.shape[0])
            if k.dtype == np.bool_:
                if k.shape != self.shape[: k.ndim]:
                    raise IndexError(
                        f"boolean index shape {k.shape} does not match array shape {self.shape}"
                    )
                k = np.nonzero(k.reshape(-1) if k.ndim == 1 else k)[0] if k.ndim == 1 else None
                if k is None:
                    return _like(self, array(self.asnumpy()[np.asarray(key[0])], ctx=self.context,
                                             dtype=self._dtype_name))
            idx = array(k, dtype="int64", ctx=self.context)
        else:
            idx = k
            if idx._dtype_name == "bool":
                m = idx.asnumpy()
                return _advanced_getitem(self, (m,))
        n = self.shape[0]
        chk = idx.asnumpy() if idx.size else np.zeros(0)
        if chk.size and (chk.min() < -n or chk.max() >= n):
            raise IndexError(f"index out of bounds for axis 0 with size {n}")
        return invoke("take", [self, idx], axis=0, mode="wrap")
    # general mixed advanced indexing: fall back to NumPy semantics
    np_key = tuple(_np_index(k) for k in key)
    return _like(self, array(self.asnumpy()[np_key], ctx=self.context, dtype=self._dtype_name))


def _like(self, res):
    """``res`` as the same kind of array as ``self`` (``np.ndarray`` or legacy ``NDArray``)."""
    return res._as_np() if self._is_np and not res._is_np else res


def _setitem(self, key, value):
    if isinstance(value, (np.ndarray, list, tuple)):
        value = array(value, ctx=self.context, dtype=self._dtype_name)
    if isinstance(key, slice) and key == slice(None) and not isinstance(value, NDArray):
        self._slice_assign([], value)
        return
    basic = _norm_index(self, key)
    if basic is None or any(t[3] < 0 for t in basic[0]):
        # Advanced entries or negative steps: the native indexer, on the engine.
        k = _engine_key(self, key)
        if k is not None and _assignable(k):
            self._index_assign(k, value)
            return
        arrays = _leading_int_arrays(self, key) if k is None else None
        if k is not None or arrays is not None:
            # Other array keys: the flat positions they select (the same indexing of an
            # `arange`, on the engine), then one assignment through a flat view.
            from . import arange  # the generated nd functions import this module

            pos = arange(0, self.size, dtype="int64", ctx=self.context).reshape(self.shape)
            pos = _engine_getitem(pos, k, arrays)
            if isinstance(value, NDArray) and value.shape != pos.shape:
                if value.size == pos.size and value.ndim > pos.ndim:
                    value = value._reshape(list(pos.shape))
                else:
                    value = value.broadcast_to(pos.shape)
            if isinstance(value, NDArray):
                value = value._reshape([pos.size])
            self._reshape([self.size])._index_assign((pos._reshape([pos.size]),), value)
            return
        # Several masks or mixed masks and arrays: NumPy's semantics on a host copy.
        if not isinstance(key, tuple):
            key = (key,)
        np_key = tuple(_np_index(k) for k in key)
        cur = self.asnumpy()
        cur[np_key] = value.asnumpy() if isinstance(value, NDArray) else value
        self._slice_assign([], array(cur, ctx=self.context, dtype=self._dtype_name))
        return
    spec, _final = basic
    if isinstance(value, NDArray):
        # The value broadcasts against the indexing result (NumPy's rule); it
        # then gets size-1 dims where integers removed axes, so it lines up
        # with the written region.
        region = list(self.shape)
        for ax, b, e, s in spec:
            region[ax] = len(range(b, e, s))
        final = tuple(_final)
        if value.shape != tuple(region):
            if (
                value.shape != final
                and value.size == int(np.prod(final))
                and value.ndim > len(final)
            ):
                value = value._reshape(list(final))  # e.g. a 1-element array into one element
            extra = value.ndim - len(final)
            if extra > 0 and all(d == 1 for d in value.shape[:extra]):
                value = value._reshape(list(value.shape[extra:]))  # NumPy drops leading 1s
            if value.shape != final:
                try:
                    value = value.broadcast_to(final)
                except (MXNetError, ValueError) as err:
                    raise ValueError(
                        f"__setitem__: could not broadcast value of shape {value.shape} "
                        f"into indexing result of shape {final}"
                    ) from err
            if final != tuple(region):
                value = value._reshape(region)
    self._slice_assign(spec, value)


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
NDArray.__array_priority__ = 1000.0


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
