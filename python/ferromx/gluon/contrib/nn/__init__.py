"""Contributed layers (``mx.gluon.contrib.nn``): ``Concurrent``, ``HybridConcurrent``,
``Identity``, ``PixelShuffle1D/2D/3D`` and ``SyncBatchNorm``, following MXNet 1.9.1."""

import numbers

from .... import ndarray as nd
from ...block import HybridBlock, HybridSequential, Sequential
from ...nn import SyncBatchNorm

__all__ = [
    "Concurrent",
    "HybridConcurrent",
    "Identity",
    "PixelShuffle1D",
    "PixelShuffle2D",
    "PixelShuffle3D",
    "SyncBatchNorm",
]


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


class _PixelShuffle(HybridBlock):
    """Move ``prod(factors)`` channel groups into the spatial axes:
    ``(N, C*f1*...*fn, S1, ..., Sn) -> (N, C, S1*f1, ..., Sn*fn)``."""

    _NDIM = 0

    def __init__(self, factor):
        super().__init__()
        n = self._NDIM
        if isinstance(factor, numbers.Integral):
            factors = (int(factor),) * n
        else:
            factors = tuple(int(f) for f in factor)
        if len(factors) != n:
            raise ValueError(f"{type(self).__name__}: wrong length {len(factors)} of factor")
        self._factors = factors if n > 1 else factors[0]
        self._fs = factors

    def hybrid_forward(self, F, x):
        n = self._NDIM
        shape = tuple(x.shape)
        block = 1
        for f in self._fs:
            block *= f
        if len(shape) != n + 2 or shape[1] % block:
            raise ValueError(
                f"{type(self).__name__}: expected a {n + 2}-D input whose channels divide by "
                f"{block}, got shape {shape}"
            )
        batch, channels, spatial = shape[0], shape[1] // block, shape[2:]
        x = F.reshape(x, (batch, channels, *self._fs, *spatial))
        # (N, C, f1..fn, S1..Sn) -> (N, C, S1, f1, ..., Sn, fn)
        axes = [0, 1]
        for i in range(n):
            axes += [2 + n + i, 2 + i]
        x = F.transpose(x, axes=tuple(axes))
        return F.reshape(x, (batch, channels, *(s * f for s, f in zip(spatial, self._fs))))

    def __repr__(self):
        return f"{type(self).__name__}({self._factors})"


class PixelShuffle1D(_PixelShuffle):
    """``(N, f*C, W) -> (N, C, W*f)``: sub-pixel upsampling of a 1-D signal."""

    _NDIM = 1


class PixelShuffle2D(_PixelShuffle):
    """``(N, f1*f2*C, H, W) -> (N, C, H*f1, W*f2)`` (Shi et al., 2016)."""

    _NDIM = 2


class PixelShuffle3D(_PixelShuffle):
    """``(N, f1*f2*f3*C, D, H, W) -> (N, C, D*f1, H*f2, W*f3)``."""

    _NDIM = 3
