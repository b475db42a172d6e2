"""The np binary ufuncs that are table operators of the binary family: ``arctan2``,
``copysign``, ``ldexp`` (MXNet's ``_npi_*``), ``lcm``/``gcd`` and ``fmax``/``fmin``/``fmod``
(ferromx's ``_npi_*``, NumPy's functions). Values and gradients against MXNet 1.9.1's
recorded ones (``tests/fixtures/np_ufuncs``) and against NumPy; one engine op per call."""

import json
import math
import os

import ferromx as mx
import ferromx.numpy as np
import numpy as onp
import pytest
from ferromx import _native

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "fixtures", "np_ufuncs", "np_ufuncs.json")) as f:
    REC = json.load(f)
X1, X2, S = REC["inputs"]["x1"], REC["inputs"]["x2"], REC["inputs"]["scalar"]


def _head(y):
    return np.arange(y.size).reshape(y.shape) / 4.0 + 0.5


@pytest.mark.parametrize("name", ["arctan2", "copysign", "ldexp"])
def test_values_and_gradients_are_mxnets(name):
    rec = REC[name]
    a, b = np.array(X1), np.array(X2)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = getattr(np, name)(a, b)
    y.backward(_head(y))
    onp.testing.assert_allclose(y.asnumpy(), rec["out"], rtol=1e-6, atol=1e-7)
    onp.testing.assert_allclose(a.grad.asnumpy(), rec["grad_lhs"], rtol=1e-5, atol=1e-6)
    onp.testing.assert_allclose(b.grad.asnumpy(), rec["grad_rhs"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["arctan2", "copysign", "ldexp"])
@pytest.mark.parametrize("reverse", [False, True])
def test_scalar_forms_are_mxnets(name, reverse):
    rec = REC[name]
    key = "rscalar" if reverse else "scalar"
    a = np.array(X1)
    a.attach_grad()
    fn = getattr(np, name)
    with mx.autograd.record():
        y = fn(S, a) if reverse else fn(a, S)
    y.backward(_head(y))
    onp.testing.assert_allclose(y.asnumpy(), rec[f"{key}_out"], rtol=1e-6, atol=1e-7)
    want = rec[f"{key}_grad"]
    if name == "arctan2" and reverse:
        # a deliberate difference: MXNet 1.9.1's rarctan2 gradient is -x / (s² + x²), the
        # derivative in s; d/dx atan2(s, x) is -s / (s² + x²) (docs/for-mxnet-users.md)
        onp.testing.assert_allclose(rec[f"{key}_grad"], _rarctan2_mxnet(), rtol=1e-5)
        x = onp.array(X1)
        want = -S / (S * S + x * x) * _head(y).asnumpy()
    if want is None:
        # MXNet 1.9.1's _backward_npi_(r)copysign_scalar fails; the derivative is ±1 / 0
        x = onp.array(X1)
        want = (onp.where((x >= 0) == (S >= 0), 1.0, -1.0) if not reverse
                else onp.zeros_like(x)) * _head(y).asnumpy()
    onp.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)


def _rarctan2_mxnet():
    """What MXNet 1.9.1 computes for the reversed scalar arctan2's gradient."""
    x = onp.array(X1)
    return -x / (S * S + x * x) * (onp.arange(6).reshape(2, 3) / 4.0 + 0.5)


