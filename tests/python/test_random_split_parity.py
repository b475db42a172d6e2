"""Parity with MXNet 1.9.1 for NDArray distribution parameters, multinomial log-probabilities,
random ``out=``, split/split_v2 argument checks, legacy operator aliases, seeding and a few
indexing corner cases. Expected shapes, dtypes and errors were taken from MXNet 1.9.1."""

import ferromx as mx
import numpy as np
import pytest
from ferromx import nd

# --- 1. NDArray distribution parameters: one distribution per element -------------------------


def test_uniform_ndarray_params_give_param_shape_plus_shape():
    mx.random.seed(7)
    s = nd.random.uniform(nd.array([0, 10]), nd.array([1, 20]), shape=(1000,))
    assert s.shape == (2, 1000) and s.dtype == np.float32
    a = s.asnumpy()
    assert a[0].min() >= 0 and a[0].max() < 1
    assert a[1].min() >= 10 and a[1].max() < 20
    assert abs(a[0].mean() - 0.5) < 0.1 and abs(a[1].mean() - 15) < 1
    # size-1 parameters follow the same rule: (1,) + shape
    assert nd.random.uniform(nd.array([0.0]), nd.array([1.0]), shape=(2,)).shape == (1, 2)
    assert nd.random.uniform(nd.array([0.0]), nd.array([1.0])).shape == (1,)
    assert nd.random.uniform(nd.ones((2, 3)), nd.ones((2, 3)) * 2, shape=(4, 5)).shape == (
        2,
        3,
        4,
        5,
    )


def test_ndarray_param_dtypes_match_mxnet():
    lo64, hi64 = nd.array([0.0, 1], dtype="float64"), nd.array([1.0, 2], dtype="float64")
    assert nd.random.uniform(lo64, hi64, shape=3).dtype == np.float32  # params don't set it
    lo, hi = nd.array([0.0, 1]), nd.array([1.0, 2])
    assert nd.random.uniform(lo, hi, shape=3, dtype="float64").dtype == np.float64
    assert nd.random.uniform(lo, hi, shape=3, dtype="float16").dtype == np.float16
    assert nd.random.poisson(nd.array([1.0, 9], dtype="float64"), shape=3).dtype == np.float32
    g = nd.random.gamma(nd.array([1.0, 9]), nd.array([1.0, 2]), shape=(2, 3), dtype="float64")
    assert g.shape == (2, 2, 3) and g.dtype == np.float64


def test_normal_and_randn_ndarray_params():
    mx.random.seed(11)
    a = nd.random.normal(nd.array([0.0, 10]), nd.array([1.0, 2]), shape=(2000,)).asnumpy()
    assert a.shape == (2, 2000)
    np.testing.assert_allclose(a.mean(axis=1), [0, 10], atol=0.3)
    np.testing.assert_allclose(a.std(axis=1), [1, 2], rtol=0.15)
    assert nd.random.normal(nd.array([0.0, 1]), nd.array([1.0, 2]), (3, 2)).shape == (2, 3, 2)
    r = nd.random.randn(2, 3, loc=nd.array([0.0, 1]), scale=nd.array([1.0, 2]))
    assert r.shape == (2, 2, 3)
    assert nd.random.randn(loc=nd.array([0.0, 1]), scale=nd.array([1.0, 2])).shape == (2,)


def test_exponential_ndarray_scale_is_the_mean():
    mx.random.seed(3)
    e = nd.random.exponential(nd.array([1.0, 100]), shape=(4000,))
    assert e.shape == (2, 4000) and e.dtype == np.float32
    np.testing.assert_allclose(e.asnumpy().mean(axis=1), [1, 100], rtol=0.15)
    z = nd.random.exponential(nd.array([0.0, 1]), shape=3).asnumpy()
    np.testing.assert_array_equal(z[0], 0)  # rate 1/0 = inf: all zeros, as in MXNet
    assert (z[1] > 0).all()


