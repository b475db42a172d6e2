"""ferromx metrics against recorded MXNet 1.9.1 values (tests/fixtures/metric)."""

import importlib.util
import json
import math
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import metric, nd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXDIR = os.path.join(ROOT, "fixtures", "metric")


def _load_recorder():
    spec = importlib.util.spec_from_file_location(
        "record_metrics", os.path.join(FIXDIR, "record_metrics.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REC = _load_recorder()
with open(os.path.join(FIXDIR, "metrics.json")) as _f:
    FIXTURE = json.load(_f)["cases"]


def _same(got, want, where):
    assert [n for n, _ in got] == [n for n, _ in want], where
    for (_, a), (_, b) in zip(got, want):
        if b is None or (isinstance(b, float) and math.isnan(b)):
            assert math.isnan(a), where
        else:
            assert a == pytest.approx(b, rel=1e-5, abs=1e-6), where


@pytest.mark.parametrize("case", REC.CASES, ids=[c[0] for c in REC.CASES])
def test_matches_mxnet(case):
    got = REC.run_case(mx, case)
    want = FIXTURE[case[0]]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g["get"], w["get"], f"{case[0]} step {k} get")
        _same(g["global"], w["global"], f"{case[0]} step {k} global")


def test_names_and_aliases():
    for name in ("F1", "MCC", "PCC", "Perplexity", "PearsonCorrelation", "NegativeLogLikelihood",
                 "CrossEntropy", "Loss", "Torch", "Caffe", "CustomMetric", "CompositeEvalMetric",
                 "np", "create", "register", "alias", "check_label_shapes"):  # fmt: skip
        assert hasattr(mx.metric, name), name
    expected = {
        "acc": metric.Accuracy, "accuracy": metric.Accuracy, "ce": metric.CrossEntropy,
        "nll_loss": metric.NegativeLogLikelihood, "pearsonr": metric.PearsonCorrelation,
        "top_k_acc": metric.TopKAccuracy, "top_k_accuracy": metric.TopKAccuracy,
        "composite": metric.CompositeEvalMetric, "f1": metric.F1, "mcc": metric.MCC,
        "pcc": metric.PCC, "loss": metric.Loss, "torch": metric.Torch, "caffe": metric.Caffe,
    }  # fmt: skip
    for name, klass in expected.items():
        kwargs = {"top_k": 2} if "top_k" in name else {}
        assert type(metric.create(name, **kwargs)) is klass, name
    assert type(metric.create("Perplexity", ignore_label=None)) is metric.Perplexity
    with pytest.raises(ValueError, match="no_such_metric"):
        metric.create("no_such_metric")


def test_f1_rejects_multiclass_labels():
    f1 = metric.F1()
    labels = nd.array([0, 1, 2, 1])
    preds = nd.array([[0.4, 0.6]] * 4)
    with pytest.raises(ValueError, match="F1 currently only supports binary"):
        f1.update([labels], [preds])
    with pytest.raises(ValueError, match="MCC currently only supports binary"):
        metric.MCC().update([labels], [preds])


def test_f1_micro_matches_numpy_over_batches():
    rng = np.random.RandomState(0)
    f1 = metric.F1(average="micro")
    tp = fp = fn = 0
    for _ in range(4):
        lab = rng.randint(0, 2, size=20)
        pred = rng.uniform(size=(20, 2))
        f1.update([nd.array(lab)], [nd.array(pred)])
        hat = pred.argmax(axis=1)
        tp += int(((hat == 1) & (lab == 1)).sum())
        fp += int(((hat == 1) & (lab == 0)).sum())
        fn += int(((hat == 0) & (lab == 1)).sum())
    p, r = tp / (tp + fp), tp / (tp + fn)
    assert f1.get()[1] == pytest.approx(2 * p * r / (p + r), rel=1e-9)


def test_perplexity_ignores_label_and_checks_shapes():
    pred = nd.array([[0.3, 0.7], [0.9, 0.1], [0.5, 0.5]])
    label = nd.array([1, -1, 0])
    ppl = metric.Perplexity(ignore_label=-1)
    ppl.update([label], [pred])
    assert ppl.num_inst == 2
    assert ppl.get()[1] == pytest.approx(math.exp(-(math.log(0.7) + math.log(0.5)) / 2))
    with pytest.raises(ValueError, match="Perplexity: shape mismatch"):
        ppl.update([nd.array([1, 0])], [pred])


def test_custom_metric_and_np_wrapper():
    def mean_abs(label, pred):
        return float(np.abs(label - pred).sum()), label.size

    m = metric.np(mean_abs)
    assert m.name == "mean_abs"
    m.update([nd.array([1.0, 2.0])], [nd.array([1.5, 1.0])])
    assert m.get() == ("mean_abs", pytest.approx(0.75))
    lam = metric.create(lambda label, pred: 2.0)
    assert lam.name == "custom(<lambda>)"
    lam.update([nd.array([1.0])], [nd.array([1.0])])
    assert lam.get()[1] == 2.0
    with pytest.raises(NotImplementedError):
        lam.get_config()


def test_pcc_grows_confusion_matrix():
    pcc = metric.PCC()
    pcc.update([nd.array([0, 1, 2, 3])], [nd.array([0, 1, 2, 3])])
    assert pcc.k == 4
    assert pcc.get()[1] == pytest.approx(1.0)
