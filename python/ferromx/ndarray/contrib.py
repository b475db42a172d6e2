"""``nd.contrib``: the few contrib operators ferromx needs."""

from .ndarray import invoke

__all__ = ["adagrad_update", "isfinite", "isinf", "isnan"]

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
