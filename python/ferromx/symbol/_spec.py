"""What the symbol layer needs to know about each operator, read from the native operator
table: input names (which inputs are present for given attributes), auxiliary states,
visible and total output counts, output names, and string <-> typed attribute conversion.

Graph attributes are strings, as in MXNet's graph JSON (``{"num_hidden": "4"}``); they are
parsed to typed values by the parameter's kind when a graph is executed or inferred.
"""

import ast

from .. import _op_gen
from ..base import MXNetValueError

TABLE = _op_gen.TABLE
BY_NAME = dict(_op_gen.BY_NAME)


def _fallback(inputs, aux=(), no_bias="False"):
    return {"inputs": list(inputs), "aux": list(aux), "outputs": ["output"], "nd": [],
            "params": [("no_bias", "bool", no_bias, "")] if "bias" in inputs else [],
            "infer": False, "fallback": True}


# MXNet layers whose graphs ferromx can load and shape-infer before its table has them
# (executing such a graph is an error naming the operator); the table's entry wins.
FALLBACK = {
    "Convolution": _fallback(["data", "weight", "bias"]),
    "Deconvolution": _fallback(["data", "weight", "bias"], no_bias="True"),
    "BatchNorm": _fallback(["data", "gamma", "beta", "moving_mean", "moving_var"],
                           ["moving_mean", "moving_var"]),
    "Pooling": _fallback(["data"]),
    "InstanceNorm": _fallback(["data", "gamma", "beta"]),
}
for _k, _v in FALLBACK.items():
    BY_NAME.setdefault(_k, dict(_v, name=_k))
# every name an operator is known by in graph JSON (own name, nd aliases): MXNet writes
# "Reshape", "Concat", "elemwise_add" ... where ferromx's table names are the lower forms.
RESOLVE = {}
for _d in TABLE:
    RESOLVE[_d["name"]] = _d["name"]
for _d in TABLE:
    for _a in _d["nd"]:
        RESOLVE.setdefault(_a, _d["name"])
# MXNet graph op names that are other spellings of a ferromx operator.
RESOLVE.update({k: v for k, v in {
    "_plus": "broadcast_add", "_Plus": "broadcast_add", "_minus": "broadcast_sub",
    "_Minus": "broadcast_sub", "_mul": "broadcast_mul", "_Mul": "broadcast_mul",
    "_div": "broadcast_div", "_Div": "broadcast_div", "_mod": "broadcast_mod",
    "_power": "broadcast_power", "_Power": "broadcast_power", "_maximum": "broadcast_maximum",
    "_minimum": "broadcast_minimum", "_hypot": "broadcast_hypot", "_equal": "broadcast_equal",
    "_not_equal": "broadcast_not_equal", "_greater": "broadcast_greater",
    "_greater_equal": "broadcast_greater_equal", "_lesser": "broadcast_lesser",
    "_lesser_equal": "broadcast_lesser_equal", "_PlusScalar": "_plus_scalar",
    "_MinusScalar": "_minus_scalar", "_RMinusScalar": "_rminus_scalar",
    "_MulScalar": "_mul_scalar", "_DivScalar": "_div_scalar", "_RDivScalar": "_rdiv_scalar",
    "_PowerScalar": "_power_scalar", "_RPowerScalar": "_rpower_scalar",
    "_ModScalar": "_mod_scalar", "_RModScalar": "_rmod_scalar", "identity": "_copy",
    "_copy": "_copy", "zeros_like": "zeros_like", "ones_like": "ones_like",
}.items() if v in BY_NAME})
for _k in FALLBACK:
    RESOLVE.setdefault(_k, _k)

# MXNet's own spelling of operators ferromx's table names differently (written to JSON).
MXNET_NAMES = {k: v for k, v in {
    "reshape": "Reshape", "flatten": "Flatten", "concat": "Concat", "split": "SliceChannel",
    "cast": "Cast", "swapaxes": "SwapAxis", "linalg_gemm2": "_linalg_gemm2",
}.items() if k in BY_NAME}

# Attributes MXNet records that do not change the computation on ferromx (cuDNN choices,
# workspace size, the variadic input count): accepted and ignored at execution.
IGNORED_ATTRS = {"cudnn_off", "cudnn_tune", "workspace", "num_args", "is_int"}

