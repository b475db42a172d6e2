"""ResNet V1 (He et al., 2015) and V2 (He et al., 2016), with MXNet 1.9.1's block
structure and parameter names (``resnetv10_stage1_conv0_weight`` ...)."""

from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained

__all__ = [
    "BasicBlockV1",
    "BasicBlockV2",
    "BottleneckV1",
    "BottleneckV2",
    "ResNetV1",
    "ResNetV2",
    "get_resnet",
    "resnet18_v1",
    "resnet18_v2",
    "resnet34_v1",
    "resnet34_v2",
    "resnet50_v1",
    "resnet50_v2",
    "resnet101_v1",
    "resnet101_v2",
    "resnet152_v1",
    "resnet152_v2",
]


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(
        channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
        in_channels=in_channels,
    )  # fmt: skip


def _projection(channels, stride, in_channels, with_bn):
    """The 1x1 strided shortcut convolution (followed by BatchNorm in V1)."""
    conv = nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                     in_channels=in_channels)  # fmt: skip
    if not with_bn:
        return conv
    seq = nn.HybridSequential(prefix="")
    seq.add(conv, nn.BatchNorm())
    return seq


class _ResidualV1(HybridBlock):
    """``relu(body(x) + shortcut(x))``."""

    def hybrid_forward(self, F, x):
        out = self.body(x)
        shortcut = self.downsample(x) if self.downsample else x
        return F.Activation(out + shortcut, act_type="relu")


class BasicBlockV1(_ResidualV1):
    """Two 3x3 convolutions with BatchNorm (ResNet-18/34, V1)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(
            _conv3x3(channels, stride, in_channels),
            nn.BatchNorm(),
            nn.Activation("relu"),
            _conv3x3(channels, 1, channels),
            nn.BatchNorm(),
        )
        self.downsample = _projection(channels, stride, in_channels, True) if downsample else None


class BottleneckV1(_ResidualV1):
    """1x1 - 3x3 - 1x1 bottleneck with BatchNorm (ResNet-50/101/152, V1)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        mid = channels // 4
        self.body = nn.HybridSequential(prefix="")
        self.body.add(
            nn.Conv2D(mid, kernel_size=1, strides=stride),
            nn.BatchNorm(),
            nn.Activation("relu"),
            _conv3x3(mid, 1, mid),
            nn.BatchNorm(),
            nn.Activation("relu"),
            nn.Conv2D(channels, kernel_size=1, strides=1),
            nn.BatchNorm(),
        )
        self.downsample = _projection(channels, stride, in_channels, True) if downsample else None


class _ResidualV2(HybridBlock):
    """``convN(relu(bnN(... conv1(relu(bn1(x)))))) + shortcut``, the shortcut taken after
    the first pre-activation; ``_DEPTH`` (bn, conv) pairs named ``bn1``/``conv1`` ..."""

    _DEPTH = 0

    def hybrid_forward(self, F, x):
        shortcut = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            shortcut = self.downsample(x)
        x = self.conv1(x)
        for i in range(2, self._DEPTH + 1):
            x = F.Activation(getattr(self, f"bn{i}")(x), act_type="relu")
            x = getattr(self, f"conv{i}")(x)
        return x + shortcut


class BasicBlockV2(_ResidualV2):
    """Pre-activation basic block (ResNet-18/34, V2)."""

    _DEPTH = 2

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = _projection(channels, stride, in_channels, False) if downsample else None


class BottleneckV2(_ResidualV2):
    """Pre-activation bottleneck block (ResNet-50/101/152, V2)."""

    _DEPTH = 3

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        mid = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(mid, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(mid, stride, mid)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = _projection(channels, stride, in_channels, False) if downsample else None


def _stem(features, channels, thumbnail):
    """The first convolution: 3x3 for small (CIFAR) images, else 7x7/2 + BN + ReLU + pool."""
    if thumbnail:
        features.add(_conv3x3(channels, 1, 0))
        return
    features.add(
        nn.Conv2D(channels, 7, 2, 3, use_bias=False),
        nn.BatchNorm(),
        nn.Activation("relu"),
        nn.MaxPool2D(3, 2, 1),
    )


def _make_stage(block, num_blocks, channels, stride, stage_index, in_channels):
    stage = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                        prefix=""))  # fmt: skip
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


def _check_spec(name, layers, channels):
    if len(layers) != len(channels) - 1:
        raise ValueError(f"{name}: len(layers) must be len(channels) - 1")


class _ResNet(HybridBlock):
    """``output(features(x))``; ``_build`` makes ``features``: an optional input
    BatchNorm (V2), the stem and the stages."""

    def _build(self, block, layers, channels, thumbnail, input_bn):
        self.features = nn.HybridSequential(prefix="")
        if input_bn:
            self.features.add(nn.BatchNorm(scale=False, center=False))
        _stem(self.features, channels[0], thumbnail)
        for i, num_blocks in enumerate(layers):
            self.features.add(_make_stage(block, num_blocks, channels[i + 1],
                                          1 if i == 0 else 2, i + 1, channels[i]))  # fmt: skip

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV1(_ResNet):
    """ResNet V1: ``block`` is :class:`BasicBlockV1` or :class:`BottleneckV1`, ``layers``
    the blocks per stage and ``channels`` the stem's then each stage's width;
    ``thumbnail`` uses a 3x3 stem for 32x32 images."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        _check_spec("ResNetV1", layers, channels)
        with self.name_scope():
            self._build(block, layers, channels, thumbnail, input_bn=False)
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])


class ResNetV2(_ResNet):
    """ResNet V2 (pre-activation); arguments as :class:`ResNetV1`."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        _check_spec("ResNetV2", layers, channels)
        with self.name_scope():
            self._build(block, layers, channels, thumbnail, input_bn=True)
            self.features.add(
                nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten()
            )
            self.output = nn.Dense(classes, in_units=channels[-1])


resnet_spec = {
    18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
    34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
    50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
    101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
    152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048]),
}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [
    {"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
    {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2},
]


def get_resnet(version, num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """ResNet ``version`` (1 or 2) with ``num_layers`` (18, 34, 50, 101, 152) layers;
    ``pretrained`` loads ``resnet<num_layers>_v<version>`` from ``root``."""
    if num_layers not in resnet_spec:
        raise ValueError(
            f"Invalid number of layers: {num_layers}. Options are {sorted(resnet_spec)}"
        )
    if version not in (1, 2):
        raise ValueError(f"Invalid resnet version: {version}. Options are 1 and 2.")
    block_type, layers, channels = resnet_spec[num_layers]
    block = resnet_block_versions[version - 1][block_type]
    net = resnet_net_versions[version - 1](block, layers, channels, **kwargs)
    if pretrained:
        load_pretrained(net, f"resnet{num_layers}_v{version}", ctx, root)
    return net


def _builder(version, num_layers):
    """``resnet<num_layers>_v<version>(**kwargs)``: :func:`get_resnet` with those two fixed."""

    def build(**kwargs):
        return get_resnet(version, num_layers, **kwargs)

    build.__name__ = build.__qualname__ = f"resnet{num_layers}_v{version}"
    build.__doc__ = f"ResNet-{num_layers} V{version}."
    return build


resnet18_v1 = _builder(1, 18)
resnet34_v1 = _builder(1, 34)
resnet50_v1 = _builder(1, 50)
resnet101_v1 = _builder(1, 101)
resnet152_v1 = _builder(1, 152)
resnet18_v2 = _builder(2, 18)
resnet34_v2 = _builder(2, 34)
resnet50_v2 = _builder(2, 50)
resnet101_v2 = _builder(2, 101)
resnet152_v2 = _builder(2, 152)
