"""MXNet 1.9.1's remaining optimizer update operators, composed on the engine.

The mixed-precision (``mp_*``) and multi-tensor (``multi_*``, ``preloaded_multi_*``) forms run
the table's update kernels (``sgd_update``, ``sgd_mom_update``, ``nag_mom_update``) on the
float32 master weights and cast back; ``signsgd``/``signum``/``ftrl``/``ftml``/``lamb`` are
elementwise compositions. MXNet's contract holds: the new weight goes to ``out`` (a new array
when omitted; ``out=weight`` updates in place) and state arrays are updated in place.
"""

from .ndarray import NDArray

__all__ = [
    "ftml_update", "ftrl_update", "lamb_update_phase1", "lamb_update_phase2",
    "mp_lamb_update_phase1", "mp_lamb_update_phase2", "mp_nag_mom_update",
    "mp_sgd_mom_update", "mp_sgd_update", "multi_lars", "multi_mp_sgd_mom_update",
    "multi_mp_sgd_update", "multi_sgd_mom_update", "multi_sgd_update",
    "preloaded_multi_mp_sgd_mom_update", "preloaded_multi_mp_sgd_update",
    "preloaded_multi_sgd_mom_update", "preloaded_multi_sgd_update", "signsgd_update",
    "signum_update",
]


def _nd():
    from .. import ndarray

    return ndarray


def _grad(grad, rescale_grad, clip_gradient, dtype="float32"):
    g = grad.astype(dtype) * rescale_grad if grad._dtype_name != dtype else grad * rescale_grad
    if clip_gradient is not None and clip_gradient >= 0:
        g = _nd().clip(g, -clip_gradient, clip_gradient)
    return g


def _result(new, out):
    if out is not None:
        out[...] = new
        return out
    return new


def signsgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None,
                   name=None):
    """``weight * (1 - lr * wd) - lr * sign(grad)``."""
    g = _grad(grad, rescale_grad, clip_gradient, grad._dtype_name)
    return _result(weight * (1.0 - lr * wd) - lr * _nd().sign(g), out)


def signum_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                  clip_gradient=-1.0, wd_lh=0.0, out=None, name=None):
    """Signum: ``mom = momentum * mom - (1 - momentum) * (grad + wd * weight)``, then
    ``weight * (1 - lr * wd_lh) + lr * sign(mom)``."""
    g = _grad(grad, rescale_grad, clip_gradient, grad._dtype_name)
    mom[...] = mom * momentum - (g + weight * wd) * (1.0 - momentum)
    return _result(weight * (1.0 - lr * wd_lh) + lr * _nd().sign(mom), out)


def ftrl_update(weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0,
                clip_gradient=-1.0, out=None, name=None):
    """FTRL-proximal: updates ``z``/``n`` in place and returns the new weight."""
    nd = _nd()
    g = _grad(grad, rescale_grad, clip_gradient, grad._dtype_name)
    n_new = n + g * g
    z[...] = z + g - (nd.sqrt(n_new) - nd.sqrt(n)) * weight / lr
    n[...] = n_new
    shrink = (nd.abs(z) > lamda1).astype(weight._dtype_name)
    new = (nd.sign(z) * lamda1 - z) / ((beta + nd.sqrt(n)) / lr + wd) * shrink
    return _result(new, out)


def ftml_update(weight, grad, d, v, z, lr, beta1=0.6, beta2=0.999, epsilon=1e-8, t=1, wd=0.0,
                rescale_grad=1.0, clip_grad=-1.0, out=None, name=None):
    """FTML: updates ``d``/``v``/``z`` in place and returns the new weight."""
    nd = _nd()
    g = _grad(grad, rescale_grad, clip_grad, grad._dtype_name) + weight * wd
    v[...] = v * beta2 + g * g * (1.0 - beta2)
    d_t = nd.sqrt(v / (1.0 - beta2 ** t)) * ((1.0 - beta1 ** t) / lr) + \
        epsilon * (1.0 - beta1 ** t) / lr
    z[...] = z * beta1 + g * (1.0 - beta1) - (d_t - d * beta1) * weight
    d[...] = d_t
    return _result(-z / d_t, out)


def _mp(kernel, weight, grad, states, weight32, out, **kw):
    g32 = grad.astype("float32") if grad._dtype_name != "float32" else grad
    kernel(weight32, g32, *states, out=weight32, **kw)
    return _result(weight32.astype(weight._dtype_name), out if out is not None else None)


