"""``nd.random``: sampling operators. Each draws its own seed when pushed, so
random ops never serialise unrelated work; ``ferromx.random.seed`` makes them
reproducible."""

from ..context import _ctx_str
from .ndarray import NDArray, _dtype_name, _shape_arg, invoke

__all__ = ["uniform", "normal", "randn", "randint", "exponential", "gamma", "poisson",
           "multinomial", "shuffle"]


def _shape(shape, op="random"):
    if shape is None:
        return (1,)
    return _shape_arg(op, shape)


def _sample(op, shape, ctx, dtype, out, **kw):
    if out is not None:
        shape, ctx = out.shape, out.context
    shape = _shape(shape, op.replace("_random_", "random."))
    res = invoke(op, [], shape=shape, ctx=_ctx_str(ctx), dtype=_dtype_name(dtype)
                 if dtype is not None or op != "_random_randint" else "int32", **kw)
    if out is not None:
        out._slice_assign([], res)
        return out
    return res


def uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples U[low, high)."""
    return _sample("_random_uniform", shape, ctx, dtype, out, low=float(low), high=float(high))


def normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples N(loc, scale²)."""
    return _sample("_random_normal", shape, ctx, dtype, out, loc=float(loc), scale=float(scale))


def randn(*shape, loc=0.0, scale=1.0, dtype=None, ctx=None, **kwargs):
    """Standard normal samples of ``shape``."""
    return normal(loc, scale, shape or (1,), dtype=dtype, ctx=ctx)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers in [low, high) (int32 by default)."""
    return _sample("_random_randint", shape, ctx, dtype, out, low=int(low), high=int(high))


def exponential(scale=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Exponential samples with mean ``scale``."""
    return _sample("_random_exponential", shape, ctx, dtype, out, lam=1.0 / float(scale))


def gamma(alpha=1.0, beta=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Gamma(alpha, scale beta) samples."""
    return _sample("_random_gamma", shape, ctx, dtype, out, alpha=float(alpha), beta=float(beta))


def poisson(lam=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Poisson(lam) samples."""
    return _sample("_random_poisson", shape, ctx, dtype, out, lam=float(lam))


def multinomial(data, shape=None, get_prob=False, dtype="int32", **kwargs):
    """Category indices drawn from probabilities ``data`` (last axis)."""
    if get_prob:
        raise ValueError("multinomial: get_prob=True is not supported")
    shape = _shape(shape, "random.multinomial") if shape else ()
    return invoke("_sample_multinomial", [data], shape=shape, dtype=_dtype_name(dtype))


def shuffle(data, **kwargs):
    """A random permutation along the first axis."""
    if not isinstance(data, NDArray):
        raise TypeError("shuffle expects an NDArray")
    return invoke("_shuffle", [data])
