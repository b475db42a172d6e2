"""Image transforms (``gluon.data.vision.transforms``), MXNet 1.9.1's API.

Each transform is a Block whose array math is engine operators (``nd.image.*``); use
them with ``Dataset.transform_first`` or compose them with :class:`Compose`.
"""

import random

from .... import image
from .... import ndarray as nd
from ...block import Block, HybridBlock, HybridSequential, Sequential

__all__ = [
    "Cast",
    "CenterCrop",
    "Compose",
    "CropResize",
    "HybridCompose",
    "HybridRandomApply",
    "Normalize",
    "RandomApply",
    "RandomBrightness",
    "RandomColorJitter",
    "RandomContrast",
    "RandomCrop",
    "RandomFlipLeftRight",
    "RandomFlipTopBottom",
    "RandomGray",
    "RandomHue",
    "RandomLighting",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomSaturation",
    "Resize",
    "Rotate",
    "ToTensor",
]


class Compose(Sequential):
    """Applies ``transforms`` in order (consecutive HybridBlocks are grouped)."""

    def __init__(self, transforms):
        super().__init__()
        hybrid = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                hybrid.append(t)
                continue
            if len(hybrid) == 1:
                self.add(hybrid[0])
            elif len(hybrid) > 1:
                hblock = HybridSequential()
                hblock.add(*hybrid)
                self.add(hblock)
            hybrid = []
            if t is not None:
                self.add(t)


class HybridCompose(HybridSequential):
    """Applies HybridBlock ``transforms`` in order."""

    def __init__(self, transforms):
        super().__init__()
        for t in transforms:
            if not isinstance(t, HybridBlock):
                raise TypeError(f"HybridCompose needs HybridBlocks, got {type(t).__name__}")
            self.add(t)


class Cast(HybridBlock):
    """Casts to ``dtype``."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, dtype=self._dtype)


class ToTensor(HybridBlock):
    """(H, W, C) / (N, H, W, C) in [0, 255] to float32 (C, H, W) / (N, C, H, W) in [0, 1]."""

    def hybrid_forward(self, F, x):
        return nd.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x - mean[c]) / std[c]`` per channel of a (C, H, W) or (N, C, H, W) tensor."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean, self._std = mean, std

    def hybrid_forward(self, F, x):
        return nd.image.normalize(x, self._mean, self._std)


class Rotate(Block):
    """Rotates a float32 (C, H, W) / (N, C, H, W) image by ``rotation_degrees``."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotates by an angle drawn from ``angle_limits``, with probability ``rotate_with_proba``."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ordered tuple")
        if rotate_with_proba < 0 or rotate_with_proba > 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if random.random() > self._rotate_with_proba:
            return x
        return image.random_rotate(x, *self._args)


def _size_pair(size):
    return (size, size) if isinstance(size, int) else tuple(size)


class RandomResizedCrop(Block):
    """Crops a random area fraction ``scale`` with aspect ratio in ``ratio``, resized to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        self._args = (_size_pair(size), scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """Crops ``(x, y, width, height)`` and optionally resizes to ``size``."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._box = (x, y, width, height)
        self._size, self._interpolation = size, interpolation

    def hybrid_forward(self, F, x):
        out = nd.image.crop(x, *self._box)
        if self._size:
            interp = 1 if self._interpolation is None else self._interpolation
            out = nd.image.resize(out, self._size, False, interp)
        return out


class CenterCrop(Block):
    """Crops the centre to ``size`` (upsampling when the image is smaller)."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._args = (_size_pair(size), interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class Resize(HybridBlock):
    """Resizes to ``size`` ((w, h), or the short edge with ``keep_ratio``)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._keep, self._size, self._interpolation = keep_ratio, size, interpolation

    def hybrid_forward(self, F, x):
        return nd.image.resize(x, self._size, self._keep, self._interpolation)


class RandomCrop(Block):
    """Pads by ``pad`` (zeros) and crops a random region of ``size``."""

    def __init__(self, size, pad=None, interpolation=2):
        super().__init__()
        self._size, self._pad, self._interpolation = _size_pair(size), pad, interpolation

    def forward(self, x):
        if self._pad:
            px, py = (self._pad, self._pad) if isinstance(self._pad, int) else self._pad
            x = nd.pad(x, mode="constant", pad_width=(py, py, px, px, 0, 0))
        return image.random_crop(x, self._size, self._interpolation)[0]


class _RandomOp(HybridBlock):
    _op = ""

    def __init__(self, *args):
        super().__init__()
        self._args = args

    def hybrid_forward(self, F, x):
        return getattr(nd.image, self._op)(x, *self._args)


class RandomFlipLeftRight(_RandomOp):
    """Mirrors left to right with probability 1/2."""

    _op = "random_flip_left_right"


class RandomFlipTopBottom(_RandomOp):
    """Mirrors top to bottom with probability 1/2."""

    _op = "random_flip_top_bottom"


class RandomBrightness(_RandomOp):
    """Scales brightness by a factor from ``[max(0, 1 - brightness), 1 + brightness]``."""

    _op = "random_brightness"

    def __init__(self, brightness):
        super().__init__(max(0, 1 - brightness), 1 + brightness)


class RandomContrast(_RandomOp):
    """Scales contrast by a factor from ``[max(0, 1 - contrast), 1 + contrast]``."""

    _op = "random_contrast"

    def __init__(self, contrast):
        super().__init__(max(0, 1 - contrast), 1 + contrast)


class RandomSaturation(_RandomOp):
    """Scales saturation by a factor from ``[max(0, 1 - saturation), 1 + saturation]``."""

    _op = "random_saturation"

    def __init__(self, saturation):
        super().__init__(max(0, 1 - saturation), 1 + saturation)


class RandomHue(_RandomOp):
    """Rotates hue by a factor from ``[max(0, 1 - hue), 1 + hue]`` turns (as MXNet)."""

    _op = "random_hue"

    def __init__(self, hue):
        super().__init__(max(0, 1 - hue), 1 + hue)


class RandomColorJitter(_RandomOp):
    """Brightness, contrast, saturation and hue jitter in a random order."""

    _op = "random_color_jitter"

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__(brightness, contrast, saturation, hue)


class RandomLighting(_RandomOp):
    """AlexNet-style PCA lighting noise with alphas from N(0, ``alpha``)."""

    _op = "random_lighting"

    def __init__(self, alpha):
        super().__init__(alpha)


class RandomGray(HybridBlock):
    """With probability ``p`` replaces an RGB image's channels by its grey level."""

    def __init__(self, p=0.5):
        super().__init__()
        self._p = p
        self._mat = nd.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def hybrid_forward(self, F, x):
        if random.random() >= self._p:
            return x
        return nd.dot(x.astype("float32"), self._mat).astype(x.dtype)


class RandomApply(Sequential):
    """Applies ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms, self.p = transforms, p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)


class HybridRandomApply(HybridSequential):
    """Applies HybridBlock ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms, self.p = transforms, p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)
