"""Every ``ferromx.nd`` operator against NumPy on random inputs."""

import math

import ferromx as mx
import numpy as np
import pytest
from ndarr_helper import ndarr
from numpy.testing import assert_allclose, assert_array_equal

nd = mx.nd

ALL_DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool"]
FLOAT_TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3)}


def rand(shape, lo=-1.0, hi=1.0, dtype="float32", seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)


def check(res, expected, rtol=1e-5, atol=1e-6, dtype=None):
    got = res.asnumpy()
    expected = np.asarray(expected)
    if expected.shape == () and got.shape == (1,) and not res._is_np:
        expected = expected.reshape(1)  # legacy nd: a full reduction has shape (1,) (MXNet)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- unary

_erf = np.vectorize(math.erf)
_gamma = np.vectorize(math.gamma)
_lgamma = np.vectorize(math.lgamma)

# name -> (NumPy reference, input domain)
def _bisect(f, y, lo, hi):
    """The root of ``f(x) = y`` in ``[lo, hi]`` for increasing ``f`` (float64 bisection)."""
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < y else (lo, mid)
    return 0.5 * (lo + hi)


UNARY = {
    "negative": (np.negative, (-5, 5)),
    "abs": (np.abs, (-5, 5)),
    "sign": (np.sign, (-5, 5)),
    "square": (np.square, (-5, 5)),
    "relu": (lambda x: np.maximum(x, 0), (-5, 5)),
    "sqrt": (np.sqrt, (0.01, 10)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 10)),
    "cbrt": (np.cbrt, (-10, 10)),
    "rcbrt": (lambda x: 1.0 / np.cbrt(x), (0.5, 10)),
    "exp": (np.exp, (-5, 5)),
    "expm1": (np.expm1, (-2, 2)),
    "log": (np.log, (0.01, 10)),
    "log2": (np.log2, (0.01, 10)),
    "log10": (np.log10, (0.01, 10)),
    "log1p": (np.log1p, (-0.9, 5)),
    "sin": (np.sin, (-5, 5)),
    "cos": (np.cos, (-5, 5)),
    "tan": (np.tan, (-1.2, 1.2)),
    "arcsin": (np.arcsin, (-0.95, 0.95)),
    "arccos": (np.arccos, (-0.95, 0.95)),
    "arctan": (np.arctan, (-5, 5)),
    "sinh": (np.sinh, (-3, 3)),
    "cosh": (np.cosh, (-3, 3)),
    "tanh": (np.tanh, (-3, 3)),
    "arcsinh": (np.arcsinh, (-5, 5)),
    "arccosh": (np.arccosh, (1.05, 5)),
    "arctanh": (np.arctanh, (-0.9, 0.9)),
    "floor": (np.floor, (-5, 5)),
    "ceil": (np.ceil, (-5, 5)),
    "round": (np.round, (-5, 5)),  # random inputs never hit .5 ties
    "rint": (np.rint, (-5, 5)),
    "fix": (np.fix, (-5, 5)),
    "trunc": (np.trunc, (-5, 5)),
    "reciprocal": (np.reciprocal, (0.2, 5)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-6, 6)),
    "softsign": (lambda x: x / (1 + np.abs(x)), (-5, 5)),
    "erf": (_erf, (-2, 2)),
    "erfinv": (np.vectorize(lambda y: _bisect(math.erf, y, -6.0, 6.0)), (-0.95, 0.95)),
    "gamma": (_gamma, (0.2, 5)),
    "gammaln": (_lgamma, (0.2, 8)),
    "logical_not": (lambda x: (x == 0).astype(x.dtype), None),
    "degrees": (np.degrees, (-5, 5)),
    "radians": (np.radians, (-200, 200)),
    "softrelu": (lambda x: np.log1p(np.exp(x)), (-10, 10)),
}


def _unary_input(name, shape, dtype="float32", seed=1):
    dom = UNARY[name][1]
    if dom is None:  # values with exact zeros
        return np.random.default_rng(seed).integers(-2, 3, size=shape).astype(dtype)
    x = rand(shape, dom[0], dom[1], dtype="float64", seed=seed)
    if name == "reciprocal":
        x *= np.where(np.arange(x.size).reshape(shape) % 2 == 0, 1, -1)
    return x.astype(dtype)


def test_unary_table_covers_every_unary_op():
    # internal operators (`_digamma`, `_trigamma`) have no nd function; Rust tests check them
    public = {n for n in nd._UNARY if not n.startswith("_")}
    assert public <= set(UNARY), public - set(UNARY)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32(name):
    x = _unary_input(name, (3, 4, 5))
    ref = UNARY[name][0](x.astype(np.float64))
    res = getattr(nd, name)(ndarr(x))
    check(res, ref, rtol=2e-5, atol=2e-6, dtype="float32")
    if hasattr(nd.NDArray, name):  # fluent form
        check(getattr(ndarr(x), name)(), ref, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "abs", "tanh", "sigmoid", "floor", "sin"])
