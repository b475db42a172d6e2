"""``mx.sym`` functions whose ``nd`` forms are Python over table operators (function
nodes: ``symbol/_nd_functions.py``), the samplers' ``*_like`` and density symbols,
source operators' shapes, and ``Executor.debug_str``'s memory figure."""

import json
import re

import ferromx as mx
import numpy as onp
import pytest
from ferromx.base import NotImplementedForSymbol

MXNET_SYM_NAMES = {  # a sample of MXNet 1.9.1's mx.sym names that are nd Python functions here
    "arange", "eye", "linspace", "cumsum", "linalg_gemm", "linalg_syrk", "random_normal",
    "sample_uniform", "smooth_l1", "hard_sigmoid", "khatri_rao", "L2Normalization",
    "depth_to_space", "space_to_depth", "moments", "unravel_index", "random_pdf_normal",
}


def test_the_names_exist_and_are_builders():
    for name in MXNET_SYM_NAMES:
        assert callable(getattr(mx.sym, name)), name
    for meth in ("depth_to_space", "space_to_depth", "split_v2", "broadcast_axes", "diag",
                 "debug_str"):
        assert callable(getattr(mx.sym.Symbol, meth)), meth


def test_source_functions_without_symbol_inputs():
    s = mx.sym.arange(0, 5)
    assert s.infer_shape() == ([], [(5,)], [])
    onp.testing.assert_array_equal(s.eval()[0].asnumpy(), onp.arange(5, dtype="float32"))
    e = mx.sym.eye(3) * 2
    onp.testing.assert_array_equal(e.eval()[0].asnumpy(), 2 * onp.eye(3, dtype="float32"))


def test_linalg_namespace_prefers_table_operators():
    x = mx.sym.var("x")
    g = mx.sym.linalg.gemm2(x, x, transpose_b=True)
    assert not hasattr(g._heads[0][0], "call")  # the _linalg_gemm2 table operator
    m = onp.array([[1.0, 2.0], [3.0, 4.0]], "float32")
    onp.testing.assert_allclose(g.eval(x=mx.nd.array(m))[0].asnumpy(), m @ m.T)
    d = mx.sym.linalg.det(x)
    onp.testing.assert_allclose(d.eval(x=mx.nd.array(m))[0].asnumpy(), onp.linalg.det(m),
                                rtol=1e-5)


def test_function_node_gradient_through_an_executor():
    x = mx.sym.var("x")
    y = mx.sym.smooth_l1(x * 2, scalar=1.0)
    v = onp.array([-2.0, -0.2, 0.1, 3.0], "float32")
    ex = y.simple_bind(mx.cpu(), x=(4,))
    ex.forward(is_train=True, x=v)
    z = 2 * v
    want = onp.where(onp.abs(z) < 1, 0.5 * z * z, onp.abs(z) - 0.5)
    onp.testing.assert_allclose(ex.outputs[0].asnumpy(), want, rtol=1e-6)
    ex.backward(mx.nd.ones((4,)))
    grad = 2 * onp.where(onp.abs(z) < 1, z, onp.sign(z))
    onp.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), grad, rtol=1e-6)


def test_random_like_and_symbol_parameters():
    data = mx.sym.var("data")
    mx.random.seed(7)
    a = mx.sym.random.exponential_like(data, lam=4.0).eval(data=mx.nd.ones((200, 200)))[0]
    assert a.shape == (200, 200)
    assert abs(float(a.asnumpy().mean()) - 0.25) < 0.02  # lam is a rate, as in MXNet
    lam = mx.sym.var("lam")
    p = mx.sym.random.poisson(lam, shape=(500,)).eval(lam=mx.nd.array([1.0, 20.0]))[0]
    assert p.shape == (2, 500)
    means = p.asnumpy().mean(axis=1)
    assert abs(means[0] - 1) < 0.3 and abs(means[1] - 20) < 1.5
    loc = mx.sym.var("loc")
    n = mx.sym.random.normal(loc, mx.sym.var("scale"), shape=(400,))
    out = n.eval(loc=mx.nd.array([5.0]), scale=mx.nd.array([0.1]))[0].asnumpy()
    assert out.shape == (1, 400) and abs(out.mean() - 5) < 0.05


def test_random_pdf_symbol_matches_nd():
    s, mu, sigma = mx.sym.var("s"), mx.sym.var("mu"), mx.sym.var("sigma")
    pdf = mx.sym.random_pdf_normal(sample=s, mu=mu, sigma=sigma)
    sv = mx.nd.array([[0.0, 1.0, -1.0]])
    args = {"s": sv, "mu": mx.nd.array([0.5]), "sigma": mx.nd.array([2.0])}
    want = mx.nd.random_pdf_normal(sample=sv, mu=args["mu"], sigma=args["sigma"])
    onp.testing.assert_allclose(pdf.eval(**args)[0].asnumpy(), want.asnumpy(), rtol=1e-6)


def test_a_source_operator_gives_its_shape_to_inference():
    data = mx.sym.var("data")
    s = mx.sym.slice_like(data, mx.sym.zeros((3, 3)), axes=(0, -2))
    assert s.infer_shape(data=(5, 17, 1)) == ([(5, 17, 1)], [(3, 3, 1)], [])
    ex = s.simple_bind(mx.cpu(), data=(5, 17, 1))
    ex.forward(data=onp.ones((5, 17, 1), "float32"))
    assert ex.outputs[0].shape == (3, 3, 1)


def _mb(ex):
    return int(re.search(r"Total (\d+) MB allocated", ex.debug_str()).group(1))


def test_debug_str_memory_counts_only_reachable_gradients():
    data = mx.sym.var("data")
    chain = data
    for _ in range(10):
        chain = chain * chain
    shape = (10, 3, 256, 256)  # 7.5 MB per array
    big = _mb(chain.simple_bind(mx.cpu(), data=shape))
    null = _mb(chain.simple_bind(mx.cpu(), data=shape, grad_req="null"))
    blocked = _mb(mx.sym.stop_gradient(chain).simple_bind(mx.cpu(), data=shape))
    assert null == blocked  # stop_gradient: no gradient buffer, forward frees as it goes
    assert big > 80 > blocked  # backward keeps the ten outputs and the gradient


def test_symbol_debug_str_and_unsupported_methods():
    x = mx.sym.var("x")
    text = mx.sym.FullyConnected(x, num_hidden=3, name="fc").debug_str()
    assert "Op:FullyConnected, Name=fc" in text and "arg[1]=fc_weight(0)" in text
    assert "num_hidden=3" in text
    with pytest.raises(NotImplementedForSymbol):
        x.backward()


def test_function_nodes_are_refused_by_json_with_their_names():
    g = mx.sym.arange(0, 3) + mx.sym.var("x")
    with pytest.raises(mx.base.MXNetError, match="arange"):
        json.loads(g.tojson())
