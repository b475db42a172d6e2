"""Gluon: the high-level training interface (``mx.gluon``), following MXNet 1.9.1."""

from . import contrib, data, loss, model_zoo, nn, rnn, utils
from .block import Block, HybridBlock, SymbolBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict
from .trainer import Trainer

__all__ = [
    "Block",
    "Constant",
    "DeferredInitializationError",
    "HybridBlock",
    "Parameter",
    "ParameterDict",
    "SymbolBlock",
    "Trainer",
    "contrib",
    "data",
    "loss",
    "model_zoo",
    "nn",
    "rnn",
    "utils",
]
