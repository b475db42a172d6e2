"""``mx.sym`` / ``mx.symbol``: MXNet's symbolic API over ferromx's operator table.

Every operator of the native table has a function here under its ``nd`` names (generated
at import, so new operators appear without a Python edit), plus :func:`var`,
:func:`Group`, :func:`load`/:func:`load_json` (MXNet 1.9.1's graph JSON) and the
:class:`Symbol` methods (``list_arguments``, ``infer_shape``, ``tojson``, ``bind`` ...).

``F`` namespaces: hybridized Gluon blocks trace ``hybrid_forward(F, ...)`` with
``F = mx.sym``; :data:`_F_HOOK` is where an np-flavoured namespace plugs in under np mode.
"""

from . import _internal, contrib, random  # noqa: F401 - mx.sym._internal
from . import symbol as _symbol_mod
from .executor import Executor
from .symbol import Group, Symbol, Variable, fromjson, load, load_json, var

globals().update(_symbol_mod._FNS)
zeros = _symbol_mod._FNS["_zeros"]
ones = _symbol_mod._FNS["_ones"]
full = _symbol_mod._FNS["_full"]

# ``F`` for traced hybrid_forward: a callable returning the namespace (np mode may swap it).
_F_HOOK = [lambda: __import__(__name__, fromlist=["_"])]

__all__ = ["Executor", "Group", "Symbol", "Variable", "contrib", "fromjson", "load", "load_json", "random", "var"]
__all__ += sorted(_symbol_mod._FNS)  # noqa: PLE0605 - names generated from the table

# mx.sym.np / mx.sym.npx (NumPy-semantics symbols), importable as modules too
import sys as _sys

from . import _np_symbol
from ._custom import Custom  # noqa: F401 - mx.sym.Custom


def _install_nd_functions():
    """``mx.sym.random_pdf_*``: the ``nd`` densities (Python over table operators) as
    function nodes."""
    from ..ndarray import _extra

    for fname in _extra.__all__:
        if fname.startswith("random_pdf_") and fname not in globals():
            globals()[fname] = _np_symbol.nd_function(fname, getattr(_extra, fname))
            __all__.append(fname)


_install_nd_functions()

from . import _nd_functions, _optimize

__all__ += _nd_functions.install(globals())  # noqa: PLE0605
_optimize.install(Symbol)

np = numpy = _np_symbol.np
npx = numpy_extension = _np_symbol.npx
_sys.modules[np.__name__] = np
_sys.modules[npx.__name__] = npx
