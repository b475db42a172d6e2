"""What a graph node says about its operator (inputs present for its attributes, visible
and hidden outputs and their names, parameter shapes from the data shape, initializers of
input variables) comes from the operator table (``OpDef::graph``), and agrees with MXNet
1.9.1's graphs of the same single-operator symbols, recorded in
``tests/fixtures/graph_facts`` (``record_graph_facts.py``)."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native
from ferromx.symbol import _spec

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "graph_facts", "graph_facts.json")
with open(FIX) as _f:
    CASES = json.load(_f)


def _build(case):
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in case["attrs"].items()}
    kw = {k: mx.sym.var(k) for k in case["given"]}
    return getattr(mx.sym, case["op"])(mx.sym.var("data"), name="n", **kw, **attrs)


def _id(case):
    return case["op"] + "-" + "-".join(f"{k}={v}" for k, v in case["attrs"].items())


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_graph_node_matches_mxnet(case):
    sym = _build(case)
    assert sym.list_arguments() == case["arguments"]
    assert sym.list_outputs() == case["outputs"]
    assert sym.list_auxiliary_states() == case["aux"]
    graph = json.loads(sym.tojson())
    assert graph["node_row_ptr"] == case["node_row_ptr"]  # hidden outputs counted
    inits = {n["name"]: n["attrs"]["__init__"] for n in graph["nodes"]
             if n["op"] == "null" and "__init__" in n.get("attrs", {})}
    assert inits == case["inits"]
    if case["data"] is not None:
        arg, _, aux = sym.infer_shape_partial(data=tuple(case["data"]))
        assert [list(s) for s in arg] == case["arg_shapes"]
        assert [list(s) for s in aux] == case["aux_shapes"]


def test_the_symbol_layer_keeps_no_per_operator_lists():
    """The facts are the table's: Python holds only MXNet's graph-JSON spellings."""
    for gone in ("FALLBACK", "_OUTPUT_NAMES", "_TOTAL_OUTPUTS", "AUX_INIT", "INPUT_INIT",
                 "_OPTIONAL_BY_FLAG"):
        assert not hasattr(_spec, gone), gone
    from ferromx.symbol import _infer
    assert not hasattr(_infer, "PARAM_RULES")
    bn = _spec.BY_NAME["BatchNorm"]["graph"]
    assert bn["named_outputs"] and bn["total"] == 3 and bn["param_shapes"]
    assert bn["input_init"] == {"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'}
    assert _spec.MXNET_NAMES["reshape"] == "Reshape"
    assert _spec.resolve("_PlusScalar") == "_plus_scalar"
    assert _spec.resolve("SliceChannel") == "split"


def test_native_graph_functions():
    assert _native.op_graph_inputs("FullyConnected", no_bias=True) == ["data", "weight"]
    assert _native.op_graph_outputs("topk", ret_typ="value") == (1, 2, ["output0"])
    assert _native.op_graph_outputs("BatchNorm", output_mean_var=True) == (
        3, 3, ["output", "mean", "var"])
    assert _native.op_param_shapes("FullyConnected", [2, 0], num_hidden=3) == [
        ("weight", [3, 0]), ("bias", [3])]  # an unknown dim stays unknown
    assert _native.op_param_shapes("FullyConnected", None, num_hidden=3) == []
    with pytest.raises(Exception, match="no such operator"):
        _native.op_graph_inputs("NoSuchOp")


def test_partial_data_shape_leaves_the_weight_for_later():
    """A 0 (unknown) data dimension the weight depends on: the weight is partial until the
    data shape is given, then infers (MXNet 1.9.1 raises on this partial shape)."""
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    arg, _, _ = sym.infer_shape_partial(data=(2, 0))
    assert arg[1] == (4, 0) and arg[2] == (4,)
    arg, out, _ = sym.infer_shape(data=(2, 6))
    assert arg[1] == (4, 6) and out[0] == (2, 4)


def test_partial_weight_shape_reaches_a_cast_variable():
    """MXNet's test_symbol_infer_shape: the weight behind a cast gets (64, 0, 7, 7) while
    the data's channels are unknown."""
    data = mx.sym.Variable("data", shape=(1, 0, 0, 0))
    weight = mx.sym.Variable("weight")
    conv = mx.sym.Convolution(data=mx.sym.cast(data, dtype="float16"),
                              weight=mx.sym.cast(weight, dtype="float16"), pad=(3, 3),
                              num_filter=64, stride=(2, 2), no_bias=True, kernel=(7, 7))
    arg, _, _ = conv.infer_shape_partial()
    shapes = dict(zip(conv.list_arguments(), arg))
    assert shapes["data"] == (1, 0, 0, 0) and shapes["weight"] == (64, 0, 7, 7)


def test_numpy_integers_in_tuple_attributes_are_written_as_python_numbers():
    import numpy as onp
    sym = mx.sym.transpose(mx.sym.var("x"), axes=(onp.int64(1), onp.int64(0)))
    node = json.loads(sym.tojson())["nodes"][-1]
    assert node["attrs"]["axes"] == "(1, 0)"
    out = sym.bind(mx.cpu(), {"x": mx.nd.array([[1, 2, 3]])}).forward()[0]
    assert out.shape == (3, 1)


@pytest.mark.parametrize("ret_typ,want", [
    # recorded with MXNet 1.9.1: topk(x: float64, k=2, dtype='int32').infer_type
    ("value", ["float64"]), ("indices", ["int32"]), ("both", ["float64", "int32"]),
    ("mask", ["float64"]),
])
def test_topk_output_dtypes_come_from_the_table(ret_typ, want):
    sym = mx.sym.topk(mx.sym.var("x"), ret_typ=ret_typ, k=2, dtype="int32")
    _, out, _ = sym.infer_type(x="float64")
    assert [np.dtype(t).name for t in out] == want


def test_inference_code_names_no_operator():
    """The type and shape passes hold no operator's name: per-operator facts are the
    table's."""
    import inspect
    import re

    from ferromx.symbol import _infer
    src = inspect.getsource(_infer)
    assert not re.search(r'== "(topk|split|concat|FullyConnected|Convolution|BatchNorm)"', src)
    assert not re.search(r'"(FullyConnected|Convolution|Pooling|BatchNorm|topk)":', src)