def test_lcm_is_mxnets_and_gcd_numpys():
    rec = REC["lcm"]
    a, b = np.array(rec["a"], dtype="int32"), np.array(rec["b"], dtype="int32")
    assert np.lcm(a, b).asnumpy().tolist() == rec["out"]
    assert np.lcm(a, 6).asnumpy().tolist() == rec["scalar_out"]
    assert np.lcm(6, a).asnumpy().tolist() == rec["scalar_out"]
    for dt in ("int8", "uint8", "int32", "int64"):
        x = onp.array([[12, 18, 7, 0], [5, 9, 4, 0]], dtype=dt)
        y = onp.array([8, 12, 0, 6], dtype=dt)
        r = np.gcd(np.array(x, dtype=dt), np.array(y, dtype=dt))
        assert r.dtype == onp.dtype(dt)
        assert (r.asnumpy() == onp.gcd(x, y)).all()
    big = np.array([-(2 ** 63), 2 ** 62], dtype="int64")
    assert np.gcd(big, np.array([6, 4], dtype="int64")).asnumpy().tolist() == [2, 4]
    assert np.gcd(12, 18) == 6 and np.lcm(4, 6) == 12


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_integer_only_functions_reject_floats(name):
    with pytest.raises(TypeError, match=f"_npi_{name}.*integers only"):
        getattr(np, name)(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    with pytest.raises(TypeError, match=f"_npi_{name}_scalar"):
        getattr(np, name)(np.array([1.0]), 2)


NANS = onp.array([[onp.nan, 1.0, -2.0, onp.nan], [0.5, -0.0, onp.inf, 3.0]], "float32")
OTHER = onp.array([1.0, onp.nan, -3.0, onp.nan], "float32")


@pytest.mark.parametrize("name", ["fmax", "fmin", "fmod"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_aware_functions_as_numpy(name, dtype):
    a, b = NANS.astype(dtype), OTHER.astype(dtype)
    fn, ref = getattr(np, name), getattr(onp, name)
    with onp.errstate(invalid="ignore", divide="ignore"):
        for got, want in [(fn(np.array(a), np.array(b)), ref(a, b)),
                          (fn(np.array(a), 1.5), ref(a, onp.array(1.5, dtype))),
                          (fn(1.5, np.array(a)), ref(onp.array(1.5, dtype), a))]:
            assert got.dtype == want.dtype
            onp.testing.assert_array_equal(got.asnumpy(), want)


def test_fmod_of_integers_is_cs_remainder():
    a = onp.array([7, -7, 7, -7, 5], "int32")
    b = onp.array([3, 3, -3, -3, 0], "int32")
    got = np.fmod(np.array(a, dtype="int32"), np.array(b, dtype="int32"))
    assert got.dtype == onp.int32
    assert got.asnumpy().tolist() == [1, -1, 1, -1, 0]  # NumPy gives 0 for x % 0 too


@pytest.mark.parametrize("name", ["fmax", "fmin", "fmod"])
def test_nan_aware_gradients_by_finite_differences(name):
    rng = onp.random.RandomState(3)
    a = rng.uniform(-2, 2, (3, 4))
    b = rng.uniform(-2, 2, (1, 4))
    if name != "fmod":
        b[0, 1] = onp.nan  # fmax/fmin take the other operand: its gradient flows there
    x, y = np.array(a, dtype="float64"), np.array(b, dtype="float64")
    x.attach_grad()
    y.attach_grad()
    with mx.autograd.record():
        r = getattr(np, name)(x, y)
    r.backward()
    eps, ref = 1e-6, getattr(onp, name)
    num = onp.zeros_like(a)
    for idx in onp.ndindex(a.shape):
        d = onp.zeros_like(a)
        d[idx] = eps
        hi, lo = ref(a + d, b), ref(a - d, b)
        num[idx] = onp.nansum((hi - lo) / (2 * eps))
    onp.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, expect", [
    ("arctan2", onp.arctan2), ("copysign", onp.copysign),
    ("ldexp", lambda a, b: a * 2.0 ** b)])
def test_float_functions_promote_as_numpy_and_compute_integers_in_float32(name, expect):
    fn = getattr(np, name)
    i = np.array([[1, -2, 3]], dtype="int32")
    assert fn(i, i).dtype == onp.float32
    assert fn(i, 2).dtype == onp.float32
    f64 = np.array([[0.5, 1.5, -2.5]], dtype="float64")
    r = fn(np.array([[1.0, -2.0, 3.0]], dtype="float32"), f64)
    assert r.dtype == onp.float64
    onp.testing.assert_allclose(r.asnumpy(), expect(onp.array([[1.0, -2.0, 3.0]]),
                                                    f64.asnumpy()), rtol=1e-6)
    # an integer operand gets a zero gradient, as the other mixed-precision operators
    x = np.array([[1.0, 2.0, 3.0]])
    x.attach_grad()
    i.attach_grad()
    with mx.autograd.record():
        y = fn(x, i)
    y.backward()
    assert (i.grad.asnumpy() == 0).all()


def test_two_python_scalars_give_a_python_number():
    assert np.arctan2(1.0, -1.0) == pytest.approx(math.atan2(1.0, -1.0))
    assert np.copysign(2.0, -0.0) == -2.0
    assert np.ldexp(3.0, 2) == 12.0
    assert math.isnan(np.fmod(1.0, 0.0)) and np.fmax(onp.nan, 1.0) == 1.0


def test_ldexp_does_not_overflow_on_the_way():
    r = np.ldexp(np.array([1e-300, 0.0, onp.inf], dtype="float64"), 1100.0).asnumpy()
    assert r[0] == pytest.approx(math.ldexp(1e-300, 1100)) and r[1] == 0.0 and r[2] == onp.inf


def test_each_call_is_one_table_operator():
    defs = {d["name"]: d for d in _native.op_table()}
    for name in ("arctan2", "copysign", "ldexp", "fmax", "fmin", "fmod", "gcd", "lcm"):
        d = defs[f"_npi_{name}"]
        assert d["np"] == [name] and d["scalar"][0] == "binary", name
        assert d["scalar_op"] == f"_npi_{name}_scalar"
        assert getattr(np, name).__name__ == name
    assert defs["_npi_arctan2"]["rscalar_op"] == "_npi_rarctan2_scalar"
    assert defs["_npi_fmax"]["rscalar_op"] == "_npi_fmax_scalar"  # commutative
    x = np.array([1.0, 2.0])
    mx.nd.waitall()  # earlier tests' work must not land in this profile
    mx.profiler.set_config(profile_imperative=True, aggregate_stats=True)
    mx.profiler.dumps(reset=True)
    mx.profiler.set_state("run")
    np.arctan2(x, x).wait_to_read()
    mx.profiler.set_state("stop")
    table = mx.profiler.dumps(reset=True)
    ops = table.split("Operators:")[1].split("\n\n")[0].splitlines()[2:]
    # (the wait's own row may land after the profiler stops when the machine is busy)
    assert sorted(line.split()[0] for line in ops if not line.startswith("WaitForVar")) == [
        "_npi_arctan2"], table


# ----------------------------------------------------------------------------- predicates

SPECIAL = onp.array([onp.nan, onp.inf, -onp.inf, -0.0, 0.0, -2.5, 3.0], "float64")


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "isposinf", "isneginf",
                                  "signbit", "logical_not"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint8", "int32",
                                   "int64", "bool"])
