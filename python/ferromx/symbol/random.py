"""``mx.sym.random``: MXNet's symbolic samplers over the operator table's ``_random_*``,
``_sample_per_element``, ``_sample_multinomial`` and ``_shuffle`` operators.

Scalar parameters give the ``_random_*`` node (its samples are drawn when the graph runs,
from the context's generator, so ``mx.random.seed`` before ``forward`` repeats them).
``Symbol`` parameters give one distribution per parameter element (``_sample_per_element``)
for the families it samples (gamma, poisson, negative binomial and its generalized form);
the location-scale families with ``Symbol`` parameters (``uniform``, ``normal``,
``exponential``) and the ``*_like`` forms are function nodes running the ``nd.random``
sampler (``symbol._np_symbol.nd_function``).
"""

from ..base import MXNetError
from ..ndarray import random as _nd_random
from ._np_symbol import nd_function
from .symbol import _FNS, Symbol

__all__ = ["exponential", "exponential_like", "gamma", "gamma_like",
           "generalized_negative_binomial", "generalized_negative_binomial_like",
           "multinomial", "negative_binomial", "negative_binomial_like", "normal",
           "normal_like", "poisson", "poisson_like", "randint", "randn", "shuffle",
           "uniform", "uniform_like"]

# the *_like samplers: function nodes running nd.random's
exponential_like = nd_function("random.exponential_like", _nd_random.exponential_like)
gamma_like = nd_function("random.gamma_like", _nd_random.gamma_like)
generalized_negative_binomial_like = nd_function(
    "random.generalized_negative_binomial_like", _nd_random.generalized_negative_binomial_like)
negative_binomial_like = nd_function("random.negative_binomial_like",
                                     _nd_random.negative_binomial_like)
normal_like = nd_function("random.normal_like", _nd_random.normal_like)
poisson_like = nd_function("random.poisson_like", _nd_random.poisson_like)
uniform_like = nd_function("random.uniform_like", _nd_random.uniform_like)


def _ctx(ctx):
    return None if ctx is None else str(ctx)


def _scalar(op, name, shape, dtype, ctx, **params):
    kw = {k: v for k, v in params.items()}
    if shape is not None:
        kw["shape"] = shape if isinstance(shape, (tuple, list)) else (shape,)
    if dtype is not None:
        kw["dtype"] = dtype
    if ctx is not None:
        kw["ctx"] = _ctx(ctx)
    return _FNS[op](name=name, **kw)


def _per_element(call, kind, params, shape, dtype, name):
    if not all(isinstance(p, Symbol) for p in params):
        raise MXNetError(f"sym.random.{call}: the parameters must all be Symbols or all be "
                         "Python scalars")
    kw = {"kind": kind}
    if shape is not None:
        kw["shape"] = shape if isinstance(shape, (tuple, list)) else (shape,)
    if dtype is not None:
        kw["dtype"] = dtype
    return _FNS["_sample_per_element"](*params, name=name, **kw)


def _nd_sampler(call, params, shape, dtype, name):
    """Symbol parameters of a family without a per-element table operator: a function
    node running ``nd.random.<call>`` on the parameter arrays."""
    if not all(isinstance(p, Symbol) for p in params):
        raise MXNetError(f"sym.random.{call}: the parameters must all be Symbols or all be "
                         "Python scalars")
    kw = {"shape": shape, "dtype": dtype}
    return nd_function(f"random.{call}", getattr(_nd_random, call))(*params, name=name,
                                                                     **kw)


def uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, name=None, **kwargs):
    """U[low, high) samples of ``shape``."""
    if isinstance(low, Symbol) or isinstance(high, Symbol):
        return _nd_sampler("uniform", (low, high), shape, dtype, name)
    return _scalar("_random_uniform", name, shape, dtype, ctx, low=low, high=high)


def normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, name=None, **kwargs):
    """N(loc, scale²) samples of ``shape``."""
    if isinstance(loc, Symbol) or isinstance(scale, Symbol):
        return _nd_sampler("normal", (loc, scale), shape, dtype, name)
    return _scalar("_random_normal", name, shape, dtype, ctx, loc=loc, scale=scale)


def randn(*shape, loc=0.0, scale=1.0, dtype=None, ctx=None, name=None, **kwargs):
    """Normal samples of ``shape`` (given as positional sizes); with a Symbol ``data=``
    and no sizes, shaped like ``data`` (what MXNet's shape inference gives there)."""
    data = kwargs.get("data")
    if isinstance(data, Symbol) and not shape:
        def like(x):
            return _nd_random.normal(loc, scale, shape=x.shape, dtype=dtype or x.dtype,
                                     ctx=x.context)

        return nd_function("random.randn", like)(data, name=name)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return normal(loc, scale, shape or (1,), dtype=dtype, ctx=ctx, name=name)


def exponential(scale=1.0, shape=None, dtype=None, ctx=None, name=None, **kwargs):
    """Exponential samples with mean ``scale`` (the operator's rate is ``1/scale``)."""
    if isinstance(scale, Symbol):
        return _nd_sampler("exponential", (scale,), shape, dtype, name)
    return _scalar("_random_exponential", name, shape, dtype, ctx, lam=1.0 / scale)


def gamma(alpha=1.0, beta=1.0, shape=None, dtype=None, ctx=None, name=None, **kwargs):
    """Gamma(alpha, scale beta) samples."""
    if isinstance(alpha, Symbol) or isinstance(beta, Symbol):
        return _per_element("gamma", "gamma", (alpha, beta), shape, dtype, name)
    return _scalar("_random_gamma", name, shape, dtype, ctx, alpha=alpha, beta=beta)


def poisson(lam=1.0, shape=None, dtype=None, ctx=None, name=None, **kwargs):
    """Poisson(lam) samples."""
    if isinstance(lam, Symbol):
        return _nd_sampler("poisson", (lam,), shape, dtype, name)
    return _scalar("_random_poisson", name, shape, dtype, ctx, lam=lam)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, name=None, **kwargs):
    """Failures before ``k`` successes with success probability ``p``."""
    if isinstance(k, Symbol) or isinstance(p, Symbol):
        return _per_element("negative_binomial", "negative_binomial", (k, p), shape, dtype,
                            name)
    return _scalar("_random_negative_binomial", name, shape, dtype, ctx, k=k, p=p)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, name=None,
                                  **kwargs):
    """Negative binomial by mean ``mu`` and dispersion ``alpha``."""
    if isinstance(mu, Symbol) or isinstance(alpha, Symbol):
        return _per_element("generalized_negative_binomial", "generalized_negative_binomial",
                            (mu, alpha), shape, dtype, name)
    return _scalar("_random_generalized_negative_binomial", name, shape, dtype, ctx, mu=mu,
                   alpha=alpha)


def randint(low, high, shape=None, dtype=None, ctx=None, name=None, **kwargs):
    """Integers in [low, high)."""
    return _scalar("_random_randint", name, shape, dtype, ctx, low=int(low), high=int(high))


def multinomial(data, shape=None, get_prob=False, dtype="int32", name=None, **kwargs):
    """Category indices drawn from the probabilities in ``data``'s last axis."""
    if get_prob:
        raise MXNetError("sym.random.multinomial: get_prob=True is not supported in symbols "
                         "yet (use nd.random.multinomial)")
    kw = {"dtype": dtype}
    if shape is not None:
        kw["shape"] = shape if isinstance(shape, (tuple, list)) else (shape,)
    return _FNS["_sample_multinomial"](data, name=name, **kw)


def shuffle(data, name=None, **kwargs):
    """A random permutation of ``data`` along its first axis."""
    return _FNS["_shuffle"](data, name=name)
