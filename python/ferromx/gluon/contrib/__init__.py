"""Contributed Gluon blocks (``mx.gluon.contrib``), following MXNet 1.9.1."""

from . import nn

__all__ = ["nn"]
