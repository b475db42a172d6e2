"""``HybridBlock.optimize_for`` / ``Symbol.optimize_for``: MXNet's backend API over
ferromx's own graph passes (``gluon/_optimize.py``)."""

import json
import os
import warnings

import ferromx as mx
import numpy as onp
import pytest
from ferromx import autograd, gluon
from ferromx.gluon import _hybrid, nn
from ferromx.symbol.executor import Plan

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def _convnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def _x(shape=(2, 3, 6, 6), seed=0):
    return mx.nd.array(onp.random.RandomState(seed).uniform(-1, 1, shape).astype("float32"))


def test_builds_the_graph_and_fused_plan_without_running():
    net, x = _convnet(), _x()
    want = net(x).asnumpy()  # eager (also initializes the deferred shapes)
    net.optimize_for(x, backend="MKLDNN")
    (entry,) = net._cached_graphs.values()
    assert isinstance(entry, _hybrid.CachedGraph)
    assert isinstance(entry._infer_plan, Plan)  # the fused inference plan, built already
    ops = [s[0] for s in entry._infer_plan.steps]
    assert "_fused_convolution" in ops and "BatchNorm" not in ops
    onp.testing.assert_array_equal(net(x).asnumpy(), want)


def test_deferred_parameters_are_initialized_by_optimize_for():
    net, x = _convnet(), _x(seed=1)
    net.optimize_for(x, backend="MKLDNN")  # first contact with the inputs
    assert all(p.shape[-1] != 0 for p in net.collect_params().values())
    assert net(x).shape == (2, 3)


def test_training_after_optimize_for_uses_the_unfused_graph(tmp_path):
    net, x = _convnet(), _x(seed=2)
    net.optimize_for(x, backend="MKLDNN", static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    before = net(x).asnumpy()
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    trainer.step(2)
    assert not onp.allclose(net(x).asnumpy(), before)
    sym_file, params_file = net.export(str(tmp_path / "opt"))
    with open(sym_file) as f:
        ops = {n["op"] for n in json.load(f)["nodes"]}
    assert "Convolution" in ops and not any(o.startswith("_fused") for o in ops)
    back = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    onp.testing.assert_allclose(back(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-6)


def test_backend_is_required_and_an_unknown_one_warns():
    net, x = _convnet(), _x()
    with pytest.raises(ValueError, match='Must specify "backend"'):
        net.optimize_for(x)
    with pytest.warns(UserWarning, match="'myPart' cannot be found"):
        net.optimize_for(x, backend="myPart", my_option=3)
    assert net._backend_opts == {"my_option": 3}
    assert net(x).shape == (2, 3)  # the graph is left as it is and runs
    with pytest.raises(ValueError, match="NDArray"):
        net.optimize_for(3, backend="MKLDNN")


def test_imported_symbol_block_optimizes():
    from ferromx import npx

    here = os.path.join(FIXTURES, "np_graphs")
    npx.set_np()
    try:
        net = gluon.SymbolBlock.imports(os.path.join(here, "np_conv-symbol.json"), ["data"],
                                        os.path.join(here, "np_conv-0000.params"))
        io = npx.load(os.path.join(here, "np_conv-io.params"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            net.optimize_for(io["x"], backend="MKLDNN")
        assert len(net._cached_graphs) == 1
        onp.testing.assert_allclose(net(io["x"]).asnumpy(), io["y0"].asnumpy(), rtol=1e-5,
                                    atol=1e-6)
    finally:
        npx.reset_np()


def test_symbol_optimize_for_returns_the_same_graph():
    data = mx.sym.var("data")
    sym = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=3, name="fc"),
                            act_type="relu")
    opt = sym.optimize_for("MKLDNN", args={"data": mx.nd.ones((2, 5))})
    assert opt is not sym and opt.tojson() == sym.tojson()
    with pytest.warns(UserWarning, match="cannot be found"):
        sym.optimize_for("foo")
    with pytest.raises(ValueError, match="backend"):
        sym.optimize_for("")
    with pytest.raises(mx.base.MXNetError, match="dicts"):
        sym.optimize_for("MKLDNN", args=[mx.nd.ones((2, 5))])
