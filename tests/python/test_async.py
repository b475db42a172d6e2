"""Asynchrony: pushes return at once, waits release the GIL, futures for copies.

No test sleeps to synchronise: ops that take time sleep *inside the engine*
(``_sleep_op``), and every wait in the test thread is bounded.
"""

import threading
import time

import ferromx as mx
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

nd = mx.nd
_native = mx.nd._native

pytestmark = pytest.mark.skipif(mx.engine.is_naive(), reason="NaiveEngine runs ops synchronously")


def _ready_array(value=1.0, shape=(4,)):
    a = nd.full(shape, value)
    a.wait_to_read()
    return a


def test_sleep_op_makes_array_not_ready_and_is_ready_never_blocks():
    a = _ready_array()
    assert a.is_ready()
    _native._sleep_op(a, 400)
    t0 = time.perf_counter()
    ready = a.is_ready()
    b = a + 1
    ready_b = b.is_ready()
    elapsed = time.perf_counter() - t0
    assert not ready and not ready_b
    assert elapsed < 0.2, f"is_ready/push blocked for {elapsed:.3f}s"
    b.wait_to_read()
    assert a.is_ready() and b.is_ready()
    assert_array_equal(b.asnumpy(), [2, 2, 2, 2])


def test_push_returns_before_the_op_runs():
    a = _ready_array(2.0)
    _native._sleep_op(a, 400)
    t0 = time.perf_counter()
    c = nd.exp(a) * 3 - a  # a chain of dependent pushes
    d = nd.sum(c)
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.2, f"pushing blocked for {elapsed:.3f}s"
    assert not c.is_ready() and not d.is_ready()
    assert_allclose(d.asnumpy(), 4 * (3 * np.exp(2.0) - 2), rtol=1e-5)


@pytest.mark.skipif(mx.engine.info()["cpu_workers"] < 2, reason="needs two engine workers")
def test_unrelated_work_is_not_serialised_behind_a_slow_op():
    slow = _ready_array()
    _native._sleep_op(slow, 1200)
    x = nd.ones((3,)) * 5  # touches nothing `slow` holds
    fut = x.asnumpy_async()
    assert_array_equal(fut.result(timeout=0.8), [5, 5, 5])
    assert not slow.is_ready()
    slow.wait_to_read()


class _Counter(threading.Thread):
    """Counts as fast as it can get the GIL, time-stamping every 256th step."""

    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stamps = []
        self.started_evt = threading.Event()
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.count += 1
            if self.count % 256 == 0:
                self.stamps.append(time.perf_counter())
            if self.count == 1:
                self.started_evt.set()


@pytest.mark.parametrize(
    "blocking", ["wait_to_read", "wait_to_write", "asnumpy", "waitall", "item", "async_result"]
)
def test_waits_release_the_gil(blocking):
    a = _ready_array(shape=(1,))
    counter = _Counter()
    counter.start()
    try:
        assert counter.started_evt.wait(timeout=10)
        _native._sleep_op(a, 300)
        t0 = time.perf_counter()
        if blocking == "wait_to_read":
            a.wait_to_read()
        elif blocking == "asnumpy":
            a.asnumpy()
        elif blocking == "wait_to_write":
            a.wait_to_write()
        elif blocking == "waitall":
            nd.waitall()
        elif blocking == "async_result":
            a.asnumpy_async().result(timeout=30)
        else:
            a.item()
        t1 = time.perf_counter()
    finally:
        counter.stop.set()
        counter.join(timeout=10)
    assert not counter.is_alive()
    assert t1 - t0 > 0.2, f"{blocking} returned after {t1 - t0:.3f}s, before the op finished"
    # Progress well inside the wait (not just at GIL switches around the call) proves the
    # waiting thread released the GIL.
    inside = [t for t in counter.stamps if t0 + 0.05 < t < t1 - 0.05]
    assert len(inside) > 10, f"other thread stalled during {blocking}: {len(inside)} stamps"


def test_wait_from_another_thread_and_concurrent_pushes():
    a = _ready_array()
    _native._sleep_op(a, 300)
    results, errors = [], []

    def reader():
        try:
            results.append((a + 1).asnumpy())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert not errors
    assert len(results) == 4 and all((r == 2).all() for r in results)


def test_wait_to_write_waits_for_pending_reads():
    a = _ready_array(2.0)
    slow = _ready_array()
    _native._sleep_op(slow, 300)
    b = a + slow  # reads `a`, queued behind the sleep
    assert a.is_ready()  # no pending write of `a` ...
    t0 = time.perf_counter()
    a.wait_to_write()  # ... but a pending read
    assert time.perf_counter() - t0 > 0.2
    assert b.is_ready()
    a[:] = 0  # safe now; `b` keeps the old value
    assert_array_equal(b.asnumpy(), [3, 3, 3, 3])


# ----------------------------------------------------------------------------- asnumpy_async


def test_asnumpy_async_done_result_timeout():
    a = _ready_array(3.0)
    _native._sleep_op(a, 500)
    b = a * 2
    fut = b.asnumpy_async()
    assert not fut.done()
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError):
        fut.result(timeout=0.05)
    assert time.perf_counter() - t0 < 0.4  # the timeout is honoured, not the op's duration
    assert not fut.done()
    res = fut.result(timeout=30)
    assert fut.done()
    assert isinstance(res, np.ndarray) and res.dtype == np.float32
    assert_array_equal(res, [6, 6, 6, 6])
    assert fut.result(timeout=0) is res  # cached
    assert fut.exception(timeout=0) is None


