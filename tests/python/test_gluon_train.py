"""Tests of ferromx.gluon losses, the Trainer and end-to-end training loops, against
NumPy reference computations."""

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx import init as _init  # noqa: F401  (makes mx.init available)
from ferromx import optimizer as _optimizer  # noqa: F401  (makes mx.optimizer available)
from ferromx.base import MXNetError
from ferromx.context import cpu
from ferromx.gluon import nn

RTOL, ATOL = 1e-5, 1e-6


def _np(x):
    return x.asnumpy()


def _close(a, b, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(
        np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol
    )


def _mlp(in_units=None):
    net = nn.HybridSequential()
    with net.name_scope():
        if in_units is None:
            net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
        else:
            net.add(nn.Dense(8, activation="relu", in_units=in_units), nn.Dense(3, in_units=8))
    return net


# ---- losses --------------------------------------------------------------------------------
def _log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def test_softmax_ce_loss():
    x = np.random.normal(size=(6, 5)).astype(np.float32)
    y = np.random.randint(0, 5, size=(6,))
    ref = -_log_softmax(x)[np.arange(6), y]
    loss = gluon.loss.SoftmaxCELoss()
    _close(_np(loss(nd.array(x), nd.array(y, dtype="int32"))), ref)
    _close(_np(loss(nd.array(x), nd.array(y.astype(np.float32)))), ref)  # float labels
    assert gluon.loss.SoftmaxCELoss is gluon.loss.SoftmaxCrossEntropyLoss

    sw = np.random.uniform(size=(6, 1)).astype(np.float32)
    _close(_np(loss(nd.array(x), nd.array(y), nd.array(sw))), ref * sw[:, 0])
    _close(_np(gluon.loss.SoftmaxCELoss(weight=0.5)(nd.array(x), nd.array(y))), 0.5 * ref)

    logp = _log_softmax(x)
    from_logits = gluon.loss.SoftmaxCELoss(from_logits=True)
    _close(_np(from_logits(nd.array(logp), nd.array(y))), ref, rtol=1e-4)

    dense = np.random.dirichlet(np.ones(5), size=6).astype(np.float32)
    dense_loss = gluon.loss.SoftmaxCELoss(sparse_label=False)
    _close(_np(dense_loss(nd.array(x), nd.array(dense))), -(logp * dense).sum(-1), rtol=1e-4)

    x3 = np.random.normal(size=(2, 4, 3)).astype(np.float32)  # classes on axis 1
    y3 = np.random.randint(0, 4, size=(2, 3))
    l3 = -np.take_along_axis(_log_softmax(x3, axis=1), y3[:, None, :], axis=1)[:, 0, :]
    out = _np(gluon.loss.SoftmaxCELoss(axis=1)(nd.array(x3), nd.array(y3)))
    _close(out, l3.mean(axis=1), rtol=1e-4)


def test_softmax_ce_gradient():
    x = np.random.normal(size=(4, 3)).astype(np.float32)
    y = np.array([0, 2, 1, 2])
    xin = nd.array(x)
    xin.attach_grad()
    with autograd.record():
        loss = gluon.loss.SoftmaxCELoss()(xin, nd.array(y, dtype="int32"))
    loss.backward()
    p = np.exp(_log_softmax(x))
    onehot = np.eye(3)[y]
    _close(_np(xin.grad), p - onehot, rtol=1e-4, atol=1e-5)



@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_ce_sequence_output_and_wide_rows(dtype):
    # (T, N, C) scores with (T, N) labels take the fused operator on the (T*N, C)
    # view: loss and gradient equal NumPy's log_softmax + pick, rows wider than
    # the kernel's eight lanes and with a remainder (C = 1003).
    t, n, c = 3, 5, 1003
    x = (np.random.normal(size=(t, n, c)) * 4).astype(dtype)
    y = np.random.randint(0, c, size=(t, n))
    g = np.random.uniform(0.5, 1.5, size=(t,)).astype(dtype)
    xin = nd.array(x, dtype=dtype)
    xin.attach_grad()
    with autograd.record():
        loss = gluon.loss.SoftmaxCELoss()(xin, nd.array(y))
    loss.backward(nd.array(g, dtype=dtype))
    logp = _log_softmax(x.astype(np.float64))
    ref = -np.take_along_axis(logp, y[..., None], axis=-1)[..., 0]
    _close(_np(loss), ref.mean(axis=1), rtol=1e-5, atol=1e-5)
    # d loss_t / d x = (softmax - onehot) * g_t / n
    want = (np.exp(logp) - np.eye(c)[y]) * (g[:, None, None] / n)
    _close(_np(xin.grad), want, rtol=1e-4, atol=1e-7)


def test_softmax_ce_loss_is_exact_for_confident_wrong_scores():
    # -log_softmax at the label, not -log(max(p, tiny)): a probability that
    # underflows still gives the exact loss (MXNet's log_softmax + pick does).
    x = nd.array([[0.0, 150.0, -3.0], [2.0, 1.0, 0.0]])
    out = _np(gluon.loss.SoftmaxCELoss()(x, nd.array([0, 0])))
    lse = np.log(np.exp(np.array([2.0, 1.0, 0.0])).sum())
    _close(out, [150.0, lse - 2.0], rtol=1e-6)


def test_softmax_ce_bad_head_gradient_is_a_clear_error():
    x = nd.array(np.random.normal(size=(4, 3)).astype(np.float32))
    x.attach_grad()
    with autograd.record():
        loss = nd.softmax_ce_loss(x, nd.array([0, 1, 2, 0]))
    with pytest.raises(Exception, match="head gradient"):
        loss.backward(nd.ones((5,)))
    with pytest.raises(Exception, match="head gradient|dtype"):
        loss.backward(nd.ones((4,), dtype="float64"))


def test_regression_losses():
    pred = np.random.normal(size=(5, 3)).astype(np.float32)
    label = np.random.normal(size=(5, 3)).astype(np.float32)
    p, l_ = nd.array(pred), nd.array(label)
    _close(_np(gluon.loss.L2Loss()(p, l_)), (0.5 * (pred - label) ** 2).mean(1))
    _close(_np(gluon.loss.L1Loss()(p, l_)), np.abs(pred - label).mean(1))
    d = np.abs(pred - label)
    huber = np.where(d > 0.5, d - 0.25, d**2)  # rho = 0.5: 0.5/rho * d^2 = d^2
    _close(_np(gluon.loss.HuberLoss(rho=0.5)(p, l_)), huber.mean(1))
    # label given as (N,) for pred (N, 1) is reshaped
    col = gluon.loss.L2Loss()(nd.array(pred[:, :1]), nd.array(label[:, 0]))
    _close(_np(col), 0.5 * (pred[:, 0] - label[:, 0]) ** 2)
    sw = np.random.uniform(size=(5, 1)).astype(np.float32)
    _close(
        _np(gluon.loss.L1Loss(weight=2.0)(p, l_, nd.array(sw))),
        (2.0 * np.abs(pred - label) * sw).mean(1),
    )
    # batch_axis=1: one value per column
    _close(_np(gluon.loss.L1Loss(batch_axis=1)(p, l_)), np.abs(pred - label).mean(0))


def test_sigmoid_bce_loss():
    x = np.random.normal(size=(4, 6)).astype(np.float32)
    z = np.random.randint(0, 2, size=(4, 6)).astype(np.float32)
    sig = 1 / (1 + np.exp(-x))
    ref = -(z * np.log(sig) + (1 - z) * np.log(1 - sig))
    bce = gluon.loss.SigmoidBinaryCrossEntropyLoss()
    _close(_np(bce(nd.array(x), nd.array(z))), ref.mean(1), rtol=1e-4)
    bce_p = gluon.loss.SigmoidBCELoss(from_sigmoid=True)
    _close(_np(bce_p(nd.array(sig), nd.array(z))), ref.mean(1), rtol=1e-4, atol=1e-5)
    pw = np.float32(3.0)
    ref_w = -(pw * z * np.log(sig) + (1 - z) * np.log(1 - sig))
    out = bce(nd.array(x), nd.array(z), None, nd.full((4, 6), 3.0))
    _close(_np(out), ref_w.mean(1), rtol=1e-4)


def test_kldiv_and_margin_losses():
    x = np.random.normal(size=(3, 4)).astype(np.float32)
    target = np.random.dirichlet(np.ones(4), size=3).astype(np.float32)
    logp = _log_softmax(x)
    # MXNet 1.9.1 sums KLDivLoss over the non-batch axes (recorded in tests/fixtures/loss).
    ref = (target * (np.log(target + 1e-12) - logp)).sum(1)
    _close(_np(gluon.loss.KLDivLoss()(nd.array(logp), nd.array(target))), ref, rtol=1e-4)
    _close(
        _np(gluon.loss.KLDivLoss(from_logits=False)(nd.array(x), nd.array(target))), ref, rtol=1e-4
    )

    sign = np.where(np.random.uniform(size=(3, 4)) > 0.5, 1.0, -1.0).astype(np.float32)
    _close(
        _np(gluon.loss.HingeLoss()(nd.array(x), nd.array(sign))),
        np.maximum(0, 1 - x * sign).mean(1),
    )
    _close(
        _np(gluon.loss.SquaredHingeLoss()(nd.array(x), nd.array(sign))),
        (np.maximum(0, 1 - x * sign) ** 2).mean(1),
    )
    _close(
        _np(gluon.loss.LogisticLoss()(nd.array(x), nd.array(sign))),
        np.log1p(np.exp(-x * sign)).mean(1),
        rtol=1e-4,
    )


# ---- trainer ----------------------------------------------------------------------------------
def _grads_and_weights(net):
    params = net.collect_params()
    return (
        {k: _np(p.grad()) for k, p in params.items()},
        {k: _np(p.data()) for k, p in params.items()},
    )


def _l2_step(net, x, y):
    with autograd.record():
        loss = gluon.loss.L2Loss()(net(x), y)
    loss.backward()


def test_trainer_sgd_momentum_matches_numpy():
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.Uniform(0.5))
    x = nd.array(np.random.normal(size=(4, 3)).astype(np.float32))
    y = nd.array(np.random.normal(size=(4, 2)).astype(np.float32))
    lr, mom, wd, bs = 0.1, 0.9, 0.01, 4
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": lr, "momentum": mom, "wd": wd}
    )
    state = None
    for _ in range(3):
        _l2_step(net, x, y)
        grads, weights = _grads_and_weights(net)
        if state is None:
            state = {k: np.zeros_like(w) for k, w in weights.items()}
        trainer.step(bs)
        for k in weights:
            state[k] = mom * state[k] - lr * (grads[k] / bs + wd * weights[k])
            _close(_np(net.collect_params()[k].data()), weights[k] + state[k], rtol=1e-5)
    assert trainer.learning_rate == lr
    trainer.set_learning_rate(0.05)
    assert trainer.learning_rate == 0.05


