"""Image functions and augmenters (``mx.image``), following MXNet 1.9.1's behaviour.

Interpolation codes are OpenCV's: 0 nearest, 1 bilinear, 2 bicubic, 3 area (4, Lanczos,
is not supported); 9 picks by size and 10 at random, as in MXNet.
"""

import os
import random
from numbers import Number

import numpy as np

from .. import _native
from .. import ndarray as nd
from ..context import _ctx_str, current_context
from ..ndarray import NDArray

__all__ = [
    "Augmenter",
    "BrightnessJitterAug",
    "CastAug",
    "CenterCropAug",
    "ColorJitterAug",
    "ColorNormalizeAug",
    "ContrastJitterAug",
    "CreateAugmenter",
    "ForceResizeAug",
    "HorizontalFlipAug",
    "HueJitterAug",
    "ImageIter",
    "LightingAug",
    "RandomCropAug",
    "RandomGrayAug",
    "RandomOrderAug",
    "RandomSizedCropAug",
    "ResizeAug",
    "SaturationJitterAug",
    "SequentialAug",
    "center_crop",
    "color_normalize",
    "fixed_crop",
    "imdecode",
    "imread",
    "imresize",
    "imrotate",
    "random_crop",
    "random_rotate",
    "random_size_crop",
    "resize_short",
    "scale_down",
]


def _finish(res, out):
    if out is None:
        return res
    out[:] = res
    return out


def imdecode(buf, flag=1, to_rgb=1, out=None, **kwargs):
    """Decodes JPEG or PNG bytes (``bytes``, ``bytearray``, a uint8 NumPy array or a uint8
    NDArray) to an (H, W, C) uint8 NDArray: ``flag`` 1 colour, 0 grey; ``to_rgb`` False
    gives OpenCV's BGR order. Corrupt data raises ``MXNetValueError`` ("imdecode: ...")."""
    if isinstance(buf, NDArray):
        buf = buf.asnumpy()
    if isinstance(buf, np.ndarray):
        buf = np.ascontiguousarray(buf, dtype=np.uint8).tobytes()
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise ValueError(  # noqa: TRY004 - MXNet raises ValueError
            "buf must be of type bytes, bytearray or numpy.ndarray,"
            "if you would like to input type str, please convert to bytes")
    ctx = kwargs.pop("ctx", None)
    if kwargs:
        raise TypeError(f"imdecode: unexpected arguments {sorted(kwargs)}")
    res = _native.imdecode(buf, int(flag), bool(to_rgb), _ctx_str(ctx or current_context()))
    return _finish(res, out)


def imread(filename, flag=1, to_rgb=True, out=None):
    """Reads and decodes an image file (see :func:`imdecode`)."""
    if not os.path.isfile(filename):
        raise ValueError(f"imread: cannot open file {filename!r}")
    with open(filename, "rb") as f:
        return imdecode(f.read(), flag, to_rgb, out)


def _imencode(img, img_fmt=".jpg", quality=95, rgb=False):
    """Encodes an (H, W, C) uint8 image to ``.jpg``/``.png`` bytes. Like ``cv2.imencode``
    (what ``recordio.pack_img`` uses) the channels are BGR unless ``rgb``."""
    a = img.asnumpy() if isinstance(img, NDArray) else np.asarray(img)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3:
        raise ValueError(f"imencode: expected an image (H, W, C), got shape {a.shape}")
    a = np.ascontiguousarray(a.astype(np.uint8))
    if not rgb and a.shape[2] >= 3:
        a = np.ascontiguousarray(a[:, :, [2, 1, 0] + list(range(3, a.shape[2]))])
    h, w, c = a.shape
    return _native.imencode(a.tobytes(), h, w, c, img_fmt, int(quality))


def imresize(src, w, h, interp=1, out=None):
    """Resizes an (H, W, C) image to (h, w, C) as OpenCV's ``cv::resize`` does."""
    return nd.invoke("_cvimresize", [src], w=int(w), h=int(h), interp=int(interp)) \
        if out is None else _finish(imresize(src, w, h, interp), out)


def scale_down(src_size, size):
    """Scales a crop size (w, h) down to fit an image of ``src_size`` (w, h)."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _get_interp_method(interp, sizes=()):
    if interp == 9:
        if sizes:
            assert len(sizes) == 4
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 3)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"Unknown interp method {interp}")
    return interp


def resize_short(src, size, interp=2):
    """Resizes the shorter edge to ``size``, keeping the aspect ratio."""
    h, w, _ = src.shape
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crops ``src[y0:y0+h, x0:x0+w]`` and optionally resizes it to ``size`` (w, h)."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=_get_interp_method(interp, sizes))
    return out


def random_crop(src, size, interp=2):
    """Crops a random region of ``size`` (w, h) (upsampling when the image is smaller);
    returns the crop and (x, y, width, height)."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """Crops the centre to ``size`` (w, h); returns the crop and (x, y, width, height)."""
    h, w, _ = src.shape
    x0, y0, new_w, new_h = _center_box(h, w, size)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def _center_box(h, w, size):
    """:func:`center_crop`'s box ``(x0, y0, width, height)`` in an ``h x w`` image."""
    new_w, new_h = scale_down((w, h), size)
    return int((w - new_w) / 2), int((h - new_h) / 2), new_w, new_h


def color_normalize(src, mean, std=None):
    """``(src - mean) / std`` in place (as MXNet does)."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """Crops a random region with random area fraction and aspect ratio, resized to
    ``size``; falls back to :func:`center_crop` after 10 tries."""
    h, w, _ = src.shape
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    assert not kwargs, "unexpected keyword arguments for `random_size_crop`."
    box = _random_size_box(h, w, area, ratio)
    if box is None:
        return center_crop(src, size, interp)
    return fixed_crop(src, *box, size, interp), box


def _random_size_box(h, w, area, ratio):
    """:func:`random_size_crop`'s random box ``(x0, y0, width, height)`` in an ``h x w``
    image (the same ``random`` draws), or None after 10 tries (then the centre crop)."""
    src_area = h * w
    if isinstance(area, Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = round(float(np.sqrt(target_area * new_ratio)))
        new_h = round(float(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return x0, y0, new_w, new_h
    return None


from ._augment import *
from ._augment import CreateAugmenter
from ._iter import ImageIter
from ._rotate import imrotate, random_rotate

