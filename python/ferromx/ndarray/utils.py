"""``ferromx.nd.utils``: creation and file helpers (MXNet's ``mxnet.ndarray.utils``)."""

from . import array, empty, load, load_frombuffer, save, zeros

__all__ = ["array", "empty", "load", "load_frombuffer", "save", "zeros"]
