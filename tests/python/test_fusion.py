# ruff: noqa: B023  (closures are called inside the iteration that defines them)
"""Eager fusion: elementwise chains held back and merged into one engine op.

Fused and unfused runs of the same program must agree bitwise (the fused
kernel applies each operator's own per-element code) and raise the same
errors; views, in-place writes, autograd and reads in the middle included.
"""

import inspect
import json
import os
import subprocess
import sys

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native, autograd, nd
from ferromx.base import MXNetError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture(autouse=True)
def _fusion_on():
    prev = _native.set_fusion(True)
    yield
    _native.set_fusion(prev)


def _line():
    return inspect.currentframe().f_back.f_lineno


def _chain(x):
    return nd.exp(x * 2 + 1) * x - (x * 2 + 1)


def _both(fn):
    """Runs `fn` fused and unfused; returns both results (NumPy)."""
    out = []
    for on in (True, False):
        _native.set_fusion(on)
        out.append(fn())
    _native.set_fusion(True)
    return out


def test_chain_is_held_back_and_flushed_by_a_read():
    x = nd.array(np.linspace(-2, 2, 12).reshape(3, 4))
    x.wait_to_read()
    y = _chain(x)
    assert _native.fusion_pending() > 0
    got = y.asnumpy()
    assert _native.fusion_pending() == 0
    xn = x.asnumpy()
    ref = (np.exp(xn * np.float32(2) + np.float32(1)) * xn - (xn * np.float32(2) + np.float32(1)))
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_fused_equals_unfused_bitwise_large():
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(300_000).astype(np.float32)
    f, u = _both(lambda: _chain(nd.array(xn)).asnumpy())
    assert f.tobytes() == u.tobytes()


def test_register_programs_equal_unfused_bitwise_with_specials():
    # Long float32 chains of the steps that run in registers on AVX-512
    # (fusion/lanes.rs), over values with every special: fused and unfused agree.
    rng = np.random.default_rng(1)
    n = 5000 + 77
    xn = (rng.standard_normal(n) * 4).astype(np.float32)
    yn = (rng.standard_normal(n) * 4).astype(np.float32)
    specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -1e-40, 88.8, -104.5, 3e38], np.float32)
    xn[::7] = np.resize(specials, xn[::7].shape)
    yn[3::11] = np.resize(specials[::-1], yn[3::11].shape)

    def programs():
        x, y = nd.array(xn), nd.array(yn)
        s = nd.sigmoid(x)
        outs = [
            (1 - s) * s * y,
            nd.relu(x * y - 0.5) / (nd.abs(y) + 1),
            nd.sqrt(nd.square(x) + 1) - (-y),
            nd.exp(x / 3) * 2 - y * y,
            nd.clip(x * y, -1, 2) + nd.maximum(x, y) * 0.5 - nd.minimum(y, 1.0),
        ]
        return [o.asnumpy() for o in outs]

    fused, unfused = _both(programs)
    for f, u in zip(fused, unfused):
        assert np.array_equal(f, u, equal_nan=True)
        assert np.array_equal(np.signbit(f[~np.isnan(f)]), np.signbit(u[~np.isnan(u)]))


def test_every_flush_trigger():
    x = nd.ones((4,))
    assert _native.fusion_pending() == 1  # a constant is elementwise too
    x.wait_to_read()
    for trigger in (
        lambda y: y.wait_to_read(),
        lambda y: y.is_ready(),  # non-blocking, but it must see the pending write
        lambda y: nd.waitall(),
        lambda y: nd.sum(y),  # a non-elementwise op
        lambda y: y.asnumpy_async(),
    ):
        y = x + 1
        assert _native.fusion_pending() == 1
        trigger(y)
        assert _native.fusion_pending() == 0
    # The bounded chain length.
    y = x
    for _ in range(100):
        y = y + 1
        assert _native.fusion_pending() <= 32
    assert y.asnumpy().tolist() == [101.0] * 4


def test_live_intermediates_are_materialized_dead_ones_not_needed():
    x = nd.array([1.0, 2.0, 3.0])
    a = x * 2  # kept alive by this handle
    b = nd.exp(a + 1)
    v = a.reshape((3, 1))  # a view of a: reads its storage
    c = b - a
    np.testing.assert_allclose(c.asnumpy(), np.exp([3.0, 5.0, 7.0]) - [2.0, 4.0, 6.0], rtol=1e-6)
    assert a.asnumpy().tolist() == [2.0, 4.0, 6.0]
    assert v.asnumpy().ravel().tolist() == [2.0, 4.0, 6.0]


