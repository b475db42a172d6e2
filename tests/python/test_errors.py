"""Bad input raises a clear Python exception (never a crash); engine errors propagate."""

import inspect
import re

import ferromx as mx
import numpy as np
import pytest
from numpy.testing import assert_array_equal

nd = mx.nd
MXNetError = mx.base.MXNetError
_native = mx.nd._native


def _line():
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


# ----------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("op,name", [
    (lambda a, b: a + b, "add"), (lambda a, b: a - b, "sub"), (lambda a, b: a * b, "mul"),
    (lambda a, b: a / b, "div"), (lambda a, b: a % b, "mod"), (lambda a, b: a ** b, "power"),
    (lambda a, b: a == b, "equal"), (lambda a, b: a < b, "lesser"),
    (nd.maximum, "maximum"), (nd.hypot, "hypot"), (nd.logical_and, "logical_and"),
    (nd.add, "add"), (nd.broadcast_mul, "mul"),
])
def test_incompatible_broadcast(op, name):
    a, b = nd.ones((2, 3)), nd.ones((4, 3))
    with pytest.raises(MXNetError) as ei:
        op(a, b)
    e = ei.value
    assert isinstance(e, ValueError)
    msg = str(e)
    assert name in msg, msg
    assert "(2, 3)" in msg and "(4, 3)" in msg, msg


def test_inplace_broadcast_error():
    a = nd.ones((2, 3))
    with pytest.raises(ValueError) as ei:
        a += nd.ones((3, 3))
    assert "(2, 3)" in str(ei.value) and "(3, 3)" in str(ei.value)
    assert_array_equal(a.asnumpy(), np.ones((2, 3)))  # untouched, still usable


@pytest.mark.parametrize("fn,op", [
    (lambda x: nd.sum(x, axis=3), "sum"), (lambda x: nd.mean(x, axis=-4), "mean"),
    (lambda x: nd.max(x, axis=(0, 5)), "max"), (lambda x: nd.argmax(x, axis=3), "argmax"),
    (lambda x: nd.expand_dims(x, axis=5), "expand_dims"),
    (lambda x: nd.softmax(x, axis=3), "softmax"), (lambda x: nd.swapaxes(x, 0, 3), "swapaxes"),
    (lambda x: nd.transpose(x, axes=(0, 1, 3)), "transpose"),
    (lambda x: nd.concat(x, x, dim=3), "concat"), (lambda x: nd.stack(x, x, axis=4), "stack"),
    (lambda x: nd.slice_axis(x, axis=3, begin=0, end=1), "slice_axis"),
    (lambda x: nd.take(x, nd.array([0]), axis=3), "take"),
    (lambda x: nd.squeeze(x, axis=1), "squeeze"),
    (lambda x: nd.norm(x, axis=7), "norm"),
])
def test_bad_axis(fn, op):
    x = nd.ones((2, 3, 4))
    with pytest.raises(MXNetError) as ei:
        fn(x)
    assert isinstance(ei.value, (ValueError, IndexError))
    assert op in str(ei.value), str(ei.value)


@pytest.mark.parametrize("fn", [
    lambda: nd.zeros((2,), dtype="foo"), lambda: nd.ones((2,), dtype="float128"),
    lambda: nd.ones((2,)).astype("complex64"), lambda: nd.ones((2,)).astype("nope"),
    lambda: nd.array([1, 2], dtype="complex64"), lambda: nd.array([1, 2], dtype="uint16"),
    lambda: nd.full((2,), 1, dtype="str"), lambda: nd.arange(3, dtype="foo"),
    lambda: nd.random.uniform(shape=(2,), dtype="bar"), lambda: nd.array(["a", "b"]),
    lambda: nd.one_hot(nd.array([0]), 2, dtype="x"),
])
def test_bad_dtype_is_type_error(fn):
    with pytest.raises(TypeError):
        fn()


@pytest.mark.parametrize("key", [3, -4, (0, 5), (1, 2, 2), [0, 3], np.array([-4]),
                                 (slice(None), 9), (0, 0, 0, 0)], ids=repr)
