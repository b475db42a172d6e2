"""Bounded property-based fuzzing of bad input (issue 11, "Bad input across the new
surface"): random operators from the operator table, shapes, dtypes, axes and index keys,
through both legacy ``nd`` and NumPy-style ``np``. Whatever happens, a failure must be an
ordinary Python exception whose message names the operator: never a Rust panic, a crash or
a hang. Each example runs in-process in a worker thread with a timeout guard."""

import threading

import ferromx as mx
import numpy as onp
import pytest
from ferromx import _op_gen, nd

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TIMEOUT_S = 10.0
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "int8"]
# Sampling, I/O-like and stateful operators are skipped: they take no array to get wrong.
_SKIP_PREFIX = ("_random", "_sample", "_zeros", "_ones", "_full", "_arange", "_linspace",
                "_eye", "_shuffle")


def _ops(n_inputs):
    out = []
    for d in _op_gen.TABLE:
        if len(d["inputs"]) != n_inputs or d["mutates"] or d["name"].startswith(_SKIP_PREFIX):
            continue
        if d["inputs"] and d["inputs"][0].startswith("*"):
            continue
        names = _op_gen.nd_names(d)
        if names and hasattr(nd, names[0]):
            out.append(d)
    return out


UNARY, BINARY = _ops(1), _ops(2)


def _names(d):
    names = {d["name"], d["name"].lstrip("_"), *_op_gen.nd_names(d), *d["np"], *d["npx"]}
    return {n.lower() for n in names if n}


def _guarded(call):
    """Runs ``call`` in a thread; returns ``(result, exception)``; fails on a hang."""
    box = {}

    def run():
        try:
            res = call()
            if isinstance(res, nd.NDArray):
                res.wait_to_read()
            elif isinstance(res, (list, tuple)):
                for r in res:
                    if isinstance(r, nd.NDArray):
                        r.wait_to_read()
            box["res"] = res
        except BaseException as exc:  # noqa: BLE001 - a panic is a BaseException
            box["exc"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT_S)
    assert not t.is_alive(), f"hang: no result after {TIMEOUT_S}s"
    return box.get("res"), box.get("exc")


def _check_error(exc, names, what):
    if exc is None:
        return
    assert isinstance(exc, Exception), f"{what}: {type(exc).__name__} is not an Exception: {exc}"
    assert "panic" not in type(exc).__name__.lower(), f"{what}: Rust panic: {exc}"
    msg = str(exc).lower()
    assert any(n in msg for n in names), f"{what}: error does not name the op: {exc!r}"


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
axes = st.one_of(st.none(), st.integers(-4, 4), st.tuples(st.integers(-4, 4)))


def _array(shape, dtype, np_mode):
    data = onp.arange(int(onp.prod(shape, dtype=int)), dtype="float64").reshape(shape) - 2
    a = nd.array(data, dtype=dtype)
    return a.as_np_ndarray() if np_mode else a


@SETTINGS
@given(d=st.sampled_from(UNARY), shape=shapes, dtype=st.sampled_from(DTYPES), axis=axes,
       np_mode=st.booleans())
def test_unary_ops_fail_cleanly(d, shape, dtype, axis, np_mode):
    fn = getattr(nd, _op_gen.nd_names(d)[0])
    x = _array(shape, dtype, np_mode)
    params = [p[0] for p in d["params"]]
    kwargs = {"axis": axis} if "axis" in params and axis is not None else {}
    _, exc = _guarded(lambda: fn(x, **kwargs))
    _check_error(exc, _names(d), f"{d['name']}{shape} {dtype} {kwargs}")


@SETTINGS
@given(d=st.sampled_from(BINARY), s1=shapes, s2=shapes, t1=st.sampled_from(DTYPES),
       t2=st.sampled_from(DTYPES), np_mode=st.booleans())
def test_binary_ops_fail_cleanly(d, s1, s2, t1, t2, np_mode):
    fn = getattr(nd, _op_gen.nd_names(d)[0])
    a, b = _array(s1, t1, np_mode), _array(s2, t2, np_mode)
    _, exc = _guarded(lambda: fn(a, b))
    _check_error(exc, _names(d), f"{d['name']}{s1}/{s2} {t1}/{t2}")


_index = st.one_of(st.integers(-6, 6), st.none(), st.just(Ellipsis),
                   st.builds(slice, st.one_of(st.none(), st.integers(-6, 6)),
                             st.one_of(st.none(), st.integers(-6, 6)),
                             st.one_of(st.none(), st.integers(-3, 3))),
                   st.lists(st.integers(-6, 6), min_size=1, max_size=3))
keys = st.one_of(_index, st.tuples(_index, _index), st.tuples(_index, _index, _index))
_INDEX_NAMES = {"index", "getitem", "setitem", "slice", "axis", "key", "shape", "bound",
                "dimension", "step"}


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), key=keys,
       np_mode=st.booleans(), write=st.booleans())
def test_index_keys_fail_cleanly(shape, key, np_mode, write):
    x = _array(shape, "float32", np_mode)

    def call():
        if write:
            x[key] = 1.0
            return x
        return x[key]

    _, exc = _guarded(call)
    if exc is not None:
        assert isinstance(exc, (IndexError, TypeError, ValueError, mx.base.MXNetError)), (
            f"{shape}[{key!r}]: {type(exc).__name__}: {exc}")
        _check_error(exc, _INDEX_NAMES, f"{shape}[{key!r}]")
