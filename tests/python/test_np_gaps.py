"""``mx.np`` gaps found by MXNet 1.9.1's test_numpy_interoperability.py and test_numpy_op.py:
one-function ufuncs, ``arctan2``'s special values, ``einsum`` with ``...``, ``insert`` /
``delete`` positions and zero sizes, zero-size ``tensordot``, ``cov`` of one variable,
``tensorsolve`` shapes, ``shares_memory`` of slices. Expected values come from NumPy or
are MXNet 1.9.1's, recorded."""

import ferromx as mx
import numpy as onp
import pytest
from ferromx import np

# ----------------------------------------------------------------------------- ufuncs


@pytest.mark.parametrize("name", ["exp", "sqrt", "abs", "fix", "add", "multiply", "power",
                                  "maximum"])
def test_table_ufuncs_are_one_function(name):
    fn = getattr(np, name)
    assert not hasattr(fn, "__wrapped__")  # no wrapper layer around the native call
    assert fn._ferromx_ufunc and fn.__name__ == name


def test_one_function_ufuncs_keep_their_behaviour():
    x = np.array([[0.5, 1.5]])
    onp.testing.assert_allclose(np.exp(x).asnumpy(), onp.exp([[0.5, 1.5]]), rtol=1e-6)
    out = np.zeros((1, 2))
    assert np.exp(x, out) is out  # positional out, as MXNet's np.exp(x, out=None)
    onp.testing.assert_allclose(out.asnumpy(), onp.exp([[0.5, 1.5]]), rtol=1e-6)
    assert np.add(x, x, out=out) is out and out.asnumpy().tolist() == [[1.0, 3.0]]
    assert np.add(2, 3) == 5 and np.exp(0.0) == 1.0 and isinstance(np.exp(0.0), onp.float64)
    assert np.add(x, 1).asnumpy().tolist() == [[1.5, 2.5]]
    assert np.subtract(1, x).asnumpy().tolist() == [[0.5, -0.5]]
    with pytest.raises(TypeError, match="scalar"):
        np.exp(2.0, out=out)
    with pytest.raises(TypeError):
        np.exp([1, 2])
    with pytest.raises(TypeError):
        np.fix(2.5)  # not a NumPy ufunc: no scalar path
    # MXNet 1.9.1: "foo is an invalid keyword to function 'exp'" (TypeError), also for add
    with pytest.raises(TypeError, match="invalid keyword"):
        np.exp(x, foo=1)
    with pytest.raises(TypeError, match="invalid keyword"):
        np.add(x, x, name="a")
    with pytest.raises(NotImplementedError):
        np.exp(2.0, where=False)
    assert np.exp(x, where=True, casting="same_kind", order="K", dtype=None,
                  subok=True).shape == (1, 2)


@pytest.mark.parametrize("name", ["equal", "less", "logical_and", "true_divide"])
def test_hand_written_binary_ufuncs_check_keywords_inline(name):
    fn, x = getattr(np, name), np.array([1.0, 2.0])
    assert not hasattr(fn, "__wrapped__")
    with pytest.raises(TypeError, match="invalid keyword"):
        fn(x, x, foo=1)
    with pytest.raises(NotImplementedError):
        fn(x, x, where=False)
    assert fn(x, x, where=True, casting="same_kind").shape == (2,)


def test_one_function_ufunc_records():
    x = np.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = np.multiply(np.exp(x), 2)
    y.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), 2 * onp.exp([1.0, 2.0]), rtol=1e-6)


# ----------------------------------------------------------------------------- arctan2

_INF = onp.inf


@pytest.mark.parametrize("y, x", [
    ([1, -1, 1], [1, 1, -1]),
    ([0.0, -0.0], [-0.0, -0.0]), ([0.0, -0.0], [0.0, 0.0]), ([0.0, -0.0], [-1, -1]),
    ([0.0, -0.0], [1, 1]), ([-1, -1], [0.0, -0.0]), ([1, 1], [0.0, -0.0]),
    ([1, -1, 1, -1], [-_INF, -_INF, _INF, _INF]), ([_INF, -_INF], [1, 1]),
    ([_INF, -_INF], [-_INF, -_INF]), ([_INF, -_INF], [_INF, _INF]),
    ([onp.nan, 1.0], [1.0, onp.nan]),
])
def test_arctan2_special_values_as_numpy(y, x):
    want = onp.arctan2(onp.array(y, "float32"), onp.array(x, "float32"))
    got = np.arctan2(np.array(y), np.array(x)).asnumpy()
    onp.testing.assert_allclose(got, want, rtol=1e-6)
    assert (onp.signbit(got) == onp.signbit(want)).all()


