"""``imrotate`` / ``random_rotate``: rotation about the image centre with bilinear
sampling (zero outside the source), as MXNet's grid + ``BilinearSampler`` does; every
step is an engine operator."""

import random
from numbers import Number

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray


def _bilinear_sample(src, xs, ys):
    """Samples NCHW ``src`` at pixel coordinates ``xs``, ``ys`` (N, H, W); zero outside."""
    n, c, h, w = src.shape
    flat = nd.transpose(src, axes=(0, 2, 3, 1)).reshape((n * h * w, c))
    base = (nd.arange(n, ctx=src.context) * (h * w)).reshape((n, 1, 1))
    x0, y0 = nd.floor(xs), nd.floor(ys)
    wx1, wy1 = xs - x0, ys - y0
    out = None
    for dx, dy, wgt in ((0, 0, (1 - wx1) * (1 - wy1)), (1, 0, wx1 * (1 - wy1)),
                        (0, 1, (1 - wx1) * wy1), (1, 1, wx1 * wy1)):
        xi, yi = x0 + dx, y0 + dy
        valid = (xi >= 0) * (xi <= w - 1) * (yi >= 0) * (yi <= h - 1)
        idx = nd.clip(yi, 0, h - 1) * w + nd.clip(xi, 0, w - 1) + base
        vals = nd.take(flat, idx.reshape((-1,)), axis=0).reshape((n, h, w, c))
        term = vals * (wgt * valid).expand_dims(axis=3)
        out = term if out is None else out + term
    return nd.transpose(out, axes=(0, 3, 1, 2))


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotates a CHW image or NCHW batch (float32) by ``rotation_degrees`` (a number, or
    one per image); ``zoom_in`` hides the padding, ``zoom_out`` keeps the whole image."""
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if np.dtype(src.dtype) != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    expanded = False
    if src.ndim == 3:
        expanded = True
        src = src.expand_dims(axis=0)
        if not isinstance(rotation_degrees, Number):
            raise TypeError("When a single image is passed the rotation angle is "
                            "required to be a scalar.")
    elif src.ndim != 4:
        raise ValueError("Only 3D and 4D are supported by this function")
    if isinstance(rotation_degrees, Number):
        rotation_degrees = nd.array([rotation_degrees] * len(src), ctx=src.context)
    if not isinstance(rotation_degrees, NDArray):
        rotation_degrees = nd.array(rotation_degrees, ctx=src.context)
    if len(src) != len(rotation_degrees):
        raise ValueError("The number of images must be equal to the number of rotation angles")
    rad = (rotation_degrees.astype("float32") * (np.pi / 180)).reshape((-1, 1, 1))
    _, _, h, w = src.shape
    hs, ws = float(h - 1) / 2, float(w - 1) / 2
    hm = (nd.arange(h, ctx=src.context).reshape((1, h, 1)) - hs) * nd.ones((1, 1, w))
    wm = (nd.arange(w, ctx=src.context).reshape((1, 1, w)) - ws) * nd.ones((1, h, 1))
    ca, sa = nd.cos(rad), nd.sin(rad)
    # the inverse mapping: where each output pixel samples the source (MXNet's grid)
    wr = (wm * ca - hm * sa) / ws
    hr = (wm * sa + hm * ca) / hs
    if zoom_in or zoom_out:
        rho = float(np.sqrt(h * h + w * w))
        ang = float(np.arctan(h / w))
        ar = nd.abs(rad)
        mx_ = nd.maximum(nd.abs(rho * nd.cos(ang + ar)), nd.abs(rho * nd.cos(ang - ar)))
        my_ = nd.maximum(nd.abs(rho * nd.sin(ang + ar)), nd.abs(rho * nd.sin(ang - ar)))
        if zoom_out:
            scale = nd.maximum(mx_ / w, my_ / h)
        else:
            scale = nd.minimum(w / mx_, h / my_)
        wr, hr = wr * scale, hr * scale
    out = _bilinear_sample(src, (wr + 1) * ws, (hr + 1) * hs)
    return out[0] if expanded else out


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """Rotates by an angle drawn uniformly from ``angle_limits`` (one per image)."""
    if src.ndim == 3:
        angle = random.uniform(*angle_limits)
    else:
        angle = nd.array(np.random.uniform(*angle_limits, size=src.shape[0]), ctx=src.context)
    return imrotate(src, angle, zoom_in=zoom_in, zoom_out=zoom_out)