def test_index_out_of_range(key):
    a = nd.ones((3, 4, 2))
    a = a[:, :, 0] if isinstance(key, tuple) and len(key) == 4 else a
    with pytest.raises(IndexError):
        a[key]
    with pytest.raises(IndexError):
        a[key] = 1
    assert_array_equal(a.asnumpy(), np.ones(a.shape))


def test_index_errors_misc():
    with pytest.raises(IndexError):
        nd.array(2.0)[0]  # 0-d
    with pytest.raises(IndexError):  # host indices: checked at the call
        nd.ones((3,))[[0, 5]]
    with pytest.raises(IndexError):  # NDArray indices: checked on the engine, raised at the read
        nd.ones((3,))[nd.array([0, 5])].asnumpy()
    with pytest.raises(IndexError):
        nd.ones((3,))[np.array([True, False])]  # mask shape mismatch
    with pytest.raises(TypeError):
        nd.ones((3,))["a"]
    with pytest.raises(TypeError):
        nd.ones((3,))[1.5]


def test_dot_shape_mismatch():
    for fn, name in [(lambda: nd.dot(nd.ones((2, 3)), nd.ones((4, 5))), "dot"),
                     (lambda: nd.ones((2, 3)) @ nd.ones((2, 3)), "dot"),
                     (lambda: nd.dot(nd.ones((2, 3)), nd.ones((2, 3)), transpose_b=False), "dot"),
                     (lambda: nd.batch_dot(nd.ones((2, 2, 3)), nd.ones((3, 3, 4))), "batch_dot"),
                     (lambda: nd.batch_dot(nd.ones((2, 2, 3)), nd.ones((2, 4, 4))), "batch_dot")]:
        with pytest.raises(MXNetError) as ei:
            fn()
        assert isinstance(ei.value, ValueError)
        assert name in str(ei.value), str(ei.value)
    with pytest.raises(ValueError) as ei:
        nd.dot(nd.ones((2, 3)), nd.ones((4, 5)))
    assert "(2, 3)" in str(ei.value) and "(4, 5)" in str(ei.value)


def test_gemm2_shape_mismatch():
    with pytest.raises(ValueError):
        nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((2, 3)))


def test_gemm2_shape_mismatch_message():
    with pytest.raises(ValueError) as ei:
        nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((2, 3)))
    assert "gemm2" in str(ei.value) and "(2, 3)" in str(ei.value)


def test_concat_stack_split_mismatch():
    with pytest.raises(ValueError) as ei:
        nd.concat(nd.ones((2, 3)), nd.ones((3, 3)), dim=1)
    assert "concat" in str(ei.value)
    with pytest.raises(ValueError):
        nd.concat(nd.ones((2, 3)), nd.ones((2, 3, 1)), dim=0)
    with pytest.raises(ValueError):
        nd.stack(nd.ones((2, 3)), nd.ones((3, 2)))
    with pytest.raises(ValueError):
        nd.split(nd.ones((2, 5)), num_outputs=2, axis=1)
    with pytest.raises(ValueError):
        nd.split_v2(nd.ones((2, 5)), 3, axis=1)
    with pytest.raises((ValueError, TypeError)):
        nd.concat()


def test_other_value_errors():
    for fn in [lambda: nd.ones((2, 3)).reshape((4, 2)), lambda: nd.ones((6,)).reshape((-1, -1)),
               lambda: nd.broadcast_to(nd.ones((2, 3)), shape=(4, 3)),
               lambda: nd.norm(nd.ones(3), ord=3), lambda: nd.zeros((-1, 2)),
               lambda: nd.pad(nd.ones((3,)), mode="reflect", pad_width=(3, 0)),
               lambda: nd.pad(nd.ones((3,)), mode="wrap", pad_width=(1, 1)),
               lambda: nd.pad(nd.ones((3,)), pad_width=(1,)),
               lambda: nd.take(nd.ones((3,)), nd.array([0]), mode="bogus"),
               lambda: nd.where(nd.ones((2,)), nd.ones((3,)), nd.ones((3,))),
               lambda: nd.ones((2,)).copyto(nd.zeros((3,))),
               lambda: nd.argmax(nd.zeros((0,))), lambda: nd.min(nd.zeros((2, 0)), axis=1)]:
        with pytest.raises(ValueError):
            fn()


