"""Regression tests for the fixes made while running MXNet 1.9.1's test_numpy_op.py."""

import inspect

import ferromx as mx
import numpy as _np
import pytest
from ferromx import np, npx


def test_numpy_op_signature_module_maps_op_names_to_functions():
    from ferromx import _numpy_op_doc, base, numpy_op_signature

    get = numpy_op_signature._get_builtin_op
    assert get("_np_sum") is np.sum
    # submodules are spelled with a leading underscore, as in MXNet (``_np__random_shuffle``)
    assert get("_np__random_shuffle") is np.random.shuffle
    assert get("_np__linalg_norm") is np.linalg.norm
    assert get("_npx_relu") is npx.relu
    assert get("sum") is None
    with pytest.raises(ValueError, match="no_such_op"):
        get("_np_no_such_op")
    with pytest.raises(ValueError, match="random_normal"):  # as MXNet 1.9.1
        get("_np_random_normal")
    assert base._get_op_submodule_name("_np__random_x", "_np_", base._NP_OP_SUBMODULE_LIST) == (
        "_random_"
    )
    assert inspect.ismodule(_numpy_op_doc)
    # every registered _np_ operator has a stub in _numpy_op_doc (MXNet's own check)
    for name in mx.operator.get_all_registered_operators():
        if name.startswith("_np_"):
            assert hasattr(_numpy_op_doc, name), name