def test_views_and_in_place_writes_keep_their_order():
    def prog():
        x = nd.array(np.arange(6, dtype=np.float32))
        a = x * 3
        s = a[2:4]  # a slice view of a pending value
        b = s + 1  # reads part of a: flushes first
        x += 10  # in place on an input of the chain
        c = a + x
        x[0] = -1.0
        d = nd.sqrt(x + 100)
        return [t.asnumpy() for t in (a, b, c, d, x)]

    f, u = _both(prog)
    for p, q in zip(f, u):
        assert p.tobytes() == q.tobytes()


def test_dtype_casts_and_scalar_ops_fuse():
    def prog():
        x = nd.array([0.5, 1.5, -2.5, 7.25], dtype="float32")
        i = (x * 4).astype("int32")
        j = (i + 3) % 5
        k = j.astype("float64") / 3
        m = nd.maximum(k, k * 0.5) > 0.4
        return [t.asnumpy() for t in (i, j, k, m)]

    f, u = _both(prog)
    for p, q in zip(f, u):
        assert p.dtype == q.dtype and p.tobytes() == q.tobytes()


def test_error_names_the_original_op_and_line_and_spares_independent_values():
    def prog():
        x = nd.ones((3,))
        y = nd.ones((3,))
        y.wait_to_read()
        line = _line() + 1
        _native._fail_op(x, "value", "bad input")
        a = x * 2 + 1  # depends on the failed x
        b = y * 3 + 1  # does not
        with pytest.raises(ValueError) as ei:
            a.asnumpy()
        msg = str(ei.value)
        assert "_test_fail" in msg and "bad input" in msg and f"test_fusion.py:{line}" in msg, msg
        return b.asnumpy(), a.asnumpy()

    f, u = _both(prog)
    assert f[0].tolist() == u[0].tolist() == [4.0, 4.0, 4.0]


def test_profiler_shows_the_fused_op_with_its_names(tmp_path):
    fname = str(tmp_path / "trace.json")
    mx.profiler.set_config(filename=fname, profile_all=True)
    mx.profiler.set_state("run")
    x = nd.ones((8,))
    x.wait_to_read()
    y = nd.exp(x * 2 + 1)
    y.wait_to_read()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(fname) as f:
        names = [e.get("name", "") for e in json.load(f)["traceEvents"]]
    fused = [n for n in names if n.startswith("_fused(")]
    assert any("_mul_scalar" in n and "exp" in n for n in fused), fused


def test_autograd_through_fused_chains():
    def prog():
        x = nd.array(np.linspace(-1, 1, 10, dtype=np.float32))
        x.attach_grad()
        with autograd.record():
            y = _chain(x)
            z = (y * y).sum()
        z.backward()
        return y.asnumpy(), x.grad.asnumpy()

    f, u = _both(prog)
    assert f[0].tobytes() == u[0].tobytes()
    assert f[1].tobytes() == u[1].tobytes()


def test_fusion_env_switch_off():
    code = "from ferromx import _native, nd; y = nd.ones((2,)) + 1; print(_native.set_fusion(), _native.fusion_pending())"
    env = dict(os.environ, FERROMX_FUSION="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "0"]


# ---- property test: random elementwise programs, fused vs unfused ----------

_UNARY = ["exp", "negative", "abs", "sqrt", "tanh", "sigmoid", "floor", "square", "relu", "log1p"]
_BIN = ["__add__", "__sub__", "__mul__", "__truediv__", "maximum", "minimum"]
_STEP = st.one_of(
    st.tuples(st.just("u"), st.sampled_from(_UNARY), st.integers(0, 99)),
    st.tuples(st.just("b"), st.sampled_from(_BIN), st.integers(0, 99), st.integers(0, 99)),
    st.tuples(st.just("s"), st.sampled_from(_BIN[:4]), st.integers(0, 99), st.floats(-3, 3, width=32)),
    st.tuples(st.just("cast"), st.sampled_from(["float64", "float32", "int32"]), st.integers(0, 99)),
    st.tuples(st.just("read"), st.integers(0, 99)),
    st.tuples(st.just("view"), st.integers(0, 99)),
    st.tuples(st.just("inplace"), st.integers(0, 99), st.floats(-2, 2, width=32)),
    st.tuples(st.just("drop"), st.integers(0, 99)),
    st.tuples(st.just("bad"), st.integers(0, 99)),
    st.tuples(st.just("const"), st.sampled_from(["zeros", "ones"]), st.integers(0, 99)),
    st.tuples(st.just("clip"), st.integers(0, 99), st.floats(-1, 1, width=32), st.floats(0, 2, width=32)),
    st.tuples(st.just("where"), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)),
)


