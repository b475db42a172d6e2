"""``ferromx.random``: seeding and samplers."""

import numbers

import numpy as np

from . import _native
from .base import MXNetValueError
from .ndarray.random import (  # noqa: F401
    exponential,
    gamma,
    multinomial,
    normal,
    poisson,
    randint,
    randn,
    shuffle,
    uniform,
)


def seed(seed_state, ctx="all"):
    """Seeds the random generators (of one context, or all) for reproducible results.

    ``seed_state`` must be an integer; like MXNet (which passes it as a C ``int``), only its
    low 32 bits count, so ``seed(-1)`` equals ``seed(2**32 - 1)`` and ``seed(2**32)``
    equals ``seed(0)``.
    """
    if not isinstance(seed_state, (numbers.Integral, np.integer)):
        raise MXNetValueError(
            f"seed: seed_state must be int, got {type(seed_state).__name__} {seed_state!r}"
        )
    state = int(seed_state) & 0xFFFFFFFF
    if ctx == "all" or ctx is None:
        _native.seed(state)
    else:
        _native.seed(state, str(ctx))
