"""SqueezeNet 1.0 and 1.1 (Iandola et al., 2016) with MXNet 1.9.1's structure and
parameter names."""

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return out


def _fire(squeeze, expand1x1, expand3x3):
    """A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated."""
    out = nn.HybridSequential(prefix="")
    out.add(_fire_conv(squeeze, 1))
    paths = HybridConcurrent(axis=1, prefix="")
    paths.add(_fire_conv(expand1x1, 1))
    paths.add(_fire_conv(expand3x3, 3, 1))
    out.add(paths)
    return out


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


# Each version's stem (channels, kernel) and the sequence of fire modules ("pool" = max pool).
_SPECS = {
    "1.0": ((96, 7), [(16, 64, 64), (16, 64, 64), (32, 128, 128), "pool", (32, 128, 128),
                      (48, 192, 192), (48, 192, 192), (64, 256, 256), "pool", (64, 256, 256)]),
    "1.1": ((64, 3), [(16, 64, 64), (16, 64, 64), "pool", (32, 128, 128), (32, 128, 128),
                      "pool", (48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256)]),
}  # fmt: skip


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` ``'1.0'`` or ``'1.1'`` with ``classes`` outputs (224x224
    input: the head averages a 13x13 map)."""

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in _SPECS:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected")
        (stem_channels, stem_kernel), modules = _SPECS[version]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(stem_channels, kernel_size=stem_kernel, strides=2))
            self.features.add(nn.Activation("relu"))
            self.features.add(_pool())
            for spec in modules:
                self.features.add(_pool() if spec == "pool" else _fire(*spec))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1))
            self.output.add(nn.Activation("relu"))
            self.output.add(nn.AvgPool2D(13))
            self.output.add(nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=None, root=None, **kwargs):
    """SqueezeNet ``version``; ``pretrained`` loads ``squeezenet<version>`` from ``root``."""
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        load_pretrained(net, f"squeezenet{version}", ctx, root)
    return net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1."""
    return get_squeezenet("1.1", **kwargs)
