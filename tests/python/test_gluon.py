"""Tests of ferromx.gluon blocks, parameters, layers, save/load and utils, and of
ferromx.initializer / test_utils / util, against NumPy reference computations.
Losses, the Trainer and training loops are in test_gluon_train.py."""

import os
import re

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx import init as _init  # noqa: F401  (makes mx.init available)
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


# ---- Dense and layers ----------------------------------------------------------------------
def test_dense_forward_matches_numpy():
    layer = nn.Dense(5, in_units=3)
    layer.initialize()
    x = np.random.uniform(-1, 1, (4, 3)).astype(np.float32)
    out = layer(nd.array(x))
    w, b = _np(layer.weight.data()), _np(layer.bias.data())
    assert w.shape == (5, 3) and b.shape == (5,)
    _close(_np(out), x @ w.T + b)
    # the default bias initializer is zeros, the weight is Uniform(0.07)
    assert np.all(b == 0)
    assert np.all(np.abs(w) <= 0.07) and np.any(w != 0)


def test_dense_activation_no_bias_flatten():
    x = np.random.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    layer = nn.Dense(6, activation="relu", use_bias=False)
    layer.initialize()
    out = _np(layer(nd.array(x)))
    w = _np(layer.weight.data())
    assert layer.bias is None and w.shape == (6, 12)
    _close(out, np.maximum(x.reshape(2, 12) @ w.T, 0))

    layer = nn.Dense(6, flatten=False)
    layer.initialize()
    out = _np(layer(nd.array(x)))
    w, b = _np(layer.weight.data()), _np(layer.bias.data())
    assert out.shape == (2, 3, 6) and w.shape == (6, 4)
    _close(out, x @ w.T + b)


def test_deferred_initialization():
    layer = nn.Dense(4)
    assert layer.weight.shape == (4, 0)
    layer.initialize()
    with pytest.raises(gluon.DeferredInitializationError):
        layer.weight.data()
    layer(nd.ones((2, 7)))
    assert layer.weight.shape == (4, 7)
    assert layer.weight.data().shape == (4, 7)


def test_uninitialized_parameter_errors():
    layer = nn.Dense(4, in_units=2)
    with pytest.raises(RuntimeError):
        layer.weight.data()
    with pytest.raises(RuntimeError):
        layer(nd.ones((1, 2)))


def test_names_and_prefixes():
    a, b = nn.Dense(2), nn.Dense(2)
    ma, mb = re.match(r"^dense(\d+)_$", a.prefix), re.match(r"^dense(\d+)_$", b.prefix)
    assert ma and mb and int(mb.group(1)) == int(ma.group(1)) + 1
    assert a.weight.name == a.prefix + "weight" and a.name == a.prefix[:-1]

    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(3), nn.Dense(4), nn.Activation("relu"))
    p = net.prefix
    assert re.match(r"^sequential\d+_$", p)
    assert sorted(net.collect_params().keys()) == sorted(
        [p + "dense0_weight", p + "dense0_bias", p + "dense1_weight", p + "dense1_bias"]
    )
    assert net[2].prefix == p + "relu0_"
    assert nn.Dense(3, prefix="fc_").weight.name == "fc_weight"


def test_collect_params_select():
    net = _mlp(in_units=4)
    weights = net.collect_params(".*weight")
    assert len(weights) == 2 and all(k.endswith("weight") for k in weights)
    both = net.collect_params(".*weight|.*bias")
    assert len(both) == 4
    assert len(net.collect_params("nothing_matches")) == 0


def test_hybridize_is_noop():
    net = _mlp()
    net.initialize()
    x = nd.array(np.random.uniform(size=(5, 6)).astype(np.float32))
    before = _np(net(x))
    net.hybridize()
    after = _np(net(x))
    net.hybridize(static_alloc=True, static_shape=True)
    again = _np(net(x))
    assert np.array_equal(before, after) and np.array_equal(before, again)


