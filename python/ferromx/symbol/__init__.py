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
