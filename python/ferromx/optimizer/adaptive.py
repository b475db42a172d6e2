"""Adaptive-rate optimizers (``mxnet.optimizer``, MXNet 1.9.1): Adam, AdaGrad, RMSProp,
AdaDelta, Adamax, Nadam, FTML, Ftrl and LAMB."""

import math
import os

from .. import ndarray as nd
from . import _kernels as K
from .optimizer import Optimizer, register

__all__ = ["FTML", "LAMB", "AdaDelta", "AdaGrad", "Adam", "Adamax", "Ftrl", "Nadam", "RMSProp"]


def _zeros_like(weight, dtype=None):
    return nd.zeros(weight.shape, ctx=weight.context, dtype=dtype or weight.dtype)


def _zeros_f32(weight):
    """MXNet's ``zeros(weight.shape, weight.context)``: float32 whatever the weight's dtype."""
    return nd.zeros(weight.shape, ctx=weight.context, dtype="float32")


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba, 2014).

    The bias correction is folded into the learning rate,
    ``lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)``, then with
    ``g = clip(rescale_grad * grad + wd * w)``:
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
        """``(mean, variance)`` zeros in the weight's dtype."""
        return (_zeros_like(weight), _zeros_like(weight))

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        mean, var = state
        if not K.is_f32(weight):
            K.adam(
                weight, grad, mean, var, lr, wd, self.rescale_grad,
                K.kernel_clip(self.clip_gradient), self.beta1, self.beta2, self.epsilon,
            )  # fmt: skip
            return
        nd.adam_update(
            weight, grad, mean, var, out=weight, beta1=float(self.beta1),
            beta2=float(self.beta2), epsilon=float(self.epsilon), **self._common_kwargs(lr, wd),
        )  # fmt: skip


@register
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton), optionally centered (Graves, 2013).

    Plain: with ``g = clip(rescale_grad * grad) + wd * w``:
    ``n = (1 - gamma1) g^2 + gamma1 n; w -= lr g / sqrt(n + epsilon)``.
    ``centered=True`` uses ``nd.rmspropalex_update``.  States are float32 (as MXNet).
    """

    def __init__(
        self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False,
        clip_weights=None, **kwargs,
    ):  # fmt: skip
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        """``(n,)``, or ``(n, g, delta)`` when centered."""
        if self.centered:
            return (_zeros_f32(weight), _zeros_f32(weight), _zeros_f32(weight))
        return (_zeros_f32(weight),)

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
    ``eps`` may also be given as ``epsilon``.  The history is float32 (as MXNet).
    """

    def __init__(self, eps=1e-7, epsilon=None, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps if epsilon is None else epsilon

    def create_state(self, index, weight):
        """The squared-gradient history (float32 zeros)."""
        return _zeros_f32(weight)

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        kwargs = self._common_kwargs(self._get_lr(index), self._get_wd(index))
        nd.adagrad_update(
            weight, grad, state, out=weight, epsilon=float(self.float_stable_eps), **kwargs
        )


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler, 2012); the learning rate is not used.

    With ``g = clip(rescale_grad * grad)``: ``acc_g = rho acc_g + (1 - rho) g^2``,
    ``d = sqrt(acc_d + eps) / sqrt(acc_g + eps) * g``, ``acc_d = rho acc_d + (1 - rho) d^2``,
    ``w -= d + wd * w``.  Unlike MXNet, the caller's gradient is not rescaled in place.
    """

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        """``(accumulated g^2, accumulated delta^2)``, float32 (as MXNet)."""
        return (_zeros_f32(weight), _zeros_f32(weight))

    def _update_one(self, index, weight, grad, state):
        wd = self._get_wd(index)
        self._update_count(index)
        g = K.clip_or_not(grad * self.rescale_grad, self.clip_gradient)
        acc_g, acc_delta = state
        K.assign(acc_g, acc_g * self.rho + nd.square(g) * (1.0 - self.rho))
        delta = nd.sqrt(acc_delta + self.epsilon) / nd.sqrt(acc_g + self.epsilon) * g
        K.assign(acc_delta, acc_delta * self.rho + nd.square(delta) * (1.0 - self.rho))
        K.assign(weight, weight - (delta + weight * wd))


@register
class Adamax(Optimizer):
    """AdaMax (Kingma & Ba, 2014, section 7).

    With ``g = clip(rescale_grad * grad + wd * w)``: ``m = beta1 m + (1 - beta1) g``,
    ``u = max(beta2 u, |g|)``, ``w -= lr / (1 - beta1**t) * m / u``.
    """

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        """``(m, u)`` zeros in the weight's dtype."""
        return (_zeros_like(weight), _zeros_like(weight))

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        lr /= 1.0 - self.beta1 ** self._index_update_count[index]
        g = K.clip_or_not(grad * self.rescale_grad + weight * wd, self.clip_gradient)
        m_t, u_t = state
        K.assign(m_t, m_t * self.beta1 + g * (1.0 - self.beta1))
        K.assign(u_t, nd.maximum(u_t * self.beta2, nd.abs(g)))
        K.assign(weight, weight - m_t * lr / u_t)


