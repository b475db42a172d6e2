"""``nd.random``: sampling operators. Each draws its own seed when pushed, so
random ops never serialise unrelated work; ``ferromx.random.seed`` makes them
reproducible.

As in MXNet, distribution parameters are either all numbers or all NDArrays of one
shape; with NDArrays, every element is its own distribution and the result has shape
``param.shape + shape``."""

import numbers

import numpy as np

from ..base import MXNetTypeError, MXNetValueError
from ..context import _ctx_str
from .ndarray import NDArray, _dtype_name, _shape_arg, invoke

__all__ = [
    "exponential",
    "exponential_like",
    "gamma",
    "gamma_like",
    "generalized_negative_binomial",
    "generalized_negative_binomial_like",
    "multinomial",
    "negative_binomial",
    "negative_binomial_like",
    "normal",
    "normal_like",
    "poisson",
    "poisson_like",
    "randint",
    "randn",
    "shuffle",
    "uniform",
    "uniform_like",
]


class _ParamTypeError(MXNetTypeError, AssertionError):
    """Mixed number and NDArray distribution parameters (an ``AssertionError`` in MXNet)."""


class _ScaleError(MXNetValueError, ZeroDivisionError):
    """``exponential(scale=0)`` (a ``ZeroDivisionError`` in MXNet, which computes ``1/scale``)."""


def _shape(shape, op="random"):
    if shape is None:
        return (1,)
    return _shape_arg(op, shape)


def _out_dtype(op, dtype, out):
    """The result's dtype name: ``dtype``, else ``out``'s, else None (the op's default)."""
    if out is None:
        return None if dtype is None else _dtype_name(dtype)
    if not isinstance(out, NDArray):
        raise MXNetTypeError(f"{op}: out must be an NDArray, got {type(out).__name__}")
    if dtype is not None and _dtype_name(dtype) != out._dtype_name:
        raise MXNetTypeError(
            f"{op}: dtype {_dtype_name(dtype)} does not match out's dtype {out._dtype_name}"
        )
    return out._dtype_name


def _store(op, res, out):
    """Writes ``res`` into ``out`` (same shape required, as in MXNet) and returns it."""
    if out is None:
        return res
    if out.shape != res.shape:
        raise MXNetValueError(
            f"{op}: out has shape {out.shape}, but the samples have shape {res.shape}"
        )
    out._slice_assign([], res)
    return out


def _sample(op, shape, ctx, dtype, out, **kw):
    public = op.replace("_random_", "random.")
    name = _out_dtype(public, dtype, out)
    if out is not None:
        ctx = out.context
        if shape is None:
            shape = out.shape
    shape = _shape(shape, public)
    if name is None:
        name = "int32" if op == "_random_randint" else "float32"
    res = invoke(op, [], shape=shape, ctx=_ctx_str(ctx), dtype=name, **kw)
    return _store(public, res, out)


def _nd_params(op, names, params):
    """True when the parameters are NDArrays (checked to share one shape), False when they
    are all numbers; mixing them is an error, as in MXNet."""
    is_nd = [isinstance(p, NDArray) for p in params]
    if not any(is_nd):
        return False
    if not all(is_nd):
        kinds = ", ".join(f"{n}={type(p).__name__}" for n, p in zip(names, params))
        raise _ParamTypeError(
            f"{op}: distribution parameters must all be numbers or all NDArrays, got {kinds}"
        )
    shapes = {p.shape for p in params}
    if len(shapes) > 1:
        detail = ", ".join(f"{n} {p.shape}" for n, p in zip(names, params))
        raise MXNetValueError(f"{op}: NDArray parameters must have the same shape, got {detail}")
    return True


def _nd_layout(op, param, shape, dtype, out):
    """(dtype name, sample shape, full shape, broadcast shape of a parameter) for NDArray
    parameters: samples have shape ``param.shape + shape`` (``shape`` defaults to ())."""
    name = _out_dtype(op, dtype, out) or "float32"
    extra = () if shape is None else _shape_arg(op, shape)
    pshape = param.shape
    return name, extra, pshape + extra, pshape + (1,) * len(extra)


def _as_param(p, bshape, name):
    """Parameter ``p`` cast to the result dtype and shaped to broadcast over the samples."""
    if p._dtype_name != name:
        p = invoke("cast", [p], dtype=name)
    return p._reshape(list(bshape)) if p.shape != bshape else p


