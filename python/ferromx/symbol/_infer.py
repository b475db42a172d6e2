"""Shape and dtype inference over a symbol's graph.

Forward, node by node: an operator's output shapes come from a rule here (layers whose
output follows from a formula), else from the native table's inference on metadata
(``_native.op_infer``), else from running the operator once on zero arrays of the input
shapes (exact, since it is the same kernel; used for operators that have no inference
yet). Before that, a *parameter rule* fills in the shapes of an operator's parameters from
its data shape and attributes, as MXNet does (``FullyConnected``'s weight is
``(num_hidden, in_units)``, ``Convolution``'s ``(num_filter, C/num_group, *kernel)`` ...).
A 0 dimension is unknown (MXNet 1.x convention); ``None`` an unknown shape.
"""

import math
import warnings

import numpy as np

from .. import _native, autograd
from ..base import MXNetError, dtype_mx_to_np
from . import _spec


def _known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _tuple(attrs, key, default=()):
    v = attrs.get(key)
    if v is None or v == "None":
        return tuple(default)
    v = _spec._literal(v)
    return tuple(v) if isinstance(v, (list, tuple)) else (int(v),)


def _int(attrs, key, default=0):
    v = attrs.get(key)
    return default if v is None or v == "None" else int(float(v))


def _bool(attrs, key, default=False):
    v = attrs.get(key)
    return default if v is None else _spec._truthy(v)


# ----------------------------------------------------------------------------- parameters


def _fc_params(a, s):
    data = s[0]
    if data is None:
        return {}
    units = _int(a, "num_hidden")
    flat = _bool(a, "flatten", True)
    in_units = math.prod(data[1:]) if flat else data[-1]
    return {"weight": (units, in_units), "bias": (units,)}