@register
class Nadam(Optimizer):
    """Nesterov Adam (Dozat, 2015).

    ``mu_t = beta1 (1 - 0.5 * 0.96**(t * schedule_decay))``; the momentum schedule product
    ``m_schedule`` is kept on the optimizer (shared by all weights, as MXNet).  With
    ``g = clip(rescale_grad * grad + wd * w)``: ``m``, ``v`` as Adam, then
    ``w -= lr * ((1 - mu_t) g / (1 - m_schedule) + mu_{t+1} m / (1 - m_schedule mu_{t+1}))
    / (sqrt(v / (1 - beta2**t)) + epsilon)``.
    """

    def __init__(
        self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004,
        **kwargs,
    ):  # fmt: skip
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def create_state(self, index, weight):
        """``(m, v)`` zeros in the weight's dtype."""
        return (_zeros_like(weight), _zeros_like(weight))

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = K.clip_or_not(grad * self.rescale_grad + weight * wd, self.clip_gradient)
        mu_t = self.beta1 * (1.0 - 0.5 * (0.96 ** (t * self.schedule_decay)))
        mu_next = self.beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * self.schedule_decay)))
        self.m_schedule = self.m_schedule * mu_t
        m_schedule_next = self.m_schedule * mu_next
        m_t, v_t = state
        K.assign(m_t, m_t * self.beta1 + g * (1.0 - self.beta1))
        K.assign(v_t, v_t * self.beta2 + nd.square(g) * (1.0 - self.beta2))
        g_prime = g / (1.0 - self.m_schedule)
        m_prime = m_t / (1.0 - m_schedule_next)
        v_prime = v_t / (1.0 - self.beta2**t)
        m_bar = g_prime * (1.0 - mu_t) + m_prime * mu_next
        K.assign(weight, weight - m_bar * lr / (nd.sqrt(v_prime) + self.epsilon))


@register
class FTML(Optimizer):
    """FTML, Follow the Moving Leader (Zheng & Kwok, 2017) (``ftml_update``).

    With ``g = clip(rescale_grad * grad + wd * w)``: ``v = beta2 v + (1 - beta2) g^2``,
    ``d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)``,
    ``z = beta1 z + (1 - beta1) g - (d_t - beta1 d) w``, ``w = -z / d_t``.
    """

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        """``(d, v, z)`` zeros in the weight's dtype."""
        return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        K.ftml(
            weight, grad, state, lr, wd, self.rescale_grad, K.kernel_clip(self.clip_gradient),
            self.beta1, self.beta2, self.epsilon, t,
        )  # fmt: skip


@register
class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al., 2013) (``ftrl_update``).

    With ``g = clip(rescale_grad * grad)``:
    ``z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr``, ``n += g^2``,
    ``w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)``.
    """

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        """``(z, n)``, float32 zeros (as MXNet)."""
        return (_zeros_f32(weight), _zeros_f32(weight))

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        wd, lr = self._get_wd(index), self._get_lr(index)
        z, n = state
        K.ftrl(
            weight, grad, z, n, lr, wd, self.rescale_grad, K.kernel_clip(self.clip_gradient),
            self.lamda1, self.beta,
        )  # fmt: skip


@register
class LAMB(Optimizer):
    """LAMB (You et al., 2019): Adam directions scaled by a per-layer trust ratio.

    Phase 1 (``g = clip(rescale_grad * grad)``): ``m``, ``v`` as Adam and
    ``d = m_hat / (sqrt(v_hat) + epsilon) + wd * w`` (bias-corrected when
    ``bias_correction``).  Phase 2: ``w -= lr * r1 / r2 * d`` with ``r1 = ||w||`` clamped to
    ``[lower_bound, upper_bound]`` (those set) and ``r2 = ||d||`` (ratio 1 if either is 0).
    """

    def __init__(
        self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=None,
        upper_bound=None, bias_correction=True, **kwargs,
    ):  # fmt: skip
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        size = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "45"))
        self.aggregate_num = max(1, min(45, size))

    def create_state(self, index, weight):
        """``(mean, variance)`` zeros in the weight's dtype."""
        return (_zeros_like(weight), _zeros_like(weight))

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        mean, var = state
        g = K.lamb_phase1(
            weight, grad, mean, var, wd, self.rescale_grad, K.kernel_clip(self.clip_gradient),
            self.beta1, self.beta2, self.epsilon, t, self.bias_correction,
        )  # fmt: skip
        K.lamb_phase2(weight, g, lr, self.lower_bound, self.upper_bound)
