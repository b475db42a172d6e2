"""How the Estimator runs one batch (``BatchProcessor``), following MXNet 1.9.1."""

from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """Forward/backward of one batch; subclass to customise ``fit_batch``/``evaluate_batch``."""

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        data, label = batch[0], batch[1]
        data = split_and_load(data, ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(label, ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Predict and compute the validation loss; returns ``(data, label, pred, loss)``."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Forward under ``autograd.record`` and backward; returns ``(data, label, pred,
        loss)`` (the weight update is :class:`GradientUpdateHandler`'s)."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for lval in loss:
            lval.backward()
        return data, label, pred, loss