def test_arctan2_dtypes():
    r = np.arctan2(np.array([[1, 2]], dtype="int32"), 2.5)
    assert r.dtype == onp.float32
    onp.testing.assert_allclose(r.asnumpy(), onp.arctan2([[1, 2]], 2.5), rtol=1e-6)
    r = np.arctan2(np.array([0.5, -1.0]), np.array([1.0, -0.0], dtype="float64"))
    assert r.dtype == onp.float64
    onp.testing.assert_allclose(r.asnumpy(), onp.arctan2([0.5, -1.0], [1.0, -0.0]))
    r = np.arctan2(np.array([1, -1], dtype="int32"), np.array([0, 0], dtype="int32"))
    onp.testing.assert_allclose(r.asnumpy(), [onp.pi / 2, -onp.pi / 2], rtol=1e-6)


def test_arctan2_gradient_is_mxnets():
    y, x = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    y.attach_grad()
    x.attach_grad()
    with mx.autograd.record():
        r = np.arctan2(y, x)
    r.backward()
    # MXNet 1.9.1: y.grad [0.4, -0.2], x.grad [-0.8, -0.4]
    onp.testing.assert_allclose(y.grad.asnumpy(), [0.4, -0.2], rtol=1e-5)
    onp.testing.assert_allclose(x.grad.asnumpy(), [-0.8, -0.4], rtol=1e-5)


# ----------------------------------------------------------------------------- einsum


@pytest.mark.parametrize("sub, shapes", [
    ("...j->...", [(5, 5)]), ("...j, j", [(5, 5), (5,)]), ("..., ...", [(), (2, 3)]),
    ("ki, ...k->i...", [(3, 2), (4, 3)]), ("k..., jk", [(3, 2), (4, 3)]),
    ("...ij, ...jk -> ...ik", [(1, 4), (4, 2)]),
    ("...ij, ...jk -> ...ik", [(3, 2, 1, 4), (3, 2, 4, 2)]),
    ("...ij, ...jk -> ...ik", [(2, 1, 5, 4), (3, 4, 2)]),  # broadcast ellipsis axes
    ("...ii->...i", [(3, 4, 4)]), ("i...->...", [(3, 2, 4)]), ("ij...,jk...", [(2, 3), (3, 4)]),
    ("ij, ij -> i", [(1, 4), (2, 4)]),  # a size-1 axis broadcasts
    ("ijk,kl,jl,i->i", [(1, 5, 4), (4, 6), (5, 6), (10,)]),
])
def test_einsum_ellipsis_and_broadcasting_as_numpy(sub, shapes):
    rng = onp.random.RandomState(0)
    hs = [rng.uniform(-1, 1, s).astype("float32") for s in shapes]
    xs = [np.array(h) for h in hs]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        r = np.einsum(sub, *xs)
    want = onp.einsum(sub, *hs)
    assert r.shape == want.shape
    onp.testing.assert_allclose(r.asnumpy(), want, rtol=1e-4, atol=1e-5)
    r.backward()
    # the gradient of sum(einsum) is einsum of the other operands with ones
    for i, x in enumerate(xs):
        eps = 1e-2
        hp = [h.astype("float64") for h in hs]
        g = onp.zeros_like(hp[i])
        for idx in onp.ndindex(*hp[i].shape):
            hp[i][idx] += eps
            up = onp.einsum(sub, *hp).sum()
            hp[i][idx] -= 2 * eps
            dn = onp.einsum(sub, *hp).sum()
            hp[i][idx] += eps
            g[idx] = (up - dn) / (2 * eps)
        onp.testing.assert_allclose(x.grad.asnumpy(), g, rtol=1e-3, atol=1e-3)


def test_einsum_bad_ellipsis_raises():
    with pytest.raises(ValueError, match="einsum"):
        np.einsum("....i", np.ones((2, 2)))
    with pytest.raises(ValueError, match="einsum"):
        np.einsum("...ij,...jk", np.ones((2, 1, 3)), np.ones((3, 3, 2)))


# ----------------------------------------------------------------------------- insert / delete