def test_gamma_and_poisson_ndarray_params():
    mx.random.seed(5)
    g = nd.random.gamma(nd.array([1.0, 9, 1]), nd.array([1.0, 2, 3]), shape=(3000,))
    assert g.shape == (3, 3000) and g.dtype == np.float32
    np.testing.assert_allclose(g.asnumpy().mean(axis=1), [1, 18, 3], rtol=0.15)
    g2 = nd.random.gamma(nd.array([[1.0, 9], [1, 2]]), nd.array([[1.0, 2], [3, 4]]))
    assert g2.shape == (2, 2)
    p = nd.random.poisson(nd.array([1.0, 9, 1, 30]), shape=(3000,))
    assert p.shape == (4, 3000) and p.dtype == np.float32
    a = p.asnumpy()
    np.testing.assert_array_equal(a, np.round(a))
    np.testing.assert_allclose(a.mean(axis=1), [1, 9, 1, 30], rtol=0.15)
    assert nd.random.poisson(nd.array([[1.0, 9]])).shape == (1, 2)


def test_mixed_or_mismatched_params_are_errors():
    # MXNet: AssertionError "Distribution parameters must all have the same type"
    with pytest.raises(TypeError, match="random.uniform") as ei:
        nd.random.uniform(nd.array([0.0, 1]), 2)
    assert isinstance(ei.value, AssertionError)
    with pytest.raises(TypeError, match="random.randn"):
        nd.random.randn(2, 3, loc=nd.array([0.0, 1]), scale=2)
    with pytest.raises(TypeError, match="random.gamma"):
        nd.random.gamma(nd.array([1.0, 9]), 2, shape=(3,))
    with pytest.raises(ValueError, match=r"random.uniform.*\(1, 2\).*\(2,\)"):
        nd.random.uniform(nd.array([[0.0, 1]]), nd.array([1.0, 2]))


# --- 2. multinomial(get_prob=True) ------------------------------------------------------------


@pytest.mark.parametrize(
    "data_shape, shape, expected",
    [
        ((2, 3), None, (2,)),
        ((2, 3), 4, (2, 4)),
        ((2, 3), (4, 2), (2, 4, 2)),
        ((3,), (4, 2), (4, 2)),
        ((3,), None, (1,)),
        ((1, 2, 3), 4, (1, 2, 4)),
    ],
)
def test_multinomial_get_prob_returns_samples_and_log_probs(data_shape, shape, expected):
    p = nd.softmax(
        nd.array(np.arange(np.prod(data_shape)).reshape(data_shape) * 0.3, dtype="float32")
    )
    res = nd.random.multinomial(p, shape=shape, get_prob=True)
    assert isinstance(res, list) and len(res) == 2
    samples, logp = res
    assert samples.shape == expected and logp.shape == expected
    assert samples.dtype == np.int32 and logp.dtype == np.float32
    pn = p.asnumpy().reshape(-1, data_shape[-1])
    s = samples.asnumpy().reshape(pn.shape[0], -1)
    want = np.log(np.take_along_axis(pn, s.astype(np.int64), axis=1))
    np.testing.assert_allclose(logp.asnumpy().reshape(want.shape), want, rtol=1e-5)


def test_multinomial_get_prob_dtypes_and_unnormalised_data():
    p = nd.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    s, lp = nd.random.multinomial(p, shape=4, get_prob=True, dtype="float32")
    assert s.dtype == np.float32 and lp.dtype == np.float32
    s, lp = nd.random.multinomial(p.astype("float64"), shape=4, get_prob=True)
    assert s.dtype == np.int32 and lp.dtype == np.float64
    # MXNet returns log(data[sample]) as given, without normalising
    w = nd.array([[1.0, 1.0]])
    s, lp = nd.random.multinomial(w, shape=5, get_prob=True)
    np.testing.assert_allclose(lp.asnumpy(), 0.0)
    assert nd.random.multinomial(p[0]).shape == (1,)


# --- 3. out= -----------------------------------------------------------------------------------


def test_random_out_shape_mismatch_raises():
    out = nd.zeros((3,))
    with pytest.raises(ValueError, match=r"random.normal.*\(3,\).*\(2,\)"):
        nd.random.normal(shape=(2,), out=out)
    np.testing.assert_array_equal(out.asnumpy(), 0)
    with pytest.raises(ValueError, match=r"random.uniform.*\(2,\).*\(2, 1\)"):
        nd.random.uniform(nd.array([0.0, 1]), nd.array([1.0, 2]), shape=(1,), out=nd.zeros((2,)))
    with pytest.raises(ValueError, match="random.normal"):
        nd.random.randn(3, out=nd.zeros((2,)))


