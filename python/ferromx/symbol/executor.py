"""Executing a symbol's graph: :class:`Plan` (the graph compiled to a flat list of native
operator calls) and :class:`Executor` (MXNet's ``bind`` result).

A plan resolves everything once — topological order, each node's operator name and typed
attributes, which slot each input reads — so running it is a short loop of
``_native.invoke`` calls on the engine. Autograd records those calls like any ``nd`` code,
which is how :meth:`Executor.backward` and hybridized Gluon blocks get gradients. The
loop itself runs in Rust (``_native.NativePlan``, attributes converted once) when every
argument is an NDArray; the Python loop is the fallback and the reference.
"""

import os

import numpy as np

from .. import _native, autograd
from ..base import MXNetError
from ..context import _ctx_str, current_context
from ..ndarray.ndarray import NDArray
from . import _infer, _spec


class Plan:
    """``graph`` compiled for inputs ``input_names`` (variable names, in slot order).

    ``run(arrays)`` takes one NDArray per input name and returns the list of outputs.
    """

    __slots__ = ("head_slots", "input_names", "n_slots", "native", "release", "steps")

    def __init__(self, sym, input_names):
        nodes = sym._nodes()
        slot = {}
        names = list(input_names)
        variables = {n.name: n for n in nodes if n.op is None}
        for name in variables:
            if name not in names:
                raise MXNetError(f"graph input {name!r} has no array (inputs given: {names})")
        for i, name in enumerate(names):
            if name in variables:
                slot[(id(variables[name]), 0)] = i
        n = len(names)
        steps = []
        for node in nodes:
            if node.op is None:
                continue
            if _is_fn(node):  # an mx.np function node: runs in the Python loop
                ins = tuple(slot[(id(s), i)] for s, i in node.inputs)
                for i in range(node.nout):
                    slot[(id(node), i)] = n + i
                steps.append((node, ins, n, node.nout, None))
                n += node.nout
                continue
            if not _spec.is_available(node.op):
                raise MXNetError(f"operator {node.op} (graph node {node.name!r}) is not "
                                 "implemented in ferromx yet: the graph can be loaded and "
                                 "shape-inferred but not run")
            ins = tuple(slot[(id(s), i)] for s, i in node.inputs)
            nout = node.num_outputs()
            for i in range(nout):
                slot[(id(node), i)] = n + i
            kwargs = _without_defaults(node.op, _spec.typed_attrs(node.op, node.attrs,
                                                                   _ctx_str))
            steps.append((node.op, ins, n, nout, kwargs))
            n += nout
        self.steps = steps
        self.n_slots = n
        self.head_slots = [slot[(id(h), i)] for h, i in sym._heads]
        self.input_names = names
        self.release = _release_points(steps, n, self.head_slots)
        # None when a function node needs the Python loop
        self.native = None if any(_is_fn(s[0]) for s in steps) else _native.NativePlan(
            [(op, list(ins), out, nout, kwargs) for op, ins, out, nout, kwargs in steps],
            n, self.head_slots)

    def run(self, arrays):
        """Run the graph on ``arrays`` (one per input name); returns the outputs."""
        if self.native is not None and all(isinstance(a, NDArray) for a in arrays):
            return self.native.run(arrays)
        return self.run_python(arrays)

    def run_python(self, arrays):
        """:meth:`run` as a Python loop of ``_native.invoke`` calls (any argument types)."""
        vals = list(arrays)
        vals.extend([None] * (self.n_slots - len(vals)))
        invoke = _native.invoke
        for (op, ins, out, nout, kwargs), done in zip(self.steps, self.release):
            if kwargs is None:  # a function node
                res = op.run([vals[i] for i in ins])
            else:
                res = invoke(op, [vals[i] for i in ins], **kwargs)
            if nout == 1:
                vals[out] = res[0] if isinstance(res, list) else res
            else:
                vals[out:out + nout] = res[:nout]
            for i in done:
                vals[i] = None
        return [vals[i] for i in self.head_slots]


def _is_fn(node):
    """Whether ``node`` is an ``mx.np`` function node (``symbol._np_symbol``)."""
    return hasattr(node, "call")


def _release_points(steps, n_slots, heads):
    """Per step, the slots no later step reads (heads excepted): a run drops them after
    that step, so an intermediate that nothing saved for backward is freed once its
    consumers ran (the native plan does the same)."""
    last = [None] * n_slots
    for j, (_, ins, out, nout, _) in enumerate(steps):
        for i in (*ins, *range(out, out + nout)):
            last[i] = j
    for h in heads:
        last[h] = None
    release = [[] for _ in steps]
    for i, j in enumerate(last):
        if j is not None:
            release[j].append(i)
    return release


