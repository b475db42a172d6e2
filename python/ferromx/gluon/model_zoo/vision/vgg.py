"""VGG (Simonyan and Zisserman, 2014), with or without BatchNorm, following MXNet 1.9.1's
structure, initializers and parameter names."""

from .... import initializer
from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained

__all__ = [
    "VGG",
    "get_vgg",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
]


class VGG(HybridBlock):
    """VGG: ``layers[i]`` 3x3 convolutions of ``filters[i]`` channels per stage, each stage
    ending in a 2x2 max pool, then two 4096-unit dense layers and ``classes`` outputs."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError("VGG: layers and filters must have the same length")
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(
                    nn.Dense(4096, activation="relu", weight_initializer="normal",
                             bias_initializer="zeros"),
                    nn.Dropout(rate=0.5),
                )  # fmt: skip
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    @staticmethod
    def _make_features(layers, filters, batch_norm):
        features = nn.HybridSequential(prefix="")
        for num, channels in zip(layers, filters):
            for _ in range(num):
                init = initializer.Xavier(rnd_type="gaussian", factor_type="out", magnitude=2)
                features.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                       weight_initializer=init, bias_initializer="zeros"))  # fmt: skip
                if batch_norm:
                    features.add(nn.BatchNorm())
                features.add(nn.Activation("relu"))
            features.add(nn.MaxPool2D(strides=2))
        return features

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


vgg_spec = {
    11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
    13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
    16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
    19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512]),
}


def get_vgg(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """VGG with ``num_layers`` (11, 13, 16, 19) layers; ``batch_norm=True`` for the _bn
    variants; ``pretrained`` loads ``vgg<num_layers>[_bn]`` from ``root``."""
    if num_layers not in vgg_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(vgg_spec)}")
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        load_pretrained(net, f"vgg{num_layers}{suffix}", ctx, root)
    return net


def vgg11(**kwargs):
    """VGG-11."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs):
    """VGG-13."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs):
    """VGG-16."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs):
    """VGG-19."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs):
    """VGG-11 with BatchNorm."""
    return get_vgg(11, batch_norm=True, **kwargs)


def vgg13_bn(**kwargs):
    """VGG-13 with BatchNorm."""
    return get_vgg(13, batch_norm=True, **kwargs)


def vgg16_bn(**kwargs):
    """VGG-16 with BatchNorm."""
    return get_vgg(16, batch_norm=True, **kwargs)


def vgg19_bn(**kwargs):
    """VGG-19 with BatchNorm."""
    return get_vgg(19, batch_norm=True, **kwargs)
