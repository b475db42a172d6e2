"""``engine.LaggedReader`` (reading values one step late without stalling the engine) and
Ctrl-C while the frontend waits on the engine."""

import _thread
import signal
import threading
import time

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx.engine import LaggedReader
from numpy.testing import assert_allclose, assert_array_equal

_native = mx.nd._native

needs_async = pytest.mark.skipif(mx.engine.is_naive(), reason="NaiveEngine runs ops synchronously")


def _ready(values):
    a = nd.array(values)
    a.wait_to_read()
    return a


def test_push_returns_none_then_previous_value():
    r = LaggedReader()
    a, b, c = _ready([1.0, 2.0]), _ready([3.0, 4.0]), _ready([5.0, 6.0])
    assert r.push(a) is None
    prev = r.push(b)
    assert isinstance(prev, np.ndarray)
    assert_array_equal(prev, [1.0, 2.0])
    assert_array_equal(r.push(c), [3.0, 4.0])
    assert_array_equal(r.last, [3.0, 4.0])
    assert_array_equal(r.flush(), [5.0, 6.0])
    assert r.flush() is None  # nothing pending any more
    assert r.push(a) is None  # starts over after flush


def test_pushed_value_is_snapshotted_at_push_time():
    r = LaggedReader()
    a = _ready([1.0, 2.0, 3.0])
    r.push(a)
    a += 10  # a later write to the same array: the copy was queued before it
    assert_array_equal(r.flush(), [1.0, 2.0, 3.0])
    assert_array_equal(a.asnumpy(), [11.0, 12.0, 13.0])


def test_reduce_and_dtype():
    r = LaggedReader(reduce=np.mean)
    assert r.push(nd.array([1.0, 2.0, 3.0])) is None
    assert r.push(nd.array([10.0, 20.0])) == pytest.approx(2.0)
    assert r.flush() == pytest.approx(15.0)
    assert r.last == pytest.approx(15.0)
    ri = LaggedReader()
    ri.push(nd.array([1, 2], dtype="int32"))
    out = ri.flush()
    assert out.dtype == np.int32 and out.tolist() == [1, 2]


def test_values_of_a_computation_chain():
    r = LaggedReader(reduce=np.sum)
    seen = []
    x = nd.ones((4,))
    for i in range(5):
        x = x * 2
        v = r.push(x)
        if v is not None:
            seen.append(v)
    seen.append(r.flush())
    assert seen == [8.0 * 2**i for i in range(5)]


@needs_async
def test_push_does_not_block_on_the_new_value():
    r = LaggedReader()
    first = _ready([1.0, 2.0])
    assert r.push(first) is None
    slow = _ready([7.0, 8.0])
    _native._sleep_op(slow, 300)
    t0 = time.perf_counter()
    prev = r.push(slow)  # returns the previous value; must not wait for `slow`
    elapsed = time.perf_counter() - t0
    assert not slow.is_ready(), "the sleep op finished before push returned"
    assert elapsed < 0.15, f"push blocked {elapsed:.3f}s on the value it queued"
    assert_array_equal(prev, [1.0, 2.0])
    assert_array_equal(r.flush(), [7.0, 8.0])  # flush does wait
    assert time.perf_counter() - t0 >= 0.25


@needs_async
def test_training_loop_with_lagged_reader():
    mx.random.seed(1)
    x_np = np.random.RandomState(1).uniform(size=(256, 20)).astype(np.float32)
    data = nd.array(x_np)
    label = nd.array(x_np[:, :4].argmax(axis=1), dtype="int32")  # learnable
    net = gluon.nn.Dense(4)
    net.initialize()
    ce = gluon.loss.SoftmaxCELoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(data, label), batch_size=64)
    r = LaggedReader(reduce=np.mean)
    lagged, direct = [], []
    for _ in range(3):
        for x, y in loader:
            with autograd.record():
                loss = ce(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
            v = r.push(loss)
            if v is not None:
                lagged.append(v)
            direct.append(float(loss.mean().asscalar()))
    lagged.append(r.flush())
    assert_allclose(lagged, direct, rtol=1e-5)
    assert lagged[-1] < lagged[0]


# ----------------------------------------------------------------------------- Ctrl-C


@pytest.fixture
def _sigint_raises():
    """Python's own SIGINT handler for the test: a run started in the background
    (`make test &`, nohup) inherits SIGINT ignored, and `interrupt_main` then
    raises nothing."""
    prev = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, prev)


@needs_async
@pytest.mark.usefixtures("_sigint_raises")
def test_keyboard_interrupt_during_wait_to_read():
    a = _ready([1.0, 2.0, 3.0])
    _native._sleep_op(a, 3000)
    assert not a.is_ready()
    fired = []
    timer = threading.Timer(
        0.2, lambda: (fired.append(time.perf_counter()), _thread.interrupt_main())
    )
    t0 = time.perf_counter()
    timer.start()
    raised = False
    try:
        try:
            a.wait_to_read()
        except KeyboardInterrupt:
            raised = True
        t_raised = time.perf_counter()
        ready_at_return = a.is_ready()
    finally:
        timer.cancel()
        timer.join(5)
    # Say what happened if the wait was not interrupted: it returned early (the
    # sleep op not done), or it ran the whole sleep with the timer starved or
    # its interrupt lost (SIGINT handler: signal.getsignal).
    assert raised, (
        f"wait_to_read returned after {t_raised - t0:.3f}s without KeyboardInterrupt; "
        f"timer fired at {[round(f - t0, 3) for f in fired]}, array ready: {ready_at_return}, "
        f"SIGINT handler: {signal.getsignal(signal.SIGINT)!r}"
    )
    assert fired, "the timer never fired"
    assert t_raised - fired[0] < 0.4, f"KeyboardInterrupt arrived {t_raised - fired[0]:.3f}s late"
    assert t_raised - t0 < 1.0
    assert not a.is_ready()  # the sleep op is still running: the wait was really cut short
    # the engine still works: the interrupted op completes, new work runs
    mx.nd.waitall()
    assert a.is_ready()
    assert_array_equal(a.asnumpy(), [1.0, 2.0, 3.0])
    b = nd.array([1.0, 2.0]) * 3 + a[:2]
    assert_array_equal(b.asnumpy(), [4.0, 8.0])