def test_unary_other_float_dtypes(name, dtype):
    x = _unary_input(name, (4, 6), dtype=dtype)
    ref = UNARY[name][0](x.astype(np.float64))
    rtol, atol = FLOAT_TOL[dtype]
    check(getattr(nd, name)(ndarr(x)), ref, rtol=rtol, atol=atol, dtype=dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8"])
def test_unary_integer_inputs(dtype):
    x = np.array([[-3, -1, 0], [1, 2, 5]], dtype=dtype)
    a = ndarr(x)
    for name, ref in [("negative", np.negative), ("abs", np.abs), ("sign", np.sign),
                      ("square", np.square), ("relu", lambda v: np.maximum(v, 0)),
                      ("floor", np.floor), ("logical_not", lambda v: (v == 0))]:
        check(getattr(nd, name)(a), ref(x).astype(dtype), dtype=dtype)
    # float-only math computes in float32
    check(nd.exp(a), np.exp(x.astype(np.float64)), rtol=1e-5, dtype="float32")
    check(nd.sqrt(ndarr(np.array([4, 9], dtype=dtype))), [2, 3], dtype="float32")


def test_exp_float32_whole_range_and_specials():
    # The vectorised float32 exp has no scalar fix-up pass: overflow, the
    # subnormal range, underflow and NaN must all come out of the main loop.
    rng = np.random.default_rng(11)
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72, 88.73, 89.0, 1e30, -87.0, -87.5,
                         -95.0, -100.0, -103.0, -103.3, -104.0, -110.0, -1e30, 1e-8, -1e-8], dtype=np.float32)
    x = np.concatenate([specials, rng.uniform(-110, 95, 300_000).astype(np.float32)])
    got = nd.exp(ndarr(x)).asnumpy()
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=1)
    assert got[0] == np.inf and got[1] == 0.0 and got[7] == np.inf
    assert 0 < got[12] < np.finfo(np.float32).tiny  # exp(-100) is subnormal, not flushed
    # sigmoid reuses the same core: exact at both tails
    s = nd.sigmoid(ndarr(specials[:2])).asnumpy()
    assert s[0] == 1.0 and s[1] == 0.0


def test_unary_out_argument_and_operators():
    x = rand((2, 3), seed=3)
    out = nd.zeros((2, 3))
    res = nd.exp(ndarr(x), out=out)
    assert res is out
    check(out, np.exp(x), rtol=1e-5)
    check(-ndarr(x), -x)
    check(abs(ndarr(x)), np.abs(x))


def test_round_halves_like_mxnet():
    check(nd.round(ndarr([-2.5, -1.5, 0.5, 1.5, 2.5])), [-3, -2, 1, 2, 3])


def test_rint_halves_like_mxnet():
    check(nd.rint(ndarr([-1.5, 1.5, 2.5])), [-2, 1, 2])


# ----------------------------------------------------------------------------- binary

BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "modulo": np.mod, "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "hypot": np.hypot,
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)),
          ((5,), (1,)), ((0, 3), (1, 3))]


def _operands(name, sa, sb, seed=0):
    a = rand(sa, -3, 3, seed=seed)
    b = rand(sb, -3, 3, seed=seed + 1)
    if name in ("divide", "modulo"):
        b = np.where(np.abs(b) < 0.5, 1.5, b).astype(np.float32)
    if name == "power":
        a, b = np.abs(a) + 0.1, np.abs(b) + 0.1
    if name.startswith(("equal", "not_equal", "greater", "lesser", "logical")):
        a, b = np.round(a), np.round(b)  # plenty of equal and zero entries
    return a, b


def _ref(name, a, b):
    return BINARY[name](a, b).astype(np.float32)


