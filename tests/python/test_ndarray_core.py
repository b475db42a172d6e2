"""NDArray core behaviour: indexing, views, copies, conversion, printing, pickling, save/load."""

import pickle

import ferromx as mx
import numpy as np
import pytest
from ndarr_helper import ndarr
from numpy.testing import assert_allclose, assert_array_equal

nd = mx.nd


def base_np(shape=(4, 5, 6), dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def same(res, expected):
    got = res.asnumpy() if isinstance(res, nd.NDArray) else np.asarray(res)
    expected = np.asarray(expected)
    if expected.shape == () and got.shape == (1,) and isinstance(res, nd.NDArray):
        expected = expected.reshape(1)  # legacy nd: x[1, 2] and full reductions are (1,)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert_array_equal(got, expected)


# ----------------------------------------------------------------------------- __getitem__

BASIC_KEYS = [
    1, -1, -4, 3,
    slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(3, 0, -2), slice(-2, None),
    slice(10, 20), slice(None, -10),
    (1, 2), (-1, -2, -3), (1, slice(None), 2), (slice(None), 1), (slice(1, 3), slice(None, None, -2)),
    (Ellipsis, 1), (Ellipsis,), (1, Ellipsis, -1), (Ellipsis, slice(None, None, 3)),
    None, (None, 1), (slice(None), None, 2), (1, None, Ellipsis, None),
    (slice(None, None, -1), slice(None, None, -1), slice(None, None, -1)),
    (slice(1, 4), slice(4, 1, -1), 2),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=repr)
def test_basic_indexing(key):
    x = base_np()
    same(ndarr(x)[key], x[key])


@pytest.mark.parametrize("key", [
    [0, 2], [-1, 0, 0], np.array([3, 1]), np.array([[0, 1], [2, 3]]),
    ([0, 2], [1, 4]), (slice(None), [0, 3]), (1, [2, 0, 4]), (Ellipsis, [0, 5]),
    ([0, 1], slice(1, 3), [2, 5]),
], ids=repr)
def test_integer_array_indexing(key):
    x = base_np()
    same(ndarr(x)[key], x[key])


def test_ndarray_index_and_boolean_masks():
    x = base_np()
    a = ndarr(x)
    same(a[ndarr([2, 0])], x[[2, 0]])
    same(a[ndarr(np.array([3, -1], dtype=np.int64))], x[[3, -1]])
    mask = np.array([True, False, True, True])
    same(a[mask], x[mask])
    same(a[ndarr(mask)], x[mask])
    m2 = x[..., 0] % 4 == 0
    same(a[m2], x[m2])
    full = x % 7 == 0
    same(a[full], x[full])
    same(a[x[:, 0, 0] > 1000], x[x[:, 0, 0] > 1000])  # empty selection


def test_index_scalar_arrays_bools_and_float_ndarrays():
    x = base_np((3, 4))
    a = ndarr(x)
    same(a[np.array(1)], x[np.array(1)])  # a 0-d integer array indexes like an int
    same(a[np.int64(-1)], x[-1])
    same(a[1, np.array(2)], x[1, 2])
    same(a[True], x[True])
    same(a[()], x[()])
    same(a[[True, False, True]], x[[True, False, True]])
    # NDArray indices in any position; float ones (MXNet's default dtype) act as ints
    same(a[ndarr([2.0, 0.0])], x[[2, 0]])
    same(a[:, ndarr([0, 3])], x[:, [0, 3]])
    same(a[ndarr([0, 2]), ndarr([1, 1])], x[[0, 2], [1, 1]])
    same(a[ndarr(2.0)], x[2])  # a 0-d NDArray
    with pytest.raises(TypeError):
        a[1.0]
    b = ndarr(x)
    b[:, ndarr([0, 3])] = -1
    x2 = x.copy()
    x2[:, [0, 3]] = -1
    same(b, x2)


def test_indexing_1d_and_dtypes():
    for dt in ["int32", "int64", "uint8", "float64", "bool", "float16"]:
        x = (np.arange(10) % 3).astype(dt)
        a = ndarr(x)
        same(a[3], x[3])
        same(a[2:8:3], x[2:8:3])
        same(a[::-1], x[::-1])
        same(a[[1, 5]], x[[1, 5]])
        assert a[2:4].dtype == np.dtype(dt)


# ----------------------------------------------------------------------------- __setitem__


def _setitem_cases():
    row = np.arange(6, dtype=np.float32) * 10
    return [
        (1, 7.0), (-1, -3), (slice(1, 3), 2.5), (slice(None), 0.0), (slice(None, None, 2), 9),
        ((1, 2), 5.0), ((1, 2, 3), 4.0), ((slice(None), 0), 1.0), ((Ellipsis, 0), 8.0),
        ((0, slice(None), slice(1, 4)), 6.0),
        (2, row),  # broadcast a row over (5, 6)
        ((slice(None), 1), row),
        (slice(1, 3), np.ones((2, 5, 6), np.float32) * 3),
        ((slice(None, None, 2), slice(None), slice(None, None, 3)), 11.0),
        (slice(None, None, -1), row),  # negative step
        ((1, slice(None, None, -2)), row),
        ([0, 2], 42.0), (np.array([1, 3]), row),
        (base_np()[:, 0, 0] > 40, -1.0),
        ((0, [1, 3], 2), 123.0),
    ]


@pytest.mark.parametrize("key,value", _setitem_cases(), ids=lambda v: repr(v)[:30])
def test_setitem_numpy_and_scalars(key, value):
    x = base_np()
    a = ndarr(x)
    x[key] = value
    a[key] = value
    same(a, x)


@pytest.mark.parametrize("key,value", _setitem_cases(), ids=lambda v: repr(v)[:30])
def test_setitem_ndarray_values(key, value):
    if np.isscalar(value):
        value = np.array(value, dtype=np.float32)
    value = np.asarray(value, dtype=np.float32)
    if value.ndim == 0:
        value = value.reshape(1)
    x = base_np()
    a = ndarr(x)
    x[key] = value if value.size > 1 else value.item()
    a[key] = ndarr(value)
    same(a, x)


def test_setitem_region_shaped_values_and_lists():
    x = base_np((3, 4))
    a = ndarr(x)
    a[1] = ndarr([1, 2, 3, 4])
    a[:, 2] = ndarr([7, 8, 9])
    a[0, 1:3] = [5, 6]
    x[1], x[:, 2], x[0, 1:3] = [1, 2, 3, 4], [7, 8, 9], [5, 6]
    same(a, x)
    b = nd.zeros((2, 3), dtype="int32")
    b[:] = 3.7
    same(b, np.full((2, 3), 3, np.int32))
    with pytest.raises((ValueError, mx.base.MXNetError)):
        a[0] = nd.ones((3,))  # cannot broadcast (3,) to (4,)


# ----------------------------------------------------------------------------- views


def test_views_share_storage_both_ways():
    x = base_np((4, 3))
    a = ndarr(x)
    views = {"reshape": a.reshape((3, 4)), "row": a[2], "slice": a[1:3], "full": a[:],
             "reshape_neg": a.reshape((-1,))}
    views["row"][:] = -1
    x[2] = -1
    views["slice"][0, 0] = 100
    x[1, 0] = 100
    views["reshape"][0] = 5
    x.reshape(3, 4)[0] = 5
    same(a, x)
    a[3, 2] = 77
    x[3, 2] = 77
    same(views["reshape_neg"], x.reshape(-1))
    same(views["full"], x)
    same(views["slice"], x[1:3])
    # nested views
    v = a[1:4][1]
    v[:] = 0
    x[2] = 0
    same(a, x)


def test_view_sees_later_writes_of_base_ops():
    a = ndarr(base_np((2, 3)))
    r = a[1]
    a[:] = nd.ones((2, 3)) * 4
    same(r, [4, 4, 4])
    nd.exp(nd.zeros((2, 3)), out=a)
    same(r, [1, 1, 1])


def test_asnumpy_and_array_copy():
    src = base_np((2, 3))
    a = ndarr(src)
    src[:] = -5  # mutating the source afterwards does not reach the NDArray
    same(a, base_np((2, 3)))
    got = a.asnumpy()
    got[:] = 99  # mutating the result does not reach the NDArray
    same(a, base_np((2, 3)))
    assert got.flags.writeable and got.flags.c_contiguous
    b = ndarr(a)
    b[0] = 0
    same(a, base_np((2, 3)))
    c = a.copy()
    c += 1
    same(a, base_np((2, 3)))
    d = nd.zeros((2, 3))
    a.copyto(d)
    same(d, base_np((2, 3)))
    assert a.copyto(mx.cpu()).shape == (2, 3)
    assert a.as_in_context(mx.cpu(0)) is a
    other = a.copyto(mx.cpu(1))
    assert other.context == mx.cpu(1)
    same(other, base_np((2, 3)))
    moved = a.as_in_context(mx.cpu(1))
    assert moved.context == mx.cpu(1) and moved is not a
    same(moved + 1, base_np((2, 3)) + 1)


def test_numpy_conversion_protocol():
    a = ndarr(base_np((2, 3)))
    n = np.asarray(a)
    assert isinstance(n, np.ndarray) and n.dtype == np.float32
    same(n, base_np((2, 3)))
    n[:] = 0  # a fresh copy
    same(a, base_np((2, 3)))
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    assert a.__array__(np.int32).dtype == np.int32
    c = np.array(a, copy=True)
    c[:] = 1
    same(a, base_np((2, 3)))
    assert a.__array__(copy=True) is not a.__array__(copy=True)
    # NumPy 2 protocol: copy=False shares memory (zero-copy through DLPack)
    v = np.array(a, copy=False)
    same(v, base_np((2, 3)))
    b = a * 1
    w = np.from_dlpack(b)
    w[0, 0] = 42.0  # writes through to the NDArray's storage
    assert b.asnumpy()[0, 0] == 42.0
    assert_allclose(np.add(a, 1), base_np((2, 3)) + 1)


# ----------------------------------------------------------------------------- printing


def test_print_format_exact():
    a = ndarr([[1, 2], [3, 4]])
    assert repr(a) == "\n[[1. 2.]\n [3. 4.]]\n<NDArray 2x2 @cpu(0)>"
    assert str(a) == repr(a)
    assert repr(ndarr([1, 2, 3], dtype="int32")) == "\n[1 2 3]\n<NDArray 3 @cpu(0)>"
    assert repr(nd.zeros((2, 1, 2))) == "\n[[[0. 0.]]\n\n [[0. 0.]]]\n<NDArray 2x1x2 @cpu(0)>"
    assert repr(ndarr([0.5])) == "\n[0.5]\n<NDArray 1 @cpu(0)>"
    assert repr(ndarr(np.zeros((0, 3)))) == "\n[]\n<NDArray 0x3 @cpu(0)>"
    assert repr(nd.ones((2,), ctx=mx.cpu(1))).endswith("<NDArray 2 @cpu(1)>")


# ----------------------------------------------------------------------------- pickling


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "uint8", "int8", "int32",
                                   "int64", "bool"])
