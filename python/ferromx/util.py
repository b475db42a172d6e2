"""Miscellaneous helpers mirroring ``mxnet.util``.

ferromx has a single array front (``nd``) today, so the NumPy-semantics switches
(``set_np``, ``use_np`` ...) are accepted for source compatibility and do nothing.
"""

import contextlib
import os

__all__ = [
    "getenv",
    "is_np_array",
    "is_np_shape",
    "np_array",
    "np_shape",
    "reset_np",
    "set_np",
    "set_np_shape",
    "setenv",
    "use_np",
    "use_np_array",
    "use_np_shape",
]


def is_np_array():
    """Return whether NumPy-array semantics are active (always ``False`` in ferromx)."""
    return False


def is_np_shape():
    """Return whether NumPy-shape semantics are active (always ``False`` in ferromx)."""
    return False


def set_np(shape=True, array=True, dtype=False):  # pylint: disable=unused-argument
    """Accept MXNet's ``set_np`` call; ferromx has no separate NumPy mode, so this is a no-op."""
    return


def reset_np():
    """Accept MXNet's ``reset_np`` call (no-op)."""
    return


def set_np_shape(active):  # pylint: disable=unused-argument
    """Accept MXNet's ``set_np_shape`` call; returns the previous state (always ``False``)."""
    return False


def _passthrough_decorator(func=None):
    """Return ``func`` unchanged; usable as ``@dec`` and ``@dec()``."""
    if func is None:
        return lambda f: f
    return func


def use_np(func=None):
    """Decorator accepted for compatibility: returns the function or class unchanged."""
    return _passthrough_decorator(func)


def use_np_array(func=None):
    """Decorator accepted for compatibility: returns the function or class unchanged."""
    return _passthrough_decorator(func)


def use_np_shape(func=None):
    """Decorator accepted for compatibility: returns the function or class unchanged."""
    return _passthrough_decorator(func)


@contextlib.contextmanager
def np_array(active=True):  # pylint: disable=unused-argument
    """Context manager accepted for compatibility (no effect)."""
    yield


@contextlib.contextmanager
def np_shape(active=True):  # pylint: disable=unused-argument
    """Context manager accepted for compatibility (no effect)."""
    yield


def getenv(name):
    """Return the value of environment variable ``name``, or ``None`` when it is unset."""
    return os.environ.get(name)


def setenv(name, value):
    """Set environment variable ``name`` to ``value``; ``None`` unsets it."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)
