"""Convolution and Deconvolution: recorded MXNet 1.9.1 values (forward and gradients),
NumPy references, layouts, and clear errors for bad input."""

import ast
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native, autograd, nd

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "conv_ops")


def _cases(fname):
    data = np.load(os.path.join(FIX, fname))
    names = sorted({k.split("/")[0] for k in data.files})
    return data, names


CONV, CONV_NAMES = _cases("conv.npz")


def replay(data, name, fn, nin):
    """Runs ``fn`` on a recorded case's inputs in float64; compares outputs and gradients."""
    xs = [nd.array(data[f"{name}/in{k}"], dtype="float64") for k in range(nin)]
    grad_of = list(data[f"{name}/grad_of"])
    for k in grad_of:
        xs[k].attach_grad()
    with autograd.record():
        out = fn(*xs)
    outs = out if isinstance(out, list) else [out]
    outs[0].backward(nd.array(data[f"{name}/head"], dtype="float64"))
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), data[f"{name}/out{k}"], rtol=1e-6, atol=1e-9,
                                   err_msg=f"{name} out{k}")
    for k in grad_of:
        np.testing.assert_allclose(xs[k].grad.asnumpy(), data[f"{name}/grad{k}"], rtol=1e-6,
                                   atol=1e-9, err_msg=f"{name} grad{k}")
    return xs


@pytest.mark.parametrize("name", CONV_NAMES)
def test_matches_recorded_mxnet(name):
    attrs = ast.literal_eval(str(CONV[f"{name}/attrs"]))
    op = getattr(nd, str(CONV[f"{name}/op"]))
    nin = len([k for k in CONV.files if k.startswith(f"{name}/in")])
    replay(CONV, name, lambda *a: op(*a, **attrs), nin)


def np_conv2d(x, w, b, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1):
    """Reference 2-d convolution (NCHW) by sliding windows."""
    n, _c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    dkh, dkw = dilate[0] * (kh - 1) + 1, dilate[1] * (kw - 1) + 1
    oh = (h + 2 * pad[0] - dkh) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dkw) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    og = o // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xg[:, :, i * dilate[0]:i * dilate[0] + stride[0] * oh:stride[0],
                           j * dilate[1]:j * dilate[1] + stride[1] * ow:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


@pytest.mark.parametrize("stride,pad,dilate,groups", [
    ((1, 1), (1, 1), (1, 1), 1), ((2, 1), (0, 2), (1, 2), 2), ((1, 1), (1, 1), (1, 1), 4),
    ((3, 3), (1, 1), (1, 1), 1)])
def test_conv2d_matches_numpy_float32(stride, pad, dilate, groups):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 9, 8)).astype("float32")
    w = rng.standard_normal((8, 4 // groups, 3, 3)).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    got = nd.Convolution(nd.array(x), nd.array(w), nd.array(b), kernel=(3, 3), stride=stride,
                         pad=pad, dilate=dilate, num_group=groups, num_filter=8)
    assert got.dtype == np.float32
    want = np_conv2d(x.astype("f8"), w.astype("f8"), b.astype("f8"), stride, pad, dilate, groups)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)


def test_large_batch_splits_over_cores_and_agrees():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 16, 20, 20)).astype("float32")
    w = rng.standard_normal((16, 16, 3, 3)).astype("float32")
    xa, wa = nd.array(x), nd.array(w)
    xa.attach_grad()
    wa.attach_grad()
    with autograd.record():
        y = nd.Convolution(xa, wa, kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True)
    y.backward(nd.ones_like(y))
    want = np_conv2d(x.astype("f8"), w.astype("f8"), None, pad=(1, 1))
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-3)
    # d/dw of sum(y): the sum of each shifted window of x over samples and positions.
    xp = np.pad(x.astype("f8"), ((0, 0), (0, 0), (1, 1), (1, 1)))
    dw = np.stack([xp[:, :, i:i + 20, j:j + 20].sum(axis=(0, 2, 3)) for i in range(3)
                   for j in range(3)], axis=-1).reshape(16, 3, 3)
    np.testing.assert_allclose(wa.grad.asnumpy(), np.broadcast_to(dw, (16, 16, 3, 3)),
                               rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("nd_rank,layout", [(3, "NWC"), (4, "NHWC"), (5, "NDHWC")])
def test_channel_last_layouts_are_transposed_channel_first(nd_rank, layout):
    if layout == "NWC":
        with pytest.raises(mx.base.MXNetError, match="Convolution: unknown layout 'NWC'"):
            nd.Convolution(nd.ones((1, 5, 2)), nd.ones((3, 3, 2)), kernel=(3,), num_filter=3,
                           no_bias=True, layout="NWC")
        return
    rng = np.random.default_rng(2)
    k = (3,) * (nd_rank - 2)
    x = rng.standard_normal((2,) + (5,) * (nd_rank - 2) + (3,))
    w = rng.standard_normal((4,) + k + (3,))
    b = rng.standard_normal(4)
    to_cf = (0, nd_rank - 1) + tuple(range(1, nd_rank - 1))
    to_cl = (0,) + tuple(range(2, nd_rank)) + (1,)
    xa, wa = nd.array(x), nd.array(w)
    xa.attach_grad()
    wa.attach_grad()
    with autograd.record():
        got = nd.Convolution(xa, wa, nd.array(b), kernel=k, pad=(1,) * len(k), num_filter=4,
                             layout=layout)
    got.backward(nd.ones_like(got))
    ref_x, ref_w = nd.array(x.transpose(to_cf)), nd.array(w.transpose(to_cf))
    ref_x.attach_grad()
    ref_w.attach_grad()
    with autograd.record():
        ref = nd.Convolution(ref_x, ref_w, nd.array(b), kernel=k, pad=(1,) * len(k), num_filter=4)
    ref.backward(nd.ones_like(ref))
    np.testing.assert_allclose(got.asnumpy(), ref.asnumpy().transpose(to_cl), rtol=1e-6)
    np.testing.assert_allclose(xa.grad.asnumpy(), ref_x.grad.asnumpy().transpose(to_cl), rtol=1e-6)
    np.testing.assert_allclose(wa.grad.asnumpy(), ref_w.grad.asnumpy().transpose(to_cl), rtol=1e-6)


def test_deconvolution_is_the_data_gradient_of_convolution():
    rng = np.random.default_rng(3)
    x = nd.array(rng.standard_normal((2, 3, 9, 9)))
    w = nd.array(rng.standard_normal((4, 3, 3, 3)))
    x.attach_grad()
    dy = nd.array(rng.standard_normal((2, 4, 4, 4)))
    with autograd.record():
        y = nd.Convolution(x, w, kernel=(3, 3), stride=(2, 2), pad=(0, 0), num_filter=4,
                           no_bias=True)
    y.backward(dy)
    d = nd.Deconvolution(dy, w, kernel=(3, 3), stride=(2, 2), num_filter=3)
    assert d.shape == (2, 3, 9, 9)
    np.testing.assert_allclose(d.asnumpy(), x.grad.asnumpy(), rtol=1e-10)
    assert nd.Deconvolution(dy, w, kernel=(3, 3), stride=(2, 2), num_filter=3,
                            target_shape=(8, 8)).shape == (2, 3, 8, 8)


def test_backward_operator_is_callable_and_matches_autograd():
    rng = np.random.default_rng(4)
    x, w, b = (nd.array(rng.standard_normal(s)) for s in [(2, 2, 5, 5), (3, 2, 3, 3), (3,)])
    dy = nd.array(rng.standard_normal((2, 3, 3, 3)))
    for a in (x, w, b):
        a.attach_grad()
    with autograd.record():
        y = nd.Convolution(x, w, b, kernel=(3, 3), num_filter=3)
    y.backward(dy)
    dx, dw, db = _native.invoke("_backward_Convolution", [dy, x, w], kernel=(3, 3), num_filter=3)
    for got, want in ((dx, x.grad), (dw, w.grad), (db, b.grad)):
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-12)


