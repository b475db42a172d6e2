"""``mx.np`` / ``mx.np.random`` / ``mx.npx`` functions composed of engine operators, against
NumPy, and against recorded MXNet 1.9.1 results (``tests/fixtures/np_surface/np_surface.json``)
where MXNet's semantics are its own (int32 ``cumsum`` keeps int32, ``npx.reshape`` codes,
``take`` raising on out-of-range indices, result dtypes)."""

import ferromx as mx
import numpy as onp
import pytest
from ferromx import autograd, np, npx

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered")

RS = onp.random.RandomState(0)
A = RS.rand(3, 4).astype("float32")
B = RS.rand(4, 5).astype("float32")
V = onp.array([3.0, -1.5, 2.0, 0.0, 7.25], dtype="float32")


def _method(m, how):
    """MXNet's np keeps NumPy 1.x's ``interpolation=``; NumPy 2 calls it ``method=``."""
    return {"interpolation": how} if m is np else {"method": how}


def same(x, ref, rtol=1e-5, atol=1e-6):
    assert isinstance(x, np.ndarray), type(x)
    ref = onp.asarray(ref)
    assert x.shape == ref.shape, (x.shape, ref.shape)
    onp.testing.assert_allclose(x.asnumpy(), ref, rtol=rtol, atol=atol)