@pytest.mark.parametrize("sa,sb", SHAPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast(name, sa, sb):
    a, b = _operands(name, sa, sb)
    check(getattr(nd, name)(ndarr(a), ndarr(b)), _ref(name, a, b), rtol=1e-5, atol=1e-5,
          dtype="float32")
    check(getattr(nd, name)(ndarr(b), ndarr(a)), _ref(name, b, a), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_scalar_forms(name):
    a, _ = _operands(name, (3, 4), (1,))
    s = 2.0 if name != "modulo" else 1.5
    x = ndarr(a)
    check(getattr(nd, name)(x, s), _ref(name, a, np.float32(s)), rtol=1e-5, atol=1e-5,
          dtype="float32")
    check(getattr(nd, name)(s, x) if name != "power" else nd.power(s, x),
          _ref(name, np.float32(s), a), rtol=1e-5, atol=1e-5)


def test_binary_broadcast_aliases():
    a, b = rand((2, 3)), rand((1, 3), 1, 2)
    x, y = ndarr(a), ndarr(b)
    check(nd.broadcast_add(x, y), a + b)
    check(nd.broadcast_plus(x, y), a + b)
    check(nd.broadcast_sub(x, y), a - b)
    check(nd.broadcast_minus(x, y), a - b)
    check(nd.broadcast_mul(x, y), a * b)
    check(nd.broadcast_div(x, y), a / b)
    check(nd.elemwise_add(x, x), a + a)
    check(nd.broadcast_lesser(x, y), (a < b).astype(np.float32))


OPERATORS = [
    ("+", lambda p, q: p + q), ("-", lambda p, q: p - q), ("*", lambda p, q: p * q),
    ("/", lambda p, q: p / q), ("%", lambda p, q: p % q), ("**", lambda p, q: p ** q),
    ("==", lambda p, q: p == q), ("!=", lambda p, q: p != q), (">", lambda p, q: p > q),
    (">=", lambda p, q: p >= q), ("<", lambda p, q: p < q), ("<=", lambda p, q: p <= q),
]


@pytest.mark.parametrize("sym,f", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_python_operators(sym, f):
    a = np.round(rand((3, 4), 0.5, 4, seed=4), 1)
    b = np.round(rand((1, 4), 0.5, 4, seed=5), 1)
    b[0, 0] = a[0, 0]
    exp = lambda p, q: np.asarray(f(p, q)).astype(np.float32)
    x, y = ndarr(a), ndarr(b)
    check(f(x, y), exp(a, b), rtol=1e-5, dtype="float32")
    check(f(x, 2.0), exp(a, np.float32(2.0)), rtol=1e-5, dtype="float32")
    check(f(2.0, x), exp(np.float32(2.0), a), rtol=1e-5, dtype="float32")  # reversed scalar
    check(f(x, np.float32(2.0)), exp(a, np.float32(2.0)), rtol=1e-5)  # NumPy scalar
    check(f(x, 2), exp(a, np.float32(2)), rtol=1e-5)  # int scalar


def test_comparison_results_keep_input_dtype():
    for dt in ["float32", "float64", "int32", "int64", "uint8"]:
        a = ndarr(np.array([1, 2, 3], dtype=dt))
        for res in [a == 2, a > 1, nd.lesser_equal(a, 2), a != ndarr(np.array([1, 0, 3], dt))]:
            assert res.dtype == np.dtype(dt)
            assert set(np.unique(res.asnumpy())) <= {0, 1}
    assert_array_equal((ndarr([1, 2, 3]) >= 2).asnumpy(), [0, 1, 1])


def test_floordiv_matches_python():
    a = np.array([7, -7, 6, -1, 0], dtype=np.float32)
    check(ndarr(a) // 2, a // 2)
    check(ndarr(a) // -2, a // -2)
    check(20 // ndarr([3.0, -3.0, 7.0]), np.array([20 // 3, 20 // -3, 20 // 7]))
    ai = a.astype(np.int32)
    check(ndarr(ai) // 2, ai // 2, dtype="int32")
    check(ndarr(ai) // ndarr(np.full(5, -3, np.int32)), ai // -3, dtype="int32")
    check(9 // ndarr(np.array([2, -2, 4], np.int32)), np.array([4, -5, 2]), dtype="int32")


def test_matmul_operator():
    a, b = rand((3, 4)), rand((4, 2), seed=1)
    check(ndarr(a) @ ndarr(b), a @ b, rtol=1e-5)


# ----------------------------------------------------------------------------- in-place


INPLACE = [
    ("+=", lambda v, o: v.__iadd__(o), np.add), ("-=", lambda v, o: v.__isub__(o), np.subtract),
    ("*=", lambda v, o: v.__imul__(o), np.multiply),
    ("/=", lambda v, o: v.__itruediv__(o), np.divide), ("%=", lambda v, o: v.__imod__(o), np.mod),
]


@pytest.mark.parametrize("sym,op,ref", INPLACE, ids=[i[0] for i in INPLACE])
def test_inplace_writes_same_storage(sym, op, ref):
    base_np = rand((3, 4), 1, 3, seed=7)
    rhs_np = rand((1, 4), 1, 2, seed=8)
    # array operand (broadcast), scalar operand
    for other, other_np in [(ndarr(rhs_np), rhs_np), (1.5, np.float32(1.5))]:
        x = ndarr(base_np)
        alias, row, flat = x, x[1], x.reshape((12,))
        code = f"x {sym} other"
        exec(code, {}, {"x": x, "other": other})  # noqa: S102 - the real statement form
        expect = ref(base_np, other_np).astype(np.float32)
        assert alias is x
        check(x, expect, rtol=1e-5)
        check(row, expect[1], rtol=1e-5)  # views see the write
        check(flat, expect.reshape(12), rtol=1e-5)


def test_inplace_statement_keeps_identity():
    x = nd.ones((2, 3))
    y = x
    x += 1
    x *= 3
    x -= 1
    x /= 5
    assert x is y
    check(y, np.full((2, 3), 1.0))


def test_inplace_through_view_writes_base():
    base = ndarr(np.arange(12, dtype=np.float32).reshape(3, 4))
    v = base[1]
    v += 100
    s = base[1:3]
    s *= 2
    r = base.reshape((4, 3))
    r -= 1
    exp = np.arange(12, dtype=np.float32).reshape(3, 4)
    exp[1] += 100
    exp[1:3] *= 2
    exp -= 1
    check(base, exp)


def test_inplace_casts_to_target_dtype_and_rejects_growth():
    x = ndarr(np.array([1, 2, 3], np.int32))
    x += ndarr([0.6, 1.6, 2.6])
    assert x.dtype == np.int32
    with pytest.raises(ValueError):
        y = nd.ones((3,))
        y += nd.ones((2, 3))
    with pytest.raises(TypeError):
        y = nd.ones((3,))
        y += "a"


# ----------------------------------------------------------------------------- promotion


@pytest.mark.parametrize("da,db,expect", [
    ("float32", "float64", "float64"), ("float16", "float32", "float32"),
    ("int32", "float32", "float32"), ("int64", "float16", "float16"),
    ("int32", "int64", "int64"), ("uint8", "int32", "int32"), ("int8", "int64", "int64"),
    ("uint8", "int8", "int32"), ("bool", "int32", "int32"), ("bool", "float32", "float32"),
    ("bool", "bool", "bool"),
])
def test_type_promotion(da, db, expect):
    a = np.array([0, 1, 2], dtype=da)
    b = np.array([1, 1, 0], dtype=db)
    res = ndarr(a) + ndarr(b)
    assert res.dtype == np.dtype(expect)
    assert_array_equal(res.asnumpy(), (a.astype(np.float64) + b).astype(expect))
    assert (ndarr(b) * ndarr(a)).dtype == np.dtype(expect)


def test_scalar_keeps_array_dtype():
    a = ndarr(np.array([5, 7, -7], np.int32))
    check(a / 2, np.array([2, 3, -3]), dtype="int32")  # C-style truncation, as MXNet
    check(a + 1.0, np.array([6, 8, -6]), dtype="int32")
    h = ndarr(np.array([1, 2], np.float16))
    assert (h * 2.5).dtype == np.float16


# ----------------------------------------------------------------------------- reductions

REDUCE = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
          "nansum": np.nansum, "nanprod": np.nanprod}
AXES = [None, 0, 1, -1, (0, 2), (-1, -3), (1,), (0, 1, 2)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reductions(name, axis, keepdims):
    x = rand((2, 3, 4), 0.5, 1.5, seed=9)
    if name.startswith("nan"):
        x[0, 1, 2] = x[1, 2, 3] = np.nan
    ref = REDUCE[name](x.astype(np.float64), axis=axis, keepdims=keepdims)
    res = getattr(nd, name)(ndarr(x), axis=axis, keepdims=keepdims)
    check(res, ref, rtol=1e-5, dtype="float32")
    check(getattr(ndarr(x), name)(axis=axis, keepdims=keepdims), ref, rtol=1e-5)


@pytest.mark.parametrize("axis", [0, (0, 2), -1, (1, -1)], ids=str)
@pytest.mark.parametrize("name", ["sum", "mean", "max"])
def test_reductions_exclude(name, axis):
    x = rand((2, 3, 4), seed=10)
    ax = (axis,) if isinstance(axis, int) else axis
    keep = tuple(i for i in range(3) if i not in {a % 3 for a in ax})
    ref = REDUCE[name](x.astype(np.float64), axis=keep)
    check(getattr(nd, name)(ndarr(x), axis=axis, exclude=True), ref, rtol=1e-5)
    ref_k = REDUCE[name](x.astype(np.float64), axis=keep, keepdims=True)
    check(getattr(nd, name)(ndarr(x), axis=axis, exclude=True, keepdims=True), ref_k, rtol=1e-5)


def test_reductions_integer_and_zero_size():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(nd.sum(ndarr(a), axis=1), a.sum(axis=1), dtype="int32")
    check(nd.max(ndarr(a), axis=0), a.max(axis=0), dtype="int32")
    check(nd.sum(ndarr(a.astype(np.int64))), 66, dtype="int64")
    z = nd.zeros((0, 3))
    check(nd.sum(z, axis=0), np.zeros(3))
    check(nd.prod(z, axis=0), np.ones(3))
    check(nd.sum(z, axis=1), np.zeros(0))
    with pytest.raises(ValueError):
        nd.max(z, axis=0)


def test_max_min_propagate_nan():
    for data in ([1.0, np.nan, 5.0], [np.nan, 1.0, 2.0]):
        assert np.isnan(nd.max(ndarr(data)).asscalar())
        assert np.isnan(nd.min(ndarr(data)).asscalar())
        assert np.isnan(nd.max(ndarr([data]), axis=1).asnumpy()).all()


def test_int64_reductions_are_exact():
    a = np.array([2 ** 53, 1, 1], dtype=np.int64)
    assert nd.sum(ndarr(a)).asscalar() == a.sum()
    b = np.array([2 ** 62 + 1, 2 ** 62], dtype=np.int64)
    assert nd.max(ndarr(b)).asscalar() == b.max()


def test_uint8_sum_wraps_like_elementwise_arithmetic():
    wrapped = (nd.full((2,), 200, dtype="uint8") + nd.full((2,), 100, dtype="uint8")).asnumpy()
    assert_array_equal(wrapped, [44, 44])
    assert nd.sum(nd.full((300,), 200, dtype="uint8")).asscalar() == (300 * 200) % 256


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name, axis):
    x = rand((4, 5), seed=11)
    ref = getattr(np, name)(x, axis=axis)
    res = getattr(nd, name)(ndarr(x), axis=axis)
    assert res.dtype == np.float32  # MXNet nd returns float indices
    assert_array_equal(res.asnumpy().reshape(np.shape(ref)), ref)
    if axis is not None:
        kd = getattr(nd, name)(ndarr(x), axis=axis, keepdims=True)
        assert_array_equal(kd.asnumpy(), np.expand_dims(ref, axis))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1], ids=str)
@pytest.mark.parametrize("ord_", [1, 2])
def test_norm(ord_, axis):
    x = rand((3, 4), seed=12)
    flat = axis is None
    ref = (np.abs(x).sum(axis=axis) if ord_ == 1 else np.sqrt((x.astype(np.float64) ** 2).sum(axis=axis)))
    res = nd.norm(ndarr(x), ord=ord_, axis=axis)
    check(res.reshape(np.shape(ref)) if flat else res, ref, rtol=1e-5)
    kd = nd.norm(ndarr(x), ord=ord_, axis=axis, keepdims=True)
    if not flat:
        ax = axis if isinstance(axis, tuple) else (axis,)
        assert kd.shape == tuple(1 if i in {a % 2 for a in ax} else d for i, d in enumerate(x.shape))


# ----------------------------------------------------------------------------- linear algebra


def test_dot_2d_nd_and_transposes():
    a, b = rand((3, 4)), rand((4, 5), seed=1)
    check(nd.dot(ndarr(a), ndarr(b)), a @ b, rtol=1e-5)
    check(nd.dot(ndarr(a.T.copy()), ndarr(b), transpose_a=True), a @ b, rtol=1e-5)
    check(nd.dot(ndarr(a), ndarr(b.T.copy()), transpose_b=True), a @ b, rtol=1e-5)
    check(nd.dot(ndarr(a.T.copy()), ndarr(b.T.copy()), transpose_a=True, transpose_b=True),
          a @ b, rtol=1e-5)
    c, d = rand((2, 3, 4), seed=2), rand((4, 5, 2), seed=3)
    check(nd.dot(ndarr(c), ndarr(d)), np.tensordot(c, d, axes=([-1], [0])), rtol=1e-5)
    # N-d transposes follow MXNet: contract lhs's first / rhs's last axis, keep the rest in order
    e, f = rand((4, 3, 2), seed=8), rand((4, 5), seed=9)
    check(nd.dot(ndarr(e), ndarr(f), transpose_a=True), np.tensordot(e, f, ([0], [0])),
          rtol=1e-5, atol=1e-6)
    g = rand((5, 6, 2), seed=10)
    check(nd.dot(ndarr(c[..., :2].copy()), ndarr(g), transpose_b=True),
          np.tensordot(c[..., :2], g, ([-1], [-1])), rtol=1e-5, atol=1e-6)
    v, w = rand((6,), seed=4), rand((6,), seed=5)
    check(nd.dot(ndarr(v), ndarr(w)).reshape(()), np.dot(v, w), rtol=1e-5)
    for dt in ["float64", "int32"]:
        ai, bi = np.arange(6, dtype=dt).reshape(2, 3), np.arange(6, dtype=dt).reshape(3, 2)
        check(nd.dot(ndarr(ai), ndarr(bi)), ai @ bi, dtype=dt)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_dot_and_gemm2(ta, tb):
    a, b = rand((3, 2, 4), seed=6), rand((3, 4, 5), seed=7)
    aa = np.swapaxes(a, 1, 2).copy() if ta else a
    bb = np.swapaxes(b, 1, 2).copy() if tb else b
    check(nd.batch_dot(ndarr(aa), ndarr(bb), transpose_a=ta, transpose_b=tb), a @ b,
          rtol=1e-5)
    check(nd.linalg.gemm2(ndarr(aa), ndarr(bb), transpose_a=ta, transpose_b=tb, alpha=2.5),
          2.5 * (a @ b), rtol=1e-5)
    check(nd.linalg_gemm2(ndarr(aa[0]), ndarr(bb[0]), transpose_a=ta, transpose_b=tb),
          a[0] @ b[0], rtol=1e-5)


# ----------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("src,shape,expect", [
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)), ((2, 3, 4), (2, 0, 0), (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)), ((2, 3, 4), (3, -1, 8), (3, 1, 8)),
    ((2, 3, 4), (-1,), (24,)), ((2, 3, 4), (-2,), (2, 3, 4)), ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), (2, 3, 4, 1, 1)), ((2, 3, 4, 5), (-3, -3), (6, 20)),
    ((2, 3, 4), (0, -3), (2, 12)), ((2, 3, 4), (-3, -2), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)), ((2, 3, 4), (2, -4, -1, 3, -2), (2, 1, 3, 4)),
    ((2, 3, 4), (0, -4, 3, -1, 4), (2, 3, 1, 4)),
])
def test_reshape_special_codes(src, shape, expect):
    x = np.arange(int(np.prod(src)), dtype=np.float32).reshape(src)
    res = ndarr(x).reshape(shape)
    check(res, x.reshape(expect))
    check(nd.reshape(ndarr(x), shape=shape), x.reshape(expect))


