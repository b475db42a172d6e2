"""ferromx Gluon losses against recorded MXNet 1.9.1 values and gradients
(tests/fixtures/loss), plus CTC checks against NumPy."""

import importlib.util
import itertools
import json
import math
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd
from ferromx.gluon import loss as gloss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXDIR = os.path.join(ROOT, "fixtures", "loss")


def _load_recorder():
    spec = importlib.util.spec_from_file_location(
        "record_losses", os.path.join(FIXDIR, "record_losses.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REC = _load_recorder()
with open(os.path.join(FIXDIR, "losses.json")) as _f:
    FIXTURE = json.load(_f)["cases"]


@pytest.mark.parametrize("case", REC.CASES, ids=[c[0] for c in REC.CASES])
def test_matches_mxnet(case):
    out, grad = REC.run_case(mx, case)
    want = FIXTURE[case[0]]
    expected = np.asarray(want["out"])
    if expected.shape == (1,):  # MXNet's full reductions give (1,), ferromx's ()
        out = out.reshape(expected.shape)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    if want["grad"] is not None:
        np.testing.assert_allclose(grad, np.asarray(want["grad"]), rtol=1e-4, atol=1e-5)


def test_all_mxnet_losses_present():
    names = ["CTCLoss", "CosineEmbeddingLoss", "HingeLoss", "HuberLoss", "KLDivLoss", "L1Loss",
             "L2Loss", "LogisticLoss", "Loss", "PoissonNLLLoss", "SDMLLoss", "SigmoidBCELoss",
             "SigmoidBinaryCrossEntropyLoss", "SoftmaxCELoss", "SoftmaxCrossEntropyLoss",
             "SquaredHingeLoss", "TripletLoss"]  # fmt: skip
    for name in names:
        assert issubclass(getattr(gloss, name), gloss.Loss), name


def _ctc_brute_force(logits, label, blank):
    """-log sum over all alignments (T <= 6) that collapse to ``label``."""
    t_len, classes = logits.shape
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    total = 0.0
    for path in itertools.product(range(classes), repeat=t_len):
        collapsed = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        if [c for c in collapsed if c != blank] == list(label):
            total += math.exp(sum(logp[t, c] for t, c in enumerate(path)))
    return -math.log(total)


def test_ctc_matches_brute_force_with_lengths():
    rng = np.random.RandomState(1)
    pred = rng.normal(size=(2, 5, 3)).astype(np.float32)
    labels = np.array([[0, 1, 1], [1, -1, -1]], np.float32)
    out = gloss.CTCLoss()(nd.array(pred), nd.array(labels)).asnumpy()
    assert out[0] == pytest.approx(_ctc_brute_force(pred[0], [0, 1, 1], 2), rel=1e-5)
    assert out[1] == pytest.approx(_ctc_brute_force(pred[1], [1], 2), rel=1e-5)
    lengths = gloss.CTCLoss()(
        nd.array(pred), nd.array(labels), nd.array([4, 3]), nd.array([2, 1])
    ).asnumpy()
    assert lengths[0] == pytest.approx(_ctc_brute_force(pred[0, :4], [0, 1], 2), rel=1e-5)
    assert lengths[1] == pytest.approx(_ctc_brute_force(pred[1, :3], [1], 2), rel=1e-5)


def test_ctc_gradient_matches_finite_differences():
    rng = np.random.RandomState(2)
    pred = rng.normal(size=(2, 4, 3)).astype(np.float64)
    labels = nd.array([[0, 1], [1, -1]])
    x = nd.array(pred, dtype="float64")
    x.attach_grad()
    with autograd.record():
        loss = gloss.CTCLoss()(x, labels)
    loss.backward()
    grad = x.grad.asnumpy()
    eps = 1e-5
    for idx in [(0, 0, 0), (0, 2, 1), (1, 3, 2), (1, 1, 0)]:
        hi, lo = pred.copy(), pred.copy()
        hi[idx] += eps
        lo[idx] -= eps
        f_hi = gloss.CTCLoss()(nd.array(hi, dtype="float64"), labels).asnumpy().sum()
        f_lo = gloss.CTCLoss()(nd.array(lo, dtype="float64"), labels).asnumpy().sum()
        assert grad[idx] == pytest.approx((f_hi - f_lo) / (2 * eps), rel=1e-4, abs=1e-7)


def test_ctc_rejects_bad_layouts_and_shapes():
    with pytest.raises(ValueError, match="CTCLoss.*'NCT'"):
        gloss.CTCLoss(layout="NCT")
    with pytest.raises(ValueError, match="CTCLoss.*'NN'"):
        gloss.CTCLoss(label_layout="NN")
    with pytest.raises(ValueError, match=r"CTCLoss: .*\(4, 2, 3\) and \(3, 2\).*label \(batch, length\)"):
        gloss.CTCLoss()(nd.zeros((2, 4, 3)), nd.zeros((3, 2)))


def test_sdml_rejects_mismatched_batches():
    with pytest.raises(ValueError, match="SDMLLoss.*\\(4, 3\\).*\\(3, 3\\)"):
        gloss.SDMLLoss()(nd.zeros((4, 3)), nd.zeros((3, 3)))


def test_poisson_full_gradient_finite_differences():
    # MXNet 1.9.1 cannot differentiate compute_full=True (in-place op under record).
    rng = np.random.RandomState(4)
    pred = 1.5 + rng.uniform(-1, 1, size=(3, 2))
    target = nd.array(rng.poisson(2.0, size=(3, 2)), dtype="float64")
    fn = gloss.PoissonNLLLoss(from_logits=False, compute_full=True)
    x = nd.array(pred, dtype="float64")
    x.attach_grad()
    with autograd.record():
        out = fn(x, target)
    out.backward()
    eps = 1e-6
    hi, lo = pred.copy(), pred.copy()
    hi[1, 0] += eps
    lo[1, 0] -= eps
    num = (fn(nd.array(hi, dtype="float64"), target).asnumpy().sum()
           - fn(nd.array(lo, dtype="float64"), target).asnumpy().sum()) / (2 * eps)  # fmt: skip
    assert x.grad.asnumpy()[1, 0] == pytest.approx(num, rel=1e-5)