def test_wrong_context():
    with pytest.raises(MXNetError):
        nd.zeros((2,), ctx=mx.gpu(0))
    with pytest.raises(MXNetError):
        nd.array([1, 2], ctx=mx.gpu(0))
    with pytest.raises(MXNetError):
        nd.ones((2,)).copyto(mx.gpu(0))
    with pytest.raises(MXNetError):
        nd.random.uniform(shape=(2,), ctx=mx.gpu(0))
    with pytest.raises(MXNetError), mx.gpu(0):
        nd.ones((2,))
    assert mx.num_gpus() == 0
    a, b = nd.ones((2,), ctx=mx.cpu(0)), nd.ones((2,), ctx=mx.cpu(1))
    with pytest.raises(MXNetError) as ei:
        a + b
    assert "cpu(0)" in str(ei.value) and "cpu(1)" in str(ei.value)


def test_wrong_input_types():
    with pytest.raises(TypeError):
        nd.exp([1, 2])
    with pytest.raises(TypeError):
        nd.dot(nd.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError):
        nd.ones((2,)) + "x"
    with pytest.raises(TypeError):
        nd.sum(nd.ones((2, 2)), axis="a")


# ----------------------------------------------------------------------------- engine errors


KINDS = {"value": ValueError, "index": IndexError, "type": TypeError}


@pytest.fixture(autouse=True)
def _clean_engine():
    """Each test starts and ends with no uncollected engine error."""
    try:
        mx.nd.waitall()
    except MXNetError:
        pass
    yield
    try:
        mx.nd.waitall()
    except MXNetError:
        pass


def test_failed_op_raises_at_dependent_read_once():
    arr = nd.ones((3,))
    line = _line() + 1
    _native._fail_op(arr, "value", "bad input")
    b = arr + 1  # pushing works: the failure is only known to the engine
    with pytest.raises(ValueError) as ei:
        b.asnumpy()
    msg = str(ei.value)
    assert isinstance(ei.value, MXNetError)
    assert "_test_fail" in msg and "bad input" in msg and f"test_errors.py:{line}" in msg, msg
    b.asnumpy()  # second read: no error
    with pytest.raises(ValueError):
        arr.wait_to_read()
    arr.wait_to_read()


@pytest.mark.parametrize("kind", ["value", "index", "type", "runtime", "panic"])
def test_failure_propagates_to_dependents(kind):
    arr = nd.ones((3,))
    arr.wait_to_read()
    line = _line() + 1
    _native._fail_op(arr, kind, f"boom-{kind}")
    b = arr + 1
    c = nd.exp(b) * 2  # two hops away
    with pytest.raises(MXNetError) as ei:
        c.wait_to_read()
    e = ei.value
    if kind in KINDS:
        assert isinstance(e, KINDS[kind])
    else:
        assert not isinstance(e, (ValueError, IndexError, TypeError))
    msg = str(e)
    assert "_test_fail" in msg, msg
    assert f"test_errors.py:{line}" in msg, msg
    if kind == "panic":
        assert "panic" in msg
    else:
        assert f"boom-{kind}" in msg
    c.wait_to_read()  # raised once: the second wait works
    with pytest.raises(MXNetError) as ei:
        b.asnumpy()  # each array that depends on the failure raises it once
    assert "_test_fail" in str(ei.value) and f"test_errors.py:{line}" in str(ei.value)
    b.asnumpy()
    with pytest.raises(MXNetError):
        arr.asnumpy()
    arr.asnumpy()
    mx.nd.waitall()  # everything already raised and cleared
    _engine_still_works()


@pytest.mark.skipif(mx.engine.is_naive(), reason="NaiveEngine runs `late` before the read")
def test_failure_still_propagates_after_it_was_raised():
    arr = nd.ones((3,))
    slow = nd.ones((3,))
    _native._sleep_op(slow, 300)
    _native._fail_op(arr, "value", "poison")
    late = arr + slow  # pushed now, runs after `slow` is done
    with pytest.raises(ValueError):
        arr.wait_to_read()  # raises (and clears) while `late` is still queued
    with pytest.raises(ValueError):
        late.wait_to_read()


