"""Optimizers, following ``mxnet.optimizer`` (MXNet 1.9.1).

Every update is one fused native operator (``nd.sgd_update``, ``nd.adam_update`` ...)
that writes the weight in place (``out=weight``), so a training step pushes work to the
engine and never waits for it.  ``clip_gradient`` of ``None`` or ``0`` means no clipping
(passed to the operators as ``-1``, their "off" value).
"""

import math
import pickle
import warnings
from typing import ClassVar

import numpy as np

from . import ndarray as nd
from .ndarray import NDArray

__all__ = [
    "NAG",
    "SGD",
    "AdaGrad",
    "Adam",
    "Optimizer",
    "RMSProp",
    "Updater",
    "create",
    "get_updater",
    "register",
]


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
        Accepted for compatibility; ignored.
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

    def set_lr_mult(self, args_lr_mult):
        """Set per-index or per-name learning-rate multipliers (Gluon uses "
        "``Parameter.lr_mult``)."""
        self.lr_mult = {}
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Set per-index or per-name weight-decay multipliers.

        Named parameters not ending in ``_weight`` or ``_gamma`` default to no decay.
        """
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not (name.endswith(("_weight", "_gamma"))):
                self.wd_mult[name] = 0.0
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
        """Same as :meth:`create_state` (multi-precision is not used by ferromx)."""
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Update ``weight`` in place from ``grad``; ``index``/``weight``... may be lists."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self._update_one(i, w, g, s)
        else:
            self._update_one(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        """Same as :meth:`update` (multi-precision is not used by ferromx)."""
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


def _zeros_like(weight):
    return nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)


@register
class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum.

    Without momentum: ``w -= lr * (clip(rescale_grad * g) + wd * w)``.
    With momentum: ``m = momentum * m - lr * (clip(rescale_grad * g) + wd * w); w += m``.
    """

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        kwargs = self._common_kwargs(self._get_lr(index), self._get_wd(index))
        if state is not None:
            nd.sgd_mom_update(
                weight, grad, state, out=weight, momentum=float(self.momentum), **kwargs
            )
        else:
            nd.sgd_update(weight, grad, out=weight, **kwargs)


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient.

    With ``g = clip(rescale_grad * grad) + wd * w``:
    ``m = momentum * m - lr * g; w += momentum * m - lr * g``; plain SGD when momentum is 0.
    """

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        kwargs = self._common_kwargs(self._get_lr(index), self._get_wd(index))
        if state is not None:
            nd.nag_mom_update(
                weight, grad, state, out=weight, momentum=float(self.momentum), **kwargs
            )
        else:
            nd.sgd_update(weight, grad, out=weight, **kwargs)


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba, 2014).

    The bias correction is folded into the learning rate,
    ``lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)``, then with
    ``g = clip(rescale_grad * grad) + wd * w``:
    ``m = beta1 m + (1-beta1) g; v = beta2 v + (1-beta2) g^2; w -= lr_t m / (sqrt(v) + eps)``.
    """

    def __init__(
        self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr = self._get_lr(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        mean, var = state
        nd.adam_update(
            weight,
            grad,
            mean,
            var,
            out=weight,
            beta1=float(self.beta1),
            beta2=float(self.beta2),
            epsilon=float(self.epsilon),
            **self._common_kwargs(lr, self._get_wd(index)),
        )


@register
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton), optionally centered (Graves, 2013).

    Plain: with ``g = clip(rescale_grad * grad) + wd * w``:
    ``n = (1 - gamma1) g^2 + gamma1 n; w -= lr g / sqrt(n + epsilon)``.
    ``centered=True`` uses ``nd.rmspropalex_update``.
    """

    def __init__(
        self,
        learning_rate=0.001,
        gamma1=0.9,
        gamma2=0.9,
        epsilon=1e-8,
        centered=False,
        clip_weights=None,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))
        return (_zeros_like(weight),)

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        kwargs = self._common_kwargs(self._get_lr(index), self._get_wd(index))
        kwargs["gamma1"] = float(self.gamma1)
        kwargs["epsilon"] = float(self.epsilon)
        if self.clip_weights:
            kwargs["clip_weights"] = float(self.clip_weights)
        if not self.centered:
            (n,) = state
            nd.rmsprop_update(weight, grad, n, out=weight, **kwargs)
        else:
            n, g, delta = state
            kwargs["gamma2"] = float(self.gamma2)
            nd.rmspropalex_update(weight, grad, n, g, delta, out=weight, **kwargs)


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., 2011).

    With ``g = clip(rescale_grad * grad)``: ``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``.
    ``eps`` may also be given as ``epsilon``.
    """

    def __init__(self, eps=1e-7, epsilon=None, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps if epsilon is None else epsilon

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        kwargs = self._common_kwargs(self._get_lr(index), self._get_wd(index))
        nd.adagrad_update(
            weight, grad, state, out=weight, epsilon=float(self.float_stable_eps), **kwargs
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
        for idx, weight_i, grad_i in zip(indices, weights, grads):
            self.optimizer.update_multi_precision(idx, weight_i, grad_i, self.states[idx])

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
