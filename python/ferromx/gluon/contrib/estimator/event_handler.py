"""Event handlers of the Gluon Estimator, following MXNet 1.9.1.

Handlers run in ascending ``priority`` (gradient update -2000, metrics and validation -1000,
checkpoint and early stopping 0, logging last).  A ``batch_end``/``epoch_end`` returning true
stops training.
"""

import os
import sys
import time
import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as LossMetric
from .utils import _check_metrics

__all__ = [
    "BatchBegin",
    "BatchEnd",
    "CheckpointHandler",
    "EarlyStoppingHandler",
    "EpochBegin",
    "EpochEnd",
    "EventHandler",
    "GradientUpdateHandler",
    "LoggingHandler",
    "MetricHandler",
    "StoppingHandler",
    "TrainBegin",
    "TrainEnd",
    "ValidationHandler",
]


def _check_event_handlers(handlers):
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    if not all(isinstance(h, EventHandler) for h in handlers):
        raise ValueError(f"event_handlers must be an EventHandler or a list of EventHandler, "
                         f"got: {handlers}")
    return handlers


class EventHandler:
    """Base class of all event handlers."""


class TrainBegin(EventHandler):
    """Handler run once before training."""

    def train_begin(self, estimator, *args, **kwargs):
        """Called before the first epoch."""


class TrainEnd(EventHandler):
    """Handler run once after training."""

    def train_end(self, estimator, *args, **kwargs):
        """Called after the last epoch."""


class EpochBegin(EventHandler):
    """Handler run before each epoch."""

    def epoch_begin(self, estimator, *args, **kwargs):
        """Called before each epoch."""


class EpochEnd(EventHandler):
    """Handler run after each epoch; returning true stops training."""

    def epoch_end(self, estimator, *args, **kwargs):
        """Called after each epoch."""
        return False


class BatchBegin(EventHandler):
    """Handler run before each batch."""

    def batch_begin(self, estimator, *args, **kwargs):
        """Called before each batch (``batch=``)."""


class BatchEnd(EventHandler):
    """Handler run after each batch; returning true stops training."""

    def batch_end(self, estimator, *args, **kwargs):
        """Called after each batch (``batch=``, ``pred=``, ``label=``, ``loss=``)."""
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stop after ``max_epoch`` epochs or ``max_batch`` batches."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Reset ``metrics`` every epoch and update them after every batch (loss metrics with
    the loss, the others with labels and predictions)."""

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for m in self.metrics:
            m.reset()

    def batch_end(self, estimator, *args, **kwargs):
        pred, label, loss = kwargs["pred"], kwargs["label"], kwargs["loss"]
        for m in self.metrics:
            if isinstance(m, LossMetric):
                m.update(0, loss)
            else:
                m.update(label, pred)


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Run ``eval_fn(val_data=..., batch_axis=..., event_handlers=...)`` every
    ``epoch_period`` epochs (and every ``batch_period`` batches when given)."""

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def _evaluate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._evaluate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._evaluate(estimator)


