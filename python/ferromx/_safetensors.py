"""safetensors files (the Hugging Face tensor format), read and written natively.

The bytes are parsed and written in Rust (``ferromx::fileio``, the ``safetensors`` crate)
with the GIL released.  Public entry points:

* :func:`save_safetensors` / :func:`load_safetensors` (also ``ferromx.util.*``);
* ``nd.save`` / ``npx.save`` write safetensors when the file name ends in ``.safetensors``
  (MXNet's binary format otherwise); ``nd.load`` / ``npx.load`` / ``np.load`` and
  ``Block.load_parameters`` recognise a safetensors file by its content, whatever its name;
* ``Block.save_parameters`` / ``ParameterDict.save`` write safetensors for a
  ``.safetensors`` name.

Containers: a dict is stored as named tensors; a list (or a single array, as ``nd.save``
stores it) is stored as tensors named ``"0"``, ``"1"``, ... with the metadata entry
``ferromx.container = list``, and loads back as a list.  A file without that entry loads as
a dict.  dtypes: float32/float64/float16/bfloat16/uint8/int8/int32/int64/bool; other
safetensors dtypes are refused by name.  A corrupt or truncated file raises ``ValueError``
(an ``MXNetError``) and creates no array; writes are atomic (temporary file, fsync, rename).
Loading from a path maps the file copy-on-write and the arrays share its pages
(``FERROMX_MMAP_LOAD=0``: read and copy instead).
"""

import os
import struct

import numpy as np

__all__ = ["EXTENSION", "is_safetensors", "load_safetensors", "save_safetensors"]

EXTENSION = ".safetensors"
_CONTAINER_KEY = "ferromx.container"
_U64 = struct.Struct("<Q")


def is_safetensors(head, size=None):
    """Whether ``head`` (the first bytes of a file, at least 9) starts a safetensors file:
    a little-endian ``uint64`` header length (fitting in ``size`` bytes, when given) and a
    JSON header that opens with ``{``."""
    head = bytes(head[:9])
    if len(head) < 9 or head[8:9] != b"{":
        return False
    length = _U64.unpack(head[:8])[0]
    if length < 2:
        return False
    return size is None or length + 8 <= size


def file_is_safetensors(fname):
    """Whether the file ``fname`` holds safetensors (by content)."""
    with open(fname, "rb") as fobj:
        head = fobj.read(9)
    return is_safetensors(head, os.path.getsize(fname))


def wants_safetensors(fname):
    """Whether a file name picks safetensors for writing (it ends in ``.safetensors``)."""
    return isinstance(fname, (str, os.PathLike)) and os.fspath(fname).lower().endswith(EXTENSION)


def _native_array(value, what):
    from . import ndarray as nd

    if isinstance(value, nd.NDArray):
        return value
    if isinstance(value, np.ndarray):
        return nd.array(value, dtype=value.dtype)
    raise TypeError(
        f"save_safetensors: {what} must be an NDArray or numpy.ndarray, got {type(value).__name__}"
    )


def _split(data):
    """``(names, arrays, is_list)`` of an NDArray, a list or a dict."""
    from . import ndarray as nd

    if isinstance(data, (nd.NDArray, np.ndarray)):
        data = [data]
    if isinstance(data, dict):
        for key in data:
            if not isinstance(key, str):
                raise TypeError(
                    f"save_safetensors: dict keys must be str, got {type(key).__name__}"
                )
        return list(data), [_native_array(v, f"value '{k}'") for k, v in data.items()], False
    if isinstance(data, (list, tuple)):
        arrays = [_native_array(v, f"item {i}") for i, v in enumerate(data)]
        return [str(i) for i in range(len(arrays))], arrays, True
    raise TypeError(
        "save_safetensors: data must be an NDArray, a list of NDArrays or a dict of "
        f"str -> NDArray, got {type(data).__name__}"
    )


def save_safetensors(fname, data, metadata=None):
    """Save an NDArray, a list or a dict of str -> NDArray to the safetensors file ``fname``
    (atomically).  ``metadata`` is an optional dict of str -> str stored in the header."""
    fname = os.fspath(fname)
    if not isinstance(fname, str):
        raise TypeError(f"save_safetensors: fname must be a str or os.PathLike, got {fname!r}")
    names, arrays, is_list = _split(data)
    meta = dict(metadata or {})
    for key, value in meta.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                "save_safetensors: metadata must map str to str, got "
                f"{type(key).__name__} -> {type(value).__name__}"
            )
    if is_list:
        meta[_CONTAINER_KEY] = "list"
    from . import _native

    _native.save_safetensors(fname, names, arrays, meta or None)


def load_safetensors(source, ctx=None, with_metadata=False, np_array=None):
    """Load a safetensors file (a path, or bytes holding a whole file).

    Returns a dict name -> NDArray in file order (a list for a file saved from a list, see
    the module notes); with ``with_metadata``, ``(data, metadata dict)`` (the
    ``ferromx.container`` entry removed).  ``np_array`` makes ``ferromx.numpy.ndarray``s
    (default: whether ``npx.set_np()`` is active).  Nothing is created unless the whole
    file is valid.
    """
    from . import _native
    from .context import _ctx_str
    from .serialization import mmap_enabled
    from .util import is_np_array

    if isinstance(source, (bytes, bytearray, memoryview)):
        src = source
    else:
        src = os.fspath(source)
        if not os.path.exists(src):
            raise FileNotFoundError(f"load_safetensors: file '{src}' does not exist")
        if not mmap_enabled():  # read and copy instead of mapping the file
            with open(src, "rb") as fobj:
                src = fobj.read()
    if np_array is None:
        np_array = is_np_array()
    pairs, metadata = _native.load_safetensors(src, _ctx_str(ctx), bool(np_array))
    metadata = dict(metadata or {})
    container = metadata.pop(_CONTAINER_KEY, None)
    if container == "list":
        by_name = dict(pairs)
        try:
            data = [by_name[str(i)] for i in range(len(pairs))]
        except KeyError as err:
            raise ValueError(
                f"load_safetensors: {source!r} is marked as a list but lacks tensor {err}"
            ) from None
    else:
        data = dict(pairs)
    return (data, metadata) if with_metadata else data
