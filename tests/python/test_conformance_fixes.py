"""Regression tests for the fixes found by running MXNet 1.9.1's own unit tests
(``tools/mxnet_conformance.py``, see ``docs/conformance.md``). Each asserts what MXNet 1.9.1
does (checked in an MXNet 1.9.1 venv); none needs MXNet at test time."""

import json
import threading

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd
from ferromx.base import MXNetError


def test_test_utils_star_import_hands_out_mxnets_modules():
    ns = {}
    exec("from ferromx.test_utils import *", ns)  # noqa: S102 - what MXNet's tests do
    for name in ("mx", "np", "sys", "os", "time", "rnd", "array", "Context", "OrderedDict",
                 "contextmanager", "default_context", "assert_almost_equal"):
        assert name in ns, name
    assert ns["mx"] is mx and ns["np"] is np


def test_autograd_star_import_has_ndarray():
    ns = {}
    exec("from ferromx.autograd import *", ns)  # noqa: S102
    assert ns["NDArray"] is nd.NDArray and "mark_variables" in ns


def test_legacy_random_names_use_operator_argument_order():
    a = nd.random_uniform(0, 1, (2, 3), None, "float64")  # low, high, shape, ctx, dtype
    assert a.shape == (2, 3) and a.dtype == np.float64
    assert nd.uniform(0, 1, (4,)).dtype == np.float32
    assert nd.random_normal(0, 1, shape=(5,)).shape == (5,)
    assert nd.random_randint(0, 5, shape=(3,)).dtype == np.int32
    lo, hi = nd.array([0, 1]), nd.array([1, 2])
    assert nd.sample_uniform(lo, hi, shape=3).shape == (2, 3)
    s = nd.sample_uniform(lo, hi).asnumpy()
    assert s.shape == (2,) and 0 <= s[0] < 1 and 1 <= s[1] < 2


def test_random_exponential_lam_is_a_rate():
    mx.random.seed(1)
    m = float(nd.random_exponential(lam=4, shape=(20000,)).mean().asscalar())
    assert abs(m - 0.25) < 0.02  # MXNet 1.9.1 (seed 1): 0.250416


def test_tostype_default_is_a_copy_and_sparse_raises():
    x = nd.ones((2, 2))
    y = x.tostype("default")
    assert y.stype == "default"
    y[:] = 3
    assert x.asnumpy()[0, 0] == 1
    for st in ("csr", "row_sparse"):
        with pytest.raises(MXNetError, match="tostype.*sparse"):
            x.tostype(st)
    with pytest.raises(MXNetError, match="invalid stype"):
        x.tostype("foo")


@pytest.mark.parametrize("fn", [
    lambda a: nd.flatten(a), lambda a: nd.Flatten(a), lambda a: a.flatten(),
    lambda a: nd.squeeze(a), lambda a: a.squeeze(),
    lambda a: nd.expand_dims(a, 0), lambda a: a.expand_dims(0),
])
def test_flatten_squeeze_expand_dims_return_copies(fn):
    a = nd.ones((2, 1, 3))
    b = fn(a)
    b[:] = 5
    assert a.asnumpy().ravel()[0] == 1  # MXNet 1.9.1: the input is untouched


def test_inplace_true_returns_a_view():
    a = nd.ones((2, 1, 3))
    b = a.squeeze(inplace=True)
    b[:] = 5
    assert a.asnumpy().ravel()[0] == 5


def test_copying_ops_keep_gradients():
    x = nd.ones((2, 1, 3))
    x.attach_grad()
    with autograd.record():
        y = (x.squeeze() * 2).sum()
    y.backward()
    assert (x.grad.asnumpy() == 2).all()


def test_from_numpy_shares_by_default_and_makes_numpy_read_only():
    n = np.array([[1, 2], [3, 4], [5, 6]], dtype="float32")
    a = nd.from_numpy(n)  # zero_copy=True is MXNet 1.9.1's default
    assert not n.flags.writeable
    with pytest.raises(ValueError):
        n[2, 1] = 0
    a[2, 1] = 100
    a.wait_to_read()  # the write is an engine op
    assert n[2, 1] == 100
    b = nd.from_numpy(n)  # sharing an already shared array again works
    assert b.asnumpy()[2, 1] == 100
    with pytest.raises(ValueError, match="C-contiguous"):
        nd.from_numpy(np.ones((3, 2), dtype="float32").T)
    c = np.ones(3, dtype="float32")
    nd.from_numpy(c, zero_copy=False)
    assert c.flags.writeable


