"""Custom operators written in Python (``mx.operator``), following MXNet 1.9.1.

Subclass :class:`CustomOpProp` (names, shape and type inference, ``create_operator``) and
:class:`CustomOp` (``forward``/``backward``), register the property class with
:func:`register`, and call it with ``nd.Custom(*inputs, op_type=name, **kwargs)``.

``forward`` and ``backward`` run as engine operations (:func:`ferromx.engine.push_py`):
``nd.Custom`` returns at once, the operation runs once its inputs are computed, and
reading an output waits for it. Inside them the given arrays are ready (``asnumpy``
works) and NDArray operations run at once on the worker thread. Under
``autograd.record()`` the call is recorded and ``backward`` runs, as an engine op, when
gradients are computed. As in MXNet, the keyword arguments reach the property class's
constructor as strings.
"""

import numpy as np

from . import _native, autograd
from .base import MXNetError
from .engine import push_py

__all__ = [
    "Custom",
    "CustomOp",
    "CustomOpProp",
    "get_all_registered_operators",
    "register",
]

_REGISTRY = {}
# MXNet's dtype codes, which ``create_operator`` receives as ``in_dtypes``.
_DTYPE_CODES = {
    "float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
    "int64": 6, "bool": 7, "bfloat16": 12,
}


class CustomOp:
    """Base class of operators implemented in Python."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` from ``in_data`` (use :meth:`assign` to honour ``req``)."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` from ``out_grad`` (use :meth:`assign` to honour ``req``)."""

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` as ``req`` says: ``'null'``, ``'write'``/``'inplace'``
        or ``'add'``."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise ValueError(f"CustomOp.assign: unknown req {req!r}")


class CustomOpProp:
    """Base class of the property (metadata) class of a Python operator.

    Parameters
    ----------
    need_top_grad : bool
        Whether ``backward`` needs the output gradient (False for loss layers).
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """Return ``(in_shape, out_shape, aux_shape)``; default: outputs like input 0."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """Return ``(in_type, out_type, aux_type)``; default: everything like input 0."""
        return (
            in_type,
            [in_type[0]] * len(self.list_outputs()),
            [in_type[0]] * len(self.list_auxiliary_states()),
        )

    def list_outputs(self):
        """Names of the outputs (default ``['output']``)."""
        return ["output"]

    def list_arguments(self):
        """Names of the arguments (default ``['data']``)."""
        return ["data"]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (default none)."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Which arrays ``backward`` needs (kept for compatibility; all are passed)."""
        deps = []
        if self.need_top_grad():
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """Return the :class:`CustomOp` instance to run."""
        return CustomOp()

    def need_top_grad(self):
        """Whether ``backward`` needs the output gradient."""
        return self.need_top_grad_


def register(reg_name):
    """Class decorator registering a :class:`CustomOpProp` subclass under ``reg_name``."""

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(
                f"operator.register({reg_name!r}): expected a CustomOpProp subclass, "
                f"got {prop_cls!r}"
            )
        _REGISTRY[reg_name] = prop_cls
        return prop_cls

    return do_register


def get_all_registered_operators():
    """Names of all registered operators: the native operator table and, as in MXNet,
    ``Custom`` (the registered Python operators are reached through it)."""
    names = {entry["name"] for entry in _native.op_table()}
    names.add("Custom")
    return sorted(names)


def _dtype_of(arr):
    return np.dtype(arr.dtype)


def _shapes(values, what, op_type, expected):
    values = [tuple(int(d) for d in s) for s in values]
    if len(values) != expected:
        raise MXNetError(
            f"Custom({op_type}): infer_shape returned {len(values)} {what} shapes, "
            f"expected {expected}"
        )
    return values


def Custom(*inputs, op_type=None, **kwargs):
    """Run the Python operator registered as ``op_type`` on ``inputs`` (arguments then
    auxiliary states). Returns the output NDArray, or a list when there are several."""
    from . import ndarray as nd

    if op_type is None:
        raise MXNetError("Custom: op_type is required")
    if op_type not in _REGISTRY:
        raise MXNetError(
            f"Custom: no operator registered as {op_type!r} "
            f"(registered: {sorted(_REGISTRY)})"
        )
    kwargs.pop("name", None)
    prop = _REGISTRY[op_type](**{k: str(v) for k, v in kwargs.items()})
    arg_names = prop.list_arguments()
    aux_names = prop.list_auxiliary_states()
    out_names = prop.list_outputs()
    if len(inputs) != len(arg_names) + len(aux_names):
        raise MXNetError(
            f"Custom({op_type}): expected {len(arg_names)} arguments {arg_names} and "
            f"{len(aux_names)} auxiliary states {aux_names}, got {len(inputs)} inputs"
        )
    for i, x in enumerate(inputs):
        if not isinstance(x, nd.NDArray):
            raise TypeError(f"Custom({op_type}): input {i} is {type(x).__name__}, not NDArray")
    args = list(inputs[: len(arg_names)])
    aux = list(inputs[len(arg_names) :])
    in_shapes = [list(x.shape) for x in args]
    shapes = prop.infer_shape(in_shapes)
    out_shapes = _shapes(shapes[1], "output", op_type, len(out_names))
    types = prop.infer_type([_dtype_of(x) for x in args])
    out_types = [np.dtype(t) for t in types[1]]
    if len(out_types) != len(out_names):
        raise MXNetError(f"Custom({op_type}): infer_type returned {len(out_types)} output types")
    ctx = args[0].context if args else (aux[0].context if aux else None)
    codes = [_DTYPE_CODES.get(_dtype_of(x).name, -1) for x in args]
    op = prop.create_operator(ctx, [list(s) for s in in_shapes], codes)
    outs = [nd.zeros(s, ctx=ctx, dtype=t.name) for s, t in zip(out_shapes, out_types)]
    is_train = autograd.is_training()

    def run_forward():
        op.forward(is_train, ["write"] * len(outs), args, outs, aux)

    push_py(run_forward, reads=args, writes=outs + aux, ctx=ctx, name=f"Custom:{op_type}")
    if autograd.is_recording() and args:
        _native.record_custom(args, outs, _backward_bridge(op, op_type, args, outs, aux, ctx))
    return outs[0] if len(outs) == 1 else outs


def _backward_bridge(op, op_type, args, outs, aux, ctx):
    """The gradient function recorded for one call: pushes ``op.backward``."""
    from . import ndarray as nd

    def grad_fn(*out_grads):
        out_grads = list(out_grads)
        in_grads = [nd.zeros(x.shape, ctx=x.context, dtype=np.dtype(x.dtype).name) for x in args]

        def run_backward():
            op.backward(["write"] * len(in_grads), out_grads, args, outs, in_grads, aux)

        push_py(
            run_backward,
            reads=out_grads + args + outs,
            writes=in_grads + aux,
            ctx=ctx,
            name=f"Custom:{op_type}:backward",
        )
        return in_grads

    return grad_fn
