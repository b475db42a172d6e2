"""Gluon convolution, pooling, normalization and activation layers against MXNet 1.9.1.

Reference values come from ``tests/fixtures/gluon_conv/record_gluon_conv.py`` (MXNet
1.9.1): each case's layer is built from the same constructor expression, given the
recorded parameters, and must reproduce MXNet's training-mode output, input and
parameter gradients, the parameters after the step (BatchNorm's running statistics)
and the prediction-mode output.
"""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon
from ferromx import ndarray as nd
from ferromx.gluon import nn

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gluon_conv")
with open(os.path.join(FIX, "cases.json")) as _f:
    CASES = json.load(_f)["cases"]
REF = np.load(os.path.join(FIX, "layers.npz"))

# The native operator each case needs (cases are skipped until it exists).
_OPS = {
    "conv": "Convolution",
    "pool": "Pooling",
    "max": "Pooling",
    "avg": "Pooling",
    "global": "Pooling",
    "batchnorm": "BatchNorm",
    "instancenorm": "InstanceNorm",
    "groupnorm": "GroupNorm",
}


def _needed_op(key):
    if "transpose" in key:
        return "Deconvolution"
    for prefix, op in _OPS.items():
        if key.startswith(prefix):
            return op
    return None


def _require(op):
    if op is not None and not hasattr(nd, op):
        pytest.skip(f"operator nd.{op} is not available yet")


def _build(key):
    case = CASES[key]
    layer = eval(case["expr"], {"nn": nn, "cnn": gluon.contrib.nn})
    layer.initialize()
    return layer, nd.array(REF[f"{key}/x"])


def _set_params(key, layer):
    for name, param in layer.params.items():
        param.set_data(nd.array(REF[f"{key}/param/{name[len(layer.prefix) :]}"]))


def _close(got, key, what, rtol=1e-4, atol=1e-5):
    want = REF[f"{key}/{what}"]
    np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=atol, err_msg=f"{key} {what}")


@pytest.mark.parametrize("key", sorted(CASES))
def test_layer_matches_mxnet(key):
    _require(_needed_op(key))
    layer, x = _build(key)
    layer(x)  # finish deferred initialization
    _set_params(key, layer)
    x.attach_grad()
    with autograd.record():
        out = layer(x)
    out.backward(nd.array(REF[f"{key}/head"]))
    _close(out, key, "out_train")
    if key == "selu":
        # MXNet 1.9.1's SELU backward is not the derivative for x < 0; ferromx's is.
        lam, alpha = 1.0507009873554805, 1.6732632423543772
        xs = REF["selu/x"]
        want = np.where(xs > 0, lam, lam * alpha * np.exp(xs)) * REF["selu/head"]
        np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)
    else:
        _close(x.grad, key, "grad/x")
    for name, param in layer.params.items():
        short = name[len(layer.prefix) :]
        if short == "gamma" and getattr(layer, "_kwargs", {}).get("fix_gamma"):
            # MXNet's CPU BatchNorm(fix_gamma=True) also writes 1s into gamma; the value is
            # unused (and not learned) either way, so only the outputs are compared.
            continue
        _close(param.data(), key, f"after/{short}")
        if param.grad_req != "null":
            _close(param.grad(), key, f"grad/{short}")
        else:
            assert f"{key}/grad/{short}" not in REF.files
    _close(layer(x), key, "out_predict")


def test_conv2d_nhwc_equals_nchw():
    # MXNet 1.9.1's CPU build cannot run NHWC convolution; check against NCHW instead.
    _require("Convolution")
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (2, 5, 6, 3)).astype(np.float32)
    nhwc = nn.Conv2D(4, 3, padding=1, layout="NHWC")
    nchw = nn.Conv2D(4, 3, padding=1, in_channels=3)
    nhwc.initialize()
    nchw.initialize()
    out = nhwc(nd.array(x))
    assert nhwc.weight.shape == (4, 3, 3, 3)
    weight = nhwc.weight.data().asnumpy()  # (out, kh, kw, in)
    nchw.weight.set_data(nd.array(weight.transpose(0, 3, 1, 2)))
    nchw.bias.set_data(nhwc.bias.data())
    ref = nchw(nd.array(x.transpose(0, 3, 1, 2))).asnumpy().transpose(0, 2, 3, 1)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)


def test_convnet_params_from_mxnet():
    _require("Convolution")
    _require("BatchNorm")
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, activation="relu"))
        net.add(nn.BatchNorm())
        net.add(nn.MaxPool2D())
        net.add(nn.Dense(3))
    net.load_parameters(os.path.join(FIX, "convnet.params"))
    x = nd.array(REF["convnet/x"])
    np.testing.assert_allclose(net(x).asnumpy(), REF["convnet/out_predict"], rtol=1e-4, atol=1e-5)
    with autograd.record():
        out = net(x)
    np.testing.assert_allclose(out.asnumpy(), REF["convnet/out_train"], rtol=1e-4, atol=1e-5)


