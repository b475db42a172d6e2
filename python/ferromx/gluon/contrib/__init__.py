"""Contributed Gluon APIs (``mx.gluon.contrib``)."""

from . import estimator

__all__ = ["estimator"]
