"""Tolerances and array comparisons of ``mxnet.test_utils`` (host NumPy, as MXNet's are)."""

import numbers

import numpy as np

__all__ = [
    "almost_equal",
    "assert_allclose",
    "assert_almost_equal",
    "assert_almost_equal_ignore_nan",
    "assert_almost_equal_with_err",
    "assert_exception",
    "checkShapes",
    "collapse_sum_like",
    "compare_ndarray_tuple",
    "default_atols",
    "default_numeric_eps",
    "default_rtols",
    "effective_dtype",
    "get_atol",
    "get_etol",
    "get_rtol",
    "get_tolerance",
    "get_tols",
    "locationError",
    "np_reduce",
    "same",
    "same_array",
]

_EXACT = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)


def default_rtols():
    """Default relative tolerance per dtype (0 for integer and boolean types)."""
    out = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
    out.update({np.dtype(t): 0 for t in _EXACT})
    return out


def default_atols():
    """Default absolute tolerance per dtype (0 for integer and boolean types)."""
    out = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}
    out.update({np.dtype(t): 0 for t in _EXACT})
    return out


def default_numeric_eps():
    """Default finite-difference step per floating dtype (powers of two)."""
    return {np.dtype(np.float16): 1.0 / 2**6, np.dtype(np.float32): 1.0 / 2**9,
            np.dtype(np.float64): 1.0 / 2**14}


def _dtype_of(dat):
    dtype = getattr(dat, "dtype", None)
    if dtype is None:
        return np.asarray(dat).dtype
    try:
        return np.dtype(dtype)
    except TypeError:  # bfloat16 and other names NumPy lacks: compare as float32
        return np.dtype(np.float32)


def effective_dtype(dat):
    """The dtype that decides the tolerance for ``dat``: its own (ferromx has no TF32 GPUs,
    which is when MXNet answers float16 for float32 data)."""
    return _dtype_of(dat)


def get_tolerance(dat, tol, default_tol):
    """``tol`` when it is a number, else ``tol[dtype]`` (a dict) or ``default_tol[dtype]``."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = {} if tol is None else tol
    if dtype in tol:
        return tol[dtype]
    if dtype not in default_tol:
        raise KeyError(f"no default tolerance for dtype {dtype}")
    return default_tol[dtype]


def get_tols(x, y, rtol, atol):
    """``(rtol, atol)`` for comparing ``x`` with ``y``: the larger default of the two dtypes
    for each one not given."""
    if isinstance(x, numbers.Number):
        x = np.array(x)
    if isinstance(y, numbers.Number):
        y = np.array(y)
    rtol = max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols()))
    return rtol, atol


def get_atol(atol=None, dtype=np.dtype(np.float64)):  # noqa: B008 - MXNet's signature
    """``atol``, or the default absolute tolerance of ``dtype`` (float64: 1e-20)."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):  # noqa: B008 - MXNet's signature
    """``rtol``, or the default relative tolerance of ``dtype`` (float64: 1e-5)."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol=None):
    """``etol`` (a tolerated fraction of mismatching elements), or 0."""
    return 0 if etol is None else etol


def _host(x):
    """``x`` as a NumPy array (NDArrays and ``mx.np`` arrays copied to host)."""
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return np.asarray(x)


def same(a, b):
    """Whether ``a`` and ``b`` have the same shape and elements."""
    return bool(np.array_equal(_host(a), _host(b)))


def checkShapes(a, b):
    """Raise ``AssertionError`` when the shapes of ``a`` and ``b`` differ."""
    sa, sb = np.shape(_host(a)), np.shape(_host(b))
    if sa != sb:
        raise AssertionError(f"a.shape = {sa} and b.shape = {sb} are not equal")


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether ``|a - b| <= atol + rtol * |b|`` everywhere (``numpy.allclose``).

    Unset tolerances are float64's defaults (rtol 1e-5, atol 1e-20), as in MXNet.
    """
    if not use_broadcast:
        checkShapes(a, b)
    return bool(np.allclose(_host(a), _host(b), rtol=get_rtol(rtol), atol=get_atol(atol),
                            equal_nan=equal_nan))


def locationError(a, b, index, names, maxError=False):
    """A text naming the mismatch at ``index`` and both values there."""
    maximum = "maximum " if maxError else ""
    shown = tuple(int(i) for i in index) if isinstance(index, tuple) else index
    return (f"Location of {maximum}error: {shown}, {names[0]}={float(a[index]):.8f}, "
            f"{names[1]}={float(b[index]):.8f}")


def _find_max_violation(a, b, rtol, atol):
    """``(index, violation)`` of the element furthest outside the tolerance."""
    with np.errstate(invalid="ignore"):
        absdiff = np.where(np.equal(a, b), 0, np.abs(a - b))
    violation = absdiff / (atol + rtol * np.abs(b) + 1e-20)
    violation = np.where(np.isnan(violation), np.inf, violation)
    loc = int(np.argmax(violation))
    return np.unravel_index(loc, violation.shape), float(np.max(violation))