def test_reshape_reverse_and_forms():
    x = np.arange(200, dtype=np.float32).reshape(10, 5, 4)
    assert ndarr(x).reshape((-1, 0)).shape == (40, 5)
    check(ndarr(x).reshape((-1, 0), reverse=True), x.reshape(50, 4))
    check(nd.reshape(ndarr(x), shape=(-1, 0), reverse=True), x.reshape(50, 4))
    check(ndarr(x).reshape(20, -1), x.reshape(20, 10))
    check(ndarr(x).reshape(shape=(4, 50)), x.reshape(4, 50))
    check(nd.reshape_like(ndarr(x), nd.zeros((8, 25))), x.reshape(8, 25))
    with pytest.raises(ValueError):
        ndarr(x).reshape((3, 7))


def test_flatten_expand_squeeze_transpose_swapaxes():
    x = rand((2, 3, 4), seed=13)
    a = ndarr(x)
    check(nd.flatten(a), x.reshape(2, 12))
    check(a.flatten(), x.reshape(2, 12))
    for ax in [0, 1, 3, -1, -4]:
        check(nd.expand_dims(a, axis=ax), np.expand_dims(x, ax))
    y = x.reshape(1, 2, 1, 3, 4, 1)
    check(nd.squeeze(ndarr(y)), np.squeeze(y))
    check(nd.squeeze(ndarr(y), axis=2), np.squeeze(y, 2))
    check(nd.squeeze(ndarr(y), axis=(0, -1)), np.squeeze(y, (0, 5)))
    check(nd.transpose(a), x.T)
    check(a.T, x.T)
    check(nd.transpose(a, axes=(1, 2, 0)), x.transpose(1, 2, 0))
    check(nd.swapaxes(a, 0, 2), np.swapaxes(x, 0, 2))
    check(a.swapaxes(1, -1), np.swapaxes(x, 1, -1))


