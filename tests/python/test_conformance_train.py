"""Regression tests for the symbolic-training gaps found by MXNet 1.9.1's test_loss.py,
test_optimizer.py and test_init.py (``tools/mxnet_conformance.py``): ``MakeLoss``/``BlockGrad``
as table operators (so ``mx.sym.make_loss`` graphs train in a Module), Gluon losses on
shapeless symbols, MXNet's hidden operator keys (``lr_mult``/``wd_mult``) reaching the
optimizer, PReLU's default slope initializer, and the on-engine ``assert_almost_equal``.
Expected values are NumPy computations or MXNet 1.9.1 behaviour (checked in its venv)."""

import logging

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx.test_utils import assert_almost_equal, compare_optimizer


def test_make_loss_gradient_ignores_the_head_gradient():
    x = nd.array([[1.0, -2.0, 3.0], [0.2, 0.7, -1.0]])
    for kwargs, expected in (
        ({}, np.ones((2, 3))),
        ({"grad_scale": 2.5}, np.full((2, 3), 2.5)),
        ({"grad_scale": 3.0, "normalization": "batch"}, np.full((2, 3), 1.5)),
        # 'valid': divided by the count of elements above valid_thresh (here 3)
        ({"normalization": "valid", "valid_thresh": 0.5}, np.full((2, 3), 1.0 / 3)),
    ):
        x.attach_grad()
        with autograd.record():
            y = nd.make_loss(x * 1.0, **kwargs)
        y.backward(nd.full(y.shape, 7.0))  # the head gradient is ignored
        assert_almost_equal(y.asnumpy(), x.asnumpy())
        assert_almost_equal(x.grad.asnumpy(), expected, rtol=1e-6, atol=1e-7)
    with pytest.raises(Exception, match="MakeLoss"):
        nd.MakeLoss(x, normalization="bogus")


def test_block_grad_gives_zero_gradient_in_symbols():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    out = mx.sym.BlockGrad(a * b) + a * b
    ex = out.simple_bind(mx.cpu(), a=(3,), b=(3,))
    av, bv = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    ex.forward(is_train=True, a=av, b=bv)
    assert_almost_equal(ex.outputs[0].asnumpy(), 2 * av * bv)
    ex.backward(nd.ones((3,)))
    assert_almost_equal(ex.grad_dict["a"].asnumpy(), bv)  # only the unblocked term
    assert "BlockGrad" in out.tojson() and hasattr(mx.sym, "stop_gradient")


def test_symbolic_losses_match_their_ndarray_values():
    rng = np.random.RandomState(3)
    pred, label = rng.uniform(-1, 1, (4, 5)), rng.randint(0, 5, (4,)).astype("float32")
    dense = rng.uniform(0.1, 1, (4, 5))
    cases = [
        (gluon.loss.SoftmaxCrossEntropyLoss(), label),
        (gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False), dense),
        (gluon.loss.KLDivLoss(from_logits=False), dense),
        (gluon.loss.L2Loss(), dense),
    ]
    for loss, lab in cases:
        p, q = mx.sym.var("pred"), mx.sym.var("label")
        out = loss(p, q)
        got = out.eval(pred=nd.array(pred), label=nd.array(lab))[0].asnumpy()
        want = loss(nd.array(pred), nd.array(lab)).asnumpy()
        assert_almost_equal(got, want, rtol=1e-5, atol=1e-6)
    # triplet: the sum over non-batch axes of the squared-distance difference
    p, pos, neg = (rng.uniform(-1, 1, (3, 4)) for _ in range(3))
    sym = gluon.loss.TripletLoss(margin=0.3)(mx.sym.var("a"), mx.sym.var("p"), mx.sym.var("n"))
    got = sym.eval(a=nd.array(p), p=nd.array(pos), n=nd.array(neg))[0].asnumpy()
    want = np.maximum(((pos - p) ** 2 - (neg - p) ** 2).sum(axis=1) + 0.3, 0)
    assert_almost_equal(got, want, rtol=1e-5, atol=1e-6)


