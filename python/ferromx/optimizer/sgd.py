"""SGD-family optimizers (``mxnet.optimizer``, MXNet 1.9.1): SGD, NAG, Signum, LARS, LBSGD,
DCASGD, SGLD, ccSGD and the ``Test`` optimizer."""

import logging
import math
import os

import numpy as np

from .. import ndarray as nd
from . import _kernels as K
from .optimizer import Optimizer, _is_f16, _warn_f16, register

_LOG = logging.getLogger(__name__)

__all__ = ["DCASGD", "LARS", "LBSGD", "NAG", "SGD", "SGLD", "Signum", "Test", "ccSGD"]


def _zeros_like(weight, dtype=None):
    return nd.zeros(weight.shape, ctx=weight.context, dtype=dtype or weight.dtype)


def _aggregation_size(default):
    return int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", str(default)))


def _listify(index, weight, grad, state):
    if isinstance(index, (list, tuple)):
        return list(index), list(weight), list(grad), list(state)
    return [index], [weight], [grad], [state]


class _MasterLast(Optimizer):
    """Multi-precision state laid out as ``(state, weight32)`` (SGD, NAG, LARS in MXNet)."""

    def create_state_multi_precision(self, index, weight):
        """Return ``(create_state(weight32), weight32)`` for float16 weights with
        ``multi_precision``, otherwise ``create_state(weight)``."""
        if self.multi_precision and _is_f16(weight):
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        if _is_f16(weight):
            _warn_f16(type(self).__name__)
        return self.create_state(index, weight)

    def update_multi_precision(self, index, weight, grad, state):
        """Update; float16 weights with a ``(state, weight32)`` state update the master copy."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, s)
            return
        if self.multi_precision and _is_f16(weight) and isinstance(state, (tuple, list)):
            inner, master = state
            self._update_master(index, master, grad.astype(np.float32), inner)
            nd.cast(master, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    def _update_master(self, index, master, grad32, inner):
        """Update the float32 master copy (the rule of the ``mp_*`` MXNet operator)."""
        self._update_one(index, master, grad32, inner)


@register
class SGD(_MasterLast):
    """Stochastic gradient descent, with optional momentum.

    Without momentum: ``w = (1 - lr * wd) * w - lr * clip(rescale_grad * g)``.
    With momentum: ``m = momentum * m - lr * wd * w - lr * clip(rescale_grad * g); w += m``.
    """

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(4)

    def create_state(self, index, weight):
        """Momentum buffer (zeros) when ``momentum != 0``, else ``None``."""
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if not K.is_f32(weight):
            K.sgd(
                weight, grad, state, lr, wd, self.rescale_grad,
                K.kernel_clip(self.clip_gradient), self.momentum,
            )  # fmt: skip
            return
        kwargs = self._common_kwargs(lr, wd)
        if state is not None:
            nd.sgd_mom_update(
                weight, grad, state, out=weight, momentum=float(self.momentum), **kwargs
            )
        else:
            nd.sgd_update(weight, grad, out=weight, **kwargs)


@register  # pylint: disable=invalid-name
class ccSGD(SGD):
    """[Deprecated in MXNet] The same as :class:`SGD`."""


@register
class NAG(_MasterLast):
    """Nesterov accelerated gradient (MXNet's ``nag_mom_update``; SGD when momentum is 0).

    With ``g = clip(rescale_grad * grad) + wd * w``: ``m = momentum * m``,
    ``w = w - m + (momentum + 1) * (m - lr * g)``, ``m -= lr * g``.
    """

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        """Momentum buffer (zeros) when ``momentum != 0``, else ``None``."""
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _update_one(self, index, weight, grad, state, decay_new_weight=False):
        # Composed rather than the native nag_mom_update, whose momentum buffer is kept in
        # another form than MXNet's (same weights, different state).
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        clip = K.kernel_clip(self.clip_gradient)
        if state is None:
            K.sgd(weight, grad, None, lr, wd, self.rescale_grad, clip, 0.0)
        else:
            K.nag(
                weight, grad, state, lr, wd, self.rescale_grad, clip, self.momentum,
                decay_new_weight=decay_new_weight,
            )  # fmt: skip

    def _update_master(self, index, master, grad32, inner):
        self._update_one(index, master, grad32, inner, decay_new_weight=True)


@register
class Signum(Optimizer):
    """signSGD / Signum (Bernstein et al., 2018).

    With momentum: ``m = momentum * m - (1 - momentum) * (wd * w + clip(rescale_grad * g))``,
    ``w = (1 - lr * wd_lh) * w + lr * sign(m)``.  Without: ``w = (1 - lr * wd) * w -
    lr * sign(g)``.
    """

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        """Momentum buffer (zeros) when ``momentum != 0``, else ``None``."""
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        K.signum(
            weight, grad, state, lr, wd, self.rescale_grad, K.kernel_clip(self.clip_gradient),
            self.momentum, self.wd_lh or 0.0,
        )  # fmt: skip


@register
class LARS(_MasterLast):
    """LARS (You et al., 2017): SGD whose per-layer rate is scaled by ``||w|| / ||g||``.

    For parameters not named ``*gamma``/``*beta``/``*bias``:
    ``lr_layer = lr * eta * ||w|| / (||g|| * rescale_grad + wd * ||w|| + eps)`` when both
    norms are positive.  The weights given in one call share one learning-rate step
    (``momentum_correction`` scales momentum by ``lr / last_lr``).  The norms stay on the
    engine.
    """

    def __init__(
        self, momentum=0.0, lazy_update=True, eta=0.001, eps=0, momentum_correction=True,
        **kwargs,
    ):  # fmt: skip
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(4)
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        self.last_lr = lr if self.cur_lr is None else self.cur_lr
        self.cur_lr = lr
        return super()._get_lrs(indices)

    def set_wd_mult(self, args_wd_mult):
        """As :meth:`Optimizer.set_wd_mult`, but only ``*_weight`` names decay by default."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values() if not n.endswith("_weight")}
        self.wd_mult.update(args_wd_mult)

    def create_state(self, index, weight):
        """Momentum buffer (zeros) when ``momentum != 0``, else ``None``."""
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _layer_lr(self, index, weight, grad, lr, wd):
        name = self.idx2name.get(index, str(index))
        if name.endswith(("gamma", "beta", "bias")):
            return lr
        w_norm = nd.norm(weight.astype(np.float32))
        g_norm = nd.norm(grad.astype(np.float32)) * self.rescale_grad
        valid = (w_norm > 0.0) * (g_norm > 0.0)
        denom = g_norm + w_norm * wd + self.eps
        denom = nd.where(valid, denom, nd.ones_like(denom))
        return nd.where(valid, w_norm * (lr * self.eta) / denom, nd.ones_like(denom) * lr)

    def _lars_step(self, index, weight, grad, state, multi_precision):
        indices, weights, grads, states = _listify(index, weight, grad, state)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        momentum = self.momentum
        if self.momentum_correction and self.last_lr != 0:
            momentum = self.momentum * (self.cur_lr / self.last_lr)
        clip = K.kernel_clip(self.clip_gradient)
        for i, w, g, s, lr, wd in zip(indices, weights, grads, states, lrs, wds):
            lr = self._layer_lr(i, w, g, lr, wd)
            target, inner = w, s
            if multi_precision:
                inner, target = s
                g = g.astype(np.float32)
            if isinstance(lr, nd.NDArray):
                lr = lr.astype(target.dtype)
            K.sgd(target, g, inner, lr, wd, self.rescale_grad, clip, momentum)
            if multi_precision:
                nd.cast(target, dtype=w.dtype, out=w)

    def update(self, index, weight, grad, state):
        """Update one weight or a list of weights (sharing one learning-rate step)."""
        self._lars_step(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        """Update; float16 weights with ``multi_precision`` update their float32 master copy."""
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        mp = self.multi_precision and _is_f16(first)
        self._lars_step(index, weight, grad, state, multi_precision=mp)


@register
class LBSGD(Optimizer):
    """Large-batch SGD with learning-rate warmup and gradient accumulation.

    Gradients are summed over ``batch_scale`` calls; every ``batch_scale``-th call applies
    SGD with their mean and ``lr * mult``, where ``mult`` follows ``warmup_strategy``
    ('linear', 'power2', 'sqrt' up to ``batch_scale`` over ``warmup_epochs *
    updates_per_epoch`` updates, or 'lars': ``clip(sqrt(|w|^2 / (|g|^2 + wd |w|^2)), 0.01,
    100)``).  Other calls leave the weight unchanged.
    """

    def __init__(
        self, momentum=0.0, multi_precision=False, warmup_strategy="linear", warmup_epochs=5,
        batch_scale=1, updates_per_epoch=32, begin_epoch=0, num_epochs=60, **kwargs,
    ):  # fmt: skip
        super().__init__(multi_precision=multi_precision, **kwargs)
        _LOG.info("Running Large-Batch SGD Algorithm")
        self.momentum = momentum
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        """Momentum (or ``(momentum, weight32)`` for float16 with ``multi_precision``)."""
        if self.multi_precision and _is_f16(weight):
            master = weight.astype(np.float32)
            mom = _zeros_like(master) if self.momentum != 0.0 else None
            return (mom, master)
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def _get_lbmult(self, nup):
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        ramp = {
            "linear": nup / nwup,
            "power2": (nup * nup) / (nwup * nwup),
            "sqrt": math.sqrt(float(nup) / nwup),
        }
        if self.warmup_strategy not in ramp:
            return 1.0
        return 1.0 + (maxmult - 1) * ramp[self.warmup_strategy]

    def _get_lars(self, weight, grad, wd):
        w2 = nd.sum(nd.square(weight.astype(np.float32)))
        g2 = nd.sum(nd.square(grad.astype(np.float32)))
        return nd.clip(nd.sqrt(w2 / (g2 + w2 * wd + 1e-18)), 0.01, 100.0)

    def _cumulate_gradient(self, grad, index):
        cgrad = self.cumgrads.get(index)
        if cgrad and cgrad["num_cums"] > 0:
            cum = cgrad["cum_grad"] + grad
            num = cgrad["num_cums"] + 1
        else:
            cum, num = grad.copy(), self.init_updates + 1
        self.cumgrads[index] = {"cum_grad": cum, "num_cums": num}
        return self.cumgrads[index]

    def _update_one(self, index, weight, grad, state):
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            return
        grad = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lr = self._get_lars(weight, grad, wd) * lr
        else:
            lr = lr * self._get_lbmult(cgrad["num_cums"])
        target, inner = weight, state
        mp = isinstance(state, (list, tuple))
        if mp:
            inner, target = state
            grad = grad.astype(np.float32)
        if isinstance(lr, nd.NDArray):
            lr = lr.astype(target.dtype)
        K.sgd(
            target, grad, inner, lr, wd, self.rescale_grad, K.kernel_clip(self.clip_gradient),
            self.momentum,
        )  # fmt: skip
        if mp:
            nd.cast(target, dtype=weight.dtype, out=weight)
        cgrad["cum_grad"] = 0


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al., 2016).

    With ``g = clip(rescale_grad * grad)`` (clipped when ``clip_gradient`` is not None):
    ``m = momentum * m - lr * (g + wd * w + lamda * g^2 * (w - w_prev))``;
    ``w_prev = w; w += m``.
    """

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        """``(momentum or None, copy of the weight)``."""
        mom = _zeros_like(weight) if self.momentum != 0.0 else None
        return (mom, weight.copy())

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = K.clip_or_not(grad * self.rescale_grad, self.clip_gradient)
        mom, previous = state
        step = (g + weight * wd + nd.square(g) * (weight - previous) * self.lamda) * -lr
        if mom is not None:
            K.assign(mom, mom * self.momentum + step)
            step = mom
        K.assign(previous, weight)
        K.assign(weight, weight + step)


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics.

    ``w += -lr/2 * (clip(rescale_grad * g) + wd * w) + N(0, sqrt(lr))`` (the noise comes from
    ``nd.random.normal``, so it follows ``mx.random.seed``).
    """

    def create_state(self, index, weight):
        """No state."""
        return

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = K.clip_or_not(grad * self.rescale_grad, self.clip_gradient)
        noise = nd.random.normal(
            0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype, ctx=weight.context
        )
        K.assign(weight, weight - (g + weight * wd) * (lr / 2) + noise)


@register
class Test(Optimizer):
    """The test optimizer of MXNet: ``w += rescale_grad * g``; the state mirrors the weight."""

    def create_state(self, index, weight):
        """A float32 zeros array shaped like the weight."""
        return nd.zeros(weight.shape, ctx=weight.context)

    def _update_one(self, index, weight, grad, state):
        K.assign(weight, weight + grad * self.rescale_grad)
        K.assign(state, weight)
