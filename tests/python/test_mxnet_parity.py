"""Behaviour checked against the reference MXNet 1.9.1 (with NumPy 1.23): printing, 0-d
arrays from scalars, all-scalar binary ops, integer wrap-around in ``nd.array``, and error
messages that name the operator. Expected values were produced by MXNet 1.9.1."""

import pickle

import ferromx as mx
import numpy as np
import pytest
from ndarr_helper import ndarr
from numpy.testing import assert_array_equal

nd = mx.nd

# ----------------------------------------------------------------------------- printing

# (expression, MXNet 1.9.1's repr of the result)
_REPRS = [
    ("ndarr([1e6])", "\n[1000000.]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([1e7])", "\n[10000000.]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([1000.], dtype='float16')", "\n[1000.]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([4358., 0.], dtype='float16')", "\n[4360.    0.]\n<NDArray 2 @cpu(0)>"),
    ("ndarr([65504.], dtype='float16')", "\n[65504.]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([0.0001])", "\n[1.e-04]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([0.0001, 0.5])", "\n[1.e-04 5.e-01]\n<NDArray 2 @cpu(0)>"),
    ("nd.tan(ndarr([np.pi / 2]))", "\n[-22877334.]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([1e8])", "\n[1.e+08]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([123456789.], dtype='float64')", "\n[1.23456789e+08]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([1/3], dtype='float64')", "\n[0.33333333]\n<NDArray 1 @cpu(0)>"),
    ("ndarr([1.5, np.nan, -np.inf, np.inf])", "\n[ 1.5  nan -inf  inf]\n<NDArray 4 @cpu(0)>"),
    ("ndarr([-0.0, 1.0])", "\n[-0.  1.]\n<NDArray 2 @cpu(0)>"),
    ("ndarr([1e-5, 1.0])", "\n[1.e-05 1.e+00]\n<NDArray 2 @cpu(0)>"),
    ("ndarr([0.1, 1000.5])", "\n[1.0000e-01 1.0005e+03]\n<NDArray 2 @cpu(0)>"),
    (
        "ndarr([[1, 2, 3], [4, 5, 6]], dtype='int32')",
        "\n[[1 2 3]\n [4 5 6]]\n<NDArray 2x3 @cpu(0)>",
    ),
    ("ndarr([True, False], dtype='bool')", "\n[ True False]\n<NDArray 2 @cpu(0)>"),
    ("ndarr([-1, 200], dtype='int8')", "\n[ -1 -56]\n<NDArray 2 @cpu(0)>"),
    ("ndarr(np.zeros((0, 3), dtype='float32'))", "\n[]\n<NDArray 0x3 @cpu(0)>"),
    (
        "nd.arange(2000).reshape((2, 1000))",
        (
            "\n[[0.000e+00 1.000e+00 2.000e+00 ... 9.970e+02 9.980e+02 9.990e+02]\n"
            " [1.000e+03 1.001e+03 1.002e+03 ... 1.997e+03 1.998e+03 1.999e+03]]\n"
            "<NDArray 2x1000 @cpu(0)>"
        ),
    ),
    (
        "ndarr([0.0001] + [5.0] * 1500)",
        "\n[1.e-04 5.e+00 5.e+00 ... 5.e+00 5.e+00 5.e+00]\n<NDArray 1501 @cpu(0)>",
    ),
    (
        "ndarr([0.0001] + [0.05] * 1500)",
        "\n[1.e-04 5.e-02 5.e-02 ... 5.e-02 5.e-02 5.e-02]\n<NDArray 1501 @cpu(0)>",
    ),
    (
        "ndarr([[0.0001, 0.05], [np.nan, -0.0]])",
        "\n[[ 1.e-04  5.e-02]\n [    nan -0.e+00]]\n<NDArray 2x2 @cpu(0)>",
    ),
    (
        "ndarr(np.arange(24, dtype='float32').reshape(2, 3, 4) / 7)",
        (
            "\n[[[0.         0.14285715 0.2857143  0.42857143]\n"
            "  [0.5714286  0.71428573 0.85714287 1.        ]\n"
            "  [1.1428572  1.2857143  1.4285715  1.5714285 ]]\n\n"
            " [[1.7142857  1.8571428  2.         2.142857  ]\n"
            "  [2.2857144  2.4285715  2.5714285  2.7142856 ]\n"
            "  [2.857143   3.         3.142857   3.2857144 ]]]\n<NDArray 2x3x4 @cpu(0)>"
        ),
    ),
    # 0-d arrays: the scalar's str and an empty shape string
    ("ndarr(4.0)", "\n4.0\n<NDArray  @cpu(0)>"),
    ("ndarr(1e6)", "\n1000000.0\n<NDArray  @cpu(0)>"),
    ("ndarr(1000.0, dtype='float16')", "\n1000.0\n<NDArray  @cpu(0)>"),
    ("ndarr(-0.0)", "\n-0.0\n<NDArray  @cpu(0)>"),
    ("ndarr(7, dtype='int64')", "\n7\n<NDArray  @cpu(0)>"),
]