def _conv_params(a, s, deconv=False):
    data = s[0]
    if data is None:
        return {}
    kernel = _tuple(a, "kernel")
    nf, ng = _int(a, "num_filter"), _int(a, "num_group", 1)
    layout = a.get("layout", "None").strip("'\"")
    c = data[-1] if layout in ("NHWC", "NWC", "NDHWC") else data[1]
    w = (c, nf // ng) + kernel if deconv else (nf, c // ng) + kernel
    return {"weight": w, "bias": (nf,)}


def _channel_params(names):
    def rule(a, s):
        data = s[0]
        if data is None:
            return {}
        axis = _int(a, "axis", 1)
        c = data[axis % len(data)]
        return dict.fromkeys(names, (c,))
    return rule


def _layernorm_params(a, s):
    data = s[0]
    if data is None:
        return {}
    c = data[_int(a, "axis", -1) % len(data)]
    return {"gamma": (c,), "beta": (c,)}


def _embedding_params(a, s):
    return {"weight": (_int(a, "input_dim"), _int(a, "output_dim"))}


def _prelu_params(a, s):
    data = s[0]
    if data is None or len(data) < 2:
        return {}
    return {"gamma": (data[1],)}


PARAM_RULES = {
    "FullyConnected": _fc_params,
    "Convolution": _conv_params,
    "Deconvolution": lambda a, s: _conv_params(a, s, deconv=True),
    "BatchNorm": _channel_params(["gamma", "beta", "moving_mean", "moving_var"]),
    "BatchNorm_v1": _channel_params(["gamma", "beta", "moving_mean", "moving_var"]),
    "IdentityAttachKLSparseReg": lambda a, s: {} if s[0] is None else {"moving_avg": (s[0][1],)},
    "InstanceNorm": _channel_params(["gamma", "beta"]),
    "LayerNorm": _layernorm_params,
    "Embedding": _embedding_params,
    "LeakyReLU": _prelu_params,
}

# ----------------------------------------------------------------------------- forward rules


def _same(a, s):
    return [s[0]]


def _fc_out(a, s):
    data = s[0]
    units = _int(a, "num_hidden")
    if _bool(a, "flatten", True):
        return [(data[0], units)]
    return [tuple(data[:-1]) + (units,)]


def _conv_out(a, s, deconv=False):
    data = s[0]
    kernel = _tuple(a, "kernel")
    nd_ = len(kernel)
    stride = _tuple(a, "stride", (1,) * nd_) or (1,) * nd_
    dilate = _tuple(a, "dilate", (1,) * nd_) or (1,) * nd_
    pad = _tuple(a, "pad", (0,) * nd_) or (0,) * nd_
    adj = _tuple(a, "adj", (0,) * nd_) or (0,) * nd_
    nf = _int(a, "num_filter")
    spatial = []
    for i in range(nd_):
        x = data[2 + i]
        ek = dilate[i] * (kernel[i] - 1) + 1
        if x == 0:
            spatial.append(0)
        elif deconv:
            spatial.append(stride[i] * (x - 1) + ek - 2 * pad[i] + adj[i])
        else:
            spatial.append((x + 2 * pad[i] - ek) // stride[i] + 1)
    return [(data[0], nf) + tuple(spatial)]


def _pool_out(a, s):
    data = s[0]
    n = len(data) - 2
    if _bool(a, "global_pool"):
        return [tuple(data[:2]) + (1,) * n]
    kernel = _tuple(a, "kernel")
    stride = _tuple(a, "stride", (1,) * n) or (1,) * n
    pad = _tuple(a, "pad", (0,) * n) or (0,) * n
    full = a.get("pooling_convention", "valid").strip("'\"") == "full"
    spatial = []
    for i in range(n):
        if not data[2 + i]:
            spatial.append(0)
            continue
        x = data[2 + i] + 2 * pad[i] - kernel[i]
        spatial.append((-(-x // stride[i]) if full else x // stride[i]) + 1)
    return [tuple(data[:2]) + tuple(spatial)]


def _embedding_out(a, s):
    return [tuple(s[0]) + (_int(a, "output_dim"),)]


def _bn_out(a, s):
    c = (s[0][_int(a, "axis", 1) % len(s[0])],)
    return [s[0], c, c]


FORWARD_RULES = {
    "FullyConnected": _fc_out,
    "Convolution": _conv_out,
    "Deconvolution": lambda a, s: _conv_out(a, s, deconv=True),
    "Pooling": _pool_out,
    "Activation": _same,
    "LeakyReLU": _same,
    "softmax": _same,
    "log_softmax": _same,
    "Dropout": _same,
    "LayerNorm": _same,
    "InstanceNorm": _same,
    "BatchNorm": _bn_out,
    "BatchNorm_v1": _bn_out,
    "Embedding": _embedding_out,
    "clip": _same,
}


def _eager(op, attrs, shapes, dtypes):
    """Output shapes and dtypes by running the operator on zeros (no gradient recorded)."""
    from .. import ndarray as nd
    from ..context import _ctx_str

    with autograd.pause():
        ins = [nd.zeros(sh, dtype=dt) for sh, dt in zip(shapes, dtypes)]
        res = _native.invoke(op, ins, **_spec.typed_attrs(op, attrs, _ctx_str))
    res = res if isinstance(res, list) else [res]
    return [tuple(r.shape) for r in res], [r.dtype for r in res]


def op_shapes(node, shapes, dtypes):
    """Visible output shapes of ``node`` from its (known) input shapes."""
    op, attrs = node.op, node.attrs
    n = node.num_outputs()
    try:
        if op in FORWARD_RULES:
            return list(FORWARD_RULES[op](attrs, shapes))[:n]
        d = _spec.BY_NAME[op]
        if d["infer"]:
            metas = [(list(s), np.dtype(t).name) for s, t in zip(shapes, dtypes)]
            res = _native.op_infer(op, metas, **_spec.typed_attrs(op, attrs, _ctx))
            return [tuple(r[0]) for r in res][:n]
        return _eager(op, attrs, shapes, dtypes)[0][:n]
    except MXNetError as err:
        raise MXNetError(f"Error in operator {node.name}: {op} cannot infer the output "
                         f"shape from input shapes {shapes}: {err}") from None


def _ctx(c):
    return "cpu(0)" if c is None else str(c)


def _merge(node_name, op, have, inferred):
    """Combine a given (possibly partial) shape with an inferred one."""
    if have is None:
        return tuple(inferred)
    if len(have) != len(inferred) or any(h and i and h != i for h, i in zip(have, inferred)):
        raise MXNetError(f"Error in operator {op}: Shape inconsistent, Provided = "
                         f"{list(have)}, inferred shape={tuple(inferred)} (input {node_name})")
    return tuple(h or i for h, i in zip(have, inferred))


def _given(sym, args, kwargs, what):
    names = sym.list_arguments()
    inputs = sym.list_inputs()
    given = {}
    if args:
        if len(args) > len(names):
            raise MXNetError(f"{what}: {len(args)} positional arguments for "
                             f"{len(names)} arguments {names}")
        given.update({n: v for n, v in zip(names, args) if v is not None})
    for k, v in kwargs.items():
        if k not in inputs:
            cands = "\n".join(f"\t[{i}]{n}" for i, n in enumerate(names))
            raise MXNetError(f"{what}Keyword argument name {k} not found.\nCandidate "
                             f"arguments:\n{cands}")
        if v is not None:
            given[k] = v
    return given


def _var_shape(node):
    s = node.attrs.get("__shape__")
    if s is None:
        return None
    v = _spec._literal(s)
    return tuple(v) if isinstance(v, (list, tuple)) else None


def _var_dtype(node):
    s = node.attrs.get("__dtype__")
    if s is None or int(s) < 0:
        return None
    return dtype_mx_to_np(int(s))


def _elemwise(node):
    return node.json_op.startswith("elemwise_") and len(node.inputs) == 2


# Operators whose first output has the first input's shape (both ways, partial shapes too).
_SAME_SHAPE = {"Activation", "softmax", "log_softmax", "Dropout", "clip", "cast", "_copy",
               "LayerNorm", "BatchNorm", "BatchNorm_v1", "InstanceNorm", "zeros_like", "ones_like",
               "full_like", "sort"}


def _same_shape(node):
    if node.op == "LeakyReLU":
        return True
    d = _spec.BY_NAME[node.op]
    return node.op in _SAME_SHAPE or (d.get("scalar") is not None and d["scalar"][0] in
                                      ("unary", "scalar"))


def _unify(a, b, what):
    """Merge two partial shapes (0: unknown dim, None: unknown shape)."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b) or any(x and y and x != y for x, y in zip(a, b)):
        raise MXNetError(f"Error in operator {what}: Shape inconsistent, Provided = "
                         f"{list(a)}, inferred shape={tuple(b)}")
    return tuple(x or y for x, y in zip(a, b))


class _Shapes:
    """Partial shapes of graph entries, merged as inference learns more."""

    def __init__(self):
        self.s = {}
        self.changed = False

    def get(self, entry):
        return self.s.get(entry)

    def set(self, entry, shape, what):
        if shape is None:
            return
        old = self.s.get(entry)
        new = _unify(old, tuple(int(d) for d in shape), what)
        if new != old:
            self.s[entry] = new
            self.changed = True


_SENTINELS = ((9973, 9967), (2, 3))
# Operators MXNet infers only from fully known inputs.
_NEEDS_KNOWN = {"where"}


def _partial_forward(node, ins, dts):
    """Output shapes from partial input shapes: infer twice with unknown dims set to two
    different sizes; dims that agree are known, the others unknown."""
    eager = not _spec.BY_NAME[node.op]["infer"] and node.op not in FORWARD_RULES
    pair = _SENTINELS[1] if eager else _SENTINELS[0]
    runs = []
    for v in pair:
        filled = [tuple(d or v for d in s) for s in ins]
        if eager and any(math.prod(s) > 1 << 22 for s in filled):
            return None
        try:
            runs.append(op_shapes(node, filled, dts))
        except MXNetError:
            return None
    out = []
    for r1, r2 in zip(*runs):
        if len(r1) != len(r2):
            out.append(None)
        else:
            out.append(tuple(x if x == y else 0 for x, y in zip(r1, r2)))
    return out


def _param_rules(node, shapes):
    rule = PARAM_RULES.get(node.op)
    if rule is None or not node.inputs:
        return
    ins = [shapes.get((id(n), i)) for n, i in node.inputs]
    for k, shp in rule(node.attrs, ins).items():
        if k in node.in_names and node.in_names.index(k) < len(node.inputs):
            src, idx = node.inputs[node.in_names.index(k)]
            if src.op is None and all(d > 0 for d in shp):
                shapes.set((id(src), idx), shp, node.name)


def _forward(node, shapes, dtype_of):
    _param_rules(node, shapes)
    entries = [(id(n), i) for n, i in node.inputs]
    out0 = (id(node), 0)
    if _elemwise(node):
        for e in entries:
            for f in entries + [out0]:
                shapes.set(f, shapes.get(e), node.name)
    if node.inputs and _same_shape(node):
        shapes.set(out0, shapes.get(entries[0]), node.name)
    ins = [shapes.get(e) for e in entries]
    if any(s is None for s in ins):
        return
    dts = [(dtype_of or {}).get(e, np.float32) for e in entries]
    if all(_known(s) for s in ins):
        outs = op_shapes(node, ins, dts)
    elif node.op in _NEEDS_KNOWN:
        return
    elif node.op in FORWARD_RULES:
        outs = list(FORWARD_RULES[node.op](node.attrs, ins))[:node.num_outputs()]
    else:
        outs = _partial_forward(node, ins, dts) or []
    for i, s in enumerate(outs):
        shapes.set((id(node), i), s, node.name)


def _backward(node, shapes):
    entries = [(id(n), i) for n, i in node.inputs]
    outs = [shapes.get((id(node), i)) for i in range(node.num_outputs())]
    if node.op == "split":  # every output has the same shape
        merged = None
        for o in outs:
            merged = _unify(merged, o, node.name)
        for i in range(len(outs)):
            shapes.set((id(node), i), merged, node.name)
        outs = [merged] * len(outs)
    if not entries or outs[0] is None:
        return
    if _elemwise(node) or _same_shape(node):
        shapes.set(entries[0], outs[0], node.name)
        if _elemwise(node):
            shapes.set(entries[1], outs[0], node.name)
        return
    rule = BACKWARD_RULES.get(node.op)
    if rule is not None:
        ins = [shapes.get(e) for e in entries]
        for pos, s in rule(node.attrs, ins, outs).items():
            shapes.set(entries[pos], s, node.name)


def _fc_back(a, ins, outs):
    data, out = ins[0], outs[0]
    if _bool(a, "flatten", True):
        if data is None:
            return {}
        return {0: (out[0],) + tuple(data[1:])}
    return {0: tuple(out[:-1]) + ((data or (0,) * len(out))[-1],)}


def _conv_back(a, ins, outs):
    out = outs[0]
    kernel = _tuple(a, "kernel")
    n = len(kernel)
    stride = _tuple(a, "stride", (1,) * n) or (1,) * n
    dilate = _tuple(a, "dilate", (1,) * n) or (1,) * n
    pad = _tuple(a, "pad", (0,) * n) or (0,) * n
    c = ins[0][1] if ins[0] is not None and len(ins[0]) > 1 else 0
    # With a stride above 1 several input sizes give the same output: leave it unknown.
    spatial = tuple((o - 1) * stride[i] + dilate[i] * (kernel[i] - 1) + 1 - 2 * pad[i]
                    if o and stride[i] == 1 else 0
                    for i, o in enumerate(out[2:]))
    return {0: (out[0], c) + spatial}


def _split_back(a, ins, outs):
    out = outs[0]
    k = _int(a, "num_outputs", 1)
    axis = _int(a, "axis", 1)
    if _bool(a, "squeeze_axis"):
        ax = axis % (len(out) + 1)
        return {0: tuple(out[:ax]) + (k,) + tuple(out[ax:])}
    ax = axis % len(out)
    return {0: tuple(out[:ax]) + (out[ax] * k,) + tuple(out[ax + 1:])}


def _concat_back(a, ins, outs):
    out = outs[0]
    axis = _int(a, "dim", 1) % len(out)
    res = {}
    unknown = [i for i, s in enumerate(ins) if s is None or not s[axis]]
    for i, s in enumerate(ins):
        known_axis = s[axis] if s is not None else 0
        res[i] = tuple(known_axis if j == axis else d for j, d in enumerate(out))
    if len(unknown) == 1 and out[axis]:
        rest = sum(s[axis] for i, s in enumerate(ins) if i != unknown[0])
        res[unknown[0]] = tuple(out[axis] - rest if j == axis else d for j, d in enumerate(out))
    return res


BACKWARD_RULES = {
    "FullyConnected": _fc_back,
    "Convolution": _conv_back,
    "split": _split_back,
    "concat": _concat_back,
}


def shape_pass(sym, given, dtype_of=None):
    """``{(id(node), index): shape}`` (partial: 0 dims unknown) for every entry that
    could be inferred: forward and backward over the graph until nothing changes."""
    shapes = _Shapes()
    nodes = sym._nodes()
    for node in nodes:
        if node.op is None:
            s = given.get(node.name)
            s = tuple(s) if s is not None else _var_shape(node)
            if s is not None:
                shapes.set((id(node), 0), tuple(max(d, 0) for d in s), node.name)
    ops = [n for n in nodes if n.op is not None]
    for _ in range(8):
        shapes.changed = False
        for node in ops:
            _forward(node, shapes, dtype_of)
        for node in reversed(ops):
            _backward(node, shapes)
        if not shapes.changed:
            break
    return shapes.s


def infer_shape(sym, args, kwargs, partial):
    """``Symbol.infer_shape`` / ``infer_shape_partial``."""
    given = _given(sym, args, kwargs, "InferShape")
    shapes = shape_pass(sym, given)
    arg_nodes, aux_nodes, _ = sym._arg_and_aux()

    def get(entry):
        return shapes.get(entry)

    arg_s = [get((id(n), 0)) for n in arg_nodes]
    out_s = [get((id(n), i)) for n, i in sym._heads]
    aux_s = [get((id(n), 0)) for n in aux_nodes]
    if partial:
        from ..util import is_np_shape

        if is_np_shape():
            def conv(s):
                return None if s is None else tuple(d or -1 for d in s)
        else:
            def conv(s):
                return s or ()
        return [conv(s) for s in arg_s], [conv(s) for s in out_s], [conv(s) for s in aux_s]
    if all(_known(s) for s in arg_s + out_s + aux_s):
        return arg_s, out_s, aux_s
    missing = [f"{n.name}: {s or ()}" for n, s in zip(arg_nodes + aux_nodes, arg_s + aux_s)
               if not _known(s)]
    warnings.warn("Cannot decide shape for the following arguments (0s in shape means unknown "
                  "dimensions). Consider providing them as input:\n\t" + "\n\t".join(missing),
                  stacklevel=3)
    return None, None, None


def _out_dtypes(node, ins):
    op, attrs = node.op, node.attrs
    n = node.num_outputs()
    first = next((t for t in ins if t is not None), None)
    params = _spec.params(op)
    dt = attrs.get("dtype")
    if op == "topk":
        idx = np.dtype((dt or "float32").strip("'\"")).type
        kind = attrs.get("ret_typ", "indices").strip("'\"")
        return [first, idx][:n] if kind == "both" else [first if kind in ("value",) else idx]
    if "dtype" in params and dt not in (None, "None"):
        return [np.dtype(dt.strip("'\"")).type] * n
    if not node.inputs:
        return [np.float32] * n
    return [first] * n


def type_pass(sym, given):
    """``{(id(node), index): numpy type}``."""
    types = {}
    for node in sym._nodes():
        if node.op is None:
            t = given.get(node.name)
            t = np.dtype(t).type if t is not None else _var_dtype(node)
            if t is not None:
                types[(id(node), 0)] = np.dtype(t).type
            continue
        ins = [types.get((id(n), i)) for n, i in node.inputs]
        first = next((t for t in ins if t is not None), None)
        if first is None and node.inputs:
            continue
        for pos, (src, idx) in enumerate(node.inputs):  # parameters take the data's type
            if ins[pos] is None and src.op is None:
                types[(id(src), idx)] = ins[pos] = first
        for i, t in enumerate(_out_dtypes(node, ins)):
            if t is not None:
                types[(id(node), i)] = t
    return types


def infer_type(sym, args, kwargs, partial):
    """``Symbol.infer_type`` / ``infer_type_partial``."""
    given = _given(sym, args, kwargs, "InferType")
    types = type_pass(sym, given)
    arg_nodes, aux_nodes, _ = sym._arg_and_aux()
    arg_t = [types.get((id(n), 0)) for n in arg_nodes]
    out_t = [types.get((id(n), i)) for n, i in sym._heads]
    aux_t = [types.get((id(n), 0)) for n in aux_nodes]
    if not partial and any(t is None for t in arg_t + out_t + aux_t):
        return None, None, None
    return arg_t, out_t, aux_t
