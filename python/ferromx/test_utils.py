"""Testing helpers, following ``mxnet.test_utils`` where ferromx has the same concepts.

``check_numeric_gradient`` takes a Python function of NDArrays (ferromx has no symbols)
and compares the autograd gradient with central finite differences in float64.
"""

import numpy as np

from . import autograd
from . import ndarray as nd
from .context import current_context
from .ndarray import NDArray

__all__ = [
    "almost_equal",
    "assert_allclose",
    "assert_almost_equal",
    "assert_exception",
    "check_numeric_gradient",
    "default_context",
    "default_dtype",
    "get_atol",
    "get_rtol",
    "rand_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "random_arrays",
    "same",
    "set_default_context",
]

_DEFAULT_CTX = [None]

# Default tolerances by dtype, as MXNet's test_utils uses.
_RTOLS = {
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 1e-4,
    np.dtype(np.float64): 1e-5,
}
_ATOLS = {
    np.dtype(np.float16): 1e-1,
    np.dtype(np.float32): 1e-3,
    np.dtype(np.float64): 1e-20,
}


def default_context():
    """Return the context tests should use (``current_context()`` unless overridden)."""
    if _DEFAULT_CTX[0] is not None:
        return _DEFAULT_CTX[0]
    return current_context()


def set_default_context(ctx):
    """Override the context returned by :func:`default_context` (``None`` restores it)."""
    _DEFAULT_CTX[0] = ctx


def default_dtype():
    """Return the default floating dtype (float32)."""
    return np.float32


def _as_numpy(x):
    if isinstance(x, NDArray):
        return x.asnumpy()
    return np.asarray(x)


def _tol(arrays, tol, table, fallback):
    if tol is not None:
        return tol
    vals = []
    for a in arrays:
        dtype = np.dtype(a.dtype) if hasattr(a, "dtype") else np.dtype(np.float64)
        vals.append(table.get(dtype, fallback))
    return max(vals) if vals else fallback


def get_rtol(rtol=None, dtype=np.float32):
    """Return ``rtol`` or the default relative tolerance for ``dtype``."""
    return rtol if rtol is not None else _RTOLS.get(np.dtype(dtype), 1e-5)