# Operators whose results differ between two identical calls: never merged.
_IMPURE_PREFIXES = ("_random", "_sample", "_shuffle", "Dropout")


def eliminate_common_expr(sym):
    """A copy of ``sym`` where identical operator calls (same operator, attributes and
    inputs) are computed once; a head repeated after merging gets a ``_copy`` (as MXNet's
    ``MXNET_ELIMINATE_COMMON_EXPR`` pass does, so outputs stay distinct arrays)."""
    from .symbol import Symbol, _Node

    canon, seen = {}, {}
    for node in sym._nodes():
        if node.op is None:
            canon[id(node)] = node
            continue
        ins = [(canon[id(n)], i) for n, i in node.inputs]
        key = (node.op, node.json_op, tuple(sorted(node.attrs.items())),
               tuple((id(n), i) for n, i in ins))
        if not node.op.startswith(_IMPURE_PREFIXES) and key in seen and not _is_fn(node):
            canon[id(node)] = seen[key]
            continue
        new = node.with_inputs(ins)
        seen[key] = new
        canon[id(node)] = new
    heads, used = [], set()
    for n, i in sym._heads:
        entry = (canon[id(n)], i)
        if (id(entry[0]), i) in used:
            copy = _Node("_copy", f"{entry[0].name}_copy{len(heads)}", {}, [entry])
            entry = (copy, 0)
        used.add((id(entry[0]), entry[1]))
        heads.append(entry)
    return Symbol(heads)


def _without_defaults(op, kwargs):
    """Drop arguments equal to the operator's defaults (fewer to parse per call)."""
    params = _spec.params(op)
    out = {}
    for key, value in kwargs.items():
        default = params[key][1]
        if default is not None and key != "ctx":
            try:
                if _spec.parse_attr(op, key, default) == value:
                    continue
            except (ValueError, TypeError):
                pass
        out[key] = value
    return out


def _as_list(arrays, names, what, allow_missing=False):
    if arrays is None:
        return [None] * len(names)
    if isinstance(arrays, dict):
        missing = [n for n in names if n not in arrays]
        if missing and not allow_missing:
            raise ValueError(f"{what}: no array for {missing} (given: {sorted(arrays)})")
        return [arrays.get(n) for n in names]
    arrays = list(arrays)
    if len(arrays) != len(names):
        raise ValueError(f"{what}: {len(arrays)} arrays for {len(names)} names {names}")
    return arrays


