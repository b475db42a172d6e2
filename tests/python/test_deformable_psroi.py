"""``nd.contrib.DeformablePSROIPooling``: outputs and the gradients of ``data`` and ``trans``
against MXNet 1.9.1 recordings (``tests/fixtures/contrib_ops/record_deformable_psroi.py``),
with and without offsets, plus finite differences in ``trans``, ``mx.sym`` inputs and errors."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "contrib_ops",
                   "deformable_psroi_mxnet.json")
with open(FIX) as _f:
    CASES = json.load(_f)["cases"]


def _np(a):
    return np.asarray(a["v"], dtype=a["dtype"]).reshape(a["shape"])


@pytest.mark.parametrize("idx", range(len(CASES)))
def test_matches_mxnet(idx):
    case = CASES[idx]
    ins = {k: nd.array(_np(v)) for k, v in case["inputs"].items()}
    for k in ("data", "trans"):
        if k in ins:
            ins[k].attach_grad()
    with autograd.record():
        out = nd.contrib.DeformablePSROIPooling(*ins.values(), **case["kw"])
    np.testing.assert_allclose(out.asnumpy(), _np(case["out"]), rtol=1e-4, atol=1e-5)
    out.backward(nd.array(_np(case["head"])))
    for k, g in case["grads"].items():
        np.testing.assert_allclose(ins[k].grad.asnumpy(), _np(g), rtol=1e-3, atol=1e-4, err_msg=k)


def test_trans_gradient_matches_finite_differences():
    case = CASES[0]
    ins = {k: nd.array(_np(v), dtype="float64") for k, v in case["inputs"].items()}
    head = np.random.RandomState(0).uniform(-1, 1, _np(case["out"]).shape)

    def f(trans):
        out = nd.contrib.DeformablePSROIPooling(ins["data"], ins["rois"], trans, **case["kw"])
        return float((out.asnumpy() * head).sum())

    t = ins["trans"]
    t.attach_grad()
    with autograd.record():
        out = nd.contrib.DeformablePSROIPooling(ins["data"], ins["rois"], t, **case["kw"])
    out.backward(nd.array(head, dtype="float64"))
    v, eps = t.asnumpy(), 1e-6
    num = np.zeros_like(v)
    for pos in np.ndindex(v.shape):
        d = np.zeros_like(v)
        d[pos] = eps
        num[pos] = (f(nd.array(v + d, dtype="float64")) - f(nd.array(v - d, dtype="float64"))) / (2 * eps)
    # bilinear sampling is piecewise linear: compare where no sample crosses a cell edge
    close = np.isclose(t.grad.asnumpy(), num, rtol=1e-4, atol=1e-6)
    assert close.mean() > 0.9


def test_symbol_inputs_follow_no_trans():
    with_trans = mx.sym.contrib.DeformablePSROIPooling(
        mx.sym.var("data"), mx.sym.var("rois"), mx.sym.var("trans"), spatial_scale=0.125,
        output_dim=2, group_size=3, pooled_size=3)
    assert with_trans.list_arguments() == ["data", "rois", "trans"]
    no_trans = mx.sym.contrib.DeformablePSROIPooling(
        mx.sym.var("data"), mx.sym.var("rois"), spatial_scale=0.125, output_dim=2,
        group_size=3, pooled_size=3, no_trans=True)
    assert no_trans.list_arguments() == ["data", "rois"]
    assert no_trans.infer_shape(data=(2, 18, 9, 11), rois=(4, 5))[1] == [(4, 2, 3, 3)]


def test_bad_operands_name_the_operator():
    data, rois = nd.ones((1, 18, 8, 8)), nd.array([[0, 0, 0, 7, 7]])
    kw = {"spatial_scale": 1.0, "output_dim": 2, "group_size": 3, "pooled_size": 3,
          "no_trans": True}
    with pytest.raises(mx.base.MXNetError, match="DeformablePSROIPooling"):
        nd.contrib.DeformablePSROIPooling(nd.ones((1, 17, 8, 8)), rois, **kw)  # channels
    with pytest.raises(mx.base.MXNetError, match="DeformablePSROIPooling"):
        nd.contrib.DeformablePSROIPooling(data, nd.ones((1, 4)), **kw)  # rois not (R, 5)
    with pytest.raises(mx.base.MXNetError, match="DeformablePSROIPooling"):
        nd.contrib.DeformablePSROIPooling(data, rois, nd.ones((1, 2, 2, 2)),
                                          **dict(kw, no_trans=False))  # trans grid size