def test_hybrid_block_custom_subclass():
    class Scale(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.alpha = self.params.get("alpha", shape=(1,), init=mx.init.Constant(3.0))

        def hybrid_forward(self, F, x, alpha):
            return x * alpha

    blk = Scale()
    blk.initialize()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _close(_np(blk(nd.array(x))), 3 * x)
    assert "alpha" in blk._reg_params and blk.alpha.name == blk.prefix + "alpha"


def test_hybrid_sequential_rejects_plain_block():
    net = nn.HybridSequential()
    with pytest.raises(ValueError):
        net.add(nn.Lambda(lambda x: x))


def test_forward_hooks_and_apply():
    net = _mlp(in_units=4)
    net.initialize()
    seen_pre, seen_post = [], []
    h1 = net[0].register_forward_pre_hook(lambda blk, inp: seen_pre.append(inp[0].shape))
    h2 = net[0].register_forward_hook(lambda blk, inp, out: seen_post.append(out.shape))
    net(nd.ones((2, 4)))
    assert seen_pre == [(2, 4)] and seen_post == [(2, 8)]
    h1.detach()
    h2.detach()
    net(nd.ones((2, 4)))
    assert len(seen_pre) == 1 and len(seen_post) == 1

    visited = []
    net.apply(lambda blk: visited.append(type(blk).__name__))
    assert visited[-1] == "HybridSequential" and visited.count("Dense") == 2


def test_summary_counts_parameters(capsys):
    net = _mlp(in_units=4)
    net.initialize()
    net.summary(nd.ones((2, 4)))
    out = capsys.readouterr().out
    total = 4 * 8 + 8 + 8 * 3 + 3
    assert f"Total params: {total}" in out
    assert "Dense-" in out and "(2, 3)" in out


def test_repr():
    layer = nn.Dense(10, in_units=5)
    assert repr(layer) == "Dense(5 -> 10, linear)"
    assert repr(nn.Dense(3, activation="relu")) == "Dense(None -> 3, Activation(relu))"
    net = nn.Sequential()
    net.add(nn.Dense(2, in_units=3))
    assert repr(net) == "Sequential(\n  (0): Dense(3 -> 2, linear)\n)"


def test_sequential_getitem_len():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, in_units=2), nn.Dense(3, in_units=4), nn.Dense(1, in_units=3))
    assert len(net) == 3
    sub = net[1:]
    assert isinstance(sub, nn.HybridSequential) and len(sub) == 2
    assert sub[0] is net[1]


def test_block_attribute_type_change_rejected():
    net = _mlp()
    net.extra = nn.Dense(2)
    with pytest.raises(TypeError):
        net.extra = 5