def _run_program(seed, steps, record):
    """Runs a program; returns every value (bytes) and the errors seen, in order."""
    rng = np.random.default_rng(seed)
    base = [nd.array(rng.uniform(0.1, 2.0, (3, 4)).astype(np.float32)) for _ in range(2)]
    vals = list(base)
    if record:
        for b in base:
            b.attach_grad()
    seen = []

    def pick(i):
        return vals[i % len(vals)]

    def attempt(f):
        try:
            r = f()
        except (MXNetError, ValueError, TypeError) as e:
            seen.append(type(e).__name__ + ":" + str(e).split("\n")[0][:60])
            return None
        return r

    with autograd.record() if record else _nullcontext():
        for s in steps:
            kind = s[0]
            if kind == "u":
                r = attempt(lambda: getattr(nd, s[1])(pick(s[2])))
            elif kind == "b":
                a, b = pick(s[2]), pick(s[3])
                r = attempt(lambda: getattr(nd, s[1])(a, b) if s[1] in ("maximum", "minimum")
                            else getattr(a, s[1])(b))
            elif kind == "s":
                r = attempt(lambda: getattr(pick(s[2]), s[1])(float(s[3])))
            elif kind == "cast":
                r = attempt(lambda: pick(s[2]).astype(s[1]))
            elif kind == "const":
                r = attempt(lambda: getattr(nd, s[1] + "_like")(pick(s[2])))
            elif kind == "clip":
                r = attempt(lambda: nd.clip(pick(s[1]), float(s[2]), float(s[2]) + float(s[3])))
            elif kind == "where":
                r = attempt(lambda: nd.where(pick(s[1]) > 1, pick(s[2]), pick(s[3])))
            elif kind == "read":
                seen.append(attempt(lambda: pick(s[1]).asnumpy().tobytes()))
                r = None
            elif kind == "view":
                r = pick(s[1]).reshape((-1,))[1:]
            elif kind == "inplace" and not record:
                v = pick(s[1])
                attempt(lambda: v.__iadd__(float(s[2])))
                r = None
            elif kind == "drop" and len(vals) > 2:
                vals.pop(s[1] % len(vals))
                r = None
            elif kind == "bad" and not record:
                _native._fail_op(nd.zeros((3, 4)), "value", "bad input")
                r = None
            else:
                r = None
            if r is not None:
                vals.append(r)
        if record:
            z = attempt(lambda: sum(((v.astype("float32") if v.dtype != np.float32 else v).sum()
                                     for v in vals[2:] if v.shape == (3, 4)), nd.zeros((1,))))
    if record and z is not None and z.shape == (1,) and len(vals) > 2:
        attempt(lambda: z.backward())
        for b in base:
            seen.append(attempt(lambda: b.grad.asnumpy().tobytes()))
    for v in vals:
        seen.append(attempt(lambda: (str(v.dtype), v.shape, v.asnumpy().tobytes())))
    # a discarded failure ("bad") is raised by the next waitall, as in MXNet
    attempt(nd.waitall)
    return seen


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), steps=st.lists(_STEP, max_size=25), record=st.booleans())
def test_random_programs_fused_equal_unfused(seed, steps, record):
    with np.errstate(all="ignore"):
        f, u = _both(lambda: _run_program(seed, steps, record))
    assert f == u


def test_a_repeated_call_is_computed_once(tmp_path):
    # `x*2+1` written twice is one value in the fused op: five steps, not seven,
    # and the result is bitwise what the unfused calls give.
    fname = str(tmp_path / "trace.json")
    xn = np.random.default_rng(1).standard_normal(5000).astype(np.float32)
    x = nd.array(xn)
    x.wait_to_read()
    mx.profiler.set_config(filename=fname, profile_all=True)
    mx.profiler.set_state("run")
    y = nd.exp(x * 2 + 1) * x - (x * 2 + 1)
    got = y.asnumpy()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(fname) as f:
        names = [e.get("name", "") for e in json.load(f)["traceEvents"]]
    fused = [n for n in names if n.startswith("_fused(")]
    assert fused, names
    steps = fused[0][len("_fused("):-1].split(",")
    assert steps.count("_mul_scalar") == 1 and steps.count("_plus_scalar") == 1, steps
    assert len(steps) == 5, steps
    _native.set_fusion(False)
    try:
        ref = (nd.exp(x * 2 + 1) * x - (x * 2 + 1)).asnumpy()
    finally:
        _native.set_fusion(True)
    assert got.tobytes() == ref.tobytes()