def test_fresh_grad_flag():
    x, y = nd.ones((2, 2)), nd.ones((2, 2))
    autograd.mark_variables([x, y], [nd.zeros((2, 2)), nd.zeros((2, 2))])
    assert x._fresh_grad is False and y._fresh_grad is False
    with autograd.record():
        z = x + 2 + y
    z.backward()
    assert x._fresh_grad is True
    x._fresh_grad = False
    assert x._fresh_grad is False


def test_util_numpy_scopes_and_base_lib_stand_in():
    from ferromx.base import _LIB
    from ferromx.util import _NumpyArrayScope, _NumpyShapeScope

    assert _NumpyArrayScope(True)._is_np_array and not _NumpyShapeScope(False)._is_np_shape
    with _NumpyArrayScope(True):
        assert mx.is_np_array()
    assert not mx.is_np_array()
    with pytest.raises(MXNetError, match="MXNDArrayFromDLPack"):
        _LIB.MXNDArrayFromDLPack(None, None)


def test_block_scope_prefixes_names_per_thread():
    from ferromx.gluon import block
    from ferromx.name import NameManager

    class Dummy:
        prefix, _empty_prefix = "spawned_", False

    got = []

    def f():
        with block._BlockScope(Dummy()):
            got.append(NameManager._thread_current().get(None, "hello"))

    t = threading.Thread(target=f)
    t.start()
    t.join()
    assert got == ["spawned_hello0"]


def test_np_reshape_error_is_mxnet_error():
    a = mx.np.ones((10, 10))
    with pytest.raises(MXNetError):
        a.reshape((1,))
    with pytest.raises(MXNetError):
        mx.np.reshape(a, (-1, 3))


def test_binary_ops_ignore_extra_keywords_and_attrs_take_ranges():
    r = nd.broadcast_maximum(nd.array([0]), nd.array([[-1.0], [2.0]]), axis=1)
    assert r.asnumpy().ravel().tolist() == [0.0, 2.0]
    assert nd.broadcast_to(nd.ones((1, 3)), shape=np.array([2, 3])).shape == (2, 3)
    assert nd.transpose(nd.ones((2, 3, 4)), axes=range(2, -1, -1)).shape == (4, 3, 2)


def test_losses_build_symbols():
    out = mx.gluon.loss.L1Loss()(mx.sym.var("data"), mx.sym.var("label"))
    assert isinstance(out, mx.sym.Symbol)


def test_metric_create_from_config():
    acc = mx.metric.create("acc", axis=0)
    conf = acc.get_config()
    again = mx.metric.create(conf)
    assert type(again) is type(acc) and again.get_config() == conf
    assert type(mx.metric.create(json.dumps(conf))) is type(acc)


def test_constant_dumps_ndarray_value():
    init = mx.init.Constant(nd.ones((2,)))
    val = init.dumps()
    assert val == json.dumps(["constant", init._kwargs]) == '["constant", {"value": [1.0, 1.0]}]'
    assert mx.init.Constant(1).dumps() == '["constant", {"value": 1}]'


def test_second_order_of_piecewise_constant_gradient_is_zero():
    # MXNet 1.9.1: clip's gradient is [0, 1, 0] and its second derivative zeros. clip's
    # backward multiplies by comparisons, which record zero gradients (as MXNet's), so the
    # second order is a recorded zero, not a missing gradient.
    x = nd.array([-1.0, 0.3, 2.0])
    x.attach_grad()
    with autograd.record():
        g = autograd.grad(nd.clip(x, 0.0, 1.0), [x], create_graph=True)[0]
    g.backward()
    assert g.asnumpy().tolist() == [0, 1, 0]
    assert x.grad.asnumpy().tolist() == [0, 0, 0]


def test_relu_gradient_propagates_nan_and_its_second_order_is_zero():
    # test_ndarray.py::test_ndarray_nan_comparison and test_higher_order_grad.py::test_relu.
    # MXNet 1.9.1: relu's gradient at [nan, -1, 0, 2, inf] is [nan, 0, 0, 1, 1]; the
    # second derivative is zeros.
    x = nd.array([float("nan"), -1.0, 0.0, 2.0, float("inf")])
    x.attach_grad()
    with autograd.record():
        y = nd.relu(x)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [np.nan, 0, 0, 1, 1])
    x = nd.array([-1.0, 0.3, 2.0])
    x.attach_grad()
    with autograd.record():
        g = autograd.grad(nd.relu(x), [x], create_graph=True)[0]
    g.backward()
    np.testing.assert_array_equal(g.asnumpy(), [0, 1, 1])
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 0, 0])