def test_pickle_round_trip(dtype):
    x = (base_np((3, 4)) % 5).astype(dtype)
    a = ndarr(x)
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, nd.NDArray)
    assert b.dtype == np.dtype(dtype) and b.shape == (3, 4)
    same(b, x)
    b[0] = 1
    same(a, x)  # independent storage


def test_pickle_0d_and_empty_and_views():
    for arr in [nd.sum(nd.ones((3,))), nd.zeros((0, 2)), ndarr(base_np((3, 4)))[1:3]]:
        b = pickle.loads(pickle.dumps(arr))
        assert b.shape == arr.shape
        same(b, arr.asnumpy())


# ----------------------------------------------------------------------------- attributes


def test_attributes_len_iteration():
    x = base_np((3, 4))
    a = ndarr(x)
    assert a.shape == (3, 4) and isinstance(a.shape, tuple)
    assert a.dtype == np.float32 and a.size == 12 and a.ndim == 2
    assert len(a) == 3
    assert a.context == mx.cpu(0) and a.ctx == mx.cpu(0)
    assert a.stype == "default"
    same(a.T, x.T)
    rows = list(a)
    assert len(rows) == 3 and all(isinstance(r, nd.NDArray) for r in rows)
    for r, e in zip(rows, x):
        same(r, e)
    assert [float(v) for v in ndarr([1.0, 2.0])] == [1.0, 2.0]
    s = ndarr(2.0)  # 0-d (a full reduction is (1,) in legacy nd, as in MXNet)
    with pytest.raises(TypeError):
        len(s)
    with pytest.raises(TypeError):
        iter(s).__next__()
    assert a.tolist() == x.tolist()
    assert nd.zeros((0, 2)).size == 0 and len(nd.zeros((0, 2))) == 0
    assert list(nd.zeros((0, 2))) == []
    with mx.cpu(2):
        assert nd.ones((1,)).context == mx.cpu(2)