CASES = [
    ("hstack", lambda m, a: m.hstack([a, a]), A),
    ("vstack", lambda m, a: m.vstack([a, a[0]]), A),
    ("dstack", lambda m, a: m.dstack([a, a]), A),
    ("column_stack", lambda m, a: m.column_stack([a[0], a[1]]), A),
    ("atleast_3d", lambda m, a: m.atleast_3d(a[0]), A),
    ("flip", lambda m, a: m.flip(a, 1), A),
    ("flip_all", lambda m, a: m.flip(a), A),
    ("fliplr", lambda m, a: m.fliplr(a), A),
    ("rot90", lambda m, a: m.rot90(a), A),
    ("rot90_3", lambda m, a: m.rot90(a, 3), A),
    ("roll", lambda m, a: m.roll(a, 2, axis=1), A),
    ("roll_flat", lambda m, a: m.roll(a, -5), A),
    ("roll_multi", lambda m, a: m.roll(a, (1, 2), axis=(0, 1)), A),
    ("tile", lambda m, a: m.tile(a, (2, 1, 2)), A),
    ("repeat", lambda m, a: m.repeat(a, 2, axis=1), A),
    ("repeat_flat", lambda m, a: m.repeat(a, 3), A),
    ("swapaxes", lambda m, a: m.swapaxes(a, 0, 1), A),
    ("moveaxis", lambda m, a: m.moveaxis(a.reshape(3, 2, 2), 0, -1), A),
    ("rollaxis", lambda m, a: m.rollaxis(a.reshape(3, 2, 2), 2), A),
    ("append", lambda m, a: m.append(a, a[:1], axis=0), A),
    ("resize", lambda m, a: m.resize(a, (5, 7)), A),
    ("tril", lambda m, a: m.tril(a, -1), A),
    ("triu", lambda m, a: m.triu(a, 1), A),
    ("diag", lambda m, a: m.diag(a, 1), A),
    ("diagflat", lambda m, a: m.diagflat(a[0]), A),
    ("trace", lambda m, a: m.trace(a), A),
    ("cumsum", lambda m, a: m.cumsum(a, axis=1), A),
    ("cumsum_flat", lambda m, a: m.cumsum(a), A),
    ("diff", lambda m, a: m.diff(a, n=2, axis=1), A),
    ("ediff1d", lambda m, a: m.ediff1d(a, to_begin=[9.0]), A),
    ("sort", lambda m, a: m.sort(a, axis=0), A),
    ("take", lambda m, a: m.take(a, [[0, 2], [1, 1]], axis=1), A),
    ("take_along_axis", lambda m, a: m.take_along_axis(a, m.argsort(a, axis=1), axis=1), A),
    ("pad_reflect", lambda m, a: m.pad(a, ((1, 2), (5, 0)), mode="reflect"), A),
    ("pad_constant", lambda m, a: m.pad(a, 2, constant_values=3.0), A),
    ("pad_edge", lambda m, a: m.pad(a, ((0, 1), (2, 3)), mode="edge"), A),
    ("var", lambda m, a: m.var(a, axis=0, ddof=1), A),
    ("std", lambda m, a: m.std(a, axis=1, keepdims=True), A),
    ("average", lambda m, a: m.average(a, axis=1, weights=a[0]), A),
    ("ptp", lambda m, a: m.ptp(a, axis=0), A),
    ("percentile", lambda m, a: m.percentile(a, [10, 50, 95], axis=1), A),
    ("quantile_lower", lambda m, a: m.quantile(a, 0.3, **_method(m, "lower")), A),
    ("quantile_mid", lambda m, a: m.quantile(a, 0.3, axis=0, **_method(m, "midpoint")), A),
    ("quantile_nearest", lambda m, a: m.quantile(a, [0.3, 0.5], axis=1,
                                                 **_method(m, "nearest")), A),
    ("outer", lambda m, a: m.outer(a[0], a[1]), A),
    ("inner", lambda m, a: m.inner(a, a), A),
    ("tensordot", lambda m, a: m.tensordot(a, a, axes=([0], [0])), A),
    ("vdot", lambda m, a: m.vdot(a, a), A),
    ("kron", lambda m, a: m.kron(a[:2, :2], a[1:, 2:]), A),
    ("around", lambda m, a: m.around(a * 100, -1), A),
    ("round2", lambda m, a: m.round(a, 2), A),
    ("copysign", lambda m, a: m.copysign(a, a - 0.5), A),
    ("arctan2", lambda m, a: m.arctan2(a - 0.5, a[::-1] - 0.5), A),
    ("ldexp", lambda m, a: m.ldexp(a, 3), A),
    ("heaviside", lambda m, a: m.heaviside(a - 0.5, 0.5), A),
    ("hypot", lambda m, a: m.hypot(a, a * 2), A),
    ("interp", lambda m, a: m.interp(a * 3, m.array([0.0, 1.0, 2.5]), m.array([1.0, -1.0, 4.0])),
     A),
    ("polyval", lambda m, a: m.polyval(m.array([2.0, -1.0, 0.5]), a), A),
    ("trapz", lambda m, a: (m.trapz if m is np else onp.trapezoid)(a, axis=1), A),
    ("searchsorted", lambda m, a: m.searchsorted(m.array([0.1, 0.4, 0.6, 0.9]), a), A),
    ("digitize", lambda m, a: m.digitize(a, m.array([0.2, 0.5, 0.7])), A),
    ("isnan", lambda m, a: m.isnan(m.log(a - 0.5)), A),
    ("isinf", lambda m, a: m.isinf(m.array([1.0, m.inf, -m.inf])), A),
    ("isfinite", lambda m, a: m.isfinite(m.log(a - 0.5)), A),
    ("signbit", lambda m, a: m.signbit(m.array([-0.0, 0.0, -2.0, 3.0])), A),
    ("nan_to_num", lambda m, a: m.nan_to_num(m.array([m.nan, m.inf, -1.0], dtype="float32")), A),
    ("isclose", lambda m, a: m.isclose(a, a + 1e-6), A),
    ("all", lambda m, a: m.all(a > 0.1, axis=0), A),
    ("any", lambda m, a: m.any(a > 0.9, axis=1), A),
    ("count_nonzero", lambda m, a: m.count_nonzero(a > 0.5, axis=0), A),
    ("invert_int", lambda m, a: m.invert(m.array([0, 5, -3], dtype="int32")), A),
    ("meshgrid", lambda m, a: m.stack(m.meshgrid(a[0], a[1, :3]), 0), A),
    ("meshgrid_ij", lambda m, a: m.stack(m.meshgrid(a[0], a[1, :3], indexing="ij"), 0), A),
    ("logspace", lambda m, a: m.logspace(0, 2, 5), A),
    ("indices", lambda m, a: m.indices((2, 3)), A),
    ("hamming", lambda m, a: m.hamming(6), A),
    ("blackman", lambda m, a: m.blackman(7), A),
    ("cross", lambda m, a: m.cross(a[:, :3], a[:, 1:]), A),
    ("fmod", lambda m, a: m.fmod(a - 0.5, 0.3), A),
    ("argwhere", lambda m, a: m.argwhere(a > 0.5), A),
    ("gcd", lambda m, a: m.gcd(m.array([12, 18, 7], dtype="int64"),
                               m.array([8, 12, 0], dtype="int64")), A),
    ("unique", lambda m, a: m.unique(m.array([3.0, 1.0, 3.0, 2.0])), A),
    ("delete", lambda m, a: m.delete(a, [0, 2], axis=1), A),
    ("insert", lambda m, a: m.insert(a, 1, 7.0, axis=1), A),
    ("corrcoef_fallback", lambda m, a: m.corrcoef(a), A),
]


