"""``ferromx.test_utils`` with MXNet 1.9.1's names and behaviour: environment scopes,
tolerances (checked against MXNet's recorded ``get_tols``), comparisons, random data, gradient
checks in MXNet's call shapes, generator statistics and the sym-only helpers' errors."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx import test_utils as tu
from ferromx.base import MXNetError

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "modules", "modules_1.9.1.json")
with open(FIX) as _f:
    REF = json.load(_f)
VAR = "FERROMX_TU_TEST_VAR"


# ---- environment -----------------------------------------------------------------------------
def test_environment_context_manager_restores():
    os.environ.pop(VAR, None)
    with tu.environment(VAR, "1"):
        assert os.environ[VAR] == "1"
        with tu.environment({VAR: "2", VAR + "_B": "x"}):
            assert os.environ[VAR] == "2" and os.environ[VAR + "_B"] == "x"
        assert os.environ[VAR] == "1" and VAR + "_B" not in os.environ
        with tu.environment(VAR, None):
            assert VAR not in os.environ
        assert os.environ[VAR] == "1"
    assert VAR not in os.environ
    with pytest.raises(KeyError), tu.environment(VAR, "3"):
        raise KeyError("boom")
    assert VAR not in os.environ
    with pytest.raises(ValueError, match="one dict arg or two args"):
        tu.environment(VAR)
    with pytest.raises(TypeError, match="must be str"):
        tu.environment(VAR, 3)


def test_environment_as_decorator_and_set_env_var():
    @tu.environment(VAR, "dec")
    def read():
        return os.environ.get(VAR)

    assert read() == "dec" and read() == "dec" and VAR not in os.environ
    assert tu.set_env_var(VAR, "a", default_val="none") == "none"
    assert tu.set_env_var(VAR, "b") == "a"
    del os.environ[VAR]
    assert tu.getenv(VAR) is None


# ---- tolerances and comparisons --------------------------------------------------------------
def test_get_tols_match_mxnet():
    for case in REF["tols"]:
        da, db = case["dtypes"]
        got = tu.get_tols(np.zeros(2, da), nd.zeros((2,), dtype=db), None, None)
        assert list(got) == case["tols"], case
    assert [tu.get_rtol(), tu.get_atol()] == REF["get_rtol_atol_default"]
    assert tu.get_tols(1.0, 2.0, 0.5, 0.25) == (0.5, 0.25)
    per_dtype = {np.dtype(np.float32): 0.3}
    assert tu.get_tols(np.zeros(1, np.float32), np.zeros(1, np.float32), per_dtype, None)[0] == 0.3
    assert tu.get_etol() == 0 and tu.get_etol(0.1) == 0.1
    assert tu.effective_dtype(nd.zeros((1,), dtype="float16")) == np.float16
    assert tu.default_numeric_eps()[np.dtype(np.float64)] == 2.0 ** -14


def test_assert_almost_equal_options():
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    tu.assert_almost_equal(nd.array(a), a + 1e-5)
    with pytest.raises(AssertionError, match=r"mine=.*theirs="):
        tu.assert_almost_equal(a, a + 0.5, rtol=1e-3, atol=1e-3, names=("mine", "theirs"))
    tu.assert_almost_equal(a, a + 0.5, rtol=0, atol=0.6)
    nan = np.array([np.nan, 1.0])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(nan, nan)
    tu.assert_almost_equal(nan, nan, equal_nan=True)
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))  # broadcasts by default
    with pytest.raises(AssertionError, match="not equal"):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))
    big = np.zeros(100)
    worst = r"mismatch at least 4\.0+%\)\.\nLocation of maximum error: \(0,\)"
    with pytest.raises(AssertionError, match=worst):
        tu.assert_almost_equal(big, big + 1, mismatches=(2, 3))
    tu.assert_allclose(nd.array([1.0]), np.array([1.0]))
    with pytest.raises(AssertionError):
        tu.assert_allclose(np.array([1.0]), np.array([1.0 + 1e-6]))
    tu.assert_almost_equal_ignore_nan(np.array([np.nan, 1.0]), np.array([5.0, 1.0]))
    tu.assert_almost_equal_with_err(np.arange(10.0), np.arange(10.0) + (np.arange(10) == 3),
                                    etol=0.2)
    with pytest.raises(AssertionError, match="error rate"):
        tu.assert_almost_equal_with_err(np.zeros(10), np.ones(10), etol=0.2)


def test_almost_equal_same_and_assert_exception():
    assert tu.almost_equal(1.0, 1.0 + 1e-6)  # float64 defaults: rtol 1e-5
    assert not tu.almost_equal(np.float32(1.0), np.float32(1.001))
    assert tu.same(nd.array([1, 2]), np.array([1, 2]))
    assert not tu.same(np.array([1, 2]), np.array([1, 2, 3]))
    tu.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError, match="ZeroDivisionError was not raised"):
        tu.assert_exception(lambda: 1, ZeroDivisionError)
    tu.compare_ndarray_tuple((nd.ones((2,)), (np.ones(1),)), (np.ones(2), (nd.ones((1,)),)))
    a = nd.zeros((2,))
    assert tu.same_array(a, a) and not tu.same_array(a, a.copy())


def test_np_reduce_and_collapse_sum_like():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(x, (0, 2), True, np.sum),
                                  x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(tu.np_reduce(x, 1, False, np.max), x.max(axis=1))
    np.testing.assert_array_equal(tu.np_reduce(x, None, False, np.sum), x.sum())
    np.testing.assert_array_equal(tu.collapse_sum_like(x, (3, 1)), x.sum(axis=(0, 2))[:, None])
    assert tu.collapse_sum_like(x, (0, 4)).shape == (0, 4)
    with pytest.raises(ValueError, match="does not broadcast"):
        tu.collapse_sum_like(x, (2, 4))


# ---- random data -----------------------------------------------------------------------------
def test_random_data_helpers():
    np.random.seed(3)
    arr = tu.rand_ndarray((3, 4), dtype="float64", ctx=mx.cpu(1))
    assert arr.shape == (3, 4) and np.dtype(arr.dtype) == np.float64 and arr.context == mx.cpu(1)
    assert np.dtype(tu.rand_ndarray((2,)).dtype) == np.float32
    with pytest.raises(MXNetError, match="dense storage only"):
        tu.rand_ndarray((3, 3), stype="csr")
    with pytest.raises(MXNetError, match="row_sparse"):
        tu.rand_sparse_ndarray((3, 3), "row_sparse")
    for _ in range(20):
        h, w = tu.rand_shape_2d(3, 4)
        assert 1 <= h <= 3 and 1 <= w <= 4
        assert all(1 <= d <= 5 for d in tu.rand_shape_3d(5, 5, 5))
        assert all(0 <= d <= 2 for d in tu.rand_shape_nd(4, 2, allow_zero_size=True))
    one = tu.random_arrays((2, 3))
    two = tu.random_arrays((2,), ())
    assert one.shape == (2, 3) and one.dtype == np.float32 and [t.shape for t in two] == [(2,), ()]
    (u,) = tu.random_uniform_arrays((50,), low=2.0, high=3.0)
    assert ((u >= 2) & (u < 3)).all()
    pick = tu.random_sample(list(range(10)), 4)
    assert len(set(pick)) == 4 and set(pick) <= set(range(10))
    with pytest.raises(ValueError):
        tu.random_sample([1, 2], 3)


def test_matrices_with_known_spectra():
    np.random.seed(0)
    q = tu.new_orthonormal_matrix_2d(4)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-10)
    m = tu.new_matrix_with_real_eigvals_nd((2, 3, 3))
    assert m.shape == (2, 3, 3)
    assert np.allclose(np.linalg.eigvals(m).imag, 0, atol=1e-8)
    s = tu.new_sym_matrix_with_real_eigvals_nd((2, 3, 3))
    np.testing.assert_allclose(s, np.swapaxes(s, -1, -2), atol=1e-10)
    ident = tu.get_identity_mat_batch(3)
    assert ident.shape == (2, 3, 3) and tu.same(ident[1], np.eye(3))
    np.testing.assert_array_equal(tu.create_2d_tensor(3, 2).asnumpy(), [[0, 0], [1, 1], [2, 2]])


def test_default_context_follows_set_default_context():
    assert tu.default_context() == mx.cpu(0)
    tu.set_default_context(mx.cpu(2))
    try:
        assert tu.default_context() == mx.cpu(2) == mx.current_context()
        assert tu.rand_ndarray((2,)).context == mx.cpu(2)
    finally:
        tu.set_default_context(None)
    assert tu.default_context() == mx.cpu(0) and tu.default_dtype() is np.float32


# ---- gradients -------------------------------------------------------------------------------
def test_check_numeric_gradient_mxnet_call_shapes():
    rs = np.random.RandomState(0)
    a, b = rs.uniform(0.5, 1.5, (3, 2)), rs.uniform(0.5, 1.5, (3, 2))
    tu.check_numeric_gradient(lambda x, y: x * y + nd.exp(x), {"x": a, "y": b})
    tu.check_numeric_gradient(lambda x, y: x * y, [a, b], grad_nodes=[1])
    tu.check_numeric_gradient(lambda x, y: x * y, {"x": a, "y": b}, grad_nodes={"x": "add"})
    tu.check_numeric_gradient(lambda x, scale: x * scale, [a], aux_states=[b])
    tu.check_numeric_gradient(lambda x: nd.tanh(x), [nd.array(a, dtype="float32")],
                              dtype=np.float32, numeric_eps=1e-2, rtol=1e-2, atol=1e-2)
    with pytest.raises(ValueError, match="not an input"):
        tu.check_numeric_gradient(lambda x: x, {"x": a}, grad_nodes=["z"])
    with pytest.raises(AssertionError, match="numeric gradient"):
        tu.check_numeric_gradient(lambda x: x * nd.array(x.asnumpy(), dtype="float64"), [a])


def test_check_numeric_gradient_train_mode_switch():
    def f(x):  # differs between training and prediction mode
        return x * (2.0 if autograd.is_training() else 3.0)

    x = np.ones((2,))
    tu.check_numeric_gradient(f, [x], use_forward_train=True)
    with pytest.raises(AssertionError):
        tu.check_numeric_gradient(f, [x], use_forward_train=False)


def test_unavailable_helpers_raise():
    with pytest.raises(TypeError, match="Symbol or a function"):
        tu.check_numeric_gradient(object(), [np.ones(2)])
    for fn, args in ((tu.check_speed, (None,)), (tu.numeric_grad, (None, {}))):
        with pytest.raises(MXNetError, match="not available in ferromx"):
            fn(*args)
    with pytest.raises(MXNetError):
        tu.download_model("m")


def test_gluon_consistency_and_compare_optimizer():
    def builder(prefix=None):
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(3, activation="tanh"), gluon.nn.Dense(2))
        return net

    data = [nd.array(np.random.RandomState(1).normal(size=(4, 5)).astype(np.float32))]
    tu.check_gluon_hybridize_consistency(builder, data)
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
                         mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), (3, 4), "float32")
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                             mx.optimizer.SGD(learning_rate=0.2), (3, 4), "float32")


# ---- environment-style helpers ---------------------------------------------------------------
def test_retry_and_platform_flags(monkeypatch):
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 3

    flaky()
    assert len(calls) == 3

    @tu.retry(2)
    def always():
        raise AssertionError("no")

    with pytest.raises(AssertionError, match="no"):
        always()
    assert tu.is_op_runnable() and not tu.has_tvm_ops() and list(tu.list_gpus()) == []
    monkeypatch.setenv("CD_JOB", "1")
    assert tu.is_cd_run()
    monkeypatch.setenv("CD_JOB", "0")
    assert not tu.is_cd_run()


def test_download_file_url_and_offline_error(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"payload")
    got = tu.download(src.as_uri(), dirname=str(tmp_path / "out"))
    assert got == str(tmp_path / "out" / "src.bin")
    with open(got, "rb") as f:
        assert f.read() == b"payload"
    src.write_bytes(b"changed")
    tu.download(src.as_uri(), dirname=str(tmp_path / "out"))  # exists: kept
    with open(got, "rb") as f:
        assert f.read() == b"payload"
    with pytest.raises(MXNetError, match="could not fetch"):
        tu.download((tmp_path / "missing.bin").as_uri(), dirname=str(tmp_path), retries=0)


def test_dummy_iter_and_discard_stderr():
    it = tu.DummyIter(iter([nd.ones((1,)), nd.zeros((1,))]))
    first = next(it)
    assert next(it) is first and it.next() is first
    with tu.discard_stderr():
        pass


def test_generator_statistics():
    rs = np.random.RandomState(7)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: p, 5)
    assert buckets[0] == (0.0, 0.2) and probs == [0.2] * 5
    ps = tu.verify_generator(lambda n: rs.uniform(size=n), buckets, probs, nsamples=20000,
                             nrepeat=3)
    assert len(ps) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: rs.uniform(size=n) ** 2, buckets, probs, nsamples=20000,
                            nrepeat=3)
    assert tu.mean_check(lambda n: rs.normal(0, 1, n), 0, 1, nsamples=20000)
    assert not tu.mean_check(lambda n: rs.normal(0.5, 1, n), 0, 1, nsamples=20000)
    assert tu.var_check(lambda n: rs.normal(0, 2, n), 2, nsamples=20000)
    p, obs, _ = tu.chi_square_check(lambda n: rs.randint(0, 3, n), [0, 1, 2], [1 / 3] * 3,
                                    nsamples=3000)
    assert obs.sum() == 3000 and 0 <= p <= 1