def test_scalar_conversions():
    one = ndarr([2.5])
    assert one.item() == 2.5 and isinstance(one.item(), float)
    assert one.asscalar() == np.float32(2.5) and isinstance(one.asscalar(), np.float32)
    assert float(one) == 2.5 and int(one) == 2 and bool(one) is True
    assert bool(ndarr([0.0])) is False
    assert ndarr([7], dtype="int64").item() == 7
    assert isinstance(ndarr([7], dtype="int64").item(), int)
    assert ndarr([[3.0]]).asscalar() == 3.0
    assert nd.sum(nd.ones((4,))).item() == 4.0
    assert bool(nd.zeros((0,))) is False
    big = nd.ones((2,))
    for fn, exc in [(lambda: big.item(), ValueError), (lambda: big.asscalar(), ValueError),
                    (lambda: float(big), TypeError), (lambda: int(big), TypeError),
                    (lambda: bool(big), ValueError)]:
        with pytest.raises(exc):
            fn()


# ----------------------------------------------------------------------------- save / load


def test_save_load_list_dict_single(tmp_path):
    xs = [base_np((2, 3)), (base_np((4,)) % 3).astype(np.int32), np.array([True, False]),
          base_np((1, 2, 2)).astype(np.float64)]
    f = str(tmp_path / "list.params")
    nd.save(f, [ndarr(x) for x in xs])
    back = nd.load(f)
    assert isinstance(back, list) and len(back) == len(xs)
    for b, x in zip(back, xs):
        assert b.dtype == x.dtype
        same(b, x)
    f2 = str(tmp_path / "dict.params")
    nd.save(f2, {"w": ndarr(xs[0]), "arg:b": ndarr(xs[1])})
    back = nd.load(f2)
    assert isinstance(back, dict) and set(back) == {"w", "arg:b"}
    same(back["w"], xs[0])
    same(back["arg:b"], xs[1])
    f3 = str(tmp_path / "one.params")
    nd.save(f3, ndarr(xs[0]))
    back = nd.load(f3)
    assert isinstance(back, list) and len(back) == 1
    same(back[0], xs[0])
    f5 = str(tmp_path / "shapes.params")
    nd.save(f5, [nd.sum(nd.ones((3,))), nd.zeros((0, 2)), ndarr(base_np((2, 3)))[1]])
    back = nd.load(f5)
    assert [b.shape for b in back] == [(1,), (0, 2), (3,)]  # legacy full sum: (1,)
    same(back[0], np.float32([3]))
    f4 = str(tmp_path / "empty.params")
    nd.save(f4, [])
    assert nd.load(f4) in ([], {})


def test_contiguous_slice_assign_and_copyto_into_views():
    # the memcpy path of _slice_assign: first-axis slice, destination and source views
    nd = mx.nd
    src = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = nd.zeros((6, 6))
    x[1:5] = nd.array(src)
    want = np.zeros((6, 6), np.float32)
    want[1:5] = src
    assert_array_equal(x.asnumpy(), want)
    flat = nd.array(np.arange(40, dtype=np.float32))
    dst = nd.zeros((5, 6))
    flat[5:29].reshape((4, 6))[1:3].copyto(dst[2:4])
    want = np.zeros((5, 6), np.float32)
    want[2:4] = np.arange(11, 23, dtype=np.float32).reshape(2, 6)
    assert_array_equal(dst.asnumpy(), want)
    y = nd.zeros((2, 3))
    y[:] = nd.array([1.0, 2.0, 3.0])  # broadcast: the general path
    assert_array_equal(y.asnumpy(), [[1, 2, 3], [1, 2, 3]])
