"""NumPy-style signatures for builtin operators (MXNet's ``mxnet.numpy_op_signature``).

:func:`_get_builtin_op` maps a registered operator name (``_np_sum``,
``_np_random_normal``, ``_npx_relu`` ...) to the ``np`` / ``npx`` function that exposes
it; at import, every stub in :mod:`ferromx._numpy_op_doc` lends its signature to that
function, so ``inspect.signature`` shows NumPy's parameters.
"""

import inspect

from . import _numpy_op_doc
from . import numpy as mx_np
from . import numpy_extension as mx_npx
from .base import (
    _NP_EXT_OP_PREFIX,
    _NP_EXT_OP_SUBMODULE_LIST,
    _NP_OP_PREFIX,
    _NP_OP_SUBMODULE_LIST,
    _get_op_submodule_name,
)

__all__ = []


def _get_builtin_op(op_name):
    """The ``np``/``npx`` function for operator ``op_name``; ``None`` for a name with
    neither prefix; ``ValueError`` when the prefix is right but no such function exists."""
    if op_name.startswith(_NP_OP_PREFIX):
        root, prefix, subs = mx_np, _NP_OP_PREFIX, _NP_OP_SUBMODULE_LIST
    elif op_name.startswith(_NP_EXT_OP_PREFIX):
        root, prefix, subs = mx_npx, _NP_EXT_OP_PREFIX, _NP_EXT_OP_SUBMODULE_LIST
    else:
        return None
    sub = _get_op_submodule_name(op_name, prefix, subs)
    module = root
    if sub:
        module = getattr(root, sub[1:-1], None)
        if module is None:
            raise ValueError(f"Cannot find submodule {sub[1:-1]} in module {root.__name__}")
    name = op_name[len(prefix) + len(sub) :]
    op = getattr(module, name, None)
    if op is None:
        raise ValueError(f"Cannot find operator {op_name[len(prefix):]} in module {root.__name__}")
    return op


def _register_op_signatures():
    """Give each documented operator's function the signature of its stub."""
    for op_name in dir(_numpy_op_doc):
        op = _get_builtin_op(op_name)
        if op is not None:
            op.__signature__ = inspect.signature(getattr(_numpy_op_doc, op_name))


_register_op_signatures()
