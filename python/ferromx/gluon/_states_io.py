"""Trainer state files: MXNet 1.9.1's and ferromx's.

MXNet's ``Trainer.save_states`` (without a kvstore doing the updates) writes
``pickle.dumps((states, optimizer))`` of its updater: ``states`` maps a parameter index to
``None``, an NDArray or a tuple of NDArrays; each NDArray is pickled as
``mxnet.ndarray.ndarray.NDArray`` with the state ``{'handle': bytearray(record)}``, where
``record`` is one NDArray record of MXNet's file format; the optimizer is pickled as
``mxnet.optimizer.optimizer.<Class>`` with its ``__dict__``.

:func:`to_ferromx_states` reads such a file, or one ferromx wrote, with an unpickler that
only resolves the classes these files need (MXNet's are mapped onto ferromx's) and turns
every array into NumPy before anything else is built.
"""

import io
import pickle

import numpy as np

from .. import serialization
from ..base import MXNetError

__all__ = ["to_ferromx_states"]

_SAFE_BUILTINS = frozenset(
    [
        "bytearray",
        "bytes",
        "complex",
        "dict",
        "frozenset",
        "list",
        "range",
        "set",
        "slice",
        "tuple",
        "int",
        "float",
        "str",
        "bool",
    ]
)
_SAFE_NUMPY = frozenset(
    [
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    ]
)


class _MXNetArray:
    """Stands in for a pickled MXNet NDArray; parses its record on ``__setstate__``."""

    def __init__(self, handle=None):
        self.host = None

    def __setstate__(self, state):
        handle = state.get("handle") if isinstance(state, dict) else None
        if handle is None:
            raise pickle.UnpicklingError("an MXNet NDArray without its 'handle' bytes")
        self.host = serialization.load_record(bytes(handle), source="<pickled NDArray>")


def _optimizer_factory(name):
    from .. import optimizer as opt

    klass = opt.Optimizer.opt_registry.get(name.lower())
    if klass is None:
        raise pickle.UnpicklingError(f"MXNet optimizer {name!r} has no ferromx counterpart")

    class _Factory:
        def __new__(cls, *args):
            return klass()

    return _Factory


def _scheduler_class(name):
    from .. import lr_scheduler

    klass = getattr(lr_scheduler, name, None)
    if not isinstance(klass, type):
        raise pickle.UnpicklingError(f"MXNet lr_scheduler {name!r} has no ferromx counterpart")
    return klass


class _StatesUnpickler(pickle.Unpickler):
    """Resolves only what trainer state files hold; maps ``mxnet.*`` onto ferromx."""

    def find_class(self, module, name):
        if module == "builtins" and name in _SAFE_BUILTINS:
            return super().find_class(module, name)
        if (module, name) in _SAFE_NUMPY or (module == "copyreg" and name == "_reconstructor"):
            return super().find_class(module, name)
        if module in ("ferromx.optimizer", "ferromx.lr_scheduler") or module.startswith(
            "ferromx.optimizer."
        ):
            return super().find_class(module, name)
        if module in ("mxnet.ndarray.ndarray", "mxnet.numpy.multiarray") and name in (
            "NDArray",
            "ndarray",
        ):
            return _MXNetArray
        if module.startswith("mxnet.optimizer"):
            return _optimizer_factory(name)
        if module == "mxnet.lr_scheduler":
            return _scheduler_class(name)
        raise pickle.UnpicklingError(f"unexpected object {module}.{name} in a states file")


def _to_numpy(obj):
    if isinstance(obj, _MXNetArray):
        return None if obj.host is None or obj.host.value is None else obj.host.value
    if isinstance(obj, tuple):
        return tuple(_to_numpy(o) for o in obj)
    if isinstance(obj, list):
        return [_to_numpy(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    return obj


def to_ferromx_states(data, fname):
    """Bytes for ferromx's ``Updater.set_states`` from a states file's ``data``
    (MXNet's or ferromx's); raises ``MXNetError`` naming ``fname`` if it is not one."""
    try:
        obj = _StatesUnpickler(io.BytesIO(data)).load()
    except Exception as err:
        raise MXNetError(
            f"Cannot load trainer states from '{fname}': {type(err).__name__}: {err}"
        ) from err
    obj = _to_numpy(obj)
    states = obj[0] if isinstance(obj, tuple) and len(obj) == 2 else obj
    if not isinstance(states, dict):
        raise MXNetError(
            f"Cannot load trainer states from '{fname}': expected a dict of states, got "
            f"{type(states).__name__}"
        )
    for value in states.values():
        for leaf in value if isinstance(value, (tuple, list)) else [value]:
            if leaf is not None and not isinstance(leaf, np.ndarray):
                raise MXNetError(
                    f"Cannot load trainer states from '{fname}': a state of type "
                    f"{type(leaf).__name__}"
                )
    return pickle.dumps(obj)
