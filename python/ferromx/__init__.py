"""ferromx: Apache MXNet's imperative model (async NDArray engine, autograd, Gluon) in Rust.

Change ``import mxnet as mx`` to ``import ferromx as mx``.
"""

__version__ = "0.1.0"

from . import _native  # noqa: F401
from . import base
from .base import MXNetError
from . import context
from .context import Context, cpu, gpu, cpu_pinned, cpu_shared, current_context, num_gpus
from . import ndarray
from . import ndarray as nd
from . import autograd
from . import symbol
from . import symbol as sym
from . import engine
from . import random
from . import profiler
from . import numpy as np  # noqa: F401
from . import numpy_extension
from . import numpy_dispatch_protocol  # noqa: F401 - registers NumPy's dispatch to mx.np
from . import numpy_extension as npx
from . import util
from . import image
from . import image as img  # noqa: F401 - MXNet's alias
from .util import is_np_array, is_np_shape, np_array, np_shape  # noqa: F401
from .util import set_np_shape, use_np_array, use_np_shape  # noqa: F401
from . import runtime  # noqa: F401
from . import name  # noqa: F401
from . import attribute  # noqa: F401
from .attribute import AttrScope  # noqa: F401

try:  # the pure-Python layers
    from . import initializer
    from . import initializer as init
    from . import optimizer
    from . import lr_scheduler
    from . import metric
    from . import gluon
    from . import recordio
    from . import io
    from . import test_utils
    from . import model
    from . import module
    from . import module as mod
    from . import operator
    from . import contrib
    from . import kvstore
    from . import kvstore as kv
except ImportError as _e:  # pragma: no cover - only while those layers are being written
    import warnings as _w

    _w.warn(f"ferromx: part of the Python layer failed to import: {_e}")


def waitall():
    """Blocks until all pushed work is done; raises the first engine error."""
    from ._sync import check

    check("waitall")
    _native.waitall()