def _standard(op, std_op, param, shape, dtype, out, **std_kw):
    """(dtype name, parameter broadcast shape, standard samples of ``std_op``) for the
    location-scale families with NDArray parameters, which transform the samples."""
    name, _extra, full, bshape = _nd_layout(op, param, shape, dtype, out)
    ctx = _ctx_str(param.context)
    return name, bshape, invoke(std_op, [], shape=full, ctx=ctx, dtype=name, **std_kw)


def uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples U[low, high); ``low``/``high`` may be NDArrays (one distribution each)."""
    if _nd_params("random.uniform", ("low", "high"), (low, high)):
        op = "random.uniform"
        name, bshape, u = _standard(
            op, "_random_uniform", low, shape, dtype, out, low=0.0, high=1.0
        )
        lo, hi = _as_param(low, bshape, name), _as_param(high, bshape, name)
        return _store("random.uniform", lo + (hi - lo) * u, out)
    return _sample("_random_uniform", shape, ctx, dtype, out, low=float(low), high=float(high))


def normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples N(loc, scale²); ``loc``/``scale`` may be NDArrays (one distribution each)."""
    if _nd_params("random.normal", ("loc", "scale"), (loc, scale)):
        op = "random.normal"
        name, bshape, n = _standard(
            op, "_random_normal", loc, shape, dtype, out, loc=0.0, scale=1.0
        )
        mu, sigma = _as_param(loc, bshape, name), _as_param(scale, bshape, name)
        return _store("random.normal", mu + sigma * n, out)
    return _sample("_random_normal", shape, ctx, dtype, out, loc=float(loc), scale=float(scale))


def randn(*shape, loc=0.0, scale=1.0, dtype=None, ctx=None, out=None, **kwargs):
    """Normal samples of ``shape`` (``param.shape + shape`` with NDArray ``loc``/``scale``)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    nd_params = _nd_params("random.randn", ("loc", "scale"), (loc, scale))
    if not shape:
        shape = None if nd_params or out is not None else (1,)
    return normal(loc, scale, shape, dtype=dtype, ctx=ctx, out=out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers in [low, high) (int32 by default)."""
    return _sample("_random_randint", shape, ctx, dtype, out, low=int(low), high=int(high))


