"""Dense linear algebra: ``np.linalg`` against NumPy, the legacy ``nd.linalg`` against recorded
MXNet 1.9.1 values and gradients, gradients by finite differences, errors; plus the integer
bitwise operators and ``arcsinh``'s higher derivatives."""

import json
import os
import re

import ferromx as mx
import numpy as onp
import pytest
from ferromx import autograd, nd, np

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "linalg", "mxnet_linalg.json")
rng = onp.random.default_rng(3)


def spd(n, batch=()):
    a = rng.uniform(-1, 1, size=batch + (n, n))
    return a @ onp.swapaxes(a, -1, -2) + n * onp.eye(n)


def close(got, want, rtol=1e-6, atol=1e-8):
    got = got.asnumpy() if hasattr(got, "asnumpy") else onp.asarray(got)
    onp.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def f64(x):
    return np.array(x, dtype="float64")


# ------------------------------------------------------------------ legacy nd.linalg (MXNet)

with open(FIX) as _f:
    CASES = json.load(_f)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['op']}-{i}" for i, c in enumerate(CASES)])
def test_legacy_linalg_matches_recorded_mxnet(case):
    arrs = [nd.array(onp.array(x), dtype="float64") for x in case["inputs"]]
    for a in arrs:
        a.attach_grad()
    with autograd.record():
        res = getattr(nd.linalg, case["op"])(*arrs, **case["kwargs"])
        res = res if isinstance(res, (list, tuple)) else [res]
        ws = [nd.array(onp.array(w), dtype="float64") for w in case["weights"]]
        loss = sum((r * w).sum() for r, w in zip(res, ws))
    loss.backward()
    assert len(res) == len(case["outputs"])
    for r, want in zip(res, case["outputs"]):
        close(r, onp.array(want).reshape(r.shape), rtol=1e-5, atol=1e-7)
        assert r.shape == onp.array(want).shape
    for a, want in zip(arrs, case["grads"]):
        close(a.grad, onp.array(want), rtol=1e-5, atol=1e-7)


def test_legacy_names_and_aliases():
    x = nd.array(spd(3), dtype="float64")
    close(nd.linalg_potrf(x), onp.linalg.cholesky(x.asnumpy()))
    close(nd.linalg.inverse(x), onp.linalg.inv(x.asnumpy()))
    assert nd.linalg.det(x).shape == (1,)  # legacy nd: never 0-d
    for name in ("potrf", "potri", "trsm", "trmm", "gelqf", "syevd", "inverse", "det", "slogdet",
                 "sumlogdiag", "extractdiag", "makediag", "extracttrian", "maketrian", "syrk",
                 "gemm", "gemm2"):
        assert callable(getattr(nd.linalg, name)), name


# ------------------------------------------------------------------ np.linalg against NumPy

def test_factorizations_match_numpy_batched():
    a = spd(4, (2, 3))
    x = f64(a)
    close(np.linalg.cholesky(x), onp.linalg.cholesky(a))
    close(np.linalg.inv(x), onp.linalg.inv(a))
    close(np.linalg.det(x), onp.linalg.det(a))
    assert isinstance(np.linalg.slogdet(x), list)  # as MXNet
    s, l = np.linalg.slogdet(x)
    ws, wl = onp.linalg.slogdet(a)
    close(s, ws)
    close(l, wl)
    b = rng.uniform(-1, 1, (2, 3, 4))
    close(np.linalg.solve(x, f64(b)), onp.linalg.solve(a, b[..., None])[..., 0])
    b2 = rng.uniform(-1, 1, (2, 3, 4, 2))
    close(np.linalg.solve(x, f64(b2)), onp.linalg.solve(a, b2))
    w, v = np.linalg.eigh(x)
    close(w, onp.linalg.eigvalsh(a))
    close(np.linalg.eigvalsh(x), onp.linalg.eigvalsh(a))
    vn = v.asnumpy()
    close(vn @ (w.asnumpy()[..., None] * onp.swapaxes(vn, -1, -2)), a, atol=1e-9)
    close(abs(vn), abs(onp.linalg.eigh(a)[1]), atol=1e-7)