def test_broadcast_to_and_like():
    x = rand((1, 3, 1), seed=14)
    check(nd.broadcast_to(ndarr(x), shape=(2, 3, 4)), np.broadcast_to(x, (2, 3, 4)))
    check(nd.broadcast_to(ndarr(x), shape=(2, 0, 4)), np.broadcast_to(x, (2, 3, 4)))
    check(nd.broadcast_like(ndarr(x), nd.zeros((5, 3, 2))), np.broadcast_to(x, (5, 3, 2)))
    check(ndarr(x).broadcast_to((2, 3, 4)), np.broadcast_to(x, (2, 3, 4)))


def test_concat_stack():
    a, b, c = rand((2, 3), seed=1), rand((2, 1), seed=2), rand((2, 4), seed=3)
    check(nd.concat(ndarr(a), ndarr(b), ndarr(c)), np.concatenate([a, b, c], 1))
    check(nd.concat(ndarr(a), ndarr(a), dim=0), np.concatenate([a, a], 0))
    check(nd.concat(*[ndarr(a)] * 3, dim=-1), np.concatenate([a] * 3, -1))
    for ax in [0, 1, 2, -1]:
        check(nd.stack(ndarr(a), ndarr(a * 2), axis=ax), np.stack([a, a * 2], ax))
    check(nd.stack(*[ndarr(a)] * 3), np.stack([a] * 3))