def test_trainer_stale_gradient():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x, y = nd.ones((2, 3)), nd.zeros((2, 2))
    _l2_step(net, x, y)
    trainer.step(2)
    before = _np(net.weight.data())
    with pytest.raises(UserWarning, match="has not been updated by backward"):
        trainer.step(2)
    assert np.array_equal(_np(net.weight.data()), before)  # nothing was updated
    trainer.step(2, ignore_stale_grad=True)
    assert np.array_equal(_np(net.weight.data()), before)  # stale params are skipped
    _l2_step(net, x, y)
    trainer.step(2)
    assert not np.array_equal(_np(net.weight.data()), before)


def test_trainer_unused_parameter_is_stale():
    used, unused = nn.Dense(2, in_units=3), nn.Dense(2, in_units=3)
    used.initialize()
    unused.initialize()
    params = used.collect_params()
    params.update(unused.collect_params())
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1})
    _l2_step(used, nd.ones((2, 3)), nd.zeros((2, 2)))
    with pytest.raises(UserWarning):
        trainer.step(2)
    w_unused, w_used = _np(unused.weight.data()), _np(used.weight.data())
    trainer.step(2, ignore_stale_grad=True)
    assert np.array_equal(_np(unused.weight.data()), w_unused)
    assert not np.array_equal(_np(used.weight.data()), w_used)


