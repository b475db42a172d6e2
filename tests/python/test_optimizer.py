"""Tests of ferromx.optimizer and ferromx.lr_scheduler against NumPy reference updates."""

import math

import ferromx as mx
import numpy as np
import pytest
from ferromx import lr_scheduler, nd
from ferromx import optimizer as opt

RTOL, ATOL = 1e-5, 1e-6


def _close(a, b, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(
        np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol
    )


def _data(steps=3, shape=(3, 4), seed=0):
    rng = np.random.RandomState(seed)
    w0 = rng.normal(size=shape).astype(np.float32)
    grads = [rng.normal(size=shape).astype(np.float32) for _ in range(steps)]
    return w0, grads


def _run(optimizer, w0, grads, index=0):
    weight = nd.array(w0)
    state = optimizer.create_state(index, weight)
    for g in grads:
        optimizer.update(index, weight, nd.array(g), state)
    return weight.asnumpy(), state


def test_sgd_plain():
    w0, grads = _data()
    lr, wd, rs = 0.1, 0.01, 0.5
    w, state = _run(opt.SGD(learning_rate=lr, wd=wd, rescale_grad=rs), w0, grads)
    assert state is None
    ref = w0.astype(np.float64)
    for g in grads:
        ref = ref - lr * (rs * g + wd * ref)
    _close(w, ref)


def test_sgd_clip_gradient():
    w0, grads = _data()
    lr, clip = 0.1, 0.3
    w, _ = _run(opt.SGD(learning_rate=lr, clip_gradient=clip, rescale_grad=2.0), w0, grads)
    ref = w0.astype(np.float64)
    for g in grads:
        ref = ref - lr * np.clip(2.0 * g, -clip, clip)
    _close(w, ref)
    # no clipping when clip_gradient is None
    w_free, _ = _run(opt.SGD(learning_rate=lr, rescale_grad=2.0), w0, grads)
    ref = w0.astype(np.float64)
    for g in grads:
        ref = ref - lr * 2.0 * g
    _close(w_free, ref)


def test_sgd_momentum():
    w0, grads = _data(steps=4)
    lr, mom, wd = 0.05, 0.9, 0.001
    w, state = _run(opt.SGD(learning_rate=lr, momentum=mom, wd=wd), w0, grads)
    ref = w0.astype(np.float64)
    m = np.zeros_like(ref)
    for g in grads:
        m = mom * m - lr * (g + wd * ref)
        ref = ref + m
    _close(w, ref)
    _close(state.asnumpy(), m)


def test_nag():
    w0, grads = _data(steps=3)
    lr, mom = 0.05, 0.9
    w, _ = _run(opt.NAG(learning_rate=lr, momentum=mom), w0, grads)
    ref = w0.astype(np.float64)
    m = np.zeros_like(ref)
    for g in grads:
        m = mom * m - lr * g
        ref = ref + mom * m - lr * g
    _close(w, ref)
    # one step with weight decay: the decayed gradient is used in both terms
    wd = 0.1
    w1, _ = _run(opt.NAG(learning_rate=lr, momentum=mom, wd=wd), w0, grads[:1])
    g = grads[0] + wd * w0
    _close(w1, w0 + mom * (-lr * g) - lr * g)
    # without momentum NAG is plain SGD
    w2, state = _run(opt.NAG(learning_rate=lr), w0, grads)
    assert state is None
    _close(w2, w0 - lr * sum(grads), rtol=1e-5, atol=1e-5)


def test_adam():
    w0, grads = _data(steps=4)
    lr, b1, b2, eps, wd, rs = 0.01, 0.8, 0.95, 1e-6, 0.01, 0.5
    w, state = _run(
        opt.Adam(learning_rate=lr, beta1=b1, beta2=b2, epsilon=eps, wd=wd, rescale_grad=rs),
        w0,
        grads,
    )
    ref = w0.astype(np.float64)
    m = np.zeros_like(ref)
    v = np.zeros_like(ref)
    for t, g in enumerate(grads, start=1):
        g = rs * g + wd * ref
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
        ref = ref - lr_t * m / (np.sqrt(v) + eps)
    _close(w, ref, rtol=1e-4, atol=1e-6)
    _close(state[0].asnumpy(), m, rtol=1e-4, atol=1e-6)
    _close(state[1].asnumpy(), v, rtol=1e-4, atol=1e-7)
    assert opt.Adam().learning_rate == 0.001


def test_adam_clip():
    w0, grads = _data(steps=2)
    lr, clip = 0.01, 0.2
    w, _ = _run(opt.Adam(learning_rate=lr, clip_gradient=clip), w0, grads)
    ref = w0.astype(np.float64)
    m = np.zeros_like(ref)
    v = np.zeros_like(ref)
    for t, g in enumerate(grads, start=1):
        g = np.clip(g, -clip, clip)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        ref = ref - lr * math.sqrt(1 - 0.999**t) / (1 - 0.9**t) * m / (np.sqrt(v) + 1e-8)
    _close(w, ref, rtol=1e-4, atol=1e-6)


def test_rmsprop():
    w0, grads = _data(steps=3)
    lr, g1, eps, wd = 0.01, 0.9, 1e-3, 0.01
    w, state = _run(opt.RMSProp(learning_rate=lr, gamma1=g1, epsilon=eps, wd=wd), w0, grads)
    assert isinstance(state, tuple) and len(state) == 1
    ref = w0.astype(np.float64)
    n = np.zeros_like(ref)
    for g in grads:
        g = g + wd * ref
        n = (1 - g1) * g * g + g1 * n
        ref = ref - lr * g / np.sqrt(n + eps)
    _close(w, ref, rtol=1e-4, atol=1e-6)
    _close(state[0].asnumpy(), n, rtol=1e-4, atol=1e-6)


def test_rmsprop_centered():
    w0, grads = _data(steps=3)
    lr, g1, g2, eps, wd = 0.01, 0.9, 0.8, 1e-3, 0.01
    o = opt.RMSProp(learning_rate=lr, gamma1=g1, gamma2=g2, epsilon=eps, wd=wd, centered=True)
    w, state = _run(o, w0, grads)
    assert isinstance(state, tuple) and len(state) == 3
    ref = w0.astype(np.float64)
    n, gm, d = np.zeros_like(ref), np.zeros_like(ref), np.zeros_like(ref)
    for g in grads:
        g = g + wd * ref
        n = (1 - g1) * g * g + g1 * n
        gm = (1 - g1) * g + g1 * gm
        d = g2 * d - lr * g / np.sqrt(n - gm * gm + eps)
        ref = ref + d
    _close(w, ref, rtol=1e-4, atol=1e-6)
    _close(state[2].asnumpy(), d, rtol=1e-4, atol=1e-6)


def test_adagrad():
    w0, grads = _data(steps=3)
    lr, eps, wd = 0.1, 1e-2, 0.01
    w, state = _run(opt.AdaGrad(learning_rate=lr, eps=eps, wd=wd), w0, grads)
    ref = w0.astype(np.float64)
    h = np.zeros_like(ref)
    for g in grads:
        h = h + g * g
        ref = ref - lr * (g / np.sqrt(h + eps) + wd * ref)
    _close(w, ref, rtol=1e-4, atol=1e-6)
    _close(state.asnumpy(), h, rtol=1e-5, atol=1e-6)
    assert opt.AdaGrad(epsilon=0.5).float_stable_eps == 0.5


def test_registry_and_create():
    assert isinstance(opt.create("sgd"), opt.SGD)
    assert isinstance(opt.create("Adam", learning_rate=0.1), opt.Adam)
    assert isinstance(opt.Optimizer.create_optimizer("rmsprop"), opt.RMSProp)
    assert isinstance(mx.optimizer.create("nag"), opt.NAG)
    assert isinstance(opt.create("adagrad"), opt.AdaGrad)
    with pytest.raises(ValueError):
        opt.create("no_such_optimizer")
    with pytest.raises(TypeError):
        opt.create("sgd", no_such_argument=1)

    @opt.register
    class MyTestOpt(opt.SGD):
        pass

    assert isinstance(opt.create("mytestopt"), MyTestOpt)
    assert opt.SGD().learning_rate == 0.01


def test_lr_and_wd_multipliers():
    class P:  # stands in for a gluon Parameter
        def __init__(self, lr_mult, wd_mult):
            self.lr_mult, self.wd_mult = lr_mult, wd_mult

    sgd = opt.SGD(learning_rate=1.0, wd=0.1, param_dict={0: P(0.5, 0.0), 1: P(1.0, 2.0)})
    w0 = np.ones((2,), np.float32)
    g = np.full((2,), 0.2, np.float32)
    w_a, _ = _run(sgd, w0, [g], index=0)
    w_b, _ = _run(sgd, w0, [g], index=1)
    _close(w_a, w0 - 0.5 * g)
    _close(w_b, w0 - (g + 0.2 * w0))

    named = opt.SGD(learning_rate=1.0, wd=0.1, param_idx2name={0: "fc_weight", 1: "fc_bias"})
    assert named._get_wd(0) == pytest.approx(0.1) and named._get_wd(1) == 0.0
    named.set_lr_mult({"fc_weight": 0.25})
    assert named._get_lr(0) == 0.25 and named._get_lr(1) == 1.0


def test_learning_rate_and_scheduler():
    sgd = opt.SGD(learning_rate=0.5)
    assert sgd.learning_rate == 0.5
    sgd.set_learning_rate(0.2)
    assert sgd.learning_rate == 0.2

    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    sgd = opt.SGD(lr_scheduler=sched)
    w, _ = _run(sgd, np.zeros((1,), np.float32), [np.ones((1,), np.float32)] * 3)
    _close(w, [-(1.0 + 0.5 + 0.25)])
    assert sgd.num_update == 3 and sgd.learning_rate == 0.25
    with pytest.raises(UserWarning):
        sgd.set_learning_rate(0.1)
    with pytest.warns(UserWarning):
        opt.SGD(learning_rate=0.3, lr_scheduler=lr_scheduler.FactorScheduler(1, base_lr=1.0))


def test_updater_states_roundtrip():
    sgd = opt.SGD(learning_rate=0.1, momentum=0.9)
    updater = opt.get_updater(sgd)
    w = nd.array(np.ones((2, 2), np.float32))
    updater(0, nd.array(np.ones((2, 2), np.float32)), w)
    blob = updater.get_states(dump_optimizer=True)
    other = opt.get_updater(opt.SGD())
    other.set_states(blob)
    assert other.optimizer.momentum == 0.9 and other.optimizer.lr == 0.1
    w2 = nd.array(w.asnumpy())
    updater(0, nd.array(np.ones((2, 2), np.float32)), w)
    other(0, nd.array(np.ones((2, 2), np.float32)), w2)
    _close(w2.asnumpy(), w.asnumpy())
    # momentum 0.9: second step moves by 0.1 + 0.9 * 0.1
    _close(w.asnumpy(), np.ones((2, 2)) - 0.1 - 0.19)


# ---- lr_scheduler ---------------------------------------------------------------------------
def test_factor_scheduler():
    s = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    assert [s(n) for n in range(1, 8)] == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125]
    s = lr_scheduler.FactorScheduler(step=1, factor=0.1, stop_factor_lr=0.05, base_lr=1.0)
    assert s(10) == 0.05
    with pytest.raises(ValueError):
        lr_scheduler.FactorScheduler(step=0)
    with pytest.raises(ValueError):
        lr_scheduler.FactorScheduler(step=1, factor=1.5)


