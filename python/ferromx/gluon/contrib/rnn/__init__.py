"""``gluon.contrib.rnn``: ``VariationalDropoutCell`` and ``LSTMPCell`` (MXNet 1.9.1)."""

from . import rnn_cell
from .rnn_cell import LSTMPCell, VariationalDropoutCell

__all__ = ["LSTMPCell", "VariationalDropoutCell", "rnn_cell"]
