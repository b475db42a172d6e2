# ruff: noqa: B023  (closures are called inside the iteration that defines them)
"""The backward of a recorded elementwise chain is one fused pass too: the head
gradient (`ones_like`) is a constant folded into its readers, and the write of the
gradient into `x.grad` (`_copyto`) is the fused op's own store. Constants (`zeros`,
`ones`, `full`) are elementwise operators of a chain, evaluated once at the flush
with the kernels that would run, so results stay bitwise those of the unfused ops."""

import json

import numpy as np
import pytest
from ferromx import _native, autograd, nd, profiler
from test_fusion import _both


@pytest.fixture(autouse=True)
def _fusion_on():
    prev = _native.set_fusion(True)
    yield
    _native.set_fusion(prev)


def _ops_run(fn, tmp_path):
    """Names of the engine ops `fn` ran (trace events of the profiler)."""
    fname = str(tmp_path / "trace.json")
    nd.waitall()
    profiler.set_config(filename=fname, profile_all=True)
    profiler.set_state("run")
    fn()
    nd.waitall()
    profiler.set_state("stop")
    profiler.dump()
    with open(fname) as f:
        return [e["name"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "frontend"]


def _fwd_bwd(xn, req="write"):
    x = nd.array(xn)
    x.attach_grad(grad_req=req)
    if req == "add":
        x.grad[:] = 0.5
    with autograd.record():
        y = nd.exp(x * 2 + 1) * x - (x * 2 + 1)
    y.backward()
    return x.grad.asnumpy()


@pytest.mark.parametrize("req", ["write", "add"])
def test_chain_backward_equals_unfused_bitwise(req):
    xn = np.random.default_rng(0).standard_normal(70_000).astype(np.float32)
    f, u = _both(lambda: _fwd_bwd(xn, req))
    assert f.tobytes() == u.tobytes()
    ref = np.exp(2 * xn + 1) * (2 * xn + 1) - 2 + (0.5 if req == "add" else 0.0)
    np.testing.assert_allclose(f, ref, rtol=1e-5, atol=1e-5)


def test_chain_backward_is_one_fused_op_writing_the_gradient(tmp_path):
    xn = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
    x = nd.array(xn)
    x.attach_grad()
    with autograd.record():
        y = nd.exp(x * 2 + 1) * x - (x * 2 + 1)
    y.wait_to_read()
    names = _ops_run(lambda: y.backward(), tmp_path)
    fused = [n for n in names if n.startswith("_fused(")]
    assert len(fused) == 1, names
    assert "ones_like" in fused[0] and fused[0].endswith("_copyto)"), fused
    assert not [n for n in names if n in ("ones_like", "_copyto", "_copy")], names


def test_constants_fold_bitwise():
    rng = np.random.default_rng(2)
    for dt in ("float32", "float16", "float64", "int32", "int64", "uint8"):
        xn = (rng.uniform(1, 5, 5000)).astype(dt)

        def prog():
            x = nd.array(xn, dtype=dt)
            a = nd.ones(x.shape, dtype=dt) * x  # constant folded into a scalar form
            b = x - nd.full(x.shape, 3, dtype=dt)
            c = -nd.ones(x.shape, dtype=dt) + nd.zeros(x.shape, dtype=dt)  # constant only
            d = nd.full(x.shape, 7, dtype=dt) / (x + 1)
            return [v.asnumpy() for v in (a, b, c, d)]

        f, u = _both(prog)
        for i, (p, q) in enumerate(zip(f, u)):
            assert p.dtype == q.dtype and p.tobytes() == q.tobytes(), (dt, i)


def test_fold_of_sqrt_of_zeros_is_counted_by_the_profiler(tmp_path):
    def run():
        z = nd.zeros((8,))
        y = nd.sqrt(z) + 1
        assert y.asnumpy().tolist() == [1.0] * 8

    names = _ops_run(run, tmp_path)
    fused = [n for n in names if n.startswith("_fused(")]
    assert fused == ["_fused(_zeros,sqrt,_plus_scalar)"], names


def test_a_constant_left_live_is_stored():
    z = nd.zeros((3,))
    y = z + 2
    assert z.asnumpy().tolist() == [0.0] * 3 and y.asnumpy().tolist() == [2.0] * 3


def test_assignment_into_a_view_fuses_and_keeps_the_rest():
    base = nd.array(np.arange(8, dtype=np.float32))
    x = nd.array(np.ones(4, dtype=np.float32))
    base[2:6] = x * 3 + 1
    assert base.asnumpy().tolist() == [0, 1, 4, 4, 4, 4, 6, 7]
    # the destination is read by the chain: the copy waits for the chain before it
    y = base[0:4]
    y[:] = y * 2
    assert base.asnumpy().tolist() == [0, 2, 8, 8, 4, 4, 6, 7]


def test_clip_and_where_fuse_bitwise(tmp_path):
    rng = np.random.default_rng(3)
    for dt in ("float32", "float16", "int32", "uint8"):
        xn = rng.uniform(0, 50, 6000).astype(dt)
        cn = (rng.uniform(0, 1, 6000) > 0.5).astype("float32")

        def prog():
            x, c = nd.array(xn, dtype=dt), nd.array(cn)
            a = nd.clip(x * 2, 10, 60) + 1
            b = nd.where(c, a, x - 1)
            return [v.asnumpy() for v in (a, b)]

        f, u = _both(prog)
        for p, q in zip(f, u):
            assert p.dtype == q.dtype and p.tobytes() == q.tobytes(), dt
    x, c = nd.array(rng.uniform(-1, 1, 64).astype("float32")), nd.array((np.arange(64) % 2).astype("float32"))
    x.wait_to_read()
    c.wait_to_read()
    names = _ops_run(lambda: nd.where(c, nd.clip(x, -0.5, 0.5) * 2, x).wait_to_read(), tmp_path)
    assert [n for n in names if n.startswith("_fused(")] == ["_fused(clip,_mul_scalar,where)"], names
    want = np.where(c.asnumpy() != 0, np.clip(x.asnumpy(), -0.5, 0.5) * 2, x.asnumpy())
    np.testing.assert_array_equal(nd.where(c, nd.clip(x, -0.5, 0.5) * 2, x).asnumpy(), want)


def test_clip_and_where_gradients_through_a_fused_chain():
    xn = np.array([-2.0, -0.2, 0.3, 1.5], dtype=np.float32)
    cn = np.array([1, 0, 1, 0], dtype=np.float32)

    def run():
        x = nd.array(xn)
        x.attach_grad()
        with autograd.record():
            y = nd.where(nd.array(cn), nd.clip(x * 3, -1, 1), x * x)
        y.backward()
        return x.grad.asnumpy()

    f, u = _both(run)
    assert f.tobytes() == u.tobytes()
    want = np.where(cn != 0, 3.0 * ((xn * 3 >= -1) & (xn * 3 <= 1)), 2 * xn)
    np.testing.assert_allclose(f, want, rtol=1e-6)
