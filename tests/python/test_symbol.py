"""mx.sym: graph building, naming, inference, MXNet graph JSON and executors.

Graphs, shapes and outputs recorded with MXNet 1.9.1 are in tests/fixtures/symbol
(``record_symbol.py``); ``check_with_mxnet.py`` there is the live check in both directions.
"""

import json
import os
import pickle
import warnings

import ferromx as mx
import numpy as np
import pytest
from ferromx import test_utils as tu
from ferromx.base import MXNetError, NotImplementedForSymbol

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "symbol")
with open(os.path.join(FIX, "graphs.json")) as _f:
    GRAPHS = json.load(_f)


def _fix(name):
    return os.path.join(FIX, name)


# ----------------------------------------------------------------------------- MXNet fixtures


@pytest.mark.parametrize("name", ["mlp", "convnet", "multi"])
def test_mxnet_graph_loads_infers_and_round_trips(name):
    sym = mx.sym.load(_fix(f"{name}-symbol.json"))
    rec = GRAPHS[name]
    assert sym.list_arguments() == rec["arguments"]
    assert sym.list_outputs() == rec["outputs"]
    assert sym.list_auxiliary_states() == rec["aux"]
    arg, out, aux = sym.infer_shape(**rec["given"])
    assert [list(s) for s in arg] == rec["arg_shapes"]
    assert [list(s) for s in out] == rec["out_shapes"]
    assert [list(s) for s in aux] == rec["aux_shapes"]
    with open(_fix(f"{name}-symbol.json")) as f:
        assert json.loads(sym.tojson()) == json.loads(f.read())


@pytest.mark.parametrize("name", ["mlp", "multi"])
def test_mxnet_graph_outputs(name):
    sym = mx.sym.load(_fix(f"{name}-symbol.json"))
    args = mx.nd.load(_fix(f"{name}-inputs.params"))
    want = mx.nd.load(_fix(f"{name}-outputs.params"))
    outs = sym.bind(mx.cpu(), args).forward()
    assert len(outs) == len(want)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), want[f"out{i}"].asnumpy(), rtol=1e-5, atol=1e-6)


def test_convnet_runs_only_once_its_operators_exist():
    sym = mx.sym.load(_fix("convnet-symbol.json"))
    if hasattr(mx.sym, "Convolution"):
        pytest.skip("Convolution exists: covered by the executor tests")
    with pytest.raises(MXNetError, match="Convolution .*not implemented in ferromx yet"):
        sym.simple_bind(mx.cpu(), data=(2, 3, 8, 8))


@pytest.mark.parametrize("key", sorted(GRAPHS["exprs"]))
def test_graph_json_matches_mxnet(key):
    rec = GRAPHS["exprs"][key]
    with mx.name.NameManager():
        a, b = mx.sym.var("a"), mx.sym.var("b")
        sym = eval(rec["src"], {"mx": mx, "a": a, "b": b})
    assert json.loads(sym.tojson()) == rec["json"]


# ----------------------------------------------------------------------------- building


def test_auto_naming_and_outputs():
    with mx.name.NameManager():
        x = mx.sym.var("x")
        fc = mx.sym.FullyConnected(x, num_hidden=4)
        fc2 = mx.sym.FullyConnected(fc, num_hidden=2)
        assert (fc.name, fc2.name) == ("fullyconnected0", "fullyconnected1")
        assert fc.list_arguments() == ["x", "fullyconnected0_weight", "fullyconnected0_bias"]
        assert fc.list_outputs() == ["fullyconnected0_output"]
        assert (x + 1).name == "_plusscalar0"
        assert (x * x).name == "_mul0"
        assert (2 - x).name == "_rminusscalar0"
        assert mx.sym.exp(x, name="e").name == "e"
    with mx.name.Prefix("net_"):
        assert mx.sym.relu(mx.sym.var("y")).name == "net_relu0"


def test_multi_output_getitem_internals_children():
    x = mx.sym.var("x")
    s = mx.sym.split(x, num_outputs=3, axis=1, name="sp")
    assert len(s) == 3 and s.name == "sp"
    assert s.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]
    assert s["sp_output1"].list_outputs() == ["sp_output1"]
    assert s[-1].list_outputs() == ["sp_output2"]
    with pytest.raises(ValueError, match="Cannot find output"):
        s["nope"]
    with pytest.raises(IndexError):
        s[3]
    fc = mx.sym.FullyConnected(s[0] + s[2], num_hidden=3, name="fc")
    internals = fc.get_internals()
    assert "sp_output0" in internals.list_outputs()
    assert internals.list_outputs()[-1] == "fc_output"
    sub = internals["sp_output2"]
    out = sub.bind(mx.cpu(), {"x": mx.nd.arange(6).reshape((1, 6))}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), [[4, 5]])
    assert fc.get_children().list_outputs()[1:] == ["fc_weight", "fc_bias"]
    assert x.get_children() is None
    g = mx.sym.Group([fc, s[1]])
    assert g.list_outputs() == ["fc_output", "sp_output1"]
    assert [o.name for o in g] == ["fc", "sp"]