@pytest.mark.parametrize("shape, obj, vals, axis", [
    ((10,), 0, [0.0], None), ((10,), [], [], None), ((10,), [0, 1], [1, 2], None),
    ((10,), slice(1, 2), [1, 2], None), ((10,), slice(1, -2, -1), [], None),
    ((3,), [1, 1, 1], [3, 4, 5], None), ((), 0, [0.0], None),
    ((3, 2), 1, [7, 8, 9], 1), ((3, 2), [1], [7, 8, 9], 1), ((3, 2), [1], [[7], [8], [9]], 1),
    ((3, 2), -1, (2, 2), 0), ((3, 2), [0, -1, 1], (3, 1), 1), ((3, 2), slice(0, 3), 1.5, 0),
    ((3, 2), slice(None, None, -1), (3, 1), 1), ((2, 2, 3, 8), [0, 8, 3, -2, 3], 1, 3),
    ((4,), 1, [1.5, 2.5], None),
    # zero sizes
    ((3, 0), 0, 5.0, 1), ((0, 2), 0, 5.0, 0), ((0, 2), 0, 5.0, 1), ((3, 0), [0, 0], 5.0, 1),
    ((0, 2), [1], (0, 1), 1), ((3, 2), slice(0, 0), (3, 1), 1),
])
def test_insert_as_numpy(shape, obj, vals, axis):
    rng = onp.random.RandomState(1)
    a = rng.uniform(-5, 5, shape).astype("float32")
    v = rng.uniform(-5, 5, vals).astype("float32") if isinstance(vals, tuple) else vals
    want = onp.insert(a, onp.array(obj, dtype="int64") if isinstance(obj, list) else obj, v,
                      axis=axis)
    mobj = np.array(obj, dtype="int64") if isinstance(obj, list) and obj else obj
    got = np.insert(np.array(a), mobj, np.array(v) if isinstance(v, onp.ndarray) else v,
                    axis=axis)
    assert got.shape == want.shape
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)


def test_insert_dtype_gradient_and_errors():
    # MXNet 1.9.1: insert(int32 [0 1 2 3], 1, [2.7]) is int32 [0 2 1 2 3]
    r = np.insert(np.arange(4).astype("int32"), 1, np.array([2.7]))
    assert r.dtype == onp.int32 and r.asnumpy().tolist() == [0, 2, 1, 2, 3]
    x = np.arange(6).reshape(3, 2)
    y = np.ones((3, 1)) * 2
    x.attach_grad()
    y.attach_grad()
    w = np.arange(12).reshape(3, 4)
    with mx.autograd.record():
        r = np.insert(x, np.array([0, 2], dtype="int64"), y, axis=1)
        (r * w).sum().backward()
    assert r.asnumpy().tolist() == [[2, 0, 1, 2], [2, 2, 3, 2], [2, 4, 5, 2]]
    assert x.grad.asnumpy().tolist() == [[1, 2], [5, 6], [9, 10]]
    assert y.grad.asnumpy().tolist() == [[3], [11], [19]]
    with pytest.raises(IndexError, match="insert"):
        np.insert(np.arange(4), 5, 1.0)
    with pytest.raises(IndexError, match="insert"):
        np.insert(np.arange(4), [1, 9], 1.0)
    with pytest.raises(ValueError, match="insert"):
        np.insert(np.zeros((3, 2)), 1, np.zeros((2, 2)), axis=1)


def test_delete_zero_sizes_and_mxnets_ignored_indices():
    # MXNet 1.9.1 skips out-of-range (also negative) entries of an ndarray obj:
    # delete(arange(5), array([-1, 1, 7])) is [0, 2, 3, 4]
    r = np.delete(np.arange(5), np.array([-1, 1, 7], dtype="int64"))
    assert r.asnumpy().tolist() == [0, 2, 3, 4]
    r = np.delete(np.zeros((0,)), np.array([0, 0], dtype="int32"), axis=0)
    assert r.shape == (0,)
    for shape, obj, axis in [((3, 0), slice(0, 2), 0), ((0, 2), 1, 1), ((0, 2), slice(0, 1), 0),
                             ((3, 2), slice(0, 0), 0), ((3, 2), [0, 1, 2], 0)]:
        a = onp.arange(onp.prod(shape), dtype="float32").reshape(shape)
        got = np.delete(np.array(a), obj, axis=axis)
        want = onp.delete(a, obj, axis=axis)
        assert got.shape == want.shape
        onp.testing.assert_array_equal(got.asnumpy(), want)
    with pytest.raises(IndexError, match="delete"):
        np.delete(np.zeros((3, 0)), 0, axis=1)  # an integer obj still raises


# ----------------------------------------------------------------------------- the rest


@pytest.mark.parametrize("sa, sb, axes", [
    ((3, 0), (0, 4), 1), ((3, 0), (0, 4), (1, 0)), ((0, 3), (3, 4), 1), ((2, 3), (3, 0), 1),
    ((3, 4, 0), (0, 4, 3), ([1, 2], [1, 0])), ((2, 0, 3), (3, 2, 0), ([0, 2], [1, 0])),
])
def test_zero_size_tensordot_as_numpy(sa, sb, axes):
    a, b = onp.ones(sa, "float32"), onp.ones(sb, "float32")
    got = np.tensordot(np.array(a), np.array(b), axes)
    want = onp.tensordot(a, b, axes)
    assert got.shape == want.shape
    onp.testing.assert_array_equal(got.asnumpy(), want)