def test_split_and_split_v2():
    x = rand((2, 6, 4), seed=15)
    parts = nd.split(ndarr(x), num_outputs=3, axis=1)
    for p, e in zip(parts, np.split(x, 3, 1)):
        check(p, e)
    parts = nd.split(ndarr(x), num_outputs=2, axis=0, squeeze_axis=True)
    for p, e in zip(parts, x):
        check(p, e)
    assert isinstance(nd.split(ndarr(x), num_outputs=1, axis=1), nd.NDArray)
    for spec in ([1, 4], 3, [2]):
        got = nd.split_v2(ndarr(x), spec, axis=1)
        exp = np.split(x, spec, axis=1)
        assert len(got) == len(exp)
        for p, e in zip(got, exp):
            check(p, e)
    got = nd.split_v2(ndarr(x), 2, axis=0, squeeze_axis=True)
    check(got[1], x[1])


def test_slice_axis():
    x = rand((3, 5, 4), seed=16)
    a = ndarr(x)
    check(nd.slice_axis(a, axis=1, begin=1, end=3), x[:, 1:3])
    check(nd.slice_axis(a, axis=-1, begin=-3, end=-1), x[..., -3:-1])
    check(nd.slice_axis(a, axis=0, begin=1, end=None), x[1:])
    check(a.slice_axis(axis=2, begin=0, end=2), x[..., :2])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_modes(axis):
    x = rand((4, 5, 3), seed=17)
    n = x.shape[axis]
    idx = np.array([[0, n - 1], [2, 1]])
    check(nd.take(ndarr(x), ndarr(idx), axis=axis), np.take(x, idx, axis=axis))
    oob = np.array([-n - 2, -1, 0, n, n + 3])
    check(nd.take(ndarr(x), ndarr(oob), axis=axis, mode="clip"),
          np.take(x, oob, axis=axis, mode="clip"))
    check(nd.take(ndarr(x), ndarr(oob), axis=axis, mode="wrap"),
          np.take(x, oob, axis=axis, mode="wrap"))
    check(nd.take(ndarr(x), ndarr(oob, dtype="int64"), axis=axis, mode="wrap"),
          np.take(x, oob, axis=axis, mode="wrap"))