def _mismatch_message(a, b, rtol, atol, names, equal_nan, mismatches):
    """The report of the worst mismatches (at most ``mismatches[0]`` listed)."""
    index, rel = _find_max_violation(a, b, rtol, atol)
    if index == ():
        return f"Error {rel:f} exceeds tolerance rtol={rtol:e}, atol={atol:e}.\n"
    first_index, first_rel = index, rel
    lines = []
    a_tmp, b_tmp = a.copy(), b.copy()
    count = 1
    while count <= a.size:
        if count <= mismatches[0]:
            lines.append(f"{count:3d}: Error {rel:f}  {locationError(a, b, index, names)}")
        a_tmp[index] = b_tmp[index] = 0
        if np.allclose(a_tmp, b_tmp, rtol=rtol, atol=atol, equal_nan=equal_nan):
            break
        count += 1
        if count <= mismatches[1] or mismatches[1] <= 0:
            index, rel = _find_max_violation(a_tmp, b_tmp, rtol, atol)
        else:
            break
    degree = "at least " if mismatches[1] > 0 and count > mismatches[1] else ""
    return (f"Error {first_rel:f} exceeds tolerance rtol={rtol:e}, atol={atol:e} "
            f"(mismatch {degree}{100 * count / a.size:f}%).\n"
            + locationError(a, b, first_index, names, maxError=True) + "\n" + "\n".join(lines))


def _close_on_engine(a, b, rtol, atol, equal_nan):
    """For two floating NDArrays of one shape, dtype and context: whether every element is
    within tolerance, computed on the engine by ``contrib.allclose`` (as MXNet does) instead
    of copying both to host. ``False`` means "not shown close here": the caller then compares
    on host, which also writes the mismatch report."""
    from ..ndarray.ndarray import NDArray

    if not (isinstance(a, NDArray) and isinstance(b, NDArray)):
        return False
    if a.shape != b.shape or a.dtype != b.dtype or a.context != b.context or a.size == 0:
        return False
    if np.dtype(a.dtype).kind != "f":
        return False
    from .. import ndarray as nd

    x = a.as_nd_ndarray() if a._is_np else a
    y = b.as_nd_ndarray() if b._is_np else b
    ok = nd.contrib.allclose(x, y, rtol=float(rtol), atol=float(atol), equal_nan=equal_nan)
    return bool(ok.asscalar())


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Assert ``|a - b| <= atol + rtol * |b|`` elementwise, for NDArrays, NumPy arrays or numbers.

    Parameters
    ----------
    rtol, atol : float, dict of dtype -> float, or None
        Tolerances; unset ones are the larger default of the two dtypes (float32: 1e-4, 1e-3).
    names : pair of str
        Names of ``a`` and ``b`` in the error message.
    equal_nan : bool
        Whether NaNs in the same places compare equal.
    use_broadcast : bool
        When False, the shapes must be equal.
    mismatches : pair of int
        How many mismatches to list, and to look for, in the message.

    Boolean arrays must be exactly equal. Raises ``AssertionError`` with the worst mismatches.
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    if _close_on_engine(a, b, rtol, atol, equal_nan):
        return
    a_np, b_np = _host(a), _host(b)
    if a_np.dtype == np.bool_ and b_np.dtype == np.bool_:
        np.testing.assert_equal(a_np, b_np)
        return
    if np.allclose(a_np, b_np, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    try:
        a_b, b_b = np.broadcast_arrays(a_np, b_np)
    except ValueError:
        raise AssertionError(
            f"Shapes differ: {names[0]} {a_np.shape} vs {names[1]} {b_np.shape}"
        ) from None
    a64 = np.array(a_b, dtype=np.float64)
    b64 = np.array(b_b, dtype=np.float64)
    msg = _mismatch_message(a64, b64, rtol, atol, names, equal_nan, mismatches)
    raise AssertionError(msg)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """:func:`assert_almost_equal` with ``numpy.testing.assert_allclose``'s defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like :func:`assert_almost_equal`, but passes while at most a fraction ``etol`` of the
    elements are outside the tolerance."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan,
                            mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a_np = np.array(_host(a), dtype=np.float64)
    b_np = np.array(_host(b), dtype=np.float64)
    equals = np.isclose(a_np, b_np, rtol=rtol, atol=atol, equal_nan=equal_nan)
    err = 1 - np.count_nonzero(equals) / equals.size
    if err > etol:
        a_b, b_b = np.broadcast_arrays(a_np, b_np)
        raise AssertionError(
            f"error rate {err:f} exceeds etol={etol}:\n"
            + _mismatch_message(a_b.copy(), b_b.copy(), rtol, atol, names, equal_nan, mismatches)
        )


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """:func:`assert_almost_equal` ignoring every position where either array is NaN."""
    a_np, b_np = np.copy(_host(a)), np.copy(_host(b))
    nan_mask = np.logical_or(np.isnan(a_np), np.isnan(b_np))
    a_np[nan_mask] = 0
    b_np[nan_mask] = 0
    assert_almost_equal(a_np, b_np, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(exception_type, '__name__', exception_type)} was not raised "
                         f"by {f!r}")


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """Assert that two (nested) tuples of arrays are almost equal; ``None`` skips."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def same_array(array1, array2):
    """Whether two NDArrays share memory: adding 1 in place to one shows in the other."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce the NumPy array ``dat`` over ``axis`` (int, list-like or None) one axis at a
    time with ``numpy_reduce_func`` (e.g. ``np.sum``), keeping size-1 axes if ``keepdims``."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else list(range(len(dat.shape)))
    axis = [a % max(dat.ndim, 1) if a < 0 else a for a in axis]
    ret = dat
    for i in sorted(axis, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axis:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


def collapse_sum_like(a, shape):
    """Sum the NumPy array ``a`` over the axes that broadcasting ``shape`` to ``a`` adds."""
    if len(a.shape) < len(shape):
        raise ValueError(f"collapse_sum_like: {a.shape} has fewer axes than {shape}")
    if int(np.prod(shape)) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[i + lead]:
            if s != 1:
                raise ValueError(f"collapse_sum_like: {shape} does not broadcast to {a.shape}")
            axes.append(i + lead)
    return np.sum(a, axis=tuple(axes)).reshape(shape)
