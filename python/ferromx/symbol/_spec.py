"""What the symbol layer needs to know about each operator, read from the native operator
table: input names (which inputs are present for given attributes), auxiliary states,
visible and total output counts, output names, and string <-> typed attribute conversion.
The per-operator facts (a bias absent under ``no_bias``, BatchNorm's named and hidden
outputs, a weight's shape from the data's) are the table's ``graph`` entry and its
``op_graph_inputs`` / ``op_graph_outputs`` / ``op_param_shapes`` functions; this module
holds only MXNet's graph-JSON spellings.

Graph attributes are strings, as in MXNet's graph JSON (``{"num_hidden": "4"}``); they are
parsed to typed values by the parameter's kind when a graph is executed or inferred.
"""

import ast
import functools

from .. import _native, _op_gen
from ..base import MXNetError, MXNetValueError

TABLE = _op_gen.TABLE
BY_NAME = dict(_op_gen.BY_NAME)
# every name an operator is known by in graph JSON: its own, its nd aliases, MXNet's
# spelling and the legacy names (the table's graph entry: "Reshape", "_Plus", ...).
RESOLVE = {}
for _d in TABLE:
    RESOLVE[_d["name"]] = _d["name"]
for _d in TABLE:
    for _a in _d["nd"] + _d["graph"]["json_aliases"] + [_d["graph"]["json_name"] or _d["name"]]:
        RESOLVE.setdefault(_a, _d["name"])

# MXNet's own spelling of operators ferromx's table names differently (written to JSON).
MXNET_NAMES = {_d["name"]: _d["graph"]["json_name"] for _d in TABLE if _d["graph"]["json_name"]}

# Attributes MXNet records that do not change the computation on ferromx (cuDNN choices,
# workspace size, the variadic input count): accepted and ignored at execution.
IGNORED_ATTRS = {"cudnn_off", "cudnn_tune", "workspace", "num_args", "is_int"}


def resolve(op):
    """The table name of graph operator ``op``; ``MXNetValueError`` if ferromx lacks it."""
    name = RESOLVE.get(op)
    if name is None:
        raise MXNetValueError(f"operator {op!r} is not in ferromx's operator table "
                              f"(the graph uses it)")
    return name


def params(op):
    """``{name: (kind, default)}`` of the operator's parameters."""
    return {p[0]: (p[1], p[2]) for p in BY_NAME[op]["params"]}


def is_available(op):
    """Whether ferromx can run operator ``op`` (not only load it)."""
    return op in BY_NAME


def _graph(op):
    """The table's graph entry (see ``_native.op_table``)."""
    return BY_NAME[op]["graph"]


def input_init(op, in_name):
    """The initializer (JSON) an operator gives an input variable that has none (MXNet's
    ``FSetInputVarAttrOnCompose``: BatchNorm's moving statistics, PReLU's slope)."""
    return _graph(op)["input_init"].get(in_name)


def _typed(op, attrs):
    from ..context import _ctx_str

    return typed_attrs(op, attrs, _ctx_str)


def is_variadic(op):
    """Whether the operator takes any number of inputs (``concat``, ``stack``)."""
    ins = BY_NAME[op]["inputs"]
    return bool(ins) and ins[0].startswith("*")


def _truthy(v):
    return str(v).strip().lower() in ("true", "1")


@functools.lru_cache(maxsize=4096)
def _graph_inputs(op, items):
    return tuple(_native.op_graph_inputs(op, **_typed(op, dict(items))))


def input_names(op, attrs, n_given=None):
    """The operator's input names for string ``attrs`` (the table's rule drops optional
    ones: a bias with ``no_bias``, LeakyReLU's gamma unless ``prelu``, unused lengths),
    auxiliary states last."""
    d = BY_NAME[op]
    if is_variadic(op):
        n = n_given if n_given is not None else int(attrs.get("num_args", 1))
        return [f"arg{i}" for i in range(n)]
    if _graph(op)["inputs"]:
        try:
            return list(_graph_inputs(op, tuple(sorted(attrs.items()))))
        except TypeError:  # an unhashable attribute value
            return _native.op_graph_inputs(op, **_typed(op, attrs))
    return list(d["inputs"]) + [a for a in d["aux"] if a not in d["inputs"]]


def aux_names(op):
    """Names of the operator's auxiliary states (inputs it updates, not arguments)."""
    return list(BY_NAME[op]["aux"])


@functools.lru_cache(maxsize=4096)
def _graph_outputs(op, items):
    return _native.op_graph_outputs(op, **_typed(op, dict(items)))