def test_attributes_and_variables():
    w = mx.sym.var("w", shape=(2, 3), dtype="float64", lr_mult=2.0, wd_mult=0.5,
                   init=mx.init.Xavier(), __extra__="1")
    assert w.attr("__shape__") == "(2, 3)"
    assert w.attr("__dtype__") == "1"
    assert w.attr("__lr_mult__") == "2.0" and w.attr("__wd_mult__") == "0.5"
    assert json.loads(w.attr("__init__"))[0] == "xavier"
    with pytest.raises(ValueError, match="double underscores"):
        mx.sym.var("v", bad=1)
    with mx.AttrScope(group="4"):
        fc = mx.sym.FullyConnected(mx.sym.var("d"), num_hidden=2, name="fc")
    assert fc.attr("group") == "4" and fc.attr("num_hidden") == "2"
    fc._set_attr(mood="ok")
    assert fc.list_attr()["mood"] == "ok"
    assert fc.attr_dict()["fc"]["mood"] == "ok"
    with pytest.raises(ValueError):
        fc._set_attr(mood=1)
    arg_shapes, out_shapes, _ = (w * 2).infer_shape()
    assert arg_shapes == [(2, 3)] and out_shapes == [(2, 3)]
    assert (w * 2).infer_type()[1] == [np.float64]


def test_errors_name_the_operator_and_value_dependence():
    x = mx.sym.var("x")
    with pytest.raises(mx.base.MXNetValueError, match="FullyConnected.*unknown parameter"):
        mx.sym.FullyConnected(x, num_hidden=2, bogus=3)
    with pytest.raises(TypeError, match="must be a Symbol"):
        mx.sym.exp(mx.nd.ones((2,)))
    with pytest.raises(NotImplementedForSymbol, match="bool"):
        bool(x > 0)
    with pytest.raises(NotImplementedForSymbol):
        x.asnumpy()


def test_compose_and_copy():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    f = mx.sym.exp(x) + 1
    g = f(x=y * 2)
    assert g.list_arguments() == ["y"]
    out = g.eval(y=mx.nd.array([0.0, 0.5]))[0]
    np.testing.assert_allclose(out.asnumpy(), np.exp([0.0, 1.0]) + 1, rtol=1e-6)
    c = f.copy()
    assert c.tojson() == f.tojson() and c._heads[0][0] is not f._heads[0][0]


# ----------------------------------------------------------------------------- inference


def test_infer_shape_backward_rules_and_partial():
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=4, name="fc")
    emb = mx.sym.Embedding(mx.sym.var("idx"), input_dim=10, output_dim=3, name="emb")
    ln = mx.sym.LayerNorm(fc, name="ln")
    arg, out, _ = mx.sym.Group([ln, emb]).infer_shape(x=(2, 3, 5), idx=(7,))
    assert arg == [(2, 3, 5), (4, 15), (4,), (4,), (4,), (7,), (10, 3)]
    assert out == [(2, 4), (7, 3)]
    arg, out, _ = fc.infer_shape_partial(x=(0, 3, 5))
    assert arg[1] == (4, 15) and out == [(0, 4)]
    assert fc.infer_shape_partial() == ([(), (), ()], [()], [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fc.infer_shape() == (None, None, None)
    assert "Cannot decide shape" in str(caught[0].message)
    with pytest.raises(MXNetError, match="Keyword argument name nope not found"):
        fc.infer_shape(nope=(1,))
    with pytest.raises(MXNetError, match="Shape inconsistent"):
        fc.infer_shape(x=(2, 3, 5), fc_weight=(5, 15))
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert (a + b).infer_shape(a=(2, 3))[0] == [(2, 3), (2, 3)]


def test_infer_type():
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=4)
    assert fc.infer_type(x="float64") == ([np.float64] * 3, [np.float64], [])
    assert fc.infer_type() == (None, None, None)
    assert fc.infer_type_partial() == ([None] * 3, [None], [])
    c = mx.sym.cast(x, dtype="int32")
    assert c.infer_type(x="float32")[1] == [np.int32]


# ----------------------------------------------------------------------------- executors


def _mlp():
    x = mx.sym.var("x")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=3, name="fc1"), act_type="tanh")
    return mx.sym.FullyConnected(h, num_hidden=2, name="fc2")


