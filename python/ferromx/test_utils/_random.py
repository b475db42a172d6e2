"""Random test data of ``mxnet.test_utils``: shapes, arrays and well-conditioned matrices.

The NumPy-array generators draw from ``numpy.random`` (as MXNet's do); NDArrays are made
from them with ``nd.array``. ferromx has dense storage only: the sparse generators raise.
"""

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..context import current_context

__all__ = [
    "assign_each",
    "assign_each2",
    "create_2d_tensor",
    "create_sparse_array",
    "create_sparse_array_zd",
    "create_vector",
    "default_context",
    "default_dtype",
    "get_identity_mat",
    "get_identity_mat_batch",
    "new_matrix_with_real_eigvals_2d",
    "new_matrix_with_real_eigvals_nd",
    "new_orthonormal_matrix_2d",
    "new_sym_matrix_with_real_eigvals_2d",
    "new_sym_matrix_with_real_eigvals_nd",
    "rand_coord_2d",
    "rand_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "rand_sparse_ndarray",
    "random_arrays",
    "random_sample",
    "random_uniform_arrays",
    "set_default_context",
    "shuffle_csr_column_indices",
]


def default_context():
    """The context tests run on: the current default context (``cpu(0)`` unless set)."""
    return current_context()


def set_default_context(ctx):
    """Set this thread's default context (what :func:`default_context` and
    ``mx.current_context()`` return); ``None`` restores ``cpu(0)``."""
    from ..context import Context

    Context._default_ctx.value = ctx


def default_dtype():
    """The default dtype of test data: float32."""
    return np.float32


def random_arrays(*shapes):
    """Standard-normal float32 NumPy arrays, one per shape (a single array for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs):
    """Uniform NumPy arrays (``low`` 0, ``high`` 1, ``dtype`` float32), always a list."""
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError(f"Got unexpected argument/s : {sorted(kwargs)}")
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """``k`` distinct elements of the sequence ``population`` in random order."""
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k={k} must be in [0, {len(population)}]")
    copy = list(population)
    np.random.shuffle(copy)
    return copy[:k]


def _sparse_unsupported(stype):
    return MXNetError(f"storage type {stype!r} is not supported: ferromx has dense storage only "
                      "(sparse csr/row_sparse arrays are out of scope)")


def _validate_csr_generation_inputs(num_rows, num_cols, density, distribution="uniform"):
    """Check the arguments of a csr generator (density in [0, 1], a known distribution)."""
    total_nnz = int(num_rows * num_cols * density)
    if density < 0 or density > 1:
        raise ValueError(f"density has to be between 0 and 1, got {density}")
    if num_rows <= 0 or num_cols <= 0:
        raise ValueError("num_rows or num_cols should be greater than 0")
    if distribution == "powerlaw" and total_nnz < 2 * num_rows:
        raise ValueError(f"not supported for this density: {density} for this shape "
                         f"({num_rows}, {num_cols}): nnz must be at least 2 * num_rows")
    if distribution not in ("uniform", "powerlaw"):
        raise ValueError(f"unknown distribution {distribution!r}")


def shuffle_csr_column_indices(csr):
    """Shuffle the column indices of a csr array; raises (no sparse storage in ferromx)."""
    raise _sparse_unsupported("csr")


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random sparse array; raises ``MXNetError`` (ferromx has no csr/row_sparse storage)."""
    raise _sparse_unsupported(stype)


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=0.5, shuffle_csr_indices=False):
    """A sparse array; raises ``MXNetError`` (ferromx has no sparse storage)."""
    raise _sparse_unsupported(stype)


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """A sparse array; raises ``MXNetError`` (ferromx has no sparse storage)."""
    raise _sparse_unsupported(stype)


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A standard-normal NDArray of ``shape`` (``dtype`` default float32) on ``ctx``.

    ``density`` (ferromx extension for dense arrays) zeroes a random ``1 - density``
    fraction; ``modifier_func`` is applied to each element; ``stype`` other than
    ``'default'`` raises ``MXNetError``.
    """
    if stype != "default":
        raise _sparse_unsupported(stype)
    ctx = ctx if ctx else default_context()
    data = np.asarray(random_arrays(tuple(shape)), dtype=np.float64)
    if density is not None:
        if not 0.0 <= density <= 1.0:
            raise ValueError(f"density must be in [0, 1], got {density!r}")
        data = data * (np.random.uniform(size=data.shape) < density)
    if modifier_func is not None:
        data = np.vectorize(modifier_func, otypes=[np.float64])(data)
    dtype = default_dtype() if dtype is None else dtype
    return nd.array(data, ctx=ctx, dtype=dtype)


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-D shape, each size in ``[1, dim]`` (``[0, dim]`` if ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-D shape, each size in ``[1, dim]`` (``[0, dim]`` if ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return (np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1),
            np.random.randint(low, dim2 + 1))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random ``num_dim``-D shape, each size in ``[1, dim]`` (or ``[0, dim]``)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(v) for v in np.random.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random int64 point ``(x, y)`` with ``x_low <= x < x_high``, ``y_low <= y < y_high``."""
    x = np.random.randint(x_low, x_high, dtype=np.int64)
    y = np.random.randint(y_low, y_high, dtype=np.int64)
    return x, y


