"""``nd.contrib``: the few contrib operators ferromx needs."""

from .ndarray import invoke

__all__ = ["adagrad_update"]


def adagrad_update(weight, grad, history, out=None, **kwargs):
    """AdaGrad update in place (MXNet's ``_contrib_adagrad_update``)."""
    invoke("adagrad_update", [weight, grad, history], **kwargs)
    return weight