@pytest.mark.parametrize("name,fn,data", CASES, ids=[c[0] for c in CASES])
def test_against_numpy(name, fn, data):
    got = fn(np, np.array(data))
    ref = fn(onp, data)
    if isinstance(ref, onp.ndarray) and ref.dtype == bool:
        assert got.dtype == onp.bool_
    same(got, ref, rtol=1e-4, atol=1e-5)


def test_split_family():
    a = np.array(onp.arange(24.0).reshape(4, 6))
    ref = onp.arange(24.0).reshape(4, 6)
    for ours, theirs in [(np.split(a, 3, axis=1), onp.split(ref, 3, axis=1)),
                         (np.array_split(a, 4, axis=1), onp.array_split(ref, 4, axis=1)),
                         (np.split(a, [1, 3]), onp.split(ref, [1, 3])),
                         (np.hsplit(a, 2), onp.hsplit(ref, 2)),
                         (np.vsplit(a, 2), onp.vsplit(ref, 2))]:
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            same(o, t)
    with pytest.raises(ValueError, match="equal division"):
        np.split(a, 4, axis=1)


def test_einsum_forms():
    a, b = np.array(A), np.array(B)
    c = np.array(RS.rand(2, 3, 4).astype("float32"))
    cn = c.asnumpy()
    for sub, ops, refs in [("ij,jk->ik", (a, b), (A, B)), ("ij->ji", (a,), (A,)),
                           ("ij->", (a,), (A,)), ("ii->i", (a[:, :3],), (A[:, :3],)),
                           ("bij,bkj->bik", (c, c), (cn, cn)), ("ij,ij->i", (a, a), (A, A)),
                           ("i,j->ij", (a[0], b[0]), (A[0], B[0])),
                           ("ij,jk,kl->il", (a, b, b.T), (A, B, B.T)), ("ij,jk", (a, b), (A, B))]:
        same(np.einsum(sub, *ops), onp.einsum(sub, *refs), rtol=1e-4)


def test_gradients_flow_through_compositions():
    x = np.array(A)
    x.attach_grad()
    with autograd.record():
        y = (np.cumsum(x, axis=1) * np.arange(4.0)).sum() + np.tril(x).sum() \
            + np.roll(x, 1, axis=0)[0].sum() + np.var(x) + np.einsum("ij,ij->", x, x)
    y.backward()
    n = A.size
    cum = onp.tile(onp.cumsum(onp.arange(4.0)[::-1])[::-1], (3, 1))
    tri = onp.tril(onp.ones((3, 4)))
    roll = onp.zeros((3, 4))
    roll[2] = 1
    var = 2 * (A - A.mean()) / n
    onp.testing.assert_allclose(x.grad.asnumpy(), cum + tri + roll + var + 2 * A, rtol=1e-4)


