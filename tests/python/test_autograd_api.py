"""The ``autograd`` API: higher-order gradients, retain_graph, grad_req='add',
mark_variables, detach, custom Functions, recording/training flags, and the asynchrony
of ``backward()``."""

import time

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd
from ferromx.base import MXNetError
from ferromx.test_utils import check_numeric_gradient
from numpy.testing import assert_allclose

F64 = "float64"


def _rs(seed=0):
    return np.random.RandomState(seed)


def _check(fn, *arrays):
    check_numeric_gradient(
        fn,
        [np.asarray(a, dtype=np.float64) for a in arrays],
        numeric_eps=1e-5,
        rtol=1e-4,
        atol=1e-6,
    )


# ----------------------------------------------------------------------------- autograd API


def _var(values, req="write"):
    x = nd.array(np.asarray(values, dtype=np.float64), dtype=F64)
    x.attach_grad(grad_req=req)
    return x


def test_grad_create_graph_second_derivative():
    x = _var([1.0, -2.0, 3.0])
    with autograd.record():
        y = x**3
        dy = autograd.grad(y, x, create_graph=True)[0]  # 3x^2, itself recorded (a list, as MXNet)
    assert_allclose(dy.asnumpy(), 3 * x.asnumpy() ** 2)
    dy.backward()
    assert_allclose(x.grad.asnumpy(), 6 * x.asnumpy())


def test_grad_returns_gradients_without_touching_dot_grad():
    x, w = _var([1.0, 2.0]), _var([3.0, -1.0])
    with autograd.record():
        y = (x * w).sum()
    gx, gw = autograd.grad(y, [x, w])
    with autograd.record():
        y2 = (x * w).sum()
    (only,) = autograd.grad(y2, x)  # one variable: still a list of one
    assert_allclose(only.asnumpy(), [3.0, -1.0])
    assert_allclose(gx.asnumpy(), [3.0, -1.0])
    assert_allclose(gw.asnumpy(), [1.0, 2.0])
    assert_allclose(x.grad.asnumpy(), [0.0, 0.0])


def test_retain_graph():
    x = _var([1.0, 2.0])
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    assert_allclose(x.grad.asnumpy(), [2.0, 4.0])
    y.backward()  # graph kept by the first call; grad_req='write' overwrites
    assert_allclose(x.grad.asnumpy(), [2.0, 4.0])
    with pytest.raises(MXNetError, match="retain_graph"):
        y.backward()  # freed by the second
    with pytest.raises(MXNetError, match="retain_graph"):
        autograd.backward([y])


def test_grad_req_add_accumulates():
    x = _var([1.0, 2.0, 3.0], req="add")
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    assert_allclose(x.grad.asnumpy(), 3 * 2 * x.asnumpy())
    x.grad[:] = 0
    with autograd.record():
        y = (x * 5).sum()
    y.backward()
    assert_allclose(x.grad.asnumpy(), [5.0, 5.0, 5.0])


def test_mark_variables():
    x = nd.array([1.0, 2.0], dtype=F64)
    gbuf = nd.zeros((2,), dtype=F64)
    autograd.mark_variables([x], [gbuf])
    with autograd.record():
        y = (x * x * x).sum()
    y.backward()
    assert_allclose(gbuf.asnumpy(), [3.0, 12.0])
    acc = nd.ones((2,), dtype=F64)
    autograd.mark_variables(x, acc, grad_reqs="add")
    with autograd.record():
        y = (x * 2).sum()
    y.backward()
    assert_allclose(acc.asnumpy(), [3.0, 3.0])


def test_detach_stops_gradient():
    x = _var([1.0, 2.0])
    with autograd.record():
        d = (x * x).detach()
        y = (d * x).sum()  # d is a constant: dy/dx = x^2
    y.backward()
    assert_allclose(x.grad.asnumpy(), [1.0, 4.0])


class _Sigmoid(autograd.Function):
    def forward(self, x):
        y = 1 / (1 + nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        (y,) = self.saved_tensors
        return dy * y * (1 - y)


def test_custom_function_matches_builtin():
    vals = _rs(1).normal(size=(3, 4))
    x1, x2 = _var(vals), _var(vals)
    w = nd.array(_rs(2).normal(size=(3, 4)), dtype=F64)
    with autograd.record():
        a = (_Sigmoid()(x1) * w).sum()
        b = (nd.sigmoid(x2) * w).sum()
    a.backward()
    b.backward()
    assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12)
    assert_allclose(x1.grad.asnumpy(), x2.grad.asnumpy(), rtol=1e-12)
    _check(lambda t: _Sigmoid()(t), vals)


def test_custom_function_with_two_inputs():
    class Mul(autograd.Function):
        def forward(self, a, b):
            self.save_for_backward(a, b)
            return a * b

        def backward(self, dy):
            a, b = self.saved_tensors
            return dy * b, dy * a

    _check(lambda a, b: Mul()(a, b), _rs(1).normal(size=(2, 3)), _rs(2).normal(size=(2, 3)))


def test_pause_inside_record():
    x = _var([1.0, 2.0])
    with autograd.record():
        assert autograd.is_recording()
        with autograd.pause():
            assert not autograd.is_recording()
            c = x * 10  # not recorded: a constant
        assert autograd.is_recording()
        y = (c * x).sum()
    assert not autograd.is_recording()
    y.backward()
    assert_allclose(x.grad.asnumpy(), [10.0, 20.0])


def test_training_flags():
    assert not autograd.is_training()
    with autograd.record():
        assert autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
        with autograd.train_mode():
            assert autograd.is_training()
        assert not autograd.is_training()
    with autograd.record(), autograd.predict_mode():
        assert not autograd.is_training() and autograd.is_recording()
    assert not autograd.is_recording() and not autograd.is_training()


@pytest.mark.skipif(mx.engine.is_naive(), reason="NaiveEngine runs ops synchronously")
def test_backward_returns_before_gradient_ops_complete():
    x = _var([1.0, 2.0, 3.0])
    x.wait_to_read()
    nd._native._sleep_op(x, 400)  # the gradient (2x) reads x: it must wait for this op
    with autograd.record():
        y = (x * x).sum()
    t0 = time.perf_counter()
    y.backward()
    elapsed = time.perf_counter() - t0
    ready = x.grad.is_ready()
    assert not ready, "x.grad was ready right after backward(): backward blocked"
    assert elapsed < 0.2, f"backward() blocked for {elapsed:.3f}s"
    x.grad.wait_to_read()
    assert x.grad.is_ready()
    assert_allclose(x.grad.asnumpy(), [2.0, 4.0, 6.0])