def test_module_trains_a_make_loss_graph():
    # One SGD step on mean((x w^T - y)^2 / 2) through make_loss: the gradient is NumPy's.
    rng = np.random.RandomState(0)
    x, y = rng.uniform(-1, 1, (8, 3)).astype("float32"), rng.uniform(-1, 1, (8, 1))
    w0 = rng.uniform(-1, 1, (1, 3)).astype("float32")
    data, label = mx.sym.var("data"), mx.sym.var("label")
    fc = mx.sym.FullyConnected(data, num_hidden=1, no_bias=True, name="fc")
    loss = mx.sym.make_loss(gluon.loss.L2Loss()(fc, label))
    it = mx.io.NDArrayIter(x, y.astype("float32"), batch_size=8, label_name="label")
    mod = mx.mod.Module(loss, data_names=("data",), label_names=("label",), logger=logging)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(arg_params={"fc_weight": nd.array(w0)})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    mod.forward_backward(next(iter(it)))
    mod.update()
    grad = ((x @ w0.T - y) * x).sum(axis=0, keepdims=True)  # per-sample grads, summed
    want = w0 - 0.1 * grad / 8  # rescale_grad = 1 / batch size
    assert_almost_equal(mod.get_params()[0]["fc_weight"].asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_hidden_keys_reach_the_optimizer_multipliers():
    data = mx.sym.var("data")
    bias = mx.sym.var("fc1_bias", lr_mult=1.0)
    fc1 = mx.sym.FullyConnected(data=data, bias=bias, name="fc1", num_hidden=4, lr_mult=0)
    fc2 = mx.sym.FullyConnected(data=fc1, name="fc2", num_hidden=4, wd_mult=0.5)
    assert fc2.attr_dict()["fc2_weight"]["__wd_mult__"] == "0.5"
    mod = mx.mod.Module(fc2, label_names=None)
    mod.bind(data_shapes=[("data", (2, 3))])
    mod.init_params()
    mod.init_optimizer()
    assert mod._optimizer.lr_mult == {"fc1_bias": 1.0, "fc1_weight": 0.0}
    assert mod._optimizer.wd_mult == {"fc2_bias": 0.5, "fc2_weight": 0.5, "fc1_bias": 0.0}
    with pytest.raises(ValueError, match="weight_lr_mult"):
        mx.sym.FullyConnected(data=data, num_hidden=4, weight_lr_mult=0)


def test_prelu_slope_defaults_to_a_quarter():
    sym = mx.sym.LeakyReLU(data=mx.sym.var("data"), act_type="prelu")
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind(data_shapes=[("data", (4, 4))])
    mod.init_params()
    (gamma,) = mod.get_params()[0].values()
    assert (gamma.asnumpy() == 0.25).all()
    given = mx.sym.var("g", init=mx.init.One())  # an explicit initializer wins
    assert mx.sym.LeakyReLU(mx.sym.var("d"), gamma=given, act_type="prelu").attr_dict()[
        "g"]["__init__"] == mx.init.One().dumps()


def test_assert_almost_equal_on_engine_agrees_with_numpy():
    a = nd.array([1.0, 2.0, np.inf, np.nan])
    assert_almost_equal(a, a.copy(), equal_nan=True)
    with pytest.raises(AssertionError):
        assert_almost_equal(a, a.copy())  # NaN != NaN without equal_nan
    for dtype in ("float16", "float32", "float64"):
        x = nd.array(np.linspace(-1, 1, 50), dtype=dtype)
        assert_almost_equal(x, x + 1e-4, rtol=0, atol=2e-3)
        with pytest.raises(AssertionError, match="Error"):
            assert_almost_equal(x, x + 0.5, rtol=1e-3, atol=1e-3)


def test_compare_optimizer_draws_uniform_unit_weights():
    seen = []

    class Recorder(mx.optimizer.SGD):
        def update_multi_precision(self, index, weight, grad, state):
            seen.append(weight.asnumpy().copy())
            super().update_multi_precision(index, weight, grad, state)

    compare_optimizer(Recorder(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1),
                      (50, 4), "float32")
    assert seen and all(((w >= 0) & (w < 1)).all() for w in seen)
    compare_optimizer(mx.optimizer.LAMB(), mx.optimizer.LAMB(), [(3, 2), (5,)], "float32",
                      ntensors=2)


def _clip(x, c):
    return np.clip(x, -c, c)


def test_adam_and_rmsprop_clip_after_weight_decay():
    # MXNet's AdamUpdateKernel / RMSPropUpdateKernel: g = clip(rescale * grad + wd * w)
    rng = np.random.RandomState(1)
    w0, g0 = rng.uniform(0, 1, (4, 5)), rng.uniform(0, 1, (4, 5))
    lr, wd, rs, cg = 0.1, 0.3, 0.8, 0.4
    gi = _clip(rs * g0 + wd * w0, cg)
    w, m, v = nd.array(w0), nd.zeros((4, 5)), nd.zeros((4, 5))
    nd.adam_update(w, nd.array(g0), m, v, lr=lr, wd=wd, rescale_grad=rs, clip_gradient=cg,
                   out=w)
    m_np, v_np = 0.1 * gi, 0.001 * gi * gi
    # float32 kernels: (1 - beta2) alone is off by 1.3e-5 relative in float32
    assert_almost_equal(m.asnumpy(), m_np, rtol=1e-5, atol=1e-6)
    assert_almost_equal(w.asnumpy(), w0 - lr * m_np / (np.sqrt(v_np) + 1e-8), rtol=1e-4,
                        atol=1e-5)
    w, n = nd.array(w0), nd.zeros((4, 5))
    nd.rmsprop_update(w, nd.array(g0), n, lr=lr, wd=wd, rescale_grad=rs, clip_gradient=cg,
                      clip_weights=0.5, out=w)
    n_np = 0.05 * gi * gi
    want = _clip(w0 - lr * gi / np.sqrt(n_np + 1e-8), 0.5)
    assert_almost_equal(w.asnumpy(), want, rtol=1e-4, atol=1e-5)
    assert np.abs(w.asnumpy()).max() <= 0.5 + 1e-7
