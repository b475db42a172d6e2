"""Edge cases found by comparing ferromx with MXNet 1.9.1 side by side.

Expected values are MXNet 1.9.1's (checked in a separate venv), or NumPy's where
MXNet crashes or is wrong.
"""

import ferromx as mx
import numpy as np
import pytest
from ferromx import nd
from ferromx.base import MXNetError
from ndarr_helper import ndarr

# --- impossible sizes raise instead of aborting or wrapping around ---------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: nd.zeros((1 << 40,)),
        lambda: nd.zeros((1 << 62, 4)),  # the element count overflows 64 bits
        lambda: nd.ones((1 << 20, 1 << 20)),
        lambda: nd.full((1 << 40,), 1.0),
        lambda: nd.eye(1 << 40),
        lambda: nd.arange(0, 1e13),
        lambda: nd.broadcast_to(nd.ones((1, 1)), shape=(1 << 30, 1 << 30)),
        lambda: nd.broadcast_axis(nd.ones((1, 3)), axis=0, size=1 << 62),
        lambda: nd.tile(nd.ones((1,)), reps=(2**32, 2**32)),
        lambda: nd.repeat(nd.ones((2,)), repeats=10**12),
        lambda: nd.one_hot(ndarr([1, 2]), 10**12),
        lambda: nd.random.uniform(shape=(2**40,)),
    ],
)
def test_impossible_allocation_is_an_error(make):
    with pytest.raises(MXNetError, match="cannot allocate"):
        make().wait_to_read()


def test_allocation_error_names_op_shape_and_size():
    with pytest.raises(MXNetError) as e:
        nd.zeros((1 << 40,))
    msg = str(e.value)
    assert (
        msg.startswith("zeros:")
        and "(1099511627776,)" in msg
        and "float32" in msg
        and "4.00 TiB" in msg
    )


@pytest.mark.parametrize("stop", [np.inf, -np.inf, np.nan])
def test_arange_rejects_non_finite(stop):
    with pytest.raises(ValueError, match="arange: .*finite"):
        nd.arange(0, stop)


def test_arange_computes_in_float32_like_mxnet():
    assert nd.arange(0, 1, 0.1).asnumpy()[-1] == np.float32(0.90000004)
    assert nd.arange(0, 1, 0.1, dtype="float64").asnumpy()[-1] == 0.9


# --- integer conversions wrap like a C cast (MXNet, NumPy on x86) ----------------------


def test_int_scalar_ops_wrap():
    u = ndarr([1, 5, 250], dtype="uint8")
    assert (u + (-1)).asnumpy().tolist() == [0, 4, 249]
    assert (u + 300).asnumpy().tolist() == [45, 49, 38]
    assert (u * -1).asnumpy().tolist() == [255, 251, 6]
    assert (ndarr([1, 5, 120], dtype="int8") + 200).asnumpy().tolist() == [-55, -51, 64]
    assert nd.full((2,), -1, dtype="uint8").asnumpy().tolist() == [255, 255]
    assert (ndarr([0], dtype="uint8") == -2).asnumpy().tolist() == [0]


def test_float_to_int_cast_wraps():
    x = ndarr([-1.7, -2.5, 300, -300])
    assert x.astype("uint8").asnumpy().tolist() == [255, 254, 44, 212]
    assert x.astype("int8").asnumpy().tolist() == [-1, -2, 44, -44]
    assert ndarr([np.nan, np.inf]).astype("int32").asnumpy().tolist() == [-(2**31), -(2**31)]
    assert ndarr([np.nan, -np.inf]).astype("int64").asnumpy().tolist() == [-(2**63), -(2**63)]


# --- arithmetic edge cases ----------------------------------------------------------------


