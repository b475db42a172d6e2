"""Weight initializers (``mx.init``); an alias of :mod:`ferromx.initializer`."""

from .initializer import (
    Constant,
    InitDesc,
    Initializer,
    Mixed,
    MSRAPrelu,
    Normal,
    One,
    Orthogonal,
    Uniform,
    Xavier,
    Zero,
    alias,
    create,
    register,
)

__all__ = [
    "Constant",
    "InitDesc",
    "Initializer",
    "MSRAPrelu",
    "Mixed",
    "Normal",
    "One",
    "Orthogonal",
    "Uniform",
    "Xavier",
    "Zero",
    "alias",
    "create",
    "register",
]
