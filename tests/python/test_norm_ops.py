"""BatchNorm: recorded MXNet 1.9.1 values (outputs, gradients and the moving statistics
updated by the backward pass), training vs inference mode, and bad input."""

import ast
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "conv_ops")
NORM = np.load(os.path.join(FIX, "norm.npz"))
NAMES = sorted({k.split("/")[0] for k in NORM.files})


@pytest.mark.parametrize("name", NAMES)
def test_matches_recorded_mxnet(name):
    attrs = ast.literal_eval(str(NORM[f"{name}/attrs"]))
    train = str(NORM[f"{name}/mode"]) == "train"
    xs = [nd.array(NORM[f"{name}/in{k}"], dtype="float64") for k in range(5)]
    for a in xs[:3]:
        a.attach_grad()
    with autograd.record(train_mode=train):
        out = nd.BatchNorm(*xs, **attrs)
    outs = out if isinstance(out, list) else [out]
    outs[0].backward(nd.array(NORM[f"{name}/head"], dtype="float64"))
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), NORM[f"{name}/out{k}"], rtol=1e-6, atol=1e-9,
                                   err_msg=f"out{k}")
    for k in range(3):
        np.testing.assert_allclose(xs[k].grad.asnumpy(), NORM[f"{name}/grad{k}"], rtol=1e-6,
                                   atol=1e-9, err_msg=f"grad{k}")
    np.testing.assert_allclose(xs[3].asnumpy(), NORM[f"{name}/moving_mean"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(xs[4].asnumpy(), NORM[f"{name}/moving_var"], rtol=1e-6, atol=1e-9)


def _params(c):
    return nd.ones(c), nd.zeros(c), nd.zeros(c), nd.ones(c)


def test_training_uses_batch_statistics_and_predict_uses_moving_ones():
    x = np.random.default_rng(0).standard_normal((8, 3, 4)).astype("float32") * 3 + 1
    g, b, mm, mv = _params(3)
    with autograd.train_mode():
        y = nd.BatchNorm(nd.array(x), g, b, mm, mv, eps=1e-5)
    mu, var = x.mean(axis=(0, 2), keepdims=True), x.var(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(y.asnumpy(), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    # Not differentiated: the moving statistics stay (MXNet updates them in backward).
    np.testing.assert_array_equal(mm.asnumpy(), 0)
    y = nd.BatchNorm(nd.array(x), g, b, mm, mv, eps=1e-5)
    np.testing.assert_allclose(y.asnumpy(), x / np.sqrt(1 + 1e-5), rtol=1e-6)


def test_backward_updates_the_moving_statistics_in_place():
    x = nd.array(np.random.default_rng(1).standard_normal((6, 2, 3)), dtype="float32")
    x.attach_grad()
    g, b, mm, mv = _params(2)
    for _ in range(2):
        with autograd.record():
            y = nd.BatchNorm(x, g, b, mm, mv, momentum=0.5)
        y.backward()
    xn = x.asnumpy()
    m, v = xn.mean(axis=(0, 2)), xn.var(axis=(0, 2))
    np.testing.assert_allclose(mm.asnumpy(), m * 0.75, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv.asnumpy(), 0.25 + v * 0.75, rtol=1e-5)


def test_npx_alias_and_output_mean_var():
    x = mx.np.ones((2, 3))
    out = mx.npx.batch_norm(x, mx.np.ones(3), mx.np.zeros(3), mx.np.zeros(3), mx.np.ones(3),
                            output_mean_var=True)
    assert len(out) == 3 and out[0].shape == (2, 3) and out[2].shape == (3,)


@pytest.mark.parametrize("shapes,kwargs,match", [
    ([(2, 3, 4), (4,), (3,), (3,), (3,)], {}, (r"BatchNorm: .*\(2, 3, 4\).*gamma must have shape "
                                                r"\(3,\) for 3 channels on axis 1")),
    ([(2, 3, 4), (3,), (3,), (3,), (3,)], {"axis": 3}, "BatchNorm: axis 3 is out of range"),
    ([(2, 3), (3,), (3,), (2,), (3,)], {}, "BatchNorm: .*moving_mean must have shape"),
])
def test_bad_input_raises_naming_the_operator(shapes, kwargs, match):
    with pytest.raises(mx.base.MXNetError, match=match):
        nd.BatchNorm(*[nd.ones(s) for s in shapes], **kwargs)


EXTRA = np.load(os.path.join(FIX, "extra.npz"))


@pytest.mark.parametrize("name", ["instance_norm", "group_norm", "lrn"])
def test_composed_norms_match_recorded_mxnet(name):
    attrs = ast.literal_eval(str(EXTRA[f"{name}/attrs"]))
    op = getattr(nd, str(EXTRA[f"{name}/op"]))
    grad_of = list(EXTRA[f"{name}/grad_of"])
    xs = [nd.array(EXTRA[f"{name}/in{k}"], dtype="float32") for k in range(len(grad_of))]
    for a in xs:
        a.attach_grad()
    with autograd.record():
        y = op(*xs, **attrs)
    y.backward(nd.array(EXTRA[f"{name}/head"], dtype="float32"))
    np.testing.assert_allclose(y.asnumpy(), EXTRA[f"{name}/out0"], rtol=1e-4, atol=1e-5)
    for k in grad_of:
        np.testing.assert_allclose(xs[k].grad.asnumpy(), EXTRA[f"{name}/grad{k}"], rtol=1e-3,
                                   atol=1e-4, err_msg=f"grad{k}")


def test_composed_norm_errors():
    with pytest.raises(mx.base.MXNetError, match=r"GroupNorm: .*num_groups=4"):
        nd.GroupNorm(nd.ones((2, 6, 3)), nd.ones(4), nd.ones(4), num_groups=4)
    with pytest.raises(mx.base.MXNetError, match=r"InstanceNorm: .*gamma must have shape \(3,\)"):
        nd.InstanceNorm(nd.ones((2, 3, 3)), nd.ones(4), nd.ones(3))
    with pytest.raises(mx.base.MXNetError, match="LRN: nsize must be a positive odd number"):
        nd.LRN(nd.ones((2, 3, 3)), nsize=2)
