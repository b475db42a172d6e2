"""MXNet 1.9.1's remaining optimizer update operators, composed on the engine.

The mixed-precision (``mp_*``) and multi-tensor (``multi_*``, ``preloaded_multi_*``) forms run
the table's update kernels (``sgd_update``, ``sgd_mom_update``, ``nag_mom_update``) on the
float32 master weights and cast back; ``signsgd``/``signum``/``ftrl``/``ftml``/``lamb`` are
elementwise compositions. MXNet's contract holds: the new weight goes to ``out`` (a new array
when omitted; ``out=weight`` updates in place) and state arrays are updated in place.
"""

from .ndarray import NDArray

# The AdamW, multi-tensor LAMB and group AdaGrad updates below are MXNet's contrib and
# internal operators (``nd.contrib.adamw_update``, ``nd._internal._adamw_update``), not
# ``nd`` names: they are bound there, not through ``__all__``.
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


def _scale_ok(rescale_grad, like):
    """``rescale_grad`` (an array of one element, or a number) as a 0/1 flag of a finite,
    nonzero scale (MXNet skips the whole update otherwise, so a float16 loss-scaling overflow
    leaves the weights alone) and the scale with a skipped value made harmless, both shaped
    to broadcast against ``like`` (no host read)."""
    nd = _nd()
    if not isinstance(rescale_grad, NDArray):
        rescale_grad = nd.full((1,), float(rescale_grad), ctx=like.context)
    s = rescale_grad.reshape((1,) * max(like.ndim, 1)).astype("float32")
    ok = (nd.contrib.isfinite(s) * (s != 0)).astype("float32")
    return ok, nd.where(ok, s, nd.zeros_like(s))


def _adamw_step(weight, grad, mean, var, ok, scale, lr, eta, beta1, beta2, epsilon, wd,
                clip_gradient):
    """One AdamW step in ``weight``'s dtype with the state updated in place (only where ``ok``);
    returns the new weight (``weight`` itself where not ``ok``)."""
    nd = _nd()
    dt = mean._dtype_name
    g = grad.astype(dt) * scale.astype(dt)
    if clip_gradient is not None and clip_gradient >= 0:
        g = nd.clip(g, -clip_gradient, clip_gradient)
    okd = ok.astype(dt)
    m = mean * beta1 + g * (1.0 - beta1)
    v = var * beta2 + g * g * (1.0 - beta2)
    w = weight.astype(dt)
    new = w - eta * (lr * m / (nd.sqrt(v) + epsilon) + w * wd)
    mean[...] = m * okd + mean * (1.0 - okd)
    var[...] = v * okd + var * (1.0 - okd)
    return new * okd + w * (1.0 - okd)


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0.0, clip_gradient=-1.0, out=None, name=None):
    """AdamW (decoupled weight decay): ``mean``/``var`` updated in place, the new weight
    ``weight - eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)`` to ``out``.
    ``rescale_grad`` is an array (or a number); a non-finite or zero scale skips the step,
    as in MXNet's ``_adamw_update``."""
    ok, scale = _scale_ok(rescale_grad, weight)
    new = _adamw_step(weight, grad, mean, var, ok, scale, lr, eta, beta1, beta2, epsilon, wd,
                      clip_gradient)
    return _result(new, out)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0.0, clip_gradient=-1.0, out=None, name=None):
    """AdamW on the float32 master weights ``weight32`` (updated in place); the result is cast
    to ``weight``'s dtype (MXNet's ``_mp_adamw_update``)."""
    ok, scale = _scale_ok(rescale_grad, weight)
    weight32[...] = _adamw_step(weight32, grad, mean, var, ok, scale, lr, eta, beta1, beta2,
                                epsilon, wd, clip_gradient)
    return _result(weight32.astype(weight._dtype_name), out)


def _groups(data, per, count, op):
    count = count or len(data) // per
    need = count * per
    if len(data) < need:
        raise ValueError(f"{op}: expected {need} arrays for {count} tensors, got {len(data)}")
    return [data[i * per:(i + 1) * per] for i in range(count)]


def _multi_out(results, out):
    if out is None:
        return results
    outs = out if isinstance(out, (list, tuple)) else [out]
    for o, r in zip(outs, results):
        o[...] = r
    return list(outs)


def multi_adamw_update(*data, lrs, wds, etas, rescale_grad=None, num_weights=None, beta1=0.9,
                       beta2=0.999, epsilon=1e-8, clip_gradient=-1.0, out=None, name=None,
                       size=0):
    """AdamW over several tensors: ``data`` is ``weight, grad, mean, var`` per tensor, then
    the ``rescale_grad`` array (MXNet's ``_multi_adamw_update``); one flag skips every tensor
    for a non-finite scale."""
    return _multi_adamw(data, 4, lrs, wds, etas, rescale_grad, num_weights or size, beta1,
                        beta2, epsilon, clip_gradient, out, "multi_adamw_update")


