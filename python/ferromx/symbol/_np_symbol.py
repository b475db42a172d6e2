"""NumPy-semantics symbols: ``mx.sym.np``, ``mx.sym.npx`` and ``Symbol.as_np_ndarray()``.

MXNet 1.9.1 builds these graphs from its ``_npi_*`` operators. ferromx's ``mx.np`` is a
layer of Python functions over the operator table (NumPy's rules decide shapes, dtypes
and which operators run), so a np symbol is a *function node*: a graph node that holds
the ``mx.np`` function and its non-symbol arguments, and whose inputs are the symbols
passed to it. Executing the graph calls that function on the input arrays (as
``np.ndarray``), so the values, dtypes and gradients are exactly those of eager
``mx.np``; shape inference runs it once on zeros of the input shapes.

A graph with function nodes runs, infers and differentiates. A node whose call MXNet
writes as one of its NumPy operators (``np.tanh(x)`` is ``_npi_tanh``, ``x * 2``
``_npi_multiply_scalar``; see ``_npi_write``) is written as that operator by
:meth:`Symbol.tojson`; for the others (a Python function with no MXNet operator)
``tojson`` says which nodes it cannot write.
"""

import functools
import types

from .. import autograd
from .. import name as _name
from ..base import MXNetError
from .symbol import _TRACE, NpSymbolUnsupported, Symbol, _Node, _topo

__all__ = ["NpSymbol", "np", "npx"]


class _Slot:
    """Where input ``i`` goes in a function node's argument template."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


def _template(value, entries):
    """``value`` with every Symbol replaced by a :class:`_Slot` (its heads appended to
    ``entries``; a multi-output symbol stands for the list of its outputs)."""
    if isinstance(value, Symbol):
        slots = []
        for head in value._heads:
            slots.append(_Slot(len(entries)))
            entries.append(head)
        return slots[0] if len(slots) == 1 else slots
    if isinstance(value, (list, tuple)):
        return type(value)(_template(v, entries) for v in value)
    if isinstance(value, dict):
        return {k: _template(v, entries) for k, v in value.items()}
    return value


def _fill(value, arrays):
    if isinstance(value, _Slot):
        return arrays[value.i]
    if isinstance(value, (list, tuple)):
        return type(value)(_fill(v, arrays) for v in value)
    if isinstance(value, dict):
        return {k: _fill(v, arrays) for k, v in value.items()}
    return value


def _outputs(res):
    """A function's result as a list of arrays."""
    if isinstance(res, (list, tuple)):
        return [o for r in res for o in _outputs(r)]
    return [res]