def exponential(scale=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Exponential samples with mean ``scale`` (MXNet's rate is ``lam = 1/scale``);
    ``scale`` may be an NDArray (one distribution per element)."""
    if isinstance(scale, NDArray):
        op = "random.exponential"
        name, bshape, e = _standard(op, "_random_exponential", scale, shape, dtype, out, lam=1.0)
        return _store("random.exponential", _as_param(scale, bshape, name) * e, out)
    if isinstance(scale, numbers.Real) and not scale > 0:
        raise _ScaleError(
            f"random_exponential: scale must be positive (the rate is 1/scale), got {scale}"
        )
    return _sample("_random_exponential", shape, ctx, dtype, out, lam=1.0 / float(scale))


def _per_element(op, kind, params, shape, dtype, out):
    """One distribution per element of the NDArray ``params`` (all one shape), sampled on
    the engine: the result has shape ``params[0].shape + shape``."""
    name, extra, _full, _b = _nd_layout(op, params[0], shape, dtype, out)
    res = invoke("_sample_per_element", list(params), kind=kind, shape=extra, dtype=name)
    return _store(op, res, out)


def gamma(alpha=1.0, beta=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Gamma(alpha, scale beta) samples; ``alpha``/``beta`` may be NDArrays (one
    distribution per element, sampled on the engine)."""
    if _nd_params("random.gamma", ("alpha", "beta"), (alpha, beta)):
        return _per_element("random.gamma", "gamma", (alpha, beta), shape, dtype, out)
    return _sample("_random_gamma", shape, ctx, dtype, out, alpha=float(alpha), beta=float(beta))


def poisson(lam=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Poisson(lam) samples; ``lam`` may be an NDArray (one distribution per element)."""
    if isinstance(lam, NDArray):
        return _per_element("random.poisson", "poisson", (lam,), shape, dtype, out)
    return _sample("_random_poisson", shape, ctx, dtype, out, lam=float(lam))


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Failures before ``k`` successes with success probability ``p`` (float32 by default);
    ``k``/``p`` may be NDArrays (one distribution per element)."""
    if _nd_params("random.negative_binomial", ("k", "p"), (k, p)):
        op = "random.negative_binomial"
        return _per_element(op, "negative_binomial", (k, p), shape, dtype, out)
    return _sample("_random_negative_binomial", shape, ctx, dtype, out, k=float(k), p=float(p))


def generalized_negative_binomial(
    mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None, **kwargs
):
    """Negative binomial by mean ``mu`` and dispersion ``alpha``; both may be NDArrays."""
    if _nd_params("random.generalized_negative_binomial", ("mu", "alpha"), (mu, alpha)):
        op = "random.generalized_negative_binomial"
        return _per_element(op, "generalized_negative_binomial", (mu, alpha), shape, dtype, out)
    return _sample(
        "_random_generalized_negative_binomial",
        shape,
        ctx,
        dtype,
        out,
        mu=float(mu),
        alpha=float(alpha),
    )


def uniform_like(data, low=0.0, high=1.0, out=None, **kwargs):
    """Uniform samples shaped, typed and placed like ``data``."""
    return uniform(low, high, shape=data.shape, dtype=data.dtype, ctx=data.context, out=out)


def normal_like(data, loc=0.0, scale=1.0, out=None, **kwargs):
    """Normal samples shaped, typed and placed like ``data``."""
    return normal(loc, scale, shape=data.shape, dtype=data.dtype, ctx=data.context, out=out)


def _like(sampler, data, params, out):
    return sampler(*params, shape=data.shape, dtype=data.dtype, ctx=data.context, out=out)


def exponential_like(data, lam=1.0, out=None, **kwargs):
    """Exponential samples of rate ``lam`` (MXNet's ``_random_exponential_like``
    parameter; mean ``1/lam``) shaped, typed and placed like ``data``."""
    return _like(exponential, data, (1.0 / lam,), out)


def gamma_like(data, alpha=1.0, beta=1.0, out=None, **kwargs):
    """Gamma(alpha, scale beta) samples shaped, typed and placed like ``data``."""
    return _like(gamma, data, (alpha, beta), out)


def poisson_like(data, lam=1.0, out=None, **kwargs):
    """Poisson(lam) samples shaped, typed and placed like ``data``."""
    return _like(poisson, data, (lam,), out)


def negative_binomial_like(data, k=1, p=1, out=None, **kwargs):
    """Negative binomial samples shaped, typed and placed like ``data``."""
    return _like(negative_binomial, data, (k, p), out)


def generalized_negative_binomial_like(data, mu=1, alpha=1, out=None, **kwargs):
    """Generalized negative binomial samples shaped, typed and placed like ``data``."""
    return _like(generalized_negative_binomial, data, (mu, alpha), out)


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **kwargs):
    """Category indices drawn from probabilities ``data`` (last axis). With
    ``get_prob=True``, returns ``[samples, log_probs]``: ``log(data)`` at each sample."""
    if not isinstance(data, NDArray):
        raise MXNetTypeError(
            f"random.multinomial: data must be an NDArray, " f"got {type(data).__name__}"
        )
    if shape is None:
        shape = (1,) if data.ndim == 1 else ()
    else:
        shape = _shape(shape, "random.multinomial")
    samples = invoke("_sample_multinomial", [data], shape=shape, dtype=_dtype_name(dtype))
    samples = _store("random.multinomial", samples, out)
    if not get_prob:
        return samples
    k = data.shape[-1]
    batch = data.shape[:-1]
    # log(take(data)), not take(log(data)): the gradient reaches only the sampled
    # probabilities (a zero-probability class would otherwise get 0 * inf = NaN).
    flat = data._reshape([data.size])
    idx = invoke("cast", [samples], dtype="int64")
    if batch:
        nb = int(np.prod(batch))
        offsets = invoke(
            "_arange",
            [],
            start=0.0,
            stop=float(nb * k),
            step=float(k),
            repeat=1,
            ctx=_ctx_str(data.context),
            dtype="int64",
        )
        offsets = offsets._reshape(list(batch + (1,) * (samples.ndim - len(batch))))
        idx = idx + offsets
    return [samples, invoke("log", [invoke("take", [flat, idx], axis=0)])]


def shuffle(data, **kwargs):
    """A random permutation along the first axis."""
    if not isinstance(data, NDArray):
        raise TypeError("shuffle expects an NDArray")
    return invoke("_shuffle", [data])
