"""Predefined and pretrained models (``mx.gluon.model_zoo``), following MXNet 1.9.1."""

from . import model_store, vision

__all__ = ["model_store", "vision"]