class FunctionNode(_Node):
    """A graph node that runs an ``mx.np``/``mx.npx`` function (see the module docstring).

    ``label`` (``np.tensordot``) is its operator name in printouts and errors; ``call``
    maps the input arrays (``np.ndarray``) to the list of output arrays.
    """

    __slots__ = ("aux", "call", "inferred", "json_attrs", "json_order", "nout", "np_io",
                 "out_names")

    def __init__(self, label, name, call, inputs, nout, attrs=None, *, np_io=True,
                 in_names=None, out_names=None, aux=()):
        self.op = label
        self.name = name
        self.attrs = dict(attrs or {})
        self.inputs = list(inputs)
        self.json_op = label
        self.in_names = list(in_names or [f"arg{i}" for i in range(len(self.inputs))])
        self.call = call
        self.nout = nout
        # np_io: the function takes and returns np.ndarrays (mx.np); else legacy NDArrays
        self.np_io = np_io
        self.out_names = out_names
        self.aux = set(aux)
        # (input dtype names, output dtypes) of the last shape inference (the type pass)
        self.inferred = None
        # MXNet's spelling (``_npi``): its string attributes and the input positions in
        # MXNet's order; ``json_attrs is None``: no MXNet operator computes this node
        self.json_attrs = None
        self.json_order = None

    def num_outputs(self):
        """The number of arrays the function returns."""
        return self.nout

    def output_name(self, i):
        """``<name>_output`` (``_output<i>`` for several outputs), as MXNet names them."""
        if self.out_names is not None:
            return f"{self.name}_{self.out_names[i]}"
        return f"{self.name}_output" if self.nout == 1 else f"{self.name}_output{i}"

    def aux_positions(self):
        """Input positions that are auxiliary states (a custom operator's)."""
        return set(self.aux)

    def with_inputs(self, inputs):
        """The same node over other input entries."""
        node = FunctionNode(self.op, self.name, self.call, inputs, self.nout, self.attrs,
                            np_io=self.np_io, in_names=self.in_names,
                            out_names=self.out_names, aux=self.aux)
        node.json_op, node.json_attrs, node.json_order = (self.json_op, self.json_attrs,
                                                          self.json_order)
        return node

    def run(self, arrays):
        """The outputs (legacy ``NDArray`` views) for input arrays of any kind."""
        conv = "as_np_ndarray" if self.np_io else "as_nd_ndarray"
        ins = [getattr(a, conv)() if hasattr(a, conv) else a for a in arrays]
        outs = _outputs(self.call(ins))
        if len(outs) != self.nout:
            raise MXNetError(f"{self.op} ({self.name}): returned {len(outs)} arrays for "
                             f"{self.nout} graph outputs")
        return [o.as_nd_ndarray() if hasattr(o, "as_nd_ndarray") else o for o in outs]

    def infer(self, shapes, dtypes):
        """Output shapes and dtypes: the function run once on zeros (no gradient)."""
        from .. import ndarray as nd
        from . import _infer

        with autograd.pause():
            ins = [nd.zeros(tuple(s), dtype=d) for s, d in zip(shapes, dtypes)]
            outs = self.run(ins)
        _infer.settle(outs)
        return [tuple(o.shape) for o in outs], [o.dtype for o in outs]


def has_function_nodes(sym):
    """Whether ``sym``'s graph has a :class:`FunctionNode`."""
    return any(isinstance(n, FunctionNode) for n in _topo(sym._heads))


# Functions returning several arrays: their number of graph outputs from the arguments.
def _n_split(args, kwargs):
    sections = kwargs.get("indices_or_sections", args[1] if len(args) > 1 else None)
    if isinstance(sections, int):
        return sections
    return len(sections) + 1


_MULTI = {
    "split": _n_split, "array_split": _n_split, "hsplit": _n_split, "vsplit": _n_split,
    "dsplit": _n_split,
    "meshgrid": lambda a, k: len(a), "broadcast_arrays": lambda a, k: len(a),
    "atleast_1d": lambda a, k: len(a), "atleast_2d": lambda a, k: len(a),
    "atleast_3d": lambda a, k: len(a),
    "slogdet": lambda a, k: 2, "eigh": lambda a, k: 2, "eig": lambda a, k: 2,
    "qr": lambda a, k: 2, "svd": lambda a, k: 3, "lstsq": lambda a, k: 4,
    "divmod": lambda a, k: 2, "modf": lambda a, k: 2, "frexp": lambda a, k: 2,
}


def apply(label, func, args, kwargs, name=None, nout=None, np_io=True):
    """A :class:`NpSymbol` for ``func(*args, **kwargs)`` whose Symbol arguments are graph
    inputs (``label``: the node's operator name, ``np.sum``). ``np_io=False``: ``func`` is
    a legacy ``nd`` function (its node takes ``NDArray`` s; the result is a
    :class:`Symbol`)."""
    entries = []
    targs = _template(list(args), entries)
    tkwargs = _template(dict(kwargs), entries)
    short = label.rsplit(".", 1)[-1]
    if nout is None:
        rule = _MULTI.get(short)
        nout = rule(args, kwargs) if rule else 1

    def call(arrays):
        return func(*_fill(targs, arrays), **_fill(tkwargs, arrays))

    if getattr(_TRACE, "value", None) is not None:
        return _traced(label, call, entries, np_io)
    attrs = {k: repr(v) for k, v in kwargs.items() if not isinstance(v, Symbol)}
    node = FunctionNode(label, _name.NameManager._thread_current().get(name, short), call,
                        entries, nout, attrs, np_io=np_io)
    if np_io:
        _spell(node, label, args, kwargs)
    return (NpSymbol if np_io else Symbol)([(node, i) for i in range(nout)])


