"""Loss functions, following ``mxnet.gluon.loss`` (MXNet 1.9.1).

Every loss returns one value per sample: the elementwise loss (times ``weight`` and
``sample_weight``) averaged over all axes except ``batch_axis``.
"""

import math
import numbers

from .. import ndarray  # noqa: F401 - MXNet's gluon.loss exposes the module
from .. import ndarray as nd
from ..base import numeric_types  # noqa: F401 - as MXNet's gluon.loss
from ..util import is_np_array  # noqa: F401 - as MXNet's gluon.loss
from .block import HybridBlock

__all__ = [
    "CTCLoss",
    "CosineEmbeddingLoss",
    "HingeLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "L2Loss",
    "LogisticLoss",
    "Loss",
    "PoissonNLLLoss",
    "SDMLLoss",
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
        if _is_symbol(loss):
            from .. import symbol

            # broadcasting, as MXNet's ``F.broadcast_mul`` (a symbol's ``*`` is elementwise)
            loss = symbol.broadcast_mul(loss, sample_weight)
        else:
            loss = loss * sample_weight
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise ValueError("weight must be a number")
        loss = loss * weight
    return loss


def _is_symbol(x):
    from ..symbol import Symbol

    return isinstance(x, Symbol)


def _reshape_like(x, y):
    """Reshape ``x`` to ``y``'s shape (labels given as (N,) for predictions (N, 1) ...)."""
    if _is_symbol(x) or _is_symbol(y):
        return x.reshape_like(y)
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
    if _is_symbol(loss):
        return loss.mean(axis=batch_axis, exclude=True)
    flat = _batch_first(loss, batch_axis)
    return loss if flat is None else flat.mean(axis=1)


def _sum_except_batch(loss, batch_axis):
    """Sum over every axis but ``batch_axis``."""
    if _is_symbol(loss):
        return loss.sum(axis=batch_axis, exclude=True)
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
        if _is_symbol(pred):
            # A symbol has no shape here: MXNet's composition, along the axis as given.
            return self._composed(F, pred, label, self._axis, sample_weight)
        axis = self._axis % pred.ndim
        fused = self._sparse_label and not self._from_logits and axis == pred.ndim - 1
        if fused and pred.ndim == 2:
            # The common (batch, classes) case: one fused native operator.
            loss = F.softmax_ce_loss(pred, label.reshape((-1,)), axis=-1).expand_dims(1)
        elif fused and pred.ndim > 2 and not _is_symbol(pred) and label.size * pred.shape[-1] == pred.size:
            # Sequence outputs (..., classes): the fused operator on the
            # (rows, classes) view, its losses shaped back as pick's.
            rows = pred.reshape((-1, pred.shape[-1]))
            loss = F.softmax_ce_loss(rows, label.reshape((-1,)), axis=-1)
            loss = loss.reshape(pred.shape[:-1] + (1,))
        else:
            return self._composed(F, pred, label, axis, sample_weight)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _mean_except_batch(loss, self._batch_axis)

    def _composed(self, F, pred, label, axis, sample_weight):
        """``log_softmax`` then ``pick`` (or the dense-label sum) along ``axis``."""
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
    """Kullback-Leibler divergence ``label * (log(label + 1e-12) - pred)``, summed per sample
    (as MXNet 1.9.1).

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
        return _sum_except_batch(loss, self._batch_axis)


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


class CTCLoss(Loss):
    """Connectionist temporal classification loss (Graves et al., 2006).

    Parameters
    ----------
    layout : {'NTC', 'TNC'}
        Layout of ``pred`` (unnormalised activations; class ``C - 1`` is the blank).
    label_layout : {'NT', 'TN'}
        Layout of ``label`` (class indices padded with ``-1``).
    weight : float, optional
        Scalar weight.

    ``forward(pred, label, pred_lengths=None, label_lengths=None, sample_weight=None)``
    returns one loss per sample, shape ``(N,)``: the ``CTCLoss`` operator with
    ``blank_label='last'``, as MXNet's.
    """

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC"):
            raise ValueError(f"CTCLoss: only 'NTC' and 'TNC' layouts for pred, got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise ValueError(
                f"CTCLoss: only 'NT' and 'TN' layouts for label, got {label_layout!r}"
            )
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(
        self, F, pred, label, pred_lengths=None, label_lengths=None, sample_weight=None
    ):
        if self._layout == "NTC":  # the operator takes (time, batch, classes)
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        lengths = [a for a in (pred_lengths, label_lengths) if a is not None]
        loss = F.CTCLoss(pred, label, *lengths, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(loss, self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    """Poisson negative log-likelihood, averaged over *all* elements (a scalar).

    ``exp(pred) - target * pred`` when ``from_logits`` (default), else
    ``pred - target * log(pred + epsilon)``; ``compute_full`` adds the Stirling term
    ``target log(target) - target + 0.5 log(2 pi target)`` where ``target > 1``.
    """

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * math.pi * target)
            loss = loss + F.where(target > 1, stirling, F.zeros_like(stirling))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """``1 - cos(x1, x2)`` for label 1 and ``max(0, cos(x1, x2) - margin)`` for label -1.

    Returns shape ``(N, 1)`` (as MXNet 1.9.1).
    """

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(input1, input2)
        label = label.reshape((-1, 1))
        x_norm = F.norm(input1, axis=-1).reshape((-1, 1))
        y_norm = F.norm(input2, axis=-1).reshape((-1, 1))
        dot = F.sum(input1 * input2, axis=-1).reshape((-1, 1))
        cos_sim = dot / F.maximum(x_norm * y_norm, 1e-12)
        loss = (1 - cos_sim) * (label == 1) + F.relu((label == -1) * (cos_sim - self._margin))
        return _apply_weighting(loss, self._weight, sample_weight)


class SDMLLoss(Loss):
    """Smoothed deep metric learning loss (Bonadiman et al., 2019).

    For aligned batches ``x1``, ``x2`` of shape (N, D): the KL divergence between
    ``log_softmax(-||x1_i - x2_j||^2)`` over j and smoothed identity labels
    (``1 - smoothing_parameter`` on the diagonal); one value per sample.
    """

    def __init__(self, smoothing_parameter=0.3, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F, x1, x2):
        if tuple(x1.shape) != tuple(x2.shape) or x1.ndim != 2:
            raise ValueError(
                f"SDMLLoss: x1 and x2 must be (batch, dim) of one shape, got "
                f"{tuple(x1.shape)} and {tuple(x2.shape)}"
            )
        batch_size, dim = x1.shape
        a = F.broadcast_to(x1.expand_dims(1), (batch_size, batch_size, dim))
        b = F.broadcast_to(x2.expand_dims(0), (batch_size, batch_size, dim))
        distances = F.square(a - b).sum(axis=2)
        gold = nd.eye(batch_size, ctx=x1.context, dtype=x1.dtype)
        smooth = self.smoothing_parameter
        labels = gold * (1 - smooth) + (1 - gold) * (smooth / (batch_size - 1))
        return self.kl_loss(F.log_softmax(-distances, axis=1), labels)
