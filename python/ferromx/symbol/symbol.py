"""The :class:`Symbol` graph (MXNet's ``mx.sym``).

A symbol is a list of output entries ``(node, index)`` of a graph of :class:`_Node` s: a
variable (``op is None``) or an operator of the native table with string attributes, as
in MXNet's graph JSON. Graphs are inferred (``infer_shape``/``infer_type``), serialised
(``tojson``/``load_json``, MXNet 1.9.1's format) and executed by binding them to an
:class:`~ferromx.symbol.executor.Executor`, which runs the same native operators as ``nd``.
"""

import contextlib
import threading

from .. import name as _name
from ..attribute import AttrScope
from ..base import NotImplementedForSymbol, dtype_np_to_mx
from . import _spec

__all__ = ["Group", "Symbol", "Variable", "load", "load_json", "var"]


_TRACE = threading.local()


_NP_TRACE = threading.local()


class NpSymbolUnsupported(Exception):
    """A hybridized block fed ``np.ndarray`` inputs called an array method whose legacy
    Symbol meaning differs from NumPy's (``x.max(axis=())``, ``x.flatten()`` ...); ferromx
    has no np symbols, so the block runs eagerly for that signature instead."""


@contextlib.contextmanager
def tracing(shapes, dtypes=None, np_inputs=False):
    """While a hybridized block traces for one input signature: its symbols report the
    ``shape``/``ndim``/``dtype`` inferred from those input shapes (``{name: shape}``), so
    shape-dependent layer code traces (an extension: MXNet's symbols have no shape).
    ``np_inputs``: the inputs are ``np.ndarray``s, so Symbol array methods (legacy
    semantics) raise :class:`NpSymbolUnsupported`."""
    old = getattr(_TRACE, "value", None)
    old_np = getattr(_NP_TRACE, "value", False)
    _TRACE.value = (dict(shapes), dict(dtypes or {}))
    _NP_TRACE.value = bool(np_inputs)
    try:
        yield _TRACE.value[0]  # (the shapes: a trace may complete a parameter's there)
    finally:
        _TRACE.value = old
        _NP_TRACE.value = old_np


def _check_np_method(name):
    if getattr(_NP_TRACE, "value", False):
        raise NpSymbolUnsupported(f"Symbol.{name} has legacy semantics; np inputs run eagerly")


class _Node:
    """One graph node: a variable (``op is None``) or an operator application."""

    __slots__ = ("attrs", "in_names", "inputs", "json_op", "name", "op")

    def __init__(self, op, name, attrs=None, inputs=(), json_op=None):
        self.op = op
        self.name = name
        self.attrs = dict(attrs or {})
        self.inputs = list(inputs)
        self.json_op = json_op or _spec.MXNET_NAMES.get(op, op)
        self.in_names = (_spec.input_names(op, self.attrs, len(self.inputs))
                         if op is not None else [])

    def num_outputs(self):
        """Visible outputs."""
        return 1 if self.op is None else _spec.num_outputs(self.op, self.attrs)

    def output_name(self, i):
        """MXNet's name of output ``i`` (``fc0_output``; a variable's own name)."""
        if self.op is None:
            return self.name
        return f"{self.name}_{_spec.output_names(self.op, self.attrs)[i]}"

    def with_inputs(self, inputs):
        """The same operator application over other input entries."""
        return _Node(self.op, self.name, self.attrs, inputs, self.json_op)

    def aux_positions(self):
        """Input positions that are auxiliary states."""
        if self.op is None:
            return set()
        aux = set(_spec.aux_names(self.op))
        return {i for i, n in enumerate(self.in_names) if n in aux}