def test_float_mod_by_zero_is_zero_and_never_negative_zero():
    assert (ndarr([-7.5, 1.0]) % 0).asnumpy().tolist() == [0.0, 0.0]
    r = (ndarr([-2.0, 4.0]) % 2).asnumpy()
    assert r.tolist() == [0.0, 0.0] and not np.signbit(r).any()
    assert (ndarr([-2.0]) % ndarr([2.0])).asnumpy().tolist() == [0.0]
    np.testing.assert_array_equal(
        (ndarr([-7.5, 7.5]) % 2).asnumpy(), np.mod([-7.5, 7.5], 2).astype(np.float32)
    )


def test_int_power_with_negative_exponent():
    a = ndarr([1, -1, -1, 2], dtype="int32")
    b = ndarr([-4, -3, -2, -1], dtype="int32")
    assert (a**b).asnumpy().tolist() == [1, -1, 1, 0]
    assert (ndarr([7, 3, 2, 0, 1], dtype="uint8") ** -2).asnumpy().tolist() == [0, 0, 0, 0, 1]
    assert (ndarr([3], dtype="int64") ** 39).asnumpy().tolist() == [
        3**39
    ]  # exact, not via float


def test_sign_of_zero_and_nan():
    r = nd.sign(ndarr([np.nan, -0.0, 2.0, -3.0])).asnumpy()
    assert np.isnan(r[0]) and r[1] == 0 and not np.signbit(r[1]) and r[2:].tolist() == [1.0, -1.0]


def test_norm_does_not_overflow_float32():
    np.testing.assert_allclose(
        nd.norm(ndarr([1e30, 1e30])).asnumpy(), np.float32(1.4142135e30), rtol=1e-6
    )
    assert nd.norm(ndarr([1e30, 1e30])).dtype == np.float32


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float16", "float64", "float32"])
def test_argmax_returns_input_dtype(dtype):
    x = ndarr([[1, 3], [4, 2]], dtype=dtype)
    r = nd.argmax(x, axis=1)
    assert r.dtype == np.dtype(dtype) and r.asnumpy().tolist() == [1, 0]
    assert nd.argmin(x, axis=0).asnumpy().tolist() == [0, 1]


# --- linear algebra and shape ops with MXNet's extra arguments --------------------------


def test_batch_dot_with_several_batch_axes():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(
        nd.batch_dot(ndarr(a), ndarr(b)).asnumpy(), a @ b, rtol=1e-5, atol=1e-5
    )
    bt = np.swapaxes(b, -1, -2).copy()
    r = nd.batch_dot(ndarr(a), ndarr(bt), transpose_b=True)
    np.testing.assert_allclose(r.asnumpy(), a @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="batch_dot"):
        nd.batch_dot(nd.ones((2, 3, 4, 5)), nd.ones((3, 2, 5, 6)))


def test_gemm2_axis():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 2, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2, 5)).astype(np.float32)
    r = nd.linalg.gemm2(ndarr(a), ndarr(b), axis=0, alpha=2.0)
    want = 2.0 * np.einsum("rbk,kbc->rbc", a, b)
    np.testing.assert_allclose(r.asnumpy(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):  # rows 2 vs contracted 4 after moving axis 0
        nd.linalg.gemm2(nd.ones((2, 3, 4)), nd.ones((2, 4, 5)), axis=0)
    with pytest.raises(ValueError, match="out of bounds"):
        nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((3, 2)), axis=100)


def test_broadcast_like_with_axes():
    r = nd.broadcast_like(nd.ones((1, 1)), nd.zeros((2, 3)), lhs_axes=(0,), rhs_axes=(1,))
    assert r.shape == (3, 1)
    assert nd.broadcast_like(
        nd.ones((1, 1)), nd.zeros((2, 3)), lhs_axes=(0, 1), rhs_axes=(1, 0)
    ).shape == (3, 2)
    with pytest.raises(ValueError, match="broadcast_like"):
        nd.broadcast_like(nd.ones((1, 1)), nd.zeros((2, 3)), lhs_axes=(5,), rhs_axes=(0,))
    with pytest.raises(ValueError, match="broadcast_like"):
        nd.broadcast_like(nd.ones((2, 2)), nd.zeros((3, 3)))


