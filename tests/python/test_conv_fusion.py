"""Inference plans fuse Convolution → BatchNorm → (+ residual) → relu (symbol/_fuse.py).

A hybridized block called in predict mode outside ``autograd.record()`` runs a plan where
those chains are one ``_fused_convolution`` step; the results must be bitwise those of the
unfused graph (and of eager execution), training and recording must keep the unfused
graph, and export must never see the fused operator."""

import json

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx.gluon import nn
from ferromx.gluon.model_zoo import vision


class _Block(gluon.HybridBlock):
    """A residual block (conv-BN-relu, conv-BN, a conv-BN shortcut, add, relu), a
    Conv2D with its own relu, a BN-less conv feeding a broadcasting add (not fused), a
    BatchNorm with gamma, and a channel-last convolution (not fused)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.c1 = nn.Conv2D(8, 3, padding=1, use_bias=False)
        self.b1 = nn.BatchNorm()
        self.c2 = nn.Conv2D(8, 3, padding=1, use_bias=False)
        self.b2 = nn.BatchNorm(scale=False)
        self.cs = nn.Conv2D(8, 1, strides=1)
        self.bs = nn.BatchNorm()
        self.c3 = nn.Conv2D(8, 3, strides=2, padding=1, activation="relu")
        self.c4 = nn.Conv2D(8, 1)
        self.c5 = nn.Conv2D(4, 3, padding=1, layout="NHWC", in_channels=8)
        self.b5 = nn.BatchNorm(axis=3, in_channels=4)

    def hybrid_forward(self, F, x):
        y = F.Activation(self.b1(self.c1(x)), act_type="relu")
        y = F.Activation(self.b2(self.c2(y)) + self.bs(self.cs(x)), act_type="relu")
        y = self.c3(y)
        z = self.c4(y)
        z = F.broadcast_add(z, F.mean(z, axis=1, keepdims=True))  # broadcast: not fused
        t = F.transpose(z, axes=(0, 2, 3, 1))
        t = F.relu(self.b5(self.c5(t)))
        return z, t


def _net(seed=0):
    mx.random.seed(seed)
    net = _Block()
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(seed).uniform(-1, 1, (3, 4, 10, 10)).astype("float32"))
    net(x)
    # non-trivial moving statistics
    for name, p in net.collect_params().items():
        if name.endswith(("running_mean", "running_var", "gamma", "beta")):
            lo = 0.5 if name.endswith(("running_var", "gamma")) else -0.5
            p.set_data(nd.array(np.random.RandomState(len(name)).uniform(lo, lo + 1, p.shape)))
    return net, x


def _steps(net):
    (entry,) = [e for e in net._cached_graphs.values() if hasattr(e, "plan")]
    return entry


def test_fused_inference_is_bitwise_the_eager_and_unfused_results():
    net, x = _net()
    eager = [o.asnumpy() for o in net(x)]
    net.hybridize()
    fused = [o.asnumpy() for o in net(x)]
    entry = _steps(net)
    ops = [s[0] for s in entry._infer_plan.steps]
    # c1+b1+relu, c2+b2+add+relu, cs+bs (its add taken by c2's chain), c3+relu
    assert ops.count("_fused_convolution") == 4, ops
    assert ops.count("Convolution") == 2 and "BatchNorm" in ops  # c4 alone; c5 channel-last
    assert "broadcast_add" in ops  # the broadcasting add stays
    plain = [o.asnumpy() for o in entry.plan.run(entry._values([x], x._ctx))]
    for e, f, p in zip(eager, fused, plain):
        assert np.array_equal(f, p)
        assert np.array_equal(f, e)
    assert np.abs(fused[0]).sum() > 0 and (fused[1] >= 0).all()


def test_fused_result_has_batchnorm_semantics():
    # conv -> BN(moving stats) -> relu by hand in NumPy
    net = nn.HybridSequential()
    net.add(nn.Conv2D(5, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"))
    net.initialize()
    x = nd.array(np.random.RandomState(1).randn(2, 3, 6, 6).astype("float32"))
    net(x)
    bn = net[1]
    rs = np.random.RandomState(2)
    for p in (bn.gamma, bn.beta, bn.running_mean):
        p.set_data(nd.array(rs.uniform(-1, 1, 5)))
    bn.running_var.set_data(nd.array(rs.uniform(0.5, 2, 5)))
    net.hybridize()
    got = net(x).asnumpy()
    assert any(s[0] == "_fused_convolution" for s in _steps(net)._infer_plan.steps)
    conv = nd.Convolution(x, net[0].weight.data(), net[0].bias.data(), kernel=(3, 3),
                          pad=(1, 1), num_filter=5).asnumpy()
    g, b, m, v = (p.data().asnumpy().reshape(1, 5, 1, 1)
                  for p in (bn.gamma, bn.beta, bn.running_mean, bn.running_var))
    want = np.maximum((conv - m) / np.sqrt(v + 1e-5) * g + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_training_and_recording_run_the_unfused_graph():
    net, x = _net(3)
    net.hybridize()
    with autograd.train_mode():
        train = [o.asnumpy() for o in net(x)]
    assert _steps(net)._infer_plan is None  # never built: training mode
    net.hybridize(active=False)
    with autograd.train_mode():  # no backward: the moving statistics stay as they are
        eager_train = [o.asnumpy() for o in net(x)]
    net.hybridize()
    for a, b in zip(train, eager_train):
        assert np.array_equal(a, b)  # batch statistics, not the fused moving ones
    # predict mode under record: differentiable, gradients reach the first conv
    with autograd.record(train_mode=False):
        z, t = net(x)
        loss = z.sum() + t.sum()
    loss.backward()
    assert _steps(net)._infer_plan is None
    assert np.abs(net.c1.weight.grad().asnumpy()).sum() > 0
    with autograd.record():
        z, t = net(x)
        loss = z.sum() + t.sum()
    loss.backward()
    assert np.abs(net.c1.weight.grad().asnumpy()).sum() > 0
    net(x)
    assert _steps(net)._infer_plan not in (None, False)


def test_fusion_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("FERROMX_CONV_FUSION", "0")
    net, x = _net(4)
    net.hybridize()
    net(x)
    assert _steps(net)._infer_plan is False


def test_fused_operator_refuses_recording_and_bad_shapes():
    x, w = nd.ones((1, 2, 5, 5)), nd.ones((3, 2, 3, 3))
    w.attach_grad()
    with autograd.record(), pytest.raises(mx.base.MXNetError,
                                          match="_fused_convolution.*inference-only"):
        nd._internal._fused_convolution(x, w, kernel=(3, 3), num_filter=3, no_bias=True,
                                        with_relu=True)
    with pytest.raises(mx.base.MXNetError, match="_fused_convolution.*summand"):
        nd._internal._fused_convolution(x, w, nd.ones((1, 3, 5, 5)), kernel=(3, 3),
                                        num_filter=3, no_bias=True, with_sum=True)
    y = nd._internal._fused_convolution(x, w, nd.full((1, 3, 3, 3), -20.0), kernel=(3, 3),
                                        num_filter=3, no_bias=True, with_sum=True,
                                        with_relu=True)
    assert y.shape == (1, 3, 3, 3) and (y.asnumpy() == 0).all()  # 18 - 20 < 0, relu


def test_resnet18_fused_inference_matches_eager_and_export_is_unfused(tmp_path):
    net = vision.resnet18_v1(thumbnail=True, classes=10)
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(5).rand(2, 3, 32, 32).astype("float32"))
    with autograd.train_mode(), autograd.record():  # moving statistics away from 0 / 1
        loss = net(x).sum()
    loss.backward()
    eager = net(x).asnumpy()
    net.hybridize()
    got = net(x).asnumpy()
    # the 512-channel layers take F(4x4) with their cached filters, eager F(2x2)
    np.testing.assert_allclose(got, eager, rtol=0, atol=2e-5 * np.abs(eager).max())
    ops = [s[0] for s in _steps(net)._infer_plan.steps]
    # 8 blocks x 2 and 3 shortcuts fuse; the thumbnail stem is a bare convolution
    assert ops.count("_fused_convolution") == 19 and ops.count("Convolution") == 1, ops
    assert "BatchNorm" not in ops and "Activation" not in ops, ops
    net.export(str(tmp_path / "r18"))
    graph = json.loads((tmp_path / "r18-symbol.json").read_text())
    assert not any(n["op"] == "_fused_convolution" for n in graph["nodes"])
    assert sum(n["op"] == "Convolution" for n in graph["nodes"]) == 20


def test_cached_filters_follow_weight_updates():
    """The inference plan keeps each Winograd layer's transformed filter while its weight
    is unchanged; set_data, in-place writes and optimizer steps must all be seen."""
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, padding=1, use_bias=False, in_channels=16), nn.BatchNorm(),
            nn.Activation("relu"), nn.Conv2D(16, 3, padding=1, in_channels=16))
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(7).uniform(-1, 1, (2, 16, 8, 8)).astype("float32"))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})

    def both():
        net.hybridize(active=False)
        eager = net(x).asnumpy()
        net.hybridize()
        return eager, net(x).asnumpy()

    seen = []
    for change in ("none", "set_data", "in place", "trainer"):
        w = net[0].weight
        if change == "set_data":
            w.set_data(nd.array(np.random.RandomState(8).uniform(-0.3, 0.3, w.shape)))
        elif change == "in place":
            w.data()[:] = w.data() * -1.5
        elif change == "trainer":
            with autograd.record():
                loss = net(x).sum()
            loss.backward()
            trainer.step(1)
        eager, fused = both()
        assert any(s[0] == "_fused_convolution" for s in _steps(net)._infer_plan.steps)
        assert np.array_equal(fused, eager), change
        assert np.array_equal(net(x).asnumpy(), eager), change  # the cached filter again
        assert not any(np.array_equal(eager, s) for s in seen), change
        seen.append(eager)
