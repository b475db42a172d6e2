"""Convolutions that take the Winograd F(2x2, 3x3) path (3x3, stride 1, >= 16 channels).

Forward, data and weight gradients are compared with a float64 NumPy reference, for
padding 0/1/2, odd planes, batch 1 and channel counts that are not multiples of anything;
and with the same convolution run as two groups (which takes im2col + gemm).
"""

import ferromx as mx
import numpy as np
import pytest


def _ref(x, w, b, pad):
    """Direct 3x3 stride-1 convolution in float64."""
    n, _c, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - 2, wd + 2 * pad - 2
    out = np.zeros((n, w.shape[0], oh, ow))
    for r in range(3):
        for s in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, r:r + oh, s:s + ow], w[:, :, r, s])
    return out + b[None, :, None, None]


CASES = [
    ((2, 16, 9, 7), 17, 1),
    ((1, 19, 6, 6), 16, 0),
    ((3, 16, 5, 5), 21, 2),
    ((4, 32, 4, 4), 32, 1),
    ((8, 16, 13, 11), 24, 1),
]


@pytest.mark.parametrize("shape,nf,pad", CASES)
def test_winograd_forward_and_gradients_match_numpy(shape, nf, pad):
    rng = np.random.RandomState(sum(shape) + nf + pad)
    x = rng.randn(*shape).astype(np.float32)
    w = rng.randn(nf, shape[1], 3, 3).astype(np.float32)
    b = rng.randn(nf).astype(np.float32)
    want = _ref(x, w, b, pad)
    head = rng.randn(*want.shape).astype(np.float32)
    xa, wa, ba = mx.nd.array(x), mx.nd.array(w), mx.nd.array(b)
    for a in (xa, wa, ba):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(xa, wa, ba, kernel=(3, 3), pad=(pad, pad), num_filter=nf)
    y.backward(mx.nd.array(head))
    scale = np.abs(want).max()
    assert np.abs(y.asnumpy() - want).max() / scale < 5e-6
    # Reference gradients by the adjoint: dx = conv_transpose(head, w), dw = sum x * head.
    hp = np.pad(head.astype(np.float64), ((0, 0), (0, 0), (2 - pad, 2 - pad), (2 - pad, 2 - pad)))
    wf = w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)
    dx = _ref(hp, wf, np.zeros(shape[1]), 0)
    assert np.abs(xa.grad.asnumpy() - dx).max() / np.abs(dx).max() < 5e-6
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = want.shape[2:]
    dw = np.stack([np.stack([np.einsum("nchw,nohw->oc", xp[:, :, r:r + oh, s:s + ow], head)
                             for s in range(3)], -1) for r in range(3)], -2)
    np.testing.assert_allclose(wa.grad.asnumpy(), dw, rtol=1e-4, atol=1e-4 * np.abs(dw).max())
    np.testing.assert_allclose(ba.grad.asnumpy(), head.sum(axis=(0, 2, 3)), rtol=1e-4, atol=1e-3)


def test_winograd_agrees_with_the_im2col_path():
    # Two groups of 16 channels each take im2col; the block-diagonal single-group weight
    # computes the same thing through Winograd.
    rng = np.random.RandomState(3)
    x = rng.randn(2, 32, 10, 10).astype(np.float32)
    wg = rng.randn(32, 16, 3, 3).astype(np.float32)
    full = np.zeros((32, 32, 3, 3), np.float32)
    full[:16, :16], full[16:, 16:] = wg[:16], wg[16:]
    kw = {"kernel": (3, 3), "pad": (1, 1), "num_filter": 32, "no_bias": True}
    grouped = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(wg), num_group=2, **kw).asnumpy()
    wino = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(full), **kw).asnumpy()
    np.testing.assert_allclose(wino, grouped, rtol=1e-5, atol=1e-5 * np.abs(grouped).max())


def test_first_layer_weight_gradient_without_data_gradient():
    # The input is not differentiated: the backward skips the data gradient, and the weight
    # gradient is still right.
    rng = np.random.RandomState(4)
    x = rng.randn(2, 16, 6, 6).astype(np.float32)
    w = rng.randn(16, 16, 3, 3).astype(np.float32)
    wa = mx.nd.array(w)
    wa.attach_grad()
    xa = mx.nd.array(x)
    with mx.autograd.record():
        y = mx.nd.Convolution(xa, wa, kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True)
    y.backward()
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    dw = np.stack([np.stack([np.einsum("nchw->c", xp[:, :, r:r + 6, s:s + 6])[None].repeat(16, 0)
                             for s in range(3)], -1) for r in range(3)], -2)
    np.testing.assert_allclose(wa.grad.asnumpy(), dw, rtol=1e-4, atol=1e-4)
    assert xa.grad is None