def test_multifactor_scheduler():
    s = lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=0.1, base_lr=1.0)
    got = [s(n) for n in range(1, 7)]
    _close(got, [1.0, 1.0, 0.1, 0.1, 0.01, 0.01])
    with pytest.raises(ValueError):
        lr_scheduler.MultiFactorScheduler(step=[3, 2])


def test_cosine_and_poly_schedulers_with_warmup():
    s = lr_scheduler.CosineScheduler(
        max_update=10, base_lr=1.0, final_lr=0.0, warmup_steps=2, warmup_begin_lr=0.1
    )
    _close([s(0), s(1)], [0.1, 0.55])
    for n in (2, 6, 10):
        _close(s(n), (1 + math.cos(math.pi * (n - 2) / 8)) / 2)
    _close(s(15), 0.0)
    s = lr_scheduler.CosineScheduler(
        max_update=4,
        base_lr=2.0,
        final_lr=1.0,
        warmup_steps=2,
        warmup_begin_lr=0.5,
        warmup_mode="constant",
    )
    _close([s(0), s(1), s(3)], [0.5, 0.5, 1.0 + (1 + math.cos(math.pi / 2)) / 2])

    p = lr_scheduler.PolyScheduler(max_update=10, base_lr=1.0, pwr=2)
    _close([p(0), p(5), p(10)], [1.0, 0.25, 0.0])
    with pytest.raises(ValueError):
        lr_scheduler.CosineScheduler(max_update=10, base_lr=0.1, warmup_begin_lr=0.5)
    with pytest.raises(ValueError):
        lr_scheduler.LRScheduler(warmup_mode="cubic")