def get_atol(atol=None, dtype=np.float32):
    """Return ``atol`` or the default absolute tolerance for ``dtype``."""
    return atol if atol is not None else _ATOLS.get(np.dtype(dtype), 1e-20)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False):
    """Return whether ``|a - b| <= atol + rtol * |b|`` holds everywhere."""
    a_np, b_np = _as_numpy(a), _as_numpy(b)
    rtol = _tol([a_np, b_np], rtol, _RTOLS, 1e-5)
    atol = _tol([a_np, b_np], atol, _ATOLS, 1e-20)
    return bool(np.allclose(a_np, b_np, rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(
    a,
    b,
    rtol=None,
    atol=None,
    names=("a", "b"),
    equal_nan=False,
    use_broadcast=True,
    mismatches=(10, 10),
):
    """Assert that ``a`` and ``b`` (NDArrays, NumPy arrays or numbers) are close.

    The test is ``|a - b| <= atol + rtol * |b|`` elementwise; default tolerances depend on
    the dtypes.  The error message lists the worst mismatches.
    """
    a_np, b_np = _as_numpy(a), _as_numpy(b)
    if not use_broadcast and a_np.shape != b_np.shape:
        raise AssertionError(f"Shapes differ: {names[0]} {a_np.shape} vs {names[1]} {b_np.shape}")
    rtol = _tol([a_np, b_np], rtol, _RTOLS, 1e-5)
    atol = _tol([a_np, b_np], atol, _ATOLS, 1e-20)
    try:
        a_b, b_b = np.broadcast_arrays(a_np, b_np)
    except ValueError:
        raise AssertionError(
            f"Shapes differ: {names[0]} {a_np.shape} vs {names[1]} {b_np.shape}"
        ) from None
    a64 = a_b.astype(np.float64)
    b64 = b_b.astype(np.float64)
    close = np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.all():
        return
    diff = np.abs(a64 - b64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / (atol + rtol * np.abs(b64))
    rel = np.where(np.isnan(rel), np.inf, rel)
    order = np.argsort(-rel, axis=None)[: max(1, mismatches[0])]
    lines = []
    for flat in order:
        idx = np.unravel_index(flat, rel.shape) if rel.ndim else ()
        if close[idx]:
            break
        lines.append(
            f"  at {tuple(int(i) for i in idx)}: {names[0]}={a64[idx]!r} {names[1]}={b64[idx]!r}"
        )
    raise AssertionError(
        f"Items are not equal (rtol={rtol:g}, atol={atol:g}): {int((~close).sum())} of "
        f"{close.size} elements mismatch, worst:\n" + "\n".join(lines)
    )


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """``numpy.testing.assert_allclose`` accepting NDArrays."""
    np.testing.assert_allclose(
        _as_numpy(a), _as_numpy(b), rtol=rtol, atol=atol, equal_nan=equal_nan
    )


def same(a, b):
    """Return whether ``a`` and ``b`` are exactly equal (same shape and values)."""
    return bool(np.array_equal(_as_numpy(a), _as_numpy(b)))


def random_arrays(*shapes):
    """Return NumPy arrays of standard-normal float32 values, one per shape."""
    arrays = [
        (
            np.array(np.random.randn(), dtype=np.float32)
            if len(s) == 0
            else np.random.randn(*s).astype(np.float32)
        )
        for s in shapes
    ]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_ndarray(shape, stype="default", density=None, dtype=None, ctx=None, **kwargs):
    """Return a random NDArray of ``shape`` (standard-normal values, ``dtype`` default float32).

    ferromx has dense storage only; ``stype`` other than ``'default'`` raises.  ``density``,
    when given, zeroes a random ``1 - density`` fraction of the entries.
    """
    if stype != "default":
        raise NotImplementedError(f"ferromx supports only stype='default', got {stype!r}")
    dtype = np.float32 if dtype is None else dtype
    data = np.random.randn(*shape) if len(shape) else np.array(np.random.randn())
    if density is not None:
        if not 0.0 <= density <= 1.0:
            raise ValueError(f"density must be in [0, 1], got {density!r}")
        data = data * (np.random.uniform(size=data.shape) < density)
    if ctx is None:
        ctx = default_context()
    return nd.array(np.asarray(data).astype(dtype), ctx=ctx, dtype=dtype)


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """Return a random 2-D shape with each size in ``[1, dim]`` (``[0, dim]`` if allowed)."""
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """Return a random 3-D shape with each size in ``[1, dim]`` (``[0, dim]`` if allowed)."""
    low = 0 if allow_zero_size else 1
    return (
        np.random.randint(low, dim0 + 1),
        np.random.randint(low, dim1 + 1),
        np.random.randint(low, dim2 + 1),
    )


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """Return a random ``num_dim``-D shape with each size in ``[1, dim]``."""
    low = 0 if allow_zero_size else 1
    return tuple(int(v) for v in np.random.randint(low, dim + 1, size=num_dim))


def check_numeric_gradient(
    sym_fn,
    location,
    aux_states=None,
    numeric_eps=None,
    rtol=None,
    atol=None,
    grad_nodes=None,
    ctx=None,
    eps=None,
    dtype=np.float64,
):
    """Compare the autograd gradient of ``sym_fn`` with central finite differences.

    Parameters
    ----------
    sym_fn : callable
        A function of NDArrays returning one NDArray (ferromx has no symbols).
    location : list of array-like (or dict of name -> array-like)
        The point at which to check; arrays are converted to ``dtype`` (float64).
    numeric_eps, eps : float
        The finite-difference step (default 1e-4; ``eps`` is an alias).
    rtol, atol : float
        Tolerances (defaults 1e-2 and 1e-4).
    grad_nodes : list of int or str, optional
        Which inputs to check (all by default).

    The output is reduced to a scalar with a fixed random projection, so that every
    output element contributes; raises ``AssertionError`` on a mismatch.
    """
    if aux_states:
        raise NotImplementedError("aux_states are not supported by ferromx")
    step = numeric_eps if numeric_eps is not None else (eps if eps is not None else 1e-4)
    rtol = 1e-2 if rtol is None else rtol
    atol = 1e-4 if atol is None else atol
    ctx = default_context() if ctx is None else ctx
    if isinstance(location, dict):
        names = list(location.keys())
        values = [location[k] for k in names]
    else:
        values = list(location) if isinstance(location, (list, tuple)) else [location]
        names = list(range(len(values)))
    points = [np.array(_as_numpy(v), dtype=dtype) for v in values]
    if grad_nodes is None:
        check = list(range(len(points)))
    else:
        check = [names.index(g) if g in names else int(g) for g in grad_nodes]

    def call(arrays):
        if isinstance(location, dict):
            return sym_fn(**dict(zip(names, arrays)))
        return sym_fn(*arrays)

    inputs = [nd.array(p, ctx=ctx, dtype=dtype) for p in points]
    for i in check:
        inputs[i].attach_grad()
    rng = np.random.RandomState(1234)
    with autograd.record():
        out = call(inputs)
        proj_np = (rng.normal(size=out.shape) + 0.5).astype(dtype)
        proj = nd.array(proj_np, ctx=ctx, dtype=dtype)
        total = (out * proj).sum()
    total.backward()
    analytic = {i: inputs[i].grad.asnumpy().astype(np.float64) for i in check}

    def f(arrays_np):
        arrays = [nd.array(a, ctx=ctx, dtype=dtype) for a in arrays_np]
        with autograd.pause():
            res = call(arrays)
        return float(np.sum(res.asnumpy().astype(np.float64) * proj_np))

    for i in check:
        base = points[i]
        numeric = np.zeros(base.shape, dtype=np.float64)
        for idx in np.ndindex(*base.shape):
            orig = base[idx]
            base[idx] = orig + step
            f_plus = f(points)
            base[idx] = orig - step
            f_minus = f(points)
            base[idx] = orig
            numeric[idx] = (f_plus - f_minus) / (2.0 * step)
        assert_almost_equal(
            analytic[i],
            numeric,
            rtol=rtol,
            atol=atol,
            names=(f"autograd gradient of input {names[i]}", "numeric gradient"),
        )


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{exception_type.__name__} was not raised by {f!r}")
