"""Neural network layers (``mx.gluon.nn``)."""

from ..block import Block, HybridBlock, HybridSequential, Sequential
from .basic_layers import (
    Activation,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    HybridLambda,
    Lambda,
    LayerNorm,
    LeakyReLU,
)

__all__ = [
    "Activation",
    "Block",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "HybridBlock",
    "HybridLambda",
    "HybridSequential",
    "Lambda",
    "LayerNorm",
    "LeakyReLU",
    "Sequential",
]