def test_asnumpy_async_callbacks():
    a = _ready_array(1.0)
    _native._sleep_op(a, 300)
    fut = (a + 4).asnumpy_async()
    seen = []
    fut.add_done_callback(lambda f: seen.append(("early", f)))
    assert seen == []
    assert_array_equal(fut.result(timeout=30), [5, 5, 5, 5])
    assert seen == [("early", fut)]
    fut.add_done_callback(lambda f: seen.append(("late", f.result(0))))  # already done: at once
    assert len(seen) == 2 and seen[1][0] == "late"
    assert_array_equal(seen[1][1], [5, 5, 5, 5])
    fut.result(timeout=1)
    assert len(seen) == 2  # callbacks run once


def test_asnumpy_async_copy_is_a_snapshot_at_push_time():
    a = _ready_array(1.0)
    _native._sleep_op(a, 200)
    fut = a.asnumpy_async()
    a += 10  # pushed after the copy: must not show in it
    assert_array_equal(fut.result(timeout=30), [1, 1, 1, 1])
    assert_array_equal(a.asnumpy(), [11, 11, 11, 11])


def test_asnumpy_async_of_ready_array():
    a = _ready_array(7.0, shape=(2, 3))
    fut = a.asnumpy_async()
    assert_array_equal(fut.result(timeout=30), np.full((2, 3), 7.0))
    assert fut.done()


def test_asnumpy_async_propagates_engine_errors():
    a = _ready_array()
    _native._sleep_op(a, 100)
    _native._fail_op(a, "value", "async failure")
    fut = (a + 1).asnumpy_async()
    with pytest.raises(ValueError) as ei:
        fut.result(timeout=30)
    assert "async failure" in str(ei.value) and "_test_fail" in str(ei.value)
    assert isinstance(fut.exception(timeout=1), ValueError)
    with pytest.raises(ValueError):
        fut.result(timeout=1)  # the future keeps its outcome
    got = []
    fut.add_done_callback(lambda f: got.append(f.exception(0)))
    assert isinstance(got[0], ValueError)
    try:
        nd.waitall()
    except mx.base.MXNetError:
        pass  # `a` itself still carries the failure until read once
    nd.waitall()


def test_large_dot_is_not_ready_right_after_the_call():
    rng = np.random.default_rng(0)
    an = rng.standard_normal((1500, 1500), dtype=np.float32)
    a = nd.array(an)
    a.wait_to_read()
    c = nd.dot(a, a)
    assert not c.is_ready()
    row = c[7].asnumpy()
    assert_allclose(row, an[7] @ an, rtol=1e-3, atol=1e-2)
    assert c.is_ready()


def test_wait_to_read_then_read_gives_computed_values():
    # regression: a copy pushed while the array is already ready must still be waited on
    for _ in range(50):
        a = nd.array([1.0, 2.0, 4.0])
        r = 1 / a
        r.wait_to_read()
        assert_array_equal(r.asnumpy(), [1, 0.5, 0.25])
        assert_array_equal(r.asnumpy_async().result(timeout=30), [1, 0.5, 0.25])


def test_advanced_indexing_and_assignment_run_on_the_engine():
    # x[:, [0, 2]], x[::-1] = v and x[[1]] = v used to compute on a host copy;
    # they are engine ops now: the calls return while x is still being written.
    x = nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    x.wait_to_read()
    _native._sleep_op(x, 400)  # a slow op holds a write on x
    t0 = time.perf_counter()
    cols = x[:, [0, 2]]
    picked = x[nd.array([2, 0], dtype="int64")]
    y = nd.zeros((3, 4))
    y[::-1] = nd.array([1.0, 2.0, 3.0, 4.0])
    y[[1]] = x[1:2] * 5
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.2, f"indexing blocked for {elapsed:.3f}s"
    assert not cols.is_ready() and not y.is_ready()
    xs = x.asnumpy()
    assert_array_equal(cols.asnumpy(), xs[:, [0, 2]])
    assert_array_equal(picked.asnumpy(), xs[[2, 0]])
    want = np.tile(np.array([1.0, 2.0, 3.0, 4.0], np.float32), (3, 1))
    want[1] = xs[1] * 5
    assert_array_equal(y.asnumpy(), want)


@pytest.mark.parametrize(
    "key",
    [
        ([0, 2], [1, 3]),  # several index arrays: gather_nd
        ([[0], [2]], [1, 3]),  # broadcast index arrays
        (0, [1, 3], 2),  # an array between integers
        (slice(1, 3), [0, 3]),  # an array after a partial slice
        ([1, 2], Ellipsis),
    ],
)
def test_multi_array_indexing_and_assignment_run_on_the_engine(key):
    xn = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    x = nd.array(xn)
    x.wait_to_read()
    _native._sleep_op(x, 300)  # a slow op holds a write on x
    t0 = time.perf_counter()
    got = x[key]
    y = nd.array(xn)
    y[key] = x[key] * 2
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.15, f"indexing blocked for {elapsed:.3f}s"
    assert not got.is_ready() and not y.is_ready()
    assert_array_equal(got.asnumpy(), xn[key])
    want = xn.copy()
    want[key] = xn[key] * 2
    assert_array_equal(y.asnumpy(), want)