def test_reshape_like_with_ranges():
    x = ndarr(np.arange(120).reshape(2, 3, 4, 5))
    r = nd.reshape_like(x, nd.zeros((6, 20)), lhs_begin=2, rhs_begin=1)
    assert r.shape == (2, 3, 20)
    np.testing.assert_array_equal(r.asnumpy().reshape(-1), np.arange(120))
    assert nd.reshape_like(x, nd.zeros((3, 2)), lhs_begin=0, lhs_end=2).shape == (3, 2, 4, 5)
    assert nd.reshape_like(x, nd.zeros((120,))).shape == (120,)
    with pytest.raises(ValueError, match="reshape_like"):
        nd.reshape_like(x, nd.zeros((7,)), lhs_begin=0, lhs_end=1)


# --- __setitem__ broadcasting ------------------------------------------------------------


def test_setitem_broadcasts_value_against_integer_indexed_result():
    x = nd.zeros((2, 3, 4))
    x[:, :, 1] = ndarr([1, 2, 3])
    want = np.zeros((2, 3, 4), np.float32)
    want[:, :, 1] = [1, 2, 3]
    np.testing.assert_array_equal(x.asnumpy(), want)
    y = nd.zeros((2, 3, 4, 5))
    y[:, 0, :, 1] = nd.ones((4,))
    w = np.zeros((2, 3, 4, 5), np.float32)
    w[:, 0, :, 1] = 1
    np.testing.assert_array_equal(y.asnumpy(), w)
    with pytest.raises(ValueError, match="broadcast"):
        x[:, :, 1] = nd.ones((4,))


def test_setitem_into_empty_region_is_a_no_op():
    x = nd.ones((2, 3))
    x[0, 2:0] = nd.zeros((0,))
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 3)))


# --- random: bad parameters are errors, never hangs or garbage ----------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: nd.random.gamma(np.nan, 1, shape=(3,)).asnumpy(),
        lambda: nd.random.gamma(np.inf, 1, shape=(3,)).asnumpy(),
        lambda: nd.random.gamma(1, -1, shape=(3,)).asnumpy(),
        lambda: nd.random.exponential(-1, shape=(3,)),
        lambda: nd.random.poisson(np.nan, shape=(3,)).asnumpy(),
        lambda: nd.random.uniform(0, np.inf, shape=(3,)).asnumpy(),
        lambda: nd.random.normal(0, np.nan, shape=(3,)).asnumpy(),
        lambda: nd.random.randint(0, 2**40, shape=(3,)),
    ],
)
def test_random_rejects_bad_parameters(call):
    # Parameter values are checked by the kernel (as in MXNet): the error is raised at
    # the read; dtypes, randint's range and exponential's scale at the call.
    with pytest.raises(ValueError, match="random_"):
        call()


@pytest.mark.parametrize("dtype", ["int32", "int8", "bool"])
def test_float_distributions_reject_int_dtypes(dtype):
    with pytest.raises(TypeError, match="random_uniform"):
        nd.random.uniform(shape=(3,), dtype=dtype)


def test_multinomial_with_no_categories_is_an_error():
    with pytest.raises(ValueError, match="no categories"):
        nd.random.multinomial(nd.zeros((2, 0)))
    with pytest.raises(ValueError, match="no categories"):
        nd.random.multinomial(ndarr(np.zeros((0,), np.float32)), shape=(3,))


