"""The ``np.linalg`` functions MXNet 1.9.1 runs with official NumPy on the host (``cond``,
``lstsq``, ``matrix_power``, ``matrix_rank``, ``multi_dot``, ``qr``). In ferromx they are
composed of engine operators (see ``ferromx.numpy.linalg``); this module keeps MXNet's name."""

from .linalg import cond, lstsq, matrix_power, matrix_rank, multi_dot, qr

__all__ = ["cond", "lstsq", "matrix_power", "matrix_rank", "multi_dot", "qr"]
