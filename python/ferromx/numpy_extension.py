"""``ferromx.npx``: NumPy-extension helpers (MXNet's ``mx.npx``)."""

from . import _native
from . import ndarray as _nd

# the NumPy-semantics flags live in ``util`` (the single source of that state)
from .util import is_np_array, is_np_shape, reset_np, set_np  # noqa: F401


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
