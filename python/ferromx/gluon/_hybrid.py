"""Hybridization: tracing ``hybrid_forward`` with ``F = mx.sym`` into a cached graph, running
it as a compact loop of native operator calls, ``export`` and :class:`SymbolBlock`.

A hybridized block traces once per input signature (shapes, dtypes, contexts): its inputs
become variables ``data`` (or ``data0``, ``data1`` ...) and its parameters their
:meth:`Parameter.var`. The graph's unknown parameter shapes are inferred from the input
shapes (deferred initialization), then it is compiled into an
:class:`~ferromx.symbol.executor.Plan`. Later calls with that signature fetch the
parameters' arrays and run the plan; no Block, hook or parameter-dict code runs per layer.
The native calls are recorded by autograd as usual, so gradients flow to the parameters.
"""

import warnings

from .. import _native
from .. import symbol as _sym
from ..base import NotImplementedForSymbol
from ..context import Context
from ..ndarray import NDArray
from ..symbol import _fuse
from ..symbol.executor import Plan
from ..symbol.symbol import NpSymbolUnsupported, Symbol, tracing
from .parameter import DATA_GENERATION

__all__ = ["CachedGraph", "call_cached", "export", "flatten", "regroup", "trace"]


def flatten(args, what):
    """Flatten nested lists/tuples of Symbols or NDArrays; returns ``(flat, format)``."""
    if isinstance(args, (Symbol, NDArray)) or args is None:
        if isinstance(args, Symbol) and len(args) > 1:
            return list(args), len(args)
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise ValueError(  # noqa: TRY004 - MXNet raises ValueError
            f"When hybridized, the {what} of HybridBlock must be (nested) list of "
                         f"Symbol or NDArray, but got {args!s} of type {type(args)!s}")
    flat, fmts = [], []
    for item in args:
        f, fmt = flatten(item, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def regroup(flat, fmt):
    """Inverse of :func:`flatten`: ``(value, rest)``."""
    if isinstance(fmt, int):
        if fmt == 0:
            return flat[0], flat[1:]
        return flat[:fmt], flat[fmt:]
    out = []
    for f in fmt:
        res, flat = regroup(flat, f)
        out.append(res)
    return out, flat


def _init_deferred(graph, data_names, args, params, traced=None):
    """Infer unknown parameter shapes from the input shapes (and those the trace completed,
    ``traced``); finish deferred init."""
    pending = [p for p in params.values() if p._data is None and p._deferred_init]
    if not pending:
        return True
    for name, shape in (traced or {}).items():
        p = params.get(name)
        if p is not None and p._data is None:
            p.shape = shape
    shapes = {n: a.shape for n, a in zip(data_names, args) if a is not None}
    arg_s, _, aux_s = graph.infer_shape_partial(**shapes)
    for name, shape in zip(graph.list_arguments() + graph.list_auxiliary_states(),
                           arg_s + aux_s):
        p = params.get(name)
        known = p is not None and p.shape is not None and all(int(d) > 0 for d in p.shape)
        if p is not None and p._data is None and shape and not known:
            p.shape = shape
    for p in pending:
        p._finish_deferred_init()
    return True


class CachedGraph:
    """A traced graph compiled for one input signature.

    ``data_names`` are the graph variables fed by the call's arguments (in order), every
    other input variable is a parameter of ``params`` (by name).
    """

    __slots__ = ("_cache", "_infer_plan", "data_names", "graph", "out_fmt", "out_np", "params",
                 "plan", "slots")

    def __init__(self, graph, data_names, params, out_fmt, out_np=None):
        self.graph = graph
        # np inputs: whether the outputs are np.ndarray (np symbols) or NDArray (legacy)
        self.out_np = out_np
        self.data_names = list(data_names)
        self.out_fmt = out_fmt
        inputs = graph.list_inputs()
        consts = constants(graph)
        missing = [n for n in inputs
                   if n not in self.data_names and n not in params and n not in consts]
        if missing:
            raise RuntimeError(f"The graph has inputs {missing} that are neither block inputs "
                               f"{self.data_names} nor parameters")
        self.params = params
        self.plan = Plan(graph, inputs)
        # the inference plan (symbol/_fuse.py): built at the first predict-mode call
        # outside recording; False when the graph has nothing to fuse
        self._infer_plan = None if _fuse.enabled() and _fuse.has_candidates(graph) else False
        self.slots = [("d", self.data_names.index(n)) if n in self.data_names else
                      ("c", consts[n]) if n in consts else ("p", params[n]) for n in inputs]
        # (ctx, DATA_GENERATION, slot values with the parameters' arrays, data positions)
        self._cache = None

    def _values(self, args, ctx):
        cache = self._cache
        if cache is not None and cache[0] == ctx and cache[1] == DATA_GENERATION[0]:
            vals = cache[2].copy()
            for i, k in cache[3]:
                vals[i] = args[k]
            return vals
        vals = self._slow_values(args, ctx)
        data_pos = [(i, x) for i, (kind, x) in enumerate(self.slots) if kind == "d"]
        template = list(vals)
        for i, _ in data_pos:
            template[i] = None
        self._cache = (ctx, DATA_GENERATION[0], template, data_pos)
        return vals

    def _slow_values(self, args, ctx):
        vals = []
        for kind, x in self.slots:
            if kind == "d":
                vals.append(args[x])
            elif kind == "c":  # a constant recorded into the graph (np-mode tracing)
                vals.append(x)
            else:
                vals.append(x.data(Context(*ctx) if ctx is not None else None))
        return vals

    def run1(self, x, ctx):
        """:meth:`run` for one NDArray argument: the hybridized block's common call. With
        the parameters' arrays cached it goes straight to the native plan (a batch-1 MLP's
        whole forward is ~10 µs, so each Python step here counts)."""
        cache = self._cache
        if (cache is not None and cache[0] == ctx and cache[1] == DATA_GENERATION[0]
                and len(cache[3]) == 1):
            vals = cache[2].copy()
            vals[cache[3][0][0]] = x
            plan = self.plan if self._infer_plan is False else self._plan_for(vals)
            native = plan.native
            outs = native.run(vals) if native is not None else plan.run_python(vals)
            if self.out_np is not None:
                outs = _kind(outs, self.out_np)
            return outs[0] if self.out_fmt == 0 else regroup(outs, self.out_fmt)[0]
        return self.run([x], ctx)

    def run(self, args, ctx):
        """Outputs for NDArray ``args``, regrouped as ``hybrid_forward`` returned them
        (``ctx``: the arguments' native context, which parameters' copies must match)."""
        vals = self._values(args, ctx)
        plan = self.plan if self._infer_plan is False else self._plan_for(vals)
        outs = plan.run(vals)
        if self.out_np is not None:
            outs = _kind(outs, self.out_np)
        if self.out_fmt == 0:
            return outs[0]
        return regroup(outs, self.out_fmt)[0]

    def prepare(self, args, ctx):
        """Build now what the first call would: the parameters' copies for ``ctx`` and,
        outside recording and training, the fused inference plan (``optimize_for``)."""
        self._plan_for(self._values(args, ctx))

    def _plan_for(self, vals):
        """The plan for this call: the fused inference plan in predict mode outside
        ``autograd.record()`` (it has no gradient, and BatchNorm's training mode
        differs), else the graph's own."""
        if _native.is_recording() or _native.is_training():
            return self.plan
        plan = self._infer_plan
        if plan is None:
            names = self.plan.input_names
            shapes = {n: v.shape for n, v in zip(names, vals) if isinstance(v, NDArray)}
            try:
                fused = _fuse.fuse_for_inference(self.graph, shapes)
                plan = Plan(fused, names) if fused is not None else False
            except Exception as err:  # noqa: BLE001 - the unfused plan still runs
                warnings.warn(f"conv fusion skipped: {type(err).__name__}: {err}", stacklevel=4)
                plan = False
            self._infer_plan = plan
            if plan is False:
                return self.plan
        return plan


def _kind(outs, np_out):
    return [o if o._is_np == np_out else (o.as_np_ndarray() if np_out else o.as_nd_ndarray())
            for o in outs]


def constants(graph):
    """``{name: array}`` of the constants an np-mode trace recorded into ``graph``."""
    return {n.name: n.value for n in graph._nodes() if hasattr(n, "value")}


def _signature(args):
    return tuple((a.shape, a._dtype_name, a._ctx) if isinstance(a, NDArray) else a
                 for a in args)


def _data_names(n):
    return ["data"] if n == 1 else [f"data{i}" for i in range(n)]


def trace(block, args):
    """Trace ``block`` on NDArray ``args``: ``(graph, data_names, out_fmt, out_np)``
    (``out_np``: for np inputs, whether the outputs are np symbols; else ``None``)."""
    names = _data_names(len(args))
    inputs = [(_sym.var(n).as_np_ndarray() if a._is_np else _sym.var(n))
              if isinstance(a, NDArray) else (_sym.var(n) if a is not None else None)
              for n, a in zip(names, args)]
    shapes = {n: a.shape for n, a in zip(names, args) if isinstance(a, NDArray)}
    dtypes = {n: a.dtype for n, a in zip(names, args) if isinstance(a, NDArray)}
    np_inputs = any(isinstance(a, NDArray) and a._is_np for a in args)
    with tracing(shapes, dtypes, np_inputs) as seen:
        out = block._symbolic_call(*inputs)
    # parameter shapes the trace completed (deferred ones met by np.dot, say)
    block._trace_param_shapes = {k: v for k, v in seen.items() if k not in shapes}
    flat, fmt = flatten(out, "output")
    graph = _sym.Group(flat) if len(flat) > 1 else flat[0]
    out_np = None
    if np_inputs:
        kinds = {type(s) is not Symbol for s in flat}
        if len(kinds) > 1:  # MXNet's error (the eager call raises it)
            raise TypeError("hybrid_forward returns both np and legacy symbols")
        out_np = kinds.pop()
    return graph, [n for n, a in zip(names, args) if a is not None], fmt, out_np


_EAGER = object()  # cache marker: this signature could not be traced, run eagerly


def _eager(block, x, args):
    """The block's eager forward in place of its graph (graph semantics where they differ)."""
    from ..util import _graph_fallback

    with _graph_fallback():
        return block._eager_forward(x, *args)


def call_cached(block, x, args):
    """The hybridized forward of ``block``: trace once per signature, then run the plan."""
    if not args and type(x) is NDArray:
        ctx = x._ctx
        entry = block._cached_graphs.get(((x.shape, x._dtype_name, ctx),))
        if type(entry) is CachedGraph:
            return entry.run1(x, ctx)
    full = (x, *args)
    entry = build(block, full)
    if entry is _EAGER:
        return _eager(block, x, args)
    ctx = x._ctx if isinstance(x, NDArray) else None
    return entry.run([a for a in full if a is not None], ctx)


def build(block, full):
    """The cached entry of ``block`` for the signature of arguments ``full``, traced now if
    there is none: a :class:`CachedGraph`, or ``_EAGER`` for code a graph cannot hold."""
    key = _signature(full)
    entry = block._cached_graphs.get(key)
    if entry is not None:
        return entry
    x, args = full[0], full[1:]
    try:
        graph, data_names, fmt, out_np = trace(block, full)
    except NotImplementedForSymbol:
        raise  # value-dependent Python code: MXNet's error at trace time
    except NpSymbolUnsupported:  # np semantics a legacy graph cannot express
        block._cached_graphs[key] = _EAGER
        return _EAGER
    except Exception as err:  # noqa: BLE001 - e.g. code that creates NDArrays itself
        warnings.warn(f"{type(block).__name__} '{block.name}' cannot be traced into a "
                      f"graph ({type(err).__name__}: {err}); it runs eagerly for inputs "
                      "of this signature", stacklevel=4)
        block._cached_graphs[key] = _EAGER
        return _EAGER
    params = {p.name: p for p in block.collect_params().values()}
    try:
        _init_deferred(graph, data_names, [a for a in full if a is not None], params,
                       getattr(block, "_trace_param_shapes", None))
    except Exception as err:  # shape rules missing for some operator: eager once
        pending = [p.name for p in params.values() if p._data is None and p._deferred_init]
        if not pending:
            raise
        warnings.warn(f"hybridize: graph shape inference failed ({err}); initializing "
                      "parameters with one eager forward", stacklevel=4)
        block._eager_forward(x, *args)
    entry = CachedGraph(graph, data_names, params, fmt, out_np)
    block._cached_graphs[key] = entry
    block._cached_graph = ([_sym.var(n) for n in data_names], graph)
    return entry


def export(block, path, epoch=0):
    """``HybridBlock.export``: ``path-symbol.json`` and ``path-NNNN.params`` (MXNet's
    formats, ``arg:``/``aux:`` keys); returns the two file names."""
    from ._param_io import save_arrays

    if not block._cached_graph:
        raise RuntimeError("Please first call block.hybridize() and then run forward with "
                           "this block at least once before calling export.")
    graph = block._cached_graph[1]
    sym_file = f"{path}-symbol.json"
    graph.save(sym_file)
    arg_names = set(graph.list_arguments())
    aux_names = set(graph.list_auxiliary_states())
    arrays = {f"arg:{k}": v for k, v in constants(graph).items()}
    for param in block.collect_params().values():
        if param.name in arg_names:
            arrays[f"arg:{param.name}"] = param._reduce()
        elif param.name in aux_names:
            arrays[f"aux:{param.name}"] = param._reduce()
        else:
            warnings.warn(f'Parameter "{param.name}" is not found in the graph. ', stacklevel=3)
    params_file = f"{path}-{epoch:04d}.params"
    save_arrays(params_file, arrays)
    return sym_file, params_file


def _common_prefix(names):
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        i = 0
        while i < min(len(prefix), len(name)) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


def _make_symbol_block():
    from .block import HybridBlock
    from .parameter import ParameterDict

    class SymbolBlock(HybridBlock):
        """A block running a symbol graph (``outputs``) fed by ``inputs`` (variables);
        every other graph input is a parameter. ``SymbolBlock.imports`` loads an exported
        ``-symbol.json`` / ``.params`` pair (ferromx's or MXNet's)."""

        def __init__(self, outputs, inputs, params=None):
            super().__init__(prefix=None, params=None)
            self._prefix = ""
            self._params = ParameterDict("", params)
            if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
                inputs = [inputs]
            if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
                outputs = outputs[0]
            syms, self._in_format = flatten(inputs, "input")
            out, self._out_format = flatten(outputs, "output")
            input_names = []
            for s in syms:
                if len(s.get_internals().list_outputs()) != 1:
                    raise ValueError(f"Input symbols must be variable, but {s!s} is an output "
                                     "of operators")
                input_names.append(s.name)
            graph = _sym.Group(out) if len(out) > 1 else out[0]
            arg_types, _, aux_types = graph.infer_type_partial()
            for name, t in zip(graph.list_arguments(), arg_types):
                if name not in input_names:
                    self.params.get(name, allow_deferred_init=True, dtype=t or "float32")
            for name, t in zip(graph.list_auxiliary_states(), aux_types):
                if name not in input_names:
                    self.params.get(name, grad_req="null", allow_deferred_init=True,
                                    dtype=t or "float32")
            self._sym_inputs = input_names
            self._cached_graph = syms, graph
            n = len(_common_prefix(list(self._params.keys())))
            self._reg_params = {k[n:]: v for k, v in self._params.items()}
            self._active = True

        def __repr__(self):
            graph = self._cached_graph[1]
            return (f"{self.__class__.__name__}(\n{graph} : {len(self._cached_graph[0])} -> "
                    f"{len(graph.list_outputs())}\n)")

        @staticmethod
        def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                    ignore_extra=False):
            """Load ``symbol_file`` (graph JSON) and ``param_file`` (``arg:``/``aux:``
            arrays); ``input_names`` name the graph's data inputs."""
            graph = _sym.load(symbol_file)
            if isinstance(input_names, str):
                input_names = [input_names]
            inputs = [_sym.var(n) for n in input_names]
            ret = SymbolBlock(graph, inputs)
            if param_file is not None:
                ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                          cast_dtype=True, dtype_source="saved")
            return ret

        def _clear_cached_op(self):
            """Drop the per-signature plans; the graph itself is the block (MXNet's
            ``hybridize()`` on an imported block keeps it)."""
            self._cached_graphs = {}

        def hybridize(self, active=True, **kwargs):
            """A SymbolBlock always runs its graph; this only drops its cached plans."""
            super().hybridize(active, **kwargs)
            self._active = True

        def forward(self, x, *args):
            full = (x, *args)
            if isinstance(x, Symbol):
                subst = {n: s._heads[0] for n, s in zip(self._sym_inputs, full)}
                return self._cached_graph[1]._clone(subst)
            entry = self._build(full)
            return entry.run(list(full), x._ctx)

        def _build(self, full):
            """The cached plan for the signature of ``full``, built now if there is none."""
            key = _signature(full)
            entry = self._cached_graphs.get(key)
            if entry is None:
                graph = self._cached_graph[1]
                params = {p.name: p for p in self.collect_params().values()}
                _init_deferred(graph, self._sym_inputs, full, params)
                # np inputs give np outputs (MXNet's imports under np mode loads the
                # graph as an np symbol)
                out_np = True if any(getattr(a, "_is_np", False) for a in full) else None
                entry = CachedGraph(graph, self._sym_inputs, params, self._out_format, out_np)
                self._cached_graphs[key] = entry
            return entry

        def hybrid_forward(self, F, x, *args, **kwargs):
            raise NotImplementedError("SymbolBlock runs its graph (forward)")

    return SymbolBlock

