"""The operator table drives the Python API: every operator has a binding, a docstring,
a stub entry, inference that matches what it computes, a gradient (checked by finite
differences) or an explicit "not differentiable" mark; and the stubs are current."""

import ast
import inspect

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native, _op_gen, autograd, nd
from ferromx.ndarray import _op as generated

TABLE = _op_gen.TABLE

# Operators allowed to lack an OpCall kernel or inference, with the reason
# (only data-dependent output shapes qualify; see crates/ferromx/tests/op_table.rs).
EXEMPT: dict[str, str] = {
    "_backward_image_crop": "a backward operator pushed by autograd only: its output is the "
    "forward input's shape, which the gradient function supplies; no attribute carries it",
}


def test_table_is_rich():
    assert len(TABLE) > 150
    names = {d["name"] for d in TABLE}
    assert {"exp", "broadcast_add", "_plus_scalar", "sum", "dot", "FullyConnected"} <= names


@pytest.mark.parametrize("d", TABLE, ids=lambda d: d["name"])
def test_every_operator_is_bound_documented_and_marked(d):
    assert d["doc"], d["name"]
    if d["name"] not in EXEMPT:
        # an OpCall kernel, or a composition of other table operators (each an OpCall)
        assert d["cpu"] in ("call", "composite"), f"{d['name']} is not an OpCall kernel"
        assert d["infer"], f"{d['name']} has no shape/dtype inference"
    assert d["gpu"] == "empty"
    assert d["grad"] in ("function", "recorded") or d["grad"].startswith("none: ")
    for name in _op_gen.nd_names(d):
        assert getattr(nd, name).__doc__, name  # generated, or a hand-written wrapper
        fn = getattr(generated, name)
        assert d["doc"].split("`")[0][:10] in fn.__doc__, name
    for alias in d["np"]:
        assert callable(getattr(mx.np, alias)), alias
    for alias in d["npx"]:
        assert callable(getattr(mx.npx, alias)), alias
    if d["fluent"]:  # by MXNet's method name (``Pad``: ``x.pad()``)
        assert callable(getattr(nd.NDArray, _op_gen._method_name(d))), d["name"]


def test_docstrings_list_mxnet_parameters():
    doc = nd.one_hot.__doc__
    for p in ("depth : int, required", "on_value : float, default 1.0", "dtype :"):
        assert p in doc, doc
    assert list(inspect.signature(nd.topk).parameters)[:3] == ["data", "axis", "k"]


def _stub_functions():
    with open(_op_gen.STUB_PATH) as f:
        tree = ast.parse(f.read())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_stubs_are_current():
    with open(_op_gen.STUB_PATH) as f:
        assert f.read() == _op_gen.stub_text(), "run: python -m ferromx._op_gen"
    with open(_op_gen.NATIVE_STUB_PATH) as f:
        assert f.read() == _op_gen.native_stub_text(), "run: python -m ferromx._op_gen"


def test_stub_matches_runtime_signatures():
    stubs = _stub_functions()
    for d in TABLE:
        for public in _op_gen.nd_names(d):
            assert public in stubs, public
            if _op_gen.is_binary(d):
                continue
            a = stubs[public].args
            stub_names = [x.arg for x in a.args + a.kwonlyargs] + ([a.vararg.arg] if a.vararg else [])
            runtime = list(inspect.signature(getattr(generated, public)).parameters)
            assert sorted(stub_names) == sorted(runtime), public


def _kwargs(text):
    return eval(f"dict({text})", {"__builtins__": {"dict": dict}})


def _example_inputs(d, rng, dtype="float64"):
    shapes, _attrs, (lo, hi) = d["example"]
    return [rng.uniform(lo, hi, size=s).astype(dtype) for s in shapes]


def _call(d, arrays, kwargs):
    fn = getattr(nd, _op_gen.nd_names(d)[0]) if _op_gen.nd_names(d) else None
    if fn is None or _op_gen.is_binary(d):
        return _native.invoke(d["name"], arrays, **kwargs)
    if d["inputs"] and d["inputs"][0].startswith("*"):
        return fn(*arrays, **kwargs)
    return fn(*arrays, **kwargs)


