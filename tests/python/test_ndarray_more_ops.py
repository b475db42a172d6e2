"""More operators against NumPy: creation, random sampling, 0-d and zero-size arrays,
index/sort ops (tile ... topk), NN ops and optimizer update ops."""

import math

import ferromx as mx
import numpy as np
import pytest
from ndarr_helper import ndarr
from numpy.testing import assert_allclose, assert_array_equal

nd = mx.nd


def rand(shape, lo=-1.0, hi=1.0, dtype="float32", seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)


def check(res, expected, rtol=1e-5, atol=1e-6, dtype=None):
    got = res.asnumpy()
    expected = np.asarray(expected)
    if expected.shape == () and got.shape == (1,) and not res._is_np:
        expected = expected.reshape(1)  # legacy nd: a full reduction has shape (1,) (MXNet)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- creation


def test_creation_functions():
    check(nd.zeros((2, 3)), np.zeros((2, 3)), dtype="float32")
    check(nd.zeros(4, dtype="int64"), np.zeros(4), dtype="int64")
    check(nd.ones((3,), dtype=np.float16), np.ones(3), dtype="float16")
    check(nd.full((2, 2), 7, dtype="int32"), np.full((2, 2), 7), dtype="int32")
    check(nd.full((2,), 2.5), [2.5, 2.5], dtype="float32")
    check(nd.empty((2, 3)), np.zeros((2, 3)))
    check(nd.arange(5), np.arange(5), dtype="float32")
    check(nd.arange(2, 11, 3), np.arange(2, 11, 3))
    check(nd.arange(0, 2, 0.25), np.arange(0, 2, 0.25))
    check(nd.arange(5, 0, -1.5), np.arange(5, 0, -1.5))
    check(nd.arange(3, repeat=2), np.repeat(np.arange(3), 2))
    check(nd.arange(1, 4, repeat=3, dtype="int32"), np.repeat(np.arange(1, 4), 3), dtype="int32")
    check(nd.linspace(0, 1, 5), np.linspace(0, 1, 5))
    check(nd.linspace(-2, 3, 7, endpoint=False), np.linspace(-2, 3, 7, endpoint=False))
    check(nd.eye(3), np.eye(3))
    check(nd.eye(3, 5, k=1), np.eye(3, 5, k=1))
    check(nd.eye(4, k=-2, dtype="int64"), np.eye(4, k=-2), dtype="int64")
    x = ndarr(rand((2, 3), dtype="float64"))
    check(nd.zeros_like(x), np.zeros((2, 3)), dtype="float64")
    check(nd.ones_like(x), np.ones((2, 3)), dtype="float64")
    check(x.zeros_like(), np.zeros((2, 3)))
    check(nd.full_like(x, 4.5), np.full((2, 3), 4.5), dtype="float64")
    assert nd.zeros((0, 4)).shape == (0, 4)


# ----------------------------------------------------------------------------- random


def test_random_uniform_normal_ranges_and_moments():
    u = nd.random.uniform(-2, 3, shape=(20000,)).asnumpy()
    assert u.dtype == np.float32 and u.min() >= -2 and u.max() < 3
    assert abs(u.mean() - 0.5) < 0.1 and abs(u.std() - 5 / math.sqrt(12)) < 0.1
    n = nd.random.normal(1.5, 2.0, shape=(100, 200)).asnumpy()
    assert n.shape == (100, 200)
    assert abs(n.mean() - 1.5) < 0.1 and abs(n.std() - 2.0) < 0.1
    d = nd.random.uniform(shape=(3, 4), dtype="float64")
    assert d.dtype == np.float64 and d.shape == (3, 4)
    r = nd.random.randint(-3, 4, shape=(5000,)).asnumpy()
    assert r.dtype == np.int32 and r.min() == -3 and r.max() == 3
    assert nd.random.randn(2, 3).shape == (2, 3)


def test_random_seed_reproducibility():
    mx.random.seed(123)
    a = nd.random.uniform(shape=(50,)).asnumpy()
    b = nd.random.normal(shape=(50,)).asnumpy()
    mx.random.seed(123)
    a2 = nd.random.uniform(shape=(50,)).asnumpy()
    b2 = nd.random.normal(shape=(50,)).asnumpy()
    assert_array_equal(a, a2)
    assert_array_equal(b, b2)
    c = nd.random.uniform(shape=(50,)).asnumpy()
    assert not np.array_equal(a, c)
    mx.random.seed(124)
    assert not np.array_equal(a, nd.random.uniform(shape=(50,)).asnumpy())


