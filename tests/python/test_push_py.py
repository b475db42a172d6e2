"""``engine.push_py``: a Python function as an engine op (ordering, errors, naive mode)."""

import os
import subprocess
import sys
import textwrap
import threading

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native, nd
from ferromx.engine import push_py


def test_op_runs_after_earlier_writes_and_before_later_ops():
    a = nd.ones((4,))
    _native._sleep_op(a, 150)  # holds `a` for writing
    a += 1  # pushed after the sleep: a == 2 when it has run
    b = nd.zeros((4,))
    seen = []

    def func():
        seen.append(a.asnumpy().copy())
        b[:] = a * 3  # runs inline: the op holds `b` for writing

    push_py(func, reads=[a], writes=[b], name="triple")
    assert not seen  # push returned while `a` is still being written
    c = b + 1  # pushed after: must see the function's write
    a += 100  # a later write to a read input waits for the op
    np.testing.assert_allclose(c.asnumpy(), np.full(4, 7.0))
    np.testing.assert_allclose(seen[0], np.full(4, 2.0))
    np.testing.assert_allclose(a.asnumpy(), np.full(4, 102.0))


def test_writes_in_push_order_with_frontend_ops():
    x = nd.zeros((3,))
    for i in range(20):
        x += 1
        push_py(lambda: x.__setitem__(slice(None), x * 2), writes=[x], name=f"double{i}")  # noqa: B023
    expect = 0.0
    for _ in range(20):
        expect = (expect + 1) * 2
    np.testing.assert_allclose(x.asnumpy(), np.full(3, expect))


def test_exception_becomes_error_of_written_arrays():
    out = nd.zeros((2,))

    def bad():
        raise ValueError("custom failure 42")

    push_py(bad, writes=[out], name="my_python_op")
    dep = out * 2  # inherits the failure
    with pytest.raises(ValueError, match="custom failure 42") as err:
        out.asnumpy()
    assert "my_python_op" in str(err.value)
    with pytest.raises(ValueError, match="custom failure 42"):
        dep.asnumpy()
    # raised once; a later successful write recovers the array
    out[:] = 5
    np.testing.assert_allclose(out.asnumpy(), [5.0, 5.0])


def test_undeclared_busy_array_fails_instead_of_deadlocking():
    busy = nd.ones((2,))
    _native._sleep_op(busy, 300)
    out = nd.zeros((2,))
    push_py(lambda: out.__setitem__(slice(None), busy + 1), writes=[out], name="uses_busy")
    with pytest.raises(mx.MXNetError, match="other pending operations"):
        out.asnumpy()


def test_failing_nested_op_fails_the_python_op():
    out = nd.zeros((2,))
    idx = nd.array([5.0])

    def func():
        out[:] = nd.take(nd.ones((2,)), idx, mode="raise").sum()

    push_py(func, writes=[out], name="nested_fail")
    with pytest.raises(mx.MXNetError, match="nested_fail"):
        out.asnumpy()


def test_runs_on_a_worker_thread_of_the_context():
    out = nd.zeros((1,), ctx=mx.cpu(1))
    where = []
    push_py(lambda: where.append(threading.get_ident()), writes=[out], ctx=mx.cpu(1))
    out.wait_to_read()
    assert where and where[0] != threading.get_ident()


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        push_py(42, writes=[nd.zeros((1,))])
    with pytest.raises(mx.MXNetError):
        push_py(lambda: None, writes=[], ctx="gpu(0)")


NAIVE_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import ferromx as mx
    from ferromx import nd
    from ferromx.engine import push_py
    assert mx.engine.is_naive()
    a = nd.ones((3,))
    b = nd.zeros((3,))
    push_py(lambda: b.__setitem__(slice(None), a * 4), reads=[a], writes=[b])
    np.testing.assert_allclose((b + 1).asnumpy(), 5.0)
    def bad():
        raise KeyError("naive boom")
    try:
        push_py(bad, writes=[b], name="naive_op")
        b.asnumpy()
    except mx.MXNetError as e:
        assert "naive boom" in str(e) and "naive_op" in str(e), str(e)
    else:
        raise SystemExit("no error")
    print("OK")
    """
)


def test_naive_engine_mode():
    env = dict(os.environ, FERROMX_ENGINE_TYPE="NaiveEngine")
    r = subprocess.run(
        [sys.executable, "-c", NAIVE_SCRIPT], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout


EXIT_SCRIPT = textwrap.dedent(
    """
    from ferromx import nd, _native
    from ferromx.engine import push_py
    a = nd.ones((2,))
    _native._sleep_op(a, 300)
    push_py(lambda: print("ran", flush=True), reads=[a], writes=[nd.zeros((1,))])
    print("exiting", flush=True)
    """
)


def test_pending_python_op_runs_before_the_interpreter_exits():
    r = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["exiting", "ran"]
    assert "panicked" not in r.stderr
