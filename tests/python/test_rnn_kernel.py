"""The fused RNN kernel (`_rnn_fused` / `_backward_rnn_fused`) against the composed path.

`RNN` runs the fused kernel in the common cases and composes engine operators for the rare
attributes. Cell clipping with bounds no value reaches forces the composed path with the
same numbers, so the two are compared on every mode, stacked and bidirectional, values and
gradients of all inputs (float64, so the comparison is tight).
"""

import numpy as np
import pytest
from ferromx import autograd, nd

WIDE = {"lstm_state_clip_min": -1e9, "lstm_state_clip_max": 1e9}


def n_params(mode, c, h, layers, dirs):
    g = {"lstm": 4, "gru": 3}.get(mode, 1) * h
    return sum(dirs * (g * (c if lay == 0 else h * dirs) + g * h + 2 * g)
               for lay in range(layers))


def run(mode, xs, h, layers, bi, **kw):
    arrs = [nd.array(a, dtype="float64") for a in xs]
    for a in arrs:
        a.attach_grad()
    rng = np.random.RandomState(1)
    with autograd.record():
        res = nd.RNN(*arrs, state_size=h, num_layers=layers, bidirectional=bi, mode=mode,
                     state_outputs=True, **kw)
        ws = [nd.array(rng.uniform(0.5, 1.5, r.shape), dtype="float64") for r in res]
        loss = sum((r * w).sum() for r, w in zip(res, ws))
    loss.backward()
    return [r.asnumpy() for r in res], [a.grad.asnumpy() for a in arrs]


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("layers,bi", [(1, False), (2, True), (3, False)])
def test_fused_matches_composed(mode, layers, bi):
    T, N, C, H = 5, 3, 4, 6
    dirs = 2 if bi else 1
    rng = np.random.RandomState(0)
    xs = [rng.randn(T, N, C), rng.uniform(-0.5, 0.5, n_params(mode, C, H, layers, dirs)),
          rng.randn(layers * dirs, N, H) * 0.5]
    if mode == "lstm":
        xs.append(rng.randn(layers * dirs, N, H) * 0.5)
    fused_out, fused_grad = run(mode, xs, H, layers, bi)
    ref_out, ref_grad = run(mode, xs, H, layers, bi, **WIDE)
    assert len(fused_out) == len(ref_out) == (3 if mode == "lstm" else 2)
    for a, b in zip(fused_out, ref_out):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for i, (a, b) in enumerate(zip(fused_grad, ref_grad)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, err_msg=f"input {i}")


def test_fused_float32_inference_dropout_and_outputs():
    """float32 uses the fast gate functions; dropout between layers is inactive outside
    training, so the fused kernel serves it; without state_outputs only `out` comes back."""
    T, N, C, H = 4, 2, 3, 5
    rng = np.random.RandomState(2)
    x = nd.array(rng.randn(T, N, C))
    p = nd.array(rng.uniform(-0.5, 0.5, n_params("lstm", C, H, 2, 1)))
    h0, c0 = nd.zeros((2, N, H)), nd.zeros((2, N, H))
    y = nd.RNN(x, p, h0, c0, state_size=H, num_layers=2, mode="lstm", p=0.5)
    assert not isinstance(y, (list, tuple)) and y.shape == (T, N, H)
    ref = nd.RNN(x, p, h0, c0, state_size=H, num_layers=2, mode="lstm", **WIDE)
    np.testing.assert_allclose(y.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
