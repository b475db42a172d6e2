"""Regression tests for fixes found by running MXNet 1.9.1's test_ndarray.py,
test_profiler.py and test_numpy_ndarray.py under ``ferromx.compat`` (see
``docs/conformance.md``). Expected values were recorded from MXNet 1.9.1; none needs
MXNet at test time."""

import json

import ferromx as mx
import numpy as np
import pytest
from ferromx import nd, profiler


@pytest.fixture
def prof(tmp_path):
    profiler.set_config(profile_all=True, aggregate_stats=True, continuous_dump=False,
                        filename=str(tmp_path / "p.json"))
    profiler.set_state("run")
    profiler.dumps(reset=True)
    try:
        yield
    finally:
        profiler.set_state("stop")


def _time_section():
    nd.waitall()
    return json.loads(profiler.dumps(format="json"))["Time"]


def test_profiler_counts_each_call_of_a_fused_chain(prof):
    # MXNet 1.9.1 (test_aggregate_duplication): sqrt Count 1, _plus_scalar Count 2.
    inp = nd.zeros((100, 100))
    y = nd.sqrt(inp)
    inp = inp + 1
    inp = inp + 1
    ops = _time_section()["operator"]
    assert ops["sqrt"]["Count"] == 1
    assert ops["_plus_scalar"]["Count"] == 2
    np.testing.assert_array_equal(y.asnumpy(), np.zeros((100, 100)))
    # the engine-level view still shows the fused kernel as it ran
    raw = json.loads(profiler.dumps(format="json"))["operators"]
    assert any(n.startswith("_fused(") for n in raw) or "sqrt" in raw


class _AddOne(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        nd.zeros((10, 10))
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("ConfAddOne")
class _AddOneProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _AddOne()


def test_profiler_reports_custom_operators_in_their_domain(prof):
    # MXNet 1.9.1 names: "<op>::pure_python", "_backward_<op>::pure_python" and
    # "<op>::<operator run inside it>" in the "Custom Operator" domain.
    x = nd.array([0.0, 1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.Custom(x, op_type="ConfAddOne")
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(x.grad.asnumpy(), [1, 1, 1, 1])
    custom = _time_section()["Custom Operator"]
    for key in ("ConfAddOne::pure_python", "_backward_ConfAddOne::pure_python",
                "ConfAddOne::_zeros"):
        assert custom[key]["Count"] == 1, (key, sorted(custom))
    assert any(k.startswith("ConfAddOne::") and "_plus_scalar" in k for k in custom), custom


def test_internal_slice_assign_matches_mxnet():
    # values recorded from MXNet 1.9.1 (nd._internal._slice_assign[_scalar])
    x = nd.arange(24).reshape((2, 3, 4))
    got = nd._internal._slice_assign_scalar(x, scalar=-1, begin=(None, 1), end=(None, None),
                                            step=(None, 2))
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want[:, 1] = -1
    np.testing.assert_array_equal(got.asnumpy(), want)
    got = nd._internal._slice_assign(x, nd.zeros((1, 2, 2)), begin=(1, 0, 1), end=(2, 3, None),
                                     step=(1, 2, 2))
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want[1, 0:3:2, 1::2] = 0
    np.testing.assert_array_equal(got.asnumpy(), want)
    assert x.asnumpy().sum() == 276  # no out=: the data is not written
    nd._internal._crop_assign(x, nd.zeros((2, 1, 3)), begin=(0, 0, 0), end=(2, 1, 3), out=x)
    assert x.asnumpy()[:, 0, :3].sum() == 0 and x.asnumpy().sum() == 276 - (0 + 1 + 2) - (12 + 13 + 14)
    with pytest.raises(ValueError, match="_slice_assign"):
        nd._internal._slice_assign(x, nd.zeros((2, 2)), begin=(0,), end=(1,))
    assert nd._internal._plus_scalar(nd.ones((2,)), scalar=2).asnumpy().tolist() == [3, 3]


def test_np_array_keeps_the_dtype_of_numpy_scalars():
    # MXNet 1.9.1: np.array(obj) keeps obj.dtype when obj has one (NumPy scalars too)
    from ferromx import np as mnp

    for src, want in [(np.float64(2.0), "float64"), (np.int8(3), "int8"), (np.bool_(True), "bool"),
                      (2.0, "float32"), (np.float32(1), "float32")]:
        a = mnp.array(src)
        assert a.dtype == np.dtype(want) and a.shape == (), (src, a.dtype)
    assert mnp.array(np.float64(2.5)).item() == 2.5


@pytest.mark.parametrize("pvals", [[0.2, 0.8], []])
@pytest.mark.parametrize("size", [0, (0, 2), (4, 0, 2)])
def test_np_multinomial_zero_size(pvals, size):
    # MXNet 1.9.1 shapes: size + (len(pvals),), int64, nothing drawn
    from ferromx import np as mnp

    r = mnp.random.multinomial(10000, pvals, size=size)
    want = ((size,) if isinstance(size, int) else size) + (len(pvals),)
    assert r.shape == want and r.dtype == np.int64 and r.size == 0
    if not pvals:
        assert mnp.random.multinomial(100, pvals).shape == (0,)


def test_cached_op_runs_a_symbol_and_records_it():
    # test_ndarray.py::test_cached: Convolution(ones, ones 3x3x4) + bias + 2 = 36 + 1 + 2
    sym = mx.sym.Convolution(kernel=(3, 3), num_filter=10) + 2
    op = nd.CachedOp(sym)
    data, weight, bias = nd.ones((3, 4, 10, 10)), nd.ones((10, 4, 3, 3)), nd.ones((10,))
    o1 = op(data, weight, bias)
    assert o1.shape == (3, 10, 8, 8)
    np.testing.assert_allclose(o1.asnumpy(), np.full((3, 10, 8, 8), 39.0))
    bias[:] = 2
    o2 = nd.zeros(o1.shape)
    op(data, weight, bias, out=o2)
    np.testing.assert_allclose(o2.asnumpy(), o1.asnumpy() + 1)
    weight.attach_grad()
    with mx.autograd.record():
        o = op(data, weight, bias) * 2
    o.backward()
    # d(sum 2*conv)/dweight: each weight tap sees 3 images x 8x8 positions of ones, x2
    np.testing.assert_allclose(weight.grad.asnumpy(), np.full((10, 4, 3, 3), 2 * 3 * 64.0))
    with pytest.raises(ValueError, match="CachedOp: expected 3 inputs"):
        op(data, weight)