# ---- structure: names, shapes, deferred initialization (no conv operator needed) ----------


def _shapes(block):
    return {k[len(block.prefix) :]: (p.shape, p.grad_req) for k, p in block.params.items()}


def test_conv_parameter_names_and_shapes():
    conv = nn.Conv2D(8, (3, 2), groups=2)
    assert conv.prefix.startswith("conv")
    assert _shapes(conv) == {"weight": ((8, 0, 3, 2), "write"), "bias": ((8,), "write")}
    conv = nn.Conv2D(8, 3, groups=2, in_channels=4, layout="NHWC", use_bias=False)
    assert _shapes(conv) == {"weight": ((8, 3, 3, 2), "write")}
    assert _shapes(nn.Conv3D(4, 2, in_channels=2, layout="NDHWC"))["weight"][0] == (4, 2, 2, 2, 2)
    assert _shapes(nn.Conv1D(3, 5, in_channels=2))["weight"][0] == (3, 2, 5)
    deconv = nn.Conv2DTranspose(8, 3, groups=2, in_channels=4)
    assert _shapes(deconv) == {"weight": ((4, 4, 3, 3), "write"), "bias": ((8,), "write")}
    assert _shapes(nn.Conv1DTranspose(8, 3))["weight"][0] == (0, 8, 3)
    assert nn.Conv2D(4, 3, activation="relu").act.prefix.endswith("relu_")


def test_conv_arguments_checked():
    with pytest.raises(ValueError, match="kernel_size"):
        nn.Conv2D(4, (3, 3, 3))
    with pytest.raises(ValueError, match="NCHW"):
        nn.Conv2D(4, 3, layout="NCW")
    with pytest.raises(ValueError, match="NCW"):
        nn.Conv1D(4, 3, layout="NWC")
    with pytest.raises(ValueError, match="pool_size"):
        nn.MaxPool2D((2, 2, 2))
    with pytest.raises(ValueError, match="padding"):
        nn.ReflectionPad2D((1, 2))


def test_conv_bad_input_names_layer_and_shape():
    conv = nn.Conv2D(4, 3, in_channels=3, prefix="myconv_")
    conv.initialize()
    with pytest.raises(ValueError, match=r"Conv2D 'myconv'.*4-D.*\(2, 3, 5\)"):
        conv(nd.ones((2, 3, 5)))
    with pytest.raises(
        ValueError, match=r"Conv2D 'myconv' expects 3 input channels.*\(1, 2, 5, 5\)"
    ):
        conv(nd.ones((1, 2, 5, 5)))
    grouped = nn.Conv2D(4, 3, groups=2)
    grouped.initialize()
    with pytest.raises(ValueError, match=r"not divisible by groups=2"):
        grouped(nd.ones((1, 3, 5, 5)))
    pool = nn.MaxPool2D()
    with pytest.raises(ValueError, match=r"MaxPool2D 'pool\d+'.*\(4, 4\)"):
        pool(nd.ones((4, 4)))
    bn = nn.BatchNorm(in_channels=3)
    bn.initialize()
    with pytest.raises(ValueError, match=r"BatchNorm 'batchnorm\d+' expects 3 channels.*\(2, 4\)"):
        bn(nd.ones((2, 4)))
    gn = nn.GroupNorm(num_groups=3)
    gn.initialize()
    with pytest.raises(ValueError, match=r"GroupNorm.*not divisible by num_groups=3"):
        gn(nd.ones((1, 4, 2, 2)))


def test_operator_errors_name_the_layer():
    _require("Convolution")
    conv = nn.Conv2D(4, 3, in_channels=2, prefix="small_")
    conv.initialize()
    with pytest.raises(ValueError, match=r"Conv2D 'small'.*\(1, 2, 2, 2\)"):
        conv(nd.ones((1, 2, 2, 2)))
    with pytest.raises(ValueError, match=r"MaxPool2D 'pool\d+'.*\(1, 2, 2, 2\)"):
        nn.MaxPool2D(3)(nd.ones((1, 2, 2, 2)))


def test_deferred_conv_infers_in_channels():
    conv = nn.Conv2D(6, 3, groups=3)
    conv.initialize()
    assert conv.weight.shape == (6, 0, 3, 3)
    conv.infer_shape(nd.zeros((1, 9, 5, 5)))
    assert conv.weight.shape == (6, 3, 3, 3)
    deconv = nn.Conv2DTranspose(6, 3)
    deconv.infer_shape(nd.zeros((1, 5, 4, 4)))
    assert deconv.weight.shape == (5, 6, 3, 3)


