"""``nd.contrib``: the table's ``_contrib_*`` operators (``div_sqrt_dim``, ``arange_like``,
the interleaved attention products) and a few hand-written ones."""

from ._op import CONTRIB_FNS as _CONTRIB
from .ndarray import invoke

globals().update(_CONTRIB)
__all__ = ["adagrad_update", *sorted(_CONTRIB)]  # noqa: PLE0604 - generated names


def adagrad_update(weight, grad, history, out=None, **kwargs):
    """AdaGrad update in place (MXNet's ``_contrib_adagrad_update``)."""
    invoke("adagrad_update", [weight, grad, history], **kwargs)
    return weight