WITH_EXAMPLES = [d for d in TABLE if d["example"] is not None]


@pytest.mark.parametrize("d", [d for d in WITH_EXAMPLES if d["infer"]], ids=lambda d: d["name"])
def test_inference_matches_the_result(d):
    rng = np.random.default_rng(0)
    xs = _example_inputs(d, rng, "float32")
    kwargs = _kwargs(d["example"][1])
    want = _native.op_infer(d["name"], [(list(x.shape), "float32") for x in xs], **kwargs)
    got = _call(d, [nd.array(x, dtype="float32") for x in xs], kwargs)
    got = got if isinstance(got, list) else [got]
    assert [(list(g.shape), g.dtype.__name__ if hasattr(g.dtype, "__name__") else str(g.dtype))
            for g in got] == [(s, t) for s, t in want]


# Operators whose gradient is deliberately not the derivative of their forward (checked
# in tests/python/test_conformance_train.py).
NOT_THE_DERIVATIVE = {
    "BlockGrad": "stops gradients: zeros",
    "MakeLoss": "a loss head: grad_scale whatever the head gradient",
    "_contrib_round_ste": "straight-through estimator: identity gradient (tests/python/test_contrib_ops.py)",
    "_contrib_sign_ste": "straight-through estimator: identity gradient (tests/python/test_contrib_ops.py)",
    "_contrib_gradientmultiplier": "scales the gradient by `scalar` (tests/python/test_contrib_ops.py)",
}
DIFFERENTIABLE = [d for d in WITH_EXAMPLES if not d["grad"].startswith("none")
                  and d["name"] not in NOT_THE_DERIVATIVE]


@pytest.mark.parametrize("d", DIFFERENTIABLE, ids=lambda d: d["name"])
def test_gradient_matches_finite_differences(d):
    """d/dx sum(w * op(x)) by autograd against central differences, in float64."""
    rng = np.random.default_rng(1)
    xs = _example_inputs(d, rng)
    kwargs = _kwargs(d["example"][1])
    arrs = [nd.array(x, dtype="float64") for x in xs]
    for a in arrs:
        a.attach_grad()
    with autograd.record():
        out = _call(d, arrs, kwargs)
        out = out[0] if isinstance(out, list) else out
        w = nd.array(rng.uniform(0.5, 1.5, size=out.shape), dtype="float64")
        loss = (out * w).sum()
    loss.backward()
    wn = w.asnumpy()

    def f(vals):
        r = _call(d, [nd.array(v, dtype="float64") for v in vals], kwargs)
        r = r[0] if isinstance(r, list) else r
        return float((r.asnumpy() * wn).sum())

    eps = 1e-6
    for k, x in enumerate(xs):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            hi = [v.copy() for v in xs]
            lo = [v.copy() for v in xs]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            num[idx] = (f(hi) - f(lo)) / (2 * eps)
        np.testing.assert_allclose(arrs[k].grad.asnumpy(), num, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{d['name']} input {k}")


def test_unknown_parameters_raise_naming_the_operator():
    with pytest.raises(mx.base.MXNetError, match=r"sum: unknown parameter 'axes'"):
        nd.sum(nd.ones((2, 3)), axes=1)


def test_not_differentiable_operators_say_why():
    x = nd.array([0.5, 1.5])
    x.attach_grad()
    with autograd.record():  # the third derivative of gammaln: tetragamma is not implemented
        (g,) = autograd.grad(nd.gammaln(x).sum(), [x], create_graph=True, retain_graph=True)
        (h,) = autograd.grad(g.sum(), [x], create_graph=True, retain_graph=True)
        y = h.sum()
    with pytest.raises(mx.base.MXNetError, match="_trigamma: not differentiable"):
        y.backward()
        y.wait_to_read()
        x.grad.asnumpy()