def test_random_other_distributions():
    e = nd.random.exponential(2.0, shape=(20000,)).asnumpy()
    assert e.min() >= 0 and abs(e.mean() - 2.0) < 0.1
    g = nd.random.gamma(2.0, 3.0, shape=(20000,)).asnumpy()
    assert g.min() >= 0 and abs(g.mean() - 6.0) < 0.25
    p = nd.random.poisson(4.0, shape=(20000,)).asnumpy()
    assert (p == np.round(p)).all() and abs(p.mean() - 4.0) < 0.1
    x = ndarr(np.arange(20, dtype=np.float32).reshape(10, 2))
    y = nd.random.shuffle(x).asnumpy()
    assert_array_equal(np.sort(y[:, 0]), np.arange(0, 20, 2))
    assert_array_equal(y[:, 1] - y[:, 0], np.ones(10))  # rows move whole


def test_random_multinomial():
    s = nd.random.multinomial(ndarr([0.1, 0.2, 0.7]), shape=20000).asnumpy()
    assert s.dtype == np.int32 and s.shape == (20000,)
    assert_allclose(np.bincount(s, minlength=3) / 20000.0, [0.1, 0.2, 0.7], atol=0.02)
    p = ndarr([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert_array_equal(nd.random.multinomial(p).asnumpy(), [0, 2])
    assert_array_equal(nd.random.multinomial(p, shape=4).asnumpy(), [[0] * 4, [2] * 4])


def test_random_multinomial_tuple_shape():
    p = ndarr([[0.5, 0.5], [0.2, 0.8]])
    assert nd.random.multinomial(p, shape=(2, 3)).shape == (2, 2, 3)


# ----------------------------------------------------------------------------- 0-d, zero-size


def test_zero_d_arrays():
    s = ndarr(6.0)  # a 0-d array (legacy full reductions give (1,), as in MXNet)
    assert s.ndim == 0 and s.size == 1
    check(s + 1, np.float32(7))
    check(s * ndarr([1.0, 2.0]), [6.0, 12.0])
    check(nd.exp(s * 0), np.float32(1))
    assert s.asscalar() == 6.0
    z = ndarr(5.0)  # 0-d (legacy reshape of a vector to () gives (1,))
    assert z.shape == () and z.item() == 5.0
    check(z.reshape((1, 1)), [[5.0]])


def test_zero_size_arrays():
    z = nd.zeros((0, 3))
    for res in [z + 1, nd.exp(z), z * nd.ones((1, 3)), nd.transpose(z), z.reshape((0, 1, 3)),
                nd.concat(z, z, dim=0), nd.relu(z), z.astype("int32")]:
        assert res.size == 0
        assert res.asnumpy().size == 0
    check(nd.concat(z, nd.ones((2, 3)), dim=0), np.ones((2, 3)))
    assert (z + 1).shape == (0, 3)
    assert nd.take(nd.ones((3, 2)), ndarr(np.zeros(0))).shape == (0, 2)


def test_broadcast_like_zero_size_target():
    assert nd.broadcast_like(nd.ones((1, 3)), nd.zeros((0, 3))).shape == (0, 3)


# ----------------------------------------------------------------------------- fast kernels


def test_exp_extremes_float32():
    x = np.array([-np.inf, -104.0, -100.0, -88.0, -87.3, 0.0, 1e-8, 50.0, 88.0, 89.0, np.inf,
                  np.nan], np.float32)
    with np.errstate(over="ignore"):
        ref = np.exp(x)
    got = nd.exp(ndarr(np.tile(x, 300))).asnumpy()[: x.size]  # large enough for any fast path
    assert_allclose(got, ref, rtol=1e-6, atol=0, equal_nan=True)


def test_exp_float32_just_below_overflow():
    x = np.array([88.4, 88.6, 88.7], np.float32)
    got = nd.exp(ndarr(np.tile(x, 300))).asnumpy()[:3]
    assert_allclose(got, np.exp(x), rtol=1e-6)


# ----------------------------------------------------------------------------- index / sort ops


def test_tile_repeat_flip_moveaxis():
    x = rand((2, 3, 4), seed=1)
    a = ndarr(x)
    for reps in [(2, 1, 1), (2,), (1, 2, 1, 3), (1, 1, 0)]:
        check(nd.tile(a, reps=reps), np.tile(x, reps))
    check(a.tile((1, 2, 1)), np.tile(x, (1, 2, 1)))
    for axis in [0, 1, -1, None]:
        check(nd.repeat(a, repeats=3, axis=axis), np.repeat(x, 3, axis=axis))
    check(a.repeat(2, axis=0), np.repeat(x, 2, axis=0))
    for axis in [0, 2, (0, 1), (-1, 0)]:
        check(nd.flip(a, axis=axis), np.flip(x, axis=axis))
        check(nd.reverse(a, axis=axis), np.flip(x, axis=axis))
    for src, dst in [(0, -1), (2, 0), ((0, 1), (2, 0))]:
        check(nd.moveaxis(a, src, dst), np.moveaxis(x, src, dst))


def test_gather_scatter_nd():
    x = rand((3, 4, 2), seed=2)
    idx = np.array([[0, 2, -1], [1, 3, 0]])
    check(nd.gather_nd(ndarr(x), ndarr(idx)), x[tuple(idx)])
    check(nd.gather_nd(ndarr(x), ndarr(idx[:1])), x[idx[0]])
    data = np.array([5.0, 6.0, 7.0], np.float32)
    out = np.zeros((3, 4), np.float32)
    sidx = np.array([[0, 2, 1], [1, 3, 0]])
    out[tuple(sidx)] = data
    check(nd.scatter_nd(ndarr(data), ndarr(sidx), shape=(3, 4)), out)
    bad = nd.gather_nd(ndarr(x), ndarr([[5], [0]]))
    with pytest.raises(IndexError):
        bad.asnumpy()


@pytest.mark.parametrize("begin,end,step,key", [
    ((0, 1), (2, 3), (), np.s_[0:2, 1:3]),
    ((None, 1), (None, 3), (None, 2), np.s_[:, 1:3:2]),
    ((1, 2), (None, None), (-1, -1), np.s_[1::-1, 2::-1]),
    ((-1,), (None,), (-2,), np.s_[::-2]),
    ((0, 0, 1), (2, 3, 4), (1, 2, 2), np.s_[0:2, 0:3:2, 1:4:2]),
    ((5,), (9,), (), np.s_[5:9]),
], ids=str)
def test_slice(begin, end, step, key):
    x = rand((4, 5, 6), seed=3)
    check(nd.slice(ndarr(x), begin=begin, end=end, step=step), x[key])


def test_slice_like_broadcast_axis_diag():
    x = rand((3, 4, 5), seed=4)
    check(nd.slice_like(ndarr(x), nd.zeros((2, 3, 4))), x[:2, :3, :4])
    check(nd.slice_like(ndarr(x), nd.zeros((1, 2)), axes=(1,)), x[:, :2])
    y = rand((1, 3, 1), seed=5)
    check(nd.broadcast_axis(ndarr(y), axis=(0, 2), size=(2, 4)), np.broadcast_to(y, (2, 3, 4)))
    check(nd.broadcast_axes(ndarr(y), axis=2, size=3), np.broadcast_to(y, (1, 3, 3)))
    v = rand((4,), seed=6)
    for k in [0, 1, -2]:
        check(nd.diag(ndarr(v), k=k), np.diag(v, k))
    m = rand((4, 5), seed=7)
    for k in [0, 2, -1]:
        check(nd.diag(ndarr(m), k=k), np.diag(m, k))
    t = rand((2, 3, 3), seed=8)
    check(nd.diag(ndarr(t), k=1, axis1=1, axis2=2), np.diagonal(t, 1, 1, 2))


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_argsort_topk(axis):
    x = rand((4, 6), seed=9)
    flat = x.reshape(-1) if axis is None else x
    ax = -1 if axis is None else axis
    check(nd.sort(ndarr(x), axis=axis), np.sort(flat, axis=ax))
    check(nd.sort(ndarr(x), axis=axis, is_ascend=False), -np.sort(-flat, axis=ax))
    arg = nd.argsort(ndarr(x), axis=axis)
    assert arg.dtype == np.float32
    check(arg, np.argsort(flat, axis=ax, kind="stable"))
    check(nd.argsort(ndarr(x), axis=axis, dtype="int64"), np.argsort(flat, axis=ax),
          dtype="int64")
    order = np.argsort(-flat, axis=ax, kind="stable")
    top = np.take(order, np.arange(2), axis=ax)
    check(nd.topk(ndarr(x), axis=axis, k=2), top)
    check(nd.topk(ndarr(x), axis=axis, k=2, ret_typ="value"),
          np.take_along_axis(flat, top, axis=ax))
    vals, idx = nd.topk(ndarr(x), axis=axis, k=2, ret_typ="both")
    check(idx, top)
    check(vals, np.take_along_axis(flat, top, axis=ax))
    low = np.take(np.argsort(flat, axis=ax, kind="stable"), np.arange(3), axis=ax)
    check(nd.topk(ndarr(x), axis=axis, k=3, is_ascend=True), low)
    if axis is not None:
        mask = np.zeros_like(x)
        np.put_along_axis(mask, top, 1, axis=ax)
        check(nd.topk(ndarr(x), axis=axis, k=2, ret_typ="mask"), mask)


# ----------------------------------------------------------------------------- NN ops


def test_fully_connected():
    x, w, b = rand((4, 2, 3), seed=10), rand((5, 6), seed=11), rand((5,), seed=12)
    ref = x.reshape(4, 6) @ w.T + b
    check(nd.FullyConnected(ndarr(x), ndarr(w), ndarr(b), num_hidden=5), ref, rtol=1e-5)
    check(nd.FullyConnected(ndarr(x), ndarr(w), None, num_hidden=5, no_bias=True),
          x.reshape(4, 6) @ w.T, rtol=1e-5)
    w2 = rand((5, 3), seed=13)
    check(nd.FullyConnected(ndarr(x), ndarr(w2), ndarr(b), num_hidden=5, flatten=False),
          x @ w2.T + b, rtol=1e-5)


def test_activation_and_leaky_relu():
    x = rand((3, 4), -3, 3, seed=14)
    refs = {"relu": np.maximum(x, 0), "sigmoid": 1 / (1 + np.exp(-x)), "tanh": np.tanh(x),
            "softrelu": np.log1p(np.exp(x)), "softsign": x / (1 + np.abs(x))}
    for act, ref in refs.items():
        check(nd.Activation(ndarr(x), act_type=act), ref, rtol=1e-5, atol=1e-6)
    check(nd.LeakyReLU(ndarr(x), act_type="leaky", slope=0.1), np.where(x > 0, x, 0.1 * x))
    check(nd.LeakyReLU(ndarr(x), act_type="elu", slope=0.7),
          np.where(x > 0, x, 0.7 * np.expm1(x)), rtol=1e-5)
    lam, alpha = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
    check(nd.LeakyReLU(ndarr(x), act_type="selu"),
          lam * np.where(x > 0, x, alpha * np.expm1(x)), rtol=1e-5)
    erf = np.vectorize(math.erf)
    check(nd.LeakyReLU(ndarr(x), act_type="gelu"), 0.5 * x * (1 + erf(x / math.sqrt(2))),
          rtol=1e-4, atol=1e-5)
    gamma = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    x4 = rand((2, 4, 3), -1, 1, seed=15)
    check(nd.LeakyReLU(ndarr(x4), ndarr(gamma), act_type="prelu"),
          np.where(x4 > 0, x4, gamma[None, :, None] * x4))


def test_softmax_losses_smooth_l1():
    pred = rand((4, 5), -2, 2, seed=16)
    label = np.array([0, 4, 2, 1])
    logp = pred - np.log(np.exp(pred).sum(1, keepdims=True))
    ce = -logp[np.arange(4), label]
    check(nd.softmax_ce_loss(ndarr(pred), ndarr(label)), ce, rtol=1e-5)
    check(nd.softmax_cross_entropy(ndarr(pred), ndarr(label)), [ce.sum()], rtol=1e-5)
    x = rand((10,), -2, 2, seed=17)
    for sigma in [1.0, 2.0]:
        s2 = sigma ** 2
        ref = np.where(np.abs(x) < 1 / s2, 0.5 * s2 * x * x, np.abs(x) - 0.5 / s2)
        check(nd.smooth_l1(ndarr(x), scalar=sigma), ref, rtol=1e-5)


def test_dropout_layernorm_embedding():
    x = nd.ones((10000,))
    check(nd.Dropout(x, p=0.5), np.ones(10000))  # not training: identity
    d = nd.Dropout(x, p=0.3, mode="always").asnumpy()
    assert set(np.unique(d)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((d == 0).mean() - 0.3) < 0.03
    with mx.autograd.train_mode():
        assert (nd.Dropout(x, p=0.5).asnumpy() == 0).any()
    a = rand((3, 4, 5), seed=18)
    g, b = rand((5,), seed=19), rand((5,), seed=20)
    mu, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    check(nd.LayerNorm(ndarr(a), ndarr(g), ndarr(b), eps=1e-5),
          (a - mu) / np.sqrt(var + 1e-5) * g + b, rtol=1e-4, atol=1e-5)
    g1, b1 = rand((4,), seed=21), rand((4,), seed=22)
    mu, var = a.mean(1, keepdims=True), a.var(1, keepdims=True)
    check(nd.LayerNorm(ndarr(a), ndarr(g1), ndarr(b1), axis=1),
          (a - mu) / np.sqrt(var + 1e-5) * g1[:, None] + b1[:, None], rtol=1e-4, atol=1e-5)
    w = rand((6, 3), seed=23)
    idx = np.array([[0, 5], [2, 2]])
    check(nd.Embedding(ndarr(idx), ndarr(w), input_dim=6, output_dim=3), w[idx])


# ----------------------------------------------------------------------------- optimizer ops


def test_update_ops_follow_out_semantics():
    w0, g0 = rand((5,), seed=24), rand((5,), seed=25)
    lr, wd = 0.1, 0.01
    w, g = ndarr(w0), ndarr(g0)
    new = nd.sgd_update(w, g, lr=lr, wd=wd)
    check(new, w0 - lr * (g0 + wd * w0), rtol=1e-5)
    check(w, w0)  # without out=weight the weight is an input only, as in MXNet
    res = nd.sgd_update(w, g, lr=lr, wd=wd, out=w)
    assert res is w
    check(w, w0 - lr * (g0 + wd * w0), rtol=1e-5)
    w, mom = ndarr(w0), nd.zeros((5,))
    nd.sgd_mom_update(w, g, mom, lr=lr, momentum=0.9, out=w)
    check(mom, -lr * g0, rtol=1e-5)  # states are updated in place
    check(w, w0 - lr * g0, rtol=1e-5)
    w, mean, var = ndarr(w0), nd.zeros((5,)), nd.zeros((5,))
    nd.adam_update(w, g, mean, var, lr=lr, beta1=0.9, beta2=0.999, epsilon=1e-8, out=w)
    m, v = 0.1 * g0, 0.001 * g0 ** 2
    check(mean, m, rtol=1e-5)
    check(var, v, rtol=1e-5)
    check(w, w0 - lr * m / (np.sqrt(v) + 1e-8), rtol=1e-4)
    w = ndarr(w0)
    nd.sgd_update(w, ndarr(g0 * 100), lr=lr, rescale_grad=0.5, clip_gradient=1.0, out=w)
    check(w, w0 - lr * np.clip(g0 * 50, -1, 1), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_float16_float64_ops(dtype):
    rtol = 2e-3 if dtype == "float16" else 1e-10
    x = rand((3, 4), 0.1, 2.0, dtype=dtype, seed=26)
    a = ndarr(x)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(-1, keepdims=True))
    for res, ref in [(nd.softmax(a), e / e.sum(-1, keepdims=True)),
                     (nd.log_softmax(a), np.log(e / e.sum(-1, keepdims=True))),
                     (nd.dot(a, a.T), xd @ xd.T), (nd.sum(a, axis=1), xd.sum(1)),
                     (nd.mean(a), xd.mean()), (nd.norm(a), np.sqrt((xd ** 2).sum())),
                     (nd.sort(a), np.sort(xd)), (nd.clip(a, 0.5, 1.0), np.clip(xd, 0.5, 1.0)),
                     (nd.batch_dot(a.reshape((1, 3, 4)), a.T.reshape((1, 4, 3))), (xd @ xd.T)[None]),
                     (a ** 2 - a / 3, xd ** 2 - xd / 3)]:
        check(res, ref, rtol=rtol, atol=rtol, dtype=dtype)
    assert nd.argmax(a, axis=1).dtype == np.dtype(dtype)  # MXNet: the input dtype
    check(nd.argmax(a, axis=1), xd.argmax(1))
