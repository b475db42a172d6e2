"""Loss functions, following ``mxnet.gluon.loss`` (MXNet 1.9.1).

Every loss returns one value per sample: the elementwise loss (times ``weight`` and
``sample_weight``) averaged over all axes except ``batch_axis``.
"""

import numbers

from .block import HybridBlock

__all__ = [
    "HingeLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "L2Loss",
    "LogisticLoss",
    "Loss",
    "SigmoidBCELoss",
    "SigmoidBinaryCrossEntropyLoss",
    "SoftmaxCELoss",
    "SoftmaxCrossEntropyLoss",
    "SquaredHingeLoss",
    "TripletLoss",
]


def _apply_weighting(loss, weight=None, sample_weight=None):
    """Multiply by ``sample_weight`` (broadcast) and by the scalar ``weight``."""
    if sample_weight is not None:
        loss = loss * sample_weight
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise ValueError("weight must be a number")
        loss = loss * weight
    return loss


def _reshape_like(x, y):
    """Reshape ``x`` to ``y``'s shape (labels given as (N,) for predictions (N, 1) ...)."""
    if tuple(x.shape) == tuple(y.shape):
        return x
    return x.reshape(y.shape)


def _batch_first(loss, batch_axis):
    """Return ``loss`` as a 2-D ``(batch, rest)`` array (``None`` for 0-/1-D input)."""
    if loss.ndim <= 1:
        return None
    axis = batch_axis % loss.ndim
    if axis != 0:
        perm = [axis] + [i for i in range(loss.ndim) if i != axis]
        loss = loss.transpose(tuple(perm))
    n = int(loss.shape[0])
    rest = int(loss.size) // n if n else 0
    return loss.reshape((n, rest))


def _mean_except_batch(loss, batch_axis):
    """Mean over every axis but ``batch_axis`` (MXNet's ``mean(..., exclude=True)``)."""
    flat = _batch_first(loss, batch_axis)
    return loss if flat is None else flat.mean(axis=1)


def _sum_except_batch(loss, batch_axis):
    """Sum over every axis but ``batch_axis``."""
    flat = _batch_first(loss, batch_axis)
    return loss if flat is None else flat.sum(axis=1)


class Loss(HybridBlock):
    """Base class of losses.

    Parameters
    ----------
    weight : float or None
        Global scalar weight of the loss.
    batch_axis : int
        The axis that indexes samples.
    """

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return "{name}(batch_axis={_batch_axis}, w={_weight})".format(
            name=self.__class__.__name__, **self.__dict__
        )

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError()


class L2Loss(Loss):
    """``0.5 * weight * (label - pred)^2``, averaged per sample."""

    def __init__(self, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(loss, self._weight / 2, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


class L1Loss(Loss):
    """``weight * |label - pred|``, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy on sigmoid outputs.

    With ``from_sigmoid=False`` (default) ``pred`` holds logits and the numerically stable
    ``max(x, 0) - x * z + log(1 + exp(-|x|))`` is used; otherwise ``pred`` holds
    probabilities and ``-(z log(p + 1e-12) + (1 - z) log(1 - p + 1e-12))`` is used.
    ``pos_weight`` scales the positive term.
    """

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(label, pred)
        if not self._from_sigmoid:
            softplus_neg_abs = F.log1p(F.exp(-F.abs(pred)))
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus_neg_abs
            else:
                log_weight = (pos_weight - 1) * label + 1
                loss = pred - pred * label + log_weight * (softplus_neg_abs + F.relu(-pred))
        else:
            eps = 1e-12
            pos = F.log(pred + eps) * label
            if pos_weight is not None:
                pos = pos * pos_weight
            loss = -(pos + F.log(1.0 - pred + eps) * (1.0 - label))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Softmax cross-entropy: ``-sum(label * log_softmax(pred))`` along ``axis``.

    Parameters
    ----------
    axis : int
        The class axis.
    sparse_label : bool
        Labels are class indices (``True``) or distributions with ``pred``'s shape.
    from_logits : bool
        ``pred`` already holds log-probabilities.
    weight : float, optional
        Scalar weight.
    batch_axis : int
        The sample axis.

    The common case (sparse labels, raw scores, 2-D ``(batch, classes)`` input) is one
    fused native operator, ``nd.softmax_ce_loss``.
    """

    def __init__(
        self, axis=-1, sparse_label=True, from_logits=False, weight=None, batch_axis=0, **kwargs
    ):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        axis = self._axis % pred.ndim
        if self._sparse_label and not self._from_logits and pred.ndim == 2 and axis == 1:
            # The common (batch, classes) case: one fused native operator.
            if label.ndim == 2:
                label = label.reshape((label.size,))
            loss = F.softmax_ce_loss(pred, label, axis=axis).expand_dims(axis)
        else:
            if not self._from_logits:
                pred = F.log_softmax(pred, axis=axis)
            if self._sparse_label:
                loss = -F.pick(pred, label, axis=axis, keepdims=True)
            else:
                label = _reshape_like(label, pred)
                loss = -F.sum(pred * label, axis=axis, keepdims=True)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """Kullback-Leibler divergence ``label * (log(label + 1e-12) - pred)``.

    ``pred`` holds log-probabilities when ``from_logits=True`` (default); otherwise
    ``log_softmax`` along ``axis`` is applied first.
    """

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


class HuberLoss(Loss):
    """Smoothed L1: ``0.5/rho * d^2`` if ``|d| <= rho`` else ``|d| - 0.5 * rho``."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho, (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


class SquaredHingeLoss(Loss):
    """``max(0, margin - pred * label)^2`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))``; labels are {-1, 1} (``'signed'``) or {0, 1}
    (``'binary'``)."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, received {label_format}.")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0
        loss = F.relu(pred) - pred * label + F.log1p(F.exp(-F.abs(pred)))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)


class TripletLoss(Loss):
    """``max(0, |pos - pred|^2 - |neg - pred|^2 + margin)`` per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative, sample_weight=None):
        positive = _reshape_like(positive, pred)
        negative = _reshape_like(negative, pred)
        loss = _sum_except_batch(
            F.square(positive - pred) - F.square(negative - pred), self._batch_axis
        )
        loss = F.relu(loss + self._margin)
        return _apply_weighting(loss, self._weight, sample_weight)
