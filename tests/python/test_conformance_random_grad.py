"""Conformance fixes from MXNet 1.9.1's test_higher_order_grad.py, test_exc_handling.py and
test_random.py (issue 11): piecewise-constant gradients differentiate to zeros, bad
distribution parameters fail at the read, and ``mx.sym.random``."""

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd
from ferromx.base import MXNetError


def _second_order(op, x_np, head=None):
    x = nd.array(x_np, dtype="float64")
    x.attach_grad()
    head = nd.array(np.full(x_np.shape, 2.0) if head is None else head, dtype="float64")
    with autograd.record():
        g = autograd.grad(op(x), [x], head_grads=head, create_graph=True, retain_graph=True)[0]
    g.backward(nd.ones_like(g))
    return g.asnumpy(), x.grad.asnumpy()


X = np.array([-1.0, 0.3, 0.6, 2.0])


def test_clip_second_derivative_is_zero():
    # test_higher_order_grad.py::test_clip: MXNet 1.9.1 gives zeros.
    g, gg = _second_order(lambda x: nd.clip(x, 0.0, 1.0), X)
    np.testing.assert_array_equal(g, 2.0 * ((X >= 0) & (X <= 1)))
    np.testing.assert_array_equal(gg, np.zeros(4))


@pytest.mark.parametrize("name,c", [("radians", np.pi / 180), ("degrees", 180 / np.pi)])
def test_constant_derivative_second_order_is_zero(name, c):
    # test_higher_order_grad.py::test_radians.
    g, gg = _second_order(getattr(nd, name), X)
    np.testing.assert_allclose(g, 2.0 * c, rtol=1e-12)
    np.testing.assert_array_equal(gg, np.zeros(4))


def test_zero_derivative_second_order_is_zero():
    g, gg = _second_order(nd.floor, X)
    np.testing.assert_array_equal(g, np.zeros(4))
    np.testing.assert_array_equal(gg, np.zeros(4))


def test_third_order_of_constant_derivative_is_zero():
    x = nd.array(X)
    x.attach_grad()
    with autograd.record():
        g1 = autograd.grad(nd.radians(x), [x], create_graph=True, retain_graph=True)[0]
        g2 = autograd.grad(g1, [x], create_graph=True, retain_graph=True)[0]
    g2.backward()
    np.testing.assert_array_equal(g2.asnumpy(), np.zeros(4))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(4))


def test_dropout_second_derivative_is_zero():
    # test_higher_order_grad.py::test_dropout: the first derivative is the scaled mask.
    mx.random.seed(7)
    xs = np.linspace(0.5, 1.5, 64)
    with autograd.train_mode():
        g, gg = _second_order(lambda x: nd.Dropout(x, p=0.5), xs)
    assert set(np.unique(g).tolist()) <= {0.0, 4.0} and 0 < (g == 4.0).sum() < 64
    np.testing.assert_array_equal(gg, np.zeros(64))


