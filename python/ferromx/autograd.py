"""``ferromx.autograd``: recording, backward, custom functions (MXNet's interface).

The tape lives in Rust; ``backward()`` pushes gradient operators to the engine
and returns as soon as they are pushed.
"""


from . import _native
from .ndarray import NDArray

__all__ = [
    "Function",
    "NDArray",
    "backward",
    "get_symbol",
    "grad",
    "is_recording",
    "is_training",
    "mark_variables",
    "pause",
    "predict_mode",
    "record",
    "set_recording",
    "set_training",
    "train_mode",
]  # MXNet's star import also hands out NDArray


def set_recording(is_recording):
    """Sets recording; returns the previous state."""
    return _native.set_recording(bool(is_recording))


def set_training(train_mode):
    """Sets training mode; returns the previous state."""
    return _native.set_training(bool(train_mode))


def is_recording():
    """Whether operations are being recorded."""
    return _native.is_recording()


def is_training():
    """Whether in training mode (Dropout active)."""
    return _native.is_training()


class _Scope:
    def __init__(self, recording, training):
        self._rec, self._train = recording, training
        self._prev = None

    def __enter__(self):
        prev_r = _native.set_recording(self._rec) if self._rec is not None else None
        prev_t = _native.set_training(self._train) if self._train is not None else None
        self._prev = (prev_r, prev_t)
        return self

    def __exit__(self, *exc):
        prev_r, prev_t = self._prev
        if self._rec is not None:
            _native.set_recording(prev_r)
        if self._train is not None:
            _native.set_training(prev_t)


def record(train_mode=True):
    """Records operations for differentiation (and sets training mode)."""
    return _Scope(True, train_mode)


def pause(train_mode=False):
    """Stops recording inside a ``record()`` block."""
    return _Scope(False, train_mode)


def train_mode():
    """Training mode without changing recording."""
    return _Scope(None, True)


def predict_mode():
    """Inference mode without changing recording."""
    return _Scope(None, False)


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Backpropagates from ``heads`` into the ``.grad`` of marked variables."""
    heads = _as_list(heads)
    hg = _as_list(head_grads) or [None] * len(heads)
    _native.backward(heads, hg, retain_graph, False, train_mode)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Gradients of ``heads`` with respect to ``variables`` (returned, not stored): a list
    with one gradient per variable, also for a single variable (as MXNet returns)."""
    heads = _as_list(heads)
    variables = _as_list(variables)
    hg = _as_list(head_grads) or [None] * len(heads)
    if retain_graph is None:
        retain_graph = create_graph
    res = _native.backward(heads, hg, retain_graph, create_graph, train_mode, variables)
    for i, r in enumerate(res):
        if r is None:  # MXNet raises too: a zero here would hide a disconnected graph
            from .base import MXNetError

            raise MXNetError(f"autograd.grad: cannot differentiate with respect to variable {i} "
                             f"(shape {variables[i].shape}): it is unreachable from the heads")
    return res


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks arrays as variables whose gradients go into ``gradients``."""
    variables = _as_list(variables)
    gradients = _as_list(gradients)
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    _native.mark_variables(variables, gradients, list(grad_reqs))


def get_symbol(x):
    """The :class:`~ferromx.symbol.Symbol` of the recorded computation that produced ``x``
    (a list of arrays gives a group), as MXNet's ``autograd.get_symbol``.

    Variables (arrays with ``attach_grad``) become ``var<k>`` variables, arrays that
    entered the computation without being part of the graph ``null<k>`` variables, and
    each recorded operator call a node ``node_<k>`` with the operator's name and the
    attributes it was called with. ``x[key]`` with an integer-array key is MXNet's
    ``gather_nd(x, null<k>)``, ``null<k>`` standing for the index array MXNet builds from
    the key. Raises ``MXNetError`` for a recorded step whose attributes ferromx does not
    keep (boolean masks, an integer-array key with ``None`` entries, custom ``Function`` s).
    """
    from .base import MXNetError
    from .symbol import _spec
    from .symbol.symbol import Symbol, _Node

    single = isinstance(x, NDArray)
    heads = [x] if single else list(x)
    try:
        nodes, head_refs = _native.autograd_graph(heads)
    except MXNetError as err:
        raise MXNetError(f"autograd.get_symbol: {err}") from None
    built, n_var, n_op = [], 0, 0
    for kind, op, attrs, inputs, annotated, _leaf in nodes:
        if kind != "op":
            built.append(_Node(None, f"{'var' if kind == 'var' else 'null'}{n_var}"))
            n_var += 1
            continue
        if not annotated:
            raise MXNetError(
                f"autograd.get_symbol: the recorded step '{op}' was not made by an operator "
                "call whose attributes ferromx keeps (a boolean mask, an index array with None "
                "entries, or a custom autograd.Function); build this part of the graph with mx.sym")
        built.append(_Node(_spec.resolve(op), f"node_{n_op}", attrs,
                           [(built[i], k) for i, k in inputs]))
        n_op += 1
    return Symbol([(built[i], k) for i, k in head_refs])


class Function:
    """Custom differentiable function: override ``forward`` and ``backward``.

    ``forward`` runs with recording paused; its outputs are connected to the
    inputs through a node whose gradient calls ``backward`` with the output
    gradients (which must return one gradient per input).
    """

    def __init__(self):
        self._saved = ()

    def save_for_backward(self, *args):
        """Keeps arrays for ``backward``."""
        self._saved = args

    @property
    def saved_tensors(self):
        """Arrays kept by ``save_for_backward``."""
        return self._saved

    def forward(self, *inputs):
        """Computes outputs (override)."""
        raise NotImplementedError

    def backward(self, *output_grads):
        """Computes input gradients (override)."""
        raise NotImplementedError

    def __call__(self, *inputs):
        with pause():
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if is_recording():
            _native.record_custom(list(inputs), outs, self._backward_bridge)
        return outputs

    def _backward_bridge(self, *grads):
        with pause():
            res = self.backward(*grads)
        return [res] if isinstance(res, NDArray) else list(res)
