"""gluon.contrib.estimator: fit/evaluate, handlers, checkpoints, early stopping, progress bar."""

import io
import os

import numpy as np
import pytest
from ferromx import gluon, metric, nd
from ferromx.gluon.contrib.estimator import (
    BatchEnd,
    CheckpointHandler,
    EarlyStoppingHandler,
    Estimator,
    LoggingHandler,
    ValidationHandler,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _loader(n=120, batch_size=20, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    ds = gluon.data.ArrayDataset(nd.array(x), nd.array(y))
    return gluon.data.DataLoader(ds, batch_size=batch_size)


def _estimator(lr=0.5, **kw):
    net = gluon.nn.Dense(2)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    return Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kw)


class CountBatches(BatchEnd):
    def __init__(self):
        self.n = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.n += 1


def test_fit_trains_and_validates(capsys):
    est = _estimator()
    assert [m.name for m in est.train_metrics] == [
        "training accuracy", "training softmaxcrossentropyloss"]
    assert [m.name for m in est.val_metrics] == [
        "validation accuracy", "validation softmaxcrossentropyloss"]
    est.fit(_loader(), val_data=_loader(seed=1), epochs=4)
    assert est.train_metrics[0].get()[1] > 0.9
    assert est.val_metrics[0].get()[1] > 0.85
    out = capsys.readouterr().out
    assert "Train for 4 epochs." in out and "[Epoch 3] Finished in" in out
    assert "validation accuracy" in out and "Train finished using total" in out


def test_fit_by_batches_and_errors():
    est = _estimator()
    counter = CountBatches()
    est.fit(_loader(), batches=8, event_handlers=[counter])
    assert counter.n == 8  # 6 batches per epoch: stops inside the second epoch
    with pytest.raises(ValueError, match="exactly one"):
        est.fit(_loader())
    with pytest.raises(ValueError, match="exactly one"):
        est.fit(_loader(), epochs=1, batches=2)
    with pytest.raises(ValueError, match="DataLoader"):
        est.fit([1, 2], epochs=1)
    with pytest.raises(ValueError, match="Loss"):
        Estimator(gluon.nn.Dense(2), loss="mse")
    with pytest.raises(ValueError, match="outside of the known"):
        est.fit(_loader(), epochs=1,
                event_handlers=[LoggingHandler(metrics=[metric.Accuracy()])])


def test_evaluate_and_validation_batch_period():
    est = _estimator()
    est.evaluate(_loader())
    assert not np.isnan(est.val_metrics[0].get()[1])
    calls = []

    def eval_fn(val_data, batch_axis, event_handlers):
        calls.append(batch_axis)

    est.fit(_loader(), epochs=2,
            event_handlers=[ValidationHandler(_loader(), eval_fn, epoch_period=1,
                                              batch_period=4)])
    assert len(calls) == 12 // 4 + 2  # every 4th of 12 batches, and after each epoch


def test_early_stopping_stops_when_no_improvement():
    est = _estimator(lr=0.0)  # nothing changes: the loss never improves
    loss_metric = est.train_metrics[1]
    stopper = EarlyStoppingHandler(monitor=loss_metric, mode="min", patience=2)
    counter = CountBatches()
    est.fit(_loader(), epochs=10, event_handlers=[stopper, counter])
    assert stopper.stopped_epoch == 2 and counter.n == 3 * 6


def test_checkpoints_save_best_and_resume(tmp_path):
    est = _estimator()
    acc = est.train_metrics[0]
    ckpt = CheckpointHandler(str(tmp_path), model_prefix="m", monitor=acc, save_best=True,
                             max_checkpoints=2)
    est.fit(_loader(), epochs=3, event_handlers=[ckpt])
    files = sorted(os.listdir(tmp_path))
    assert files == ["m-best.params", "m-best.states", "m-epoch1batch12.params",
                     "m-epoch1batch12.states", "m-epoch2batch18.params", "m-epoch2batch18.states"]
    saved = est.net.weight.data().asnumpy()

    est2 = _estimator()
    counter = CountBatches()
    resume = CheckpointHandler(str(tmp_path), model_prefix="m", resume_from_checkpoint=True)
    est2.fit(_loader(), epochs=5, event_handlers=[resume, counter])
    assert counter.n == 2 * 6  # epochs 0..2 were done; 2 remain
    assert "m-epoch4batch30.params" in os.listdir(tmp_path)
    assert not np.array_equal(est2.net.weight.data().asnumpy(), saved)  # trained on from it
    with pytest.raises(ValueError, match="save best"):
        CheckpointHandler(str(tmp_path), save_best=True)


def test_progress_bar_shows_loss_and_metrics():
    stream = io.StringIO()
    est = _estimator()
    log = LoggingHandler(metrics=est.train_metrics, progress_bar=True, refresh=0, stream=stream)
    est.fit(_loader(), epochs=2, event_handlers=[log])
    text = stream.getvalue()
    assert "\r[Epoch 0] [" in text and "6/6" in text and "\r[Epoch 1] [" in text
    assert "training softmaxcrossentropyloss:" in text and "training accuracy:" in text
    assert text.count("\n") == 2  # one finished bar per epoch
    with pytest.raises(ValueError):
        LoggingHandler(log_interval="batch")
