"""Inception V3 (Szegedy et al., 2015) with MXNet 1.9.1's structure and parameter names
(``inception30_A1_conv0_weight`` ...); it expects 299x299 input."""

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["Inception3", "inception_v3"]

_SETTING_NAMES = ("channels", "kernel_size", "strides", "padding")


def _basic_conv(**kwargs):
    """Conv2D (no bias) + BatchNorm(eps=0.001) + ReLU."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(use_bias=False, **kwargs))
    out.add(nn.BatchNorm(epsilon=0.001))
    out.add(nn.Activation("relu"))
    return out


def _branch(pool, *convs):
    """An optional pool (``'avg'``: 3x3/1 pad 1, ``'max'``: 3x3/2), then basic convs given
    as ``(channels, kernel_size, strides, padding)`` tuples (``None`` = default)."""
    out = nn.HybridSequential(prefix="")
    if pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        kwargs = {k: v for k, v in zip(_SETTING_NAMES, setting) if v is not None}
        out.add(_basic_conv(**kwargs))
    return out


def _concurrent(prefix, branches):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for make in branches:
            out.add(make())
    return out


def _block_a(pool_features, prefix):
    return _concurrent(prefix, [
        lambda: _branch(None, (64, 1, None, None)),
        lambda: _branch(None, (48, 1, None, None), (64, 5, None, 2)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
        lambda: _branch("avg", (pool_features, 1, None, None)),
    ])  # fmt: skip


def _block_b(prefix):
    return _concurrent(prefix, [
        lambda: _branch(None, (384, 3, 2, None)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
        lambda: _branch("max"),
    ])  # fmt: skip


def _block_c(c7, prefix):
    return _concurrent(prefix, [
        lambda: _branch(None, (192, 1, None, None)),
        lambda: _branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0))),
        lambda: _branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                        (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                        (192, (1, 7), None, (0, 3))),
        lambda: _branch("avg", (192, 1, None, None)),
    ])  # fmt: skip


def _block_d(prefix):
    return _concurrent(prefix, [
        lambda: _branch(None, (192, 1, None, None), (320, 3, 2, None)),
        lambda: _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
        lambda: _branch("max"),
    ])  # fmt: skip


def _split_branch(*stem):
    """``stem`` convs, then a 1x3 and a 3x1 branch concatenated."""
    seq = nn.HybridSequential(prefix="")
    seq.add(_branch(None, *stem))
    split = HybridConcurrent(axis=1, prefix="")
    split.add(_branch(None, (384, (1, 3), None, (0, 1))))
    split.add(_branch(None, (384, (3, 1), None, (1, 0))))
    seq.add(split)
    return seq


def _block_e(prefix):
    return _concurrent(prefix, [
        lambda: _branch(None, (320, 1, None, None)),
        lambda: _split_branch((384, 1, None, None)),
        lambda: _split_branch((448, 1, None, None), (384, 3, None, 1)),
        lambda: _branch("avg", (192, 1, None, None)),
    ])  # fmt: skip


class Inception3(HybridBlock):
    """Inception V3 with ``classes`` outputs (no auxiliary head, as MXNet)."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_basic_conv(channels=32, kernel_size=3, strides=2))
            self.features.add(_basic_conv(channels=32, kernel_size=3))
            self.features.add(_basic_conv(channels=64, kernel_size=3, padding=1))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_basic_conv(channels=80, kernel_size=1))
            self.features.add(_basic_conv(channels=192, kernel_size=3))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_block_a(32, "A1_"), _block_a(64, "A2_"), _block_a(64, "A3_"))
            self.features.add(_block_b("B_"))
            for i, c7 in enumerate((128, 160, 160, 192)):
                self.features.add(_block_c(c7, f"C{i + 1}_"))
            self.features.add(_block_d("D_"), _block_e("E1_"), _block_e("E2_"))
            self.features.add(nn.AvgPool2D(pool_size=8))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=None, root=None, **kwargs):
    """Inception V3; ``pretrained`` loads MXNet's ``inceptionv3`` weights from ``root``."""
    net = Inception3(**kwargs)
    if pretrained:
        load_pretrained(net, "inceptionv3", ctx, root)
    return net
