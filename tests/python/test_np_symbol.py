"""``mx.sym.np`` / ``mx.sym.npx`` and ``Symbol.as_np_ndarray()``: NumPy-semantics symbols
built from function nodes (``ferromx/symbol/_np_symbol.py``)."""

import json

import ferromx as mx
import numpy as onp
import pytest
from ferromx import np as mnp
from ferromx.base import MXNetError
from ferromx.symbol._np_symbol import NpSymbol
from ferromx.symbol.executor import Plan
from ferromx.test_utils import check_numeric_gradient


def _vars(*names):
    return [mx.sym.var(n).as_np_ndarray() for n in names]


def test_as_np_and_as_nd_switch_the_class_over_one_graph():
    a = mx.sym.var("a")
    s = a.as_np_ndarray()
    assert isinstance(s, NpSymbol) and type(s) is mx.sym.np._Symbol
    back = s.as_nd_ndarray()
    assert type(back) is mx.sym.Symbol
    assert back.list_arguments() == ["a"] and back._heads == s._heads
    assert s.as_np_ndarray() is s and a.as_nd_ndarray() is a


def test_tensordot_infers_runs_and_differentiates():
    a, b = _vars("a", "b")
    sym = mx.sym.np.tensordot(a, b, axes=1).as_nd_ndarray()
    assert sym.list_arguments() == ["a", "b"]
    assert sym.list_outputs() == ["tensordot0_output"] or sym.list_outputs()[0].endswith("_output")
    args, outs, aux = sym.infer_shape(a=(2, 3), b=(3, 4))
    assert args == [(2, 3), (3, 4)] and outs == [(2, 4)] and aux == []
    x = onp.random.RandomState(0).rand(2, 3).astype("float32")
    y = onp.random.RandomState(1).rand(3, 4).astype("float32")
    ex = sym.simple_bind(mx.cpu(), a=(2, 3), b=(3, 4))
    ex.forward(is_train=True, a=x, b=y)
    onp.testing.assert_allclose(ex.outputs[0].asnumpy(), x @ y, rtol=1e-5)
    head = onp.random.RandomState(2).rand(2, 4).astype("float32")
    ex.backward(mx.nd.array(head))
    onp.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), head @ y.T, rtol=1e-5)
    onp.testing.assert_allclose(ex.grad_dict["b"].asnumpy(), x.T @ head, rtol=1e-5)
    check_numeric_gradient(sym, [mx.nd.array(x), mx.nd.array(y)], numeric_eps=1e-3,
                           rtol=1e-2, atol=1e-3, dtype=onp.float32)


def test_np_semantics_arithmetic_comparison_and_methods():
    a, b = _vars("a", "b")
    s = ((a + b * 2).reshape(-1).sum() > 0)
    out = s.as_nd_ndarray()
    _, shapes, _ = out.infer_shape(a=(2, 3), b=(2, 3))
    assert shapes == [()]  # a full np reduction is 0-d
    _, types, _ = out.infer_type(a="float32", b="float32")
    assert types == [onp.bool_]
    x, y = onp.ones((2, 3), "float32"), -onp.ones((2, 3), "float32")
    res = out.eval(a=mx.nd.array(x), b=mx.nd.array(y))[0]
    assert res.asnumpy().dtype == onp.bool_ and not res.asnumpy()
    t = a.T.as_nd_ndarray()
    assert t.infer_shape(a=(2, 5))[1] == [(5, 2)]
    neg = (-a)[0].as_nd_ndarray()  # np indexing on a single-output np symbol
    got = neg.eval(a=mx.nd.array(onp.arange(6, dtype="float32").reshape(2, 3)))[0]
    onp.testing.assert_array_equal(got.asnumpy(), -onp.arange(3, dtype="float32"))


def test_multi_output_functions_have_one_graph_output_each():
    (a,) = _vars("a")
    parts = mx.sym.np.split(a, 3, axis=1)
    assert len(parts) == 3 and len(parts.list_outputs()) == 3
    assert isinstance(parts[1], NpSymbol)
    outs = parts.as_nd_ndarray().eval(a=mx.nd.array(onp.arange(12, dtype="float32").reshape(2, 6)))
    want = onp.split(onp.arange(12, dtype="float32").reshape(2, 6), 3, axis=1)
    for o, w in zip(outs, want):
        onp.testing.assert_array_equal(o.asnumpy(), w)


