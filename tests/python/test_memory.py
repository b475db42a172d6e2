"""Memory behaviour of training: what the autograd tape and a hybridized forward keep.

Measured with the storage pool's live-bytes counter (``engine.memory_info()['live']``,
bytes of buffers owned by live arrays), after ``waitall`` so that pending ops no longer
hold what they read. Each test compares deltas within itself, so arrays other tests
left alive do not matter.
"""

import gc
import threading

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, engine, nd

N = 256 * 1024  # float32 elements: 1 MiB per array, its own pool class exactly
NBYTES = 4 * N


def live():
    nd.waitall()
    gc.collect()
    return engine.memory_info()["live"]


def variable():
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, N).astype("float32"))
    x.attach_grad()
    return x


def test_live_counter_follows_an_array():
    before = live()
    a = nd.ones((N,))
    assert live() - before >= NBYTES
    info = engine.memory_info()
    assert info["peak_live"] >= info["live"]
    assert info["peak_held"] >= info["peak_live"]
    del a
    assert live() - before < NBYTES


def test_peaks_reset_to_current():
    a = nd.ones((4 * N,))
    del a
    live()
    engine.reset_memory_peaks()
    info = engine.memory_info()
    assert info["peak_live"] == info["live"]
    assert info["peak_held"] == info["live"] + info["pooled"]


def test_scalar_ops_and_relu_keep_only_the_relu_output():
    x = variable()
    base = live()
    with autograd.record():
        a = x * 2.0  # needs neither its input nor its output
        b = nd.relu(a)  # its gradient reads its output only
        head = b + 1.0
    del a, b
    kept = live() - base
    # head (held here) and relu's output; the product `a` is freed.
    assert kept < 2.5 * NBYTES, kept / NBYTES
    head.backward()
    expect = 2.0 * (x.asnumpy() * 2.0 > 0)
    np.testing.assert_array_equal(x.grad.asnumpy(), expect)


def test_add_keeps_neither_operand():
    x = variable()
    base = live()
    with autograd.record():
        p = x + 1.0
        q = x * 3.0
        s = p + q
    del p, q
    kept = live() - base
    # Only `s` (held here); the operands of the sums are not saved.
    assert kept < 1.5 * NBYTES, kept / NBYTES
    s.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full(N, 4.0, "float32"))


def test_mul_keeps_its_operands_for_backward():
    x = variable()
    with autograd.record():
        p = x + 1.0
        s = p * x
    del p
    s.backward()
    xv = x.asnumpy()
    np.testing.assert_allclose(x.grad.asnumpy(), (xv + 1) + xv, rtol=1e-6, atol=1e-6)


class _Probe(autograd.Function):
    """Identity whose backward records live bytes when it runs."""

    def __init__(self):
        super().__init__()
        self.seen = None

    def forward(self, x):
        return x.copy()

    def backward(self, dy):
        self.seen = live()
        return dy


@pytest.mark.parametrize("retain", [False, True])
def test_backward_frees_a_node_saved_arrays_once_its_gradient_is_pushed(retain):
    x = variable()
    probe = _Probe()
    with autograd.record():
        y1 = nd.relu(x)
        y2 = probe(y1)
        y3 = nd.relu(y2)  # saves y3
        head = y3 * 2.0
    del y1, y2, y3
    before = live()
    head.backward(retain_graph=retain)
    # When the probe's backward runs, relu(y2)'s gradient has been pushed (and run):
    # its saved output is gone unless the graph is retained; its gradient (the
    # probe's input) replaced it.
    grown = probe.seen - before
    if retain:
        assert grown >= 0.9 * NBYTES, grown / NBYTES
    else:
        assert grown < 0.5 * NBYTES, grown / NBYTES
    np.testing.assert_array_equal(x.grad.asnumpy(), 2.0 * (x.asnumpy() > 0))


def test_hybridized_forward_frees_unsaved_intermediates():
    nn = mx.gluon.nn

    class Net(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            a = x * 2.0
            b = a + 1.0
            c = b * 3.0
            return F.relu(c)

    net = Net()
    net.hybridize()
    x = variable()
    with autograd.record():
        net(x).wait_to_read()  # trace and cache the graph
    base = live()
    with autograd.record():
        out = net(x)
    kept = live() - base
    # `out` (held here, and relu's saved output); a, b, c are dropped by the plan.
    assert kept < 1.5 * NBYTES, kept / NBYTES
    out.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), 6.0 * (x.asnumpy() * 6 + 3 > 0))


def test_an_output_buffer_is_taken_when_its_op_runs_not_when_pushed():
    a = nd.ones((N,))
    before = live()
    gate = threading.Event()
    # An engine op writing `a` that holds the queue until the test opens the gate.
    engine.push_py(lambda: gate.wait(30), writes=[a])
    b = a * 3.0  # pushed, cannot run before the gate opens
    pending = engine.memory_info()["live"] - before
    gate.set()
    np.testing.assert_array_equal(b.asnumpy(), np.full(N, 3.0, "float32"))
    assert pending < NBYTES, pending / NBYTES
    assert live() - before >= NBYTES


def test_convolution_workspaces_come_from_the_pool_and_go_back():
    # A Winograd convolution's tiles and transformed filters are borrowed from the
    # storage pool (``Scratch``), so they show in its counters while the kernel runs,
    # go back when it returns, and a second identical call needs no new memory.
    rng = np.random.RandomState(0)
    x = nd.array(rng.rand(8, 64, 28, 28).astype("float32"))
    w = nd.array(rng.rand(64, 64, 3, 3).astype("float32"))
    out_bytes = 8 * 64 * 28 * 28 * 4

    def conv():
        return nd.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=64, no_bias=True)

    y0 = conv()
    ref = y0.asnumpy()
    del y0
    base = live()
    engine.reset_memory_peaks()
    held_before = engine.memory_info()["live"] + engine.memory_info()["pooled"]
    y = conv()
    after = live()
    info = engine.memory_info()
    # only the output (its size class) stays alive
    assert out_bytes <= after - base <= out_bytes * 9 // 8
    assert info["peak_live"] - base >= out_bytes + (1 << 20), "the workspace is pool memory"
    assert info["peak_held"] == held_before, "the second call took only pooled buffers"
    np.testing.assert_array_equal(y.asnumpy(), ref)