def _spell(node, label, args, kwargs):
    """Give ``node`` MXNet's operator and attributes for the call, where MXNet has one."""
    from . import _npi_write

    got = _npi_write.encode(label, args, kwargs)
    if got is None:
        return
    op, attrs, inputs = got
    order = []
    for sym in inputs:
        (entry,) = sym._heads
        pos = next((k for k, e in enumerate(node.inputs)
                    if e[0] is entry[0] and e[1] == entry[1] and k not in order), None)
        if pos is None:
            return
        order.append(pos)
    node.json_op, node.json_attrs, node.json_order = op, attrs, order


def _traced(label, call, entries, np_io):
    """While a hybridized block traces (every input shape known): the call recorded into
    table operators (``_record_trace``); what cannot be recorded runs the block eagerly."""
    from . import _record_trace

    try:
        if not entries:  # np.ones(...) in a trace: a constant, if it is one
            heads, seq = _record_trace.constant(label, call)
        else:
            _complete_shapes(label, entries)
            shapes = [Symbol([e]).shape for e in entries]
            dtypes = [Symbol([e]).dtype for e in entries]
            heads, seq = _record_trace.expand(label, call, entries, shapes, dtypes, np_io)
    except (_record_trace.TraceUnsupported, AttributeError) as err:
        raise NpSymbolUnsupported(f"{label}: {err}") from None
    cls = NpSymbol if np_io else Symbol
    if seq is not None:  # the function returns a list/tuple of arrays: so does its trace
        return seq(cls([h]) for h in heads)
    return cls(heads)


def _complete_shapes(label, entries):
    """A parameter variable of partly unknown shape (deferred initialization: ``(0, 100)``)
    met by ``dot``/``matmul`` gets the dims its operand fixes, as MXNet's ``_npi_dot``
    shape rule infers them backward; the trace's shapes then hold it."""
    from . import _infer

    if label.rsplit(".", 1)[-1] not in ("dot", "matmul") or len(entries) != 2:
        return
    given = _TRACE.value[0]
    inferred = _infer.shape_pass(Symbol(list(entries)), given)
    a, b = (inferred.get((id(node), i)) for node, i in entries)
    if a is None or b is None or len(a) < 1 or len(b) < 1:
        return
    if _infer._known(a) and not _infer._known(b) and len(b) >= 2 and entries[1][0].op is None:
        k = a[-1]
        fixed = (k,) + tuple(b[1:]) if len(b) == 2 else tuple(b[:-2]) + (k, b[-1])
        if b[-2] in (0, k) and _infer._known(fixed):
            given[entries[1][0].name] = fixed
    elif _infer._known(b) and not _infer._known(a) and len(a) >= 1 and entries[0][0].op is None:
        k = b[0] if len(b) == 1 else b[-2]
        fixed = tuple(a[:-1]) + (k,)
        if a[-1] in (0, k) and _infer._known(fixed):
            given[entries[0][0].name] = fixed


def nd_function(label, func):
    """An ``mx.sym`` builder for the legacy ``nd`` Python function ``func`` (one
    :class:`FunctionNode` per call; Symbol arguments are its inputs)."""

    @functools.wraps(func)
    def fn(*args, name=None, attr=None, **kwargs):
        kwargs.pop("out", None)
        return apply(label, func, args, kwargs, name, np_io=False)

    return fn


class NpSymbol(Symbol):
    """A symbol with ``mx.np`` semantics (MXNet's ``mxnet.symbol.numpy._Symbol``):
    arithmetic, comparisons, indexing and array methods build function nodes that run
    the ``mx.np`` operation. :meth:`as_nd_ndarray` gives the legacy :class:`Symbol` of the
    same graph."""

    __slots__ = ()

    def as_nd_ndarray(self):
        """The same outputs as a legacy :class:`Symbol`."""
        return Symbol(self._heads)

    def as_np_ndarray(self):
        """Itself."""
        return self

    def __iter__(self):
        return (NpSymbol([h]) for h in self._heads)

    def __getitem__(self, key):
        if len(self._heads) > 1 and isinstance(key, (int, str, slice)):
            return NpSymbol(Symbol.__getitem__(self, key)._heads)
        from ._npi_write import basic_key

        basic = None if getattr(_TRACE, "value", None) is not None else basic_key(key)
        if basic is not None and basic[1]:  # ints: a slice, then a squeeze (MXNet operators)
            sliced = _method("__getitem__")(self, basic[0])
            return _method("squeeze")(sliced, axis=basic[1])
        return _method("__getitem__")(self, key)

    def __repr__(self):
        return "<_Symbol group>" if self.name is None else f"<_Symbol {self.name}>"

    __str__ = __repr__


