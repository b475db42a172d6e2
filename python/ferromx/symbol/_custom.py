"""``mx.sym.Custom``: a Python operator (``mx.operator.register``) as a graph node.

The node is a :class:`~ferromx.symbol._np_symbol.FunctionNode` that calls
``mx.nd.Custom`` on its input arrays, so the graph runs the operator's ``forward`` on the
engine and its ``backward`` through autograd, exactly as the imperative call does. Inputs
are named by the operator's ``list_arguments``/``list_auxiliary_states`` (missing ones
become variables ``<name>_<input>``, as in MXNet) and outputs by its ``list_outputs``.
"""

from .. import name as _name
from ..base import MXNetError
from ._np_symbol import FunctionNode
from .symbol import Symbol, _single, var

__all__ = ["Custom"]


def Custom(*args, op_type=None, name=None, attr=None, **kwargs):
    """The custom operator ``op_type`` applied to Symbol inputs (positional in its
    ``list_arguments`` order, or by name); other keywords go to its ``CustomOpProp``."""
    from .. import operator as _op

    if op_type is None:
        raise MXNetError("Custom: op_type is required")
    if op_type not in _op._REGISTRY:
        raise MXNetError(f"Custom: no operator registered as {op_type!r} "
                         f"(registered: {sorted(_op._REGISTRY)})")
    params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
    prop = _op._REGISTRY[op_type](**{k: str(v) for k, v in params.items()})
    arg_names, aux_names = prop.list_arguments(), prop.list_auxiliary_states()
    names = list(arg_names) + list(aux_names)
    if len(args) > len(names):
        raise MXNetError(f"Custom({op_type}): {len(args)} inputs for {names}")
    node_name = _name.NameManager._thread_current().get(name, op_type.lower())
    given = dict(zip(names, args))
    given.update({k: v for k, v in kwargs.items() if isinstance(v, Symbol)})
    entries = [_single(given[n] if n in given else var(f"{node_name}_{n}"), "Custom")
               for n in names]
    attrs = {"op_type": op_type, **{k: str(v) for k, v in params.items()}}

    def call(arrays):
        from ..ndarray import Custom as nd_custom

        return nd_custom(*arrays, op_type=op_type, **params)

    outs = prop.list_outputs()
    node = FunctionNode("Custom", node_name, call, entries, len(outs), attrs, np_io=False,
                        in_names=names, out_names=list(outs),
                        aux=range(len(arg_names), len(names)))
    return Symbol([(node, i) for i in range(len(outs))])
