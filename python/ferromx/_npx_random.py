"""``ferromx.npx.random``: MXNet 1.9.1's ``mx.npx.random`` (``seed``, ``bernoulli``,
``uniform_n``, ``normal_n``), drawn on the engine."""

import numpy as _onp

from . import ndarray as _nd
from .numpy import random as _npr

__all__ = ["bernoulli", "normal_n", "seed", "uniform_n"]

seed = _npr.seed


def bernoulli(prob=None, logit=None, size=None, dtype=None, ctx=None, out=None):
    """Bernoulli samples (1 with probability ``prob``, or ``sigmoid(logit)``)."""
    if (prob is None) == (logit is None):
        raise ValueError("bernoulli: Either `prob` or `logit` must be specified, but not both.")
    if prob is not None:
        prob = _npr._check("bernoulli", "prob must be in [0, 1]", prob, 0.0, 1.0)
    p = prob if prob is not None else (_nd.sigmoid(logit) if isinstance(logit, _nd.NDArray)
                                       else float(1.0 / (1.0 + _onp.exp(-logit))))
    u = _npr.uniform(0.0, 1.0, size=_npr._size(size, (p,), "bernoulli"), ctx=_npr._ctx(ctx, (p,)))
    res = (u < p).astype(dtype or "float32")
    return _npr._out(res, out)


def _batch(batch_shape, params):
    shapes = [p.shape for p in params if isinstance(p, _nd.NDArray)]
    pshape = _onp.broadcast_shapes(*shapes) if shapes else ()
    if batch_shape is None:
        return pshape
    if isinstance(batch_shape, int):
        batch_shape = (batch_shape,)
    return tuple(batch_shape) + pshape


def uniform_n(low=0.0, high=1.0, batch_shape=None, dtype=None, ctx=None):
    """Uniform samples of shape ``batch_shape + broadcast(low, high).shape``."""
    return _npr.uniform(low, high, size=_batch(batch_shape, (low, high)), dtype=dtype, ctx=ctx)


def normal_n(loc=0.0, scale=1.0, batch_shape=None, dtype=None, ctx=None):
    """Normal samples of shape ``batch_shape + broadcast(loc, scale).shape``."""
    return _npr.normal(loc, scale, size=_batch(batch_shape, (loc, scale)), dtype=dtype, ctx=ctx)