def test_cov_of_one_variable_is_0d():
    h = onp.random.RandomState(2).rand(12)
    x = np.array(h)
    for r, want in [(np.cov(x), onp.cov(h)), (onp.cov(x), onp.cov(h)),
                    (onp.cov(x, rowvar=False, bias=True), onp.cov(h, rowvar=False, bias=True))]:
        assert isinstance(r, np.ndarray) and r.shape == ()
        onp.testing.assert_allclose(r.asnumpy(), want, rtol=1e-5)
    r = onp.cov(x.reshape(3, 4))
    assert r.shape == (3, 3)


@pytest.mark.parametrize("sa, sb", [((1, 1), (1, 1)), ((1, 1), (1,)), ((4, 4), (4,)),
                                    ((2, 3, 6), (2, 3)), ((6, 2, 3), (6,))])
def test_tensorsolve_shape_as_numpy(sa, sb):
    n = int(onp.prod(sb))
    a = (onp.eye(n) * 2 + 0.1).reshape(sa)
    b = onp.arange(1, n + 1, dtype="float64").reshape(sb)
    got = np.linalg.tensorsolve(np.array(a), np.array(b))
    want = onp.linalg.tensorsolve(a, b)
    assert got.shape == want.shape
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5)


@pytest.mark.parametrize("fn", ["shares_memory", "may_share_memory"])
def test_shares_memory_of_slices_as_numpy(fn):
    mx_fn, onp_fn = getattr(np, fn), getattr(onp, fn)
    m, h = np.zeros((4, 3, 5)), onp.zeros((4, 3, 5))
    pairs = [(lambda a: a[0], lambda a: a[1]), (lambda a: a[0, 0, 1:3], lambda a: a[0, 0, 2:4]),
             (lambda a: a[0, 0, 0:2], lambda a: a[0, 0, 2:4]), (lambda a: a, lambda a: a[2]),
             (lambda a: a[1:3], lambda a: a[2]), (lambda a: a[1:2], lambda a: a[2:4])]
    for f, g in pairs:
        assert mx_fn(f(m), g(m)) == onp_fn(f(h), g(h))
        assert onp_fn(f(m), g(m)) == onp_fn(f(h), g(h))  # through __array_function__
    assert not mx_fn(m, np.ones((5, 0)))
    assert not mx_fn(m, m.copy())
    assert mx_fn(m, m)


@pytest.mark.parametrize("lt,rt,ga,gb", [
    # values recorded from MXNet 1.9.1: power(a, b) on [1.5, 0, 2] ** [0.5, 1, 3], cast per dtype
    ("bool", "float32", [False, False, False], [0.0, np.nan, 0.0]),
    ("float32", "bool", [1.0, 1.0, 1.0], [False, False, False]),
    ("int32", "float32", [0, 0, 0], [0.0, np.nan, 5.5451775]),
    ("float32", "int32", [0.0, 1.0, 12.0], [0, 0, 0]),
])
def test_mixed_dtype_power_gradients_as_mxnet(lt, rt, ga, gb):
    a = np.array(onp.array([1.5, 0.0, 2.0]).astype(lt))
    b = np.array(onp.array([0.5, 1.0, 3.0]).astype(rt))
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = np.power(a, b)
    y.backward()
    assert a.grad.dtype == onp.dtype(lt) and b.grad.dtype == onp.dtype(rt)
    onp.testing.assert_allclose(a.grad.asnumpy().astype("float64"), onp.array(ga, dtype="float64"), rtol=1e-6)
    onp.testing.assert_allclose(b.grad.asnumpy().astype("float64"), onp.array(gb, dtype="float64"), rtol=1e-6)


@pytest.mark.parametrize("api", ["nd", "np"])
def test_integer_reductions_record_their_gradient_as_mxnet(api):
    # recorded from MXNet 1.9.1 on [[1, 2], [3, 4]] int32, axis=1
    want = {"sum": [[1, 1], [1, 1]], "max": [[0, 1], [0, 1]], "mean": [[0, 0], [0, 0]]}
    for red, g in want.items():
        x = (mx.nd if api == "nd" else np).array([[1, 2], [3, 4]], dtype="int32")
        x.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd, red)(x, axis=1) if api == "nd" else getattr(x, red)(axis=1)
        y.backward()
        assert x.grad.dtype == onp.int32
        assert x.grad.asnumpy().tolist() == g, red
