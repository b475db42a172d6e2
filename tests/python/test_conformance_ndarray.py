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


# MXNet 1.9.1: nd.array([[1.5, 2], [3, 4]], dtype='float64').__getstate__()['handle']
_F64_STATE = (b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"
              b"\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00"
              b"\x00\x00\x00\x00\x00\x00\xf8?\x00\x00\x00\x00\x00\x00\x00@\x00\x00\x00\x00\x00"
              b"\x00\x08@\x00\x00\x00\x00\x00\x00\x10@")
# MXNet 1.9.1: nd.arange(1, ctx=gpu()).__getstate__()['handle'] (dev_type 2)
_GPU_STATE = (b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
              b"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")


def test_getstate_is_mxnets_record_and_setstate_replaces_the_array():
    a = nd.array([[1.5, 2], [3, 4]], dtype="float64")
    assert a.__getstate__() == {"handle": bytearray(_F64_STATE)}
    b = nd.zeros((3,))
    b.__setstate__({"handle": bytearray(_F64_STATE)})
    assert b.shape == (2, 2) and b.dtype == np.float64
    np.testing.assert_array_equal(b.asnumpy(), [[1.5, 2], [3, 4]])
    # a GPU-saved array loads on the CPU (test_load_saved_gpu_array_when_no_gpus_are_present)
    c = nd.arange(1)
    c.__setstate__({"handle": bytearray(_GPU_STATE)})
    assert c.context == mx.cpu() and c.asnumpy().tolist() == [0.0]
    with pytest.raises(ValueError, match="__setstate__"):
        c.__setstate__({})


def _zero_grads(f, *shapes):
    xs = [nd.ones(s) for s in shapes]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        out = f(*xs)
    out.backward()
    return [x.grad.asnumpy() for x in xs]


@pytest.mark.parametrize("f", [
    lambda x, y: nd.broadcast_greater(x, y),
    lambda x, y: nd.greater(x, y),
    lambda x, y: nd.broadcast_logical_and(x, y),
    lambda x, y: nd.broadcast_equal(x, y) + x * 0,
])
def test_named_comparisons_have_zero_gradients(f):
    # MXNet 1.9.1: comparisons and logical operators record zero gradients (all forms)
    for g in _zero_grads(f, (2, 3), (1, 3)):
        assert not g.any()


def test_scalar_comparison_and_hybridized_comparison_have_zero_gradients():
    assert not _zero_grads(lambda x: nd._internal._greater_scalar(x, scalar=0.5), (4,))[0].any()
    from ferromx.gluon import HybridBlock

    class Gt(HybridBlock):
        def hybrid_forward(self, F, x, y):
            return x > y

    blk = Gt()
    blk.hybridize()
    gx, gy = _zero_grads(blk, (3,), (3,))
    assert gx.tolist() == [0, 0, 0] and gy.tolist() == [0, 0, 0]


def test_setitem_under_record_follows_mxnet():
    from ferromx.base import MXNetError

    y = nd.array([1.0, 2.0, 3.0])
    y.attach_grad()
    # a value of the graph into part of an array: MXNet's in-place error
    x = nd.zeros((2, 3))
    with pytest.raises(MXNetError, match=r"Inplace operations \(\+=, -=, x\[:\]=, etc\)"), \
            mx.autograd.record():
        x[1] = y
    # writing into an array of the graph: MXNet's "already in a computational graph"
    with pytest.raises(MXNetError, match="already in a computational graph"), \
            mx.autograd.record():
        y[0] = 1
    # whole-array keys are a recorded copy: MXNet 1.9.1 gives y.grad = [5, 7, 9]
    for key in (slice(None), Ellipsis, None):
        x = nd.zeros((2, 3))
        with mx.autograd.record():
            x[key] = y
            z = (x * nd.array([[1, 2, 3], [4, 5, 6]])).sum()
        z.backward()
        assert y.grad.asnumpy().tolist() == [5, 7, 9], key
        assert x.asnumpy().tolist() == [[1, 2, 3], [1, 2, 3]]
    # constants and values outside the graph are written as usual (MXNet 1.9.1 values)
    x = nd.zeros((2, 3))
    with mx.autograd.record():
        x[0] = 5
        x[1, 1:] = nd.array([7, 8])
    assert x.asnumpy().tolist() == [[5, 5, 5], [0, 7, 8]]


