"""Miscellaneous helpers mirroring ``mxnet.util``.

The NumPy-semantics switches live here and are the single source of that state (``npx.set_np``
calls into this module). As in MXNet 1.9.1 both flags are per thread: NumPy *shape* semantics
(``()`` is a scalar shape, ``0`` a zero size) and NumPy *array* semantics (Gluon creates
``mx.np.ndarray`` rather than ``mx.nd.NDArray``). Array semantics need shape semantics.
"""

import contextlib
import functools
import inspect
import os
import threading

from .base import MXNetError, c_str, check_call, py_str  # noqa: F401 - MXNet's module exposes them

__all__ = [
    "default_array",
    "get_cuda_compute_capability",
    "get_gpu_count",
    "get_gpu_memory",
    "getenv",
    "is_np_array",
    "is_np_default_dtype",
    "is_np_shape",
    "load_safetensors",
    "np_array",
    "np_shape",
    "np_ufunc_legal_option",
    "reset_np",
    "save_safetensors",
    "set_module",
    "set_np",
    "set_np_shape",
    "setenv",
    "use_np",
    "use_np_array",
    "use_np_shape",
    "wrap_np_binary_func",
    "wrap_np_unary_func",
    "wraps_safely",
]

_NP_DEFAULT_DTYPE = False
_state = threading.local()


def _get(flag):
    return getattr(_state, flag, False)


@contextlib.contextmanager
def _graph_fallback():
    """While a hybridized block runs eagerly for a signature its graph could not express:
    functions whose in-place form has no graph meaning (``np.nan_to_num(copy=False)``)
    return a new array there, as MXNet's graph operators do."""
    old = _get("graph_fallback")
    _state.graph_fallback = True
    try:
        yield
    finally:
        _state.graph_fallback = old


def in_graph_fallback():
    """Whether a hybridized block is running eagerly in place of its graph."""
    return _get("graph_fallback")


def get_gpu_count():
    """Number of GPUs ferromx can use: always 0 (there is no GPU backend)."""
    return 0


def get_gpu_memory(gpu_dev_id):
    """``(free, total)`` bytes of GPU ``gpu_dev_id``; raises ``MXNetError`` (no GPU backend)."""
    raise MXNetError(f"get_gpu_memory({gpu_dev_id}): ferromx has no GPU backend (0 GPUs)")


def get_cuda_compute_capability(ctx):
    """CUDA compute capability of ``ctx``; raises (ferromx has no CUDA backend).

    Raises ``ValueError`` for a non-GPU context, as MXNet does, else ``MXNetError``.
    """
    if getattr(ctx, "device_type", None) != "gpu":
        raise ValueError(
            f"Expecting a gpu context to get cuda compute capability, while received ctx {ctx}"
        )
    raise MXNetError(f"get_cuda_compute_capability({ctx}): ferromx has no CUDA backend")


def is_np_shape():
    """Whether NumPy-shape semantics are on in this thread."""
    return _get("np_shape")


def is_np_array():
    """Whether NumPy-array semantics are on in this thread."""
    return _get("np_array")


def is_np_default_dtype():
    """Whether NumPy's default dtype (float64) is on (set by ``set_np(dtype=True)``)."""
    return _NP_DEFAULT_DTYPE


def set_np_shape(active):
    """Turn NumPy-shape semantics on or off in this thread; returns the previous state.

    Turning them off while NumPy-array semantics are on raises ``ValueError``.
    """
    if not active and is_np_array():
        raise ValueError("Deactivating NumPy shape semantics while NumPy array semantics is still"
                         " active is not allowed. Please consider calling `npx.reset_np()` to"
                         " deactivate both of them.")
    prev = is_np_shape()
    _state.np_shape = bool(active)
    return prev


def _set_np_array(active):
    prev = is_np_array()
    _state.np_array = bool(active)
    return prev


