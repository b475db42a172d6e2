"""HybridBlock.export and SymbolBlock(.imports): ferromx's own pairs and pairs written by
MXNet 1.9.1 (tests/fixtures/symbol, recorded by record_symbol.py)."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import gluon, nd

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "symbol")


def _fix(name):
    return os.path.join(FIX, name)


def _mlp(prefix=None):
    net = gluon.nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.Dense(8, activation="tanh"),
                gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def test_imports_an_mxnet_export():
    io = nd.load(_fix("gluon_mlp-io.params"))
    net = gluon.SymbolBlock.imports(_fix("gluon_mlp-symbol.json"), ["data"],
                                    _fix("gluon_mlp-0000.params"))
    np.testing.assert_allclose(net(io["x"]).asnumpy(), io["y"].asnumpy(), rtol=1e-5, atol=1e-6)
    assert sorted(net.collect_params()) == sorted(
        f"mlp_dense{i}_{k}" for i in range(3) for k in ("weight", "bias"))
    assert "SymbolBlock" in repr(net)


def test_export_matches_mxnet_files_and_round_trips(tmp_path):
    io = nd.load(_fix("gluon_mlp-io.params"))
    net = _mlp(prefix="mlp_")
    with pytest.raises(RuntimeError, match="hybridize"):
        net.export(str(tmp_path / "early"))
    net.hybridize()
    y = net(io["x"])
    sym_file, params_file = net.export(str(tmp_path / "my_mlp"), epoch=3)
    assert sym_file.endswith("my_mlp-symbol.json") and params_file.endswith("my_mlp-0003.params")
    with open(sym_file) as f, open(_fix("gluon_mlp-symbol.json")) as g:
        assert json.load(f) == json.load(g)  # the same graph JSON MXNet writes
    saved = nd.load(params_file)
    assert sorted(saved) == sorted(f"arg:mlp_dense{i}_{k}" for i in range(3)
                                   for k in ("weight", "bias"))
    back = gluon.SymbolBlock.imports(sym_file, "data", params_file, ctx=mx.cpu())
    np.testing.assert_allclose(back(io["x"]).asnumpy(), y.asnumpy(), rtol=1e-6)


def test_d2l_style_flow(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    net = _mlp()
    x = nd.random.uniform(shape=(2, 20))
    net.hybridize()
    y = net(x)
    for _ in range(5):  # "a timing"
        net(x)
    nd.waitall()
    net.export("my_mlp")
    assert os.path.exists("my_mlp-symbol.json") and os.path.exists("my_mlp-0000.params")
    net2 = gluon.SymbolBlock.imports("my_mlp-symbol.json", ["data"], "my_mlp-0000.params")
    np.testing.assert_allclose(net2(x).asnumpy(), y.asnumpy(), rtol=1e-6)


def test_symbolblock_from_symbols_trains_and_composes():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    out = mx.sym.Activation(fc, act_type="relu", name="act")
    block = gluon.SymbolBlock(out, data)
    block.initialize(mx.init.One())
    x = nd.ones((2, 3))
    np.testing.assert_array_equal(block(x).asnumpy(), np.full((2, 4), 4.0))
    assert block.collect_params()["fc_weight"].shape == (4, 3)  # deferred, from the graph
    with mx.autograd.record():
        loss = block(x).sum()
    loss.backward()
    np.testing.assert_array_equal(block.collect_params()["fc_bias"].grad().asnumpy(),
                                  [2.0] * 4)
    composed = block(mx.sym.var("other") * 2)
    assert composed.list_arguments() == ["other", "fc_weight", "fc_bias"]
    internals = out.get_internals()
    feat = gluon.SymbolBlock(internals["fc_output"], data,
                             params=block.collect_params())
    np.testing.assert_array_equal(feat(x).asnumpy(), np.full((2, 4), 4.0))


def test_imports_errors(tmp_path):
    p = tmp_path / "bad-symbol.json"
    p.write_text('{"nodes": [{"op": "NoSuchOp", "name": "x", "inputs": []}], "heads": [[0,0,0]]}')
    with pytest.raises(mx.MXNetError, match="NoSuchOp"):
        gluon.SymbolBlock.imports(str(p), ["data"])
    with pytest.raises(mx.MXNetError, match="missing"):
        gluon.SymbolBlock.imports(_fix("mlp-symbol.json"), ["data"],
                                  _fix("gluon_mlp-0000.params"))
