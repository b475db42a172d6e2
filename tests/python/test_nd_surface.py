"""Legacy ``nd`` operators composed on the engine, against recorded MXNet 1.9.1 values
(``tests/fixtures/np_surface/nd_surface.json``, written by ``record_nd_surface.py``)."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "np_surface", "nd_surface.json")
with open(FIX) as _f:
    REF = json.load(_f)

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
LAB = [0.0, 2.0]


def close(a, ref, rtol=1e-5, atol=1e-6):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else np.asarray(a)
    np.testing.assert_allclose(a, np.asarray(ref, dtype=np.float64), rtol=rtol, atol=atol)


def grad_of(fn):
    x = nd.array(X)
    x.attach_grad()
    with autograd.record():
        y = fn(x)
    y.backward()
    return y, x.grad


LOSSES = {
    "SoftmaxOutput": lambda x: nd.SoftmaxOutput(x, nd.array(LAB)),
    "SoftmaxOutput_ignore_valid": lambda x: nd.SoftmaxOutput(
        x, nd.array([0.0, 1.0]), use_ignore=True, ignore_label=1, normalization="valid",
        grad_scale=2.0),
    "SoftmaxOutput_batch_smooth": lambda x: nd.SoftmaxOutput(
        x, nd.array(LAB), normalization="batch", smooth_alpha=0.1),
    "LinearRegressionOutput": lambda x: nd.LinearRegressionOutput(
        x, nd.array([[0.5, 1.0, 2.0], [3.0, 7.0, 5.0]]), 0.5),
    "LogisticRegressionOutput": lambda x: nd.LogisticRegressionOutput(
        x, nd.array([[0.0, 1, 0], [1, 0, 1]])),
    "MAERegressionOutput": lambda x: nd.MAERegressionOutput(
        x, nd.array([[0.5, 1.0, 2.0], [3.0, 7.0, 5.0]])),
    "SVMOutput": lambda x: nd.SVMOutput(x - 3, nd.array(LAB), margin=1.5,
                                        regularization_coefficient=0.5),
    "SVMOutput_linear": lambda x: nd.SVMOutput(x - 4, nd.array([1.0, 0.0]), use_linear=True),
    "MakeLoss_batch": lambda x: nd.MakeLoss(x * 3, grad_scale=0.5, normalization="batch"),
    "MakeLoss_valid": lambda x: nd.MakeLoss(x - 3, normalization="valid", valid_thresh=0.5),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_outputs_forward_and_mxnet_backward(name):
    y, g = grad_of(LOSSES[name])
    close(y, REF[name][0])
    close(g, REF[name][1])


def test_blockgrad_and_stop_gradient_cut_the_graph():
    x = nd.array(X)
    x.attach_grad()
    with autograd.record():
        y = nd.BlockGrad(x) * x + nd.stop_gradient(x * 2)
    y.backward()
    close(x.grad, X)


def test_reshaping_operators():
    close(nd.depth_to_space(nd.array(np.arange(32.0).reshape(1, 8, 2, 2)), 2),
          REF["depth_to_space"])
    close(nd.space_to_depth(nd.array(np.arange(32.0).reshape(1, 2, 4, 4)), 2),
          REF["space_to_depth"])
    d = nd.array(np.random.RandomState(0).rand(2, 8, 3, 3))
    close(nd.space_to_depth(nd.depth_to_space(d, 2), 2), d.asnumpy())
    with pytest.raises(ValueError, match="depth_to_space"):
        nd.depth_to_space(nd.ones((1, 3, 2, 2)), 2)


def test_linalg_compositions():
    a = nd.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]])
    close(nd.linalg_extracttrian(a), REF["extracttrian"])
    close(nd.linalg_extracttrian(a, offset=1), REF["extracttrian_up1"])
    close(nd.linalg_maketrian(nd.array([1.0, 2, 3])), REF["maketrian"])
    close(nd.linalg_maketrian(nd.array([1.0, 2, 3]), offset=1), REF["maketrian_up1"])
    close(nd.linalg_trmm(a, a, transpose=True, alpha=2.0), REF["trmm"])
    close(nd.linalg_gemm(a, a, a, transpose_a=True, alpha=2.0, beta=0.5), REF["gemm"])
    close(nd.linalg_syrk(a, transpose=True), REF["syrk"])
    close(nd.linalg_sumlogdiag(a), REF["sumlogdiag"])
    close(nd.linalg_makediag(nd.array([1.0, 2]), offset=1), REF["makediag_k1"])


def test_densities_match_mxnet():
    s = nd.array([[0.5, 1.0], [2.0, 3.0]])
    p1, p2 = nd.array([1.0, 2.0]), nd.array([2.0, 0.5])
    ints = nd.array([[0.0, 1.0], [2.0, 3.0]])
    close(nd.random_pdf_normal(s, p1, p2), REF["pdf_normal"])
    close(nd.random_pdf_gamma(s, p1, p2), REF["pdf_gamma"])
    close(nd.random_pdf_exponential(s, p1, is_log=True), REF["pdf_exponential_log"])
    close(nd.random_pdf_poisson(ints, p1), REF["pdf_poisson"])
    close(nd.random_pdf_uniform(s, nd.array([0.0, 1.0]), nd.array([1.0, 4.0])),
          REF["pdf_uniform"])
    close(nd.random_pdf_negative_binomial(ints, nd.array([2.0, 3.0]), nd.array([0.5, 0.25])),
          REF["pdf_negative_binomial"], rtol=1e-4)
    close(nd.random_pdf_generalized_negative_binomial(ints, nd.array([2.0, 3.0]),
                                                      nd.array([0.5, 0.25])),
          REF["pdf_gnb"], rtol=1e-4)
    close(nd.random_pdf_dirichlet(nd.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]),
                                  nd.array([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]])),
          REF["pdf_dirichlet"], rtol=1e-4)


def test_elementwise_and_index_operators():
    x = nd.array(X)
    close(nd.argmax_channel(x), REF["argmax_channel"])
    t = nd.array(np.arange(24.0).reshape(2, 3, 4))
    close(nd.L2Normalization(t, mode="channel"), REF["L2Normalization_channel"])
    close(nd.L2Normalization(t, mode="spatial"), REF["L2Normalization_spatial"])
    m, v = nd.moments(x, axes=(1,))
    close(m, REF["moments"][0])
    close(v, REF["moments"][1])
    close(nd.khatri_rao(nd.array([[1.0, 2], [3, 4]]), nd.array([[1.0, 5], [2, 6], [3, 7]])),
          REF["khatri_rao"])
    close(nd.softmin(x), REF["softmin"])
    close(nd.hard_sigmoid(x - 3), REF["hard_sigmoid"])
    close(nd.ravel_multi_index(nd.array([[1.0, 0], [2, 1]]), shape=(2, 3)),
          REF["ravel_multi_index"])
    close(nd.unravel_index(nd.array([5.0, 1]), shape=(2, 3)), REF["unravel_index"])
    close(nd.fill_element_0index(nd.zeros((2, 3)), nd.array([7.0, 8]), nd.array([1.0, 2])),
          REF["fill_element_0index"])
    close(nd.all_finite(nd.array([1.0, np.inf])), REF["all_finite"])
    c = nd.cumsum(nd.array([1, 2, 3], dtype="int32"))
    close(c, REF["cumsum_int"])
    assert isinstance(c, nd.NDArray) and not c._is_np
    assert str(nd.shape_array(x).dtype) == REF["shape_array_dtype"]
    close(nd.add_n(x, x, x), np.asarray(X) * 3)
    close(nd.ElementWiseSum(x, x), np.asarray(X) * 2)
    close(nd.size_array(x), [6])


def test_samplers_and_aliases():
    mx.random.seed(3)
    s = nd.sample_normal(nd.array([0.0, 10.0]), nd.array([1.0, 1.0]), shape=(4000,))
    assert s.shape == (2, 4000)
    close(s.mean(axis=1), [0.0, 10.0], atol=0.1)
    e = nd.random_exponential(lam=4.0, shape=(4000,))
    assert abs(e.mean().asscalar() - 0.25) < 0.02
    g = nd.sample_exponential(nd.array([1.0, 0.5]), shape=(4000,))
    close(g.mean(axis=1), [1.0, 2.0], rtol=0.1)
    assert nd.random_uniform(shape=(3,)).shape == (3,)
    perm = nd.shuffle(nd.arange(10))
    assert sorted(perm.asnumpy().tolist()) == list(range(10))


def test_misc_operators():
    x = nd.array(X)
    close(nd.multi_sum_sq(x, x * 2), [91.0, 364.0])
    z = nd.ones((2, 2))
    nd.reset_arrays(z, num_arrays=1)
    close(z, np.zeros((2, 2)))
    o = nd.zeros((2, 3))
    nd.onehot_encode(nd.array([2.0, 0.0]), o)
    close(o, [[0, 0, 1], [1, 0, 0]])
    a, b = nd.amp_multicast(nd.ones((1,), dtype="float16"), nd.ones((1,)), num_outputs=2)
    assert a.dtype == np.float32 and b.dtype == np.float32
    cnt, edges = nd.histogram(nd.array([1.0, 2, 2, 3]), bins=2)
    close(cnt, [1, 3])
    close(edges, [1.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match="sparse"):
        nd.cast_storage(x, "csr")
    close(nd.erfinv(nd.array([0.5, -0.3])), [0.4769362762, -0.2724627147], rtol=1e-5)
    assert nd.utils.load_frombuffer is nd.load_frombuffer
    assert nd.numpy.sum is mx.np.sum and nd.npx.relu is mx.npx.relu


def test_optimizer_updates_match_mxnet():
    """The composed update operators against MXNet 1.9.1 (``record_updates.py``)."""
    with open(os.path.join(os.path.dirname(FIX), "updates.json")) as f:
        ref = json.load(f)
    cases = _update_cases()
    assert set(cases) == set(ref)
    for name, fn in cases.items():
        w, g = nd.array(UW), nd.array(UG)
        states = [nd.array(US), nd.array([0.4, 0.1, 0.2, 0.3]), nd.array([0.0, 0.1, -0.1, 0.2])]
        out = fn(w, g, states)
        close(out, ref[name]["out"], rtol=1e-3, atol=1e-3)
        for s, r in zip(states, ref[name]["states"]):
            close(s, r, rtol=1e-4, atol=1e-5)


UW = [0.5, -1.0, 2.0, 0.0]
UG = [0.3, -0.2, 1.5, -4.0]
US = [0.1, 0.2, -0.3, 0.05]


def _update_cases():
    def multi_mom(w, g, s):
        nd.multi_sgd_mom_update(w, g, s[0], s[1], g, s[2], lrs=(0.1, 0.2), wds=(0.0, 0.01),
                                momentum=0.9, num_weights=2, out=[w, s[1]])
        return w

    def preloaded(w, g, s):
        nd.preloaded_multi_sgd_update(w, g, s[0], g, nd.array([0.1, 0.2]),
                                      nd.array([0.01, 0.0]), num_weights=2, out=[w, s[0]])
        return w

    a = nd.array
    return {
        "signsgd": lambda w, g, s: nd.signsgd_update(w, g, lr=0.1, wd=0.01, clip_gradient=1.0),
        "signum": lambda w, g, s: nd.signum_update(w, g, s[0], lr=0.1, momentum=0.9, wd=0.01,
                                                   wd_lh=0.02, rescale_grad=0.5),
        "ftrl": lambda w, g, s: nd.ftrl_update(w, g, s[0], s[1], lr=0.1, lamda1=0.01, beta=1.0,
                                               wd=0.01, clip_gradient=2.0),
        "ftml": lambda w, g, s: nd.ftml_update(w, g, s[1], s[0], s[2], lr=0.1, t=3, wd=0.01,
                                               rescale_grad=0.5),
        "lamb1": lambda w, g, s: nd.lamb_update_phase1(w, g, s[0], s[1], t=2, wd=0.01),
        "lamb1_nobias": lambda w, g, s: nd.lamb_update_phase1(
            w, g, s[0], s[1], t=2, wd=0.01, bias_correction=False, clip_gradient=1.0),
        "lamb2": lambda w, g, s: nd.lamb_update_phase2(w, g, a([2.0]), a([0.5]), lr=0.1,
                                                       upper_bound=1.5),
        "lamb2_zero": lambda w, g, s: nd.lamb_update_phase2(w, g, a([0.0]), a([0.5]), lr=0.1),
        "mp_sgd_mom": lambda w, g, s: nd.mp_sgd_mom_update(
            w.astype("float16"), g.astype("float16"), s[0], s[1], lr=0.1, momentum=0.9,
            wd=0.01),
        "mp_nag_mom": lambda w, g, s: nd.mp_nag_mom_update(
            w.astype("float16"), g.astype("float16"), s[0], s[1], lr=0.1, momentum=0.9,
            wd=0.01),
        "mp_sgd": lambda w, g, s: nd.mp_sgd_update(
            w.astype("float16"), g.astype("float16"), s[1], lr=0.1, wd=0.01, clip_gradient=1.0),
        "multi_lars": lambda w, g, s: nd.multi_lars(a([0.1, 0.2, 0.3]), a([4.0, 0.0, 9.0]),
                                                    a([1.0, 2.0, 0.25]), a([0.01, 0.0, 0.1]),
                                                    eta=0.5, eps=1e-3, rescale_grad=2.0),
        "multi_sgd_mom": multi_mom,
        "preloaded_multi_sgd": preloaded,
    }