def _topo(heads):
    """Nodes reachable from ``heads``, inputs before users (MXNet's DFS post-order)."""
    order, seen = [], set()
    for head, _ in heads:
        if id(head) in seen:
            continue
        stack = [(head, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0 and id(node) in seen:
                continue
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i][0]
                if id(child) not in seen:
                    stack.append((child, 0))
            else:
                seen.add(id(node))
                order.append(node)
    return order


def _is_scalar(x):
    import numbers

    import numpy as np

    return isinstance(x, (numbers.Number, np.generic))


class Symbol:
    """A symbolic expression: one or more outputs of a graph of operators.

    Build with :func:`var` and the ``mx.sym`` operators; combine with arithmetic and
    :func:`Group`; inspect with :meth:`list_arguments`, :meth:`infer_shape` ...; execute
    with :meth:`bind` / :meth:`simple_bind`.
    """

    __slots__ = ("__weakref__", "_heads")

    def __init__(self, heads):
        self._heads = list(heads)

    # ---- structure ------------------------------------------------------------------------
    def _nodes(self):
        return _topo(self._heads)

    @property
    def name(self):
        """The name of the (single) output's node; ``None`` for a group."""
        if len({id(n) for n, _ in self._heads}) != 1:
            return None
        return self._heads[0][0].name

    def __repr__(self):
        name = self.name
        if name is None:
            return "<Symbol group [{}]>".format(", ".join(n.name for n, _ in self._heads))
        return f"<Symbol {name}>"

    __str__ = __repr__

    def __len__(self):
        return len(self._heads)

    def __iter__(self):
        return (Symbol([h]) for h in self._heads)

    def __hash__(self):
        return id(self)

    def __bool__(self):
        raise NotImplementedForSymbol(self.__bool__, "bool")

    __nonzero__ = __bool__

    def __copy__(self):
        return self._clone({})

    def __deepcopy__(self, memo):
        return self._clone({})

    def copy(self):
        """A copy of the graph (new nodes, same names and attributes)."""
        return self._clone({})

    def _clone(self, subst):
        """Copy the graph; variables named in ``subst`` are replaced by those entries."""
        new = {}
        for node in self._nodes():
            if node.op is None and node.name in subst:
                new[id(node)] = subst[node.name]
                continue
            ins = []
            for n, i in node.inputs:
                rep = new[id(n)]
                ins.append(rep if isinstance(rep, tuple) else (rep, i))
            new[id(node)] = node.with_inputs(ins)
        out = []
        for n, i in self._heads:
            rep = new[id(n)]
            out.append(rep if isinstance(rep, tuple) else (rep, i))
        return Symbol(out)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            hits = [i for i, n in enumerate(names) if n == index]
            if not hits:
                raise ValueError(f"Cannot find output that matches name {index!r} "
                                 f"(outputs: {names})")
            if len(hits) > 1:
                raise ValueError(f"There are multiple outputs with name {index!r}")
            index = hits[0]
        if isinstance(index, slice):
            return Symbol(self._heads[index])
        if not isinstance(index, int):
            raise TypeError(f"Symbol index must be an int, slice or output name, got "
                            f"{type(index).__name__}")
        if not -len(self._heads) <= index < len(self._heads):
            raise IndexError(f"Symbol index {index} out of range ({len(self._heads)} outputs)")
        return Symbol([self._heads[index]])

    def _arg_and_aux(self):
        nodes = self._nodes()
        aux = set()
        for node in nodes:
            for pos in node.aux_positions():
                if pos < len(node.inputs):
                    aux.add(id(node.inputs[pos][0]))
        variables = [n for n in nodes if n.op is None]
        return ([n for n in variables if id(n) not in aux],
                [n for n in variables if id(n) in aux], variables)

    def list_arguments(self):
        """Names of the input variables that are not auxiliary states, in graph order."""
        return [n.name for n in self._arg_and_aux()[0]]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (e.g. BatchNorm's moving mean and variance)."""
        return [n.name for n in self._arg_and_aux()[1]]

    def list_inputs(self):
        """Names of all input variables (arguments and auxiliary states), in graph order."""
        return [n.name for n in self._arg_and_aux()[2]]

    def list_outputs(self):
        """Output names (``<node>_output``, ``<node>_output0`` ..., a variable's name)."""
        return [n.output_name(i) for n, i in self._heads]

    def _gen_atomic_symbol(self):
        """A symbol of this one's head operator alone, with fresh variables (named after the
        operator's inputs) in place of its inputs (MXNet's ``MXGenAtomicSymbolFromSymbol``,
        which graph passes use to look at one operator)."""
        node = self._heads[0][0]
        if node.op is None:
            return Symbol([(_Node(None, node.name, node.attrs), 0)])
        names = node.in_names or [f"arg{i}" for i in range(len(node.inputs))]
        ins = [(_Node(None, n), 0) for n in names[:len(node.inputs)]]
        new = node.with_inputs(ins)
        return Symbol([(new, i) for i in range(new.num_outputs())])

    def get_internals(self):
        """A group of every output of every node, in graph order."""
        heads = []
        for node in self._nodes():
            heads += [(node, i) for i in range(node.num_outputs())]
        return Symbol(heads)

    def get_children(self):
        """A group of the inputs of this symbol's node(s); ``None`` for a variable."""
        nodes = list({id(n): n for n, _ in self._heads}.values())
        heads = [e for n in nodes for e in n.inputs]
        return Symbol(heads) if heads else None

    # ---- attributes -----------------------------------------------------------------------
    def attr(self, key):
        """The string attribute ``key`` of this symbol's node (``None`` if unset)."""
        if len(self._heads) != 1:
            return None
        return self._heads[0][0].attrs.get(key)

    def list_attr(self, recursive=False):
        """The attributes of this symbol's node (``recursive``: deprecated, use
        :meth:`attr_dict`)."""
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been deprecated. "
                                     "Please use attr_dict instead.")
        if len(self._heads) != 1:
            return {}
        return dict(self._heads[0][0].attrs)

    def attr_dict(self):
        """``{node name: attributes}`` of every node that has attributes."""
        return {n.name: dict(n.attrs) for n in self._nodes() if n.attrs}

    def _set_attr(self, **kwargs):
        """Set string attributes on this symbol's node(s)."""
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError("Set Attr only accepts string values")  # noqa: TRY004
            for node, _ in self._heads:
                node.attrs[key] = value

    # ---- composition ----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Compose: a copy with input variables replaced (positional in
        :meth:`list_arguments` order, or by name)."""
        name = kwargs.pop("name", None)
        names = self.list_arguments()
        subst = {}
        for n, s in zip(names, args):
            subst[n] = _single(s, "compose")
        for n, s in kwargs.items():
            subst[n] = _single(s, "compose")
        out = self._clone(subst)
        if name is not None and len(out._heads) == 1:
            out._heads[0][0].name = name
        return out

    # ---- inference, serialisation, binding (other modules) ---------------------------------
    def infer_shape(self, *args, **kwargs):
        """``(arg_shapes, out_shapes, aux_shapes)`` from some input shapes (positional in
        :meth:`list_arguments` order, or by name); ``(None, None, None)`` with a warning
        when they do not determine every shape."""
        from . import _infer

        return _infer.infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        """Like :meth:`infer_shape`, unknown shapes given as ``()`` / with 0 dimensions."""
        from . import _infer

        return _infer.infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        """``(arg_types, out_types, aux_types)`` (NumPy types) from some input dtypes."""
        from . import _infer

        return _infer.infer_type(self, args, kwargs, partial=False)

    def infer_type_partial(self, *args, **kwargs):
        """Like :meth:`infer_type`, unknown types given as ``None``."""
        from . import _infer

        return _infer.infer_type(self, args, kwargs, partial=True)

    def tojson(self, remove_amp_cast=True):
        """The graph in MXNet 1.9.1's JSON format."""
        from . import _json

        return _json.tojson(self)

    def save(self, fname, remove_amp_cast=True):
        """Write :meth:`tojson` to ``fname``."""
        with open(fname, "w") as f:
            f.write(self.tojson())

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None,
             group2ctx=None, shared_exec=None):
        """An :class:`Executor` over the given argument (and gradient) arrays."""
        from .executor import Executor

        return Executor(self, ctx, args, args_grad, grad_req, aux_states)

    _bind = bind

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """An :class:`Executor` with arrays allocated from input shapes (``data=(2, 3)``)."""
        from .executor import simple_bind

        return simple_bind(self, ctx, grad_req, type_dict, kwargs)

    _simple_bind = simple_bind

    def eval(self, ctx=None, **kwargs):
        """Bind to ``kwargs`` and run forward; returns the list of outputs."""
        from ..context import current_context

        ex = self.bind(ctx or current_context(), kwargs)
        return ex.forward()

    def debug_str(self):
        """The graph as text, in MXNet's layout (outputs, variables, each operator with its
        inputs and attributes)."""
        from . import _json

        return _json.debug_str(self)

    def gradient(self, wrt):
        """Not available: ferromx differentiates executed graphs with autograd."""
        raise NotImplementedForSymbol(self.gradient, None)

    # ---- arithmetic -----------------------------------------------------------------------
    def _binary(self, other, op, sop, rop, hint, json_op, reverse=False):
        if isinstance(other, Symbol):
            a, b = (other, self) if reverse else (self, other)
            return _apply(op, [a, b], {}, None, hint, json_op=json_op)
        if _is_scalar(other):
            scalar_op = rop if reverse else sop
            return _apply(scalar_op, [self], {"scalar": _spec.attr_str(other)}, None,
                          _scalar_hint(scalar_op))
        raise TypeError(f"type {type(other).__name__} not supported")

    def __add__(self, o):
        return self._binary(o, "broadcast_add", "_plus_scalar", "_plus_scalar", "_plus",
                            "elemwise_add")

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, "broadcast_sub", "_minus_scalar", "_rminus_scalar", "_minus",
                            "elemwise_sub")

    def __rsub__(self, o):
        return self._binary(o, "broadcast_sub", "_minus_scalar", "_rminus_scalar", "_minus",
                            "elemwise_sub", reverse=True)

    def __mul__(self, o):
        return self._binary(o, "broadcast_mul", "_mul_scalar", "_mul_scalar", "_mul",
                            "elemwise_mul")

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._binary(o, "broadcast_div", "_div_scalar", "_rdiv_scalar", "_div",
                            "elemwise_div")

    def __rtruediv__(self, o):
        return self._binary(o, "broadcast_div", "_div_scalar", "_rdiv_scalar", "_div",
                            "elemwise_div", reverse=True)

    __div__, __rdiv__ = __truediv__, __rtruediv__

    def __mod__(self, o):
        return self._binary(o, "broadcast_mod", "_mod_scalar", "_rmod_scalar", "_mod", "_mod")

    def __rmod__(self, o):
        return self._binary(o, "broadcast_mod", "_mod_scalar", "_rmod_scalar", "_mod", "_mod",
                            reverse=True)

    def __pow__(self, o):
        return self._binary(o, "broadcast_power", "_power_scalar", "_rpower_scalar", "_power",
                            "_power")

    def __rpow__(self, o):
        return self._binary(o, "broadcast_power", "_power_scalar", "_rpower_scalar", "_power",
                            "_power", reverse=True)

    def __abs__(self):
        return _FNS["abs"](self)

    def __getstate__(self):
        return {"json": self.tojson()}

    def __setstate__(self, state):
        from . import _json

        self._heads = _json.fromjson(state["json"])._heads

    def __neg__(self):
        return self._binary(-1.0, None, "_mul_scalar", None, None, None)

    def _cmp(self, o, op, sop, hint):
        return _np_bool(self._binary(o, op, sop, sop, hint, hint))

    def __eq__(self, o):
        return self._cmp(o, "broadcast_equal", "_equal_scalar", "_equal")

    def __ne__(self, o):
        return self._cmp(o, "broadcast_not_equal", "_not_equal_scalar", "_not_equal")

    def __gt__(self, o):
        if not isinstance(o, Symbol):
            return _np_bool(self._binary(o, None, "_greater_scalar", None, None, None))
        return self._cmp(o, "broadcast_greater", "_greater_scalar", "_greater")

    def __ge__(self, o):
        if not isinstance(o, Symbol):
            return _np_bool(self._binary(o, None, "_greater_equal_scalar", None, None, None))
        return self._cmp(o, "broadcast_greater_equal", "_greater_equal_scalar", "_greater_equal")

    def __lt__(self, o):
        if not isinstance(o, Symbol):
            return _np_bool(self._binary(o, None, "_lesser_scalar", None, None, None))
        return self._cmp(o, "broadcast_lesser", "_lesser_scalar", "_lesser")

    def __le__(self, o):
        if not isinstance(o, Symbol):
            return _np_bool(self._binary(o, None, "_lesser_equal_scalar", None, None, None))
        return self._cmp(o, "broadcast_lesser_equal", "_lesser_equal_scalar", "_lesser_equal")

    def astype(self, dtype):
        """Cast (the ``Cast`` operator)."""
        return _apply("cast", [self], {"dtype": _spec.attr_str(dtype)}, None, "cast")

    def reshape(self, *shape, **kwargs):
        """Reshape (the ``Reshape`` operator; MXNet's special codes)."""
        _check_np_method("reshape")
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        if shape:
            kwargs["shape"] = tuple(shape)
        return _FNS["reshape"](self, **kwargs)

    def _traced(self, what):
        trace = getattr(_TRACE, "value", None)
        if trace is None:
            raise AttributeError(f"'Symbol' object has no attribute '{what}'")
        names = set(self.list_inputs())
        return trace, {k: v for k, v in trace[0].items() if k in names}

    @property
    def shape(self):
        """Only while tracing a hybridized block: the inferred shape of this output."""
        _, given = self._traced("shape")
        from . import _infer

        out = None
        if len(self._heads) == 1:  # () is a known 0-d shape here (np reductions give it)
            node, i = self._heads[0]
            out = _infer.shape_pass(self, given).get((id(node), i))
        if not _infer._known(out):
            raise AttributeError(f"'Symbol' object has no attribute 'shape' (the shape of "
                                 f"{self.name} is not known while tracing: {out})")
        return tuple(out)

    @property
    def ndim(self):
        """Only while tracing a hybridized block: ``len(shape)``."""
        return len(self.shape)

    @property
    def size(self):
        """Only while tracing a hybridized block: the number of elements."""
        import math

        return math.prod(self.shape)

    @property
    def dtype(self):
        """Only while tracing a hybridized block: the inferred dtype of this output."""
        trace, _ = self._traced("dtype")
        names = set(self.list_inputs())
        from . import _infer

        _, out, _ = _infer.infer_type(self, (), {k: v for k, v in trace[1].items()
                                                  if k in names}, partial=True)
        if len(out) != 1 or out[0] is None:
            raise AttributeError("'Symbol' object has no attribute 'dtype'")
        return out[0]

    def asnumpy(self):
        """Not available: a symbol has no value."""
        raise NotImplementedForSymbol(self.asnumpy, None)

    def asscalar(self):
        """Not available: a symbol has no value."""
        raise NotImplementedForSymbol(self.asscalar, None)

    def wait_to_read(self):
        """Not available: a symbol has no value."""
        raise NotImplementedForSymbol(self.wait_to_read, None)


