"""``mxnet.numpy_dispatch_protocol``: which official NumPy calls dispatch to ``mx.np``.

MXNet 1.9.1 lists the NumPy functions (``__array_function__``, NEP 18) and ufuncs
(``__array_ufunc__``, NEP 13) that, called with ``mx.np.ndarray`` arguments, run ``mx.np``'s
implementation and return ``mx.np`` arrays; importing this module (``import ferromx`` does)
registers them in ``ferromx.numpy.multiarray``'s dispatch tables. The protocols themselves
are ``ferromx.numpy._protocol``. Names the installed NumPy no longer has (NumPy 2 removed
``sometrue``, ``round_`` and ``product``) stay in the lists, as MXNet's, but have nothing to
register.
"""

import functools

import numpy as _onp

from . import numpy as _mx_np
from .numpy.multiarray import _NUMPY_ARRAY_FUNCTION_DICT, _NUMPY_ARRAY_UFUNC_DICT

__all__ = [
    "_NUMPY_ARRAY_FUNCTION_LIST",
    "_NUMPY_ARRAY_UFUNC_LIST",
    "with_array_function_protocol",
    "with_array_ufunc_protocol",
]


def _protocol_runner(func, kind):
    @functools.wraps(func)
    def run(*args, **kwargs):
        try:
            func(*args, **kwargs)
        except Exception as e:  # MXNet re-raises every failure as RuntimeError
            raise RuntimeError(f"Running function {func.__name__} with NumPy array {kind} "
                               f"protocol failed with exception {e}") from e
    return run


def with_array_function_protocol(func):
    """Runs ``func``; any exception becomes a ``RuntimeError`` naming ``func`` (as in MXNet,
    which also skips ``func`` on NumPy < 1.17; ferromx needs NumPy >= 1.23). Returns ``None``."""
    return _protocol_runner(func, "function")


def with_array_ufunc_protocol(func):
    """Runs ``func``; any exception becomes a ``RuntimeError`` naming ``func`` (as in MXNet,
    which also skips ``func`` on NumPy < 1.15). Returns ``None``."""
    return _protocol_runner(func, "ufunc")


#: NumPy functions dispatched to ``mx.np`` through ``__array_function__`` (MXNet 1.9.1's list)
_NUMPY_ARRAY_FUNCTION_LIST = [
    "all", "any", "sometrue", "argmin", "argmax", "around", "round", "round_", "argsort",
    "sort", "append", "broadcast_arrays", "broadcast_to", "clip", "concatenate", "copy",
    "cumsum", "diag", "diagonal", "diagflat", "dot", "expand_dims", "fix", "flip", "flipud",
    "fliplr", "inner", "insert", "max", "amax", "mean", "min", "amin", "nonzero", "ones_like",
    "atleast_1d", "atleast_2d", "atleast_3d", "prod", "product", "ravel", "repeat", "reshape",
    "roll", "split", "array_split", "hsplit", "vsplit", "dsplit", "squeeze", "stack", "std",
    "sum", "swapaxes", "take", "tensordot", "tile", "transpose", "unique", "unravel_index",
    "diag_indices_from", "delete", "var", "vdot", "vstack", "column_stack", "hstack", "dstack",
    "zeros_like", "linalg.norm", "linalg.cholesky", "linalg.inv", "linalg.solve",
    "linalg.tensorinv", "linalg.tensorsolve", "linalg.pinv", "linalg.eigvals", "linalg.eig",
    "linalg.eigvalsh", "linalg.eigh", "shape", "trace", "tril", "meshgrid", "outer", "einsum",
    "polyval", "shares_memory", "may_share_memory", "quantile", "percentile", "diff",
    "ediff1d", "resize", "where", "full_like", "bincount", "empty_like", "nan_to_num", "isnan",
    "isfinite", "isposinf", "isneginf", "isinf", "pad",
]

#: NumPy ufuncs (by ``__name__``) dispatched to ``mx.np`` through ``__array_ufunc__``
_NUMPY_ARRAY_UFUNC_LIST = [
    "abs", "fabs", "add", "arctan2", "copysign", "degrees", "hypot", "lcm", "subtract",
    "multiply", "true_divide", "negative", "power", "mod", "matmul", "absolute", "rint", "sign",
    "exp", "log", "log2", "log10", "expm1", "sqrt", "square", "cbrt", "reciprocal", "invert",
    "bitwise_not", "remainder", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos",
    "arctan", "arcsinh", "arccosh", "arctanh", "maximum", "minimum", "ceil", "trunc", "floor",
    "bitwise_and", "bitwise_xor", "bitwise_or", "logical_not", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal",
]


def _lookup(module, dotted):
    for part in dotted.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def _register_array_function():
    """Maps each listed NumPy function to the ``mx.np`` function of the same name."""
    for name in _NUMPY_ARRAY_FUNCTION_LIST:
        onp_func = _lookup(_onp, name)
        if onp_func is None:  # removed from the installed NumPy
            continue
        mx_func = _lookup(_mx_np, name)
        if mx_func is None:
            raise AttributeError(f"mxnet.numpy does not have operator named {name}")
        _NUMPY_ARRAY_FUNCTION_DICT[onp_func] = mx_func


def _register_array_ufunc():
    """Maps each listed ufunc name to the ``mx.np`` function of that name, and also the
    installed NumPy's ``ufunc.__name__`` where it differs (NumPy 2's ``true_divide`` is
    ``divide``), which is what ``__array_ufunc__`` sees."""
    for name in _NUMPY_ARRAY_UFUNC_LIST:
        mx_func = getattr(_mx_np, name, None)
        if mx_func is None:
            raise AttributeError(f"mxnet.numpy does not have operator named {name}")
        _NUMPY_ARRAY_UFUNC_DICT[name] = mx_func
        onp_ufunc = getattr(_onp, name, None)
        if onp_ufunc is not None:
            _NUMPY_ARRAY_UFUNC_DICT.setdefault(onp_ufunc.__name__, getattr(_mx_np, onp_ufunc.__name__, mx_func))


_register_array_function()
_register_array_ufunc()
