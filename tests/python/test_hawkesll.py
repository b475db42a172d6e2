"""``nd.contrib.hawkesll`` (the log likelihood of a marked Hawkes process): values, final
states and gradients against MXNet 1.9.1 recordings (``tests/fixtures/contrib_ops/
record_hawkes.py``), a NumPy reference of the likelihood, finite differences, and errors."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "contrib_ops", "hawkes_mxnet.json")
with open(FIX) as _f:
    CASES = json.load(_f)["cases"]
ORDER = ["mu", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"]


def _np(a):
    return np.asarray(a["v"], dtype=a["dtype"]).reshape(a["shape"])


def _inputs(case, dtype=None):
    return {k: nd.array(_np(case["inputs"][k]), dtype=dtype if dtype and k != "marks"
                        else case["inputs"][k]["dtype"]) for k in ORDER}


def _reference(ins):
    """The log likelihood, written from the model's definition (intensity and compensator)."""
    mu, alpha, beta, state, lags, marks, valid, tmax = (ins[k].asnumpy().astype(np.float64)
                                                         for k in ORDER)
    out = []
    for i in range(mu.shape[0]):
        events = [(float(t), int(m)) for t, m in zip(np.cumsum(lags[i])[:int(valid[i])],
                                                     marks[i][:int(valid[i])])]
        ll = 0.0
        for m in range(mu.shape[1]):
            own = [t for t, c in events if c == m]

            def excite(t, own=own, m=m, i=i):  # the state's contribution at time t
                past = [s for s in own if s < t]
                prior = state[i, m] * np.exp(-beta[m] * t)
                return prior + sum(np.exp(-beta[m] * (t - s)) for s in past)

            for t in own:
                ll += np.log(mu[i, m] + alpha[m] * beta[m] * excite(t))
            # compensator: integral of the intensity over [0, max_time]
            comp = mu[i, m] * tmax[i] + alpha[m] * state[i, m] * (1 - np.exp(-beta[m] * tmax[i]))
            comp += sum(alpha[m] * (1 - np.exp(-beta[m] * (tmax[i] - s))) for s in own)
            ll -= comp
        out.append(ll)
    return np.array(out)


@pytest.mark.parametrize("idx", range(len(CASES)))
def test_matches_mxnet_values_states_and_gradients(idx):
    case = CASES[idx]
    ins = _inputs(case)
    for k in ("mu", "alpha", "beta"):
        ins[k].attach_grad()
    with autograd.record():
        ll, states = nd.contrib.hawkesll(*[ins[k] for k in ORDER])
    np.testing.assert_allclose(ll.asnumpy(), _np(case["ll"]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(states.asnumpy(), _np(case["states"]), rtol=1e-4, atol=1e-6)
    ll.backward(nd.array(_np(case["head"])))
    for k in ("mu", "alpha", "beta"):
        np.testing.assert_allclose(ins[k].grad.asnumpy(), _np(case["grads"][k]), rtol=1e-3,
                                   atol=1e-4, err_msg=k)


@pytest.mark.parametrize("idx", range(len(CASES)))
def test_matches_the_models_definition(idx):
    ins = _inputs(CASES[idx], "float64")
    ll, _ = nd.contrib.hawkesll(*[ins[k] for k in ORDER])
    np.testing.assert_allclose(ll.asnumpy(), _reference(ins), rtol=1e-10)


def test_gradient_matches_finite_differences():
    ins = _inputs(CASES[0], "float64")
    head = np.array([0.7, -1.3])

    def f(**over):
        args = [over.get(k, ins[k]) for k in ORDER]
        return float((nd.contrib.hawkesll(*args)[0].asnumpy() * head).sum())

    for k in ("mu", "alpha", "beta"):
        x = ins[k]
        x.attach_grad()
        with autograd.record():
            ll, _ = nd.contrib.hawkesll(*[ins[j] for j in ORDER])
        ll.backward(nd.array(head, dtype="float64"))
        v = x.asnumpy()
        num = np.zeros_like(v)
        for pos in np.ndindex(v.shape):
            d = np.zeros_like(v)
            d[pos] = 1e-6
            num[pos] = (f(**{k: nd.array(v + d, dtype="float64")})
                        - f(**{k: nd.array(v - d, dtype="float64")})) / 2e-6
        np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-7, err_msg=k)


def test_bad_operands_name_the_operator():
    ins = _inputs(CASES[0])
    args = [ins[k] for k in ORDER]
    with pytest.raises(mx.base.MXNetError, match="hawkesll"):
        nd.contrib.hawkesll(*args[:5], args[5].astype("float32"), *args[6:])  # float marks
    with pytest.raises(mx.base.MXNetError, match="hawkesll"):
        nd.contrib.hawkesll(args[0], args[1][:2], *args[2:])  # alpha of the wrong length
    bad = nd.array(np.full((2, 6), 7), dtype="int32")  # mark outside [0, K)
    out, _ = nd.contrib.hawkesll(*args[:5], bad, *args[6:])
    with pytest.raises(mx.base.MXNetError, match="mark 7"):
        out.asnumpy()
