"""Tests of ferromx.metric against NumPy reference computations."""

import math

import numpy as np
import pytest
from ferromx import metric, nd
from ferromx.ndarray import NDArray


def _probs(n, c, rng):
    x = rng.uniform(size=(n, c)).astype(np.float32)
    return x / x.sum(axis=1, keepdims=True)


def test_accuracy_accumulates_on_engine():
    rng = np.random.RandomState(0)
    acc = metric.Accuracy()
    assert acc.get()[0] == "accuracy" and math.isnan(acc.get()[1])
    correct = total = 0
    for n in (8, 5):
        pred = _probs(n, 4, rng)
        label = rng.randint(0, 4, size=(n,))
        acc.update([nd.array(label)], [nd.array(pred)])
        # the running sum stays an engine array: update() never reads a value
        assert isinstance(acc._sum, NDArray)
        correct += int((pred.argmax(1) == label).sum())
        total += n
    name, value = acc.get()
    assert name == "accuracy" and value == pytest.approx(correct / total)
    assert acc.num_inst == total
    acc.reset()
    assert math.isnan(acc.get()[1]) and acc.num_inst == 0


def test_accuracy_with_class_predictions_and_wrapping():
    acc = metric.Accuracy()
    acc.update(nd.array([1, 2, 3, 4]), nd.array([1, 0, 3, 0]))  # same shape: no argmax
    assert acc.get()[1] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        acc.update([nd.array([1, 2])], [nd.array([1, 2]), nd.array([3, 4])])


def test_global_and_local_stats():
    acc = metric.Accuracy()
    acc.update([nd.array([0, 1])], [nd.array([[1, 0], [1, 0]])])
    acc.reset_local()
    acc.update([nd.array([0, 1])], [nd.array([[1, 0], [0, 1]])])
    assert acc.get()[1] == pytest.approx(1.0)
    assert acc.get_global()[1] == pytest.approx(0.75)


def test_topk_accuracy():
    rng = np.random.RandomState(1)
    pred = rng.uniform(size=(20, 6)).astype(np.float32)
    label = rng.randint(0, 6, size=(20,))
    m = metric.TopKAccuracy(top_k=3)
    assert m.name == "top_k_accuracy_3"
    m.update([nd.array(label)], [nd.array(pred)])
    top3 = np.argsort(-pred, axis=1)[:, :3]
    ref = np.mean([label[i] in top3[i] for i in range(20)])
    assert m.get()[1] == pytest.approx(ref)
    with pytest.raises(ValueError):
        metric.TopKAccuracy(top_k=1)


def test_cross_entropy():
    rng = np.random.RandomState(2)
    pred = _probs(10, 5, rng)
    label = rng.randint(0, 5, size=(10,))
    m = metric.CrossEntropy()
    m.update([nd.array(label)], [nd.array(pred)])
    ref = -np.log(pred[np.arange(10), label] + 1e-12).mean()
    assert m.get()[1] == pytest.approx(ref, rel=1e-5)
    assert m.get()[0] == "cross-entropy"


def test_loss_metric():
    m = metric.Loss()
    m.update(None, [nd.array([1.0, 2.0, 3.0])])
    m.update(None, nd.array([[4.0], [5.0]]))
    assert m.get() == ("loss", pytest.approx(3.0))
    assert m.num_inst == 5


def test_regression_metrics_average_per_batch():
    b1 = (np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 5.0]))
    b2 = (np.array([1.0, 2.0]), np.array([2.0, 2.0]))
    for cls, fn in (
        (metric.MSE, lambda d: (d**2).mean()),
        (metric.MAE, lambda d: np.abs(d).mean()),
        (metric.RMSE, lambda d: np.sqrt((d**2).mean())),
    ):
        m = cls()
        for label, pred in (b1, b2):
            m.update([nd.array(label)], [nd.array(pred)])
        ref = (fn(b1[0] - b1[1]) + fn(b2[0] - b2[1])) / 2
        assert m.get()[1] == pytest.approx(ref, rel=1e-6), cls.__name__
        assert m.num_inst == 2
    # (N,) labels against (N, 1) predictions compare elementwise, not broadcast to (N, N)
    m = metric.MAE()
    m.update([nd.array([1.0, 2.0])], [nd.array([[1.0], [4.0]])])
    assert m.get()[1] == pytest.approx(1.0)


def test_composite_and_create():
    comp = metric.create(["acc", "ce"])
    assert isinstance(comp, metric.CompositeEvalMetric)
    label = nd.array([0, 1])
    pred = nd.array([[0.9, 0.1], [0.4, 0.6]])
    comp.update([label], [pred])
    names, values = comp.get()
    assert names == ["accuracy", "cross-entropy"]
    assert values[0] == pytest.approx(1.0)
    assert values[1] == pytest.approx(-(math.log(0.9) + math.log(0.6)) / 2, rel=1e-5)
    assert dict(comp.get_name_value())["accuracy"] == pytest.approx(1.0)
    assert isinstance(comp.get_metric(1), metric.CrossEntropy)

    assert isinstance(metric.create("acc"), metric.Accuracy)
    assert isinstance(metric.create("top_k_accuracy", top_k=2), metric.TopKAccuracy)
    assert isinstance(metric.create("mse"), metric.MSE)
    m = metric.Accuracy()
    assert metric.create(m) is m
    with pytest.raises(ValueError):
        metric.create("no_such_metric")


def test_custom_metric():
    def mismatches(label, pred):
        return float((label != pred.argmax(1)).sum()), len(label)

    m = metric.create(mismatches)
    assert isinstance(m, metric.CustomMetric) and m.name == "mismatches"
    m.update([nd.array([0, 1, 1])], [nd.array([[1, 0], [1, 0], [0, 1]])])
    assert m.get()[1] == pytest.approx(1 / 3)

    m2 = metric.np(lambda label, pred: float(np.abs(label - pred).max()))
    m2.update([nd.array([1.0, 2.0])], [nd.array([1.5, 2.0])])
    m2.update([nd.array([0.0])], [nd.array([2.0])])
    assert m2.get()[1] == pytest.approx((0.5 + 2.0) / 2)


def test_update_dict_and_str():
    m = metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": nd.array([1, 0])}, {"out": nd.array([[0.2, 0.8], [0.3, 0.7]])})
    assert m.get()[1] == pytest.approx(0.5)
    assert str(m) == "EvalMetric: {'accuracy': 0.5}"
