"""``Estimator``: a training loop driven by event handlers (MXNet 1.9.1's contrib API)."""

import copy
import logging
import sys
import warnings

from .... import metric as _metric
from ....context import Context, cpu, gpu, num_gpus
from ...data import DataLoader
from ...loss import Loss as GluonLoss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (
    BatchBegin,
    BatchEnd,
    EpochBegin,
    EpochEnd,
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
    _check_event_handlers,
)
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ["Estimator"]

_NOT_LOADER = ("Estimator only supports input as Gluon DataLoader. Alternatively, you can "
               "transform your DataIter or any NDArray into Gluon DataLoader. Refer to "
               "gluon.data.DataLoader")


class Estimator:
    """Train and evaluate a Gluon network with event handlers.

    Parameters
    ----------
    net : Block
    loss : gluon.loss.Loss
    train_metrics, val_metrics : EvalMetric or list, optional
        Training metrics (default: accuracy for softmax cross-entropy, plus the loss);
        validation metrics default to copies of the training ones.  Names get a
        ``'training '``/``'validation '`` prefix.
    initializer : Initializer, optional
        Used when ``net`` is not initialized yet.
    trainer : gluon.Trainer, optional
        Default: SGD with learning rate 0.001.
    context : Context or list of Context, optional
    val_net, val_loss : optional
        Network and loss used for validation (default ``net`` and ``loss``).
    batch_processor : BatchProcessor, optional
        Runs each batch (``fit_batch``/``evaluate_batch``).
    """

    logger = None

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None,
                 batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self._check_loss(val_loss) if val_loss is not None else self.loss
        self.val_net = val_net if val_net is not None else self.net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)  # noqa: LOG001
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = None
        self.max_batch = None
        self.batch_axis = 0
        self.batches_per_epoch = None

    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, GluonLoss):
            msg = f"loss must be a Loss, refer to gluon.loss.Loss: {loss}"
            raise ValueError(msg)  # noqa: TRY004
        return loss

    @staticmethod
    def _check_context(context):
        if context:
            if isinstance(context, Context):
                context = [context]
            elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
                raise ValueError("context must be a Context or a list of Context, for example "
                                 f"mx.cpu() or [mx.gpu(0), mx.gpu(1)]: {context}")
            gpus = num_gpus()
            for ctx in context:
                if not (str(ctx).startswith("cpu") or ctx.device_id < gpus):
                    raise ValueError(f"{ctx} is not available")
            return context
        return [gpu(0)] if num_gpus() > 0 else [cpu()]

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            msg = "Customized batch processor must contain fit_batch() and evaluate_batch()"
            raise ValueError(msg)  # noqa: TRY004
        return batch_processor

    def _is_initialized(self):
        params = self.net.collect_params()
        for name in params:
            try:
                params[name].list_ctx()
            except RuntimeError:
                return False
        return True

    def _initialize(self, initializer):
        if not self._is_initialized():
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already initialized, ignoring initializer. Use "
                          "net.initialize(init=..., force_reinit=True) to re-initialize.",
                          stacklevel=3)

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate "
                          "0.001 is used.", stacklevel=3)
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError(f"Trainer must be a Gluon Trainer instance, refer to "  # noqa: TRY004
                             f"gluon.Trainer: {trainer}")
        return trainer

    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(_metric.Loss(self.loss.name.rstrip("1234567890")))
        for m in self._train_metrics:
            m.name = "training " + m.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
        for m in self._val_metrics:
            if "training" in m.name:
                m.name = m.name.replace("training", "validation")
            else:
                m.name = "validation " + m.name

    @property
    def train_metrics(self):
        """The training metrics (names prefixed ``'training '``)."""
        return self._train_metrics

    @property
    def val_metrics(self):
        """The validation metrics (names prefixed ``'validation '``)."""
        return self._val_metrics

    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Run ``val_data`` (a DataLoader) through ``val_net`` and update the val metrics."""
        if not isinstance(val_data, DataLoader):
            raise ValueError(_NOT_LOADER)  # noqa: TRY004
        for m in self.val_metrics:
            m.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = _categorize(handlers)
        for h in epoch_begin:
            h.epoch_begin(self)
        for batch in val_data:
            for h in batch_begin:
                h.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for h in batch_end:
                h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for h in epoch_end:
            h.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None,
            batch_axis=0):
        """Train on ``train_data`` (a DataLoader) for ``epochs`` epochs or ``batches`` batches
        (exactly one of them), validating on ``val_data`` after every epoch."""
        if not isinstance(train_data, DataLoader):
            raise ValueError(_NOT_LOADER)  # noqa: TRY004
        if (not epochs) == (not batches):
            raise ValueError("Fit only support exactly one type of iteration, train by number "
                             "of epochs or number of batches. Please specify one and only one "
                             "of: epochs or batches.")
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        try:
            self.batches_per_epoch = len(train_data)
        except TypeError:
            self.batches_per_epoch = None
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = _categorize(
            handlers)
        for h in train_begin:
            h.train_begin(self)
        while True:
            for h in epoch_begin:
                h.epoch_begin(self)
            for batch in train_data:
                for h in batch_begin:
                    h.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                stop = [h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                        for h in batch_end]
                if any(stop):
                    break
            if any([h.epoch_end(self) for h in epoch_end]):  # noqa: C419 - call every handler
                break
        for h in train_end:
            h.train_end(self)

    def _prepare_default_handlers(self, val_data, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        added = [StoppingHandler(self.max_epoch, self.max_batch)]
        if not any(isinstance(h, GradientUpdateHandler) for h in handlers):
            added.append(GradientUpdateHandler())
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.train_metrics))
        if not any(isinstance(h, ValidationHandler) for h in handlers) and val_data:
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.train_metrics))
        mixing = bool(handlers)  # user handlers next to default ones
        handlers.extend(added)
        if mixing:
            known = self.train_metrics + self.val_metrics
            for h in handlers:
                _check_handler_metric_ref(h, known)
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    def _prepare_default_validation_handlers(self, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        added = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        mixing = bool(handlers) and bool(added)
        handlers.extend(added)
        if mixing:
            for h in handlers:
                _check_handler_metric_ref(h, self.val_metrics)
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers


def _categorize(handlers):
    kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
    return tuple([h for h in handlers if isinstance(h, k)] for k in kinds)