@pytest.mark.parametrize("expr,expected", _REPRS, ids=[e for e, _ in _REPRS])
def test_repr_matches_mxnet(expr, expected):
    x = eval(expr)
    assert repr(x) == expected
    assert str(x) == expected


def test_print_writes_repr(capsys):
    print(ndarr([1e6, 2500.5]))
    assert capsys.readouterr().out == "\n[1000000.     2500.5]\n<NDArray 2 @cpu(0)>\n"


def test_repr_of_full_reduction_is_1_element():
    # MXNet 1.9.1's legacy reductions give shape (1,)
    s = repr(nd.ones((2, 3)).sum())
    assert s == "\n[6.]\n<NDArray 1 @cpu(0)>"


def test_repr_follows_user_print_options():
    # MXNet prints str(asnumpy()), so NumPy's print options apply
    with np.printoptions(precision=3):
        assert repr(ndarr([1 / 3, 1e6])) == "\n[3.333e-01 1.000e+06]\n<NDArray 2 @cpu(0)>"
        assert repr(ndarr([1 / 3, 1.0])) == "\n[0.333 1.   ]\n<NDArray 2 @cpu(0)>"


def test_repr_leaves_print_options_alone():
    before = np.get_printoptions()
    repr(ndarr([0.0001, 1e6]))
    assert np.get_printoptions() == before


# ----------------------------------------------------------------------------- 0-d arrays


@pytest.mark.parametrize(
    "src,dtype",
    [
        (5, np.float32),
        (2.5, np.float32),
        (np.float32(2.5), np.float32),
        (np.array(2.5, dtype="float32"), np.float32),
        (np.array(3, dtype="int32"), np.int32),
    ],
)
def test_array_of_scalar_is_0d(src, dtype):
    x = ndarr(src)
    assert x.shape == ()
    assert x.dtype == dtype
    assert_array_equal(x.asnumpy(), np.asarray(src, dtype=dtype))


def test_0d_whole_array_index():
    # MXNet accepts `x[:]` (as `x[()]`) on a 0-d array
    x = ndarr(2.0)
    assert x[:].shape == ()
    x[:] = 5
    assert x.asscalar() == 5.0
    x[:] = ndarr(6.0)
    assert x.asscalar() == 6.0


def test_save_load_and_pickle_keep_0d(tmp_path):
    f = str(tmp_path / "a.npz")
    nd.save(f, [ndarr(2.5), ndarr([1.0, 2.0])])
    # a 0-d array is written as a V3 (NumPy-shape) file, which MXNet loads only with
    # NumPy shape semantics on
    with pytest.raises(mx.MXNetError, match="np shape semantics"):
        nd.load(f)
    with mx.util.np_shape(True):
        a, b = nd.load(f)
    assert a.shape == () and a.asscalar() == 2.5
    assert b.shape == (2,)
    c = pickle.loads(pickle.dumps(ndarr(3.5)))
    assert c.shape == () and c.asscalar() == 3.5


