"""Testing helpers with the names and behaviour of MXNet 1.9.1's ``mxnet.test_utils``.

Comparisons (``assert_almost_equal`` ...) and finite differences run on host NumPy, as
MXNet's do. ferromx has no symbols: ``check_numeric_gradient`` takes a Python function of
NDArrays, and the helpers that need ``mx.sym`` raise ``MXNetError`` saying so. Storage is
dense only: the csr/row_sparse generators raise ``MXNetError``.
"""

import numpy as np  # noqa: F401 - MXNet's test_utils exposes these modules
import numpy.random as rnd  # noqa: F401

from .. import ndarray as _nd
from ..context import Context, current_context  # noqa: F401
from ..runtime import Features  # noqa: F401
from ..util import get_cuda_compute_capability, getenv, setenv, use_np  # noqa: F401
from ._compare import *  # noqa: F401,F403
from ._compare import __all__ as _compare_all
from ._env import *  # noqa: F401,F403
from ._env import __all__ as _env_all
from ._grad import *  # noqa: F401,F403
from ._grad import __all__ as _grad_all
from ._random import *  # noqa: F401,F403
from ._random import __all__ as _random_all
from ._random import _validate_csr_generation_inputs  # noqa: F401
from ._stats import *  # noqa: F401,F403
from ._stats import __all__ as _stats_all
from ._stats import ss  # noqa: F401

array = _nd.array

__all__ = sorted(_compare_all + _env_all + _grad_all + _random_all + _stats_all)