def mp_sgd_update(weight, grad, weight32, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                  lazy_update=True, out=None, name=None):
    """SGD on the float32 master copy ``weight32`` (in place); returns it cast to
    ``weight``'s dtype."""
    return _mp(_nd().sgd_update, weight, grad, (), weight32, out, lr=lr, wd=wd,
               rescale_grad=rescale_grad, clip_gradient=clip_gradient)


def mp_sgd_mom_update(weight, grad, mom, weight32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                      clip_gradient=-1.0, lazy_update=True, out=None, name=None):
    """Momentum SGD on the float32 master copy (``mom`` and ``weight32`` in place)."""
    return _mp(_nd().sgd_mom_update, weight, grad, (mom,), weight32, out, lr=lr,
               momentum=momentum, wd=wd, rescale_grad=rescale_grad, clip_gradient=clip_gradient)


def mp_nag_mom_update(weight, grad, mom, weight32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                      clip_gradient=-1.0, out=None, name=None):
    """Nesterov momentum SGD on the float32 master copy. As MXNet's kernel does, the
    momentum's weight-decay term uses the already updated master weight."""
    w_old = weight32.copy()
    res = _mp(_nd().nag_mom_update, weight, grad, (mom,), weight32, out, lr=lr,
              momentum=momentum, wd=wd, rescale_grad=rescale_grad, clip_gradient=clip_gradient)
    if wd:
        mom[...] = mom - (weight32 - w_old) * (lr * wd)
    return res


def _multi(fn, per, data, lrs, wds, out, kw):
    if len(data) % per:
        raise ValueError(f"{fn.__name__}: expects groups of {per} arrays, got {len(data)}")
    groups = [data[i:i + per] for i in range(0, len(data), per)]
    if len(lrs) < len(groups) or len(wds) < len(groups):
        raise ValueError(f"{fn.__name__}: need one lr and wd per weight ({len(groups)})")
    outs = out if isinstance(out, (list, tuple)) else ([out] if isinstance(out, NDArray)
                                                      else [None] * len(groups))
    res = []
    for grp, lr, wd, o in zip(groups, lrs, wds, outs):
        res.append(fn(*grp, lr=float(lr), wd=float(wd), out=o, **kw))
    return res


def _values(x):
    return [float(v) for v in (x.asnumpy() if isinstance(x, NDArray) else x)]


def _sgd(weight, grad, lr, wd, out=None, **kw):
    return _nd().sgd_update(weight, grad, lr=lr, wd=wd, out=out, **kw)


def _sgd_mom(weight, grad, mom, lr, wd, out=None, **kw):
    return _nd().sgd_mom_update(weight, grad, mom, lr=lr, wd=wd, out=out, **kw)


def multi_sgd_update(*data, lrs, wds, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,
                     out=None, name=None):
    """SGD on several ``(weight, grad)`` pairs."""
    return _multi(_sgd, 2, data, lrs, wds, out, {"rescale_grad": rescale_grad,
                                                 "clip_gradient": clip_gradient})


def multi_sgd_mom_update(*data, lrs, wds, momentum=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                         num_weights=1, out=None, name=None):
    """Momentum SGD on several ``(weight, grad, mom)`` groups."""
    return _multi(_sgd_mom, 3, data, lrs, wds, out, {"momentum": momentum,
                                                     "rescale_grad": rescale_grad,
                                                     "clip_gradient": clip_gradient})


def multi_mp_sgd_update(*data, lrs, wds, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,
                        out=None, name=None):
    """Mixed-precision SGD on several ``(weight, grad, weight32)`` groups."""
    return _multi(mp_sgd_update, 3, data, lrs, wds, out, {"rescale_grad": rescale_grad,
                                                          "clip_gradient": clip_gradient})


def multi_mp_sgd_mom_update(*data, lrs, wds, momentum=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                            num_weights=1, out=None, name=None):
    """Mixed-precision momentum SGD on several ``(weight, grad, mom, weight32)`` groups."""
    return _multi(mp_sgd_mom_update, 4, data, lrs, wds, out,
                  {"momentum": momentum, "rescale_grad": rescale_grad,
                   "clip_gradient": clip_gradient})


def _preloaded(fn, data, kw):
    *arrays, lrs, wds = data
    return fn(*arrays, lrs=_values(lrs), wds=_values(wds), **kw)


def preloaded_multi_sgd_update(*data, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,
                               out=None, name=None):
    """``multi_sgd_update`` with the learning rates and wds as the last two arrays."""
    return _preloaded(multi_sgd_update, data, {"rescale_grad": rescale_grad,
                                               "clip_gradient": clip_gradient, "out": out})


