"""``im2col``/``col2im`` table operators: 2-D values and gradients recorded from MXNet
1.9.1 (tests/fixtures/conv_ops/unfold_mxnet.json); 1-D and 3-D (where MXNet 1.9.1's
kernels fail a shape check) against a NumPy reference; errors name the operator."""

import itertools
import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "conv_ops", "unfold_mxnet.json")
with open(FIX) as _f:
    REC = json.load(_f)


@pytest.mark.parametrize("case", sorted(REC))
def test_im2col_and_col2im_match_recorded_mxnet(case):
    r = REC[case]
    kw = {k: tuple(v) for k, v in r["kw"].items()}
    x = nd.array(np.array(r["x"]).reshape(r["shape"]))
    x.attach_grad()
    with autograd.record():
        y = nd.im2col(x, **kw)
    assert y.shape == tuple(r["yshape"])
    y.backward(nd.array(np.array(r["hg"]).reshape(y.shape)))
    np.testing.assert_allclose(y.asnumpy().ravel(), r["y"], rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy().ravel(), r["xgrad"], rtol=1e-5, atol=1e-6)
    c = nd.array(np.array(r["c"]).reshape(r["yshape"]))
    c.attach_grad()
    with autograd.record():
        z = nd.col2im(c, output_size=tuple(r["shape"][2:]), **kw)
    z.backward(nd.array(np.array(r["hz"]).reshape(z.shape)))
    np.testing.assert_allclose(z.asnumpy().ravel(), r["z"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.grad.asnumpy().ravel(), r["cgrad"], rtol=1e-6)


def _ref_im2col(x, kernel, stride, dilate, pad):
    _n, c = x.shape[:2]
    nk = len(kernel)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    outd = [(x.shape[2 + j] + 2 * pad[j] - dilate[j] * (kernel[j] - 1) - 1) // stride[j] + 1
            for j in range(nk)]
    rows = []
    for ch in range(c):
        for ks in itertools.product(*[range(k) for k in kernel]):
            cols = []
            for pos in itertools.product(*[range(o) for o in outd]):
                idx = tuple(pos[j] * stride[j] + ks[j] * dilate[j] for j in range(nk))
                cols.append(xp[(slice(None), ch) + idx])
            rows.append(np.stack(cols, axis=-1))
    return np.stack(rows, axis=1)


@pytest.mark.parametrize("shape,kw", [
    ((2, 2, 9), {"kernel": (3,), "stride": (2,), "dilate": (2,), "pad": (1,)}),
    ((1, 2, 3, 4, 5), {"kernel": (2, 2, 3), "stride": (1, 2, 1), "dilate": (1, 1, 2), "pad": (0, 1, 1)}),
])
def test_one_and_three_spatial_axes_match_numpy_and_are_adjoint(shape, kw):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, shape)
    y = nd.im2col(nd.array(x, dtype="float64"), **kw).asnumpy()
    np.testing.assert_allclose(y, _ref_im2col(x, **kw), rtol=1e-12)
    # <im2col(x), c> == <x, col2im(c)>: col2im is im2col's adjoint
    c = rng.uniform(-1, 1, y.shape)
    back = nd.col2im(nd.array(c, dtype="float64"), output_size=shape[2:], **kw).asnumpy()
    assert abs((y * c).sum() - (x * back).sum()) < 1e-10


def test_bad_inputs_name_the_operator():
    with pytest.raises(mx.MXNetError, match=r"im2col.*\(2, 3\).*4 axes"):
        nd.im2col(nd.zeros((2, 3)), kernel=(2, 2))
    with pytest.raises(mx.MXNetError, match="im2col.*does not fit"):
        nd.im2col(nd.zeros((1, 1, 2, 2)), kernel=(3, 3))
    with pytest.raises(mx.MXNetError, match=r"col2im.*columns needed"):
        nd.col2im(nd.zeros((1, 4, 5)), output_size=(3, 3), kernel=(2, 2))
    with pytest.raises(mx.MXNetError, match="im2col.*stride"):
        nd.im2col(nd.zeros((1, 1, 4, 4)), kernel=(2, 2), stride=(1,))
