"""The optimizer base class, registry and updater (``mxnet.optimizer.optimizer``, MXNet 1.9.1).

Updates write the weight in place and only push work to the engine; they never wait.
Float32 weights mostly use one fused native operator (``nd.sgd_update`` ...); other
dtypes and the optimizers without a native operator compose ``nd`` operators.
"""

import pickle
import warnings
from typing import ClassVar

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray

__all__ = ["Optimizer", "Updater", "create", "get_updater", "register"]


class Optimizer:
    """Base class of optimizers.

    Parameters
    ----------
    rescale_grad : float
        Multiply each gradient by this before use (the Trainer sets ``1/batch_size``).
    param_idx2name : dict of int to str, optional
        Names of the parameters, used for name-based ``lr_mult``/``wd_mult``.
    wd : float
        Weight decay (L2 penalty) coefficient.
    clip_gradient : float, optional
        Clip each rescaled gradient to ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional
        Learning rate (0.01 when neither it nor ``lr_scheduler`` is given).
    lr_scheduler : LRScheduler, optional
        Schedule called with the update count.
    begin_num_update : int
        The update count to start from.
    multi_precision : bool
        For float16 weights, keep a float32 master copy in the state and update it in
        float32 (:meth:`create_state_multi_precision`, :meth:`update_multi_precision`).
    param_dict : dict of int to Parameter, optional
        Gluon parameters by index; their ``lr_mult``/``wd_mult`` apply.
    """

    opt_registry: ClassVar[dict] = {}

    def __init__(
        self,
        rescale_grad=1.0,
        param_idx2name=None,
        wd=0.0,
        clip_gradient=None,
        learning_rate=None,
        lr_scheduler=None,
        sym=None,
        begin_num_update=0,
        multi_precision=False,
        param_dict=None,
    ):
        self.rescale_grad = rescale_grad
        # MXNet's flag: states follow np mode (ferromx's states take the weights' kind, so
        # an optimizer pickled without it, as by MXNet < 1.6, works too)
        from ..util import is_np_array

        self.allow_np_array = is_np_array()
        self.lr_scheduler = lr_scheduler
        if learning_rate is None and lr_scheduler is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if (
            self.lr_scheduler is not None
            and learning_rate is not None
            and self.lr_scheduler.base_lr != learning_rate
        ):
            warnings.warn(
                "learning rate from ``lr_scheduler`` has been overwritten by ``learning_rate`` in "
                "optimizer.",
                UserWarning,
                stacklevel=2,
            )
            self.lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        self.sym = sym
        # MXNet's ``sym_info``: the graph's ``__lr_mult__``/``__wd_mult__`` attributes
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.idx2name = dict(param_idx2name) if param_idx2name else {}
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ---- registry -------------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Register an optimizer class under its lower-cased class name (a decorator)."""
        if not (isinstance(klass, type) and issubclass(klass, Optimizer)):
            raise TypeError(f"can only register subclasses of Optimizer, got {klass!r}")
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            old = Optimizer.opt_registry[name]
            warnings.warn(
                f"New optimizer {klass.__module__}.{klass.__name__} is overriding existing "
                f"optimizer {old.__module__}.{old.__name__}",
                stacklevel=2,
            )
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """Instantiate the optimizer registered as ``name`` (case-insensitive) with ``kwargs``."""
        key = name.lower()
        if key not in Optimizer.opt_registry:
            raise ValueError(f"Cannot find optimizer {name}")
        return Optimizer.opt_registry[key](**kwargs)

    # ---- learning rate and multipliers -----------------------------------------------
    @property
    def learning_rate(self):
        """The current learning rate (from the scheduler when there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Set the learning rate; not allowed when an ``lr_scheduler`` is in use."""
        if self.lr_scheduler is not None:
            raise UserWarning(
                "LRScheduler of the optimizer has already been defined. Note that "
                "set_learning_rate can mutate the value of the learning rate of the optimizer "
                "only when the LRScheduler of the optimizer is undefined."
            )
        self.lr = lr

    def set_lr_scale(self, args_lrscale):
        """Deprecated (as in MXNet): use :meth:`set_lr_mult`."""
        raise DeprecationWarning("set_lr_scale is deprecated; use set_lr_mult")

    def set_lr_mult(self, args_lr_mult):
        """Set per-index or per-name learning-rate multipliers (Gluon uses "
        "``Parameter.lr_mult``)."""
        self.lr_mult = {}
        self._from_symbol(self.lr_mult, "__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def _from_symbol(self, mults, key):
        """Multipliers the bound symbol's arguments carry as attribute ``key``."""
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and key in attr[name]:
                    mults[name] = float(attr[name][key])

    def set_wd_mult(self, args_wd_mult):
        """Set per-index or per-name weight-decay multipliers.

        Named parameters not ending in ``_weight`` or ``_gamma`` default to no decay.
        """
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not (name.endswith(("_weight", "_gamma"))):
                self.wd_mult[name] = 0.0
        self._from_symbol(self.wd_mult, "__wd_mult__")
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        """Switch the per-index update counters to those of device ``device_id``."""
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index):
        indices = index if isinstance(index, (list, tuple)) else [index]
        for idx in indices:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        lrs = []
        for index in indices:
            mult = 1.0
            if index in self.param_dict:
                mult = self.param_dict[index].lr_mult
            elif index in self.lr_mult:
                mult = self.lr_mult[index]
            elif index in self.idx2name:
                mult = self.lr_mult.get(self.idx2name[index], 1.0)
            lrs.append(lr * mult)
        return lrs

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        wds = []
        for index in indices:
            mult = 1.0
            if index in self.param_dict:
                mult = self.param_dict[index].wd_mult
            elif index in self.wd_mult:
                mult = self.wd_mult[index]
            elif index in self.idx2name:
                mult = self.wd_mult.get(self.idx2name[index], 1.0)
            wds.append(self.wd * mult)
        return wds

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def _clip(self):
        """The ``clip_gradient`` operator argument (``-1`` disables clipping)."""
        return float(self.clip_gradient) if self.clip_gradient else -1.0

    def _common_kwargs(self, lr, wd):
        return {
            "lr": float(lr),
            "wd": float(wd),
            "rescale_grad": float(self.rescale_grad),
            "clip_gradient": self._clip(),
        }

    # ---- states and updates -----------------------------------------------------------
    def create_state(self, index, weight):
        """Create the optimizer state (e.g. momentum) for the weight at ``index``."""
        return

    def create_state_multi_precision(self, index, weight):
        """Create the state, with a float32 master copy first for float16 weights.

        With ``multi_precision`` and a float16 ``weight`` this returns
        ``(weight32, create_state(index, weight32))``; otherwise ``create_state``.
        """
        if self.multi_precision and _is_f16(weight):
            master = weight.astype(np.float32)
            return (master, self.create_state(index, master))
        if _is_f16(weight):
            _warn_f16(type(self).__name__)
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Update ``weight`` in place from ``grad``; ``index``/``weight``... may be lists."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self._update_one(i, w, g, s)
        else:
            self._update_one(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        """Like :meth:`update`, but float16 weights update their float32 master copy.

        The gradient is cast to float32, :meth:`update` runs on the master copy and the
        result is cast back into ``weight``.
        """
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, s)
            return
        if self.multi_precision and _is_f16(weight):
            master, inner = state
            self.update(index, master, grad.astype(np.float32), inner)
            nd.cast(master, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    def _update_one(self, index, weight, grad, state):
        raise NotImplementedError()

    # ---- pickling -----------------------------------------------------------------------
    def __getstate__(self):
        ret = self.__dict__.copy()
        # Parameters hold device arrays; the Trainer re-attaches them after loading.
        ret.pop("param_dict", None)
        return ret

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.param_dict = {}


register = Optimizer.register
create = Optimizer.create_optimizer


def _is_f16(array):
    return np.dtype(array.dtype) == np.float16


def _warn_f16(name):
    warnings.warn(
        "Accumulating with float16 in optimizer can lead to poor accuracy or slow "
        f"convergence. Consider using multi_precision=True option of the {name} optimizer",
        stacklevel=3,
    )


# ---- updater ------------------------------------------------------------------------------
def _map_arrays(obj, fn, kind):
    """Apply ``fn`` to every array of type ``kind`` inside nested tuples/lists/dicts."""
    if isinstance(obj, kind):
        return fn(obj)
    if isinstance(obj, tuple):
        return tuple(_map_arrays(o, fn, kind) for o in obj)
    if isinstance(obj, list):
        return [_map_arrays(o, fn, kind) for o in obj]
    if isinstance(obj, dict):
        return {k: _map_arrays(v, fn, kind) for k, v in obj.items()}
    return obj


class Updater:
    """Apply an :class:`Optimizer` to (index, grad, weight), keeping one state per index."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}

    def __call__(self, index, grad, weight):
        """Update ``weight`` (or each weight of a list) in place."""
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = list(index), list(grad), list(weight)
        if weights:
            ctx = weights[0].context
            self.optimizer._set_current_context(getattr(ctx, "device_id", 0))
        for idx, weight_i in zip(indices, weights):
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weight_i)
                self.states_synced[idx] = True
            elif not self.states_synced.get(idx, False):
                self.states[idx] = self.sync_state_context(self.states[idx], weight_i.context)
                self.states_synced[idx] = True
        chunk = int(getattr(self.optimizer, "aggregate_num", 0) or 0)
        if chunk <= 0:
            for idx, weight_i, grad_i in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(idx, weight_i, grad_i, self.states[idx])
            return
        # As MXNet: group by weight dtype, then hand the optimizer up to
        # ``aggregate_num`` weights per call (LARS scales their rates together).
        by_dtype = {}
        for item in zip(indices, weights, grads):
            by_dtype.setdefault(np.dtype(item[1].dtype), []).append(item)
        for items in by_dtype.values():
            for start in range(0, len(items), chunk):
                idxs, ws, gs = (list(t) for t in zip(*items[start : start + chunk]))
                states = [self.states[i] for i in idxs]
                self.optimizer.update_multi_precision(idxs, ws, gs, states)

    def sync_state_context(self, state, context):
        """Return ``state`` with every NDArray (or saved NumPy array) on ``context``."""
        state = _map_arrays(state, lambda a: nd.array(a, ctx=context, dtype=a.dtype), np.ndarray)
        return _map_arrays(state, lambda a: a.as_in_context(context), NDArray)

    def set_states(self, states):
        """Restore states (and possibly the optimizer) from :meth:`get_states` bytes."""
        states = pickle.loads(states)
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
        else:
            self.states = states
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer=False):
        """Serialize the states (arrays as NumPy) and optionally the optimizer to bytes."""
        states = _map_arrays(self.states, lambda a: a.asnumpy(), NDArray)
        return pickle.dumps((states, self.optimizer) if dump_optimizer else states)


def get_updater(optimizer):
    """Return an :class:`Updater` for ``optimizer``."""
    return Updater(optimizer)
