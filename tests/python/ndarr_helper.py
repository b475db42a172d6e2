"""``ndarr``: ``nd.array`` keeping a NumPy array's dtype, for operator tests written over
many dtypes. MXNet's (and ferromx's) ``nd.array(numpy_array)`` is float32 unless ``dtype`` is
given; these tests mean the NumPy dtype, so they pass it."""

import ferromx as mx

_KEPT = {"float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool"}
_WIDEN = {"int16": "int32", "uint16": "int32", "uint32": "int64", "uint64": "int64"}


def ndarr(source, ctx=None, dtype=None):
    """``mx.nd.array(source, ctx, dtype)`` with ``dtype`` defaulting to ``source.dtype``."""
    if dtype is None and hasattr(source, "dtype") and not isinstance(source, mx.nd.NDArray):
        name = source.dtype.name
        dtype = name if name in _KEPT else _WIDEN.get(name)
    return mx.nd.array(source, ctx=ctx, dtype=dtype)