def test_simple_bind_forward_backward_matches_numpy():
    net = _mlp()
    ex = net.simple_bind(mx.cpu(), x=(4, 5))
    rng = np.random.RandomState(0)
    vals = {k: rng.uniform(-1, 1, a.shape).astype(np.float32) for k, a in ex.arg_dict.items()}
    for k, v in vals.items():
        ex.arg_dict[k][:] = v
    out = ex.forward(is_train=True)[0]
    h = np.tanh(vals["x"] @ vals["fc1_weight"].T + vals["fc1_bias"])
    want = h @ vals["fc2_weight"].T + vals["fc2_bias"]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    head = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    ex.backward(mx.nd.array(head))
    np.testing.assert_allclose(ex.grad_dict["fc2_bias"].asnumpy(), head.sum(0), rtol=1e-5)
    np.testing.assert_allclose(ex.grad_dict["fc2_weight"].asnumpy(), head.T @ h, rtol=1e-5,
                               atol=1e-6)
    dh = (head @ vals["fc2_weight"]) * (1 - h * h)
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), dh @ vals["fc1_weight"],
                               rtol=1e-4, atol=1e-6)
    assert ex.output_dict["fc2_output"] is ex.outputs[0]
    assert len(ex.arg_arrays) == len(ex.grad_arrays) == 5 and ex.aux_dict == {}


def test_bind_grad_req_add_and_null():
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    s = x * y
    args = {"x": mx.nd.array([1.0, 2.0]), "y": mx.nd.array([3.0, 4.0])}
    grads = {"x": mx.nd.ones((2,)), "y": mx.nd.zeros((2,))}
    ex = s.bind(mx.cpu(), args, args_grad=grads, grad_req={"x": "add", "y": "null"})
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones((2,)))
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), [7.0, 9.0])
    np.testing.assert_array_equal(grads["y"].asnumpy(), [0.0, 0.0])
    out = ex.forward(x=np.array([5.0, 6.0], np.float32))[0]
    np.testing.assert_array_equal(out.asnumpy(), [15.0, 24.0])
    with pytest.raises(ValueError, match="unknown argument"):
        ex.forward(z=np.ones(2))
    with pytest.raises(ValueError, match="no array for"):
        s.bind(mx.cpu(), {"x": mx.nd.ones((2,))})


def test_check_symbolic_helpers_and_numeric_gradient():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    s = mx.sym.Group([mx.sym.sin(x) * y, x + y])
    xv = np.array([[0.1, 0.5], [1.0, -0.3]], np.float32)
    yv = np.array([[2.0, 1.0], [-1.0, 0.5]], np.float32)
    tu.check_symbolic_forward(s, [xv, yv], [np.sin(xv) * yv, xv + yv], rtol=1e-5)
    tu.check_symbolic_forward(s, {"x": xv, "y": yv}, {s.list_outputs()[1]: xv + yv})
    with pytest.raises(AssertionError):
        tu.check_symbolic_forward(s, [xv, yv], [np.cos(xv) * yv, xv + yv])
    og = [np.ones_like(xv), 2 * np.ones_like(xv)]
    want = {"x": np.cos(xv) * yv + 2, "y": np.sin(xv) + 2}
    tu.check_symbolic_backward(s, [xv, yv], og, want, rtol=1e-5)
    tu.check_symbolic_backward(s, [xv, yv], og, want, rtol=1e-5, grad_req="add")
    with pytest.raises(AssertionError):
        tu.check_symbolic_backward(s, [xv, yv], og, {"x": np.cos(xv), "y": want["y"]})
    tu.check_numeric_gradient(mx.sym.tanh(x) * y, [xv, yv])
    tu.check_numeric_gradient(_mlp(), {"x": np.ones((2, 5)), "fc1_weight": np.ones((3, 5)) * .1,
                                       "fc1_bias": np.zeros(3), "fc2_weight": np.ones((2, 3)),
                                       "fc2_bias": np.zeros(2)}, grad_nodes=["x", "fc1_weight"])
    assert tu.simple_forward(x * 2, x=np.ones(2)).tolist() == [2.0, 2.0]
    assert tu.same_symbol_structure(_mlp(), _mlp())
    assert not tu.same_symbol_structure(_mlp(), s)


def test_json_save_load_file(tmp_path):
    net = _mlp()
    f = str(tmp_path / "net-symbol.json")
    net.save(f)
    back = mx.sym.load(f)
    assert back.tojson() == net.tojson()
    assert mx.sym.fromjson(net.tojson()).list_arguments() == net.list_arguments()
    with pytest.raises(MXNetError, match="not an MXNet graph JSON"):
        mx.sym.load_json("{}")
    doc = json.loads(net.tojson())
    doc["nodes"][2]["op"] = "NoSuchOp"
    with pytest.raises(MXNetError, match="NoSuchOp"):
        mx.sym.load_json(json.dumps(doc))


