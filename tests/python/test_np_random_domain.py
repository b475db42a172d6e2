"""``np.random`` samplers check array parameters on the engine (``_check_domain``), as
MXNet 1.9.1's kernels do: the call returns at once without reading the parameter to the
host, and a value outside the domain is a ``ValueError`` at the read with MXNet's wording
(``expect scale >= 0``), the function's name and the bad value. Numbers are checked at the
call."""

import ferromx as mx
import numpy as onp
import pytest
from ferromx import _native, np

BAD = [
    ("exponential", {"scale": [-1.0, 1.0]}, "exponential: expect scale >= 0"),
    ("rayleigh", {"scale": [1.0, -2.0]}, "rayleigh: expect scale >= 0"),
    ("weibull", {"a": [0.0]}, "weibull: expect a > 0"),
    ("pareto", {"a": [-1.0]}, "pareto: expect a > 0"),
    ("power", {"a": [0.0, 1.0]}, "power: expect a > 0"),
    ("gamma", {"shape": [1.0], "scale": [-1.0]}, "gamma: expect scale > 0"),
    ("gamma", {"shape": [0.0], "scale": [1.0]}, "gamma: expect shape > 0"),
]


@pytest.fixture
def guard():
    prev = mx.engine.set_sync_warning("error")
    yield
    mx.engine.set_sync_warning(prev)


@pytest.mark.parametrize("fn,params,msg", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_an_array_outside_the_domain_fails_at_the_read(fn, params, msg, guard):
    kw = {k: np.array(v) for k, v in params.items()}
    with mx.engine.no_sync():  # a blocking read at the call would raise SyncError here
        out = getattr(np.random, fn)(**kw)
    with pytest.raises(ValueError, match=msg) as e:
        out.asnumpy()
    assert "got" in str(e.value)


def test_numbers_are_checked_at_the_call():
    with pytest.raises(ValueError, match="exponential: expect scale >= 0"):
        np.random.exponential(scale=-1.0)
    with pytest.raises(ValueError, match="weibull: expect a > 0"):
        np.random.weibull(a=0)


def test_valid_arrays_sample_without_a_host_read(guard):
    with mx.engine.no_sync():
        draws = [np.random.exponential(scale=np.array([1.0, 2.0]), size=(4000, 2)),
                 np.random.weibull(a=np.array([2.0]), size=(4000,)),
                 np.random.gamma(np.array([2.0]), np.array([0.5]), size=(4000,))]
    e, w, g = (d.asnumpy() for d in draws)
    assert e.shape == (4000, 2) and (e >= 0).all() and (w >= 0).all() and (g > 0).all()
    onp.testing.assert_allclose(e.mean(axis=0), [1.0, 2.0], rtol=0.15)
    onp.testing.assert_allclose(g.mean(), 1.0, rtol=0.15)  # shape * scale


def test_the_check_passes_values_through_with_a_gradient():
    x = np.array([0.5, 1.5, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = _native.invoke_np("_check_domain", [x], lower=0.0, inclusive=False, what="w",
                              caller="c")
        (y * y).sum().backward()
    onp.testing.assert_array_equal(y.asnumpy(), [0.5, 1.5, 3.0])
    onp.testing.assert_allclose(x.grad.asnumpy(), [1.0, 3.0, 6.0])
    # the bound itself: in the domain only when inclusive
    z = _native.invoke_np("_check_domain", [np.array([0.0])], lower=0.0, inclusive=True,
                          what="w", caller="c")
    assert float(z.asnumpy()[0]) == 0.0
    nan = _native.invoke_np("_check_domain", [np.array([float("nan")])], lower=0.0,
                            what="expect p >= 0", caller="c")
    with pytest.raises(ValueError, match="c: expect p >= 0"):
        nan.asnumpy()


def test_bernoulli_prob_outside_0_1_fails_at_the_read(guard):
    with mx.engine.no_sync():
        out = mx.npx.random.bernoulli(prob=np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match=r"bernoulli: prob must be in \[0, 1\] \(got 1.5\)"):
        out.asnumpy()
    ok = mx.npx.random.bernoulli(prob=np.array([0.0, 1.0]), size=(50, 2)).asnumpy()
    assert (ok[:, 0] == 0).all() and (ok[:, 1] == 1).all()