def test_embedding_layernorm_activations():
    emb = nn.Embedding(10, 4)
    emb.initialize()
    idx = np.array([[1, 3], [9, 0]], dtype=np.float32)
    w = _np(emb.weight.data())
    _close(_np(emb(nd.array(idx))), w[idx.astype(np.int64)])

    ln = nn.LayerNorm(in_channels=6)
    ln.initialize()
    x = np.random.normal(size=(3, 6)).astype(np.float32)
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    _close(_np(ln(nd.array(x))), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    assert np.all(_np(ln.gamma.data()) == 1) and np.all(_np(ln.beta.data()) == 0)

    ln2 = nn.LayerNorm()
    ln2.initialize()
    ln2(nd.array(x))
    assert ln2.gamma.shape == (6,)

    _close(_np(nn.Activation("tanh")(nd.array(x))), np.tanh(x))
    _close(_np(nn.Activation("sigmoid")(nd.array(x))), 1 / (1 + np.exp(-x)))
    _close(_np(nn.LeakyReLU(0.1)(nd.array(x))), np.where(x > 0, x, 0.1 * x))
    _close(_np(nn.Flatten()(nd.ones((2, 3, 4)))), np.ones((2, 12)))
    _close(_np(nn.Lambda("tanh")(nd.array(x))), np.tanh(x))
    _close(_np(nn.Lambda(lambda t: t * 2)(nd.array(x))), 2 * x)
    _close(_np(nn.HybridLambda(lambda F, t: F.relu(t))(nd.array(x))), np.maximum(x, 0))


def test_dropout_train_and_predict():
    x = nd.ones((200, 50))
    drop = nn.Dropout(0.5)
    assert np.array_equal(_np(drop(x)), np.ones((200, 50)))  # not training: identity
    with autograd.record(train_mode=True):
        y = _np(drop(x))
    zeros = (y == 0).mean()
    assert 0.4 < zeros < 0.6
    _close(y[y != 0], 2.0)  # kept values scaled by 1/(1-p)
    assert np.array_equal(_np(nn.Dropout(0.0)(x)), np.ones((200, 50)))


# ---- Parameter and ParameterDict ---------------------------------------------------------------
def test_parameter_basics():
    p = gluon.Parameter("w", shape=(2, 3), init=mx.init.One(), lr_mult=0.5, wd_mult=2.0)
    p.initialize(ctx=cpu())
    assert np.array_equal(_np(p.data()), np.ones((2, 3)))
    assert np.array_equal(_np(p.grad()), np.zeros((2, 3)))
    assert p.shape == (2, 3) and p.lr_mult == 0.5 and p.wd_mult == 2.0
    assert p.list_ctx() == [cpu()] and len(p.list_data()) == 1
    assert np.dtype(p.data().dtype) == np.float32
    p.set_data(nd.full((2, 3), 7.0))
    assert np.all(_np(p.data()) == 7)

    with autograd.record():
        y = (p.data() * 3).sum()
    y.backward()
    assert np.all(_np(p.grad()) == 3)
    p.zero_grad()
    assert np.all(_np(p.grad()) == 0)

    with pytest.warns(UserWarning):
        p.initialize()  # already initialized: ignored with a warning
    assert np.all(_np(p.data()) == 7)
    p.initialize(init=mx.init.Zero(), force_reinit=True)
    assert np.all(_np(p.data()) == 0)


def test_parameter_grad_req():
    p = gluon.Parameter("w", shape=(3,), grad_req="add")
    p.initialize(init=mx.init.One())
    for _ in range(2):
        with autograd.record():
            y = (p.data() * 2).sum()
        y.backward()
    assert np.all(_np(p.grad()) == 4)  # accumulated
    p.grad_req = "null"
    with pytest.raises(RuntimeError):
        p.grad()
    with pytest.raises(ValueError):
        p.grad_req = "bogus"


def test_parameter_invalid_shape_and_set_shape():
    p = gluon.Parameter("w", shape=(0, 3))
    with pytest.raises(ValueError):
        p.initialize()
    p.shape = (4, 3)
    assert p.shape == (4, 3)
    with pytest.raises(ValueError):
        p.shape = (5, 3)


def test_parameter_dict_get_and_sharing():
    pd = gluon.ParameterDict("net_")
    w = pd.get("weight", shape=(2, 0))
    assert w.name == "net_weight" and pd.get("weight", shape=(2, 5)) is w
    assert w.shape == (2, 5)
    with pytest.raises(ValueError):
        pd.get("weight", shape=(3, 5))
    shared = nn.Dense(3, in_units=2, prefix="shared_")
    twin = nn.Dense(3, in_units=2, prefix="shared_", params=shared.params)
    assert twin.weight is shared.weight


def test_constant_parameter():
    c = gluon.Constant("c", [[1.0, 2.0], [3.0, 4.0]])
    c.initialize()
    assert c.grad_req == "null"
    _close(_np(c.data()), [[1, 2], [3, 4]])


def test_parameter_cast():
    layer = nn.Dense(2, in_units=3)
    layer.initialize()
    layer.cast("float64")
    assert np.dtype(layer.weight.data().dtype) == np.float64
    out = layer(nd.ones((1, 3), dtype="float64"))
    assert np.dtype(out.dtype) == np.float64


# ---- initializers ------------------------------------------------------------------------------
def test_initializers_values():
    def make(init, shape=(64, 32)):
        p = gluon.Parameter("x_weight", shape=shape, init=init)
        p.initialize()
        return _np(p.data())

    assert np.all(make(mx.init.Constant(3.5)) == 3.5)
    assert np.all(make(mx.init.Zero()) == 0) and np.all(make("ones") == 1)
    u = make(mx.init.Uniform(0.3))
    assert np.all(np.abs(u) <= 0.3) and u.std() > 0.1
    n = make(mx.init.Normal(0.5), shape=(200, 100))
    assert abs(n.std() - 0.5) < 0.03 and abs(n.mean()) < 0.03
    x = make(mx.init.Xavier(), shape=(100, 200))
    bound = np.sqrt(3.0 / ((100 + 200) / 2.0))
    assert np.all(np.abs(x) <= bound + 1e-7) and abs(x.std() - bound / np.sqrt(3)) < 0.01
    g = make(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), (100, 400))
    assert abs(g.std() - np.sqrt(2.0 / 400)) < 0.005
    m = make(mx.init.MSRAPrelu(slope=0.0), shape=(200, 300))
    assert abs(m.std() - np.sqrt(2.0 / 250)) < 0.005
    with pytest.raises(ValueError):
        make(mx.init.Xavier(), shape=(10,))


