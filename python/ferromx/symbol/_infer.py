"""Shape and dtype inference over a symbol's graph.

Forward, node by node: an operator's output shapes come from the native table's
inference on metadata (``_native.op_infer``), else from running the operator once on zero
arrays of the input shapes (exact, since it is the same kernel; for an operator without
inference). Partial shapes (0 dims unknown) go through the same inference twice, with the
unknown dims at two sizes. Backward, the table's input-shape rule (``input_shapes``) and
its same-shape flag carry output shapes to inputs. Before the forward step, the table's
*parameter rule* fills in the shapes of an operator's parameters from its data shape and
attributes, as MXNet does (``FullyConnected``'s weight is ``(num_hidden, in_units)``,
``Convolution``'s ``(num_filter, C/num_group, *kernel)`` ...: ``_spec.param_shapes``).
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


def _eager(op, attrs, shapes, dtypes):
    """Output shapes and dtypes by running the operator on zeros (no gradient recorded)."""
    from .. import ndarray as nd
    from ..context import _ctx_str

    with autograd.pause():
        ins = [nd.zeros(sh, dtype=dt) for sh, dt in zip(shapes, dtypes)]
        res = _native.invoke(op, ins, **_spec.typed_attrs(op, attrs, _ctx_str))
    res = res if isinstance(res, list) else [res]
    settle(res)
    return [tuple(r.shape) for r in res], [r.dtype for r in res]


def settle(arrays):
    """Waits for arrays computed only for their metadata (inference on zeros, a trace on
    placeholders), dropping their errors: a kernel failing on those values (a Cholesky of
    zeros) must not be reported later by a user's ``waitall``."""
    for a in arrays:
        try:
            a.wait_to_read()
        except MXNetError:
            pass


def op_shapes(node, shapes, dtypes):
    """Visible output shapes of ``node`` from its (known) input shapes."""
    op, attrs = node.op, node.attrs
    n = node.num_outputs()
    try:
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


def _same_shape(node):
    return _spec.same_shape(node.op)


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


def _fill(shape, v):
    return tuple(d or v for d in shape)


def _partial_forward(node, ins, dts):
    """Output shapes from partial input shapes: infer twice with unknown dims set to two
    different sizes; dims that agree are known, the others unknown. An unknown parameter
    shape is taken each time from the table's parameter rule on the filled data shape (a
    FullyConnected's output is known from its data's batch alone)."""
    eager = not _spec.BY_NAME[node.op]["infer"]
    pair = _SENTINELS[1] if eager else _SENTINELS[0]
    runs = []
    for v in pair:
        filled = [None if s is None else _fill(s, v) for s in ins]
        if any(s is None for s in filled):
            params = _spec.param_shapes(node.op, node.attrs, filled[0])
            for pos, s in enumerate(filled):
                name = node.in_names[pos] if pos < len(node.in_names) else None
                if s is None and name in params:
                    filled[pos] = _fill(params[name], v)
            if any(s is None for s in filled):
                return None
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
    """The table's parameter shapes for ``node``'s parameter inputs, partial ones too (a
    convolution's weight ``(64, 0, 7, 7)`` while the data's channels are unknown), on
    whatever feeds them (a variable, or a ``cast`` whose input then gets the shape
    backward), as MXNet's ``FInferShape`` fills them in."""
    if not node.inputs:
        return
    data = shapes.get((id(node.inputs[0][0]), node.inputs[0][1]))
    for k, shp in _spec.param_shapes(node.op, node.attrs, data).items():
        if k in node.in_names and node.in_names.index(k) < len(node.inputs) and shp:
            src, idx = node.inputs[node.in_names.index(k)]
            shapes.set((id(src), idx), shp, node.name)


def _fn_forward(node, shapes, dtype_of):
    """An mx.np function node: its outputs from running it on zeros of known input shapes
    (dtypes too, kept on the node for the type pass)."""
    entries = [(id(n), i) for n, i in node.inputs]
    ins = [shapes.get(e) for e in entries]
    if not all(s is not None and _known(s) for s in ins):
        return
    dts = [(dtype_of or {}).get(e, np.float32) for e in entries]
    try:
        outs, out_dts = node.infer(ins, dts)
    except Exception as err:  # noqa: BLE001 - the function's own error, named
        raise MXNetError(f"Error in operator {node.name}: {node.op} cannot infer the output "
                         f"shape from input shapes {ins}: {err}") from None
    node.inferred = (tuple(np.dtype(t).name for t in dts), out_dts)
    for i, sh in enumerate(outs):
        shapes.set((id(node), i), sh, node.name)