def test_npx_aliases():
    x, w = mx.np.ones((1, 1, 3, 3)), mx.np.ones((1, 1, 2, 2))
    y = mx.npx.convolution(x, w, kernel=(2, 2), num_filter=1, no_bias=True)
    np.testing.assert_allclose(y.asnumpy(), np.full((1, 1, 2, 2), 4.0))
    assert mx.npx.deconvolution(y, w, kernel=(2, 2), num_filter=1).shape == (1, 1, 3, 3)


@pytest.mark.parametrize("kwargs,shapes,match", [
    ({"kernel": (3, 3), "num_filter": 4}, [(2, 3, 5, 5), (4, 2, 3, 3)],
     r"Convolution: .*\(2, 3, 5, 5\).*\(4, 2, 3, 3\).*weight must have shape \(4, 3, 3, 3\)"),
    ({"kernel": (7, 7), "num_filter": 4, "pad": (1, 1)}, [(1, 3, 4, 4), (4, 3, 7, 7)],
     r"Convolution: .*\(1, 3, 4, 4\).*larger than the padded input"),
    ({"kernel": (3, 3), "num_filter": 4, "layout": "NCHWX"}, [(1, 3, 4, 4), (4, 3, 3, 3)],
     r"Convolution: unknown layout 'NCHWX'"),
    ({"kernel": (3, 3), "num_filter": 4}, [(3, 4, 4), (4, 3, 3, 3)],
     r"Convolution: kernel \(3, 3\) needs 4-d data, got data of shape \(3, 4, 4\)"),
    ({"kernel": (3, 3), "num_filter": 4, "num_group": 2}, [(1, 3, 4, 4), (4, 1, 3, 3)],
     r"Convolution: num_group=2 must divide the input channels \(3\)"),
    ({"kernel": (3, 3), "num_filter": 4, "stride": (1, 1, 1)}, [(1, 3, 4, 4), (4, 3, 3, 3)],
     r"Convolution: stride \(1, 1, 1\) must have as many entries as kernel"),
])
def test_bad_input_raises_naming_the_operator(kwargs, shapes, match):
    arrs = [nd.ones(s) for s in shapes]
    with pytest.raises(mx.base.MXNetError, match=match):
        nd.Convolution(*arrs, no_bias=True, **kwargs)


def test_bias_shape_and_dtype_errors():
    with pytest.raises(mx.base.MXNetError, match=r"Convolution: .*bias must have shape \(4,\)"):
        nd.Convolution(nd.ones((1, 3, 4, 4)), nd.ones((4, 3, 3, 3)), nd.ones(3), kernel=(3, 3),
                       num_filter=4)
    with pytest.raises(mx.base.MXNetError, match="Convolution: supports float32 and float64"):
        nd.Convolution(nd.ones((1, 3, 4, 4), dtype="int32"), nd.ones((4, 3, 3, 3), dtype="int32"),
                       kernel=(3, 3), num_filter=4, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match=r"Deconvolution: no output size"):
        nd.Deconvolution(nd.ones((1, 2, 3, 3)), nd.ones((2, 2, 3, 3)), kernel=(3, 3),
                         num_filter=2, target_shape=(20, 20))