def test_empty_axis_tuple_reduces_all_in_nd_and_nothing_in_np():
    x = ndarr([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for f, ref in [(nd.sum, 21.0), (nd.mean, 3.5), (nd.prod, 720.0), (nd.max, 6.0), (nd.min, 1.0)]:
        assert f(x, axis=()).asnumpy().item() == ref
    np.testing.assert_array_equal(mx.np.sum(x, axis=()).asnumpy(), x.asnumpy())


def test_bool_reductions():
    b = ndarr(np.array([True, False, False]))
    m = nd.mean(b)
    assert m.dtype == np.float32 and abs(m.asnumpy().item() - 1 / 3) < 1e-6
    assert nd.sum(b).dtype == np.int64 and nd.sum(b).asnumpy().item() == 1
    assert nd.max(b).dtype == np.bool_ and nd.max(b).asnumpy().item() is True
    assert nd.min(b).asnumpy().item() is False


@pytest.mark.parametrize(
    "key",
    [(0, slice(None), [0, 1, 2]), ([1, 0], slice(None), 2), (slice(None), 1, slice(None), [0, 3])],
)
def test_separated_advanced_indices_put_their_dims_first(key):
    xn = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)[..., :4]
    xn = np.ascontiguousarray(xn) if len(key) == 4 else xn[..., 0]
    x = ndarr(xn)
    np.testing.assert_array_equal(x[key].asnumpy(), xn[key])
    y, yn = ndarr(xn), xn.copy()
    v = np.arange(xn[key].size, dtype=np.float32).reshape(xn[key].shape)
    y[key] = ndarr(v)
    yn[key] = v
    np.testing.assert_array_equal(y.asnumpy(), yn)


def test_clip_int_bounds_beyond_the_dtype_range():
    assert nd.clip(ndarr([1, 5, 9], dtype="uint8"), -1, 300).asnumpy().tolist() == [1, 5, 9]
    assert nd.clip(ndarr([1, 5, 9], dtype="int32"), -(2**40), 2**40).asnumpy().tolist() == [
        1,
        5,
        9,
    ]
    assert nd.clip(ndarr([1, 5, 9], dtype="uint8"), 2, 6).asnumpy().tolist() == [2, 5, 6]


def test_negative_binomial_moments():
    mx.random.seed(3)
    s = nd.random.negative_binomial(k=3, p=0.4, shape=(20000,)).asnumpy()
    assert s.dtype == np.float32 and s.min() >= 0 and np.all(s == np.round(s))
    assert abs(s.mean() - 3 * 0.6 / 0.4) < 0.15  # mean k(1-p)/p = 4.5
    g = nd.random.generalized_negative_binomial(mu=2.0, alpha=0.5, shape=(20000,)).asnumpy()
    assert abs(g.mean() - 2.0) < 0.1 and abs(g.var() - (2.0 + 0.5 * 4.0)) < 0.4  # mu + alpha mu^2
    with pytest.raises(ValueError, match="negative_binomial"):
        nd.random.negative_binomial(k=3, p=1.5, shape=(2,)).asnumpy()
    assert nd.random.uniform_like(nd.zeros((2, 3), dtype="float64")).dtype == np.float64


def test_per_element_parameters_sample_on_the_engine():
    from ferromx import _native

    alpha = ndarr([1.0, 50.0])
    alpha.wait_to_read()
    _native._sleep_op(alpha, 300)  # a slow op holds a write on the parameters
    import time

    t0 = time.perf_counter()
    g = nd.random.gamma(alpha, ndarr([2.0, 0.5]), shape=(4000,))
    p = nd.random.poisson(ndarr([3.0, 30.0]), shape=(4000,))
    assert time.perf_counter() - t0 < 0.15  # no host read of the parameters
    assert g.shape == (2, 4000) and p.shape == (2, 4000)
    gm, pm = g.asnumpy().mean(axis=1), p.asnumpy().mean(axis=1)
    np.testing.assert_allclose(gm, [2.0, 25.0], rtol=0.08)
    np.testing.assert_allclose(pm, [3.0, 30.0], rtol=0.05)
    bad = nd.random.gamma(ndarr([1.0, -1.0]), ndarr([1.0, 1.0]), shape=(2,))
    with pytest.raises(ValueError, match="alpha and beta must be positive"):
        bad.asnumpy()