def test_every_table_operator_has_a_symbol_function():
    from ferromx import _op_gen

    for d in _op_gen.TABLE:
        for public in _op_gen.nd_names(d):
            assert hasattr(mx.sym, public), public
    assert mx.symbol is mx.sym


def test_check_consistency_and_common_expression_elimination(monkeypatch):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    s = mx.sym.Group([(a + b) * (a + b), a * (a + 1)])
    spec32 = {"ctx": mx.cpu(), "a": (3, 4), "b": (3, 4)}
    spec64 = dict(spec32, type_dict={"a": np.float64, "b": np.float64})
    gt = tu.check_consistency(s, [spec32, spec64])
    assert gt[s.list_outputs()[0]].dtype == np.float64 and "a" in gt
    ex = s.simple_bind(mx.cpu(), a=(2,), b=(2,))
    internals = len(ex.get_optimized_symbol().get_internals())
    assert internals + 1 == len(s.get_internals())  # (a+b) computed once
    out = ex.forward(a=np.array([1.0, 2.0], np.float32), b=np.array([3.0, 4.0], np.float32))
    np.testing.assert_array_equal(out[0].asnumpy(), [16.0, 36.0])
    dup = mx.sym.Group([a * b, a * b])
    ex2 = dup.simple_bind(mx.cpu(), a=(2,), b=(2,))
    o1, o2 = ex2.forward()
    assert o1 is not o2  # a repeated head gets a copy
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "0")
    ex3 = s.simple_bind(mx.cpu(), a=(2,), b=(2,))
    assert len(ex3.get_optimized_symbol().get_internals()) == len(s.get_internals())
    assert "Total" in ex3.debug_str()
    assert pickle.loads(pickle.dumps(s)).tojson() == s.tojson()


def test_partial_inference_both_directions():
    a = mx.sym.var("a", shape=(0, 10))
    c = mx.sym.var("c", shape=(5, 0))
    d = mx.sym.FullyConnected(a, num_hidden=21) + c
    arg = dict(zip(d.list_arguments(), d.infer_shape()[0]))
    assert arg["a"] == (5, 10) and arg["c"] == (5, 21)
    x = mx.sym.var("x", shape=(0, 15, 0))
    parts = mx.sym.split(x, num_outputs=3, axis=1)
    y = parts[1] + mx.sym.var("y", shape=(3, 5, 2))
    assert y.infer_shape()[0][0] == (3, 15, 2)
    z = mx.sym.dot(mx.sym.var("p"), mx.sym.var("q"))
    assert z.infer_shape_partial(p=(0, 3, 4), q=(4, 5))[1] == [(0, 3, 5)]
    with mx.np_shape(True):
        assert z.infer_shape_partial(p=(-1, 3, 4), q=(4, 5))[1] == [(-1, 3, 5)]
        assert '"is_np_shape"' in z.tojson()


@pytest.mark.parametrize("mode, bidirectional, want", [
    # recorded from MXNet 1.9.1: (5, 2, 16) data, state_size=8, num_layers=2
    ("lstm", False, [(5, 2, 16), (1408,), (2, 2, 8), (2, 2, 8)]),
    ("gru", True, [(5, 2, 16), (2496,), (4, 2, 8)]),
    ("rnn_tanh", False, [(5, 2, 16), (352,), (2, 2, 8)]),
])
def test_rnn_parameters_and_states_from_the_data_shape(mode, bidirectional, want):
    d = mx.sym.Variable("data", shape=(5, 2, 16))
    s = mx.sym.RNN(data=d, state_size=8, num_layers=2, bidirectional=bidirectional, mode=mode,
                   state_outputs=True, name="rnn")
    args, _, _ = s.infer_shape()
    assert args == want
    ex = s.simple_bind(mx.cpu(), grad_req="null")
    assert ex.forward()[0].shape == (5, 2, 16 if bidirectional else 8)


def test_contrib_nodes_are_named_as_mxnet_names_them():
    x = mx.sym.Variable("x")
    # recorded from MXNet 1.9.1: box_nms0, quantize_v20 (the short name, as the function's)
    assert mx.sym.contrib.box_nms(x).name.startswith("box_nms")
    assert mx.sym.contrib.quantize_v2(x).name.startswith("quantize_v2")
    assert not mx.sym.contrib.box_nms(x).name.startswith("_contrib_")