def test_random_out_fills_matching_shape_and_dtype():
    out = nd.zeros((3,), dtype="float64")
    r = nd.random.normal(out=out)
    assert r is out and out.dtype == np.float64
    assert nd.random.normal(shape=(3,), out=nd.zeros((3,))).shape == (3,)
    o2 = nd.zeros((2, 3, 2))
    assert nd.random.uniform(nd.array([0.0, 1]), nd.array([1.0, 2]), shape=(3, 2), out=o2) is o2
    assert (o2.asnumpy()[1] >= 1).all()
    o3 = nd.zeros((2,))
    nd.random.uniform(nd.array([0.0, 1]), nd.array([1.0, 2]), out=o3)
    assert (o3.asnumpy() > 0).any()
    with pytest.raises(TypeError, match="random.normal"):
        nd.random.normal(dtype="float16", out=nd.zeros((3,), dtype="float64"))


# --- 4. split / split_v2 / exponential argument errors -----------------------------------------


def _x():
    return nd.arange(24).reshape((2, 3, 4))


def test_split_squeeze_axis_needs_axis_length_equal_to_num_outputs():
    for n, ax in [(1, 0), (2, 2), (1, 1)]:
        with pytest.raises(ValueError, match=r"split.*squeeze_axis.*\(2, 3, 4\)"):
            nd.split(_x(), n, axis=ax, squeeze_axis=True)
    parts = nd.split(_x(), 3, axis=1, squeeze_axis=True)
    assert [p.shape for p in parts] == [(2, 4)] * 3


def test_split_v2_bad_sections_and_axes_raise_clear_errors():
    x = _x()
    with pytest.raises(ValueError, match=r"split_v2.*-1.*\(2, 3, 4\)"):
        nd.split_v2(x, -1, axis=1)
    with pytest.raises(ValueError, match=r"split_v2.*\(2, 3, 4\)"):
        nd.split_v2(x, 0)
    with pytest.raises(IndexError, match=r"split_v2.*axis 5.*\(2, 3, 4\)"):
        nd.split_v2(x, 2, axis=5)
    with pytest.raises(TypeError, match=r"split_v2.*2\.5"):
        nd.split_v2(x, 2.5)
    with pytest.raises(ValueError, match=r"split_v2"):  # MXNet raises ValueError here
        nd.split_v2(x, 2.5)
    with pytest.raises(ValueError, match=r"split_v2.*increasing"):
        nd.split_v2(x, (2, 1), axis=2)
    with pytest.raises(ValueError, match=r"split_v2.*increasing"):
        nd.split_v2(x, (2, 5), axis=2)
    with pytest.raises(ValueError, match=r"split_v2.*equal division"):
        nd.split_v2(x, 3, axis=2)


def test_split_v2_squeeze_axis_requires_size_one_pieces():
    x = _x()
    with pytest.raises(ValueError, match=r"split_v2.*squeeze_axis.*size 2"):
        nd.split_v2(x, (1,), axis=1, squeeze_axis=True)
    with pytest.raises(ValueError, match=r"split_v2.*squeeze_axis"):
        nd.split_v2(x, 1, squeeze_axis=True)
    parts = nd.split_v2(x, 3, axis=1, squeeze_axis=True)
    assert [p.shape for p in parts] == [(2, 4)] * 3


def test_split_v2_single_piece_is_a_bare_ndarray():
    x = _x()
    for spec in (1, ()):
        r = nd.split_v2(x, spec)
        assert isinstance(r, nd.NDArray) and r.shape == (2, 3, 4)
        np.testing.assert_array_equal(r.asnumpy(), x.asnumpy())
    shapes = [p.shape for p in nd.split_v2(x, (1, 1), axis=2)]
    assert shapes == [(2, 3, 1), (2, 3, 0), (2, 3, 3)]
    assert [p.shape for p in nd.split_v2(x, (1, 3), axis=-1)] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]


def test_exponential_zero_scale_is_a_value_error_naming_the_op():
    with pytest.raises(ValueError, match="exponential.*scale") as ei:
        nd.random.exponential(0)
    assert isinstance(ei.value, ZeroDivisionError)  # what MXNet raises
    with pytest.raises(ValueError, match="exponential"):
        nd.random.exponential(0, shape=3)
    mx.random.seed(1)
    assert abs(nd.random.exponential(100, shape=4000).asnumpy().mean() - 100) < 15


