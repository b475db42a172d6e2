"""The implicit-blocker guard (``engine.set_sync_warning`` / ``FERROMX_SYNC_DEBUG``): blocking
reads inside ``autograd.record()`` or ``engine.no_sync()`` warn at the user's own line, or raise
in ``error`` mode; outside those regions, or with the guard off, nothing happens."""

import inspect
import os
import subprocess
import sys
import textwrap
import warnings

import ferromx as mx
import pytest
from ferromx import autograd, nd
from ferromx.base import MXNetError

SyncWarning = mx.engine.SyncWarning
SyncError = mx.engine.SyncError


@pytest.fixture
def guard():
    """Sets a mode for the test and always restores the previous one."""
    prev = mx.engine.set_sync_warning("off")
    mx.engine.set_sync_warning(prev)
    yield mx.engine.set_sync_warning
    mx.engine.set_sync_warning(prev)


def _x():
    x = nd.ones((1,)) * 2
    x.wait_to_read()
    return x


def _line():
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


# Each blocking call is made on its own line, whose number is taken on the line above it.
def _call_asnumpy(x):
    line = _line() + 1
    x.asnumpy()
    return line


def _call_item(x):
    line = _line() + 1
    x.item()
    return line


def _call_print(x):
    line = _line() + 1
    print(x)
    return line


def _call_wait_to_read(x):
    line = _line() + 1
    x.wait_to_read()
    return line


def _call_float(x):
    line = _line() + 1
    float(x)
    return line


def _call_waitall(x):
    line = _line() + 1
    mx.nd.waitall()
    return line


def _call_mx_waitall(x):
    line = _line() + 1
    mx.waitall()
    return line


CALLS = {
    "asnumpy": _call_asnumpy,
    "item": _call_item,
    "print": _call_print,
    "wait_to_read": _call_wait_to_read,
    "float": _call_float,
    "waitall": _call_waitall,
    "mx.waitall": _call_mx_waitall,
}


def _record_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return [w for w in caught if issubclass(w.category, SyncWarning)], result


@pytest.mark.parametrize("call", sorted(CALLS))
def test_blocking_read_in_record_warns_once_at_the_user_line(guard, call):
    guard("warn")
    x = _x()

    def body():
        with autograd.record():
            return CALLS[call](x)

    caught, line = _record_warnings(body)
    assert len(caught) == 1, [str(w.message) for w in caught]
    w = caught[0]
    assert os.path.abspath(w.filename) == os.path.abspath(__file__), w.filename
    assert w.lineno == line
    assert "autograd.record()" in str(w.message)
    assert call.split(".")[-1] in str(w.message)


@pytest.mark.parametrize("call", sorted(CALLS))
def test_blocking_read_outside_record_is_silent(guard, call):
    guard("warn")
    x = _x()
    caught, _ = _record_warnings(lambda: CALLS[call](x))
    assert caught == []
    with autograd.record():
        pass
    caught, _ = _record_warnings(lambda: CALLS[call](x))  # after record() ended
    assert caught == []


def test_pause_inside_record_is_still_flagged_only_while_recording(guard):
    guard("warn")
    x = _x()

    def body():
        with autograd.record():
            with autograd.pause():
                x.asnumpy()  # not recording here
            x.asnumpy()

    caught, _ = _record_warnings(body)
    assert len(caught) == 1


@pytest.mark.parametrize("call", sorted(CALLS))
def test_no_sync_region_warns(guard, call):
    guard("warn")
    x = _x()

    def body():
        with mx.engine.no_sync():
            return CALLS[call](x)

    caught, line = _record_warnings(body)
    assert len(caught) == 1
    assert os.path.abspath(caught[0].filename) == os.path.abspath(__file__)
    assert caught[0].lineno == line
    assert "no_sync" in str(caught[0].message)
    caught, _ = _record_warnings(lambda: CALLS[call](x))  # the region ended
    assert caught == []


def test_nested_no_sync_and_exceptions_restore_the_region(guard):
    guard("warn")
    x = _x()
    with pytest.raises(RuntimeError), mx.engine.no_sync(), mx.engine.no_sync():
        raise RuntimeError("boom")
    caught, _ = _record_warnings(lambda: x.asnumpy())
    assert caught == []


@pytest.mark.parametrize("call", sorted(CALLS))
def test_error_mode_raises(guard, call):
    guard("error")
    x = _x()
    with pytest.raises(SyncError, match="blocks until the engine computes"), autograd.record():
        CALLS[call](x)
    assert issubclass(SyncError, MXNetError)
    with pytest.raises(MXNetError), mx.engine.no_sync():
        CALLS[call](x)
    assert CALLS[call](x)  # outside: fine


@pytest.mark.parametrize("call", sorted(CALLS))
def test_off_mode_is_silent(guard, call):
    guard("off")
    x = _x()

    def body():
        with autograd.record():
            CALLS[call](x)
        with mx.engine.no_sync():
            CALLS[call](x)

    caught, _ = _record_warnings(body)
    assert caught == []


def test_set_sync_warning_returns_previous_and_validates(guard):
    guard("warn")
    assert mx.engine.set_sync_warning("error") == "warn"
    assert mx.engine.set_sync_warning("off") == "error"
    with pytest.raises(ValueError):
        mx.engine.set_sync_warning("loud")
    assert mx.engine.set_sync_warning("off") == "off"


def test_guard_does_not_change_results(guard):
    guard("warn")
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyncWarning)
        with autograd.record():
            y = (x * x).sum()
            v = y.asnumpy()
    y.backward()
    assert v.shape == (1,) and float(v[0]) == 5.0  # legacy full sum: (1,), as in MXNet
    assert x.grad.asnumpy().tolist() == [2.0, 4.0]


def test_env_var_error_mode_in_subprocess(tmp_path):
    script = tmp_path / "guard_env.py"
    script.write_text(textwrap.dedent("""
        import ferromx as mx
        from ferromx import autograd, nd
        assert mx.engine.set_sync_warning("error") == "error"  # the env var set it
        x = nd.ones((2,))
        print("outside", x.asnumpy().tolist())
        try:
            with autograd.record():
                x.asnumpy()
        except mx.engine.SyncError as e:
            print("raised", type(e).__name__, isinstance(e, mx.MXNetError))
        else:
            print("no error")
    """))
    env = dict(os.environ, FERROMX_SYNC_DEBUG="error")
    res = subprocess.run(  # noqa: PLW1510 - the return code is asserted
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert "outside [1.0, 1.0]" in res.stdout
    assert "raised SyncError True" in res.stdout, res.stdout + res.stderr


def test_env_var_warn_mode_in_subprocess(tmp_path):
    script = tmp_path / "guard_warn.py"
    script.write_text(textwrap.dedent("""
        import warnings
        import ferromx as mx
        from ferromx import autograd, nd
        warnings.simplefilter("always")
        x = nd.ones((2,))
        with autograd.record():
            x.asnumpy()
    """))
    env = dict(os.environ, FERROMX_SYNC_DEBUG="warn")
    res = subprocess.run(  # noqa: PLW1510 - the return code is asserted
        [sys.executable, "-W", "always", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert "guard_warn.py:8: SyncWarning: asnumpy() blocks" in res.stderr, res.stderr
