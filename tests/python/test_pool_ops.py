"""Pooling: recorded MXNet 1.9.1 values (forward and gradients), NumPy references,
layouts, conventions and clear errors for bad input."""

import ast
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "conv_ops")
POOL = np.load(os.path.join(FIX, "pool.npz"))
NAMES = sorted({k.split("/")[0] for k in POOL.files})


@pytest.mark.parametrize("name", NAMES)
def test_matches_recorded_mxnet(name):
    attrs = ast.literal_eval(str(POOL[f"{name}/attrs"]))
    x = nd.array(POOL[f"{name}/in0"], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.Pooling(x, **attrs)
    y.backward(nd.array(POOL[f"{name}/head"], dtype="float64"))
    np.testing.assert_allclose(y.asnumpy(), POOL[f"{name}/out0"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(x.grad.asnumpy(), POOL[f"{name}/grad0"], rtol=1e-6, atol=1e-9)


def np_pool2d(x, k, s, p, kind):
    """Reference 2-d valid pooling with padding (avg counts the padding, as MXNet's default)."""
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=fill)
    oh = (x.shape[2] + 2 * p[0] - k[0]) // s[0] + 1
    ow = (x.shape[3] + 2 * p[1] - k[1]) // s[1] + 1
    win = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(2, 3))
    win = win[:, :, ::s[0], ::s[1]][:, :, :oh, :ow]
    return win.max(axis=(-2, -1)) if kind == "max" else win.mean(axis=(-2, -1))


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_matches_numpy_float32(kind):
    x = np.random.default_rng(0).standard_normal((4, 6, 13, 11)).astype("float32")
    y = nd.Pooling(nd.array(x), kernel=(3, 2), stride=(2, 2), pad=(1, 1), pool_type=kind)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.asnumpy(), np_pool2d(x, (3, 2), (2, 2), (1, 1), kind), rtol=1e-5,
                               atol=1e-6)


def test_global_pool_and_layouts():
    x = np.random.default_rng(1).standard_normal((2, 5, 4, 3))
    g = nd.Pooling(nd.array(x, dtype="float64"), global_pool=True, pool_type="avg", layout="NHWC")
    assert g.shape == (2, 1, 1, 3)
    np.testing.assert_allclose(g.asnumpy()[:, 0, 0], x.mean(axis=(1, 2)), rtol=1e-12)
    x5 = np.random.default_rng(2).standard_normal((1, 2, 3, 4, 5))
    m = nd.Pooling(nd.array(x5), global_pool=True)
    np.testing.assert_allclose(m.asnumpy().ravel(), x5.max(axis=(2, 3, 4)).ravel())
    assert mx.npx.pooling(mx.np.ones((1, 1, 4, 4)), kernel=(2, 2), stride=(2, 2)).shape == \
        (1, 1, 2, 2)


def test_same_convention_1d_max():
    # MXNet 1.9.1 crashes on 'same' (an out-of-range pad index); ferromx pads like
    # TensorFlow's SAME: ceil(7/2) = 4 outputs, (4-1)*2+3-7 = 2 padded positions, 1 in front.
    x = np.arange(7.0).reshape(1, 1, 7)
    y = nd.Pooling(nd.array(x), kernel=(3,), stride=(2,), pooling_convention="same")
    assert y.shape == (1, 1, 4)
    np.testing.assert_allclose(y.asnumpy().ravel(), [1, 3, 5, 6])


def test_max_gradient_goes_to_the_first_maximum():
    x = nd.array([[[[1.0, 3.0], [3.0, 2.0]]]])
    x.attach_grad()
    with autograd.record():
        y = nd.Pooling(x, kernel=(2, 2))
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[[[0, 1], [0, 0]]]])


@pytest.mark.parametrize("kwargs,shape,match", [
    ({"kernel": (5, 5)}, (1, 1, 3, 3), (r"Pooling: .*\(1, 1, 3, 3\).*kernel size 5 exceeds the "
                                        r"input \(3 padded to 3\)")),
    ({"kernel": (2, 2), "pool_type": "median"}, (1, 1, 3, 3), "Pooling: unknown pool_type 'median'"),
    ({"kernel": (2, 2), "layout": "HWCN"}, (1, 1, 3, 3), "Pooling: unknown layout 'HWCN'"),
    ({"kernel": (2, 2), "pooling_convention": "round"}, (1, 1, 3, 3),
     "Pooling: unknown pooling_convention 'round'"),
    ({"kernel": (2,)}, (1, 1, 3, 3), r"Pooling: kernel \(2,\) does not fit data of shape"),
    ({"kernel": (2, 2), "pool_type": "lp"}, (1, 1, 3, 3), "Pooling: pool_type='lp' needs"),
    ({"kernel": (2, 2)}, (3, 3), "Pooling: data must be 3-d, 4-d or 5-d"),
])
def test_bad_input_raises_naming_the_operator(kwargs, shape, match):
    with pytest.raises(mx.base.MXNetError, match=match):
        nd.Pooling(nd.ones(shape), **kwargs)


EXTRA = np.load(os.path.join(FIX, "extra.npz"))
RESIZE = ["upsampling_nearest", "upsampling_bilinear", "adaptive_avg", "adaptive_avg_1",
          "bilinear_resize", "bilinear_resize_nc"]


@pytest.mark.parametrize("name", RESIZE)
def test_resize_ops_match_recorded_mxnet(name):
    attrs = ast.literal_eval(str(EXTRA[f"{name}/attrs"]))
    opname = str(EXTRA[f"{name}/op"])
    op = getattr(nd.contrib, opname, None) or getattr(nd, opname)
    grad_of = list(EXTRA[f"{name}/grad_of"])
    xs = [nd.array(EXTRA[f"{name}/in{k}"], dtype="float32") for k in range(len(grad_of))]
    for a in xs:
        a.attach_grad()
    with autograd.record():
        y = op(*xs, **attrs)
    y.backward(nd.array(EXTRA[f"{name}/head"], dtype="float32"))
    np.testing.assert_allclose(y.asnumpy(), EXTRA[f"{name}/out0"], rtol=1e-4, atol=1e-5)
    for k in grad_of:
        np.testing.assert_allclose(xs[k].grad.asnumpy(), EXTRA[f"{name}/grad{k}"], rtol=1e-3,
                                   atol=1e-4, err_msg=f"grad{k}")


def test_resize_errors():
    with pytest.raises(mx.base.MXNetError, match="UpSampling: unknown sample_type 'cubic'"):
        nd.UpSampling(nd.ones((1, 1, 2, 2)), scale=2, sample_type="cubic")
    with pytest.raises(mx.base.MXNetError, match=r"AdaptiveAvgPooling2D: .*must be 4-d"):
        nd.contrib.AdaptiveAvgPooling2D(nd.ones((1, 2, 2)), output_size=1)


def test_same_convention_accepts_a_zero_pad_of_any_length():
    """MXNet's test_valid_max_pooling_pad_type_same passes pad=(0, 0, 0) with a 1-d
    kernel: 'same' computes its own padding, so a zero pad is ignored; a non-zero one is
    still an error."""
    x = nd.array(np.random.default_rng(0).random((1, 1, 10)).astype(np.float32))
    out = nd.Pooling(x, kernel=2, stride=2, pad=(0, 0, 0), pool_type="max",
                     pooling_convention="same")
    assert out.shape == (1, 1, 5)
    with pytest.raises(mx.base.MXNetError, match="does not take pad"):
        nd.Pooling(x, kernel=2, stride=2, pad=(1,), pool_type="max", pooling_convention="same")