def test_mxnet_semantics():
    c = np.cumsum(np.array([1, 2, 3], dtype="int32"))
    assert c.dtype == onp.int32 and c.tolist() == [1, 3, 6]
    with pytest.raises(IndexError, match="take"):
        np.take(np.array([1.0, 2.0, 3.0]), np.array([5]))
    same(np.take(np.array([1.0, 2.0, 3.0]), np.array([5, -1]), mode="clip"), [3.0, 1.0])
    same(np.take(np.array([1.0, 2.0, 3.0]), np.array([4]), mode="wrap"), [2.0])
    assert np.allclose(np.ones(2), np.ones(2)) is True
    assert np.array_equal(np.ones(2), np.ones(3)) is False
    h, e = np.histogram(np.array([1.0, 2, 2, 3, 4]), bins=3, range=(1, 4))
    assert h.tolist() == [1, 2, 2] and e.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert np.bincount(np.array([0, 1, 1, 3], dtype="int64")).tolist() == [1, 2, 0, 1]
    same(np.bincount(np.array([0, 2], dtype="int64"), weights=np.array([0.5, 2.0]),
                     minlength=4), [0.5, 0.0, 2.0, 0.0])
    assert np.linalg.norm(np.array([[1.0, 2], [3, 4]]), 1).item() == 6.0
    same(np.linalg.norm(np.array([[1.0, 2], [3, 4]]), axis=1), [5 ** 0.5, 5.0])
    same(np.linalg.norm(np.array(A), "fro"), onp.linalg.norm(A, "fro"))
    same(np.linalg.norm(np.array(V), onp.inf), onp.linalg.norm(V, onp.inf))
    same(np.linalg.norm(np.array(V), 3), onp.linalg.norm(V, 3), rtol=1e-4)
    assert np.NINF == -onp.inf and np.may_share_memory(np.array(A), np.array(A)) is False
    x = np.array(A)
    assert np.shares_memory(x, x[1])


def test_random_distributions_moments():
    np.random.seed(7)
    n = (40000,)
    for fn, args, mean, var in [
        (np.random.logistic, (1.0, 2.0), 1.0, onp.pi ** 2 / 3 * 4),
        (np.random.gumbel, (1.0, 2.0), 1 + 2 * onp.euler_gamma, onp.pi ** 2 / 6 * 4),
        (np.random.rayleigh, (2.0,), 2 * onp.sqrt(onp.pi / 2), (4 - onp.pi) / 2 * 4),
        (np.random.exponential, (2.0,), 2.0, 4.0),
        (np.random.weibull, (2.0,), 0.886227, 0.214602),
        (np.random.pareto, (4.0,), 1 / 3, 4 / 9 / 2),
        (np.random.power, (2.0,), 2 / 3, 1 / 18),
        (np.random.gamma, (2.0, 3.0), 6.0, 18.0),
        (np.random.beta, (2.0, 3.0), 0.4, 0.04),
        (np.random.chisquare, (3.0,), 3.0, 6.0),
        (np.random.lognormal, (0.0, 0.5), onp.exp(0.125), (onp.exp(0.25) - 1) * onp.exp(0.25)),
        (np.random.laplace, (0.0, 1.0), 0.0, 2.0),
    ]:
        x = fn(*args, size=n)
        assert x.shape == n and x.dtype == onp.float32
        s = x.asnumpy().astype("float64")
        assert abs(s.mean() - mean) < 4 * onp.sqrt(var / n[0]) + 1e-3, fn.__name__
        assert abs(s.var() / var - 1) < 0.1, fn.__name__


def test_random_discrete_and_in_place():
    np.random.seed(1)
    c = np.random.choice(5, 5, replace=False)
    assert sorted(c.tolist()) == list(range(5)) and c.dtype == onp.int64
    w = np.random.choice(np.array([1.0, 2.0, 3.0]), 2000, p=[0.1, 0.0, 0.9])
    vals = w.asnumpy()
    assert set(vals.tolist()) <= {1.0, 3.0} and 0.85 < (vals == 3.0).mean() < 0.95
    k = np.random.choice(4, 3, replace=False, p=[0.1, 0.2, 0.3, 0.4])
    assert len(set(k.tolist())) == 3
    m = np.random.multinomial(100, [0.2, 0.8], size=3)
    assert m.shape == (3, 2) and m.dtype == onp.int64 and (m.sum(axis=1) == 100).all()
    a = np.arange(50.0)
    np.random.shuffle(a)
    assert sorted(a.tolist()) == list(range(50)) and a.tolist() != list(range(50))
    r = np.random.randint(3, size=(200,))
    assert r.dtype == onp.int64 and set(r.tolist()) == {0, 1, 2}
    assert np.random.rand(2, 3).shape == (2, 3) and np.random.randn(4).shape == (4,)
    assert np.random.normal().shape == ()
    g = np.random.gamma(np.array([1.0, 5.0]), size=(20000, 2)).mean(axis=0).asnumpy()
    onp.testing.assert_allclose(g, [1.0, 5.0], rtol=0.05)
    with pytest.raises(ValueError, match="larger sample"):
        np.random.choice(3, 4, replace=False)


