"""``mx.contrib``: MXNet's contrib namespace (``contrib.autograd``, the pre-1.0 autograd API;
``contrib.nd``/``contrib.ndarray`` and ``contrib.sym``/``contrib.symbol`` are the ``nd`` and
``sym`` contrib operators)."""

from ..ndarray import contrib as nd
from ..ndarray import contrib as ndarray
from ..symbol import contrib as sym
from ..symbol import contrib as symbol
from . import autograd

__all__ = ["autograd", "nd", "ndarray", "sym", "symbol"]
