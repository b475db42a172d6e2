"""MXNet's int8 quantization operators (`nd.contrib.quantize*`, `dequantize`,
`requantize`, `calibrate_entropy` and the `quantized_*` layers).

Each recorded case (tests/fixtures/quantization/record_quantization.py, MXNet 1.9.1's CPU
wheel) is replayed and must give MXNet's integers exactly and its floats to float32
rounding. Beyond the recordings: the layers against their float counterparts on the same
integers, the deliberate differences (where MXNet 1.9.1 crashes or wraps), and bad input.
"""

import json
import os

import ferromx as mx
import numpy as np
import pytest

nd = mx.nd
FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "quantization", "quantization_mxnet.json")
with open(FIX) as _f:
    CASES = json.load(_f)["cases"]


def _arr(spec):
    return np.array(spec["data"], dtype=spec["dtype"]).reshape(spec["shape"])


def _ids():
    return [f"{i}-{c['op']}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_matches_mxnet(case):
    ins = [nd.array(_arr(s), dtype=s["dtype"]) for s in case["inputs"]]
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in case["attrs"].items()}
    outs = getattr(nd.contrib, case["op"])(*ins, **attrs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    assert len(outs) == len(case["outputs"])
    for got, spec in zip(outs, case["outputs"]):
        want = _arr(spec)
        got = got.asnumpy()
        assert got.dtype == want.dtype, (case["op"], got.dtype, want.dtype)
        assert got.shape == want.shape
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)


def _r(v):
    return nd.array([v])


def test_fully_connected_equals_float_layer_on_integers():
    rs = np.random.RandomState(0)
    d = rs.randint(-127, 128, (8, 33)).astype(np.int8)
    w = rs.randint(-127, 128, (5, 33)).astype(np.int8)
    out, lo, hi = nd.contrib.quantized_fully_connected(
        nd.array(d, dtype="int8"), nd.array(w, dtype="int8"), _r(-1.0), _r(1.0), _r(-1.0), _r(1.0),
        num_hidden=5, no_bias=True)
    np.testing.assert_array_equal(out.asnumpy(), d.astype(np.int64) @ w.T.astype(np.int64))
    assert out.dtype == np.int32
    np.testing.assert_allclose(hi.asnumpy(), [(1 / 127) ** 2 * 2 ** 31], rtol=1e-6)
    assert lo.asscalar() == -hi.asscalar()