def test_initializer_name_rules_and_create():
    init = mx.init.Uniform(1.0)
    for name, expect in (("fc_bias", 0.0), ("bn_beta", 0.0), ("bn_gamma", 1.0)):
        arr = nd.full((5,), 9.0)
        init(mx.init.InitDesc(name), arr)
        assert np.all(_np(arr) == expect), name
    arr = nd.zeros((50,))
    init(mx.init.InitDesc("fc_weight"), arr)
    assert np.all(np.abs(_np(arr)) <= 1.0) and np.any(_np(arr) != 0)
    # an explicit initializer wins over the name
    arr = nd.zeros((4,))
    init(mx.init.InitDesc("fc_bias", {"__init__": mx.init.One()}), arr)
    assert np.all(_np(arr) == 1)
    with pytest.raises(ValueError):
        init(mx.init.InitDesc("mystery"), nd.zeros((2,)))
    assert isinstance(mx.init.create("xavier"), mx.init.Xavier)
    restored = mx.init.create(mx.init.Xavier(magnitude=2.5).dumps())
    assert isinstance(restored, mx.init.Xavier) and restored.magnitude == 2.5
    with pytest.raises(ValueError):
        mx.init.create("no_such_init")


def test_block_initialize_global_init():
    net = nn.Dense(4, in_units=3)
    net.initialize(mx.init.Constant(0.25))
    assert np.all(_np(net.weight.data()) == 0.25)
    assert np.all(_np(net.bias.data()) == 0)  # Dense sets bias_initializer='zeros'


# ---- save / load -------------------------------------------------------------------------------
def test_save_load_roundtrip(tmp_path):
    net = _mlp(in_units=4)
    net.initialize()
    x = nd.array(np.random.uniform(size=(3, 4)).astype(np.float32))
    ref = _np(net(x))
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    saved = nd.load(path)  # MXNet's .params format: a dict of structural names
    assert sorted(saved) == ["0.bias", "0.weight", "1.bias", "1.weight"]
    assert sorted(os.listdir(tmp_path)) == ["net.params"]  # no temporary file left

    other = _mlp()  # different prefix, deferred shapes
    other.initialize()
    other.load_parameters(path)
    assert np.array_equal(_np(other(x)), ref)
    assert other[0].weight.shape == (8, 4)

    fresh = _mlp()  # never initialized: load initializes
    fresh.load_parameters(path, ctx=cpu())
    assert np.array_equal(_np(fresh(x)), ref)


def test_load_errors(tmp_path):
    net = _mlp(in_units=4)
    net.initialize()
    path = str(tmp_path / "net.params")
    net.save_parameters(path)

    bigger = nn.HybridSequential()
    with bigger.name_scope():
        bigger.add(nn.Dense(8, in_units=4), nn.Dense(3, in_units=8), nn.Dense(2, in_units=3))
    bigger.initialize()
    with pytest.raises(MXNetError, match="missing"):
        bigger.load_parameters(path)
    bigger.load_parameters(path, allow_missing=True)
    assert np.array_equal(_np(bigger[1].bias.data()), _np(net[1].bias.data()))

    smaller = nn.HybridSequential()
    with smaller.name_scope():
        smaller.add(nn.Dense(8, in_units=4))
    smaller.initialize()
    with pytest.raises(ValueError, match="not present"):
        smaller.load_parameters(path)
    smaller.load_parameters(path, ignore_extra=True)
    assert np.array_equal(_np(smaller[0].weight.data()), _np(net[0].weight.data()))

    wrong = _mlp(in_units=5)
    wrong.initialize()
    with pytest.raises(MXNetError, match="shape incompatible"):
        wrong.load_parameters(path)

    as64 = _mlp(in_units=4)
    as64.initialize()
    as64.cast("float64")
    with pytest.raises(MXNetError, match="dtype incompatible"):
        as64.load_parameters(path)
    as64.load_parameters(path, cast_dtype=True)
    assert np.dtype(as64[0].weight.data().dtype) == np.float64

    corrupt = str(tmp_path / "corrupt.params")
    with open(corrupt, "wb") as f:
        f.write(b"this is not a parameter file")
    with pytest.raises(MXNetError):
        net.load_parameters(corrupt)
    with open(path, "rb") as f:
        truncated = f.read()[:100]
    with open(corrupt, "wb") as f:
        f.write(truncated)
    with pytest.raises(MXNetError):
        net.load_parameters(corrupt)
    with pytest.raises(FileNotFoundError):
        net.load_parameters(str(tmp_path / "absent.params"))