def _method(meth):
    def method(self, *args, **kwargs):
        name = kwargs.pop("name", None)
        return apply(f"np.ndarray.{meth.strip('_')}",
                     lambda x, *a, **k: getattr(x, meth)(*a, **k), (self, *args), kwargs, name)

    method.__name__ = meth
    method.__doc__ = f"``mx.np.ndarray.{meth}`` as a graph node."
    return method


def _install_methods():
    from ..numpy.multiarray import ndarray

    structural = {"shape", "dtype", "ndim", "size", "name", "attr", "context", "ctx",
                  "as_nd_ndarray", "as_np_ndarray", "tojson", "save", "bind", "simple_bind",
                  "infer_shape", "infer_type", "asnumpy", "asscalar", "wait_to_read",
                  "attach_grad", "grad", "handle", "stype", "tostype", "detach", "item",
                  "tolist", "backward", "writable", "to_dlpack_for_read",
                  "to_dlpack_for_write", "copyto", "as_in_context", "as_in_ctx"}
    ops = {"__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
           "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
           "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
           "__pos__", "__abs__", "__invert__", "__and__", "__rand__", "__or__", "__ror__",
           "__xor__", "__rxor__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
           "__lshift__", "__rshift__"}
    for meth in ops:
        if hasattr(ndarray, meth):
            setattr(NpSymbol, meth, _method(meth))
    for meth in dir(ndarray):
        if meth.startswith("_") or meth in structural or not callable(getattr(ndarray, meth)):
            continue
        setattr(NpSymbol, meth, _method(meth))
    NpSymbol.T = property(lambda self: _method("transpose")(self), doc="``transpose()``.")
    NpSymbol.__hash__ = Symbol.__hash__


_install_methods()


def _as_np_ndarray(self):
    """The same outputs with NumPy semantics (:class:`NpSymbol`)."""
    return NpSymbol(self._heads)


def _as_nd_ndarray(self):
    """Itself (already a legacy symbol)."""
    return self


Symbol.as_np_ndarray = _as_np_ndarray
Symbol.as_nd_ndarray = _as_nd_ndarray


class _Namespace(types.ModuleType):
    """``mx.sym.np`` / ``mx.sym.npx`` / their ``linalg``, ``random`` ...: every function of
    the matching ``mx.np`` module, as a function-node builder (resolved on first use)."""

    def __init__(self, name, target, label):
        super().__init__(name, f"``{target}`` functions as np symbol builders.")
        self._target = target
        self._label = label

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        import importlib

        mod = importlib.import_module(self._target)
        value = getattr(mod, attr)
        if isinstance(value, types.ModuleType):
            sub = _Namespace(f"{self.__name__}.{attr}", value.__name__,
                             f"{self._label}.{attr}")
            setattr(self, attr, sub)
            return sub
        if not callable(value) or isinstance(value, type):
            return value
        label = f"{self._label}.{attr}"

        @functools.wraps(value)
        def fn(*args, name=None, **kwargs):
            return apply(label, value, args, kwargs, name)

        setattr(self, attr, fn)
        return fn

    def __dir__(self):
        import importlib

        return sorted(set(dir(importlib.import_module(self._target))))


np = _Namespace("ferromx.symbol.numpy", "ferromx.numpy", "np")
npx = _Namespace("ferromx.symbol.numpy_extension", "ferromx.numpy_extension", "npx")
np._Symbol = NpSymbol  # MXNet's class name: mx.sym.np._Symbol