def _scalar_hint(op):
    """MXNet's name hint of a scalar op (its Python function ``_PlusScalar``, lowered)."""
    return "_" + op.strip("_").replace("_", "")


def _single(s, what):
    if not isinstance(s, Symbol) or len(s._heads) != 1:
        raise TypeError(f"{what}: expected a single-output Symbol, got {s!r}")
    return s._heads[0]


def _apply(op, inputs, attrs, name, hint, attr=None, json_op=None):
    """Create an operator node; missing inputs become variables ``<name>_<input>``."""
    name = _name.NameManager._thread_current().get(name, hint)
    scope = AttrScope._thread_current().get(attr)
    node_attrs = dict(scope)
    node_attrs.update(attrs)
    if _spec.is_variadic(op):
        entries = [_single(s, op) for s in inputs]
        node_attrs.setdefault("num_args", str(len(entries)))
    else:
        names = _spec.input_names(op, node_attrs)
        entries = []
        for i, in_name in enumerate(names):
            s = inputs[i] if i < len(inputs) else None
            if s is None:
                # MXNet gives an auto-created input the operator's attributes
                s = Symbol([(_Node(None, f"{name}_{in_name}", dict(node_attrs)), 0)])
            entries.append(_single(s, op))
            init = _spec.input_init(op, in_name)
            var_node = entries[-1][0]
            if init is not None and var_node.op is None and "__init__" not in var_node.attrs:
                var_node.attrs["__init__"] = init
    node = _Node(op, name, node_attrs, entries, json_op)
    # an np symbol among the inputs: the result keeps np semantics (MXNet's np graphs)
    cls = next((type(s) for s in inputs if isinstance(s, Symbol) and type(s) is not Symbol),
               Symbol)
    return cls([(node, i) for i in range(node.num_outputs())])


