"""A function node turned into table operators by recording it.

While a hybridized block traces under np mode, every input shape is known, so an
``mx.np`` call on symbols (a :class:`~ferromx.symbol._np_symbol.FunctionNode`) can run
once on placeholder arrays of those shapes with autograd recording; the recorded
operator calls (``autograd.get_symbol``'s walk, ``_native.autograd_graph``) become graph
nodes over the call's input entries. The graph then holds only table operators: it runs as
one native plan, fuses, and exports to MXNet's JSON.

What cannot be expanded raises :class:`TraceUnsupported` (the block then runs eagerly
for that signature, as MXNet's value-dependent code cannot be traced either):
- reading a value (``asnumpy``, ``item``, ``bool(x)``, a NumPy bool mask): the graph would
  bake in the placeholder's value (``_sync.TracedRead``);
- a recorded step whose attributes ferromx does not keep, or an internal constant the call
  does not expose.

Arrays the call creates itself (``np.ones(...)``, an index array) are constants: graph
variables holding their value (:class:`ConstNode`), written to ``.params`` by ``export``.
"""

from .. import _native, _sync, autograd
from .. import name as _name
from ..base import MXNetError
from . import _infer, _spec
from .symbol import _Node


class TraceUnsupported(MXNetError):
    """A function node could not be recorded into table operators."""


class ConstNode(_Node):
    """A graph variable with a value: an array an ``mx.np`` call created while traced."""

    __slots__ = ("value",)

    def __init__(self, name, value):
        import numpy as np

        from ..base import dtype_np_to_mx

        # shape and dtype as a variable's attributes: inference and export see them
        super().__init__(None, name, {"__shape__": str(tuple(value.shape)),
                                      "__dtype__": str(dtype_np_to_mx(np.dtype(value.dtype)))})
        self.value = value


def _placeholders(shapes, dtypes, np_io, seed):
    import numpy as np

    from .. import ndarray as nd

    rng = np.random.RandomState(seed)
    with autograd.pause():
        arrays = [nd.array(_sample(rng, tuple(s), np.dtype(d)), dtype=np.dtype(d).name)
                  for s, d in zip(shapes, dtypes)]
    for a in arrays:
        a.attach_grad()
    return arrays, [a.as_np_ndarray() if np_io else a for a in arrays]


def _sample(rng, shape, dtype):
    """Placeholder values: positive and away from zero (a trace runs the call; logs and
    divisions stay finite), random so two traces tell value-dependent constants apart."""
    import numpy as np

    if dtype.kind == "b":
        return np.asarray(rng.rand(*shape) < 0.5)
    if dtype.kind in "iu":
        return np.asarray(rng.randint(1, 4, size=shape), dtype=dtype)
    x = rng.rand(*shape) + 0.5
    if len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1] > 0:
        # square matrices: symmetric positive definite, so a Cholesky, inverse or solve in
        # the traced code succeeds on the placeholder as on the user's (valid) input
        n = shape[-1]
        x = x @ np.swapaxes(x, -1, -2) / n + np.eye(n)
    return np.asarray(x, dtype=dtype)


def _run(label, call, args):
    """``call(args)`` recorded; ``(outputs, the result's sequence type or None)``."""
    prev = _sync.enter_trace(f"{label} is traced into a graph")
    try:
        with autograd.record(train_mode=autograd.is_training()):
            res = call(args)
    except _sync.TracedRead as err:
        raise TraceUnsupported(f"{label}: {err}") from None
    finally:
        _sync.exit_trace(prev)
    from ._np_symbol import _outputs

    outs = _outputs(res)
    _infer.settle(outs)
    return outs, (type(res) if isinstance(res, (list, tuple)) else None)


def _record(label, call, shapes, dtypes, np_io, seed):
    real, args = _placeholders(shapes, dtypes, np_io, seed)
    outs, seq = _run(label, call, args)
    try:
        nodes, heads = _native.autograd_graph(outs, real)
    except MXNetError:  # an output the inputs did not reach (or one internal to a call)
        raise TraceUnsupported(f"{label}: an output was not recorded from the inputs") from None
    return nodes, heads, seq


def _same_graph(label, first, second):
    """Two recordings of one call from different input values: the same operators, and
    constants of the same values (else a constant depends on the inputs' values)."""
    import numpy as np

    (n1, h1, _), (n2, h2, _) = first, second
    if h1 != h2 or len(n1) != len(n2):
        raise TraceUnsupported(f"{label}: the recorded graph depends on the input values")
    for a, b in zip(n1, n2):
        if a[:5] != b[:5]:
            raise TraceUnsupported(f"{label}: the recorded graph depends on the input values")
        const = a[0] != "op" and not isinstance(a[5], int) and a[5] is not None
        if const and (b[5] is None or isinstance(b[5], int) or a[5].shape != b[5].shape
                      or not np.array_equal(a[5].asnumpy(), b[5].asnumpy())):
            raise TraceUnsupported(f"{label}: a constant depends on the input values")


def expand(label, call, entries, shapes, dtypes, np_io=True):
    """The head entries of ``call``'s recorded computation over input ``entries`` (whose
    shapes and dtypes are given): ``([(node, output index)], seq)``, one entry per output;
    ``seq`` is the type of the call's result when it is a list or tuple, else ``None``."""
    first = _record(label, call, shapes, dtypes, np_io, 0)
    _same_graph(label, first, _record(label, call, shapes, dtypes, np_io, 1))
    nodes, heads, seq = first
    names = _name.NameManager._thread_current()
    built = []
    for kind, op, attrs, inputs, annotated, leaf in nodes:
        if kind != "op":
            if isinstance(leaf, int):
                built.append(entries[leaf])
            elif leaf is not None:
                built.append((ConstNode(names.get(None, "const"), leaf), 0))
            else:
                raise TraceUnsupported(f"{label}: an internal constant the call does not keep")
            continue
        if not annotated:
            raise TraceUnsupported(f"{label}: the recorded step '{op}' keeps no attributes")
        node = _Node(_spec.resolve(op), names.get(None, op.lstrip("_").lower()), attrs,
                     [_entry(built[i], k) for i, k in inputs])
        built.append((node, None))
    return [_entry(built[n], k) for n, k in heads], seq


def _entry(item, k):
    """An input entry: a mapped input or constant keeps its own index; a node takes ``k``."""
    node, idx = item
    return (node, k) if idx is None else (node, idx)


def constant(label, call):
    """Head entries for a call without symbol inputs (``np.ones((2, 3))``): constants, when
    two calls give the same values (a sampler's do not, and cannot be baked in)."""
    import numpy as np

    from ._np_symbol import _outputs

    with autograd.pause():
        res = call([])
        first, second = _outputs(res), _outputs(call([]))
    for a, b in zip(first, second):
        if a.shape != b.shape or not np.array_equal(a.asnumpy(), b.asnumpy(), equal_nan=True):
            raise TraceUnsupported(f"{label}: its values differ between calls (a sampler)")
    names = _name.NameManager._thread_current()
    seq = type(res) if isinstance(res, (list, tuple)) else None
    return [(ConstNode(names.get(None, "const"), a), 0) for a in first], seq