def _outputs(op, attrs):
    """``(visible, total, names)`` of a node's outputs (names: MXNet's suffixes)."""
    outs = BY_NAME[op]["outputs"]
    if outs and outs[0].startswith("*"):  # split: ``num_outputs``
        n = int(attrs.get("num_outputs", 1))
        return n, n, ["output"] if n == 1 else [f"output{i}" for i in range(n)]
    g = _graph(op)
    if not g["visible"] and g["total"] == "visible" and not g["named_outputs"]:
        n = len(outs)
        return n, n, ["output"] if n == 1 else [f"output{i}" for i in range(n)]
    try:
        return _graph_outputs(op, tuple(sorted(attrs.items())))
    except TypeError:  # an unhashable attribute value
        return _native.op_graph_outputs(op, **_typed(op, attrs))


def num_outputs(op, attrs):
    """How many outputs the operator shows (``split``: ``num_outputs``; else the table's
    rule: ``topk``: 2 with ``ret_typ='both'``, ``BatchNorm``: 3 with ``output_mean_var``)."""
    return _outputs(op, attrs)[0]


def total_outputs(op, attrs):
    """Outputs counted in MXNet's ``node_row_ptr`` (hidden ones included)."""
    return _outputs(op, attrs)[1]


def output_names(op, attrs):
    """MXNet's output suffixes: named, numbered (a node with several outputs in all), or
    ``output``."""
    return list(_outputs(op, attrs)[2])


def same_shape(op):
    """Whether the node's first output has its first input's shape (the table's flag, or an
    elementwise unary or scalar operator), so partial shapes cross it both ways."""
    d = BY_NAME[op]
    return _graph(op)["same_shape"] or (d.get("scalar") is not None
                                        and d["scalar"][0] in ("unary", "scalar", "test"))


def input_shapes(op, attrs, ins, outs):
    """Input shapes the table's rule gives from partial input and output shapes (``None``
    where it says nothing, or all ``None`` without a rule)."""
    if not _graph(op)["input_shapes"]:
        return [None] * len(ins)
    as_list = [None if s is None else list(s) for s in ins]
    res = _native.op_input_shapes(op, as_list, [None if s is None else list(s) for s in outs],
                                  **_typed(op, attrs))
    return [None if s is None else tuple(s) for s in res]


def param_shapes(op, attrs, data):
    """``{input name: shape}`` the table's rule gives the operator's parameters from the
    (partial) ``data`` shape; empty without a rule or when the attributes do not parse."""
    if not _graph(op)["param_shapes"]:
        return {}
    try:
        pairs = _native.op_param_shapes(op, None if data is None else list(data),
                                        **_typed(op, attrs))
    except (MXNetError, ValueError, TypeError):
        return {}  # the forward inference reports bad attributes with the node's name
    return {k: tuple(s) for k, s in pairs}


def attr_str(value):
    """An attribute's string form, as MXNet writes it (``str(value)``; dtypes by name)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple):  # NumPy scalars inside print as np.int64(0) (NumPy 2)
        value = tuple(v.item() if hasattr(v, "item") and not isinstance(v, str) else v
                      for v in value)
    if isinstance(value, type) or hasattr(value, "type"):  # numpy dtype or scalar type
        try:
            import numpy as np

            return np.dtype(value).name
        except TypeError:
            pass
    return str(value)


def _literal(s):
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return s


def parse_attr(op, key, s):
    """A string attribute as the typed value the native operator takes."""
    kind = params(op)[key][0]
    s = s.strip()
    if s == "None":
        return None
    if kind == "bool":
        return _truthy(s)
    if kind == "int":
        return int(float(s))
    if kind == "float":
        return float(s)
    if kind == "str":
        return s.strip("'\"")
    if kind.startswith("int | tuple"):
        v = _literal(s)
        if isinstance(v, list):
            v = tuple(v)
        if op == "slice" and isinstance(v, tuple):
            # MXNet writes open ends as None ("(1, None)"); they reach the operator as
            # ndarray.slice passes them (NONE_INDEX)
            from ..ndarray import _NONE_INDEX

            v = tuple(_NONE_INDEX if e is None else e for e in v)
        return v
    if key == "dtype":
        return s.strip("'\"")
    return _literal(s) if s[:1] in "([{0123456789-" else s.strip("'\"")


def typed_attrs(op, attrs, ctx_str=None):
    """The keyword arguments of ``invoke`` for string ``attrs`` (annotations and
    attributes that do not change the computation dropped)."""
    known = params(op)
    out = {}
    for key, value in attrs.items():
        if key in known:
            out[key] = parse_attr(op, key, value)
    if "ctx" in known:
        out["ctx"] = ctx_str(out.get("ctx"))
    return out


def check_attrs(op, public, kwargs):
    """Rejects keyword arguments the operator does not declare (as ``nd`` does)."""
    known = params(op)
    for key in kwargs:
        if key not in known and key not in IGNORED_ATTRS and not key.startswith("__"):
            raise MXNetValueError(f"{public}: unknown parameter {key!r} (parameters of "
                                  f"{op}: {', '.join(known) or 'none'})")
