"""MXNet's bulk execution: ``engine.bulk(size)`` / ``set_bulk_size`` push a thread's
operator calls as engine ops of up to ``size`` calls, with the values, order and errors of
separate pushes."""

import sys

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native, autograd, nd
from trace_helper import trace_names


def test_bulk_collects_calls_and_gives_the_values_of_separate_pushes(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x, w = nd.array(a), nd.array(a.T)
    got = {}

    def prog():
        with mx.engine.bulk(8):
            y = nd.dot(x, w)
            z = nd.relu(y - 50)
            s = nd.sum(z, axis=1)
            assert _native.bulk_pending() == 4  # dot, the scalar minus, relu, sum
        assert _native.bulk_pending() == 0
        got["s"] = s.asnumpy()

    names = trace_names(tmp_path, prog)
    assert any(n.startswith("_bulk(dot,") for n in names), names
    np.testing.assert_allclose(got["s"], np.maximum(a @ a.T - 50, 0).sum(axis=1), rtol=1e-6)


def test_a_read_inside_bulk_flushes_and_size_bounds_each_bulk():
    x = nd.ones((4,))
    with mx.engine.bulk(3):
        for _ in range(7):
            x = x + 1
        assert _native.bulk_pending() == 1  # bulks of 3 went at the 3rd and 6th call
        assert x.asnumpy().tolist() == [8.0] * 4  # a read hands the bulk over
        assert _native.bulk_pending() == 0
    assert mx.engine.set_bulk_size(0) == 0


def test_set_bulk_size_returns_the_previous_size_and_restores():
    assert mx.engine.set_bulk_size(5) == 0
    try:
        assert mx.engine.set_bulk_size(9) == 5
        with mx.engine.bulk(2):
            assert mx.engine.set_bulk_size(2) == 2
        assert mx.engine.set_bulk_size(9) == 9
    finally:
        mx.engine.set_bulk_size(0)


def test_in_place_writes_and_autograd_inside_bulk():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.engine.bulk(16):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
        z = x * 1
        x[:] = 0  # an engine closure: the collected calls go first
    assert z.asnumpy().tolist() == [1.0, 2.0, 3.0]
    assert x.grad.asnumpy().tolist() == [2.0, 4.0, 6.0]
    assert x.asnumpy().tolist() == [0.0, 0.0, 0.0]


def test_a_failing_call_in_a_bulk_names_its_operator_and_line():
    x = nd.ones((3, 2))
    with mx.engine.bulk(8):
        y = x * 2
        line = sys._getframe().f_lineno + 1
        t = nd.take(y, nd.array([0, 9]), mode="raise")
    with pytest.raises(IndexError) as ei:
        t.asnumpy()
    msg = str(ei.value)
    assert "take" in msg and "out of bounds" in msg and f"test_bulk.py:{line}" in msg, msg
    assert x.asnumpy().tolist() == [[1.0, 1.0]] * 3


class _Chain(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        for _ in range(12):
            x = F.sin(x)
        return x


def test_a_bulk_frees_each_intermediate_after_its_last_reader():
    # 12 chained 4 MiB results in one bulk: each is freed once the next call ran, so the
    # peak stays at a few buffers (holding every call's views until the bulk ended kept all
    # twelve: ~100 MB more peak RSS in a ResNet-18 training step).
    net = _Chain()
    net.hybridize()
    x = nd.ones((1 << 20,))
    # (No waitall: it would raise an earlier test's failure still referenced by pytest.)
    net(x).wait_to_read()
    base = mx.engine.memory_info()["live"]
    mx.engine.reset_memory_peaks()
    y = net(x)
    y.wait_to_read()
    peak = mx.engine.memory_info()["peak_live"] - base
    assert peak <= 4 * (4 << 20), f"peak {peak / 2**20:.1f} MiB over the live baseline"
    np.testing.assert_allclose(y.asnumpy()[:3], np.full(3, _sin12(1.0)), rtol=1e-5)


def _sin12(v):
    for _ in range(12):
        v = np.sin(np.float32(v))
    return v
