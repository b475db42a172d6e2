"""HybridBlock.hybridize(): tracing with F = mx.sym once per input signature, the cached
graph (outputs, autograd, parameter updates), going back to eager, trace-time errors."""

import os
import subprocess
import sys
import time
import warnings

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx.base import NotImplementedForSymbol
from trace_helper import trace_names


class Counting(gluon.HybridBlock):
    """Dense + tanh + a second input; counts hybrid_forward calls and records F."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = gluon.nn.Dense(4)
        self.calls = []

    def hybrid_forward(self, F, x, y):
        self.calls.append(F)
        h = F.tanh(self.dense(x))
        return h * 2 + y.sum(axis=1, keepdims=True), (h, F.relu(y))


def _mlp(**kw):
    net = gluon.nn.HybridSequential(**kw)
    with net.name_scope():
        net.add(gluon.nn.Dense(16, activation="relu"), gluon.nn.Dense(8, activation="tanh"),
                gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def test_traces_once_per_signature_and_matches_eager():
    net = Counting()
    net.initialize()
    x, y = nd.random.uniform(shape=(2, 5)), nd.random.uniform(shape=(2, 3))
    eager = net(x, y)
    # eager F is nd (with F.np/F.npx attached, as MXNet's hybrid_forward F has)
    assert len(net.calls) == 1 and net.calls[0].FullyConnected is nd.FullyConnected
    assert hasattr(net.calls[0], "np") and hasattr(net.calls[0], "npx")
    net.hybridize()
    outs = [net(x, y) for _ in range(3)]
    assert net.calls[1:] == [mx.sym]  # traced once
    a, (h, r) = outs[-1]
    np.testing.assert_allclose(a.asnumpy(), eager[0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), eager[1][0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(r.asnumpy(), eager[1][1].asnumpy(), rtol=1e-6)
    net(nd.ones((4, 5)), nd.ones((4, 3)))  # new signature: traced again
    assert net.calls[1:] == [mx.sym, mx.sym]
    net(x, y)
    assert len(net.calls) == 3
    net.hybridize(active=False)
    net(x, y)
    assert net.calls[-1] is not mx.sym and net.calls[-1].FullyConnected is nd.FullyConnected


def test_cached_graph_runs_native_ops_only():
    net = _mlp()
    x = nd.random.uniform(shape=(1, 10))
    net.hybridize()
    net(x)
    seen = []
    for block in [net, *net._children.values()]:
        block.hybrid_forward = lambda *a, _s=seen, **k: _s.append(1)
    net(x)
    assert seen == []
    graph = net._cached_graph[1]
    assert [n.op for n in graph._nodes() if n.op] == [
        "FullyConnected", "Activation", "FullyConnected", "Activation", "FullyConnected"]


def test_autograd_through_cached_graph_and_training_updates():
    net = _mlp()
    ref = _mlp()
    x = nd.random.uniform(shape=(4, 10))
    net(x), ref(x)
    for p, q in zip(net.collect_params().values(), ref.collect_params().values()):
        q.set_data(p.data())
    label = nd.array([0, 1, 2, 1])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net.hybridize()
    grads = []
    for model in (net, ref):
        with autograd.record():
            loss = loss_fn(model(x), label)
        loss.backward()
        grads.append([p.grad().asnumpy() for p in model.collect_params().values()])
    for g, h in zip(*grads):
        np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-7)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    before = net(x).asnumpy()
    trainer.step(4)
    after = net(x).asnumpy()  # the cached graph sees the updated weights
    assert not np.allclose(before, after)
    net.collect_params().initialize(mx.init.Zero(), force_reinit=True)
    np.testing.assert_array_equal(net(x).asnumpy(), np.zeros((4, 3)))


def test_deferred_initialization_from_the_graph():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(5, activation="relu"), gluon.nn.Dense(3))
    net.initialize()
    net.hybridize()
    assert net(nd.ones((2, 7))).shape == (2, 3)
    assert net[0].weight.shape == (5, 7) and net[1].weight.shape == (3, 5)


def test_dropout_follows_the_autograd_mode():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dropout(0.5))
    net.hybridize()
    x = nd.ones((100, 100))
    np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())
    with autograd.record():
        y = net(x)
    assert 0.3 < float((y == 0).mean().asscalar()) < 0.7


def test_value_dependent_control_flow_raises_at_trace_time():
    class Branchy(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            if x.sum() > 0:
                return x
            return -x

    class Reads(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x * float(x.asnumpy()[0])

    for cls in (Branchy, Reads):
        net = cls()
        net(nd.ones((2,)))  # eager works
        net.hybridize()
        with pytest.raises(NotImplementedForSymbol, match="not implemented for Symbol"):
            net(nd.ones((2,)))


def test_symbol_input_builds_the_graph_with_mxnet_names():
    net = _mlp(prefix="m_")
    out = net(mx.sym.var("data"))
    assert out.list_arguments() == ["data", "m_dense0_weight", "m_dense0_bias",
                                    "m_dense1_weight", "m_dense1_bias", "m_dense2_weight",
                                    "m_dense2_bias"]
    assert out.name == "m_dense2_fwd"
    assert [n.name for n in out._nodes() if n.op == "Activation"] == [
        "m_dense0_relu_fwd", "m_dense1_tanh_fwd"]


def test_hybridized_mlp_is_faster_than_eager():
    """The 64-256-256-10 MLP on one sample (printed: eager vs hybridized, same run)."""
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(256, activation="relu"),
            gluon.nn.Dense(10))
    net.initialize()
    x = nd.ones((1, 64))

    def best(n=300, reps=5):
        times = []
        for _ in range(reps):
            nd.waitall()
            t = time.perf_counter()
            for _ in range(n):
                net(x)
            nd.waitall()
            times.append((time.perf_counter() - t) / n)
        return min(times) * 1e6

    net(x)
    eager = best()
    net.hybridize(static_alloc=True, static_shape=True)
    net(x)
    hybrid = best()
    print(f"\nMLP 64-256-256-10 batch 1 forward: eager {eager:.1f} us, hybridized {hybrid:.1f} us")
    assert hybrid < eager


def test_losses_hybridize_with_traced_shapes():
    pred, label = nd.random.uniform(shape=(4, 5)), nd.array([0, 1, 2, 3])
    for loss in (gluon.loss.SoftmaxCrossEntropyLoss(), gluon.loss.L2Loss(),
                 gluon.loss.HuberLoss()):
        target = label if isinstance(loss, gluon.loss.SoftmaxCrossEntropyLoss) else \
            nd.random.uniform(shape=(4, 5))
        eager = loss(pred, target).asnumpy()
        loss.hybridize()
        np.testing.assert_allclose(loss(pred, target).asnumpy(), eager, rtol=1e-6)
        assert loss._cached_graph  # traced (shapes are known while tracing)
    with pytest.raises(AttributeError, match="shape"):
        _ = mx.sym.var("x").shape  # plain symbols have no shape, as in MXNet


def test_untraceable_block_falls_back_to_eager_with_a_warning():
    class MakesArrays(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + nd.ones(x.shape, ctx=x.context)

    net = MakesArrays()
    net.hybridize()
    with pytest.warns(UserWarning, match="cannot be traced"):
        out = net(nd.zeros((2,)))
    np.testing.assert_array_equal(out.asnumpy(), [1.0, 1.0])
    np.testing.assert_array_equal(net(nd.zeros((2,))).asnumpy(), [1.0, 1.0])


def test_strided_convolution_block_traces_without_falling_back():
    # Backward shape inference must not guess a strided convolution's input size
    # (32 and 31 both give 16 with kernel 3, stride 2, pad 1).
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, strides=2, padding=1), gluon.nn.BatchNorm(),
            gluon.nn.Conv2D(2, 3, strides=2, padding=1))
    net.initialize()
    x = nd.array(np.random.default_rng(0).uniform(size=(2, 3, 32, 32)))
    eager = net(x).asnumpy()
    net.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = net(x)
    assert out.shape == (2, 2, 8, 8)
    np.testing.assert_allclose(out.asnumpy(), eager, rtol=1e-5, atol=1e-6)


def test_hybridized_forward_runs_as_one_bulk_engine_op(tmp_path):
    net = _mlp()
    x = nd.array(np.random.RandomState(0).randn(2, 5).astype(np.float32))
    want = net(x).asnumpy()
    net.hybridize()
    net(x).wait_to_read()
    names = trace_names(tmp_path, lambda: net(x))
    bulks = [n for n in names if n.startswith("_bulk(")]
    assert bulks == ["_bulk(FullyConnected,Activation,FullyConnected,Activation,FullyConnected)"], names
    assert not any(n == "FullyConnected" for n in names), names
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-6, atol=1e-6)
    # Recorded (training) forwards are bulked too, and backward still works.
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    net2 = _mlp()
    for p2, p in zip(net2.collect_params().values(), net.collect_params().values()):
        p2.set_data(p.data())
    x2 = x.copy()
    x2.attach_grad()
    with autograd.record():
        y2 = net2(x2)
    y2.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), x2.grad.asnumpy(), rtol=1e-5, atol=1e-6)


class _Take(gluon.HybridBlock):
    def hybrid_forward(self, F, x, idx):
        return F.take(x * 2, idx, mode="raise")


def test_a_failing_call_in_a_bulk_names_its_operator_and_the_call_site():
    net = _Take()
    net.hybridize()
    x = nd.ones((3, 2))
    net(x, nd.array([0, 2])).wait_to_read()
    line = sys._getframe().f_lineno + 1
    y = net(x, nd.array([0, 5]))
    with pytest.raises(IndexError) as ei:
        y.asnumpy()
    msg = str(ei.value)
    assert "take" in msg and "out of bounds" in msg and f"test_hybridize.py:{line}" in msg, msg
    assert "_bulk" not in msg, msg


def test_bulk_execution_can_be_switched_off_as_in_mxnet(tmp_path):
    code = (
        "import json, ferromx as mx\n"
        "from ferromx import gluon, nd\n"
        "net = gluon.nn.HybridSequential()\n"
        "net.add(gluon.nn.Dense(4, activation='relu', in_units=3), gluon.nn.Dense(2, in_units=4))\n"
        "net.initialize(); net.hybridize(); x = nd.ones((1, 3)); net(x).wait_to_read()\n"
        f"mx.profiler.set_config(filename={str(tmp_path / 't.json')!r}, profile_all=True)\n"
        "mx.profiler.set_state('run'); net(x); nd.waitall(); mx.profiler.set_state('stop')\n"
        "mx.profiler.dump()\n"
        f"ev = json.load(open({str(tmp_path / 't.json')!r}))['traceEvents']\n"
        "print(sorted({e.get('name', '') for e in ev if e.get('ph') in ('B', 'X')}))\n"
    )
    env = dict(os.environ, MXNET_EXEC_BULK_EXEC_INFERENCE="0")
    out = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    names = out.stdout.strip().splitlines()[-1]
    assert "_bulk" not in names and "FullyConnected" in names, names
