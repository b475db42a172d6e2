"""``mx.sym._internal``: the table's internal (underscore) operators as symbol functions
(``_plus_scalar``, ``_identity_with_attr_like_rhs`` ...), as MXNet exposes them."""

from . import symbol as _symbol_mod

globals().update({k: v for k, v in _symbol_mod._FNS.items() if k.startswith("_")})