def assign_each(the_input, function):
    """``function`` applied to each element of the NumPy array ``the_input`` (float64 out)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function, otypes=[np.float64])(the_input).reshape(np.shape(the_input))


def assign_each2(input1, input2, function):
    """``function(a, b)`` applied elementwise to two same-shape NumPy arrays (float64 out)."""
    if function is None:
        return np.array(input1)
    if np.shape(input1) != np.shape(input2):
        raise ValueError(f"assign_each2: shapes {np.shape(input1)} and {np.shape(input2)} differ")
    return np.vectorize(function, otypes=[np.float64])(input1, input2).reshape(np.shape(input1))


def create_2d_tensor(rows, columns, dtype=np.int64):
    """An NDArray ``(rows, columns)`` whose row ``i`` is all ``i`` (large-tensor tests)."""
    col = nd.arange(0, rows, dtype=dtype).reshape((rows, 1))
    return nd.broadcast_to(col, shape=(rows, columns))


def create_vector(size, dtype=np.int64):
    """The NDArray ``arange(size)`` (large-vector tests)."""
    return nd.arange(0, size, dtype=dtype)


def get_identity_mat(size):
    """The float32 identity NDArray of ``(size, size)``."""
    return nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """Two stacked identity matrices: an NDArray of ``(2, size, size)``."""
    eye = np.eye(size, dtype=np.float32)
    return nd.array(np.stack([eye, eye]))


def new_matrix_with_real_eigvals_2d(n):
    """A well-conditioned ``(n, n)`` NumPy matrix with real eigenvalues in (-10, 10)."""
    while True:
        v = np.random.uniform(-1.0, 1.0, n).reshape(n, 1)
        v = v / np.linalg.norm(v, axis=0, keepdims=True)
        householder = np.eye(n) - 2 * v @ v.T
        q = householder @ np.diag(np.random.uniform(-1.0, 1.0, n))
        if np.linalg.cond(q, 2) < 3:
            break
    return np.linalg.inv(q) @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_matrix_with_real_eigvals_nd(shape):
    """A stack (``shape[:-2]``) of :func:`new_matrix_with_real_eigvals_2d` matrices."""
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random orthonormal ``(n, n)`` NumPy matrix (the Q of a QR decomposition)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric ``(n, n)`` NumPy matrix with eigenvalues in (-10, 10)."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A stack (``shape[:-2]``) of :func:`new_sym_matrix_with_real_eigvals_2d` matrices."""
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(n)]).reshape(shape)
