"""Reading and writing parameter files (NumPy ``.npz`` archives, written atomically)."""

import os
import tempfile
import zipfile

import numpy as np

from ..base import MXNetError

__all__ = ["ParameterLoadError", "load_arrays", "save_arrays"]


try:

    class ParameterLoadError(MXNetError, AssertionError):
        """Saved parameters do not match the model (missing, wrong shape or dtype, bad file).

        Also an ``AssertionError``, which is what MXNet raised in these cases.
        """

except TypeError:  # pragma: no cover - an MXNetError whose layout forbids the mix

    class ParameterLoadError(MXNetError):
        """Saved parameters do not match the model (missing, wrong shape or dtype, bad file)."""


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
    """Atomically write ``{name: numpy array}`` to ``filename`` as an ``.npz`` archive.

    The archive goes to a temporary file in the same directory first and then replaces
    ``filename`` (``os.replace``), so a crash never leaves a half-written file behind.
    """
    filename = os.fspath(filename)
    directory = os.path.dirname(os.path.abspath(filename))
    fd, tmp = tempfile.mkstemp(
        prefix=f".{os.path.basename(filename)}.", suffix=".tmp", dir=directory
    )
    try:
        with os.fdopen(fd, "wb") as fobj:
            with zipfile.ZipFile(fobj, "w", compression=zipfile.ZIP_STORED) as archive:
                for name, value in arrays.items():
                    with archive.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(
                            member, np.ascontiguousarray(value), allow_pickle=False
                        )
            fobj.flush()
            os.fsync(fobj.fileno())
        os.replace(tmp, filename)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_arrays(filename):
    """Read ``{name: numpy array}`` written by :func:`save_arrays`.

    A missing file raises ``FileNotFoundError``; anything that is not a readable archive
    raises :class:`ParameterLoadError` (an ``MXNetError``).
    """
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise FileNotFoundError(f"Parameter file '{filename}' does not exist")
    try:
        with np.load(filename, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except Exception as err:
        raise ParameterLoadError(
            f"Cannot load parameters from '{filename}': not a valid parameter file "
            f"({type(err).__name__}: {err})"
        ) from err