class _Max(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x.max(axis=(), keepdims=True) + x.flatten().sum()


def test_hybridized_np_block_keeps_numpy_semantics_of_array_methods():
    # axis=() reduces nothing and flatten is 1-d, as in NumPy, also when hybridized
    x = np.array(_np.arange(6.0).reshape(2, 3))
    blk = _Max()
    blk.hybridize()
    out = blk(x)
    assert out.shape == (2, 3)
    _np.testing.assert_allclose(out.asnumpy(), _np.arange(6.0).reshape(2, 3) + 15.0)
    # a layer using operators only still traces into a graph
    dense = mx.gluon.nn.Dense(3)
    dense.initialize()
    dense.hybridize()
    dense(np.ones((2, 4)))
    assert dense._cached_graph


@pytest.mark.parametrize("call", [
    lambda: np.random.exponential(scale=-1),
    lambda: np.random.rayleigh(scale=-1),
    lambda: np.random.weibull(a=0),
    lambda: np.random.pareto(a=-1),
    lambda: np.random.power(a=0),
    lambda: np.random.gamma(np.array(1), np.array(-1.0)),
    lambda: np.random.gamma(0, 1),
    lambda: npx.random.bernoulli(prob=np.array([3.0])),
])
def test_random_parameters_outside_the_domain_raise_value_error(call):
    with pytest.raises(ValueError):
        call().asnumpy()


@pytest.mark.parametrize("kw, err", [
    ({"where": False}, NotImplementedError), ({"subok": False}, NotImplementedError),
    ({"dtype": _np.int8}, NotImplementedError), ({"dtype": "abcdefg"}, TypeError),
    ({"casting": "safe"}, NotImplementedError), ({"casting": "mxnet"}, TypeError),
    ({"order": "C"}, NotImplementedError), ({"order": "mxnet"}, NotImplementedError),
])
@pytest.mark.parametrize("fn", ["abs", "fix", "isnan", "isposinf", "add", "invert"])
def test_ufunc_keywords_are_checked_as_in_mxnet(fn, kw, err):
    x = np.array([1, 2], dtype="int32")
    args = (x, x) if fn == "add" else (x,)
    with pytest.raises(err):
        getattr(np, fn)(*args, **kw)
    # the defaults are accepted
    getattr(np, fn)(*args, where=True, casting="same_kind", order="K", dtype=None, subok=True)


def test_isnan_out_must_be_bool():
    x = np.array([1.0, _np.nan])
    with pytest.raises(TypeError):
        np.isnan(x, out=np.empty_like(x))
    out = np.empty_like(x).astype("bool")
    np.isnan(x, out)
    assert out.asnumpy().tolist() == [False, True]


def test_zero_sizes_are_sizes_in_np_shapes():
    a = np.ones((1, 1))
    a.attach_grad()
    with mx.autograd.record():
        b = np.broadcast_to(a, (2, 4, 0))
    assert b.shape == (2, 4, 0)
    b.backward()
    assert a.grad.asnumpy().tolist() == [[0.0]]
    assert np.broadcast_to(np.ones((5,)), (0, -2)).shape == (0, 5)  # MXNet's -2: keep
    assert [r.shape for r in np.broadcast_arrays(np.ones((0,)), np.ones((2, 1)))] == [(2, 0)] * 2
    assert np.eye(4, 0).shape == (4, 0)
    assert np.eye(0).shape == (0, 0)
    with pytest.raises(mx.base.MXNetError):
        np.eye(-1)
    assert [p.shape for p in np.split(np.ones((0, 4)), 2)] == [(0, 4), (0, 4)]
    ind = np.indices((2, 0, 4))
    assert ind.shape == (3, 2, 0, 4) and ind.dtype == _np.int32  # MXNet's default dtype


def test_small_np_signature_fixes():
    assert np.arange(0, 3, None).asnumpy().tolist() == [0.0, 1.0, 2.0]
    assert np.array([-1.0, 0.5, 2.0]).clip(min=0, max=1).asnumpy().tolist() == [0, 0.5, 1]
    assert [i.asnumpy().tolist() for i in np.nonzero(np.array(3.0))] == [[0]]  # MXNet's 0-d
    assert np.argmin(np.array(2.0), axis=0).shape == ()
    assert np.argmax(np.array(2.0), axis=-1).shape == ()
    assert np.squeeze(np.array(2.0), -1).shape == ()
    cat = np.concatenate([np.ones((2, 2)), np.zeros((3,))], axis=None)
    assert cat.shape == (7,)
    assert [i.asnumpy().tolist() for i in np.unravel_index(np.array([5, 1]), 10)] == [[5, 1]]


@pytest.mark.parametrize("fn", ["eig", "eigh", "eigvals", "eigvalsh"])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
def test_eig_family_decomposes_integer_matrices_in_float64(fn, dtype):
    a = np.array(_np.array([[2, 1], [1, 2]]), dtype=dtype)
    res = getattr(np.linalg, fn)(a)
    vals = res[0] if isinstance(res, (tuple, list)) else res
    assert vals.dtype == _np.float64  # as MXNet 1.9.1
    _np.testing.assert_allclose(_np.sort(vals.asnumpy()), [1.0, 3.0], rtol=1e-6)


def test_around_negative_decimals_rounds_integers():
    x = _np.array([-15, -5, 5, 15, 25, -25, 149, -150], dtype="int32")
    for d in (-1, -2, -3):
        out = np.around(np.array(x, dtype="int32"), d)
        assert out.dtype == _np.int32
        assert out.asnumpy().tolist() == _np.around(x, d).tolist()


def test_constraint_check_raises_value_error():
    with pytest.raises(ValueError, match="broken"):
        npx.constraint_check(np.zeros((2,), dtype="bool"), "broken")
    with pytest.raises(mx.base.MXNetError):
        npx.constraint_check(np.zeros((2,), dtype="bool"), "broken")


def test_norm_takes_inf_as_a_string():
    x = _np.array([[1.0, -3.0], [2.0, 1.0]], dtype="float32")
    assert float(np.linalg.norm(np.array(x[0]), ord="inf")) == 3.0
    assert float(np.linalg.norm(np.array(x[0]), ord="-inf")) == 1.0
    assert float(np.linalg.norm(np.array(x), ord="inf", axis=(0, 1))) == 4.0


@pytest.mark.parametrize("sa, sb", [((2,), (4, 2, 3)), ((4, 2, 3), (3,)), ((2, 1, 2, 3), (4, 3, 5)),
                                    ((3, 4), (2, 4, 2)), ((3,), (3,)), ((2, 3), (3, 4))])
def test_matmul_follows_numpy_broadcasting(sa, sb):
    rng = _np.random.default_rng(0)
    a_np, b_np = rng.random(sa).astype("float32"), rng.random(sb).astype("float32")
    a, b = np.array(a_np), np.array(b_np)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = np.matmul(a, b)
    y.backward()
    _np.testing.assert_allclose(y.asnumpy(), _np.matmul(a_np, b_np), rtol=1e-5, atol=1e-5)
    # sum(a @ b) is linear in a: its gradient is the change from each unit step of a
    base = _np.matmul(a_np, b_np).sum(dtype="float64")
    ga = _np.zeros(a_np.size)
    for i in range(a_np.size):
        step = _np.zeros(a_np.size, dtype="float32")
        step[i] = 1.0
        ga[i] = _np.matmul(a_np + step.reshape(sa), b_np).sum(dtype="float64") - base
    _np.testing.assert_allclose(a.grad.asnumpy(), ga.reshape(sa), rtol=1e-4, atol=1e-4)
    assert b.grad.shape == sb


def test_matmul_errors_are_mxnet_errors():
    with pytest.raises(mx.base.MXNetError):
        np.matmul(np.ones(()), np.ones((2,)))
    with pytest.raises(mx.base.MXNetError):
        np.matmul(np.ones((2, 3, 4)), np.ones((5, 4)))


def test_true_divide_and_divide_promote_like_the_operator():
    x1 = np.array([[False, True]], dtype="bool")
    x2 = np.array([[True, False]], dtype="bool")
    for fn in (np.true_divide, np.divide):
        res = fn(x1, x2)
        assert res.dtype == _np.float32
        assert res.asnumpy().tolist() == [[0.0, _np.inf]]
    i = np.array([3, 4], dtype="int32")
    assert np.true_divide(i, 2).dtype == _np.float32
    _np.testing.assert_allclose(np.true_divide(8, i).asnumpy(), [8 / 3, 2.0], rtol=1e-6)


@pytest.mark.parametrize(
    "dshape,mshape,start",
    [((3, 4), (3, 4), 0), ((2, 3, 4, 5), (2, 3), 0), ((2, 3, 4, 5), (3, 4), 1),
     ((2, 3, 4, 5), (4, 5), 2), ((), (), 0), ((3, 0), (3, 0), 0)],
)
def test_np_internal_boolean_mask_assign(dshape, mshape, start):
    # MXNet's test_npi_boolean_assign: F.np._internal.boolean_mask_assign_* with out=data
    rs = _np.random.RandomState(3)
    data = rs.uniform(size=dshape).astype(_np.float32)
    mask = rs.rand(*mshape) > 0.4 if mshape else _np.array(True)
    key = (slice(None),) * start + (mask,)
    want = data.copy()
    want[key] = 42.0
    a = np.array(data)
    got = np._internal.boolean_mask_assign_scalar(a, np.array(mask), 42.0, start_axis=start, out=a)
    assert got is a
    _np.testing.assert_array_equal(a.asnumpy(), want)
    value = rs.uniform(size=data[key].shape).astype(_np.float32)
    want = data.copy()
    want[key] = value
    b = np.array(data)
    got = np._internal.boolean_mask_assign_tensor(b, np.array(mask), np.array(value), start_axis=start)
    _np.testing.assert_array_equal(got.asnumpy(), want)
    _np.testing.assert_array_equal(b.asnumpy(), data)  # no out: a new array
    with pytest.raises(mx.MXNetError, match="boolean_mask_assign_scalar"):
        np._internal.boolean_mask_assign_scalar(np.array(data), np.array(mask), 1.0,
                                                start_axis=len(dshape) + 1)


def test_np_zero_d_bool_mask_assignment():
    a = np.array(_np.float32(2.0))
    a[np.array(False, dtype=bool)] = 5.0
    assert a.item() == 2.0
    a[np.array(True, dtype=bool)] = 5.0
    assert a.item() == 5.0
    b = np.ones((2, 3))
    b[np.array(True, dtype=bool)] = np.arange(3)
    _np.testing.assert_array_equal(b.asnumpy(), [[0, 1, 2], [0, 1, 2]])


@pytest.mark.parametrize("shape,axis1,axis2", [((), 0, 1), ((2,), 0, 1), ((3, 2, 2), 1, 1),
                                               ((3, 2, 2), 0, -4)])
def test_np_trace_bad_params_raise_mxnet_error(shape, axis1, axis2):
    # as MXNet's test_np_trace: MXNetError (ferromx's is also a ValueError)
    x = np.array(_np.ones(shape, dtype=_np.float32))
    with pytest.raises(mx.MXNetError, match="trace"):
        np.trace(x, axis1=axis1, axis2=axis2)


@pytest.mark.parametrize("itype", ["int8", "uint8", "int32", "int64", "bool"])
def test_np_true_divide_of_integer_and_float16_is_float16(itype):
    # MXNet 1.9.1 (recorded): an integer/bool operand divides in the float operand's dtype
    i = np.ones((2,), dtype=itype)
    h = np.ones((2,), dtype="float16")
    assert (i / h).dtype == _np.float16 and (h / i).dtype == _np.float16
    assert np.true_divide(i, h).dtype == _np.float16
    assert (i / np.ones((2,), dtype="float64")).dtype == _np.float64
    assert (i / i).dtype == _np.float32


def test_integer_mod_has_zero_gradient_as_in_mxnet():
    # recorded from MXNet 1.9.1: nd and np, array and scalar operands
    a = np.array([[5, 7], [3, 9]], dtype="int32")
    b = np.array([[2, 3], [2, 4]], dtype="int32")
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = np.mod(a, b)
    y.backward()
    assert not a.grad.asnumpy().any() and not b.grad.asnumpy().any()
    for f in (lambda x: x % 3, lambda x: 3 % x):
        with mx.autograd.record():
            y = f(a)
        y.backward()
        assert not a.grad.asnumpy().any()
    x = mx.nd.array([5, 7], dtype="int32")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.broadcast_mod(x, mx.nd.array([2, 3], dtype="int32"))
    y.backward()
    assert x.grad.asnumpy().tolist() == [0, 0]
    # float mod keeps its gradient
    f = np.array([5.0, 7.0])
    f.attach_grad()
    with mx.autograd.record():
        y = np.mod(f, np.array([2.0, 3.0]))
    y.backward()
    assert f.grad.asnumpy().tolist() == [1.0, 1.0]


def test_np_divide_errors_name_divide():
    x = np.ones((2,), dtype="int32")
    with pytest.raises(TypeError, match="function 'divide'"):
        np.divide(x, x, foo=1)
    with pytest.raises(NotImplementedError, match="^divide: casting"):
        np.divide(x, x, casting="safe")
    with pytest.raises(TypeError, match="function 'true_divide'"):
        np.true_divide(x, x, foo=1)
    out = np.zeros((2,))
    assert np.divide(x, x, out=out) is out
    assert np.divide(x, x).dtype == _np.float32


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_np_cumsum_is_sequential_in_the_dtype_as_numpy(dtype):
    # the table operator _np_cumsum adds in the element type: float16 running sums match
    # NumPy bit for bit (MXNet's test_np_cumsum); integers stay exact
    rs = _np.random.RandomState(1)
    x = (rs.rand(3, 40, 5) * 10).astype(dtype)
    for axis in (None, 0, 1, 2, -1):
        got = np.cumsum(np.array(x, dtype=dtype), axis=axis)
        want = _np.cumsum(x, axis=axis)
        assert got.dtype == x.dtype  # MXNet keeps int32 (NumPy widens it to int64)
        _np.testing.assert_array_equal(got.asnumpy(), want.astype(dtype))


def test_np_cumsum_gradient_and_legacy_nd():
    a = np.array(_np.arange(6.0).reshape(2, 3))
    a.attach_grad()
    w = _np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with mx.autograd.record():
        y = (np.cumsum(a, axis=1) * np.array(w)).sum()
    y.backward()
    # d/dx_j sum_k w_k cumsum_k = sum_{k >= j} w_k: a reversed running sum
    _np.testing.assert_array_equal(a.grad.asnumpy(), _np.flip(_np.cumsum(_np.flip(w, 1), 1), 1))
    assert mx.nd.cumsum(mx.nd.array([[1, 2], [3, 4]]), axis=0).asnumpy().tolist() == [[1, 2], [4, 6]]
    assert np.cumsum(np.array([True, False, True], dtype=bool)).asnumpy().tolist() == [1, 1, 2]
    assert np.cumsum(np.zeros((2, 0, 3)), axis=1).shape == (2, 0, 3)


def test_nan_to_num_copy_false_in_a_hybridized_block_writes_a_new_array():
    from ferromx.gluon import HybridBlock

    class NanToNum(HybridBlock):
        def hybrid_forward(self, F, a):
            return F.np.nan_to_num(a, False)

    with mx.util.np_array(True), mx.util.np_shape(True):
        src = _np.array([_np.nan, _np.inf, -_np.inf, 1.5], dtype="float32")
        block = NanToNum()
        block.hybridize()
        x = np.array(src)
        x.attach_grad()
        with mx.autograd.record():  # eagerly this would be an in-place write: refused
            y = block(x)
        y.backward()
        _np.testing.assert_array_equal(y.asnumpy(), _np.nan_to_num(src))
        _np.testing.assert_array_equal(x.grad.asnumpy(), [0, 0, 0, 1])
        assert _np.isnan(x.asnumpy()[0])  # the input is not modified, as in MXNet's graph
        # eagerly, copy=False still writes into its argument
        z = np.array(src)
        np.nan_to_num(z, copy=False)
        assert z.asnumpy()[0] == 0


def test_multivariate_normal_samples_float16_through_float32():
    mean = np.array([0.5, 10.0], dtype="float16")
    cov = np.array([[1.0, 0.0], [0.0, 4.0]], dtype="float16")
    out = np.random.multivariate_normal(mean, cov, size=(2000,))
    assert out.dtype == _np.float16 and out.shape == (2000, 2)
    s = out.asnumpy().astype("float64")
    _np.testing.assert_allclose(s.mean(axis=0), [0.5, 10.0], atol=0.25)
    _np.testing.assert_allclose(s.std(axis=0), [1.0, 2.0], rtol=0.1)
