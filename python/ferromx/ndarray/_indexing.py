"""Indexing ``NDArray``: ``__getitem__`` and ``__setitem__``.

Basic indices (integers, slices, None, Ellipsis) become native slices and reshapes;
advanced ones (index arrays, masks) run on the engine through the native indexer,
falling back to NumPy's semantics on a host copy only for keys it does not take.
"""

import builtins
import numbers

import numpy as np

from .. import _native
from ..base import MXNetError
from .ndarray import NDArray, array, invoke


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
            m = len(range(start, stop, step))
            if m <= 1 and step != 1:
                # at most one element: the same selection with step 1 (so a contiguous
                # selection stays a view, as in MXNet)
                start, stop, step = (start, start + 1, 1) if m else (0, 0, 1)
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
    elif len(spec) > 1 and not _native.is_recording() and _contiguous_spec(self.shape, spec):
        # one contiguous block: a view, as in MXNet (recorded: the `slice` operator)
        res = _flat_view(self, spec)
    else:
        res = self._slice(spec)
    return res._reshape(list(final)) if res.shape != final else res


def _contiguous_spec(shape, spec):
    """Whether the basic selection ``spec`` ((axis, begin, end, step), steps > 0) of a
    C-ordered array of ``shape`` is one contiguous block."""
    by_axis = {t[0]: t for t in spec}
    key = [builtins.slice(by_axis[a][1], by_axis[a][2], by_axis[a][3]) if a in by_axis
           else builtins.slice(None) for a in range(len(shape))]
    return _basic_indexing_slice_is_contiguous(key, shape)


def _flat_view(self, spec):
    """The contiguous selection ``spec`` as a view: a range of the flat array, reshaped."""
    shape = self.shape
    by_axis = {t[0]: t for t in spec}
    dims, offset, stride = [], 0, 1
    for a in reversed(range(len(shape))):
        b, e, s = by_axis[a][1:] if a in by_axis else (0, shape[a], 1)
        dims.append(len(range(b, e, s)))
        offset += b * stride
        stride *= shape[a]
    dims.reverse()
    count = int(np.prod(dims))
    if count == 0:
        return self._slice(spec)
    flat = self._reshape([self.size])._slice([(0, offset, offset + count, 1)])
    return flat._reshape(dims)


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
        split = _split_trailing_slices(self, key)
        if split is not None:
            # leading index arrays then slices: gather on the leading axes, then slice
            # the trailing ones (both on the engine, both recorded)
            head, tail = split
            res = _engine_getitem(self, None, _leading_int_arrays(self, head))
            lead = res.ndim - (self.ndim - len(head))
            return res[(slice(None),) * lead + tail]
        res = _reordered_getitem(self, key)
        if res is None:
            res = _newaxis_getitem(self, key)
        return res if res is not None else _numpy_getitem(self, key)
    return _engine_getitem(self, k, arrays)


def _is_int_array(k):
    if isinstance(k, NDArray):
        return k._dtype_name != "bool"
    return isinstance(k, (list, tuple, np.ndarray)) and np.asarray(k).dtype.kind in "iu"


def _newaxis_getitem(self, key):
    """Index arrays mixed with ``None`` (and slices, integers, one Ellipsis), recorded
    like any other index: the key without its ``None`` entries indexes ``self`` (indexed
    axes moved first), then a reshape puts the new axes in, and the broadcast dims go
    where NumPy puts them (first when a ``None`` or slice separates the indexed entries,
    else in place of the first). ``None`` for a key of another form (bool masks)."""
    if not isinstance(key, tuple) or not any(k is None for k in key):
        return None
    n_ell = sum(1 for k in key if k is Ellipsis)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_ell > 1 or n_real > self.ndim or not any(_is_int_array(k) for k in key):
        return None
    items = []
    for k in key:
        items.extend([slice(None)] * (self.ndim - n_real) if k is Ellipsis else [k])
    if not n_ell:
        items.extend([slice(None)] * (self.ndim - n_real))

    def adv(k):
        return _is_int_array(k) or (
            isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, (bool, np.bool_))
        )

    if any(not (k is None or isinstance(k, slice) or adv(k)) for k in items):
        return None
    real = [k for k in items if k is not None]
    adv_axes = [ax for ax, k in enumerate(real) if adv(k)]
    rest_axes = [ax for ax, k in enumerate(real) if not adv(k)]
    moved = self if adv_axes == list(range(len(adv_axes))) else self.transpose(adv_axes + rest_axes)
    res = moved[tuple(real[ax] for ax in adv_axes) + tuple(real[ax] for ax in rest_axes)]
    nb = res.ndim - len(rest_axes)
    rest_dims = iter(res.shape[nb:])
    shape = list(res.shape[:nb]) + [1 if k is None else next(rest_dims) for k in items if not adv(k)]
    res = res.reshape(tuple(shape))
    pos = [i for i, k in enumerate(items) if k is not None and adv(k)]
    if pos != list(range(pos[0], pos[0] + len(pos))) or pos[0] == 0:
        return res
    p = pos[0]  # the non-indexed entries before the first indexed one
    order = list(range(nb, nb + p)) + list(range(nb)) + list(range(nb + p, res.ndim))
    return res.transpose(order)


def _is_adv(k):
    return not isinstance(k, slice)