def test_trainer_lr_wd_mult_and_null_grad():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.weight.lr_mult = 0.0
    net.bias.grad_req = "null"
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    w, b = _np(net.weight.data()), _np(net.bias.data())
    _l2_step(net, nd.ones((2, 3)), nd.ones((2, 2)) * 5)
    trainer.step(2)
    assert np.array_equal(_np(net.weight.data()), w)
    assert np.array_equal(_np(net.bias.data()), b)


def test_trainer_save_load_states(tmp_path):
    def make():
        net = nn.Dense(2, in_units=3, prefix="d_")
        net.initialize(mx.init.Constant(0.1))
        return net, gluon.Trainer(
            net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9}
        )

    x = nd.array(np.random.normal(size=(4, 3)).astype(np.float32))
    y = nd.array(np.random.normal(size=(4, 2)).astype(np.float32))
    net1, tr1 = make()
    for _ in range(2):
        _l2_step(net1, x, y)
        tr1.step(4)
    states = str(tmp_path / "trainer.states")
    params = str(tmp_path / "net.params")
    tr1.save_states(states)
    net1.save_parameters(params)

    net2, tr2 = make()
    net2.load_parameters(params)
    tr2.load_states(states)
    for net, tr in ((net1, tr1), (net2, tr2)):
        _l2_step(net, x, y)
        tr.step(4)
    _close(_np(net2.weight.data()), _np(net1.weight.data()), rtol=1e-6)

    net3, tr3 = make()  # without the momentum state the result differs
    net3.load_parameters(params)
    _l2_step(net3, x, y)
    tr3.step(4)
    assert not np.allclose(_np(net3.weight.data()), _np(net1.weight.data()))

    bad = str(tmp_path / "bad.states")
    with open(bad, "wb") as f:
        f.write(b"garbage")
    with pytest.raises(MXNetError):
        tr3.load_states(bad)