def _metric_text(metrics):
    return ", ".join("{}: {:.4f}".format(*m.get()) for m in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Log the training: hyper-parameters at the start, ``metrics`` at the end of every epoch
    (``log_interval='epoch'``) or every ``log_interval`` batches, totals at the end.

    ``progress_bar`` (default: when ``sys.stdout`` is a terminal) draws a one-line text bar
    of the epoch's progress with the current loss and metrics, redrawn at most every
    ``refresh`` seconds (each redraw reads the metrics, which waits for the engine).
    """

    def __init__(self, log_interval="epoch", metrics=None, priority=np.inf, progress_bar=None,
                 refresh=0.5, stream=None):
        if not isinstance(log_interval, int) and log_interval != "epoch":
            raise ValueError("log_interval must be either an integer or string 'epoch'")
        self.metrics = _check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0
        self.stream = stream if stream is not None else sys.stdout
        isatty = getattr(self.stream, "isatty", None)
        self.progress_bar = bool(isatty and isatty()) if progress_bar is None else progress_bar
        self.refresh = refresh
        self._last_draw = 0.0
        self._training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        optimizer = type(trainer._optimizer).__name__ if hasattr(trainer, "_optimizer") else "?"
        estimator.logger.info("Training begin: using optimizer %s with current learning "
                              "rate %.4f ", optimizer, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        train_time = time.time() - self.train_start
        msg = f"Train finished using total {int(train_time)}s with {self.current_epoch} epochs. "
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator, *args, **kwargs):
        self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        batch_time = time.time() - self.batch_start
        self.processed_samples += kwargs["batch"][0].shape[0]
        if isinstance(self.log_interval, int):
            msg = f"[Epoch {self.current_epoch}][Batch {self.batch_index}]"
            msg += f"[Samples {self.processed_samples}] "
            self.log_interval_time += batch_time
            if self.batch_index % self.log_interval == 0:
                msg += f"time/interval: {self.log_interval_time:.3f}s "
                self.log_interval_time = 0
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        elif self.progress_bar and self._training:
            now = time.time()
            if now - self._last_draw >= self.refresh:
                self._last_draw = now
                self._draw(estimator)
        self.batch_index += 1

    def _draw(self, estimator, final=False):
        total = getattr(estimator, "batches_per_epoch", None)
        done = self.batch_index + 1
        width = 30
        if total:
            filled = min(width, width * done // total)
            bar = "=" * filled + (">" if filled < width else "") + " " * (width - filled - 1)
            counter = f"{done}/{total}"
        else:
            bar, counter = "", f"{done}"
        line = f"\r[Epoch {self.current_epoch}] [{bar}] {counter} {_metric_text(self.metrics)}"
        self.stream.write(line + ("\n" if final else ""))
        self.stream.flush()

    def epoch_begin(self, estimator, *args, **kwargs):
        self._training = any("training" in m.name for m in self.metrics)
        self.epoch_start = time.time()
        self._last_draw = time.time()
        if self._training:
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs):
        if self.progress_bar and self._training and self.log_interval == "epoch":
            self.batch_index = max(self.batch_index - 1, 0)
            self._draw(estimator, final=True)
        epoch_time = time.time() - self.epoch_start
        msg = f"[Epoch {self.current_epoch}] Finished in {epoch_time:.3f}s, "
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0


def _monitor_op(mode, monitor, who):
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who} mode {mode} is unknown, fallback to auto mode.", RuntimeWarning,
                      stacklevel=3)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    # MXNet 1.9.1's test here is always true (`'acc' or ...`), so it always maximises; we
    # maximise only accuracy/F1-like metrics and minimise the rest (losses).
    name = monitor.get()[0].lower()
    return np.greater if ("acc" in name or "f1" in name) else np.less


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Save parameters and trainer states every ``epoch_period`` epochs (or ``batch_period``
    batches) as ``{model_prefix}-epoch{E}batch{B}.params/.states`` in ``model_dir``, keeping
    the last ``max_checkpoints``; with ``save_best`` also ``{model_prefix}-best`` when
    ``monitor`` improves; ``resume_from_checkpoint`` loads the latest checkpoint and trains
    only the remaining epochs/batches."""

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0,
                 save_best=False, mode="auto", epoch_period=1, batch_period=None,
                 max_checkpoints=5, resume_from_checkpoint=False):
        self.monitor = monitor
        self.verbose = verbose
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if self.save_best and not isinstance(self.monitor, EvalMetric):
            raise ValueError("To save best model only, please provide one of the metric objects "
                             "from estimator.train_metrics and estimator.val_metrics as monitor.")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        self.trained_epoch = -1
        self.trained_batch = -1
        if self.save_best:
            self.monitor_op = _monitor_op(mode, monitor, "CheckpointHandler")
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            msg = ("To use resume from checkpoint, you must only specify the same type of period "
                   "you used for training.")
            if estimator.max_batch and (not self.batch_period or self.epoch_period):
                raise ValueError(msg)
            if estimator.max_epoch and (not self.epoch_period or self.batch_period):
                raise ValueError(msg)
            self._resume(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _save_checkpoint(self, estimator):
        if self.resume_from_checkpoint:
            epoch = self.current_epoch + self.trained_epoch + 1
            batch = self.current_batch + self.trained_batch + (0 if estimator.max_epoch else 1)
        else:
            epoch, batch = self.current_epoch, self.current_batch
        prefix = f"{self.model_prefix}-epoch{epoch}batch{batch}"
        self._save(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, "
                                  "saving model at %s with prefix: %s", self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        if self.save_best:
            name, value = self.monitor.get()
            if np.isnan(value):
                warnings.warn(f"Skipping save best because {name} is not updated, make sure you "
                              "pass one of the metric objects estimator.train_metrics and "
                              "estimator.val_metrics as monitor", RuntimeWarning, stacklevel=2)
            elif self.monitor_op(value, self.best):
                if self.verbose > 0:
                    estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f "
                                          "to %0.5f, updating best model", self.current_epoch,
                                          name, self.best, value)
                self._save(estimator, self.model_prefix + "-best")
                self.best = value

    def _save(self, estimator, prefix):
        estimator.net.save_parameters(os.path.join(self.model_dir, prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, prefix + ".states"))
        if "best" in prefix:
            return
        self.saved_checkpoints.append(prefix)
        if len(self.saved_checkpoints) > self.max_checkpoints:
            old = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                path = os.path.join(self.model_dir, old + ext)
                if os.path.exists(path):
                    os.remove(path)

    def _checkpoints(self):
        """``(epoch, batch)`` of every checkpoint file in ``model_dir``."""
        found = []
        head = self.model_prefix + "-epoch"
        for fname in os.listdir(self.model_dir):
            if not (fname.startswith(head) and fname.endswith(".params")):
                continue
            body = fname[len(head):-len(".params")]
            epoch, _, batch = body.partition("batch")
            try:
                found.append((int(epoch), int(batch)))
            except ValueError as err:
                raise ValueError(f"CheckpointHandler: cannot parse checkpoint {fname!r}; "
                                 "expected {prefix}-epoch{E}batch{B}.params") from err
        return sorted(found)

    def _resume(self, estimator):
        found = self._checkpoints()
        if not found:
            estimator.logger.info("CheckpointHandler: No checkpoint found, training from scratch")
            return
        self.saved_checkpoints = [f"{self.model_prefix}-epoch{e}batch{b}" for e, b in found]
        self.trained_epoch = max(e for e, _ in found)
        self.trained_batch = max(b for e, b in found if e == self.trained_epoch)
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError(f"Found checkpoint with maximum number of epoch "
                                 f"{estimator.max_epoch} reached, please specify "
                                 "resume_from_checkpoint=False to train from scratch.")
            estimator.max_epoch -= self.trained_epoch + 1
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError(f"Found checkpoint with maximum number of batch "
                                 f"{self.trained_batch} reached, please specify "
                                 "resume_from_checkpoint=False to train from scratch.")
            estimator.max_batch -= self.trained_batch + 1
        prefix = os.path.join(self.model_dir, f"{self.model_prefix}-epoch{self.trained_epoch}"
                                              f"batch{self.trained_batch}")
        for ext in (".params", ".states"):
            if not os.path.exists(prefix + ext):
                raise FileNotFoundError(f"Failed to load checkpoint, {prefix + ext} does not "
                                        "exist")
        estimator.net.load_parameters(prefix + ".params", ctx=estimator.context)
        estimator.trainer.load_states(prefix + ".states")
        estimator.logger.warning("CheckpointHandler: Checkpoint resumed from epoch %d batch %d",
                                 self.trained_epoch, self.trained_batch)


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stop when ``monitor`` has not improved by ``min_delta`` for ``patience`` epochs."""

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError("Please provide one of the metric objects from "  # noqa: TRY004
                             "estimator.train_metrics and estimator.val_metrics as monitor.")
        if isinstance(monitor, CompositeEvalMetric):
            msg = ("CompositeEvalMetric is not supported for EarlyStoppingHandler, please "
                   "specify a simple metric instead.")
            raise ValueError(msg)  # noqa: TRY004
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op = _monitor_op(mode, monitor, "EarlyStopping")
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta
        self.best = None

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(f"{name} is not updated, make sure you pass one of the metric objects "
                          "from estimator.train_metrics and estimator.val_metrics as monitor.",
                          RuntimeWarning, stacklevel=2)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHanlder: early stopping due to %s "
                                  "not improving", self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Call ``trainer.step`` with the batch size after every batch."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs["loss"]
        if not isinstance(loss, list):
            loss = [loss]
        estimator.trainer.step(sum(lval.shape[0] for lval in loss))