def test_constant_of_scalar_keeps_shape_1():
    c = mx.gluon.Constant("c", 3.0)
    c.initialize()
    assert c.data().shape == (1,)
    assert c.data().asscalar() == 3.0


# ----------------------------------------------------------------------------- scalar ops

# (op, lhs, rhs, MXNet's result); every result is a Python scalar of exactly that type
_SCALAR_OPS = [
    ("add", 2, 3, 5),
    ("add", 2.5, 3, 5.5),
    ("add", True, 2, 3),
    ("subtract", 2, 3, -1),
    ("subtract", 2.5, 3, -0.5),
    ("multiply", 2, 3, 6),
    ("multiply", 2.5, 3, 7.5),
    ("divide", 2, 3, 2 / 3),
    ("divide", -7, 2, -3.5),
    ("modulo", 7, -2, -1),
    ("modulo", -7, 2, 1),
    ("modulo", 2.5, 3, 2.5),
    ("power", 2, 3, 8),
    ("power", 7, -2, 7**-2),
    ("power", 0, 0.0, 1.0),
    ("maximum", 2, 3, 3),
    ("maximum", 2.5, 3, 3),
    ("maximum", 0, 0.0, 0.0),
    ("minimum", 2, 3, 2),
    ("minimum", 2.5, 3, 2.5),
    ("minimum", True, 2, True),
    ("equal", 2, 3, 0),
    ("equal", 0, 0.0, 1),
    ("not_equal", 2, 3, 1),
    ("not_equal", 0, 0.0, 0),
    ("greater", 2, 3, 0),
    ("greater", 3, 2, 1),
    ("greater_equal", 2, 3, 0),
    ("greater_equal", 0, 0.0, 1),
    ("lesser", 2, 3, 1),
    ("lesser", 3, 2, 0),
    ("lesser", 2.5, 3, 1),
    ("lesser_equal", 2, 3, 1),
    ("lesser_equal", 3, 2, 0),
    ("lesser_equal", 0, 0.0, 1),
    ("logical_and", 2, 3, 1),
    ("logical_and", 0, 0.0, 0),
    ("logical_or", 2, 3, 1),
    ("logical_or", 0, 0.0, 0),
    ("logical_xor", 2, 3, 0),
    ("logical_xor", 0, 3, 1),
    ("hypot", 3, 4, 5.0),
]


@pytest.mark.parametrize("op,lhs,rhs,expected", _SCALAR_OPS)
def test_binary_op_of_two_scalars_is_python_scalar(op, lhs, rhs, expected):
    res = getattr(nd, op)(lhs, rhs)
    assert type(res) is type(expected)
    assert res == expected


def test_binary_op_scalar_by_zero_raises_like_python():
    with pytest.raises(ZeroDivisionError):
        nd.divide(1, 0)
    with pytest.raises(ZeroDivisionError):
        nd.modulo(1, 0)


def test_lesser_with_numpy_array_and_scalar():
    res = nd.lesser(np.array([1.0, 5.0]), 3)
    assert_array_equal(res.asnumpy(), np.less(np.array([1.0, 5.0]), 3))
    res = nd.lesser_equal(3, np.array([1.0, 3.0]))
    assert_array_equal(res.asnumpy(), np.less_equal(3, np.array([1.0, 3.0])))


# ----------------------------------------------------------------------------- nd.array dtypes


@pytest.mark.parametrize(
    "data,dtype",
    [
        ([-1, 200], "int8"),
        ([-1, 256, 300], "uint8"),
        ([2**31, -(2**31) - 1], "int32"),
        ([[1, -129], [2, 3]], np.int8),
        (300, "uint8"),
        ([True, 2], "int8"),
    ],
)
def test_array_wraps_out_of_range_ints(data, dtype):
    x = ndarr(data, dtype=dtype)
    expected = np.array(data).astype(dtype)  # C cast: wraps, as MXNet does
    assert x.dtype == np.dtype(dtype).type
    assert x.shape == expected.shape
    assert_array_equal(x.asnumpy(), expected)


