"""``Symbol.optimize_for`` and the backend names ``optimize_for`` accepts (MXNet's graph
backend API; what it does in ferromx is described in ``gluon/_optimize.py``)."""

import warnings

from ..base import MXNetError

# the backend names MXNet 1.9.1's CPU build registers, plus MXNet 2's spelling
BACKENDS = ("MKLDNN", "MKLDNN_QUANTIZE", "ONEDNN", "ONEDNN_QUANTIZE")


def check_backend(backend, where):
    """Refuse a missing backend; warn about one ferromx does not know (MXNet logs it)."""
    if not backend:
        raise ValueError(f'Must specify "backend" to {where}')
    if not isinstance(backend, str):
        raise TypeError(f"{where}: backend must be a str, got {type(backend).__name__}")
    if backend not in BACKENDS:
        warnings.warn(f"{where}: backend {backend!r} cannot be found (ferromx knows "
                      f"{', '.join(BACKENDS)}); the graph is left unchanged", stacklevel=4)


def optimize_symbol(sym, backend, args=None, aux=None, ctx=None, **kwargs):
    """``Symbol.optimize_for``: the symbol for ``backend``. ferromx's fusions happen when a
    graph runs, so this is the same graph (a copy), checked to infer where ``args`` /
    ``aux`` give shapes."""
    check_backend(backend, "optimize_for")
    shapes = {}
    for given in (args, aux):
        if isinstance(given, dict):
            shapes.update({k: v.shape for k, v in given.items() if hasattr(v, "shape")})
        elif given is not None:
            raise MXNetError("optimize_for: args and aux must be dicts of name -> NDArray")
    if shapes and not kwargs.get("skip_infer", False):
        sym.infer_shape_partial(**shapes)
    return sym._clone({})


def _optimize_for(self, backend, args=None, aux=None, ctx=None, **kwargs):
    """The symbol for ``backend`` (MXNet's ``Symbol.optimize_for``; see
    :func:`optimize_symbol`)."""
    return optimize_symbol(self, backend, args, aux, ctx, **kwargs)


def install(symbol_cls):
    """``Symbol.optimize_for``."""
    symbol_cls.optimize_for = _optimize_for