def test_contrib_isinf_isfinite_isnan():
    # Values and dtypes recorded from MXNet 1.9.1.
    x = nd.array([1, float("inf"), float("-inf"), float("nan")])
    assert nd.contrib.isinf(x).asnumpy().tolist() == [0, 1, 1, 0]
    assert nd.contrib.isfinite(x).asnumpy().tolist() == [1, 0, 0, 0]
    assert nd.contrib.isnan(x).asnumpy().tolist() == [0, 0, 0, 1]
    assert nd.contrib.isnan(x).dtype == np.float32
    xi = nd.array([1, 2], dtype="int32")
    assert nd.contrib.isnan(xi).dtype == np.int32
    assert nd.contrib.isfinite(xi).asnumpy().tolist() == [1, 1]


def test_setitem_value_with_extra_leading_ones():
    x = nd.zeros((4, 3, 3))
    x[:] = nd.arange(3).reshape((1, 1, 1, 3))  # NumPy and MXNet drop the leading 1-dims
    assert x[2, 1].asnumpy().tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="__setitem__"):
        x[:] = nd.ones((2, 1, 1, 3))


def test_profiler_json_has_mxnets_sections_sorted():
    from ferromx import profiler

    profiler.set_config(profile_all=True, aggregate_stats=True, filename="/tmp/_conf_prof.json")
    profiler.set_state("run")
    try:
        profiler.dumps(reset=True)
        a = nd.zeros((50, 50))
        for _ in range(3):
            a = a + 1
        nd.sqrt(a).wait_to_read()
        stats = json.loads(profiler.dumps(format="json", sort_by="count", ascending=True))
    finally:
        profiler.set_state("stop")
    assert {"Time", "Memory", "Unit"} <= set(stats)
    ops = stats["Time"]["operator"]
    counts = [r["Count"] for r in ops.values()]
    assert counts == sorted(counts) and set(next(iter(ops.values()))) == {
        "Count", "Total", "Min", "Max", "Avg"}


def test_fluent_methods_of_the_python_defined_operators():
    # test_ndarray.py::test_ndarray_fluent: MXNet has these as NDArray methods too.
    x = nd.array([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]])
    np.testing.assert_array_equal(x.argmax_channel().asnumpy(), [1, 0])
    np.testing.assert_array_equal(x.shape_array().asnumpy(), [2, 3])
    np.testing.assert_array_equal(x.size_array().asnumpy(), [6])
    np.testing.assert_allclose(x.softmin().asnumpy(), nd.softmin(x).asnumpy())
    y = nd.ones((2, 1)).broadcast_axes(axis=1, size=3)
    assert y.shape == (2, 3)


def test_add_n_is_one_table_operator_with_mxnets_graph_name():
    # MXNet 1.9.1: ElementWiseSum is an alias of add_n; its graph JSON names the node add_n.
    a, b = nd.array([[1, 2], [3, 4]]), nd.array([[10, 20], [30, 40]])
    np.testing.assert_array_equal(nd.add_n(a, b, a).asnumpy(), [[12, 24], [36, 48]])
    np.testing.assert_array_equal(nd.ElementWiseSum(a, b, num_args=2).asnumpy(), [[11, 22], [33, 44]])
    with pytest.raises(ValueError, match="num_args=3"):
        nd.add_n(a, b, num_args=3)
    with pytest.raises(MXNetError, match=r"add_n.*\(2, 2\) and \(3,\)"):
        nd.add_n(a, nd.ones((3,)))
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = nd.add_n(a, b, a) * 2
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), np.full((2, 2), 4.0))
    np.testing.assert_array_equal(b.grad.asnumpy(), np.full((2, 2), 2.0))
    s = mx.sym.ElementWiseSum(mx.sym.var("x"), mx.sym.var("y"), name="esum")
    node = json.loads(s.tojson())["nodes"][2]
    assert (node["op"], node["name"], node["attrs"]) == ("add_n", "esum", {"num_args": "2"})
    ex = s.bind(mx.cpu(), {"x": nd.array([1, 2]), "y": nd.array([3, 5])})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [4, 7])


def test_symbolic_executor_error_surfaces_at_waitall():
    # MXNet's test_exc_symbolic: a bad random.normal (scale < 0) inside a bound graph raises
    # MXNetError at the wait, for forward only and for forward + backward.
    def run(backward):
        x, y, z = mx.sym.var("x"), mx.sym.var("y"), mx.sym.var("z")
        out = mx.sym.dot(z, mx.sym.ElementWiseSum(x, y, name="esum"))
        out = mx.sym.make_loss(mx.sym.dot(out, mx.sym.random.normal(0, -1, (2, 2))))
        args = {"x": nd.ones((2, 2)), "y": nd.ones((2, 2)), "z": nd.ones((3, 2))}
        grads = {k: nd.empty(v.shape) for k, v in args.items()}
        ex = out.bind(mx.cpu(), args=args, args_grad=grads)
        ex.forward()
        if backward:
            ex.backward()
        nd.waitall()

    for backward in (False, True):
        with pytest.raises(MXNetError):
            run(backward)