def test_batchnorm_parameters():
    bn = nn.BatchNorm()
    assert _shapes(bn) == {
        "gamma": ((0,), "write"),
        "beta": ((0,), "write"),
        "running_mean": ((0,), "null"),
        "running_var": ((0,), "null"),
    }
    fixed = nn.BatchNorm(scale=False, center=False, in_channels=3)
    assert {k: v[1] for k, v in _shapes(fixed).items()} == dict.fromkeys(
        ["gamma", "beta", "running_mean", "running_var"], "null"
    )
    assert fixed._kwargs["fix_gamma"] is True
    bn.infer_shape(nd.zeros((2, 5, 3)))
    assert bn.running_var.shape == (5,)
    assert nn.BatchNorm(axis=-1).infer_shape(nd.zeros((2, 3, 7))) is None
    assert "in_channels=None" in repr(nn.BatchNorm())
    bn.cast("float16")
    assert np.dtype(bn.gamma.dtype) == np.float32
    sync = nn.SyncBatchNorm(in_channels=4, num_devices=2)
    assert sync.prefix.startswith("syncbatchnorm")
    assert {k: v for k, v in _shapes(sync).items()} == {
        "gamma": ((4,), "write"),
        "beta": ((4,), "write"),
        "running_mean": ((4,), "null"),
        "running_var": ((4,), "null"),
    }
    assert gluon.contrib.nn.SyncBatchNorm is nn.SyncBatchNorm


def test_other_norm_parameters():
    inorm = nn.InstanceNorm()
    assert _shapes(inorm) == {"gamma": ((0,), "null"), "beta": ((0,), "write")}
    inorm.infer_shape(nd.zeros((2, 3, 4)))
    assert inorm.gamma.shape == (3,)
    assert _shapes(nn.GroupNorm(4)) == {"gamma": ((4,), "write"), "beta": ((4,), "write")}
    assert _shapes(nn.PReLU(in_channels=3)) == {"alpha": ((3,), "write")}


def test_pool_repr_and_prefix():
    pool = nn.AvgPool2D(3, 2, 1, ceil_mode=True)
    assert pool.prefix.startswith("pool")
    assert repr(pool) == (
        "AvgPool2D(size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True, "
        "global_pool=False, pool_type=avg, layout=NCHW)"
    )
    assert nn.GlobalAvgPool2D()._kwargs["global_pool"] is True
    assert nn.MaxPool1D(3)._kwargs["stride"] == (3,)
    assert repr(nn.Conv2D(8, 3, strides=2, in_channels=4, use_bias=False)) == (
        "Conv2D(4 -> 8, kernel_size=(3, 3), stride=(2, 2), bias=False)"
    )


def test_reflection_pad_and_activations_forward():
    x = nd.array(np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4))
    out = nn.ReflectionPad2D(1)(x).asnumpy()
    np.testing.assert_array_equal(out[0, 0], np.pad(np.arange(12).reshape(3, 4), 1, "reflect"))
    v = np.array([[-2.0, -0.5, 0.0, 1.5]], dtype=np.float32)
    np.testing.assert_allclose(nn.SiLU()(nd.array(v)).asnumpy(), v / (1 + np.exp(-v)), rtol=1e-6)
    swish = nn.Swish(beta=2.0)(nd.array(v)).asnumpy()
    np.testing.assert_allclose(swish, v / (1 + np.exp(-2 * v)), rtol=1e-6)
    prelu = nn.PReLU(in_channels=2)
    prelu.initialize()
    y = prelu(nd.array(np.array([[[-1.0], [2.0]], [[3.0], [-4.0]]], dtype=np.float32)))
    np.testing.assert_allclose(y.asnumpy().ravel(), [-0.25, 2.0, 3.0, -1.0])


def test_lambda_and_flatten():
    assert nn.Flatten()(nd.ones((2, 3, 4))).shape == (2, 12)
    assert nn.Lambda("tanh")(nd.zeros((2,))).asnumpy().tolist() == [0.0, 0.0]
    hl = nn.HybridLambda(lambda F, x: F.relu(x) * 2)
    assert hl(nd.array([-1.0, 3.0])).asnumpy().tolist() == [0.0, 6.0]


def test_concurrent_and_identity():
    from ferromx.gluon.contrib.nn import Concurrent, HybridConcurrent, Identity

    net = HybridConcurrent(axis=1)
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2), Identity())
    net.initialize()
    assert net(nd.ones((4, 2))).shape == (4, 5)
    seq = Concurrent(axis=0)
    seq.add(Identity(), Identity())
    assert seq(nd.ones((1, 2))).shape == (2, 2)
    assert mx.gluon.contrib.nn.Identity is Identity
