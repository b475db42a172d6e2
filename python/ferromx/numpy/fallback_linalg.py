"""``np.linalg`` functions that MXNet 1.9.1 runs with official NumPy on the host
(``cond``, ``lstsq``, ``matrix_power``, ``matrix_rank``, ``multi_dot``, ``qr``): arrays are
read to the host, NumPy computes, results come back as ``ferromx.np.ndarray`` (no gradient),
as MXNet's ``fallback_linalg`` does."""

import numpy as _onp

from .fallback import _ctx_of, _to_dev, _to_host

__all__ = ["cond", "lstsq", "matrix_power", "matrix_rank", "multi_dot", "qr"]


def _wrap_from(fn, name):
    def run(*args, **kwargs):
        ctx = _ctx_of(args)
        return _to_dev(fn(*_to_host(args), **{k: _to_host(v) for k, v in kwargs.items()}), ctx)

    run.__name__ = name
    run.__doc__ = (f"NumPy's ``linalg.{name}`` run on the host (an MXNet fallback "
                   f"operator).\n\n" + (fn.__doc__ or ""))
    return run


cond = _wrap_from(_onp.linalg.cond, "cond")
lstsq = _wrap_from(_onp.linalg.lstsq, "lstsq")
matrix_power = _wrap_from(_onp.linalg.matrix_power, "matrix_power")
matrix_rank = _wrap_from(_onp.linalg.matrix_rank, "matrix_rank")
multi_dot = _wrap_from(_onp.linalg.multi_dot, "multi_dot")
qr = _wrap_from(_onp.linalg.qr, "qr")