def test_failed_save_keeps_old_file(tmp_path, monkeypatch):
    net = _mlp(in_units=4)
    net.initialize()
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    with open(path, "rb") as f:
        original = f.read()

    from ferromx import serialization

    real = serialization._record_bytes
    calls = []

    def boom(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # the second array fails to serialise
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(serialization, "_record_bytes", boom)
    net2 = _mlp(in_units=4)
    net2.initialize()
    with pytest.raises(OSError):
        net2.save_parameters(path)
    monkeypatch.undo()
    with open(path, "rb") as f:
        assert f.read() == original
    assert sorted(os.listdir(tmp_path)) == ["net.params"]


def test_parameter_dict_save_load_full_names(tmp_path):
    net = nn.Dense(3, in_units=2, prefix="model_")
    net.initialize()
    path = str(tmp_path / "p.params")
    net.collect_params().save(path, strip_prefix="model_")
    twin = nn.Dense(3, in_units=2, prefix="model_")
    twin.collect_params().load(path, restore_prefix="model_")
    assert np.array_equal(_np(twin.weight.data()), _np(net.weight.data()))
    # a single layer's file has keys without '.', which load_parameters also accepts
    path2 = str(tmp_path / "single.params")
    net.save_parameters(path2)
    twin2 = nn.Dense(3, in_units=2, prefix="model_")
    twin2.load_parameters(path2)
    assert np.array_equal(_np(twin2.bias.data()), _np(net.bias.data()))


# ---- gluon.utils -------------------------------------------------------------------------------
def test_split_data_and_load():
    x = nd.array(np.arange(20, dtype=np.float32).reshape(10, 2))
    parts = gluon.utils.split_data(x, 3, even_split=False)
    assert [p.shape[0] for p in parts] == [4, 3, 3]
    assert np.array_equal(np.concatenate([_np(p) for p in parts]), _np(x))
    with pytest.raises(ValueError):
        gluon.utils.split_data(x, 3)
    cols = gluon.utils.split_data(x, 2, batch_axis=1)
    assert np.array_equal(_np(cols[1]), _np(x)[:, 1:2])
    loaded = gluon.utils.split_and_load(_np(x), [cpu()])
    assert len(loaded) == 1 and np.array_equal(_np(loaded[0]), _np(x))


def test_clip_global_norm():
    a = np.random.normal(size=(3, 4)).astype(np.float32)
    b = np.random.normal(size=(5,)).astype(np.float32)
    norm = np.sqrt((a**2).sum() + (b**2).sum())
    arrays = [nd.array(a), nd.array(b)]
    ret = gluon.utils.clip_global_norm(arrays, 1.0)
    _close(ret, norm, rtol=1e-5)
    _close(_np(arrays[0]), a / norm, rtol=1e-4)
    _close(_np(arrays[1]), b / norm, rtol=1e-4)
    small = [nd.array(a)]
    gluon.utils.clip_global_norm(small, 1e6, check_isfinite=False)
    _close(_np(small[0]), a)  # below the limit: unchanged


# ---- test_utils and util ------------------------------------------------------------------------
def test_test_utils_helpers():
    from ferromx import test_utils as tu

    tu.assert_almost_equal(nd.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-7]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 2.5]), rtol=1e-3, atol=1e-3)
    assert tu.same(nd.array([1, 2]), np.array([1, 2]))
    assert not tu.same(np.array([1, 2]), np.array([1, 3]))
    arr = tu.rand_ndarray((3, 4), dtype="float64")
    assert arr.shape == (3, 4) and np.dtype(arr.dtype) == np.float64
    shape = tu.rand_shape_nd(4, dim=5)
    assert len(shape) == 4 and all(1 <= d <= 5 for d in shape)
    assert tu.default_context() == cpu()


def test_check_numeric_gradient():
    from ferromx import test_utils as tu

    loc = [np.random.normal(size=(3, 2)), np.random.normal(size=(3, 2))]
    tu.check_numeric_gradient(lambda a, b: nd.tanh(a) * b + a * a, loc)
    tu.check_numeric_gradient(lambda a: nd.sigmoid(a).sum(), [np.random.normal(size=(4,))])

    def broken(a):  # the second factor is detached from the graph: wrong gradient
        return a * nd.array(a.asnumpy(), dtype="float64")

    with pytest.raises(AssertionError):
        tu.check_numeric_gradient(broken, [np.random.uniform(1, 2, size=(3,))])


def test_util_helpers():
    from ferromx import util

    assert util.is_np_array() is False

    @util.use_np
    def f(x):
        return x + 1

    assert f(1) == 2
    util.setenv("FERROMX_TEST_UTIL_VAR", "7")
    assert util.getenv("FERROMX_TEST_UTIL_VAR") == "7"
    util.setenv("FERROMX_TEST_UTIL_VAR", None)
    assert util.getenv("FERROMX_TEST_UTIL_VAR") is None
