"""``ferromx.npx``: NumPy-extension helpers (MXNet's ``mx.npx``)."""

from . import _native
from . import ndarray as _nd

_np_mode = False


def set_np(shape=True, array=True, dtype=False):
    """Turns on NumPy semantics flags (recorded; ferromx arrays behave the same either way)."""
    global _np_mode
    _np_mode = True


def reset_np():
    """Turns NumPy semantics off."""
    global _np_mode
    _np_mode = False


def is_np_array():
    """Whether ``set_np`` is active."""
    return _np_mode


def waitall():
    """Blocks until all work is done."""
    _native.waitall()


relu, sigmoid, softmax, log_softmax = _nd.relu, _nd.sigmoid, _nd.softmax, _nd.log_softmax
one_hot, pick, batch_dot = _nd.one_hot, _nd.pick, _nd.batch_dot
activation = _nd.Activation
fully_connected = _nd.FullyConnected
dropout = _nd.Dropout
layer_norm = _nd.LayerNorm
embedding = _nd.Embedding


def _install_generated(ns):
    """``npx`` names of the table's operators that this module does not define itself."""
    from . import _op_gen

    for d in _op_gen.TABLE:
        for alias in d["npx"]:
            if alias not in ns:
                ns[alias] = getattr(_nd, _op_gen.nd_names(d)[0])


_install_generated(globals())