def set_np(shape=True, array=True, dtype=False):
    """Turn NumPy shape and array semantics on (or off) together in this thread.

    ``array=True`` with ``shape=False`` raises ``ValueError``. ``dtype`` (MXNet 2.x) records
    whether NumPy's float64 default dtype is wanted (see :func:`is_np_default_dtype`).
    """
    global _NP_DEFAULT_DTYPE
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    _set_np_array(array)
    set_np_shape(shape)
    _NP_DEFAULT_DTYPE = bool(dtype)


def reset_np():
    """Turn NumPy shape and array semantics off in this thread."""
    set_np(shape=False, array=False)


class _Scope:
    """``with`` scope setting one flag and restoring it on exit."""

    def __init__(self, flag, active):
        self._flag = flag
        self._active = bool(active)
        self._old = None

    def __enter__(self):
        self._old = _get(self._flag)
        setattr(_state, self._flag, self._active)
        return self

    def __exit__(self, *exc):
        setattr(_state, self._flag, self._old)


class _NumpyShapeScope(_Scope):
    """MXNet's name for the NumPy-shape scope (``_is_np_shape`` says which it sets)."""

    _current = threading.local()

    def __init__(self, is_np_shape):
        super().__init__("np_shape", is_np_shape)
        self._is_np_shape = bool(is_np_shape)


class _NumpyArrayScope(_Scope):
    """MXNet's name for the NumPy-array scope (``_is_np_array`` says which it sets)."""

    _current = threading.local()

    def __init__(self, is_np_array):
        super().__init__("np_array", is_np_array)
        self._is_np_array = bool(is_np_array)


def np_shape(active=True):
    """A ``with`` scope with NumPy-shape semantics on (or off, ``active=False``)."""
    return _NumpyShapeScope(active)


def np_array(active=True):
    """A ``with`` scope with NumPy-array semantics on (or off, ``active=False``)."""
    return _NumpyArrayScope(active)


def _scoped_decorator(func, scope, name):
    """Wrap a callable (or every method and property of a class) to run inside ``scope()``."""
    if inspect.isclass(func):
        for attr, member in inspect.getmembers(
            func, predicate=lambda f: inspect.isfunction(f) or inspect.ismethod(f)
            or isinstance(f, property)
        ):
            if isinstance(member, property):
                setattr(func, attr, property(_scoped_decorator(member.__get__, scope, name),
                                             member.__set__, member.__delattr__, member.__doc__))
            else:
                setattr(func, attr, _scoped_decorator(member, scope, name))
        return func
    if callable(func):
        @functools.wraps(func)
        def _wrapped(*args, **kwargs):
            with scope():
                return func(*args, **kwargs)

        return _wrapped
    raise TypeError(f"{name} can only decorate classes and callable objects, while received a "
                    f"{type(func)}")


def use_np_shape(func):
    """Decorator: run ``func`` (or all methods of a class) with NumPy-shape semantics on."""
    return _scoped_decorator(func, np_shape, "use_np_shape")


def use_np_array(func):
    """Decorator: run ``func`` (or all methods of a class) with NumPy-array semantics on."""
    return _scoped_decorator(func, np_array, "use_np_array")


def use_np(func):
    """Decorator: NumPy shape and array semantics on, i.e. ``use_np_shape(use_np_array(func))``."""
    return use_np_shape(use_np_array(func))


def set_module(module):
    """Decorator setting ``__module__`` of a function or class to ``module``."""

    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func

    return decorator


def wraps_safely(wrapped, assigned=functools.WRAPPER_ASSIGNMENTS):
    """``functools.wraps`` that skips attributes ``wrapped`` lacks (e.g. partial objects)."""
    return functools.wraps(wrapped, assigned=[a for a in assigned if hasattr(wrapped, a)])


def default_array(source_array, ctx=None, dtype=None):
    """An ``mx.np.ndarray`` when NumPy-array semantics are on, else an ``mx.nd.NDArray``."""
    if is_np_array():
        from . import numpy as _mxnp

        return _mxnp.array(source_array, ctx=ctx, dtype=dtype)
    from . import ndarray as _nd

    return _nd.array(source_array, ctx=ctx, dtype=dtype)