def test_eigh_reads_the_uplo_triangle():
    a = onp.array([[2.0, 1.0], [5.0, 3.0]])
    close(np.linalg.eigh(f64(a), UPLO="U")[0], onp.linalg.eigh(a, UPLO="U")[0])
    close(np.linalg.eigh(f64(a))[0], onp.linalg.eigh(a)[0])
    with pytest.raises(ValueError, match="UPLO"):
        np.linalg.eigh(f64(a), UPLO="X")


def test_svd_is_mxnets_layout():
    a = rng.uniform(-1, 1, (2, 3, 5))
    ut, s, v = np.linalg.svd(f64(a))
    assert (ut.shape, s.shape, v.shape) == ((2, 3, 3), (2, 3), (2, 3, 5))
    close(s, onp.linalg.svd(a, compute_uv=False))
    close(ut.asnumpy() @ (s.asnumpy()[..., None] * v.asnumpy()), a, atol=1e-9)
    with pytest.raises(mx.base.MXNetError, match=r"_npi_svd.*\(4, 2\)"):
        np.linalg.svd(np.ones((4, 2)))


def test_qr_matches_numpy_signs_included():
    for shape in ((5, 3), (3, 5), (4, 4)):
        a = rng.uniform(-1, 1, shape)
        q, r = np.linalg.qr(f64(a))
        wq, wr = onp.linalg.qr(a)
        close(q, wq, atol=1e-10)
        close(r, wr, atol=1e-10)
        q, r = np.linalg.qr(f64(a), mode="complete")
        wq, wr = onp.linalg.qr(a, mode="complete")
        close(q, wq, atol=1e-10)
        close(r, wr, atol=1e-10)
        close(np.linalg.qr(f64(a), mode="r"), onp.linalg.qr(a, mode="r"), atol=1e-10)
    a = rng.uniform(-1, 1, (2, 4, 3))
    q, r = np.linalg.qr(f64(a))
    close(q.asnumpy() @ r.asnumpy(), a, atol=1e-10)


def test_eig_real_spectrum():
    a = spd(3) + onp.diag([0.0, 1.0, 2.0]) @ onp.triu(onp.ones((3, 3)), 1) * 0.1
    w, v = np.linalg.eig(f64(a))
    close(onp.sort(w.asnumpy()), onp.sort(onp.linalg.eigvals(a).real))
    close(a @ v.asnumpy(), v.asnumpy() * w.asnumpy(), atol=1e-9)
    close(onp.linalg.norm(v.asnumpy(), axis=0), onp.ones(3))
    close(onp.sort(np.linalg.eigvals(f64(a)).asnumpy()), onp.sort(onp.linalg.eigvals(a).real))
    with pytest.raises(mx.base.MXNetError, match="complex eigenvalues"):
        np.linalg.eig(f64([[0.0, -1.0], [1.0, 0.0]]))[0].asnumpy()


