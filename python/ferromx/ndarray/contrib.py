"""``nd.contrib``: the table's ``_contrib_*`` operators (``div_sqrt_dim``, ``arange_like``,
the interleaved attention products) and a few hand-written ones."""

from ._op import CONTRIB_FNS as _CONTRIB
from .ndarray import invoke

globals().update(_CONTRIB)
__all__ = [  # noqa: PLE0604 - generated names
    "AdaptiveAvgPooling2D", "BilinearResize2D", "adagrad_update", "isfinite", "isinf", "isnan",
    "rand_zipfian",
    *sorted(_CONTRIB),
]

_INF = float("inf")


def _is_float(data):
    return data._dtype_name in ("float16", "float32", "float64", "bfloat16")


def isinf(data):
    """1 where ``data`` is +-inf, else 0, in ``data``'s dtype (MXNet's ``contrib.isinf``)."""
    if not _is_float(data):
        return invoke("zeros_like", [data])
    return invoke("abs", [data]) == _INF


def isnan(data):
    """1 where ``data`` is NaN, else 0, in ``data``'s dtype (MXNet's ``contrib.isnan``)."""
    if not _is_float(data):
        return invoke("zeros_like", [data])
    return data != data  # noqa: PLR0124 - NaN is the only value unequal to itself


def isfinite(data):
    """1 where ``data`` is neither inf nor NaN, else 0 (MXNet's ``contrib.isfinite``)."""
    if not _is_float(data):
        return invoke("ones_like", [data])
    not_nan = data == data  # noqa: PLR0124 - NaN is the only value unequal to itself
    return not_nan * (invoke("abs", [data]) != _INF)


def adagrad_update(weight, grad, history, out=None, **kwargs):
    """AdaGrad update in place (MXNet's ``_contrib_adagrad_update``)."""
    invoke("adagrad_update", [weight, grad, history], **kwargs)
    return weight


def AdaptiveAvgPooling2D(data, output_size=(), out=None, name=None):
    """Adaptive average pooling of 4-d data to ``output_size`` (one size or (height, width);
    default 1) (MXNet's ``_contrib_AdaptiveAvgPooling2D``)."""
    res = invoke("_contrib_AdaptiveAvgPooling2D", [data], output_size=output_size)
    return _finish(res, out)


def BilinearResize2D(data, like=None, height=1, width=1, scale_height=None,
                     scale_width=None, mode="size", align_corners=True, out=None, name=None):
    """Bilinear resize of 4-d (N, C, H, W) data to (height, width), a scale of the input,
    or the size of ``like`` (``mode='like'``) (MXNet's ``_contrib_BilinearResize2D``)."""
    res = invoke("_contrib_BilinearResize2D", [data, like], height=height, width=width,
                 scale_height=scale_height, scale_width=scale_width, mode=mode,
                 align_corners=align_corners)
    return _finish(res, out)


def _finish(res, out):
    if out is None:
        return res
    out[:] = res
    return out


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Log-uniform candidate sampling: ``(sampled_classes, expected_count_true,
    expected_count_sampled)`` (see :mod:`ferromx._zipfian`)."""
    from .. import ndarray as _nd
    from .._zipfian import rand_zipfian as _rz

    if ctx is None:
        ctx = true_classes.context
    return _rz(_nd, true_classes, num_sampled, range_max, ctx=ctx)