# --- 5. fluent methods, concat(num_args=), legacy aliases --------------------------------------


def test_fluent_slice_slice_like_split_v2():
    x = _x()
    assert x.slice((0, 1), (1, 3)).shape == (1, 2, 4)
    np.testing.assert_array_equal(
        x.slice(begin=(0, 1), end=(1, 3)).asnumpy(), x.asnumpy()[0:1, 1:3]
    )
    assert x.slice_like(nd.zeros((1, 2, 3))).shape == (1, 2, 3)
    assert x.slice_like(nd.zeros((1, 2, 3)), axes=(1,)).shape == (2, 2, 4)
    assert [p.shape for p in x.split_v2(2, axis=0)] == [(1, 3, 4)] * 2


def test_concat_accepts_and_checks_num_args():
    x = _x()
    assert nd.concat(x, x, num_args=2, dim=1).shape == (2, 6, 4)
    with pytest.raises(ValueError, match="concat.*num_args"):
        nd.concat(x, x, num_args=3, dim=1)


def test_legacy_operator_aliases():
    x = _x()
    assert nd.Reshape(x, shape=(4, 6)).shape == (4, 6)
    assert nd.Reshape(x, (4, 6)).shape == (4, 6)
    assert nd.Flatten(x).shape == (2, 12)
    assert nd.Concat(x, x, num_args=2, dim=1).shape == (2, 6, 4)
    assert [p.shape for p in nd.SliceChannel(x, 2, axis=0)] == [(1, 3, 4)] * 2
    assert [p.shape for p in nd.SliceChannel(x, num_outputs=3)] == [(2, 1, 4)] * 3
    assert nd.SwapAxis(x, 0, 2).shape == (4, 3, 2)
    assert nd.SwapAxis(x, dim1=0, dim2=2).shape == (4, 3, 2)
    padded = nd.Pad(x.reshape((1, 2, 3, 4)), mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 1, 1))
    assert padded.shape == (1, 2, 5, 6)
    assert nd.crop(x, (0, 1), (1, 3)).shape == (1, 2, 4)
    assert nd.crop(x, begin=(0, 1), end=(1, 3)).shape == (1, 2, 4)
    assert nd.Cast(x, "int32").dtype == np.int32


# --- 6. seeding and indexing -------------------------------------------------------------------


def _draw(seed):
    mx.random.seed(seed)
    return nd.random.uniform(shape=3).asnumpy()


def test_seed_uses_the_low_32_bits_like_mxnet():
    np.testing.assert_array_equal(_draw(-1), _draw(2**32 - 1))
    np.testing.assert_array_equal(_draw(2**70), _draw(0))
    np.testing.assert_array_equal(_draw(2**32), _draw(0))
    np.testing.assert_array_equal(_draw(-(2**31)), _draw(2**31))
    np.testing.assert_array_equal(_draw(np.int64(3)), _draw(3))
    assert not np.array_equal(_draw(1), _draw(2))


@pytest.mark.parametrize("bad", [1.5, "3", None, np.float32(2)])
def test_seed_rejects_non_integers(bad):
    with pytest.raises(ValueError, match="seed"):
        mx.random.seed(bad)


def test_huge_integer_indices_raise_index_error():
    x = nd.arange(12).reshape((3, 4))
    for key in (2**70, -(2**70), [2**70], [0, 2**70], (1, 2**70), ((2**70,),)):
        with pytest.raises(IndexError):
            x[key]


def test_nested_tuple_index_is_a_sequence_index():
    x = nd.arange(12).reshape((3, 4))
    a = x.asnumpy()
    np.testing.assert_array_equal(x[((0, 1),)].asnumpy(), a[[0, 1]])
    np.testing.assert_array_equal(x[(0, 1),].asnumpy(), a[[0, 1]])
    np.testing.assert_array_equal(x[((0, 1), (1, 2))].asnumpy(), a[[0, 1], [1, 2]])
    np.testing.assert_array_equal(x[((0, 1), 1)].asnumpy(), a[[0, 1], 1])