def test_composites_match_numpy():
    a = rng.uniform(-1, 1, (4, 3))
    b = rng.uniform(-1, 1, 4)
    close(np.linalg.pinv(f64(a)), onp.linalg.pinv(a))
    batch = rng.uniform(-1, 1, (2, 3, 4))
    close(np.linalg.pinv(f64(batch), rcond=f64([0.1, 0.2])),
          onp.linalg.pinv(batch, rcond=onp.array([0.1, 0.2])))
    x, res, rank, s = np.linalg.lstsq(f64(a), f64(b), rcond=None)
    wx, wres, wrank, ws = onp.linalg.lstsq(a, b, rcond=None)
    close(x, wx)
    close(res, wres)
    assert rank == wrank
    close(s, ws)
    low = onp.outer(rng.uniform(size=4), rng.uniform(size=3))
    assert int(np.linalg.matrix_rank(f64(low))) == 1
    assert int(np.linalg.matrix_rank(f64(a))) == 3
    sq = spd(3)
    for p in (None, 2, -2, 1, "fro", onp.inf):
        close(np.linalg.cond(f64(sq), p), onp.linalg.cond(sq, p))
    ms = [rng.uniform(-1, 1, s) for s in ((2, 3), (3, 4), (4, 2), (2, 2))]
    close(np.linalg.multi_dot([f64(m) for m in ms]), onp.linalg.multi_dot(ms))
    close(np.linalg.multi_dot([f64(ms[0][0]), f64(ms[1]), f64(ms[2])]),
          onp.linalg.multi_dot([ms[0][0], ms[1], ms[2]]))
    for n in (0, 1, 3, -2):
        close(np.linalg.matrix_power(f64(sq), n), onp.linalg.matrix_power(sq, n))
    t = rng.uniform(-1, 1, (4, 6, 8, 3)) + 0.0
    t = (onp.eye(24).reshape(4, 6, 8, 3) * 3 + t * 0.1)
    close(np.linalg.tensorinv(f64(t), ind=2), onp.linalg.tensorinv(t, ind=2))
    a6 = onp.eye(6).reshape(6, 2, 3) * 2 + rng.uniform(-0.1, 0.1, (6, 2, 3))
    b6 = rng.uniform(-1, 1, 6)
    close(np.linalg.tensorsolve(f64(a6), f64(b6)), onp.linalg.tensorsolve(a6, b6))
    m = rng.uniform(-1, 1, (3, 5))
    for o in (2, -2, "nuc"):
        close(np.linalg.norm(f64(m), o), onp.linalg.norm(m, o))
    close(np.linalg.norm(f64(batch), 2, axis=(1, 2)), onp.linalg.norm(batch, 2, axis=(1, 2)))


def test_results_are_np_arrays_and_float32_works():
    a = np.array(spd(3).astype("float32"))
    r = np.linalg.inv(a)
    assert isinstance(r, np.ndarray) and r.dtype == onp.float32
    close(r, onp.linalg.inv(a.asnumpy()), rtol=1e-4, atol=1e-5)
    assert np.linalg.det(a).shape == ()


# ------------------------------------------------------------------ errors

def test_bad_input_raises_clear_errors():
    with pytest.raises(mx.base.MXNetError, match="not positive definite"):
        np.linalg.cholesky(f64([[1.0, 2.0], [2.0, 1.0]])).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="singular"):
        np.linalg.inv(f64([[1.0, 2.0], [2.0, 4.0]])).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="singular"):
        np.linalg.solve(f64([[1.0, 2.0], [2.0, 4.0]]), f64([1.0, 1.0])).asnumpy()
    with pytest.raises(mx.base.MXNetError, match=r"_linalg_inverse.*float32 and float64"):
        np.linalg.inv(np.array([[1, 2], [3, 4]], dtype="int32"))
    with pytest.raises(ValueError, match=r"linalg.inv: .*\(2, 3\).*last two dimensions must be"):
        np.linalg.inv(np.ones((2, 3)))
    with pytest.raises(mx.base.MXNetError, match=r"_npi_solve.*rows"):
        np.linalg.solve(np.ones((3, 3)), np.ones(4))
    with pytest.raises(ValueError, match=r"pinv.*hermitian.*\(2, 3\)"):
        np.linalg.pinv(np.ones((2, 3)), hermitian=True)
    # a singular matrix: det 0, slogdet (0, -inf), as MXNet
    assert float(np.linalg.det(f64([[1.0, 2.0], [2.0, 4.0]]))) == 0.0
    s, l = np.linalg.slogdet(f64([[1.0, 2.0], [2.0, 4.0]]))
    assert float(s) == 0.0 and float(l) == -onp.inf


# ------------------------------------------------------------------ gradients

def _fd_check(fn, xs, sym=False, eps=1e-6, rtol=1e-5, atol=1e-7):
    """autograd of ``fn(*arrays)`` (a scalar) against central differences; with ``sym`` the
    first input's perturbations are symmetric (for functions of one triangle)."""
    arrs = [f64(x) for x in xs]
    for a in arrs:
        a.attach_grad()
    with autograd.record():
        out = fn(*arrs)
    out.backward()

    def f(vals):
        return float(fn(*[f64(v) for v in vals]).asnumpy())

    for k, x in enumerate(xs):
        g = arrs[k].grad.asnumpy()
        for idx in onp.ndindex(x.shape):
            hi = [v.copy() for v in xs]
            lo = [v.copy() for v in xs]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            if sym and k == 0 and idx[-1] != idx[-2]:
                j = idx[:-2] + (idx[-1], idx[-2])
                hi[k][j] += eps
                lo[k][j] -= eps
                num = (f(hi) - f(lo)) / (2 * eps)
                onp.testing.assert_allclose(g[idx] + g[j], num, rtol=rtol, atol=atol)
            else:
                num = (f(hi) - f(lo)) / (2 * eps)
                onp.testing.assert_allclose(g[idx], num, rtol=rtol, atol=atol)