def multi_mp_adamw_update(*data, lrs, wds, etas, rescale_grad=None, num_weights=None,
                          beta1=0.9, beta2=0.999, epsilon=1e-8, clip_gradient=-1.0, out=None,
                          name=None, size=0):
    """:func:`multi_adamw_update` with ``weight, grad, mean, var, weight32`` per tensor."""
    return _multi_adamw(data, 5, lrs, wds, etas, rescale_grad, num_weights or size, beta1,
                        beta2, epsilon, clip_gradient, out, "multi_mp_adamw_update")


def _multi_adamw(data, per, lrs, wds, etas, rescale_grad, count, beta1, beta2, epsilon,
                 clip_gradient, out, op):
    if rescale_grad is None:
        data, rescale_grad = data[:-1], data[-1]
    groups = _groups(list(data), per, count, op)
    ok, scale = _scale_ok(rescale_grad, groups[0][0])
    results = []
    for k, g in enumerate(groups):
        w32 = g[4] if per == 5 else g[0]
        new = _adamw_step(w32, g[1], g[2], g[3], ok, scale, _values(lrs)[k], _values(etas)[k],
                          beta1, beta2, epsilon, _values(wds)[k], clip_gradient)
        if per == 5:
            w32[...] = new
            new = w32.astype(g[0]._dtype_name)
        results.append(new)
    return _multi_out(results, out)


def multi_lamb_update(*data, learning_rates, wds, step_count, beta1=0.9, beta2=0.999,
                      epsilon=1e-6, rescale_grad=1.0, lower_bound=-1.0, upper_bound=-1.0,
                      clip_gradient=-1.0, bias_correction=True, num_tensors=None, out=None,
                      name=None):
    """LAMB over several tensors (``weight, grad, mean, var`` each; MXNet's
    ``_multi_lamb_update``): phase 1 per tensor with its own step count, then the trust
    ratio of the weight's and the direction's norms."""
    return _multi_lamb(data, 4, learning_rates, wds, step_count, beta1, beta2, epsilon,
                       rescale_grad, lower_bound, upper_bound, clip_gradient, bias_correction,
                       num_tensors, out, "multi_lamb_update")


def multi_mp_lamb_update(*data, learning_rates, wds, step_count, beta1=0.9, beta2=0.999,
                         epsilon=1e-6, rescale_grad=1.0, lower_bound=-1.0, upper_bound=-1.0,
                         clip_gradient=-1.0, bias_correction=True, num_tensors=None, out=None,
                         name=None):
    """:func:`multi_lamb_update` on float32 master weights (``weight, grad, mean, var,
    weight32`` each)."""
    return _multi_lamb(data, 5, learning_rates, wds, step_count, beta1, beta2, epsilon,
                       rescale_grad, lower_bound, upper_bound, clip_gradient, bias_correction,
                       num_tensors, out, "multi_mp_lamb_update")


def _multi_lamb(data, per, lrs, wds, steps, beta1, beta2, epsilon, rescale_grad, lower_bound,
                upper_bound, clip_gradient, bias_correction, count, out, op):
    nd = _nd()
    results = []
    for k, g in enumerate(_groups(list(data), per, count, op)):
        w = g[4] if per == 5 else g[0]
        grad = g[1].astype(w._dtype_name) if g[1]._dtype_name != w._dtype_name else g[1]
        d = lamb_update_phase1(w, grad, g[2], g[3], beta1, beta2, epsilon, _values(steps)[k],
                               bias_correction, _values(wds)[k], rescale_grad, clip_gradient)
        new = lamb_update_phase2(w, d, nd.norm(w).reshape((1,)), nd.norm(d).reshape((1,)),
                                 _values(lrs)[k], lower_bound, upper_bound)
        if per == 5:
            w[...] = new
            new = w.astype(g[0]._dtype_name)
        results.append(new)
    return _multi_out(results, out)


def group_adagrad_update(weight, grad, history, lr, rescale_grad=1.0, clip_gradient=-1.0,
                         epsilon=1e-5, out=None, name=None):
    """MXNet 1.9.1 runs ``_contrib_group_adagrad_update`` only for ``row_sparse`` gradients on
    CPU; ferromx has dense storage only, so this raises MXNet's dense-CPU error."""
    from ..base import MXNetError

    raise MXNetError("Operator _contrib_group_adagrad_update is not implemented for CPU "
                     "(MXNet runs it only on row_sparse gradients; sparse storage is out of scope)")