def test_take_raise_fails_at_next_read_not_at_call():
    x = ndarr(rand((4, 3)))
    res = nd.take(x, ndarr([0, 9]), mode="raise")  # pushed: no error yet
    assert res.shape == (2, 3)
    with pytest.raises(IndexError) as ei:
        res.asnumpy()
    assert "take" in str(ei.value)
    assert isinstance(ei.value, mx.base.MXNetError)
    check(nd.take(x, ndarr([0, 3]), mode="raise"), x.asnumpy()[[0, 3]])


def test_pick():
    x = rand((3, 4), seed=18)
    idx = np.array([0, 3, 1])
    check(nd.pick(ndarr(x), ndarr(idx), axis=1), x[np.arange(3), idx])
    check(nd.pick(ndarr(x), ndarr(idx), axis=-1, keepdims=True), x[np.arange(3), idx][:, None])
    idx0 = np.array([2, 0, 1, 2])
    check(nd.pick(ndarr(x), ndarr(idx0), axis=0), x[idx0, np.arange(4)])
    check(nd.pick(ndarr(x), ndarr([5, -1, 1]), axis=1, mode="clip"), x[[0, 1, 2], [3, 0, 1]])
    check(nd.pick(ndarr(x), ndarr([5, -1, 1]), axis=1, mode="wrap"), x[[0, 1, 2], [1, 3, 1]])


def test_one_hot():
    idx = np.array([1, 0, 2, -1, 7])
    exp = np.zeros((5, 4), np.float32)
    for i, j in enumerate(idx):
        if 0 <= j < 4:
            exp[i, j] = 1
    check(nd.one_hot(ndarr(idx), 4), exp, dtype="float32")
    check(nd.one_hot(ndarr(idx), depth=4, on_value=5, off_value=-2, dtype="int32"),
          np.where(exp == 1, 5, -2), dtype="int32")
    check(nd.one_hot(ndarr([[0, 1], [1, 0]]), 2), np.eye(2)[[[0, 1], [1, 0]]])