def _engine_still_works():
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = nd.dot(x, x.T) + 1
    assert_array_equal(y.asnumpy(), np.arange(6).reshape(2, 3) @ np.arange(6).reshape(2, 3).T + 1)


def test_waitall_raises_first_error_and_clears():
    a, b = nd.ones((2,)), nd.ones((2,))
    line = _line() + 1
    _native._fail_op(a, "value", "first failure")
    with pytest.raises(MXNetError) as ei:
        mx.nd.waitall()
    assert "first failure" in str(ei.value)
    assert f"test_errors.py:{line}" in str(ei.value)
    mx.nd.waitall()  # cleared
    a.asnumpy()  # also cleared for the array itself
    _native._fail_op(b, "index", "second")
    with pytest.raises(IndexError):
        mx.waitall()
    mx.waitall()
    _engine_still_works()


def test_waitall_raises_the_error_of_a_discarded_array_once():
    # MXNet's WaitForAll rethrows a failure whose arrays are gone
    a = nd.ones((2,))
    _native._fail_op(a, "value", "discarded failure")
    b = a * 2  # inherits the failure
    del a, b
    with pytest.raises(MXNetError, match="discarded failure"):
        mx.nd.waitall()
    mx.nd.waitall()
    # raised through the result, the discarded intermediate does not raise again
    a = nd.ones((2,))
    _native._fail_op(a, "value", "seen once")
    c = a + 1
    del a
    with pytest.raises(MXNetError, match="seen once"):
        c.asnumpy()
    mx.nd.waitall()
    # an error raised clears the discarded failures before it (MXNet's
    # test_exc_imperative: a sampler's failure reaches every later sampler there)
    d = nd.ones((2,))
    _native._fail_op(d, "value", "earlier, discarded")
    del d
    e = nd.ones((2,))
    _native._fail_op(e, "value", "handled")
    with pytest.raises(MXNetError, match="handled"):
        e.asnumpy()
    mx.nd.waitall()
    _engine_still_works()


def test_panic_is_an_mxnet_error_not_an_abort():
    a = nd.ones((4,))
    _native._fail_op(a, "panic", "kernel exploded")
    with pytest.raises(MXNetError) as ei:
        (a * 3).asnumpy()
    assert "panic" in str(ei.value) and "kernel exploded" in str(ei.value)
    assert not isinstance(ei.value, (ValueError, IndexError, TypeError))
    with pytest.raises(MXNetError):
        mx.nd.waitall()  # `a` itself still holds the failure
    mx.nd.waitall()
    _engine_still_works()


def test_failure_inside_a_chain_of_inplace_ops():
    a = nd.zeros((3,))
    a += 1
    _native._fail_op(a, "runtime", "mid-chain")
    a += 1
    a *= 2
    with pytest.raises(MXNetError) as ei:
        a.asnumpy()
    assert "mid-chain" in str(ei.value)
    a[:] = 5  # writes after the error was raised work again
    assert_array_equal(a.asnumpy(), [5, 5, 5])


def test_error_does_not_leak_into_unrelated_arrays():
    bad, good = nd.ones((2,)), nd.ones((2,)) * 3
    _native._fail_op(bad, "value", "isolated")
    out = good + 1
    assert_array_equal(out.asnumpy(), [4, 4])
    with pytest.raises(ValueError):
        bad.asnumpy()


def test_take_raise_error_names_the_call_site():
    x = nd.ones((3, 2))
    line = _line() + 1
    y = nd.take(x, nd.array([5]), mode="raise")
    z = y + 1
    with pytest.raises(IndexError) as ei:
        z.asnumpy()
    assert re.search(r"take", str(ei.value))
    assert f"test_errors.py:{line}" in str(ei.value)
    with pytest.raises(IndexError):
        y.wait_to_read()
    mx.nd.waitall()