def test_conv_equals_float_convolution_on_integers():
    rs = np.random.RandomState(1)
    d = rs.randint(-127, 128, (2, 3, 5, 5)).astype(np.int8)  # int8 data: a superset of MXNet's CPU
    w = rs.randint(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    b = rs.randint(-127, 128, (4,)).astype(np.int8)
    out = nd.contrib.quantized_conv(nd.array(d, dtype="int8"), nd.array(w, dtype="int8"),
                                    nd.array(b, dtype="int8"), *[_r(v) for v in (-1, 1, -1, 1, -1, 1)],
                                    kernel=(3, 3), num_filter=4, pad=(1, 1))[0]
    ref = nd.Convolution(nd.array(d, dtype="float64"), nd.array(w, dtype="float64"),
                         nd.array(b, dtype="float64"), kernel=(3, 3), num_filter=4, pad=(1, 1))
    np.testing.assert_array_equal(out.asnumpy(), ref.asnumpy().astype(np.int32))


def test_quantize_dequantize_round_trip():
    x = np.linspace(-4, 4, 101).astype(np.float32)
    q, lo, hi = nd.contrib.quantize_v2(nd.array(x), out_type="int8")
    back = nd.contrib.dequantize(q, lo, hi).asnumpy()
    assert np.abs(back - x).max() <= 4 / 127.5 / 2 + 1e-6


def test_requantize_uncalibrated_takes_the_data_range():
    # MXNet 1.9.1 converts the data's largest magnitude back to int32, so 2^31 - 1 overflows
    # into a negative range; ferromx keeps it in float (docs/for-mxnet-users.md)
    acc = nd.array([2147483647, -5, 0], dtype="int32")
    out, lo, hi = nd.contrib.requantize(acc, _r(-10.0), _r(10.0))
    assert out.asnumpy().tolist() == [127, 0, 0]
    np.testing.assert_allclose([lo.asscalar(), hi.asscalar()], [-10.0, 10.0], rtol=1e-6)


def test_quantize_asym_any_rank():
    # MXNet 1.9.1 crashes (segfault) on quantize_asym of anything but 3-d data
    x = nd.array([[-1.5, 0.2, 3.0], [0.7, -0.3, 2.2]])
    out, scale, shift = nd.contrib.quantize_asym(x)
    s = np.float32(255) / np.float32(4.5)
    assert scale.asscalar() == pytest.approx(s)
    assert shift.asscalar() == pytest.approx(255 - 3.0 * s)
    assert out.dtype == np.uint8
    assert out.asnumpy()[0].tolist() == [0, 96, 255]


def test_elemwise_mul_calibrated_saturates():
    a = nd.array([127, -127], dtype="int8")
    out = nd.contrib.quantized_elemwise_mul(a, a, _r(-127.5), _r(127.5), _r(-127.5), _r(127.5),
                                            min_calib_range=-1.0, max_calib_range=1.0)[0]
    assert out.asnumpy().tolist() == [127, 127]


def test_rnn_restores_the_data_and_runs_lstm():
    rs = np.random.RandomState(2)
    T, N, I, H = 3, 2, 4, 5
    data = rs.uniform(-1, 1, (T, N, I)).astype(np.float32)
    scale = np.float32(128.0 / (data.max() - data.min()))
    shift = np.float32(128.0 - data.max() * scale)
    qdata = (data * scale + shift + 0.5).astype(np.uint8)
    params = nd.array(rs.uniform(-0.3, 0.3, (4 * H * (I + H) + 8 * H,)))
    h0, c0 = nd.array(rs.uniform(-1, 1, (1, N, H))), nd.array(rs.uniform(-1, 1, (1, N, H)))
    ref = nd.RNN(nd.array((qdata.astype(np.float32) - shift) / scale), params, h0, c0,
                 state_size=H, num_layers=1, mode="lstm")
    got = nd.contrib.quantized_rnn(nd.array(qdata, dtype="uint8"), params, h0, c0, _r(scale), _r(shift),
                                   state_size=H, num_layers=1, mode="lstm")
    np.testing.assert_allclose(got.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
    fl = nd.RNN(nd.array(data), params, h0, c0, state_size=H, num_layers=1, mode="lstm")
    assert np.mean((got.asnumpy() - fl.asnumpy()) ** 2) < 1e-3


def test_symbol_graph_with_quantized_ops():
    data = mx.sym.Variable("data")
    q = mx.sym.contrib.quantize_v2(data, out_type="int8")
    deq = mx.sym.contrib.dequantize(q[0], q[1], q[2])
    x = np.array([[-1.0, 0.5, 2.0]], np.float32)
    out = deq.bind(mx.cpu(), {"data": nd.array(x)}).forward()[0].asnumpy()
    np.testing.assert_allclose(out, x, atol=2 / 127.5)
    fc = mx.sym.contrib.quantized_fully_connected(mx.sym.Variable("qdata"), num_hidden=3, no_bias=True)
    names = [n.split("connected0_")[-1] for n in fc.list_arguments()[1:]]
    assert names == ["weight", "min_data", "max_data", "min_weight", "max_weight"], fc.list_arguments()
    args, outs, _ = fc.infer_shape(qdata=(2, 4))
    assert args[1] == (3, 4) and outs == [(2, 3), (1,), (1,)]
    # MXNet's type rules: int8 weight, float32 ranges, int32 output
    arg_t, out_t, _ = fc.infer_type(qdata="uint8")
    assert arg_t == [np.uint8, np.int8] + [np.float32] * 4 and out_t == [np.int32, np.float32, np.float32]
    ex = fc.simple_bind(mx.cpu(), qdata=(2, 4), type_dict={"qdata": "int8"}, grad_req="null")
    ex.arg_dict["qdata"][:] = nd.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    for k, v in ex.arg_dict.items():
        if k.endswith("weight") and "_m" not in k:
            v[:] = 1
        elif "min_" in k or "max_" in k:
            v[:] = 1.0
    assert ex.forward()[0].asnumpy().tolist() == [[10, 10, 10], [26, 26, 26]]


@pytest.mark.parametrize("call, words", [
    (lambda: nd.contrib.dequantize(nd.array([1.0]), _r(-1), _r(1)), ["dequantize", "int8"]),
    (lambda: nd.contrib.quantize(nd.array([1.0]), nd.array([1.0, 2.0]), _r(1)), ["quantize", "min_range"]),
    (lambda: nd.contrib.requantize(nd.array([1.0]), _r(-1), _r(1)), ["requantize", "int32"]),
    (lambda: nd.contrib.quantized_act(nd.array([1], dtype="int8"), _r(-1), _r(1), act_type="tanh"),
     ["quantized_act", "relu"]),
    (lambda: nd.contrib.quantized_pooling(nd.array([[[[1]]]], dtype="int8"), _r(-1), _r(1), kernel=(1, 1),
                                          pool_type="lp"), ["quantized_pooling", "pool_type"]),
    (lambda: nd.contrib.quantized_fully_connected(nd.array([[1, 2]], dtype="int8"), nd.array([[1, 2, 3]], dtype="int8"),
                                                  *[_r(v) for v in (-1, 1, -1, 1)], num_hidden=1, no_bias=True),
     ["quantized_fully_connected"]),
    (lambda: nd.contrib.quantized_fully_connected(nd.array([[1, 2]], dtype="int8"), nd.array([[1, 2]], dtype="int8"),
                                                  nd.array([-1.0, 0.0]), *[_r(v) for v in (1, -1, 1)], num_hidden=1,
                                                  no_bias=True), ["quantized_fully_connected", "'min_data'"]),
    (lambda: nd.contrib.quantized_batch_norm(nd.ones((1, 2, 1, 1), dtype="int8"), *[nd.ones((2,))] * 4, _r(-1), _r(1)),
     ["quantized_batch_norm", "calib"]),
    (lambda: nd.contrib.quantized_elemwise_mul(nd.array([1], dtype="uint8"), nd.array([1], dtype="uint8"),
                                               *[_r(v) for v in (-1, 1, -1, 1)]), ["quantized_elemwise_mul", "int8"]),
    (lambda: nd.contrib.calibrate_entropy(nd.ones((5,)), nd.ones((5,)), num_quantized_bins=3),
     ["calibrate_entropy", "hist_edges"]),
])
def test_bad_input_is_a_clear_error(call, words):
    with pytest.raises(mx.base.MXNetError) as e:
        r = call()
        mx.nd.waitall()
        del r
    msg = str(e.value)
    for w in words:
        assert w in msg, msg


def test_rnn_graph_takes_float_parameters_and_the_data_shape_alone():
    q = mx.sym.Variable("qdata", shape=(3, 2, 4), dtype="uint8")
    s = mx.sym.contrib.quantized_rnn(data=q, num_layers=1, state_outputs=True, state_size=5, mode="lstm",
                                     name="qrnn")
    args, _, _ = s.infer_shape()
    assert args == [(3, 2, 4), (4 * 5 * (4 + 5) + 8 * 5,), (1, 2, 5), (1, 2, 5), (1,), (1,)]
    ex = s.simple_bind(mx.cpu(), grad_req="null")
    dtypes = [ex.arg_dict[n].dtype for n in s.list_arguments()]
    assert dtypes == [np.uint8] + [np.float32] * 5
    ex.arg_dict[s.list_arguments()[4]][:] = 1.0  # scale
    outs = ex.forward()
    assert [o.shape for o in outs] == [(3, 2, 5), (1, 2, 5), (1, 2, 5)]
