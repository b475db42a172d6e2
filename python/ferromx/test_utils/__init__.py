"""Testing helpers with the names and behaviour of MXNet 1.9.1's ``mxnet.test_utils``.

Comparisons (``assert_almost_equal`` ...) and finite differences run on host NumPy, as
MXNet's do. ferromx has no symbols: ``check_numeric_gradient`` takes a Python function of
NDArrays, and the helpers that need ``mx.sym`` raise ``MXNetError`` saying so. Storage is
dense only: the csr/row_sparse generators raise ``MXNetError``.
"""

import bz2
import errno
import gzip
import json
import logging
import numbers
import os
import platform
import struct
import sys
import time
import traceback
import zipfile
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

from .. import ndarray as _nd
from ..context import Context, current_context
from ..runtime import Features
from ..symbol import Symbol
from ..util import get_cuda_compute_capability, getenv, setenv, use_np
from . import _compare, _env, _grad, _random, _stats
from ._compare import *
from ._env import *
from ._grad import *
from ._random import *
from ._random import _validate_csr_generation_inputs  # noqa: F401
from ._stats import *


def __getattr__(name):
    """``ss`` (``scipy.stats``, or None without SciPy) is imported on first use, not with
    ferromx: SciPy's import costs more than the rest of ``import ferromx``; so is
    ``np_symbol``, whose module imports the symbol layer."""
    if name == "ss":
        return _stats._scipy_stats()
    if name == "np_symbol":  # MXNet's alias of mx.sym.np._Symbol (the np-mode symbol class)
        from ..symbol._np_symbol import NpSymbol
        return NpSymbol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


array = _nd.array
mx = sys.modules[__name__.rpartition(".")[0]]  # the ferromx package, as MXNet's `mx`

__all__ = (_compare.__all__ + _env.__all__ + _grad.__all__ + _random.__all__
           + _stats.__all__)
# MXNet's test_utils has no __all__: its star import also hands out the modules and names
# imported at the top, which MXNet's own tests use unqualified.

__all__ = list(__all__) + ["mx", "np", "rnd", "ss", "sys", "bz2", "errno", "gzip", "json",
                           "logging", "numbers", "os", "platform", "struct", "time",
                           "traceback", "zipfile", "OrderedDict", "contextmanager", "npt",
                           "Symbol", "Context", "Features", "array", "current_context",
                           "get_cuda_compute_capability", "getenv", "setenv", "use_np"]