def test_where_and_clip():
    c = (rand((3, 4), seed=19) > 0).astype(np.float32)
    x, y = rand((3, 4), seed=20), rand((3, 4), seed=21)
    check(nd.where(ndarr(c), ndarr(x), ndarr(y)), np.where(c, x, y))
    check(nd.where(ndarr(c).astype("bool"), ndarr(x), ndarr(y)), np.where(c, x, y))
    check(nd.clip(ndarr(x), -0.3, 0.4), np.clip(x, -0.3, 0.4))
    check(ndarr(x).clip(0, 0.5), np.clip(x, 0, 0.5))
    xi = np.arange(-5, 5, dtype=np.int32)
    check(nd.clip(ndarr(xi), -2, 3), np.clip(xi, -2, 3), dtype="int32")


def test_where_1d_condition_selects_rows_like_mxnet():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    res = nd.where(ndarr([1, 0]), ndarr(x), ndarr(-x))
    check(res, np.array([x[0], -x[1]]))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape,width", [((5,), (2, 3)), ((3, 4), (1, 2, 0, 3)),
                                         ((2, 3, 4), (1, 0, 2, 1, 3, 2))], ids=["1d", "2d", "3d"])
def test_pad(mode, shape, width):
    x = rand(shape, seed=22)
    pw = list(zip(width[::2], width[1::2]))
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    exp = np.pad(x, pw, mode=mode, **kw)
    res = nd.pad(ndarr(x), mode=mode, pad_width=width, constant_value=1.5)
    check(res, exp)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("temp", [None, 0.5, 2.0])
def test_softmax_log_softmax(axis, temp):
    x = rand((3, 4, 5), -3, 3, seed=23)
    z = x.astype(np.float64) / (temp or 1.0)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    sm = e / e.sum(axis=axis, keepdims=True)
    kw = {} if temp is None else {"temperature": temp}
    check(nd.softmax(ndarr(x), axis=axis, **kw), sm, rtol=1e-5, atol=1e-6)
    check(nd.log_softmax(ndarr(x), axis=axis, **kw), np.log(sm), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("temp", [None, 0.5])
def test_softmax_wide_rows_in_parallel(temp):
    # Contiguous float32 rows (last axis) take the eight-lane kernel, rows split
    # across threads: widths with and without a remainder, many rows, large scores.
    for shape in [(80, 1003), (70, 512), (3, 7)]:
        x = rand(shape, -30, 30, seed=5)
        z = x.astype(np.float64) / (temp or 1.0)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        sm = e / e.sum(axis=-1, keepdims=True)
        kw = {} if temp is None else {"temperature": temp}
        check(nd.softmax(ndarr(x), **kw), sm, rtol=1e-5, atol=1e-7)
        check(nd.log_softmax(ndarr(x), **kw), np.log(sm), rtol=1e-5, atol=1e-4)


# ----------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dst", ALL_DTYPES)
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_astype_all_pairs(src, dst):
    vals = np.array([0, 1, 2, 5, 100, 0, 7], dtype=src)  # exact in every dtype
    a = ndarr(vals)
    assert a.dtype == np.dtype(src)
    res = a.astype(dst)
    assert res.dtype == np.dtype(dst)
    assert_array_equal(res.asnumpy(), vals.astype(dst))
    assert a.astype(src, copy=False) is a
    assert nd.cast(a, dtype=dst).dtype == np.dtype(dst)


def test_astype_float_to_int_truncates_and_bool():
    x = np.array([-2.7, -0.5, 0.0, 0.4, 3.9], np.float32)
    check(ndarr(x).astype("int32"), x.astype(np.int32), dtype="int32")
    assert_array_equal(ndarr(x).astype("bool").asnumpy(), x.astype(bool))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_ops_accept_every_dtype(dtype):
    a_np = np.array([[0, 1, 2], [3, 1, 0]], dtype=dtype)
    a = ndarr(a_np)
    assert_array_equal((a + a).asnumpy(), (a_np + a_np) if dtype != "bool" else a_np | a_np)
    assert_array_equal(nd.abs(a).asnumpy(), np.abs(a_np))
    assert_array_equal(a.reshape((3, 2)).asnumpy(), a_np.reshape(3, 2))
    assert_array_equal(nd.transpose(a).asnumpy(), a_np.T)
    assert_array_equal(nd.concat(a, a, dim=0).asnumpy(), np.concatenate([a_np, a_np]))
    assert_array_equal(nd.take(a, ndarr([1, 0])).asnumpy(), a_np[[1, 0]])
    assert_array_equal(nd.where(ndarr([[1, 0, 1], [0, 1, 0]]), a, nd.zeros_like(a)).asnumpy(),
                       np.where([[1, 0, 1], [0, 1, 0]], a_np, 0).astype(dtype))
    assert_array_equal(nd.expand_dims(a, 0).asnumpy(), a_np[None])
    assert_array_equal((a == a).asnumpy(), np.ones_like(a_np))  # noqa: PLR0124 - the op itself
    s = nd.sum(a, axis=1).asnumpy()
    assert_array_equal(s.astype(np.int64), a_np.astype(np.int64).sum(axis=1))