W3 = rng.uniform(0.5, 1.5, (2, 3, 3))


def test_gradients_match_finite_differences():
    a = spd(3, (2,))
    b = rng.uniform(-1, 1, (2, 3, 2))
    w = f64(W3)
    _fd_check(lambda x: (np.linalg.inv(x) * w).sum(), [a])
    _fd_check(lambda x: (np.linalg.det(x) * f64([1.0, -2.0])).sum(), [a])
    _fd_check(lambda x: (np.linalg.slogdet(x)[1] * f64([1.0, 0.5])).sum(), [a])
    _fd_check(lambda x, y: (np.linalg.solve(x, y) * f64(W3[..., :2])).sum(), [a, b])
    _fd_check(lambda x, y: (np.linalg.solve(x, y) * f64(W3[..., 0])).sum(), [a, b[..., 0]])
    _fd_check(lambda x: (np.linalg.cholesky(x) * w).sum(), [a], sym=True)
    _fd_check(lambda x: np.linalg.tensorinv(x, ind=1).sum(), [spd(4)])


def test_spectral_gradients_match_finite_differences():
    a = rng.uniform(-1, 1, (2, 4))
    wl = f64([1.0, 0.3])
    wu = f64(rng.uniform(0.5, 1.5, (2, 2)))
    wv = f64(rng.uniform(0.5, 1.5, (2, 4)))

    def svd_loss(x):  # invariant under the singular vectors' signs
        ut, s, v = np.linalg.svd(x)
        return (s * wl).sum() + (ut * ut * wu).sum() + (v * v * wv).sum()

    _fd_check(svd_loss, [a])
    s = spd(3)

    def eigh_loss(x):
        w_, v_ = np.linalg.eigh(x)
        return (w_ * f64([1.0, 2.0, 3.0])).sum() + (v_ * v_ * f64(W3[0])).sum()

    _fd_check(eigh_loss, [s], sym=True)
    _fd_check(lambda x: np.linalg.norm(x, 2), [a])
    _fd_check(lambda x: np.linalg.norm(x, "nuc"), [a])


def test_zero_gradients_where_mxnet_has_them():
    x = f64(spd(2))
    x.attach_grad()
    with autograd.record():
        y = np.linalg.pinv(x).sum() + np.linalg.eig(x)[0].sum()
    y.backward()
    assert (x.grad.asnumpy() == 0).all()


# ------------------------------------------------------------------ bitwise and arcsinh

def test_bitwise_ops_match_numpy():
    a = onp.array([5, 3, -2, 127], dtype="int32")
    b = onp.array([3, 6, 7, -1], dtype="int32")
    x, y = np.array(a, dtype="int32"), np.array(b, dtype="int32")
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        got = getattr(np, name)(x, y)
        assert got.dtype == onp.int32
        onp.testing.assert_array_equal(got.asnumpy(), getattr(onp, name)(a, b))
        onp.testing.assert_array_equal(getattr(np, name)(x, 6).asnumpy(),
                                       getattr(onp, name)(a, 6))
        onp.testing.assert_array_equal(getattr(np, name)(6, x).asnumpy(),
                                       getattr(onp, name)(6, a))
    onp.testing.assert_array_equal((x & y).asnumpy(), a & b)
    onp.testing.assert_array_equal((x | 3).asnumpy(), a | 3)
    onp.testing.assert_array_equal((x ^ y).asnumpy(), a ^ b)
    onp.testing.assert_array_equal((~x).asnumpy(), ~a)
    onp.testing.assert_array_equal(np.invert(x).asnumpy(), onp.invert(a))
    # broadcasting, int64 beyond float precision, uint8 wrap-around of the scalar (as MXNet)
    c = np.array([[1], [3]], dtype="int64")
    onp.testing.assert_array_equal(np.bitwise_and(c, np.array([1, 2, 3], dtype="int64")).asnumpy(),
                                   [[1, 0, 1], [1, 2, 3]])
    big = np.array([2 ** 40 + 3], dtype="int64")
    assert np.bitwise_xor(big, 1).asnumpy()[0] == 2 ** 40 + 2
    assert np.bitwise_or(np.array([1, 2], dtype="uint8"), 300).asnumpy().tolist() == [45, 46]
    t = np.array([True, False], dtype="bool")
    assert np.bitwise_and(t, np.array([True, True], dtype="bool")).asnumpy().tolist() == [True, False]
    with pytest.raises(mx.base.MXNetError, match="integer or bool"):
        np.bitwise_and(np.array([1.0, 2.0]), np.array([1.0, 2.0]))


