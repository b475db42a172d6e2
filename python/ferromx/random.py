"""``ferromx.random``: seeding and samplers."""

from . import _native
from .ndarray.random import (  # noqa: F401
    uniform, normal, randn, randint, exponential, gamma, poisson, multinomial, shuffle,
)


def seed(seed_state, ctx="all"):
    """Seeds the random generators (of one context, or all) for reproducible results."""
    if ctx == "all" or ctx is None:
        _native.seed(int(seed_state))
    else:
        _native.seed(int(seed_state), str(ctx))