def test_list_arguments_stack_linalg_and_npx():
    a, b = _vars("a", "b")
    st = mx.sym.np.stack([a, b], axis=1)
    assert st.as_nd_ndarray().infer_shape(a=(4, 2), b=(4, 2))[1] == [(4, 2, 2)]
    det = mx.sym.np.linalg.det(a).as_nd_ndarray()
    m = onp.array([[2.0, 1.0], [1.0, 3.0]], "float32")
    onp.testing.assert_allclose(det.eval(a=mx.nd.array(m))[0].asnumpy(), 5.0, rtol=1e-5)
    relu = mx.sym.npx.relu(a - 1).as_nd_ndarray()
    got = relu.eval(a=mx.nd.array(onp.array([0.0, 3.0], "float32")))[0]
    onp.testing.assert_array_equal(got.asnumpy(), [0.0, 2.0])


def test_legacy_operators_compose_with_np_symbols():
    a, b = _vars("a", "b")
    mixed = mx.sym.relu(mx.sym.np.outer(a, b).as_nd_ndarray()) + 1
    got = mixed.eval(a=mx.nd.array([1.0, -2.0]), b=mx.nd.array([3.0, 1.0]))[0]
    onp.testing.assert_array_equal(got.asnumpy(), onp.maximum(onp.outer([1, -2], [3, 1]), 0) + 1)


def test_function_nodes_run_in_the_python_plan_and_json_only_as_mxnet_operators():
    a, b = _vars("a", "b")
    sym = mx.sym.np.dot(a, b).as_nd_ndarray()
    plan = Plan(sym, ["a", "b"])
    assert plan.native is None  # the native plan runs table operators only
    assert [n["op"] for n in json.loads(sym.tojson())["nodes"]] == ["null", "null", "_np_dot"]
    outer = mx.sym.np.outer(a, b)  # MXNet has no single operator for it
    with pytest.raises(MXNetError, match="function nodes.*outer"):
        outer.tojson()
    legacy = mx.sym.dot(mx.sym.var("a"), mx.sym.var("b"))
    assert Plan(legacy, ["a", "b"]).native is not None


def test_a_failing_function_names_the_node():
    a, b = _vars("a", "b")
    sym = mx.sym.np.dot(a, b).as_nd_ndarray()
    with pytest.raises(MXNetError, match="dot"):
        sym.infer_shape(a=(2, 3), b=(4, 5))


def test_np_dot_follows_numpy_for_nd_operands():
    rs = onp.random.RandomState(3)
    for sa, sb in [((3, 5, 4), (5, 4, 3)), ((3, 4), (5, 4, 3)), ((4,), (5, 4, 3)), ((), (2, 3, 4)),
                   ((2, 3), (3,))]:
        x = onp.asarray(rs.rand(*sa), "float32")
        y = onp.asarray(rs.rand(*sb), "float32")
        got = mnp.dot(mnp.array(x), mnp.array(y))
        want = onp.dot(x, y)
        assert got.shape == want.shape
        onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5)


def test_sum_and_mean_with_dtype_accumulate_as_mxnet():
    x = mnp.array(onp.array([100, 100, 100], "int8"), dtype="int8")
    assert int(mnp.sum(x)) == 44  # no dtype: int8 wraps, as MXNet
    assert float(mnp.sum(x, dtype="float16")) == 300.0
    assert int(mnp.prod(x, dtype="int32")) == 1000000
    h = mnp.array(onp.array([60000, 60000], "float16"), dtype="float16")
    assert float(mnp.sum(h, dtype="float32")) == 120000.0
    m = mnp.array(onp.array([[100, 100, 1]], "int8"), dtype="int8")
    want = onp.mean(onp.array([[100, 100, 1]], "int8"), axis=1, dtype="int8")
    got = mnp.mean(m, axis=1, dtype="int8")
    assert got.dtype == onp.int8 and got.asnumpy().tolist() == want.tolist()


def test_inference_on_zeros_leaves_no_failure_behind():
    (a,) = _vars("a")
    chol = mx.sym.np.linalg.cholesky(a).as_nd_ndarray()
    assert chol.infer_shape(a=(3, 3))[1] == [(3, 3)]  # runs on zeros: not positive definite
    mx.nd.waitall()  # the failed factorization is not reported here
