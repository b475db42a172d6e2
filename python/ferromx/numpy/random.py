"""``ferromx.np.random``."""

from ..ndarray import random as _r


def _np(r):
    return r if r._is_np else r._as_np()


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None):
    """U[low, high)."""
    return _np(_r.uniform(low, high, shape=size or (), dtype=dtype, ctx=ctx))


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None):
    """N(loc, scale)."""
    return _np(_r.normal(loc, scale, shape=size or (), dtype=dtype, ctx=ctx))


def randint(low, high=None, size=None, dtype=None, ctx=None):
    """Integers in [low, high)."""
    if high is None:
        low, high = 0, low
    return _np(_r.randint(low, high, shape=size or (), dtype=dtype or "int64", ctx=ctx))
