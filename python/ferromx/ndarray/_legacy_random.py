"""MXNet 1.9.1's legacy random operator names in ``nd``: ``uniform``/``normal`` and the
``random_*`` (scalar parameters) and ``sample_*`` (NDArray parameters, one distribution per
element) families, with the operators' argument order (``shape, ctx, dtype``) and their
parameter names (``lam`` is a rate). Each forwards to ``nd.random``."""

from . import random as _r

__all__ = [
    "normal",
    "random_exponential",
    "random_gamma",
    "random_generalized_negative_binomial",
    "random_negative_binomial",
    "random_normal",
    "random_poisson",
    "random_randint",
    "random_uniform",
    "sample_exponential",
    "sample_gamma",
    "sample_generalized_negative_binomial",
    "sample_multinomial",
    "sample_negative_binomial",
    "sample_normal",
    "sample_poisson",
    "sample_uniform",
    "uniform",
]


def random_uniform(low=0.0, high=1.0, shape=None, ctx=None, dtype=None, out=None, **kwargs):
    """``_random_uniform``: U[low, high) samples of ``shape``."""
    return _r.uniform(low, high, shape=shape, dtype=dtype, ctx=ctx, out=out)


def random_normal(loc=0.0, scale=1.0, shape=None, ctx=None, dtype=None, out=None, **kwargs):
    """``_random_normal``: N(loc, scale²) samples of ``shape``."""
    return _r.normal(loc, scale, shape=shape, dtype=dtype, ctx=ctx, out=out)


def random_gamma(alpha=1.0, beta=1.0, shape=None, ctx=None, dtype=None, out=None, **kwargs):
    """``_random_gamma``: Gamma(alpha, scale beta) samples."""
    return _r.gamma(alpha, beta, shape=shape, dtype=dtype, ctx=ctx, out=out)


def random_exponential(lam=1.0, shape=None, ctx=None, dtype=None, out=None, **kwargs):
    """``_random_exponential``: exponential samples with rate ``lam``."""
    return _r.exponential(1.0 / float(lam) if lam else 0.0, shape=shape, dtype=dtype,
                          ctx=ctx, out=out)


def random_poisson(lam=1.0, shape=None, ctx=None, dtype=None, out=None, **kwargs):
    """``_random_poisson``: Poisson(lam) samples."""
    return _r.poisson(lam, shape=shape, dtype=dtype, ctx=ctx, out=out)


def random_negative_binomial(k=1, p=1, shape=None, ctx=None, dtype=None, out=None, **kwargs):
    """``_random_negative_binomial``."""
    return _r.negative_binomial(k, p, shape=shape, dtype=dtype, ctx=ctx, out=out)


def random_generalized_negative_binomial(mu=1, alpha=1, shape=None, ctx=None, dtype=None,
                                         out=None, **kwargs):
    """``_random_generalized_negative_binomial``."""
    return _r.generalized_negative_binomial(mu, alpha, shape=shape, dtype=dtype, ctx=ctx,
                                            out=out)


def random_randint(low, high, shape=None, ctx=None, dtype=None, out=None, **kwargs):
    """``_random_randint``: integers in [low, high)."""
    return _r.randint(low, high, shape=shape, dtype=dtype, ctx=ctx, out=out)


uniform = random_uniform
normal = random_normal


def sample_uniform(low, high, shape=None, dtype=None, out=None, **kwargs):
    """``_sample_uniform``: one U[low_i, high_i) per element of the NDArrays."""
    return _r.uniform(low, high, shape=shape, dtype=dtype, out=out)


def sample_normal(mu, sigma, shape=None, dtype=None, out=None, **kwargs):
    """``_sample_normal``: one N(mu_i, sigma_i²) per element."""
    return _r.normal(mu, sigma, shape=shape, dtype=dtype, out=out)


def sample_gamma(alpha, beta, shape=None, dtype=None, out=None, **kwargs):
    """``_sample_gamma``: one Gamma(alpha_i, beta_i) per element."""
    return _r.gamma(alpha, beta, shape=shape, dtype=dtype, out=out)


def sample_exponential(lam, shape=None, dtype=None, out=None, **kwargs):
    """``_sample_exponential``: one exponential of rate ``lam_i`` per element."""
    return _r.exponential(1.0 / lam, shape=shape, dtype=dtype, out=out)


def sample_poisson(lam, shape=None, dtype=None, out=None, **kwargs):
    """``_sample_poisson``: one Poisson(lam_i) per element."""
    return _r.poisson(lam, shape=shape, dtype=dtype, out=out)


def sample_negative_binomial(k, p, shape=None, dtype=None, out=None, **kwargs):
    """``_sample_negative_binomial``."""
    return _r.negative_binomial(k, p, shape=shape, dtype=dtype, out=out)


def sample_generalized_negative_binomial(mu, alpha, shape=None, dtype=None, out=None,
                                         **kwargs):
    """``_sample_generalized_negative_binomial``."""
    return _r.generalized_negative_binomial(mu, alpha, shape=shape, dtype=dtype, out=out)


def sample_multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **kwargs):
    """``_sample_multinomial``: category indices drawn from ``data``'s last axis."""
    return _r.multinomial(data, shape=shape, get_prob=get_prob, out=out, dtype=dtype)
