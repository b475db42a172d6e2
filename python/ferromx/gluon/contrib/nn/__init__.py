"""Contributed layers (``mx.gluon.contrib.nn``): ``Concurrent``, ``HybridConcurrent``,
``Identity`` and ``SyncBatchNorm``, following MXNet 1.9.1."""

from .... import ndarray as nd
from ...block import HybridBlock, HybridSequential, Sequential
from ...nn import SyncBatchNorm

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SyncBatchNorm"]


def _concat(F, outputs, axis):
    return F.concat(*outputs, dim=axis)


class Concurrent(Sequential):
    """Feed the input to every child and concatenate their outputs along ``axis``."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return _concat(nd, [block(x) for block in self._children.values()], self.axis)


class HybridConcurrent(HybridSequential):
    """Feed the input to every child HybridBlock and concatenate their outputs along
    ``axis``."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return self.hybrid_forward(nd, x)

    def hybrid_forward(self, F, x):
        return _concat(F, [block(x) for block in self._children.values()], self.axis)


class Identity(HybridBlock):
    """Return the input unchanged (e.g. the shortcut branch of a ``HybridConcurrent``)."""

    def hybrid_forward(self, F, x):
        return x