def test_trainer_rejects_bad_params():
    with pytest.raises(ValueError):
        gluon.Trainer(5, "sgd")
    with pytest.raises(ValueError):
        gluon.Trainer([1, 2], "sgd")
    with pytest.raises(ValueError):
        gluon.Trainer(
            nn.Dense(1, in_units=1).collect_params(), mx.optimizer.SGD(), {"learning_rate": 0.1}
        )


def test_trainer_multiple_contexts():
    try:
        ctxs = [cpu(0), cpu(1)]
        nd.zeros((1,), ctx=ctxs[1]).asnumpy()
    except Exception:  # noqa: BLE001
        pytest.skip("a second CPU context is not available")
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.5), ctx=ctxs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = np.random.normal(size=(4, 3)).astype(np.float32)
    y = np.random.normal(size=(4, 2)).astype(np.float32)
    xs = gluon.utils.split_and_load(nd.array(x), ctxs)
    ys = gluon.utils.split_and_load(nd.array(y), ctxs)
    with autograd.record():
        losses = [gluon.loss.L2Loss()(net(a), b) for a, b in zip(xs, ys)]
    for loss in losses:
        loss.backward()
    trainer.step(4)
    w = np.full((2, 3), 0.5, dtype=np.float32)
    grad_w = (x @ w.T - y).T @ x / 2  # d/dw of sum_i mean_j 0.5*(x_i w^T - y_i)_j^2
    w0, w1 = (_np(net.weight.data(c)) for c in ctxs)
    _close(w0, w - 0.1 * grad_w / 4, rtol=1e-4)
    assert np.array_equal(w0, w1)


# ---- the seed training loop ----------------------------------------------------------------
def test_seed_training_loop_runs():
    net = gluon.nn.Dense(10)
    ce = gluon.loss.SoftmaxCELoss()
    net.initialize()
    data = nd.random.uniform(shape=(1024, 100))
    label = nd.array(np.random.randint(0, 10, (1024,)), dtype="int32")
    train_data = gluon.data.DataLoader(
        gluon.data.ArrayDataset(data, label), batch_size=128, shuffle=True, num_workers=2
    )
    trainer = gluon.Trainer(net.collect_params(), optimizer="sgd")
    latest, seen, batches = None, [], 0
    for x, y in train_data:
        with autograd.record():
            out = net(x)
            prev, latest = latest, ce(out, y)  # the seed's LossBuffer: read one batch late
        latest.backward()
        trainer.step(x.shape[0])
        if prev is not None:
            seen.append(float(np.mean(prev.asnumpy())))
        batches += 1
    assert batches == 8 and len(seen) == 7
    assert all(np.isfinite(seen)) and all(1.5 < v < 3.5 for v in seen)


def test_training_reduces_loss():
    # Seed the initializer and the shuffle: with lr 0.5 some random states do not converge
    # in 4 epochs, so the outcome must not depend on what ran before.
    mx.random.seed(0)
    np.random.seed(0)
    rng = np.random.RandomState(0)
    x = rng.uniform(size=(1024, 100)).astype(np.float32)
    teacher = rng.normal(size=(100, 10)).astype(np.float32)
    y = (x @ teacher).argmax(axis=1).astype(np.int32)
    net = gluon.nn.Dense(10)
    net.initialize()
    ce = gluon.loss.SoftmaxCELoss()
    loader = gluon.data.DataLoader(
        gluon.data.ArrayDataset(nd.array(x), nd.array(y, dtype="int32")),
        batch_size=128,
        shuffle=True,
        num_workers=2,
    )
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    epoch_means = []
    for _ in range(4):
        total = None
        for xb, yb in loader:
            with autograd.record():
                loss = ce(net(xb), yb)
            loss.backward()
            trainer.step(xb.shape[0])
            total = loss.sum() if total is None else total + loss.sum()
        epoch_means.append(float(total.asnumpy().reshape(-1)[0]) / 1024)
    assert epoch_means[-1] < epoch_means[0] - 0.2, epoch_means
