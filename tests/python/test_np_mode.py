"""NumPy mode (``npx.set_np()``): the switches, and Gluon handing out ``np.ndarray``s
(parameters, gradients, block outputs, losses, DataLoader batches, ``split_and_load``,
``F.np``/``F.npx``), as MXNet 1.9.1 does."""

import threading

import ferromx as mx
import numpy as onp
import pytest
from ferromx import autograd, gluon, nd, np, npx, util


@pytest.fixture
def np_mode():
    npx.set_np()
    yield
    npx.reset_np()


def test_switches():
    assert not npx.is_np_array() and not npx.is_np_shape()
    npx.set_np()
    try:
        assert npx.is_np_array() and npx.is_np_shape() and util.is_np_array()
        seen = []
        t = threading.Thread(target=lambda: seen.append(npx.is_np_array()))
        t.start()
        t.join()
        assert seen == [False]  # per thread, as in MXNet
    finally:
        npx.reset_np()
    assert not npx.is_np_array() and not npx.is_np_shape()
    assert util.set_np_shape(True) is False
    assert util.is_np_shape() and not util.is_np_array()
    util.set_np_shape(False)
    with pytest.raises(ValueError):
        npx.set_np(shape=False, array=True)


def test_decorators():
    @util.use_np
    def f():
        return util.is_np_array(), util.is_np_shape()

    @util.use_np_shape
    def g():
        return util.is_np_array(), util.is_np_shape()

    @util.use_np_array
    def h():
        return util.is_np_array()

    assert f() == (True, True) and g() == (False, True) and h() is True
    assert not util.is_np_array()

    @util.use_np
    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x * 2

    net = Net()
    net.initialize()
    out = net(nd.ones(2).as_np_ndarray())
    assert type(out) is np.ndarray


def _data():
    rng = onp.random.default_rng(0)
    x = rng.standard_normal((16, 3)).astype("float32")
    w = onp.array([[1.0], [-2.0], [0.5]], dtype="float32")
    return x, (x @ w + 0.3).astype("float32")


def test_dense_net_trains_in_np_mode(np_mode):
    x, y = _data()
    net = gluon.nn.Dense(1, in_units=3)
    net.initialize(mx.init.Normal(0.1))
    assert type(net.weight.data()) is np.ndarray
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.L2Loss()
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=8)
    first = last = None
    for _epoch in range(60):
        for xb, yb in loader:
            assert type(xb) is np.ndarray and type(yb) is np.ndarray
            with autograd.record():
                out = net(xb)
                loss = loss_fn(out, yb)
            assert type(out) is np.ndarray and type(loss) is np.ndarray
            loss.backward()
            trainer.step(xb.shape[0])
            val = float(loss.mean())
            first = val if first is None else first
            last = val
    assert last < first * 0.05, (first, last)
    assert type(net.weight.grad()) is np.ndarray
    assert type(net.weight.list_data()[0]) is np.ndarray
    onp.testing.assert_allclose(net.weight.data().asnumpy(), [[1.0, -2.0, 0.5]], atol=0.1)
    m = mx.metric.MSE()
    m.update([np.array(y)], [net(np.array(x))])
    assert m.get()[1] < 0.01


def test_gluon_pieces_return_np(np_mode):
    x = onp.ones((4, 3), dtype="float32")
    parts = gluon.utils.split_and_load(x, [mx.cpu(0), mx.cpu(1)])
    assert all(type(p) is np.ndarray for p in parts)
    assert type(gluon.utils.split_and_load(np.array(x), [mx.cpu()])[0]) is np.ndarray
    dl = gluon.data.DataLoader(gluon.data.ArrayDataset(x, onp.arange(4)), batch_size=2,
                               num_workers=2)
    for a, b in dl:
        assert type(a) is np.ndarray and type(b) is np.ndarray and b.dtype == onp.int64

    class Block(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            assert F.np is np and F.npx is npx
            return F.np.sum(F.npx.relu(x))

    out = Block()(np.array([[-1.0, 2.0]]))
    assert type(out) is np.ndarray and out.shape == () and float(out) == 2.0
    p = gluon.Parameter("w", shape=(2,), init=mx.init.One())
    p.initialize()
    assert type(p.data()) is np.ndarray and type(p.grad()) is np.ndarray
    for loss in (gluon.loss.L1Loss(), gluon.loss.SoftmaxCrossEntropyLoss()):
        r = loss(np.ones((2, 3)), np.zeros((2,)) if "Softmax" in type(loss).__name__
                 else np.zeros((2, 3)))
        assert type(r) is np.ndarray and r.shape == (2,)


def test_legacy_mode_keeps_nd():
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    assert type(net.weight.data()) is nd.NDArray
    assert type(net(nd.ones((1, 3)))) is nd.NDArray
    assert type(gluon.utils.split_and_load(onp.ones((2, 2)), [mx.cpu()])[0]) is nd.NDArray