def test_random_reparameterised_gradients():
    loc, scale = np.array([1.0, 2.0]), np.array([0.5, 3.0])
    loc.attach_grad()
    scale.attach_grad()
    with autograd.record():
        y = np.random.normal(loc, scale, size=(4, 2))
    y.backward()
    same(loc.grad, [4.0, 4.0])
    assert scale.grad.shape == (2,)


def test_npx_functions():
    a = np.zeros((2, 3, 4))
    assert npx.reshape(a, (-6, 1, -1, -2, -2)).shape == (1, 2, 3, 4)
    assert npx.reshape(a, (-1, 4), reverse=True).shape == (6, 4)
    assert npx.reshape(a, (-5, -2)).shape == (6, 4)
    assert npx.reshape(a, (-2, -4)).shape == (2, 3, 4)
    assert npx.reshape(np.zeros((1, 3, 4)), (-3, -2, -2)).shape == (3, 4)
    with pytest.raises(ValueError, match="npx.reshape"):
        npx.reshape(a, (5, -1))
    same(npx.arange_like(np.zeros((2, 3)), axis=1), [0.0, 1.0, 2.0])
    same(npx.arange_like(np.zeros((5,)), start=1.0, repeat=2), [1.0, 1.0, 2.0, 2.0, 3.0])
    assert npx.shape_array(a).tolist() == [2, 3, 4]
    assert npx.nonzero(np.array([[0, 1], [2, 0]])).tolist() == [[0, 1], [1, 0]]
    same(npx.erfinv(np.array([0.5, -0.9, 0.0])), [0.4769362762, -1.1630871537, 0.0], rtol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="bad"):
        npx.constraint_check(np.array([True, False]), "bad")
    b = npx.random.bernoulli(0.3, size=(20000,))
    assert abs(b.asnumpy().mean() - 0.3) < 0.02
    assert npx.random.uniform_n(np.zeros(2), 1.0, batch_shape=(3,)).shape == (3, 2)
    assert npx.random.normal_n(0.0, 1.0, batch_shape=4).shape == (4,)
    assert npx.leaky_relu is mx.nd.LeakyReLU and npx.Context is mx.Context
    with pytest.raises(ValueError, match="gpu context"):
        npx.get_cuda_compute_capability(mx.cpu())


def test_ndarray_methods():
    x = np.array(A)
    same(x.cumsum(axis=0), onp.cumsum(A, axis=0))
    same(x.std(axis=1, ddof=1), onp.std(A, axis=1, ddof=1), rtol=1e-4)
    same(x.var(), onp.var(A), rtol=1e-4)
    assert (x > 0.5).all(axis=0).tolist() == (A > 0.5).all(axis=0).tolist()
    assert (x > 0.5).any().item() == bool((A > 0.5).any())
    z = onp.array([[0.0, 1.0], [2.0, 0.0]], dtype="float32")
    got = np.array(z).nonzero()
    assert len(got) == 2
    for ours, ref in zip(got, onp.nonzero(z)):
        same(ours, ref)


def _recorded():
    import json
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                        "np_surface", "np_surface.json")
    with open(path) as f:
        return json.load(f)