class Executor:
    """A symbol bound to arrays: :meth:`forward` runs the graph, :meth:`backward` its
    gradient into ``grad_arrays`` (per ``grad_req``: ``'write'``, ``'add'`` or ``'null'``).
    """

    def __init__(self, sym, ctx, args, args_grad=None, grad_req="write", aux_states=None):
        self._symbol = sym
        self._ctx = ctx if ctx is not None else current_context()
        self._arg_names = sym.list_arguments()
        self._aux_names = sym.list_auxiliary_states()
        self.arg_arrays = _as_list(args, self._arg_names, "bind args")
        if any(a is None for a in self.arg_arrays):
            missing = [n for n, a in zip(self._arg_names, self.arg_arrays) if a is None]
            raise ValueError(f"bind: no array for arguments {missing}")
        self.aux_arrays = _as_list(aux_states, self._aux_names, "bind aux_states")
        if any(a is None for a in self.aux_arrays):
            raise ValueError(f"bind: auxiliary states {self._aux_names} need arrays")
        self.grad_arrays = _as_list(args_grad, self._arg_names, "bind args_grad",
                                    allow_missing=True)
        if isinstance(grad_req, str):
            reqs = [grad_req] * len(self._arg_names)
        elif isinstance(grad_req, dict):
            reqs = [grad_req.get(n, "null") for n in self._arg_names]
        else:
            reqs = list(grad_req)
        self._grad_req = [r if g is not None else "null" for r, g in zip(reqs, self.grad_arrays)]
        self._optimized = sym
        if os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1") != "0":
            self._optimized = eliminate_common_expr(sym)
        self._plan = Plan(self._optimized, self._arg_names + self._aux_names)
        self.outputs = []
        self._recorded = False

    @property
    def arg_dict(self):
        """``{name: argument array}``."""
        return dict(zip(self._arg_names, self.arg_arrays))

    @property
    def grad_dict(self):
        """``{name: gradient array}`` of the arguments that have one."""
        return {n: g for n, g in zip(self._arg_names, self.grad_arrays) if g is not None}

    @property
    def aux_dict(self):
        """``{name: auxiliary state array}``."""
        return dict(zip(self._aux_names, self.aux_arrays))

    @property
    def output_dict(self):
        """``{output name: array}`` of the last forward."""
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    def forward(self, is_train=False, **kwargs):
        """Run the graph (``kwargs`` are copied into the named argument arrays first)."""
        arg_dict = self.arg_dict
        for name, value in kwargs.items():
            if name not in arg_dict:
                raise ValueError(f"forward: unknown argument {name!r} (arguments: "
                                 f"{self._arg_names})")
            dst = arg_dict[name]
            dst[:] = value if not isinstance(value, np.ndarray) else value.astype(
                dst.asnumpy().dtype, copy=False)
        arrays = self.arg_arrays + self.aux_arrays
        marked = [(a, g, r) for a, g, r in zip(self.arg_arrays, self.grad_arrays,
                                               self._grad_req) if r != "null"]
        if is_train and marked:
            autograd.mark_variables([m[0] for m in marked], [m[1] for m in marked],
                                    [m[2] for m in marked])
            with autograd.record(train_mode=True):
                self.outputs = self._plan.run(arrays)
            self._recorded = True
        else:
            scope = autograd.train_mode() if is_train else autograd.predict_mode()
            with scope:
                self.outputs = self._plan.run(arrays)
            self._recorded = False
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Gradients of the outputs (times ``out_grads``) into ``grad_arrays``."""
        if not self._recorded:
            self.forward(is_train=True)
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        if out_grads is not None:
            from .. import ndarray as nd

            out_grads = [g if g is None or not isinstance(g, np.ndarray) else nd.array(g)
                         for g in out_grads]
        autograd.backward(self.outputs, out_grads, retain_graph=False, train_mode=is_train)
        self._recorded = False

    def get_optimized_symbol(self):
        """The graph this executor runs (after common-expression elimination)."""
        return self._optimized

    def debug_str(self):
        """The nodes of the executed graph and the memory a run keeps alive
        (``symbol._memory``)."""
        lines = [f"Symbol Outputs:\n\toutput[{i}]={n}" for i, n in
                 enumerate(self._symbol.list_outputs())]
        for node in self._optimized._nodes():
            if node.op is None:
                lines.append(f"Variable:{node.name}")
            else:
                ins = ", ".join(n.output_name(i) for n, i in node.inputs)
                lines.append(f"Op:{node.op}, Name={node.name}\nInputs:\n\t{ins}")
        from ._memory import total_bytes

        lines.append(f"Total {total_bytes(self) >> 20} MB allocated")
        return "\n".join(lines)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy values into the bound argument and auxiliary arrays."""
        for src, names, arrays in ((arg_params, self._arg_names, self.arg_arrays),
                                   (aux_params or {}, self._aux_names, self.aux_arrays)):
            for name, value in src.items():
                if name in names:
                    arrays[names.index(name)][:] = value
                elif not allow_extra_params:
                    raise ValueError(f"Find name {name} that is not in the arguments")

    def __repr__(self):
        return f"<Executor {self._symbol!r} @{self._ctx}>"


def simple_bind(sym, ctx, grad_req, type_dict, shapes):
    """Allocate zero arrays (and gradients unless ``grad_req='null'``) from shapes."""
    from .. import ndarray as nd

    ctx = ctx if ctx is not None else current_context()
    arg_s, _, aux_s = sym.infer_shape(**shapes)
    if arg_s is None:
        raise MXNetError(f"simple_bind: shapes {shapes} do not determine every argument of "
                         f"{sym.list_arguments()}")
    arg_t, _, aux_t = _infer.infer_type(sym, (), dict(type_dict or {}), partial=True)
    arg_t = [t or np.float32 for t in arg_t]
    aux_t = [t or np.float32 for t in aux_t]
    args = [nd.zeros(s, ctx=ctx, dtype=np.dtype(t).name) for s, t in zip(arg_s, arg_t)]
    names = sym.list_arguments()
    if isinstance(grad_req, str):
        reqs = dict.fromkeys(names, grad_req)
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        reqs = dict(zip(names, grad_req))
    grads = {n: nd.zeros(a.shape, ctx=ctx, dtype=np.dtype(t).name)
             for n, a, t in zip(names, args, arg_t) if reqs[n] != "null"}
    aux = [nd.zeros(s, ctx=ctx, dtype=np.dtype(t).name) for s, t in zip(aux_s, aux_t)]
    return Executor(sym, ctx, args, grads, reqs, aux)
