"""``gluon.rnn``: recurrent cells and layers (MXNet 1.9.1's API)."""

from . import rnn_cell, rnn_layer
from .rnn_cell import (
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    HybridRecurrentCell,
    HybridSequentialRNNCell,
    LSTMCell,
    ModifierCell,
    RecurrentCell,
    ResidualCell,
    RNNCell,
    SequentialRNNCell,
    ZoneoutCell,
)
from .rnn_layer import GRU, LSTM, RNN

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "BidirectionalCell",
    "DropoutCell",
    "GRUCell",
    "HybridRecurrentCell",
    "HybridSequentialRNNCell",
    "LSTMCell",
    "ModifierCell",
    "RNNCell",
    "RecurrentCell",
    "ResidualCell",
    "SequentialRNNCell",
    "ZoneoutCell",
    "rnn_cell",
    "rnn_layer",
]