def test_dropout_p_one_gives_zeros():
    # MXNet 1.9.1 accepts p=1 (test_exc_handling.py::test_exc_gluon) and gives NaN
    # (0 * 1/(1-p)); ferromx gives zeros (docs/for-mxnet-users.md).
    x = nd.array([1.0, -2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = nd.Dropout(x, p=1.0)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(3))


def test_like_creators_have_zero_gradients():
    # MXNet: zeros_like/ones_like are differentiable with zero gradient.
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    for f in (nd.zeros_like, nd.ones_like):
        with autograd.record():
            y = f(x) * 3 + x
        y.backward()
        np.testing.assert_array_equal(x.grad.asnumpy(), [1.0, 1.0])


def test_bad_distribution_parameter_fails_at_the_read():
    # test_exc_handling.py::test_exc_imperative / test_exc_post_fail: the call returns,
    # the read (or waitall) raises, and an op consuming the failed array inherits it.
    nd.waitall()
    _g = nd.random.gamma(1, -1, shape=(2,))
    with pytest.raises(MXNetError, match="alpha and beta"):
        nd.waitall()
    nd.waitall()  # raised once
    b = nd.random.normal(0, -1, (2, 2))
    c = nd.dot(nd.ones((2, 2)), b)
    with pytest.raises(MXNetError, match="scale >= 0"):
        c.asnumpy()
    with pytest.raises(MXNetError, match="scale >= 0"):
        b.asnumpy()
    with pytest.raises(MXNetError, match="low <= high"):
        nd.random.uniform(2, 1, (3,)).wait_to_read()
    nd.waitall()


def test_sym_random_uniform_repeats_with_the_seed():
    # test_random.py::test_parallel_random_seed_setting: same seed, same samples, in nd
    # and in a bound symbol.
    shape = (20, 30)
    mx.random.seed(1234)
    a = nd.random.uniform(-1.5, 3.0, shape=shape).asnumpy()
    x = mx.sym.Variable("X")
    y = mx.sym.random.uniform(low=-1.5, high=3.0, shape=shape) + x
    ex = y.bind(mx.cpu(), {"X": nd.zeros(shape)}, {"X": nd.zeros(shape)})
    mx.random.seed(1234)
    ex.forward(is_train=True)
    s1 = ex.outputs[0].asnumpy()
    mx.random.seed(1234)
    ex.forward()
    np.testing.assert_array_equal(s1, ex.outputs[0].asnumpy())
    np.testing.assert_array_equal(s1, a)
    assert s1.min() >= -1.5 and s1.max() < 3.0


def test_sym_random_families():
    mx.random.seed(3)
    n = mx.sym.random.normal(loc=2.0, scale=0.5, shape=(4000,))
    v = n.bind(mx.cpu(), {}).forward()[0].asnumpy()
    assert abs(v.mean() - 2.0) < 0.05 and abs(v.std() - 0.5) < 0.05
    e = mx.sym.random.exponential(scale=2.0, shape=(4000,)).bind(mx.cpu(), {}).forward()[0]
    assert abs(e.asnumpy().mean() - 2.0) < 0.15
    alpha, beta = mx.sym.Variable("a"), mx.sym.Variable("b")
    g = mx.sym.random.gamma(alpha, beta, shape=(3000,))
    out = g.bind(mx.cpu(), {"a": nd.array([1.0, 4.0]), "b": nd.array([2.0, 0.5])}).forward()[0]
    assert out.shape == (2, 3000)
    np.testing.assert_allclose(out.asnumpy().mean(axis=1), [2.0, 2.0], rtol=0.1)
    p = mx.sym.Variable("P")
    m = mx.sym.random.multinomial(data=p, shape=5000).bind(
        mx.cpu(), {"P": nd.array([0.0, 0.25, 0.75])}).forward()[0].asnumpy()
    freq = np.bincount(m.astype(int), minlength=3) / 5000
    np.testing.assert_allclose(freq, [0.0, 0.25, 0.75], atol=0.03)
    d = mx.sym.Variable("d")
    sh = mx.sym.random.shuffle(d).bind(mx.cpu(), {"d": nd.arange(10)}).forward()[0]
    np.testing.assert_array_equal(np.sort(sh.asnumpy()), np.arange(10))
    with pytest.raises(MXNetError, match="sym.random.normal"):
        mx.sym.random.normal(loc=mx.sym.Variable("l"), scale=1.0)


def test_unique_zipfian_rows_are_distinct_and_count_draws():
    # test_random.py::test_unique_zipfian_generator.
    mx.random.seed(11)
    classes, tries = nd._internal._sample_unique_zipfian(1000, shape=(3, 200))
    assert classes.shape == (3, 200) and classes.dtype == np.int64 and tries.shape == (3,)
    c = classes.asnumpy()
    for row, t in zip(c, tries.asnumpy()):
        assert np.unique(row).size == 200 and row.min() >= 0 and row.max() < 1000
        assert t >= 200
    with pytest.raises(MXNetError, match="num_sampled"):
        nd._internal._sample_unique_zipfian(10, shape=(1, 11))


def test_rand_zipfian_expected_counts():
    # test_random.py::test_zipfian_generator: P(c) = log((c+2)/(c+1)) / log(range_max+1).
    mx.random.seed(5)
    true = nd.array([0, 3, 19], dtype="int32")
    s, e_true, e_s = nd.contrib.rand_zipfian(true, 1000, 20)
    prob = lambda c: np.log((c + 2.0) / (c + 1.0)) / np.log(21.0)
    assert s.dtype == np.int64 and s.shape == (1000,)
    np.testing.assert_allclose(e_true.asnumpy(), 1000 * prob(np.array([0, 3, 19])))
    np.testing.assert_allclose(e_s.asnumpy(), 1000 * prob(s.asnumpy()))
    freq = np.bincount(s.asnumpy(), minlength=20) / 1000
    np.testing.assert_allclose(freq, prob(np.arange(20)), atol=0.05)
    outs = mx.sym.Group(mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 50, 20))
    got = outs.bind(mx.cpu(), {"t": true}).forward()
    np.testing.assert_allclose(got[1].asnumpy(), e_true.asnumpy() / 20)


def test_multinomial_log_prob_gradient_skips_zero_classes():
    # test_random.py::test_sample_multinomial: d(5 * log p[y])/dp = 5 / p[y] at the sampled
    # classes only (class 0 has probability zero: no NaN).
    x = nd.array([0.0, 0.1, 0.2, 0.3, 0.4])
    dx = nd.zeros_like(x)
    mx.contrib.autograd.mark_variables([x], [dx])
    with autograd.record():
        y, prob = nd.random.multinomial(x, shape=500, get_prob=True)
        (prob * 5).backward()
    ys = y.asnumpy().astype(int)
    want = np.bincount(ys, minlength=5) * 5.0 / np.array([1.0, 0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(dx.asnumpy(), want, rtol=1e-5)
    np.testing.assert_allclose(prob.asnumpy(), np.log(x.asnumpy()[ys]), rtol=1e-6)


@pytest.mark.parametrize("dtype,k", [("uint8", 257), ("float16", 2050)])
def test_multinomial_rejects_categories_beyond_the_dtype(dtype, k):
    with pytest.raises(MXNetError, match="do not fit"):
        nd.random.multinomial(nd.ones((k,)) / k, dtype=dtype)
    nd.random.multinomial(nd.ones((k - 1,)) / k, dtype=dtype).wait_to_read()