def _source_forward(node, shapes):
    """An operator without inputs (``_zeros``, ``_arange``, a sampler): its shape from its
    attributes. An empty shape is MXNet's "unknown" there (the consumer infers it)."""
    if not _spec.BY_NAME[node.op]["infer"]:
        return
    try:
        outs = op_shapes(node, [], [])
    except MXNetError:
        return
    for i, sh in enumerate(outs):
        if sh:
            shapes.set((id(node), i), sh, node.name)


def _forward(node, shapes, dtype_of):
    if hasattr(node, "call"):
        _fn_forward(node, shapes, dtype_of)
        return
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
    if not ins:
        _source_forward(node, shapes)
        return
    if ins[0] is None:
        return
    if any(s is None for s in ins) and not _spec.BY_NAME[node.op]["graph"]["param_shapes"]:
        return
    dts = [(dtype_of or {}).get(e, np.float32) for e in entries]
    if all(s is not None and _known(s) for s in ins):
        outs = op_shapes(node, ins, dts)
    elif node.op in _NEEDS_KNOWN:
        return
    else:
        outs = _partial_forward(node, ins, dts) or []
    for i, s in enumerate(outs):
        shapes.set((id(node), i), s, node.name)


def _backward(node, shapes):
    if hasattr(node, "call"):  # a function node: shapes flow forward only
        return
    entries = [(id(n), i) for n, i in node.inputs]
    outs = [shapes.get((id(node), i)) for i in range(node.num_outputs())]
    if _spec.BY_NAME[node.op]["outputs"][0].startswith("*"):  # split: equal outputs
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
    ins = [shapes.get(e) for e in entries]
    try:
        inferred = _spec.input_shapes(node.op, node.attrs, ins, outs)
    except (MXNetError, ValueError, TypeError):
        return  # bad attributes: the forward inference names them
    for pos, s in enumerate(inferred):
        if s is not None:
            shapes.set(entries[pos], s, node.name)


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
    if hasattr(node, "call"):  # a function node: the dtypes its shape inference saw
        seen = node.inferred
        names = tuple(None if t is None else np.dtype(t).name for t in ins)
        if seen is not None and seen[0] == names:
            return [np.dtype(t).type for t in seen[1]]
        return [None if first is None else first] * n
    params = _spec.params(op)
    dt = attrs.get("dtype")
    if _spec.BY_NAME[op]["graph"]["out_dtypes"]:  # the table's rule (topk's indices)
        if first is None:
            return [None] * n
        names = _native.op_graph_dtypes(op, np.dtype(first).name, **_spec._typed(op, attrs))
        return [np.dtype(t).type for t in names][:n]
    if "dtype" in params and dt not in (None, "None"):
        return [np.dtype(dt.strip("'\"")).type] * n
    if not node.inputs:
        return [np.float32] * n
    return [first] * n


def _param_input_names(node):
    try:
        return _spec.input_names(node.op, node.attrs, len(node.inputs))
    except Exception:  # noqa: BLE001 - names only refine the default below
        return []


def _param_dtype(op, names, pos, first):
    """A parameter variable's type: the data's, except the quantized operators' (MXNet's
    type rules for them): their value ranges (``min_*``/``max_*``) are float32, a quantized
    layer's weight and bias int8, and everything but the data of ``quantized_rnn`` float32."""
    name = names[pos] if pos < len(names) else ""
    if op == "_contrib_quantized_rnn":  # uint8 data; float32 parameters, states, scale, shift
        return np.float32
    if op.startswith(("_contrib_quantiz", "_contrib_requantize", "_contrib_dequantize")):
        if name.startswith(("min_", "max_")) or name.endswith(("_min", "_max")):
            return np.float32
        if name in ("weight", "bias"):
            return np.int8
    return first


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
            # an operator whose output type is an attribute (Cast) still types its outputs
            for i, t in enumerate(_out_dtypes(node, ins)):
                if t is not None and "dtype" in node.attrs:
                    types[(id(node), i)] = t
            continue
        names = None
        for pos, (src, idx) in enumerate(node.inputs):  # parameters take the data's type
            if ins[pos] is None and src.op is None:
                if names is None:
                    names = _param_input_names(node)
                types[(id(src), idx)] = ins[pos] = _param_dtype(node.op, names, pos, first)
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
