"""``gluon.contrib``: the contributed Gluon blocks ferromx has (``contrib.rnn``)."""

from . import rnn

__all__ = ["rnn"]