_NP_UFUNC_DEFAULT_KWARGS = {
    "where": True,
    "casting": "same_kind",
    "order": "K",
    "dtype": None,
    "subok": True,
}
_LEGAL_DTYPES = {"int8", "uint8", "int32", "int64", "float16", "float32", "float64"}


def np_ufunc_legal_option(key, value):
    """Whether ``key=value`` is a legal NumPy ufunc keyword argument."""
    if key == "where":
        return True
    if key == "casting":
        return value in {"no", "equiv", "safe", "same_kind", "unsafe"}
    if key == "order":
        return isinstance(value, str)
    if key == "dtype":
        name = getattr(value, "__name__", value)
        return isinstance(name, str) and name in _LEGAL_DTYPES
    if key == "subok":
        return isinstance(value, bool)
    return False


def _check_ufunc_kwargs(func, kwargs):
    for key, value in kwargs.items():
        if key not in _NP_UFUNC_DEFAULT_KWARGS:
            raise TypeError(f"{key} is an invalid keyword to function '{func.__name__}'")
        if value != _NP_UFUNC_DEFAULT_KWARGS[key]:
            if np_ufunc_legal_option(key, value):
                raise NotImplementedError(
                    f"{key}={value} is not implemented yet for operator {func.__name__}"
                )
            raise TypeError(f"{key}={value} not understood for operator {func.__name__}")


def wrap_np_unary_func(func):
    """Wrap a unary ufunc ``func(x, out=None)``: NumPy ufunc keywords at their defaults are
    accepted, other legal values raise ``NotImplementedError``, unknown ones ``TypeError``."""

    @functools.wraps(func)
    def _wrap(x, out=None, **kwargs):
        _check_ufunc_kwargs(func, kwargs)
        return func(x, out=out)

    return _wrap


def wrap_np_binary_func(func):
    """Like :func:`wrap_np_unary_func` for a binary ufunc ``func(x1, x2, out=None)``."""

    @functools.wraps(func)
    def _wrap(x1, x2, out=None, **kwargs):
        _check_ufunc_kwargs(func, kwargs)
        return func(x1, x2, out=out)

    return _wrap


def getenv(name):
    """Return the value of environment variable ``name``, or ``None`` when it is unset."""
    return os.environ.get(name)


def setenv(name, value):
    """Set environment variable ``name`` to ``value``; ``None`` unsets it."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def _as_np_mode(x):
    """``x`` (an array, or lists/tuples/dicts of them) as ``np.ndarray`` when NumPy-array
    semantics are on in this thread, else unchanged (zero-copy either way). Gluon calls it
    where it hands arrays to the user (parameters, DataLoader batches, ``split_and_load``)."""
    if not is_np_array():
        return x
    return _to_np(x)


def _to_np(x):
    from .ndarray import NDArray

    if isinstance(x, NDArray):
        return x if x._is_np else x._as_np()
    if isinstance(x, list):
        return [_to_np(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_to_np(v) for v in x)
    if isinstance(x, dict):
        return {k: _to_np(v) for k, v in x.items()}
    return x


def save_safetensors(fname, data, metadata=None):
    """Save an NDArray, a list or a dict of str -> NDArray as a safetensors file (see
    :mod:`ferromx._safetensors`), atomically; ``metadata``: optional str -> str header data."""
    from ._safetensors import save_safetensors as _save

    _save(fname, data, metadata)


def load_safetensors(source, ctx=None, with_metadata=False):
    """Load a safetensors file (path or bytes): a dict name -> array (a list for a file
    saved from a list); ``with_metadata`` also returns the header's metadata dict.  Arrays
    are ``ferromx.numpy.ndarray``s under ``npx.set_np()``."""
    from ._safetensors import load_safetensors as _load

    return _load(source, ctx=ctx, with_metadata=with_metadata)