# Named outputs (MXNet's FListOutputNames) where they differ from output0, output1, ...
_OUTPUT_NAMES = {"BatchNorm": ["output", "mean", "var"], "BatchNorm_v1": ["output", "mean", "var"],
                 "LayerNorm": ["output", "mean", "std"]}
# Outputs an operator has in the graph beyond the visible ones (node_row_ptr counts them).
_TOTAL_OUTPUTS = {"BatchNorm": 3, "BatchNorm_v1": 3, "Dropout": 2, "LayerNorm": 3, "InstanceNorm": 3, "Pooling": 2,
                  "GridGenerator": 2, "BilinearSampler": 2, "SpatialTransformer": 3, "ROIPooling": 2,
                  "Correlation": 3}
# Initializers MXNet gives auto-created auxiliary states.
AUX_INIT = {"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'}
# Initializers an operator gives a variable bound to one of its inputs when the variable has
# none (MXNet's ``FSetInputVarAttrOnCompose``): PReLU's slope starts at 0.25.
INPUT_INIT = {("LeakyReLU", "gamma"): '["Constant", {"value": 0.25}]'}


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
    return not BY_NAME[op].get("fallback", False)


def is_variadic(op):
    """Whether the operator takes any number of inputs (``concat``, ``stack``)."""
    ins = BY_NAME[op]["inputs"]
    return bool(ins) and ins[0].startswith("*")


def _truthy(v):
    return str(v).strip().lower() in ("true", "1")


# inputs an operator takes only when a flag attribute says so (as MXNet's ListArguments)
_OPTIONAL_BY_FLAG = {"sequence_length": "use_sequence_length", "data_lengths": "use_data_lengths",
                     "label_lengths": "use_label_lengths"}


def input_names(op, attrs, n_given=None):
    """The operator's input names for string ``attrs`` (optional ones dropped: a bias with
    ``no_bias``, LeakyReLU's gamma unless ``prelu``), auxiliary states last."""
    d = BY_NAME[op]
    if is_variadic(op):
        n = n_given if n_given is not None else int(attrs.get("num_args", 1))
        return [f"arg{i}" for i in range(n)]
    names = list(d["inputs"])
    if "bias" in names and _truthy(attrs.get("no_bias", _default(op, "no_bias"))):
        names.remove("bias")
    if op == "LeakyReLU" and attrs.get("act_type", "leaky") != "prelu":
        names.remove("gamma")
    for name, flag in _OPTIONAL_BY_FLAG.items():  # lengths inputs exist only when used
        if name in names and flag in params(op) and not _truthy(attrs.get(flag, _default(op, flag))):
            names.remove(name)
    names += [a for a in d["aux"] if a not in names]
    return names


def _default(op, key):
    p = params(op).get(key)
    return "False" if p is None or p[1] is None else p[1]


def aux_names(op):
    """Names of the operator's auxiliary states (inputs it updates, not arguments)."""
    return list(BY_NAME[op]["aux"])


def num_outputs(op, attrs):
    """How many outputs the operator shows (``split``: ``num_outputs``; ``topk``: 2 with
    ``ret_typ='both'``; ``BatchNorm``: 3 with ``output_mean_var``)."""
    outs = BY_NAME[op]["outputs"]
    if outs and outs[0].startswith("*"):
        return int(attrs.get("num_outputs", 1))
    if op == "topk":
        return 2 if attrs.get("ret_typ", "indices").strip("'\"") == "both" else 1
    if op in _OUTPUT_NAMES:
        return len(_OUTPUT_NAMES[op]) if _truthy(attrs.get("output_mean_var", "False")) else 1
    if op == "Dropout":
        return 1
    return len(outs)


def total_outputs(op, attrs):
    """Outputs counted in MXNet's ``node_row_ptr`` (hidden ones included)."""
    return max(_TOTAL_OUTPUTS.get(op, 0), num_outputs(op, attrs))


def output_names(op, attrs):
    """MXNet's output suffixes: ``output`` for one output, else named or numbered."""
    n = num_outputs(op, attrs)
    if n == 1:
        return ["output"]
    if op in _OUTPUT_NAMES:
        return _OUTPUT_NAMES[op][:n]
    return [f"output{i}" for i in range(n)]


def attr_str(value):
    """An attribute's string form, as MXNet writes it (``str(value)``; dtypes by name)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        value = tuple(value)
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
    if kind.startswith("Union[int"):
        v = _literal(s)
        if isinstance(v, list):
            v = tuple(v)
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
