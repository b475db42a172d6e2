"""MXNet's ``Pad`` as one table operator (``nd.pad``, ``nd.Pad``, ``x.pad``, ``mx.sym.Pad``)
with its gradient ``_backward_Pad``: values and gradients recorded from MXNet 1.9.1
(``tests/fixtures/pad``), NumPy's ``np.pad`` for the same modes, errors that name the
operator, and an MXNet graph JSON with a ``Pad`` node."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd
from ferromx.base import MXNetError

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "pad")
with open(os.path.join(FIX, "pad_cases.json")) as _f:
    CASES = json.load(_f)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['mode']}-{len(c['shape'])}d")
def test_values_and_gradients_match_mxnet(case):
    shape, pw = tuple(case["shape"]), tuple(case["pad_width"])
    x = nd.array(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7.0 - 1.0)
    x.attach_grad()
    with autograd.record():
        y = nd.pad(x, mode=case["mode"], pad_width=pw, constant_value=0.5)
    y.backward(nd.arange(y.size).reshape(y.shape) / 100.0)
    np.testing.assert_allclose(y.asnumpy(), np.array(case["out"]), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), np.array(case["grad"]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "uint8"])
def test_any_rank_and_dtype_matches_numpy(mode, dtype):
    """A superset of MXNet (4-d/5-d float only): any rank, any axis, any dtype."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 50, (3, 5, 4)).astype(dtype)
    widths = ((1, 2), (0, 3), (2, 1))
    kw = {"constant_values": 9} if mode == "constant" else {}
    want = np.pad(a, widths, mode=mode, **kw)
    got = nd.pad(nd.array(a, dtype=dtype), mode=mode, pad_width=sum(widths, ()),
                 constant_value=9)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.asnumpy(), want)


def test_large_input_is_split_and_exact():
    a = np.random.default_rng(1).standard_normal((4, 8, 130, 129)).astype(np.float32)
    got = nd.pad(nd.array(a), mode="reflect", pad_width=(0, 0, 0, 0, 3, 2, 1, 4)).asnumpy()
    np.testing.assert_array_equal(got, np.pad(a, ((0, 0), (0, 0), (3, 2), (1, 4)), "reflect"))


def test_second_derivative_goes_through_the_backward():
    x = nd.array(np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3))
    x.attach_grad()
    with autograd.record():
        y = nd.pad(x, mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1))
        g = autograd.grad((y * y).sum(), [x], create_graph=True)[0]
        z = g.sum()
    z.backward()
    # g = 2 * (each input summed over the outputs that read it), so dz/dx is 2 * (times
    # each input was read)
    reads = np.zeros((2, 3))
    for i in range(4):
        for j in range(5):
            reads[min(max(i - 1, 0), 1), min(max(j - 1, 0), 2)] += 1
    np.testing.assert_allclose(x.grad.asnumpy()[0, 0], 2 * reads)


@pytest.mark.parametrize("kw,match", [
    ({"mode": "reflect", "pad_width": (0, 0, 0, 0, 3, 0, 0, 0)}, "reflect widths"),
    ({"mode": "constant", "pad_width": (0, 0, 1, 1)}, "pad_width must have"),
    ({"mode": "wrap", "pad_width": (0, 0, 0, 0, 1, 1, 1, 1)}, "unknown mode"),
    ({"mode": "edge", "pad_width": (0, 0, 0, 0, -1, 1, 1, 1)}, "non-negative"),
])
def test_bad_input_is_an_error_naming_pad(kw, match):
    with pytest.raises(MXNetError, match=match) as e:
        nd.pad(nd.ones((1, 1, 3, 3)), **kw).wait_to_read()
    assert "Pad" in str(e.value)


def test_methods_and_aliases():
    x = nd.ones((1, 1, 2, 2))
    pw = (0, 0, 0, 0, 1, 1, 1, 1)
    for y in (x.pad(mode="constant", pad_width=pw), nd.Pad(x, mode="constant", pad_width=pw)):
        assert y.shape == (1, 1, 4, 4) and float(y.sum().asscalar()) == 4.0


def test_mxnet_graph_with_a_pad_node_loads_and_runs():
    sym = mx.sym.load(os.path.join(FIX, "pad-symbol.json"))
    x = np.random.default_rng(2).standard_normal((1, 2, 3, 5)).astype(np.float32)
    out = sym.bind(mx.cpu(), {"data": nd.array(x)}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)),
                                                        "reflect"))
    assert json.loads(sym.tojson())["nodes"][1]["op"] == "Pad"


def test_reflection_pad_layer_hybridizes_to_a_pad_node(tmp_path):
    net = mx.gluon.nn.ReflectionPad2D(2)
    x = nd.array(np.random.default_rng(3).standard_normal((1, 2, 4, 5)).astype(np.float32))
    eager = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_array_equal(net(x).asnumpy(), eager)
    net.export(str(tmp_path / "rp"))
    with open(tmp_path / "rp-symbol.json") as f:
        assert any(n["op"] == "Pad" for n in json.load(f)["nodes"])


def test_np_pad_runs_one_operator_for_mxnet_modes():
    import ferromx.numpy as mnp
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for mode in ("constant", "edge", "reflect"):
        got = mnp.pad(mnp.array(a), ((1, 1), (2, 0)), mode=mode)
        assert isinstance(got, mnp.ndarray)
        np.testing.assert_array_equal(got.asnumpy(), np.pad(a, ((1, 1), (2, 0)), mode=mode))
    # repeated reflection (wider than the axis) still works through the composition
    np.testing.assert_array_equal(mnp.pad(mnp.array(a), 5, mode="reflect").asnumpy(),
                                  np.pad(a, 5, mode="reflect"))


def test_empty_axes_and_one_dimension():
    got = nd.pad(nd.zeros((0, 3)), mode="constant", pad_width=(1, 1, 0, 0), constant_value=2)
    np.testing.assert_array_equal(got.asnumpy(), np.full((2, 3), 2.0, np.float32))
    with pytest.raises(MXNetError, match="empty axis has no edge"):
        nd.pad(nd.zeros((0, 3)), mode="edge", pad_width=(1, 1, 0, 0)).wait_to_read()
    v = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(nd.pad(nd.array(v), mode="reflect", pad_width=(4, 4)).asnumpy(),
                                  np.pad(v, 4, mode="reflect"))
