"""Contrib optimizers (``mxnet.optimizer.contrib``, MXNet 1.9.1)."""

from .. import ndarray as nd
from . import _kernels as K
from .optimizer import Optimizer, register

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one adaptive rate per row of a 2-D weight.

    With ``g = clip(rescale_grad * grad)``: ``h += mean(g^2, axis=1)``,
    ``w -= lr * g / sqrt(h + eps)``.  Weight decay is not supported.
    """

    def __init__(self, eps=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        """The row history, float32 zeros of shape ``(rows, 1)``."""
        if len(weight.shape) != 2:
            raise ValueError(
                f"GroupAdaGrad: the weight must be 2-D, got shape {tuple(weight.shape)}"
            )
        return nd.zeros((weight.shape[0], 1), ctx=weight.context, dtype="float32")

    def _update_one(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if wd != 0:
            raise ValueError(f"GroupAdaGrad: weight decay is not supported, got wd={wd}")
        g = K.clip_or_not(grad * self.rescale_grad, self.clip_gradient)
        K.assign(state, state + nd.mean(nd.square(g), axis=1, keepdims=True))
        K.assign(weight, weight - g * lr / nd.sqrt(state + self.float_stable_eps))
