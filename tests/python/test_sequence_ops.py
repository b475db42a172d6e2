"""Sequence and attention operators (SequenceMask/Last/Reverse, masked softmax, the
transformer helpers of nd.contrib) against MXNet 1.9.1 values recorded in
tests/fixtures/rnn/sequence_ops.npz (``record_rnn.py``) and NumPy, with gradients; and the
ops attention code leans on (batch_dot transposes, pick modes, npx.topk, transpose)."""

import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd, npx

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "rnn", "sequence_ops.npz")
REF = dict(np.load(FIX))
LENS = np.array([2, 4, 1], dtype="float32")
C = nd.contrib

CASES = {
    "mask_axis0": lambda a: nd.SequenceMask(a, nd.array(LENS), use_sequence_length=True,
                                            value=-2.0),
    "mask_axis1": lambda a: nd.SequenceMask(a, nd.array(LENS), use_sequence_length=True,
                                            axis=1),
    "mask_nolen": lambda a: nd.SequenceMask(a, value=3.0),
    "last_axis0": lambda a: nd.SequenceLast(a, nd.array(LENS), use_sequence_length=True),
    "last_axis1": lambda a: nd.SequenceLast(a, nd.array(LENS), use_sequence_length=True,
                                            axis=1),
    "reverse_len": lambda a: nd.SequenceReverse(a, nd.array(LENS), use_sequence_length=True),
    "reverse_nolen": lambda a: nd.SequenceReverse(a),
    "div_sqrt_dim": C.div_sqrt_dim,
    "selfatt_qk": lambda a: C.interleaved_matmul_selfatt_qk(a, heads=2),
    "selfatt_valatt": lambda a, b: C.interleaved_matmul_selfatt_valatt(a, b, heads=2),
    "encdec_qk": lambda a, b: C.interleaved_matmul_encdec_qk(a, b, heads=2),
    "encdec_valatt": lambda a, b: C.interleaved_matmul_encdec_valatt(a, b, heads=2),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_mxnet_values_and_gradients(key):
    n = sum(1 for k in REF if k.startswith(key + "|in"))
    xs = [nd.array(REF[f"{key}|in{i}"]) for i in range(n)]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = CASES[key](*xs)
    np.testing.assert_allclose(y.asnumpy(), REF[f"{key}|out"], rtol=1e-5, atol=1e-6)
    y.backward(nd.array(REF[f"{key}|w"]))
    for i, x in enumerate(xs):
        np.testing.assert_allclose(x.grad.asnumpy(), REF[f"{key}|grad{i}"], rtol=1e-5,
                                   atol=1e-5, err_msg=f"{key} input {i}")


def test_sequence_last_without_lengths_and_arange_like():
    x = nd.array(REF["last_nolen|in0"])
    np.testing.assert_allclose(nd.SequenceLast(x).asnumpy(), REF["last_nolen|out"])
    d = nd.zeros((2, 5, 3))
    np.testing.assert_array_equal(C.arange_like(d).asnumpy(), REF["arange_like|plain"])
    got = npx.arange_like(d, start=1.5, step=0.5, repeat=2, axis=1)
    np.testing.assert_array_equal(got.asnumpy(), REF["arange_like|axis"])
    assert C.arange_like(d.astype("float16")).dtype == np.float16


def test_npx_sequence_mask_and_lengths_as_integers():
    x = nd.arange(12).reshape((3, 2, 2))
    got = npx.sequence_mask(x, nd.array([1, 3], dtype="int32"), use_sequence_length=True)
    want = x.asnumpy().copy()
    want[1:, 0] = 0
    np.testing.assert_array_equal(got.asnumpy(), want)
    # lengths are truncated like MXNet's integer cast: 1.7 -> 1
    got = nd.SequenceMask(x, nd.array([1.7, 0.5]), use_sequence_length=True, value=-1)
    assert got.asnumpy()[:, 1, 0].tolist() == [-1, -1, -1]
    assert got.asnumpy()[:, 0, 0].tolist() == [0, -1, -1]


def test_sequence_operator_errors():
    x = nd.zeros((3, 2, 4))
    with pytest.raises(mx.base.MXNetError, match="SequenceMask: .*needs the sequence_length"):
        nd.SequenceMask(x, use_sequence_length=True)
    with pytest.raises(mx.base.MXNetError, match=r"SequenceLast: .*shape \(2,\)"):
        nd.SequenceLast(x, nd.array([1, 2, 3]), use_sequence_length=True)
    with pytest.raises(mx.base.MXNetError, match="SequenceReverse: axis must be 0"):
        nd.SequenceReverse(x, axis=1)
    with pytest.raises(mx.base.MXNetError, match="SequenceMask: axis must be 0 or 1"):
        nd.SequenceMask(x, axis=2)
    # a length past the sequence is a value error, raised at the next read
    y = nd.SequenceLast(x, nd.array([4, 1]), use_sequence_length=True)
    with pytest.raises(mx.base.MXNetError, match=r"sequence_length\[0\] = 4 is outside 1..=3"):
        y.asnumpy()
    with pytest.raises(mx.base.MXNetError, match="interleaved_matmul_selfatt_qk: .*multiple"):
        C.interleaved_matmul_selfatt_qk(nd.zeros((2, 1, 10)), heads=2)
    with pytest.raises(mx.base.MXNetError, match="encdec_valatt: .*attention must have shape"):
        C.interleaved_matmul_encdec_valatt(nd.zeros((5, 2, 8)), nd.zeros((4, 3, 4)), heads=2)


def _np_masked_softmax(x, mask, axis, t, log):
    z = np.where(mask, x / t, -np.inf)
    m = np.max(np.where(mask, z, -np.inf), axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.where(mask, np.exp(z - m), 0)
    s = e.sum(axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        if log:
            return np.where(mask, z - m - np.log(s), -np.inf)
        return np.where(mask, e / np.where(s == 0, 1, s), 0)


@pytest.mark.parametrize("log", [False, True])
def test_masked_softmax_matches_numpy_with_gradient(log):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 5))
    mask = rng.uniform(size=(2, 1, 5)) > 0.4
    mask[0, 0, :] = False  # a fully masked row
    fn = npx.masked_log_softmax if log else npx.masked_softmax
    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    with autograd.record():
        y = fn(xa, nd.array(mask), axis=-1, temperature=2.0)
    want = _np_masked_softmax(x, np.broadcast_to(mask, x.shape), -1, 2.0, log)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-10)
    w = rng.uniform(0.5, 1.5, size=x.shape)
    y.backward(nd.array(np.where(np.broadcast_to(mask, x.shape), w, 0), dtype="float64"))

    def f(v):
        r = _np_masked_softmax(v, np.broadcast_to(mask, x.shape), -1, 2.0, log)
        return float(np.where(np.broadcast_to(mask, x.shape), r * w, 0).sum())

    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        num[idx] = (f(hi) - f(lo)) / 2e-6
    np.testing.assert_allclose(xa.grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


def test_batch_dot_transposes_pick_modes_topk_transpose():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    got = nd.batch_dot(nd.array(a), nd.array(b), transpose_b=True).asnumpy()
    np.testing.assert_allclose(got, a @ b.transpose(0, 2, 1), rtol=1e-5)
    got = nd.batch_dot(nd.array(a), nd.array(b), transpose_a=True).asnumpy()
    np.testing.assert_allclose(got, a.transpose(0, 2, 1) @ b, rtol=1e-5)
    x = nd.array([[1, 2, 3], [4, 5, 6.0]])
    idx = nd.array([-1, 4])
    assert nd.pick(x, idx, keepdims=True).shape == (2, 1)
    assert nd.pick(x, idx, mode="clip").asnumpy().tolist() == [1, 6]
    assert nd.pick(x, idx, mode="wrap").asnumpy().tolist() == [3, 5]
    assert npx.topk(x, k=2, ret_typ="value").asnumpy().tolist() == [[3, 2], [6, 5]]
    y = nd.array(rng.normal(size=(2, 3, 4, 5)))
    np.testing.assert_array_equal(y.transpose(0, 2, 1, 3).asnumpy(),
                                  y.asnumpy().transpose(0, 2, 1, 3))
    assert y.transpose((3, 2, 1, 0)).shape == (5, 4, 3, 2)
    assert y.transpose().shape == (5, 4, 3, 2)
