"""np-mode ``hybridize()``: ``hybrid_forward`` traced with np symbols, each ``F.np`` /
``F.npx`` call and np method recorded into table operators (``symbol/_record_trace.py``),
so the graph runs as one native plan and exports to MXNet's JSON."""

import json
import warnings

import ferromx as mx
import numpy as onp
import pytest
from ferromx import autograd, gluon, npx
from ferromx import np as mnp
from ferromx.gluon import _hybrid, nn


@pytest.fixture(autouse=True)
def _np_mode():
    npx.set_np()
    yield
    npx.reset_np()


class _Net(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        h = self.dense(x)
        h = F.np.tanh(h) * 2 + F.np.ones((1, 4))  # a constant inside the graph
        return (h.reshape(-1) ** 2).sum() + F.npx.relu(x).mean()


def _entry(block):
    (entry,) = block._cached_graphs.values()
    return entry


def _eager_and_hybrid(make, *args):
    mx.random.seed(0)
    eager = make()
    eager.initialize()
    hyb = make()
    hyb.initialize()
    for pe, ph in zip(eager.collect_params().values(), hyb.collect_params().values()):
        eager(*args)
        ph.set_data(pe.data())
    hyb.hybridize()
    return eager, hyb


def test_np_block_traces_into_one_native_plan_with_equal_values_and_gradients():
    x = mnp.array(onp.random.RandomState(0).uniform(-1, 1, (3, 5)).astype("float32"))
    eager, hyb = _eager_and_hybrid(_Net, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "cannot be traced" fallback
        y = hyb(x)
    entry = _entry(hyb)
    assert isinstance(entry, _hybrid.CachedGraph) and entry.plan.native is not None
    assert isinstance(y, mnp.ndarray) and y.shape == ()
    onp.testing.assert_allclose(float(y), float(eager(x)), rtol=1e-5)
    grads = []
    for net in (eager, hyb):
        with autograd.record():
            out = net(x)
        out.backward()
        grads.append(net.dense.weight.grad().asnumpy())
    onp.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_np_block_exports_table_operators_and_reimports(tmp_path):
    x = mnp.array(onp.random.RandomState(1).uniform(-1, 1, (2, 5)).astype("float32"))
    _, hyb = _eager_and_hybrid(_Net, x)
    want = float(hyb(x))
    sym_file, params_file = hyb.export(str(tmp_path / "npnet"))
    with open(sym_file) as f:
        ops = {n["op"] for n in json.load(f)["nodes"]}
    assert "FullyConnected" in ops and "tanh" in ops
    assert all(not o.startswith("np.") for o in ops)  # no function nodes
    back = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    onp.testing.assert_allclose(float(back(x)), want, rtol=1e-5)


class _ValueDependent(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.np.nonzero(x > 0)[0] * 1.0  # output shape depends on the values


class _Sampler(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return x + F.np.random.normal(size=(3,))


@pytest.mark.parametrize("block", [_ValueDependent, _Sampler])
def test_what_cannot_be_recorded_runs_eagerly(block):
    net = block()
    net.hybridize()
    x = mnp.array([1.0, -1.0, 2.0])
    y1, y2 = net(x), net(x)
    assert _entry(net) is _hybrid._EAGER
    if block is _ValueDependent:
        onp.testing.assert_array_equal(y1.asnumpy(), [0.0, 2.0])
    else:
        assert not onp.array_equal(y1.asnumpy(), y2.asnumpy())  # sampled per call


def test_output_kinds_follow_the_symbols():
    class Classic(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.as_nd_ndarray() + 1, x.as_nd_ndarray() * 2

    class Numpy(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.np.add(x, 1), F.np.multiply(x, 2)

    x = mnp.ones((2, 3))
    for block, kind in ((Classic, mx.nd.NDArray), (Numpy, mnp.ndarray)):
        net = block()
        net.hybridize()
        a, b = net(x)
        assert type(a) is kind and type(b) is kind
        onp.testing.assert_array_equal(b.asnumpy(), 2 * onp.ones((2, 3)))


def test_a_trace_leaves_no_failure_behind():
    class Chol(nn.HybridBlock):
        def hybrid_forward(self, F, a):
            return F.np.linalg.cholesky(a)

    net = Chol()
    net.hybridize()
    a = mnp.array([[4.0, 2.0], [2.0, 3.0]])
    onp.testing.assert_allclose(net(a).asnumpy(), onp.linalg.cholesky(a.asnumpy()), rtol=1e-6)
    mx.nd.waitall()  # nothing the traces ran on placeholders is raised here


def test_zero_size_reshape_is_recorded_as_np_reshape():
    x = mnp.ones((2, 0, 3))
    x.attach_grad()
    with autograd.record():
        y = x.reshape(0, 6)
    graph = json.loads(autograd.get_symbol(y).tojson())
    (node,) = [n for n in graph["nodes"] if "reshape" in n["op"].lower()]
    assert node["op"] == "_np_reshape" and node["attrs"]["newshape"] == "(0, 6)"
    out = mx.nd._internal._np_reshape(mx.nd.ones((2, 0, 3)), newshape=(0, 6))
    assert out.shape == (0, 6)  # 0 is a size here, not Reshape's "copy" code
    with pytest.raises(mx.base.MXNetError, match="cannot infer"):
        mx.nd._internal._np_reshape(mx.nd.ones((2, 0, 3)), newshape=(0, -1))  # as NumPy
    assert mx.nd._internal._np_reshape(mx.nd.ones((2, 3)), newshape=(3, -1)).shape == (3, 2)
    with pytest.raises(mx.base.MXNetError, match="_np_reshape"):
        mx.nd._internal._np_reshape(mx.nd.ones((2, 3)), newshape=(4, -1))


class _TrainNet(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(16)
        self.fc2 = nn.Dense(3)
        self.scale = self.params.get("scale", shape=(1,), init=mx.init.One())

    def hybrid_forward(self, F, x, scale):
        h = F.npx.relu(self.fc1(x))
        h = F.np.concatenate([h, -h], axis=1)[:, :16]
        return self.fc2(h) * scale


def _train(hybrid):
    mx.random.seed(3)
    net = _TrainNet()
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = mnp.array(onp.random.RandomState(0).randn(64, 5).astype("float32"))
    y = mnp.array((onp.random.RandomState(1).rand(64) * 3).astype("int32"))
    losses = []
    for _ in range(20):
        with autograd.record():
            out = loss(net(x), y).mean()
        out.backward()
        trainer.step(1)
        losses.append(float(out))
    return losses, net


def test_np_block_trains_through_its_graph_exactly_as_eagerly():
    eager, _ = _train(False)
    hybrid, net = _train(True)
    assert isinstance(_entry(net), _hybrid.CachedGraph)
    assert hybrid[-1] < hybrid[0] - 0.05
    onp.testing.assert_allclose(hybrid, eager, rtol=1e-6)


class _Deferred(gluon.HybridBlock):
    """MXNet's test_optimizer_with_np_ndarrays model: parameter shapes (0, n) that only
    ``dot`` with the data fixes."""

    def __init__(self, left=False):
        super().__init__()
        self.left = left
        with self.name_scope():
            self.w1 = self.params.get("w1", shape=(0, 6), allow_deferred_init=True)
            self.w2 = self.params.get("w2", shape=(6, 3), allow_deferred_init=True)
            if left:  # unknown on the left of a dot
                self.w0 = self.params.get("w0", shape=(2, 0), allow_deferred_init=True)

    def hybrid_forward(self, F, x, w1, w2, w0=None):
        h = F.npx.relu(x.dot(w1))
        y = F.np.matmul(h, w2)
        return F.np.dot(w0, y.T) if self.left else y


@pytest.mark.parametrize("left", [False, True])
def test_deferred_parameter_shapes_through_np_dot(left):
    x = mnp.array(onp.random.RandomState(0).uniform(size=(5, 7)).astype("float32"))
    net = _Deferred(left)
    net.initialize(mx.init.Uniform())
    net.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # traced into a graph, no eager fallback
        out = net(x)
    assert net.w1.shape == (7, 6)
    if left:
        assert net.w0.shape == (2, 3)
    assert type(_entry(net)) is _hybrid.CachedGraph
    w1, w2 = net.w1.data().asnumpy(), net.w2.data().asnumpy()
    want = onp.maximum(x.asnumpy() @ w1, 0) @ w2
    if left:
        want = net.w0.data().asnumpy() @ want.T
    onp.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5)