def test_arcsinh_higher_derivatives_are_analytic():
    """d²/dx² arcsinh = -x/(x²+1)^1.5 (MXNet 1.9.1 gives +x/(x²+1)^1.5, a sign error its own
    test_higher_order_grad encodes); d³ = (2x²-1)/(x²+1)^2.5."""
    v = onp.array([0.3, -0.7, 1.5])
    x = nd.array(v, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.arcsinh(x)
        g1 = autograd.grad(y, [x], create_graph=True)[0]
        g2 = autograd.grad(g1, [x], create_graph=True)[0]
    g2.backward()
    close(g1, 1 / onp.sqrt(v * v + 1))
    close(g2, -v / (v * v + 1) ** 1.5)
    close(x.grad, (2 * v * v - 1) / (v * v + 1) ** 2.5)


@pytest.mark.parametrize("fn", ["cholesky", "inv", "det", "slogdet", "eigh", "eig", "solve",
                                "cond"])
@pytest.mark.parametrize("shape", [(2, 3), (3,), (4, 2, 3)])
def test_non_square_errors_name_function_operator_and_shape(fn, shape):
    """The native shape inference's error, prefixed with the public function's name."""
    a = np.ones(shape)
    args = (a, np.ones(shape[:-1])) if fn == "solve" else (a,)
    kw = {"p": 1} if fn == "cond" else {}
    with pytest.raises(ValueError, match=rf"linalg\.{fn}: _\w+: .*{re.escape(str(shape))}"):
        getattr(np.linalg, fn)(*args, **kw)


def test_qr_raw_matches_numpy():
    rs = onp.random.RandomState(5)
    for shape in [(4, 3), (3, 5), (2, 4, 3), (3, 3)]:
        a = rs.uniform(-1, 1, shape)
        h, tau = np.linalg.qr(f64(a), mode="raw")
        if len(shape) == 2:
            eh, et = onp.linalg.qr(a, mode="raw")
        else:  # NumPy 1.23's raw mode is 2-d only: one matrix at a time
            pairs = [onp.linalg.qr(m, mode="raw") for m in a]
            eh, et = onp.stack([p[0] for p in pairs]), onp.stack([p[1] for p in pairs])
        assert h.shape == eh.shape and tau.shape == et.shape
        close(h, eh, rtol=1e-10, atol=1e-12)
        close(tau, et, rtol=1e-10, atol=1e-12)


def test_pinv_hermitian_reads_the_lower_triangle_like_numpy():
    rs = onp.random.RandomState(6)
    b = rs.uniform(-1, 1, (2, 4, 4))
    sym = b + b.transpose(0, 2, 1)
    sym[:, 0, 3] += 5.0  # an upper-triangle entry NumPy ignores with hermitian=True
    got = np.linalg.pinv(f64(sym), hermitian=True)
    close(got, onp.linalg.pinv(sym, hermitian=True), rtol=1e-8, atol=1e-10)
    # 2-d input, and the documented error for non-square input
    close(np.linalg.pinv(f64(sym[0]), hermitian=True), onp.linalg.pinv(sym[0], hermitian=True),
          rtol=1e-8, atol=1e-10)
