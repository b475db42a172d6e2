"""MXNet's output heads as table operators (``SoftmaxOutput``/``Softmax``, the regression
outputs, ``argmax_channel``, ``batch_take``): values and data gradients against recorded
MXNet 1.9.1 (``tests/fixtures/output_heads``), their symbol forms, and a ``mx.mod.Module``
trained through ``SoftmaxOutput`` as MXNet's classic scripts do."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "output_heads", "output_heads_mxnet.json")
with open(FIX) as _f:
    CASES = json.load(_f)["cases"]


def _np(a):
    return np.array(a["v"], dtype=a["dtype"]).reshape(a["shape"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    c = CASES[name]
    x = nd.array(_np(c["data"]), dtype=c["data"]["dtype"])
    args = [x]
    if "label" in c:
        args.append(nd.array(_np(c["label"]), dtype=c["label"]["dtype"]))
    x.attach_grad()
    with autograd.record():
        y = getattr(nd, c["op"])(*args, **c["kw"])
    np.testing.assert_allclose(y.asnumpy(), _np(c["out"]), rtol=1e-5, atol=1e-6, err_msg=name)
    assert y.dtype == np.dtype(c["out"]["dtype"])
    if "grad" in c:
        og = _np(c["ograd"])
        y.backward(nd.array(og))
        want = _np(c["grad"])
        if c["kw"].get("out_grad"):
            # MXNet 1.9.1 multiplies by the output instead of the head gradient (its backward
            # reads the output buffer as out_grad): (p - onehot) * p. ferromx uses the head
            # gradient, as the parameter documents (docs/for-mxnet-users.md).
            p = _np(c["out"])
            want = want / p * og
        np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}: gradient")


def test_softmax_output_label_gets_no_gradient_and_head_gradient_is_ignored():
    x, lab = nd.array([[1.0, 2.0, 0.5]]), nd.array([2.0])
    x.attach_grad()
    lab.attach_grad()
    with autograd.record():
        y = nd.SoftmaxOutput(x, lab)
    y.backward(nd.array([[10.0, 10.0, 10.0]]))
    p = np.exp([1.0, 2.0, 0.5]) / np.exp([1.0, 2.0, 0.5]).sum()
    np.testing.assert_allclose(x.grad.asnumpy()[0], p - [0, 0, 1], rtol=1e-6)
    assert lab.grad.asnumpy().tolist() == [0.0]


@pytest.mark.parametrize("fn, args, msg", [
    (nd.SoftmaxOutput, (nd.ones((4, 5)), nd.ones((3,))), "SoftmaxOutput.*label"),
    (nd.SoftmaxOutput, (nd.ones((4, 5)), nd.ones((4,))), None),
    (nd.LinearRegressionOutput, (nd.ones((4, 2)), nd.ones((3,))), "LinearRegressionOutput.*size"),
])
def test_bad_label_shapes_name_the_operator(fn, args, msg):
    if msg is None:
        fn(*args, normalization="valid").wait_to_read()
        with pytest.raises(mx.base.MXNetError, match="normalization"):
            fn(*args, normalization="mean")
        return
    with pytest.raises(mx.base.MXNetError, match=msg):
        fn(*args)


def test_symbol_form_names_the_label_and_round_trips():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    out = mx.sym.SoftmaxOutput(fc, name="softmax")
    assert out.list_arguments() == ["data", "fc_weight", "fc_bias", "softmax_label"]
    arg, outs, _ = out.infer_shape(data=(4, 6))
    assert dict(zip(out.list_arguments(), arg))["softmax_label"] == (4,)
    assert outs == [(4, 3)]
    back = mx.sym.load_json(out.tojson())
    assert back.list_arguments() == out.list_arguments()
    assert json.loads(out.tojson())["nodes"][-1]["op"] == "SoftmaxOutput"


def test_module_trains_through_softmax_output():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=3.0, size=(3, 8))
    labels = rng.integers(0, 3, size=300)
    xs = centers[labels] + rng.normal(size=(300, 8))
    it = mx.io.NDArrayIter(xs.astype("float32"), labels.astype("float32"), batch_size=30,
                           shuffle=False, label_name="softmax_label")
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, data_names=("data",), label_names=("softmax_label",))
    mx.random.seed(1)
    mod.fit(it, num_epoch=8, optimizer="sgd", optimizer_params={"learning_rate": 0.1},
            initializer=mx.init.Xavier(), eval_metric="acc")
    acc = dict(mod.score(it, "acc"))["accuracy"]
    assert acc > 0.9, acc


def test_argmax_channel_fluent_and_symbol():
    x = nd.array([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]])
    assert x.argmax_channel().asnumpy().tolist() == [1.0, 0.0]
    s = mx.sym.argmax_channel(mx.sym.var("x"))
    ex = s.bind(mx.cpu(), {"x": x})
    assert ex.forward()[0].asnumpy().tolist() == [1.0, 0.0]


@pytest.mark.parametrize("fn", [nd.argmax, nd.argmin, nd.argmax_channel])
def test_index_reductions_record_a_zero_gradient(fn):
    """MXNet records zeros through argmax/argmin (so a graph through them still has a
    backward); ferromx recorded nothing and backward raised."""
    x = nd.array([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]])
    x.attach_grad()
    with autograd.record():
        y = fn(x, axis=1) if fn is not nd.argmax_channel else fn(x)
        z = (y * 2 + x.sum(axis=1)).sum()
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones((2, 3)))


def test_one_hot_records_a_zero_gradient():
    x = nd.array([0.0, 2.0, 1.0])
    x.attach_grad()
    with autograd.record():
        z = (nd.one_hot(x, depth=3) * 2).sum() + (x * x).sum()
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), 2 * x.asnumpy())
