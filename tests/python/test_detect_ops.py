"""SSD's box operators as table operators: ``contrib.MultiBoxPrior``, ``MultiBoxTarget``
and ``MultiBoxDetection`` (also ``npx.multibox_*``). Outputs are compared with MXNet
1.9.1's, recorded in tests/fixtures/detect_ops/detect_mxnet.json (re-record with
tests/fixtures/detect_ops/record_detect_ops.py)."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd, npx

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "detect_ops", "detect_mxnet.json")
with open(FIX) as _f:
    REC = json.load(_f)


def _kw(r):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in r["kw"].items()}


def _ins(r):
    return [nd.array(np.array(v["v"], dtype=np.float32).reshape(v["shape"])) for v in r["inputs"].values()]


@pytest.mark.parametrize("case", sorted(REC))
def test_outputs_match_recorded_mxnet(case):
    r = REC[case]
    outs = getattr(nd.contrib, r["op"])(*_ins(r), **_kw(r))
    outs = outs if isinstance(outs, list) else [outs]
    assert len(outs) == len(r["outs"])
    for k, (got, want) in enumerate(zip(outs, r["outs"])):
        assert got.shape == tuple(want["shape"])
        np.testing.assert_allclose(got.asnumpy().ravel(), want["v"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{case} output {k}")


def test_npx_names_and_float64_agree_with_nd_contrib():
    r = REC["detection"]
    a = [x.as_np_ndarray() for x in _ins(r)]
    got = npx.multibox_detection(*a)
    want = nd.contrib.MultiBoxDetection(*_ins(r))
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    x = nd.zeros((1, 2, 3, 3), dtype="float64")
    p = nd.contrib.MultiBoxPrior(x, sizes=(0.5,), ratios=(1, 2))
    assert p.dtype == np.float64 and p.shape == (1, 18, 4)
    np.testing.assert_allclose(p.asnumpy(), nd.contrib.MultiBoxPrior(x.astype("float32"), sizes=(0.5,),
                                                                    ratios=(1, 2)).asnumpy(), rtol=1e-6)


def test_inside_a_recorded_network_the_gradients_are_zero():
    x = nd.ones((1, 2, 3, 3))
    x.attach_grad()
    with autograd.record():
        anchors = nd.contrib.MultiBoxPrior(x * 2, sizes=(0.5,))
        loss = (anchors * anchors).sum() + (x * x).sum()
    loss.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy())


def test_padding_rows_must_be_all_minus_one():
    anchors = nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2)), sizes=(0.5,))
    label = nd.array([[[0, 0.1, 0.1, 0.5, 0.5], [-1, 0.2, -1, -1, -1]]])
    with pytest.raises(mx.MXNetError, match="MultiBoxTarget.*padding"):
        nd.contrib.MultiBoxTarget(anchors, label, nd.zeros((1, 2, 4)))[0].asnumpy()


@pytest.mark.parametrize("call,words", [
    (lambda: nd.contrib.MultiBoxPrior(nd.zeros((1, 2, 3))), ["MultiBoxPrior", "(N, C, H, W)"]),
    (lambda: nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2)), offsets=(1.5, 0.5)), ["MultiBoxPrior", "offsets"]),
    (lambda: nd.contrib.MultiBoxTarget(nd.zeros((1, 4, 4)), nd.zeros((1, 2, 4)), nd.zeros((1, 2, 4))),
     ["MultiBoxTarget", "label (B, L, ≥5)"]),
    (lambda: nd.contrib.MultiBoxDetection(nd.zeros((1, 2, 4)), nd.zeros((1, 15)), nd.zeros((1, 4, 4))),
     ["MultiBoxDetection", "loc_pred (B, A·4)"]),
    (lambda: nd.contrib.MultiBoxDetection(nd.zeros((1, 2, 4)), nd.zeros((1, 16)), nd.zeros((1, 4, 4)),
                                          variances=(0.1, 0.2)), ["MultiBoxDetection", "variances"]),
])
def test_bad_input_raises_naming_the_operator(call, words):
    with pytest.raises(mx.MXNetError) as e:
        call()
    for w in words:
        assert w in str(e.value), str(e.value)


def test_bipartite_matching_topk_limits_the_matches():
    """``topk`` caps the number of pairs (MXNet 1.9.1's kernel makes topk + 1; see
    docs/for-mxnet-users.md)."""
    s = nd.array([[0.9, 0.1, 0.2], [0.3, 0.8, 0.4], [0.5, 0.6, 0.7]])
    rows, cols = nd.contrib.bipartite_matching(s, threshold=0.05, topk=2)
    np.testing.assert_array_equal(rows.asnumpy(), [0, 1, -1])
    np.testing.assert_array_equal(cols.asnumpy(), [0, 1, -1])
    rows, _ = nd.contrib.bipartite_matching(s, threshold=0.05)
    np.testing.assert_array_equal(rows.asnumpy(), [0, 1, 2])


def test_box_iou_of_a_box_with_itself_is_one_and_disjoint_is_zero():
    a = nd.array([[0, 0, 2, 2], [3, 3, 4, 4]])
    np.testing.assert_allclose(nd.contrib.box_iou(a, a).asnumpy(), [[1, 0], [0, 1]])
    with pytest.raises(mx.MXNetError, match="box_iou.*format"):
        nd.contrib.box_iou(a, a, format="xywh")