def test_array_truncates_then_wraps_floats_to_ints():
    # MXNet 1.9.1: [1.7, -1.7, 300.5] as uint8 is [1, 255, 44]; 1e10 as int32 wraps
    assert_array_equal(ndarr([1.7, -1.7, 300.5], dtype="uint8").asnumpy(), [1, 255, 44])
    assert_array_equal(ndarr([1e10], dtype="int32").asnumpy(), [1410065408])


@pytest.mark.parametrize(
    "src,expected",
    [
        ("int16", np.int32),
        ("uint16", np.int32),
        ("uint32", np.int64),
        ("uint64", np.int64),
        ("int8", np.int8),
        ("uint8", np.uint8),
        ("int32", np.int32),
        ("bool", np.bool_),
    ],
)
def test_array_of_unsupported_numpy_int_dtype_widens(src, expected):
    a = np.array([0, 1, 2], dtype=src)
    if src != "bool":
        a = np.array([np.iinfo(src).min, 1, np.iinfo(src).max], dtype=src)
    x = ndarr(a)
    assert x.dtype == expected
    assert_array_equal(x.asnumpy(), a.astype(expected))


# ----------------------------------------------------------------------------- error messages


@pytest.mark.parametrize(
    "call,op",
    [
        (lambda: nd.ones(None), "ones"),
        (lambda: nd.zeros((2, 3.5)), "zeros"),
        (lambda: nd.zeros("a"), "zeros"),
        (lambda: nd.zeros((True, 2)), "zeros"),
        (lambda: nd.empty((2, 2.5)), "empty"),
        (lambda: nd.full(None, 1), "full"),
        (lambda: nd.random.uniform(shape=(2, 0.5)), "uniform"),
    ],
)
def test_bad_shape_names_op(call, op):
    with pytest.raises(TypeError, match=rf"{op}: shape must be an int or a tuple of ints"):
        call()


def test_bad_shape_is_also_mxnet_error():
    with pytest.raises(mx.base.MXNetError, match=r"zeros: shape .* got \(2, 3\.5\)"):
        nd.zeros((2, 3.5))


def test_shapes_accept_numpy_ints():
    assert nd.zeros(np.int64(3)).shape == (3,)
    assert nd.ones((2, np.int32(3))).shape == (2, 3)
    assert nd.full([2], 1.5).shape == (2,)


@pytest.mark.parametrize(
    "call,msg",
    [
        (lambda: nd.full((2, 3), "a"), "full: val must be a number, got 'a'"),
        (lambda: nd.full((2,), None), "full: val must be a number, got None"),
        (lambda: nd.arange(None), "arange: start must be a number, got None"),
        (lambda: nd.arange(0, "x"), "arange: stop must be a number, got 'x'"),
    ],
)
def test_bad_number_names_op(call, msg):
    with pytest.raises(TypeError) as e:
        call()
    assert msg in str(e.value)


@pytest.mark.parametrize("make", [mx.cpu, mx.gpu, mx.cpu_pinned])
@pytest.mark.parametrize("dev", [-1, 1 << 31, 1 << 62])
def test_context_rejects_bad_device_id(make, dev):
    with pytest.raises(ValueError, match=rf"device id {dev} is out of range"):
        make(dev)


@pytest.mark.parametrize("dev", ["a", 1.5, None, True])
def test_context_rejects_non_int_device_id(dev):
    with pytest.raises(TypeError, match="device id must be an int"):
        mx.cpu(dev)


def test_context_string_is_checked():
    assert nd.ones((1,), ctx="cpu(2)").context == mx.cpu(2)
    assert mx.cpu(np.int64(1)) == mx.cpu(1)
    with pytest.raises(ValueError, match="bad context string 'cpu\\(x\\)'"):
        nd.ones((1,), ctx="cpu(x)")
    with pytest.raises(ValueError, match="device id -1"):
        nd.ones((1,), ctx="cpu(-1)")