def test_contiguous_basic_selections_are_views():
    # MXNet 1.9.1 (test_basic_indexing_is_contiguous): a contiguous selection is a view
    x = nd.arange(6 * 7 * 8).reshape((6, 7, 8))
    is_contig = nd.NDArray._basic_indexing_slice_is_contiguous
    for key in [(slice(0, 1), slice(2, 5), slice(None)), (slice(None, None, 20), slice(1, 4),
                                                          slice(None)),
                (slice(2, 3), slice(4, 5), slice(1, 6))]:
        assert is_contig(key, x.shape) == np.arange(6 * 7 * 8).reshape(6, 7, 8)[key].flags.c_contiguous
        y = x.copy()
        v = y[key]
        v[:] = -1
        assert (y[key].asnumpy() == -1).all() and (y.asnumpy() == -1).sum() == v.size
    assert not is_contig((slice(None), slice(0, 2), slice(None)), x.shape)
    assert is_contig((slice(0, 0), slice(None), slice(None, None, 2)), x.shape)


def test_broadcast_like_refuses_empty_axes():
    from ferromx.base import MXNetError

    # MXNet 1.9.1: "Empty axes tuple is not allowed"
    with pytest.raises((MXNetError, ValueError), match="broadcast_like"):
        nd.broadcast_like(nd.ones((1, 2)), nd.ones((3, 2)), lhs_axes=(), rhs_axes=()).wait_to_read()
    assert nd.broadcast_like(nd.ones((1, 2)), nd.ones((3, 2)), lhs_axes=(0,), rhs_axes=(0,)).shape \
        == (3, 2)


@pytest.mark.parametrize("key", [
    (1, [2, 3], np.array([[3], [0]], dtype="int32")),
    (1, [2, 3], np.array([[5], [0]], dtype="int32"), slice(2, 5)),
    (1, [2], np.array([[3]], dtype="int32"), slice(None, None, -1)),
    ([[[[1]]]], [[1]], slice(0, 3), [1, 5]),
    (slice(1, 3), [1, 2], [3, 4]),
    (slice(None), [1, 2], 2, slice(0, 4, 2)),
])
def test_mixed_advanced_getitem_is_recorded(key):
    # values and gradients as NumPy's (test_ndarray.py::test_ndarray_indexing, getitem
    # under autograd): ints among index arrays, arrays then slices, arrays split by slices
    xn = np.arange(4 * 5 * 6 * 7, dtype=np.float32).reshape(4, 5, 6, 7)
    x = nd.array(xn)
    x.attach_grad()
    with mx.autograd.record():
        y = x[key]
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), xn[key])
    want = np.zeros_like(xn)
    np.add.at(want, key, 1)
    np.testing.assert_array_equal(x.grad.asnumpy(), want)


def test_inplace_operators_under_record_follow_mxnet():
    from ferromx.base import MXNetError

    y = nd.ones((3,))
    y.attach_grad()
    x = nd.zeros((3,))
    with pytest.raises(MXNetError, match="Inplace operations"), mx.autograd.record():
        x += y
    with pytest.raises(MXNetError, match="already in a computational graph"), \
            mx.autograd.record():
        y *= 2
    with pytest.raises(MXNetError, match="already in a computational graph"), \
            mx.autograd.record():
        z = y * 2
        z += 1
    with mx.autograd.record():
        x += 1  # constants only: nothing to record, MXNet allows it
    assert x.asnumpy().tolist() == [1, 1, 1]
    # out= under record is a recorded copy (MXNet records the operator into out)
    out = nd.zeros((3,))
    with mx.autograd.record():
        nd.relu(y * 3, out=out)
        s = (out * 2).sum()
    s.backward()
    assert y.grad.asnumpy().tolist() == [6, 6, 6]


def test_cast_to_int_passes_the_gradient_and_np_hybrid_comparisons_are_bool():
    # MXNet 1.9.1: the gradient through Cast to int32/bool is the head gradient cast back
    x = nd.array([1.5, 2.5])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.cast(x, dtype="int32")
    y.backward()
    assert x.grad.asnumpy().tolist() == [1, 1]
    from ferromx import np as mnp
    from ferromx.gluon import HybridBlock

    class Gt(HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a > b

    with mx.util.np_array(True), mx.util.np_shape(True):
        blk = Gt()
        blk.hybridize()
        a, b = mnp.array([1.0, 3.0]), mnp.array([2.0, 2.0])
        a.attach_grad()
        with mx.autograd.record():
            out = blk(a, b)
        out.backward()
        assert out.dtype == np.bool_ and out.asnumpy().tolist() == [False, True]
        assert a.grad.asnumpy().tolist() == [0, 0]
