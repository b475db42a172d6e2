"""The ``CTCLoss`` table operator (``nd.ctc_loss``, ``nd.contrib.CTCLoss``): losses and
gradients recorded from MXNet 1.9.1's operator (tests/fixtures/loss/ctc_op_mxnet.json:
activations (5, 2, 4), both blank conventions, the lengths inputs), errors, and the
symbol form."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "loss", "ctc_op_mxnet.json")
with open(FIX) as _f:
    REC = json.load(_f)
DATA = np.array(REC["data"], dtype="float32").reshape(REC["shape"])


@pytest.mark.parametrize("case", sorted(REC["cases"]))
def test_loss_and_gradient_match_recorded_mxnet(case):
    c = REC["cases"][case]
    kw = dict(c["kw"])
    lengths = [nd.array(kw.pop(k)) for k in ("data_lengths", "label_lengths") if k in kw]
    x = nd.array(DATA)
    x.attach_grad()
    with autograd.record():
        loss = nd.CTCLoss(x, nd.array(c["label"]), *lengths, **kw)
        z = loss * nd.array([1.0, 2.0])  # a per-sample head gradient
    z.backward()
    assert loss.shape == (2,)
    np.testing.assert_allclose(loss.asnumpy(), c["loss"], rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy().ravel(), c["grad"], atol=2e-6)


def test_aliases_and_float64():
    c = REC["cases"]["first"]
    label = nd.array(c["label"])
    for fn in (nd.ctc_loss, nd.contrib.CTCLoss, nd.contrib.ctc_loss):
        np.testing.assert_allclose(fn(nd.array(DATA), label).asnumpy(), c["loss"], rtol=1e-5)
    l64 = nd.ctc_loss(nd.array(DATA, dtype="float64"), label)
    assert l64.dtype == np.float64
    np.testing.assert_allclose(l64.asnumpy(), c["loss"], rtol=1e-6)


def test_bad_inputs_name_the_operator_and_shapes():
    with pytest.raises(mx.MXNetError, match=r"CTCLoss.*\(5, 2, 4\).*\(3, 2\)"):
        nd.CTCLoss(nd.array(DATA), nd.zeros((3, 2)))
    with pytest.raises(mx.MXNetError, match="CTCLoss: expects 3 inputs"):
        nd.CTCLoss(nd.array(DATA), nd.ones((2, 2)), use_data_lengths=True)
    with pytest.raises(mx.MXNetError, match="blank_label"):
        nd.CTCLoss(nd.array(DATA), nd.ones((2, 2)), blank_label="middle")
    # values are checked by the kernel: the error reaches the result, naming the label
    out = nd.CTCLoss(nd.array(DATA), nd.array([[1, 7], [1, 0]]))
    with pytest.raises(mx.MXNetError, match="CTCLoss.*label 7"):
        out.asnumpy()
    out = nd.CTCLoss(nd.array(DATA), nd.ones((2, 2)), nd.array([6, 1]), use_data_lengths=True)
    with pytest.raises(mx.MXNetError, match="data_lengths 6"):
        out.asnumpy()


def test_too_short_a_sequence_gives_an_infinite_loss():
    # "1 1" needs three steps (a blank between the repeats); two are given
    loss = nd.CTCLoss(nd.zeros((2, 1, 3)), nd.array([[1, 1]])).asnumpy()
    assert np.isinf(loss[0])


def test_symbol_form_binds_and_matches():
    c = REC["cases"]["last"]
    sym = mx.sym.CTCLoss(mx.sym.var("data"), mx.sym.var("label"), blank_label="last")
    ex = sym.bind(mx.cpu(), {"data": nd.array(DATA), "label": nd.array(c["label"])})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), c["loss"], rtol=1e-5)


def test_a_label_equal_to_the_blank_class_is_an_ordinary_label_as_in_mxnet():
    # MXNet 1.9.1 (blank 'last' = class 3 of 4): "3 2 2" scores as "2 1 1" does on
    # uniform activations; its kernel does not reject the blank's class as a label
    from ferromx.gluon import loss as gloss

    out = gloss.CTCLoss()(nd.ones((2, 20, 4)), nd.array([[2, 1, 2, 2], [3, 2, 2, 2]]), None,
                          nd.array([2, 3]))
    np.testing.assert_allclose(out.asnumpy(), [18.82820702, 16.50581741], rtol=1e-6)


def test_gluon_ctc_loss_hybridizes_into_the_operator():
    from ferromx.gluon import loss as gloss

    loss = gloss.CTCLoss()
    loss.hybridize()
    pred = nd.array(DATA.transpose(1, 0, 2))  # NTC
    out = loss(pred, nd.array([[0, 1], [2, -1]]))
    np.testing.assert_allclose(out.asnumpy(), REC["cases"]["last"]["loss"], rtol=1e-5)
    assert "CTCLoss" in loss._cached_graph[1].tojson()
