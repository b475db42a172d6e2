"""Update rules composed of ``nd`` operators, for the cases without a fused native operator.

The fused native updates (``nd.sgd_update`` ...) take float32 weights; these helpers give
the same rules for any floating dtype (float16 weights without a master copy) and for the
update operators ferromx has no native kernel for (``signum_update``, ``ftml_update`` ...).
Each one writes its results in place and only pushes work to the engine.
"""

import numpy as np

from .. import ndarray as nd


def is_f32(array):
    """True when ``array`` is float32 (the dtype the fused native updates take)."""
    return np.dtype(array.dtype) == np.float32


def assign(dst, value):
    """Write ``value`` into ``dst`` in place (cast to ``dst``'s dtype when they differ)."""
    if np.dtype(value.dtype) != np.dtype(dst.dtype):
        value = value.astype(dst.dtype)
    dst[:] = value


def clip_or_not(grad, clip):
    """``clip(grad, -clip, clip)``, or ``grad`` when ``clip`` is None."""
    if clip is None:
        return grad
    return nd.clip(grad, -float(clip), float(clip))


def kernel_clip(clip_gradient):
    """The clip value a fused MXNet kernel sees: ``None`` (off) for ``None`` or ``0``."""
    return float(clip_gradient) if clip_gradient else None


def sgd(weight, grad, mom, lr, wd, rescale, clip, momentum):
    """``sgd_update`` / ``sgd_mom_update`` for any dtype (``mom`` None for plain SGD)."""
    g = clip_or_not(grad * rescale, clip)
    if mom is None:
        assign(weight, weight * (1.0 - lr * wd) - g * lr)
        return
    assign(mom, mom * momentum - weight * (lr * wd) - g * lr)
    assign(weight, weight + mom)


def nag(weight, grad, mom, lr, wd, rescale, clip, momentum, decay_new_weight=False):
    """MXNet's ``nag_mom_update``: ``mom`` becomes ``momentum * mom - lr * (g + wd w)``.

    ``decay_new_weight`` reproduces ``mp_nag_mom_update``, whose momentum takes the weight
    decay of the already-updated master weight.
    """
    g = clip_or_not(grad * rescale, clip)
    decayed = mom * momentum
    step = (g + weight * wd) * lr
    assign(weight, weight - decayed + (decayed - step) * (momentum + 1.0))
    if decay_new_weight:
        step = (g + weight * wd) * lr
    assign(mom, decayed - step)


def adam(weight, grad, mean, var, lr, wd, rescale, clip, beta1, beta2, epsilon):
    """``adam_update`` for any dtype (``lr`` already bias-corrected)."""
    g = clip_or_not(grad * rescale + weight * wd, clip)
    assign(mean, mean * beta1 + g * (1.0 - beta1))
    assign(var, var * beta2 + nd.square(g) * (1.0 - beta2))
    assign(weight, weight - mean * lr / (nd.sqrt(var) + epsilon))


def signum(weight, grad, mom, lr, wd, rescale, clip, momentum, wd_lh):
    """``signum_update`` (with momentum) or ``signsgd_update`` (``mom`` None)."""
    if mom is None:
        # As MXNet's signsgd kernel: the raw gradient's sign; clip and rescale unused.
        assign(weight, weight * (1.0 - lr * wd) - nd.sign(grad) * lr)
        return
    g = clip_or_not(grad * rescale, clip)
    assign(mom, mom * momentum - (weight * wd + g) * (1.0 - momentum))
    assign(weight, weight * (1.0 - lr * wd_lh) + nd.sign(mom) * lr)


def ftml(weight, grad, state, lr, wd, rescale, clip, beta1, beta2, epsilon, t):
    """``ftml_update``: ``state`` is ``(d, v, z)``."""
    d, v, z = state
    g = clip_or_not(grad * rescale + weight * wd, clip)
    assign(v, v * beta2 + nd.square(g) * (1.0 - beta2))
    d_t = (nd.sqrt(v / (1.0 - beta2**t)) + epsilon) * ((1.0 - beta1**t) / lr)
    assign(z, z * beta1 + g * (1.0 - beta1) - (d_t - d * beta1) * weight)
    assign(d, d_t)
    assign(weight, -z / d_t)


def ftrl(weight, grad, z, n, lr, wd, rescale, clip, lamda1, beta):
    """``ftrl_update``."""
    g = clip_or_not(grad * rescale, clip)
    g2 = nd.square(g)
    assign(z, z + g - (nd.sqrt(n + g2) - nd.sqrt(n)) * weight / lr)
    assign(n, n + g2)
    active = nd.abs(z) > lamda1
    assign(weight, (nd.sign(z) * lamda1 - z) / ((nd.sqrt(n) + beta) / lr + wd) * active)


def lamb_phase1(weight, grad, mean, var, wd, rescale, clip, beta1, beta2, epsilon, t, bias):
    """``lamb_update_phase1``: updates the moments and returns the direction ``g``."""
    g = clip_or_not(grad * rescale, clip)
    assign(mean, mean * beta1 + g * (1.0 - beta1))
    assign(var, var * beta2 + nd.square(g) * (1.0 - beta2))
    if bias:
        m_hat = mean / (1.0 - beta1**t)
        v_hat = var / (1.0 - beta2**t)
        return m_hat / (nd.sqrt(v_hat) + epsilon) + weight * wd
    return mean / (nd.sqrt(var) + epsilon) + weight * wd


def lamb_phase2(weight, g, lr, lower_bound, upper_bound):
    """``lamb_update_phase2``: ``w -= lr * (r1 / r2) * g`` with the trust ratio on the engine.

    ``r1 = ||w||`` (clamped to the bounds that are set), ``r2 = ||g||``; the ratio is 1
    when either norm is 0.
    """
    r1 = nd.norm(weight.astype(np.float32))
    if lower_bound:
        r1 = nd.maximum(r1, float(lower_bound))
    if upper_bound:
        r1 = nd.minimum(r1, float(upper_bound))
    r2 = nd.norm(g.astype(np.float32))
    valid = (r1 > 0.0) * (r2 > 0.0)
    ratio = nd.where(valid, r1 / nd.where(valid, r2, nd.ones_like(r2)), nd.ones_like(r1))
    step = g * (ratio * lr).astype(g.dtype)
    assign(weight, weight - step)
