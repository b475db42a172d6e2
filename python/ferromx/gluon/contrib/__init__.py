"""Contributed Gluon APIs (``mx.gluon.contrib``), following MXNet 1.9.1."""

from . import estimator, nn

__all__ = ["estimator", "nn"]
