"""The ``nd`` functions generated from the native operator table (see ``ferromx._op_gen``):
one per operator and alias, with MXNet's parameters, docstrings and signatures."""

from .. import _native, _op_gen
from ..context import _ctx_str
from .ndarray import NDArray, _dtype_name, array, invoke


def finish(res, out):
    """Handles MXNet's ``out=`` argument: copy the result into ``out`` and return it."""
    if out is None:
        return res
    if isinstance(out, NDArray) and isinstance(res, NDArray):
        if out is not res:
            if out.shape != res.shape:
                raise ValueError(f"out= has shape {out.shape}, result has {res.shape}")
            if _native.is_recording():
                out[:] = res  # MXNet's rules: a recorded copy, or an error into the graph
            else:
                out._slice_assign([], res)
        return out
    return res


class _Env:
    """What generated functions call."""

    invoke = staticmethod(invoke)
    finish = staticmethod(finish)
    array = staticmethod(array)
    NDArray = NDArray
    ctx_str = staticmethod(_ctx_str)
    dtype_name = staticmethod(_dtype_name)


_FNS = _op_gen.build(_Env)
CONTRIB_FNS = _op_gen.build_contrib(_Env)
globals().update(_FNS)
__all__ = sorted(_FNS)  # noqa: PLE0605 - names generated from the table