def test_predicates_as_numpy(name, dtype):
    with onp.errstate(invalid="ignore"):
        h = SPECIAL.astype(dtype) if dtype.startswith("float") else \
            onp.array([0, 1, -3, 5], "int64").astype(dtype)
    got = getattr(np, name)(np.array(h, dtype=dtype))
    assert got.dtype == onp.bool_
    onp.testing.assert_array_equal(got.asnumpy(), getattr(onp, name)(h))


def test_predicate_out_must_be_bool_and_scalars_give_numpys():
    out = np.zeros((3,), dtype="bool")
    r = np.isnan(np.array([1.0, onp.nan, 2.0]), out=out)
    assert r is out and out.asnumpy().tolist() == [False, True, False]
    with pytest.raises(TypeError, match="isnan: out must be a bool array"):
        np.isnan(np.array([1.0]), out=np.zeros((1,)))
    assert np.isnan(float("nan")) and not np.signbit(1.0)
    assert np.equal(1, 2) is onp.False_ or np.equal(1, 2) == onp.False_


CMP = ["equal", "not_equal", "greater", "greater_equal", "less", "less_equal"]


@pytest.mark.parametrize("name", CMP)
def test_comparisons_are_bool_and_broadcast_as_numpy(name):
    a = onp.array([[1.0, 2.0, onp.nan], [4.0, 2.0, -1.0]], "float32")
    b = onp.array([2.0, 2.0, 1.0], "float32")
    fn, ref = getattr(np, name), getattr(onp, name)
    for got, want in [(fn(np.array(a), np.array(b)), ref(a, b)),
                      (fn(np.array(a), 2.0), ref(a, 2.0)),
                      (fn(2.0, np.array(a)), ref(2.0, a)),
                      (fn(np.array(onp.nan_to_num(a), dtype="int32"), np.array(b)),
                       ref(onp.nan_to_num(a).astype("int32"), b))]:
        assert got.dtype == onp.bool_
        onp.testing.assert_array_equal(got.asnumpy(), want)


def test_operators_on_np_arrays_run_one_comparison():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    mx.nd.waitall()
    mx.profiler.set_config(profile_imperative=True, aggregate_stats=True)
    mx.profiler.dumps(reset=True)
    mx.profiler.set_state("run")
    r = [x == y, x < y, 2.0 <= x, x != 2.0]
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    table = mx.profiler.dumps(reset=True)
    ops = table.split("Operators:")[1].split("\n\n")[0].splitlines()[2:]
    names = sorted(line.split()[0] for line in ops if not line.startswith("WaitForVar"))
    assert names == ["_npi_equal", "_npi_greater_equal_scalar", "_npi_less",
                     "_npi_not_equal_scalar"], table  # 2.0 <= x is x >= 2.0
    assert [v.asnumpy().tolist() for v in r] == [[False, True, False], [True, False, False],
                                                 [False, True, True], [True, False, True]]
    # legacy nd keeps the input dtype and writes 1/0
    assert (x.as_nd_ndarray() == y.as_nd_ndarray()).dtype == onp.float32


def test_int_array_compared_with_a_float_scalar_casts_it_as_mxnet():
    a = np.array([2, 3], dtype="int32")
    # MXNet 1.9.1: [True, False], [False, True], [False, True] (2.5 is cast to 2)
    assert (a == 2.5).asnumpy().tolist() == [True, False]
    assert (a > 2.5).asnumpy().tolist() == [False, True]
    assert (2.5 < a).asnumpy().tolist() == [False, True]


def test_predicates_record_zero_gradients_as_mxnet():
    x = np.array([1.0, onp.nan])
    x.attach_grad()
    for fn in (np.isnan, lambda v: v == 1.0, lambda v: np.less(v, v)):
        with mx.autograd.record():
            y = fn(x)
        y.backward()
        assert x.grad.asnumpy().tolist() == [0.0, 0.0]  # MXNet 1.9.1: [0. 0.]
