"""``ferromx.npx``: NumPy-extension helpers (MXNet's ``mx.npx``)."""

from . import _native
from . import ndarray as _nd
from .base import check_call, classproperty, with_metaclass  # noqa: F401
from .context import (  # noqa: F401
    Context,
    cpu,
    cpu_pinned,
    current_context,
    gpu,
    gpu_memory_info,
    num_gpus,
)
from .ndarray import image  # noqa: F401 - npx.image.*

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
leaky_relu = _nd.LeakyReLU
cast, gather_nd, reshape_like, slice = _nd.cast, _nd.gather_nd, _nd.reshape_like, _nd.slice
smooth_l1, erf, erfinv, gamma, gammaln = _nd.smooth_l1, _nd.erf, _nd.erfinv, _nd.gamma, _nd.gammaln
from . import _npx_extra as _extra
from . import _npx_random as random  # noqa: F401
from . import _npx_utils as utils  # noqa: F401

arange_like, constraint_check = _extra.arange_like, _extra.constraint_check
get_cuda_compute_capability = _extra.get_cuda_compute_capability
nonzero, reshape, shape_array = _extra.nonzero, _extra.reshape, _extra.shape_array


def save(file, arr):
    """Save an array, a list or a dict of str -> array in MXNet's binary format (V3
    records, NumPy shape semantics, as MXNet's ``npx.save``).  Needs ``npx.set_np()``.

    A file name ending in ``.safetensors`` writes a safetensors file instead (see
    :mod:`ferromx._safetensors`)."""
    if not is_np_array():
        raise ValueError(
            "Cannot save `mxnet.numpy.ndarray` in legacy mode. Please activate numpy "
            "semantics by calling `npx.set_np()` in the global scope before calling this "
            "function."
        )
    from . import serialization

    if isinstance(arr, dict):
        if any(not isinstance(v, _nd.NDArray) for v in arr.values()):
            raise TypeError("Only accepts dict str->ndarray or list of ndarrays")
    elif isinstance(arr, list) and any(not isinstance(v, _nd.NDArray) for v in arr):
        raise TypeError("Only accepts dict str->ndarray or list of ndarrays")
    from . import _safetensors

    if _safetensors.wants_safetensors(file):
        _safetensors.save_safetensors(file, arr)
        return
    serialization.save(file, arr, np_shape=True)


def load(file):
    """Load a file written by :func:`save` (or MXNet's ``npx.save`` / ``nd.save``): a list
    of arrays, or a dict when the file has names.  Needs ``npx.set_np()``, as in MXNet.

    A safetensors file (recognised by its content) loads as a dict (a list when saved
    from a list)."""
    if not is_np_array():
        raise ValueError(
            "Cannot load `mxnet.numpy.ndarray` in legacy mode. Please activate numpy "
            "semantics by calling `npx.set_np()` in the global scope before calling this "
            "function."
        )
    from . import _safetensors, serialization
    from .util import _to_np

    if _safetensors.file_is_safetensors(file):
        return _safetensors.load_safetensors(file, np_array=True)
    return _to_np(serialization.load(file))


from . import _op_gen as _gen

_gen.install_aliases(globals(), "npx", _nd)
