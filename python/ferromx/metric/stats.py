"""Binary/multiclass statistics, likelihood and correlation metrics (``mxnet.metric``, 1.9.1):
F1, MCC, PCC, Perplexity, NegativeLogLikelihood, PearsonCorrelation, Torch and Caffe.

Counts and sums are float64 engine scalars; :meth:`get` reads them.  Where MXNet needs a
value on the host during ``update`` (the binary-label check, PCC's class count, the number
of ignored labels), it is read with ``asscalar`` there too.
"""

import math

import numpy as _np

from .. import ndarray as nd
from .base import EvalMetric, Loss, _as_nd, _read, alias, check_label_shapes, register

__all__ = [
    "F1",
    "MCC",
    "PCC",
    "Caffe",
    "NegativeLogLikelihood",
    "PearsonCorrelation",
    "Perplexity",
    "Torch",
]


def _f64(x):
    return x.astype("float64")


def _safe_div(num, den):
    """``num / den`` where ``den > 0``, else 0 (engine scalars)."""
    ok = den > 0
    return nd.where(ok, num / nd.where(ok, den, nd.ones_like(den)), nd.zeros_like(num))


class _BinaryStats:
    """True/false positive/negative counts (local and global) as float64 engine scalars."""

    _FIELDS = ("tp", "fp", "fn", "tn")

    def __init__(self, owner):
        self.owner = owner
        self.reset_stats()

    def reset_stats(self):
        """Reset local and global counts."""
        self.local_reset_stats()
        self.glob = dict.fromkeys(self._FIELDS, 0.0)
        self.global_total = 0

    def local_reset_stats(self):
        """Reset the local counts."""
        self.loc = dict.fromkeys(self._FIELDS, 0.0)
        self.total = 0

    def update_binary_stats(self, label, pred):
        """Add the counts of one batch: ``pred`` (N, 2) scores, ``label`` (N,) in {0, 1}."""
        label, pred = _as_nd(label), _as_nd(pred)
        pred_label = nd.argmax(pred, axis=1)
        label = label.astype("int32").reshape((label.size,))
        check_label_shapes(label, pred)
        values = nd.sort(label.astype("float64"))
        if values.size > 1 and int((values[1:] != values[:-1]).sum().asscalar()) + 1 > 2:
            raise ValueError(
                f"{type(self.owner).__name__} currently only supports binary classification."
            )
        pred_true = _f64(pred_label == 1)
        label_true = _f64(label == 1)
        counts = {
            "tp": (pred_true * label_true).sum(),
            "fp": (pred_true * (1 - label_true)).sum(),
            "fn": ((1 - pred_true) * label_true).sum(),
            "tn": ((1 - pred_true) * (1 - label_true)).sum(),
        }
        for key, value in counts.items():
            self.loc[key] = self.loc[key] + value
            self.glob[key] = self.glob[key] + value
        self.total += int(label.size)
        self.global_total += int(label.size)

    def fscore(self, use_global=False):
        """F1 from the (local or global) counts, 0 where precision + recall is 0."""
        c = self.glob if use_global else self.loc
        if not isinstance(c["tp"], nd.NDArray):
            return 0.0
        precision = _safe_div(c["tp"], c["tp"] + c["fp"])
        recall = _safe_div(c["tp"], c["tp"] + c["fn"])
        return _safe_div(2 * precision * recall, precision + recall)

    def matthewscc(self, use_global=False):
        """Matthews correlation from the counts; zero factors of the denominator count as 1."""
        c = self.glob if use_global else self.loc
        if not (self.global_total if use_global else self.total):
            return 0.0
        tp, fp, fn, tn = (c[k] for k in self._FIELDS)
        denom = nd.ones_like(tp)
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            denom = denom * nd.where(term != 0, term, nd.ones_like(term))
        return (tp * tn - fp * fn) / nd.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """Shared update of F1 and MCC: 'macro' averages per-update scores, 'micro' pools counts."""

    def __init__(self, name, output_names, label_names, average):
        self.average = average
        self._stats = _BinaryStats(self)
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def _score(self, use_global):
        raise NotImplementedError()

    def update(self, labels, preds):
        """Update the counts with a batch (binary labels, (N, 2) predictions)."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._stats.update_binary_stats(label, pred)
        if self.average == "macro":
            self._sum = self._sum + self._score(False)
            self._global_sum = self._global_sum + self._score(True)
            self.num_inst += 1
            self.global_num_inst += 1
            self._stats.reset_stats()
        else:
            self._sum = self._score(False) * self._stats.total
            self._global_sum = self._score(True) * self._stats.global_total
            self.num_inst = self._stats.total
            self.global_num_inst = self._stats.global_total

    def reset(self):
        """Reset local and global statistics."""
        super().reset()
        if hasattr(self, "_stats"):
            self._stats.reset_stats()

    def reset_local(self):
        """Reset the local statistics only."""
        super().reset_local()
        self._stats.local_reset_stats()


@register
class F1(_BinaryMetric):
    """F1 score ``2 P R / (P + R)`` of a binary classification.

    ``average='macro'`` averages the F1 of each update; ``'micro'`` computes one F1 over all
    updates.
    """

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    @property
    def metrics(self):
        """The running binary counts (MXNet's ``F1.metrics``)."""
        return self._stats

    def _score(self, use_global):
        return self._stats.fscore(use_global)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classification ('macro' or 'micro')."""

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global):
        return self._stats.matthewscc(use_global)


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation from a confusion matrix (grown as labels appear).

    ``cov_xy / sqrt(cov_xx cov_yy)`` over the K x K confusion matrix (rows: prediction,
    columns: label); NaN when a covariance is 0.  One instance per ``update`` call.
    """

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(
            name=name, output_names=output_names, label_names=label_names,
            has_global_stats=has_global_stats,
        )  # fmt: skip

    def _grow(self, inc):
        def pad(cm):
            cm = nd.concat(cm, nd.zeros((self.k, inc), dtype="float64"), dim=1)
            return nd.concat(cm, nd.zeros((inc, self.k + inc), dtype="float64"), dim=0)

        self.lcm, self.gcm = pad(self.lcm), pad(self.gcm)
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x, y = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_xx = (x * (n - x)).sum()
        cov_yy = (y * (n - y)).sum()
        diag = (cmat * nd.eye(cmat.shape[0], dtype="float64")).sum(axis=1)
        cov_xy = (diag * n - x * y).sum()
        prod = cov_xx * cov_yy
        ok = prod != 0
        value = cov_xy / nd.sqrt(nd.where(ok, prod, nd.ones_like(prod)))
        return nd.where(ok, value, nd.ones_like(value) * float("nan"))

    def update(self, labels, preds):
        """Add a batch to the confusion matrix (class scores are reduced with argmax)."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label).astype("int32"), _as_nd(pred)
            if tuple(pred.shape) != tuple(label.shape):
                pred = nd.argmax(pred, axis=1)
            pred = pred.astype("int32").reshape((pred.size,))
            label = label.reshape((label.size,))
            n = int(nd.maximum(pred.max(), label.max()).asscalar())
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = nd.dot(
                nd.one_hot(pred, self.k, dtype="float64").T,
                nd.one_hot(label, self.k, dtype="float64"),
            )
            self.lcm = self.lcm + bcm
            self.gcm = self.gcm + bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        """``mcc(local matrix) * num_inst``."""
        return _read(self._calc_mcc(self.lcm)) * self.num_inst

    @property
    def global_sum_metric(self):
        """``mcc(global matrix) * global_num_inst``."""
        return _read(self._calc_mcc(self.gcm)) * self.global_num_inst

    def get(self):
        """Return ``(name, mcc)`` of the local confusion matrix."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        """Return ``(name, mcc)`` of the global confusion matrix."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    def reset(self):
        """Reset local and global confusion matrices."""
        self.global_num_inst = 0
        self.gcm = nd.zeros((self.k, self.k), dtype="float64")
        self.reset_local()

    def reset_local(self):
        """Reset the local confusion matrix."""
        self.num_inst = 0
        self.lcm = nd.zeros((self.k, self.k), dtype="float64")


@register
class Perplexity(EvalMetric):
    """Perplexity ``exp(-mean(log p[label]))`` (probabilities floored at 1e-10).

    Labels equal to ``ignore_label`` (``None``: none) are left out; ``axis`` is the class axis
    of the predictions.
    """

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):  # fmt: skip
        super().__init__(
            name, ignore_label=ignore_label, output_names=output_names,
            label_names=label_names, has_global_stats=True,
        )  # fmt: skip
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        """Add the log-likelihoods of a batch."""
        if len(labels) != len(preds):
            raise ValueError(
                f"Perplexity: {len(labels)} labels but {len(preds)} predictions"
            )
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            if label.size * pred.shape[-1] != pred.size:
                raise ValueError(
                    f"Perplexity: shape mismatch: {tuple(label.shape)} vs. {tuple(pred.shape)}"
                )
            label = label.reshape((label.size,))
            prob = nd.pick(pred, label.astype("int32"), axis=self.axis)
            num = int(prob.size)
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(prob.dtype)
                num -= int(ignore.sum().asscalar())
                prob = prob * (1 - ignore) + ignore
            loss = -nd.sum(nd.log(nd.maximum(prob, 1e-10)))
            self._accumulate(loss, num)

    def get(self):
        """Return ``(name, exp(loss / num))``."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(_read(self._sum) / self.num_inst))

    def get_global(self):
        """Return ``(name, exp(global loss / global num))``."""
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(_read(self._global_sum) / self.global_num_inst))


@register
@alias("nll_loss")
class NegativeLogLikelihood(EvalMetric):
    """Mean negative log-likelihood ``-log(p[label] + eps)`` of probability predictions."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(
            name, eps=eps, output_names=output_names, label_names=label_names,
            has_global_stats=True,
        )  # fmt: skip
        self.eps = eps

    def update(self, labels, preds):
        """Add the negative log-likelihoods of a batch."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            label = label.reshape((label.size,))
            if label.shape[0] != pred.shape[0]:
                raise ValueError(
                    f"NegativeLogLikelihood: {label.shape[0]} labels for predictions of shape "
                    f"{tuple(pred.shape)}"
                )
            prob = nd.pick(pred, label.astype("int64"), axis=-1)
            self._accumulate((-nd.log(prob + self.eps)).sum(), label.shape[0])


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels.

    'macro' averages the correlation of each (label, pred) pair; 'micro' pools every value
    with Welford's running means and sums of squares (as MXNet).
    """

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        self.average = average
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def reset_micro(self):
        """Reset the pooled ('micro') statistics."""
        self._sse_p = self._mean_p = self._sse_l = self._mean_l = self._conv = 0.0
        self._pred_nums = self._label_nums = 0

    def reset(self):
        """Reset all statistics."""
        super().reset()
        if self.average == "micro":
            self.reset_micro()

    @staticmethod
    def _welford(values, count, mean, m_2):
        count += int(values.size)
        delta = values - mean
        mean = mean + nd.sum(delta / count)
        m_2 = m_2 + nd.sum(delta * (values - mean))
        return count, mean, m_2

    def update(self, labels, preds):
        """Update with a batch of (label, pred) pairs of equal shapes."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_nd(label), _as_nd(pred)
            check_label_shapes(label, pred, False, True)
            label = label.reshape((label.size,)).astype("float64")
            pred = pred.reshape((pred.size,)).astype("float64")
            if self.average == "macro":
                dp, dl = pred - pred.mean(), label - label.mean()
                corr = (dp * dl).sum() / nd.sqrt((dp * dp).sum() * (dl * dl).sum())
                self._accumulate(corr, 1)
                continue
            self.num_inst += 1
            self.global_num_inst += 1
            self._label_nums, self._mean_l, self._sse_l = self._welford(
                label, self._label_nums, self._mean_l, self._sse_l
            )
            self._conv = self._conv + nd.sum((label - self._mean_l) * (pred - self._mean_p))
            self._pred_nums, self._mean_p, self._sse_p = self._welford(
                pred, self._pred_nums, self._mean_p, self._sse_p
            )

    def get(self):
        """Return ``(name, correlation)``."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return super().get()
        n = self._label_nums
        denom = (n - 1) * _np.sqrt(_read(self._sse_p) / (n - 1))
        denom *= _np.sqrt(_read(self._sse_l) / (n - 1))
        return (self.name, _read(self._conv) / denom)


@register
class Torch(Loss):
    """Dummy metric for torch criterions (a :class:`Loss` named 'torch')."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions (a :class:`Loss` named 'caffe')."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)