def preloaded_multi_sgd_mom_update(*data, momentum=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                                   num_weights=1, out=None, name=None):
    """``multi_sgd_mom_update`` with the learning rates and wds as the last two arrays."""
    return _preloaded(multi_sgd_mom_update, data, {"momentum": momentum,
                                                   "rescale_grad": rescale_grad,
                                                   "clip_gradient": clip_gradient, "out": out})


def preloaded_multi_mp_sgd_update(*data, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,
                                  out=None, name=None):
    """``multi_mp_sgd_update`` with the learning rates and wds as the last two arrays."""
    return _preloaded(multi_mp_sgd_update, data, {"rescale_grad": rescale_grad,
                                                  "clip_gradient": clip_gradient, "out": out})


def preloaded_multi_mp_sgd_mom_update(*data, momentum=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                                      num_weights=1, out=None, name=None):
    """``multi_mp_sgd_mom_update`` with the learning rates and wds as the last two arrays."""
    return _preloaded(multi_mp_sgd_mom_update, data,
                      {"momentum": momentum, "rescale_grad": rescale_grad,
                       "clip_gradient": clip_gradient, "out": out})


def lamb_update_phase1(weight, grad, mean, var, beta1=0.9, beta2=0.999, epsilon=1e-6, t=1,
                       bias_correction=True, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                       out=None, name=None):
    """LAMB phase 1: updates ``mean``/``var`` in place and returns the update direction
    ``m_hat / (sqrt(v_hat) + eps) + wd * weight``."""
    nd = _nd()
    g = _grad(grad, rescale_grad, clip_gradient, grad._dtype_name)
    mean[...] = mean * beta1 + g * (1.0 - beta1)
    var[...] = var * beta2 + g * g * (1.0 - beta2)
    m, v = mean, var
    if bias_correction:
        m = mean / (1.0 - beta1 ** t)
        v = var / (1.0 - beta2 ** t)
    return _result(m / (nd.sqrt(v) + epsilon) + weight * wd, out)


def lamb_update_phase2(weight, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0, out=None,
                       name=None):
    """LAMB phase 2: ``weight - lr * ratio * g`` with the trust ratio ``r1 / r2`` (1 where
    either norm is 0; ``r1`` clipped to the bounds when they are positive)."""
    nd = _nd()
    if lower_bound >= 0:
        r1 = nd.maximum(r1, lower_bound)
    if upper_bound >= 0:
        r1 = nd.minimum(r1, upper_bound)
    ok = ((r1 != 0) * (r2 != 0)).astype(weight._dtype_name)
    safe_r2 = r2 + (1.0 - ok)
    ratio = (r1 / safe_r2) * ok + (1.0 - ok)
    return _result(weight - g * ratio.reshape((1,) * weight.ndim) * lr if ratio.size == 1
                   else weight - g * ratio * lr, out)


def mp_lamb_update_phase1(weight, grad, mean, var, weight32, beta1=0.9, beta2=0.999,
                          epsilon=1e-6, t=1, bias_correction=True, wd=0.0, rescale_grad=1.0,
                          clip_gradient=-1.0, out=None, name=None):
    """LAMB phase 1 on the float32 master weights."""
    g32 = grad.astype("float32")
    return lamb_update_phase1(weight32, g32, mean, var, beta1, beta2, epsilon, t,
                              bias_correction, wd, rescale_grad, clip_gradient, out=out)


def mp_lamb_update_phase2(weight, g, r1, r2, weight32, lr, lower_bound=-1.0, upper_bound=-1.0,
                          out=None, name=None):
    """LAMB phase 2 on the float32 master weights (updated in place); returns them cast to
    ``weight``'s dtype."""
    weight32[...] = lamb_update_phase2(weight32, g, r1, r2, lr, lower_bound, upper_bound)
    return _result(weight32.astype(weight._dtype_name), out)


def multi_lars(lrs, weights_sum_sq, grads_sum_sq, wds, eta, eps, rescale_grad=1.0, out=None,
               name=None):
    """LARS learning rates: ``lr * eta * |w| / (|g| + wd * |w| + eps)`` where both norms are
    positive, else ``lr``."""
    nd = _nd()
    w = nd.sqrt(weights_sum_sq)
    g = nd.sqrt(grads_sum_sq) * rescale_grad
    ok = ((w > 0) * (g > 0)).astype(lrs._dtype_name)
    new = lrs * eta * w / (g + wds * w + eps)
    return _result(new * ok + lrs * (1.0 - ok), out)
