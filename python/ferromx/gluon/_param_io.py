"""Reading and writing parameter files.

Files are written in MXNet 1.9.1's binary NDArray format (:mod:`ferromx.serialization`),
or as safetensors for a name ending in ``.safetensors`` (:mod:`ferromx._safetensors`),
atomically.  Loading recognises the format by content (magic bytes), whatever the name:
MXNet's format, safetensors, the ``.npz`` archives older ferromx versions wrote, and
NumPy's own ``.npz`` / ``.npy`` files.
"""

import os
import zipfile

import numpy as np

from .. import _safetensors, serialization
from ..base import MXNetError

__all__ = ["ParameterLoadError", "load_arrays", "name_unnamed", "save_arrays"]


try:

    class ParameterLoadError(MXNetError, AssertionError):
        """Saved parameters do not match the model (missing, wrong shape or dtype, bad file).

        Also an ``AssertionError``, which is what MXNet raised in these cases.
        """

except TypeError:  # pragma: no cover - an MXNetError whose layout forbids the mix

    class ParameterLoadError(MXNetError):
        """Saved parameters do not match the model (missing, wrong shape or dtype, bad file)."""


class UnnamedArrays(list):
    """Arrays from a file without names (a ``.npy`` file or an MXNet list file)."""


def _dtype_name(dtype):
    if dtype is None:
        return None
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(getattr(dtype, "name", dtype))


def _brief_print_list(lst, limit=7):
    lst = list(lst)
    if len(lst) > limit:
        head = _brief_print_list(lst[: limit // 2], limit)
        tail = _brief_print_list(lst[-(limit // 2) :], limit)
        return head + ", ..., " + tail
    return ", ".join(f"'{i!s}'" for i in lst)


def save_arrays(filename, arrays):
    """Atomically write ``{name: NDArray or numpy array}`` to ``filename`` in MXNet's
    ``.params`` format (a temporary file in the same directory, fsync, ``os.replace``), or
    as safetensors when ``filename`` ends in ``.safetensors``."""
    if _safetensors.wants_safetensors(filename):
        _safetensors.save_safetensors(filename, dict(arrays))
        return
    serialization.save(filename, dict(arrays))


def _load_npz(filename):
    with np.load(filename, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def load_arrays(filename):
    """Read the arrays of a parameter file: a dict ``{name: array}``, or
    :class:`UnnamedArrays` for a file without names.

    A missing file raises ``FileNotFoundError``; anything unreadable raises
    :class:`ParameterLoadError` (an ``MXNetError``) naming the file and the problem.
    Every array is parsed before any NDArray is created.
    """
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise FileNotFoundError(f"Parameter file '{filename}' does not exist")
    with open(filename, "rb") as fobj:
        head = fobj.read(9)
    size = os.path.getsize(filename)
    try:
        if _safetensors.is_safetensors(head, size):
            # By path: the native reader maps the file, the GIL released.
            loaded = _safetensors.load_safetensors(filename, np_array=False)
            return UnnamedArrays(loaded) if isinstance(loaded, list) else loaded
        if serialization.is_mxnet_file(head):
            fast = serialization.load_native(filename)
            if fast is not None:
                values, names = fast
                _check_no_none(values, filename)
                return dict(zip(names, values)) if names else UnnamedArrays(values)
        with open(filename, "rb") as fobj:
            data = fobj.read()
        if data.startswith(b"PK\x03\x04"):
            return _load_npz(filename)
        if data.startswith(b"\x93NUMPY"):
            return UnnamedArrays([np.load(filename, allow_pickle=False)])
        hosts, names = serialization.loads_host(data, source=f"'{filename}'")
    except (serialization.MXNetFormatError, ValueError, OSError, zipfile.BadZipFile) as err:
        raise ParameterLoadError(
            f"Cannot load parameters from '{filename}': not a valid parameter file "
            f"({type(err).__name__}: {err})"
        ) from err
    _check_no_none([h.value for h in hosts], filename)
    values = [serialization.to_ndarray(h) for h in hosts]
    if not names:
        return UnnamedArrays(values)
    return dict(zip(names, values))


def _check_no_none(values, filename):
    for i, value in enumerate(values):
        if value is None:
            raise ParameterLoadError(
                f"Cannot load parameters from '{filename}': array {i} has no shape (an "
                "MXNet 'none' array)"
            )


def name_unnamed(loaded, names, filename):
    """Give the arrays of a file without names to the parameters ``names`` (only a file
    of one array for a model with one parameter is unambiguous); dicts pass through."""
    if not isinstance(loaded, UnnamedArrays):
        return loaded
    names = list(names)
    if not loaded and not names:
        return {}
    if len(loaded) == 1 and len(names) == 1:
        return {names[0]: loaded[0]}
    raise ParameterLoadError(
        f"Cannot load parameters from '{filename}': it holds {len(loaded)} unnamed array(s) "
        f"but the model has {len(names)} parameter(s); save them with names (a dict, "
        "save_parameters, or numpy.savez with keywords)"
    )
