"""DenseNet (Huang et al., 2016) with MXNet 1.9.1's structure and parameter names."""

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent, Identity
from ..model_store import load_pretrained

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _bn_relu_conv(seq, channels, kernel_size, padding=0):
    seq.add(nn.BatchNorm(), nn.Activation("relu"))
    seq.add(nn.Conv2D(channels, kernel_size=kernel_size, padding=padding, use_bias=False))


def _dense_layer(growth_rate, bn_size, dropout):
    """BN-ReLU-1x1 conv, BN-ReLU-3x3 conv, concatenated with the layer's input."""
    new_features = nn.HybridSequential(prefix="")
    _bn_relu_conv(new_features, bn_size * growth_rate, 1)
    _bn_relu_conv(new_features, growth_rate, 3, padding=1)
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = HybridConcurrent(axis=1, prefix="")
    out.add(Identity())
    out.add(new_features)
    return out


def _dense_block(num_layers, bn_size, growth_rate, dropout, stage_index):
    out = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_dense_layer(growth_rate, bn_size, dropout))
    return out


def _transition(channels):
    out = nn.HybridSequential(prefix="")
    _bn_relu_conv(out, channels, 1)
    out.add(nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet: a 7x7 stem of ``num_init_features`` channels, dense blocks of
    ``block_config[i]`` layers adding ``growth_rate`` channels each (with ``bn_size``
    bottlenecks and ``dropout``), transitions halving the channels; 224x224 input (the
    head averages a 7x7 map)."""

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):  # fmt: skip
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                                        use_bias=False))  # fmt: skip
            self.features.add(nn.BatchNorm(), nn.Activation("relu"))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    num_features //= 2
                    self.features.add(_transition(num_features))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"))
            self.features.add(nn.AvgPool2D(pool_size=7), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


densenet_spec = {
    121: (64, 32, [6, 12, 24, 16]),
    161: (96, 48, [6, 12, 36, 24]),
    169: (64, 32, [6, 12, 32, 32]),
    201: (64, 32, [6, 12, 48, 32]),
}


def get_densenet(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """DenseNet-``num_layers`` (121, 161, 169, 201); ``pretrained`` loads its weights."""
    if num_layers not in densenet_spec:
        raise ValueError(
            f"Invalid number of layers: {num_layers}. Options are {sorted(densenet_spec)}"
        )
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        load_pretrained(net, f"densenet{num_layers}", ctx, root)
    return net


def densenet121(**kwargs):
    """DenseNet-121."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs):
    """DenseNet-161."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs):
    """DenseNet-169."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs):
    """DenseNet-201."""
    return get_densenet(201, **kwargs)