def _np_bool(sym):
    """A comparison's graph node as NumPy semantics want it: bool under ``npx.set_np()``
    (hybridized np blocks), the operator's own dtype otherwise (MXNet's legacy graph)."""
    from ..util import is_np_array

    return sym.astype("bool") if is_np_array() else sym


def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, profiler_scope=None, **kwargs):
    """A variable (an input of a graph): its shape, dtype, initializer and optimizer
    multipliers are stored as MXNet's ``__shape__``/``__dtype__``/... attributes."""
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    attrs = dict(AttrScope._thread_current().get(attr))
    if shape is not None:
        attrs["__shape__"] = str(tuple(shape) if not isinstance(shape, int) else (shape,))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(dtype_np_to_mx(dtype))
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs["__storage_type__"] = str({"default": 0, "row_sparse": 1, "csr": 2}[stype])
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise ValueError(f"Attribute name={k} is not supported. Additional attributes "
                             "must start and end with double underscores, e.g, __yourattr__")
        attrs[k] = str(v)
    return Symbol([(_Node(None, name, attrs), 0)])


Variable = var


def Group(symbols, create_fn=None):
    """One symbol with the outputs of all ``symbols``."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return Symbol([h for s in symbols for h in s._heads])


def load_json(json_str):
    """A symbol from MXNet graph JSON (written by ferromx or MXNet)."""
    from . import _json

    return _json.fromjson(json_str)


fromjson = load_json


def load(fname):
    """A symbol from a ``-symbol.json`` file."""
    with open(fname) as f:
        return load_json(f.read())


# ----------------------------------------------------------------------------- op functions


def _make_op(d, public):
    op = d["name"]
    attr_names = [p[0] for p in d["params"]]
    variadic = _spec.is_variadic(op)
    n_inputs = len(d["inputs"])
    hint = public.lower().removeprefix("_contrib_")  # as MXNet's mx.sym.contrib: box_nms0

    def fn(*args, name=None, attr=None, out=None, **kwargs):
        if variadic:
            if args and isinstance(args[0], (list, tuple)):
                ins, rest = list(args[0]), list(args[1:])
            else:
                ins = [a for a in args if isinstance(a, Symbol)]
                rest = [a for a in args if not isinstance(a, Symbol)]
            ins += [kwargs.pop(k) for k in list(kwargs) if isinstance(kwargs[k], Symbol)]
            kwargs.pop("num_args", None)
        else:
            ins = []
            for a in args[:n_inputs]:
                if not (a is None or isinstance(a, Symbol) or hasattr(a, "asnumpy")):
                    break
                ins.append(a)
            rest = list(args[len(ins):])
            names = d["inputs"] + [a for a in d["aux"] if a not in d["inputs"]]
            ins += [None] * (len(names) - len(ins))
            for i, nm in enumerate(names):
                if nm in kwargs:
                    ins[i] = kwargs.pop(nm)
            for a in ins:
                if a is not None and not isinstance(a, Symbol):
                    raise TypeError(f"{public}: input must be a Symbol, got {type(a).__name__}")
        if len(rest) > len(attr_names):
            raise TypeError(f"{public}: takes {len(attr_names)} parameters, got {len(rest)} "
                            "positional")
        for nm, v in zip(attr_names, rest):
            kwargs[nm] = v
        _hidden_attrs(public, kwargs)
        _spec.check_attrs(op, public, kwargs)
        attrs = {k: _spec.attr_str(v) for k, v in kwargs.items() if v is not None}
        if not variadic:
            present = _spec.input_names(op, attrs)
            full = d["inputs"] + [a for a in d["aux"] if a not in d["inputs"]]
            ins = [ins[full.index(nm)] for nm in present]
        return _apply(op, ins, attrs, name, hint, attr)

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = _op_gen_doc(d, public)
    return fn


# Keywords any operator takes as node attributes ``__<key>__`` (MXNet's hidden keys);
# its auto-created inputs inherit them (``lr_mult=0`` freezes a layer's weight).
_HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage",
                "profiler_scope")


def _hidden_attrs(public, kwargs):
    """Rename hidden keys in ``kwargs`` to ``__key__``; ``<input>_lr_mult`` style keys are an
    error, as in MXNet (set them on the input variable instead)."""
    for key in list(kwargs):
        for hidden in _HIDDEN_KEYS:
            if key == hidden:
                kwargs[f"__{key}__"] = kwargs.pop(key)
            elif key.endswith("_" + hidden) and not key.startswith("__"):
                var = key[:-len(hidden) - 1]
                raise ValueError(f"{public}: setting variable attributes with {key} is not "
                                 f"supported; use w = Variable({hidden}=...) and "
                                 f"{public}({var}=w)")


def _op_gen_doc(d, public):
    from .. import _op_gen

    return _op_gen.docstring(d, public).replace("NDArray", "Symbol")


def _make_binary(d, public):
    op, sop, rop = d["name"], d["scalar_op"], d["rscalar_op"]
    hint = public.lower()

    json_op = public if public.startswith("elemwise_") else None

    def fn(lhs, rhs, name=None, attr=None, out=None):
        if isinstance(lhs, Symbol):
            if isinstance(rhs, Symbol):
                return _apply(op, [lhs, rhs], {}, name, hint, attr, json_op=json_op)
            return _apply(sop, [lhs], {"scalar": _spec.attr_str(rhs)}, name, _scalar_hint(sop),
                          attr)
        if isinstance(rhs, Symbol):
            return _apply(rop, [rhs], {"scalar": _spec.attr_str(lhs)}, name, _scalar_hint(rop),
                          attr)
        raise TypeError(f"{public}: at least one argument must be a Symbol")

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = (f"{d['doc']}\n\nSymbols or a Symbol and a Python scalar (then ``{sop}`` / "
                  f"``{rop}``). Operator ``{op}``.")
    return fn


def build():
    """Every ``mx.sym`` operator function (the ``nd`` names), from the operator table."""
    from .. import _op_gen

    fns = {}
    for d in _spec.TABLE:
        for public in _op_gen.nd_names(d):
            fns[public] = _make_binary(d, public) if _op_gen.is_binary(d) else \
                _make_op(d, public)
        if d["name"].startswith("_") and d["name"] not in fns:
            fns[d["name"]] = _make_op(d, d["name"])
    return fns


_FNS = build()


def _install_fluent():
    from .. import _op_gen

    for d in _op_gen.TABLE:
        if not d["fluent"]:
            continue
        for public in [_op_gen._method_name(d)]:
            if public in ("reshape",) or hasattr(Symbol, public) or public not in _FNS:
                continue
            fn = _FNS[public]

            def method(self, *args, _fn=fn, _name=public, **kwargs):
                _check_np_method(_name)
                return _fn(self, *args, **kwargs)

            method.__name__ = public
            method.__doc__ = fn.__doc__
            setattr(Symbol, public, method)


_install_fluent()