def _reordered_getitem(self, key):
    """Index arrays/ints mixed with slices anywhere (no ``None``/``...``): the indexed
    axes moved to the front (a recorded transpose), indexed there, and the broadcast
    dims put where NumPy puts them: first when the indexed axes are not adjacent, else
    in place of the first one. ``None`` when the key is of another form."""
    if not isinstance(key, tuple) or len(key) > self.ndim or len(key) < 2:
        return None
    if any(k is None or k is Ellipsis for k in key):
        return None
    key = key + (slice(None),) * (self.ndim - len(key))
    adv = [i for i, k in enumerate(key) if _is_adv(k)]
    if len(adv) < 2 or adv == list(range(len(adv))):
        return None
    rest = [i for i in range(self.ndim) if i not in adv]
    moved = self.transpose(adv + rest)
    head = tuple(key[i] for i in adv)
    tail = tuple(key[i] for i in rest)
    if _leading_int_arrays(moved, head) is None:
        return None
    res = moved[head + tail]
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    if not adjacent:
        return res
    nb = res.ndim - len(rest)  # broadcast dims, now first: move them to adv[0]
    order = list(range(nb, nb + adv[0])) + list(range(nb)) + list(range(nb + adv[0], res.ndim))
    return res.transpose(order)


def _split_trailing_slices(self, key):
    """``(head, tail)`` for a key of index arrays/ints (``head``, which
    :func:`_leading_int_arrays` takes) followed by slices (``tail``);
    ``None`` for any other key."""
    if not isinstance(key, tuple) or len(key) > self.ndim:
        return None
    i = len(key)
    while i > 0 and isinstance(key[i - 1], slice):
        i -= 1
    head, tail = key[:i], key[i:]
    if not tail:
        return None
    if _leading_int_arrays(self, head) is None:
        return None
    return head, tail


def _leading_int_arrays(self, key):
    """The integer index arrays (as int64 NDArrays) of a key made of two or more
    integer arrays on the leading axes followed only by full slices / Ellipsis;
    ``None`` for any other key. Host arrays are bounds-checked here."""
    items = key if isinstance(key, tuple) else (key,)
    arrays = []
    for k in items:
        if isinstance(k, NDArray) and k._dtype_name != "bool":
            arrays.append(k if k._dtype_name == "int64" else k.astype("int64"))
        elif (isinstance(k, (list, tuple, np.ndarray)) and np.asarray(k).dtype.kind in "iu") or (
            isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, (bool, np.bool_))
        ):
            # an integer among index arrays is a 0-d index array (NumPy's rule)
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


_IN_GRAPH_MSG = (
    "Assigning to NDArrays that are already in a computational graph will cause undefined "
    "behavior when evaluating gradients. Please call backward first to clear the graph or do "
    "this out side of a record section. Also note that you cannot use inplace operations like "
    "+=, *=, relu(x, out=x), y[idx]=x, etc inside a record section."
)
_INPLACE_MSG = ("Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with "
                "autograd.")


def _recorded_setitem(self, key, value):
    """``x[key] = value`` under ``autograd.record()``, as MXNet records it: writing into an
    array of the graph raises; a whole-array key (``None``, ``...``, ``:``) with a value of
    the graph is a recorded copy (its gradient flows to the value); any other key with such
    a value is an in-place operation MXNet refuses. Returns whether the write was done."""
    if self._in_graph:
        raise MXNetError(f"__setitem__: {_IN_GRAPH_MSG}")
    if not (isinstance(value, NDArray) and value._in_graph):
        return False
    if not (key is None or key is Ellipsis or (isinstance(key, slice) and key == slice(None))):
        raise MXNetError(f"__setitem__: {_INPLACE_MSG}")
    src = _drop_leading_ones(value, self.ndim)
    src = src if src.shape == self.shape else src.broadcast_to(self.shape)
    self._slice_assign([], src)
    dtype = src._dtype_name

    def grad(g):
        return [g.astype(dtype) if g._dtype_name != dtype else g.copy()]

    _native.record_custom([src], [self], grad)
    return True


def _setitem(self, key, value):
    if isinstance(value, (np.ndarray, list, tuple)):
        value = array(value, ctx=self.context, dtype=self._dtype_name)
    if _native.is_recording() and _recorded_setitem(self, key, value):
        return
    if isinstance(key, slice) and key == slice(None) and not isinstance(value, NDArray):
        self._slice_assign([], value)
        return
    basic = _norm_index(self, key)
    if basic is None or any(t[3] < 0 for t in basic[0]):
        # Advanced entries or negative steps: the native indexer, on the engine.
        k = _engine_key(self, key)
        if basic is not None and isinstance(value, NDArray):
            value = _drop_leading_ones(value, len(basic[1]))
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
                value = _drop_leading_ones(value, pos.ndim)
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


def _drop_leading_ones(value, ndim):
    """``value`` without the leading size-1 dims beyond ``ndim`` (NumPy's assignment rule)."""
    extra = value.ndim - ndim
    if extra > 0 and all(d == 1 for d in value.shape[:extra]):
        return value._reshape(list(value.shape[extra:]))
    return value


def _basic_indexing_slice_is_contiguous(slc_key, shape):
    """Whether ``x[slc_key]`` (one ``slice`` per axis of ``shape``) is a C-contiguous
    block of the C-ordered ``x``: empty or one element, or, ignoring size-1 axes, each
    axis' stride (the source stride times the step) is the product of the sizes to its
    right — NumPy's contiguity rule (MXNet's helper of the same name)."""
    if len(slc_key) != len(shape):
        raise ValueError(f"_basic_indexing_slice_is_contiguous: {len(slc_key)} slices for "
                         f"{len(shape)} axes")
    src_stride, strides, sizes = 1, [], []
    for slc, n in zip(reversed(slc_key), reversed(shape)):
        start, stop, step = slc.indices(n)
        sizes.append(len(range(start, stop, step)))
        strides.append(src_stride * step)
        src_stride *= n
    if 0 in sizes:
        return True
    expected = 1
    for size, stride in zip(sizes, strides):  # innermost axis first
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True
