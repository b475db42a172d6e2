"""``np.save`` / ``np.load`` / ``np.savez``: NumPy's ``.npy`` and ``.npz`` formats.

MXNet 1.9.1's ``mx.np`` has no such functions (they arrived with MXNet 2.0); these follow
NumPy (and MXNet 2.0): ``save`` writes one array as ``.npy``, ``savez`` several as an
uncompressed ``.npz``, and ``load`` returns an array for ``.npy`` and a dict of arrays for
``.npz``.  Arrays go through host (NumPy) copies; ``bfloat16`` is stored as float32.
Writes to a path are atomic.  ``load`` also reads MXNet NDArray files (``npx.save``)
and safetensors files.
"""

import io
import os

import numpy as _onp

from .. import _safetensors as _st
from .. import ndarray as _nd
from .. import serialization as _ser

__all__ = ["genfromtxt", "load", "save", "savez"]


def _host(arr, what):
    if isinstance(arr, _nd.NDArray):
        return arr.asnumpy()
    if isinstance(arr, _onp.ndarray):
        return arr
    raise TypeError(f"{what} expects ferromx ndarrays, got {type(arr).__name__}")


def _to_device(value):
    return _nd.array(value, dtype=value.dtype)


def _write(file, suffix, writer):
    """Run ``writer(fileobj)``; a path gets NumPy's suffix rule and an atomic write."""
    if hasattr(file, "write"):
        writer(file)
        return
    path = os.fspath(file)
    if not isinstance(path, str):
        raise TypeError(f"file must be a path or a file object, got {type(file).__name__}")
    if not path.endswith(suffix):
        path += suffix
    buf = io.BytesIO()
    writer(buf)
    _ser.atomic_write(path, buf.getbuffer())


def save(file, arr):
    """Save one array to a NumPy ``.npy`` file (``.npy`` is appended to a path without it)."""
    value = _host(arr, "save")
    _write(file, ".npy", lambda f: _onp.save(f, value, allow_pickle=False))


def savez(file, *args, **kwds):
    """Save arrays to an uncompressed ``.npz``: positional ones as ``arr_0, arr_1, ...``,
    keyword ones under their names."""
    values = {f"arr_{i}": _host(a, "savez") for i, a in enumerate(args)}
    for key, arr in kwds.items():
        if key in values:
            raise ValueError(f"Cannot use un-named variables and keyword {key}")
        values[key] = _host(arr, "savez")
    _write(file, ".npz", lambda f: _onp.savez(f, **values))


def load(file):
    """Load a ``.npy`` file (an array), a ``.npz`` file (a dict of arrays) or an MXNet
    NDArray file (a list or dict, as ``npx.load``) or a safetensors file (a dict).  Pickled
    objects are refused."""
    if hasattr(file, "read"):
        data = file.read()
        source = "<file object>"
    else:
        with open(os.fspath(file), "rb") as fobj:
            data = fobj.read()
        source = f"'{os.fspath(file)}'"
    if data.startswith(b"PK\x03\x04"):
        with _onp.load(io.BytesIO(data), allow_pickle=False) as archive:
            values = {name: archive[name] for name in archive.files}
        return {name: _to_device(v) for name, v in values.items()}
    if data.startswith(b"\x93NUMPY"):
        return _to_device(_onp.load(io.BytesIO(data), allow_pickle=False))
    if _st.is_safetensors(data, len(data)):
        return _st.load_safetensors(data, np_array=True)
    if _ser.is_mxnet_file(data):
        hosts, names = _ser.loads_host(data, source=source)
        values = [_ser.to_ndarray(h) for h in hosts]
        return dict(zip(names, values)) if names else values
    raise ValueError(f"Cannot load {source}: not a .npy, .npz or MXNet NDArray file")


def genfromtxt(*args, **kwargs):
    """Loads data from a text file with NumPy's ``genfromtxt`` (file parsing on the host, as
    MXNet's) and returns it as an ``ndarray``."""
    from . import array

    ctx = kwargs.pop("ctx", None)
    value = _onp.genfromtxt(*args, **kwargs)
    return array(value, dtype=value.dtype, ctx=ctx)