def test_recorded_mxnet_semantics():
    """Against MXNet 1.9.1's own results (``record_np_surface.py``)."""
    ref = _recorded()
    for src, spec, rev, shape in ref["reshape"]:
        if shape is None:
            with pytest.raises(ValueError, match="npx.reshape"):
                npx.reshape(np.zeros(tuple(src)), tuple(spec), reverse=rev)
        else:
            got = npx.reshape(np.zeros(tuple(src)), tuple(spec), reverse=rev).shape
            assert list(got) == shape, (src, spec, rev)
    c = np.cumsum(np.array([1, 2, 3], dtype="int32"))
    assert [c.tolist(), str(c.dtype)] == ref["cumsum_int32"]
    assert ref["take_out_of_range_raises"]
    with pytest.raises(IndexError):
        np.take(np.array([1.0, 2.0, 3.0]), np.array([5]))
    h, e = np.histogram(np.array([1.0, 2, 2, 3, 4]), bins=3, range=(1, 4))
    assert [h.tolist(), str(h.dtype), e.tolist(), str(e.dtype)] == ref["histogram"]
    assert str(np.random.multinomial(10, [0.5, 0.5]).dtype) == ref["multinomial_dtype"]
    assert str(np.random.choice(5, 3, replace=False).dtype) == ref["choice_dtype"]
    assert str(np.random.randint(5, size=(2,)).dtype) == ref["randint_dtype"]
    assert list(np.random.gamma(2.0).shape) == ref["gamma_scalar_shape"]
    same(npx.erfinv(np.array([0.5, -0.9, 0.0, 0.999])), ref["erfinv"], rtol=2e-6)
    same(npx.arange_like(np.zeros((2, 3)), axis=1), ref["arange_like_axis"])
    same(npx.arange_like(np.zeros((5,)), start=1.0, repeat=2), ref["arange_like_repeat"])
    s = npx.shape_array(np.zeros((2, 3)))
    assert [s.tolist(), str(s.dtype)] == ref["shape_array"]
    nz = npx.nonzero(np.array([[0, 1], [2, 0]]))
    assert [nz.tolist(), str(nz.dtype)] == ref["npx_nonzero"]
    same(np.quantile(np.array([1.0, 2, 3, 4]), np.array([0.25, 0.6])), ref["quantile"])
    assert np.linalg.norm(np.array([[1.0, 2], [3, 4]]), 1).item() == ref["norm_1"]
    same(np.around(np.array([0.5, 1.5, 2.5, -0.5, -1.5])), ref["around_halves"])
    assert str(np.var(np.array([1, 2, 4])).dtype) == ref["var_int_dtype"]
    assert type(np.allclose(np.ones(2), np.ones(2))).__name__ == ref["allclose_type"]
    assert str(np.isnan(np.array([1.0])).dtype) == ref["isnan_dtype"]


BAD = [
    ("rot90", lambda: np.rot90(np.ones((2, 2)), axes=(0, 0)), ValueError),
    ("tensordot", lambda: np.tensordot(np.ones((2, 3)), np.ones((2, 3)), axes=1), ValueError),
    ("einsum", lambda: np.einsum("ij,jk->ik", np.ones((2, 3))), ValueError),
    ("einsum", lambda: np.einsum("ijk->i", np.ones((2, 3))), ValueError),
    ("pad", lambda: np.pad(np.ones((2,)), 1, mode="wrap"), ValueError),
    ("randint", lambda: np.random.randint(3, 3), ValueError),
    ("take_along_axis", lambda: np.take_along_axis(np.ones((2, 3)), np.zeros((2,), dtype="int64"),
                                                   1), ValueError),
    ("moveaxis", lambda: np.moveaxis(np.ones((2, 3)), (0, 1), (0,)), ValueError),
    ("roll", lambda: np.roll(np.ones((2, 3)), (1, 2, 3), axis=(0, 1)), ValueError),
    ("bincount", lambda: np.bincount(np.array([1.0, 2.0])), TypeError),
    ("cross", lambda: np.cross(np.ones((2, 2)), np.ones((2, 2))), ValueError),
    ("add_n", lambda: mx.nd.add_n(mx.nd.ones((2,)), mx.nd.ones((3,))), ValueError),
    ("khatri_rao", lambda: mx.nd.khatri_rao(mx.nd.ones((2, 2)), mx.nd.ones((2, 3))), ValueError),
    ("L2Normalization", lambda: mx.nd.L2Normalization(mx.nd.ones((2, 2)), mode="x"), ValueError),
    ("diag", lambda: np.diag(np.ones((2, 2, 2))), ValueError),
]


@pytest.mark.parametrize("name,fn,exc", BAD, ids=[b[0] + str(i) for i, b in enumerate(BAD)])
def test_bad_input_raises_naming_the_function(name, fn, exc):
    with pytest.raises(exc, match=name):
        fn()
