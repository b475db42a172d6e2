"""Contributed Gluon APIs (``mx.gluon.contrib``), following MXNet 1.9.1."""

from . import estimator, nn, rnn

__all__ = ["estimator", "nn", "rnn"]
