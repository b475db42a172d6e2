"""``nd.contrib`` operators against recorded MXNet 1.9.1 values and gradients
(``tests/fixtures/contrib_ops``), plus the imperative control flow, the single-process
``SyncBatchNorm``/``BatchNormWithReLU`` and MXNet's GPU-only errors."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "contrib_ops", "contrib_mxnet.json")
with open(FIX) as _f:
    CASES = json.load(_f)["cases"]


def _np(a):
    return np.array(a["v"], dtype=a["dtype"]).reshape(a["shape"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    c = CASES[name]
    ins = {k: nd.array(_np(v), dtype=v["dtype"]) for k, v in c["inputs"].items()}
    grads = c.get("grads", {})
    for k in grads:
        ins[k].attach_grad()
    with autograd.record():
        out = getattr(nd.contrib, c["op"])(*ins.values(), **c["kw"])
    outs = out if isinstance(out, list) else [out]
    assert len(outs) == len(c["outs"])
    for o, want in zip(outs, c["outs"]):
        assert o.shape == tuple(want["shape"]), name
        assert str(o.dtype.__name__ if hasattr(o.dtype, "__name__") else o.dtype) == want["dtype"]
        np.testing.assert_allclose(o.asnumpy(), _np(want), rtol=1e-6, atol=1e-6, err_msg=name)
    if grads:
        outs[0].backward(nd.array(_np(c["ograd"]), dtype=c["ograd"]["dtype"]))
        for k, want in grads.items():
            np.testing.assert_allclose(ins[k].grad.asnumpy(), _np(want), rtol=1e-6, atol=1e-6,
                                       err_msg=f"{name}: gradient of {k}")


def test_box_nms_alias_and_one_visible_output():
    x = nd.array(_np(CASES["nms_default"]["inputs"]["data"]))
    a = nd.contrib.box_nms(x, overlap_thresh=0.3)
    b = nd.contrib.box_non_maximum_suppression(x, overlap_thresh=0.3)
    assert isinstance(a, nd.NDArray)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def _nms_reference(rows, thresh):
    """Greedy NMS in NumPy for [id, score, x1, y1, x2, y2] rows, no class, valid > 0."""
    order = sorted((i for i in range(len(rows)) if rows[i, 1] > 0), key=lambda i: -rows[i, 1])
    kept = []
    for i in order:
        ok = True
        for j in kept:
            a, b = rows[i, 2:6], rows[j, 2:6]
            iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
            ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
            inter = iw * ih
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            if inter / union > thresh:
                ok = False
                break
        if ok:
            kept.append(i)
    out = -np.ones_like(rows)
    out[:len(kept)] = rows[kept]
    return out


def test_box_nms_against_numpy_on_random_boxes():
    rng = np.random.default_rng(3)
    rows = np.zeros((40, 6))
    rows[:, 1] = rng.permutation(40) / 40 + 0.01  # distinct scores
    xy = rng.uniform(0, 0.7, size=(40, 2))
    rows[:, 2:4] = xy
    rows[:, 4:6] = xy + rng.uniform(0.05, 0.3, size=(40, 2))
    got = nd.contrib.box_nms(nd.array(rows, dtype="float64"), overlap_thresh=0.4).asnumpy()
    np.testing.assert_allclose(got, _nms_reference(rows, 0.4))


@pytest.mark.parametrize("kw, msg", [
    ({"score_index": 3}, "score_index"),
    ({"coord_start": 4}, "coordinates"),
    ({"id_index": 1}, "id_index"),
    ({"in_format": "xywh"}, "in_format"),
])
def test_box_nms_bad_layout_names_the_op(kw, msg):
    with pytest.raises(mx.base.MXNetError, match=f"box_nms.*{msg}"):
        nd.contrib.box_nms(nd.ones((2, 6)), **kw)


def test_box_nms_needs_two_axes_and_a_float_dtype():
    with pytest.raises(mx.base.MXNetError, match="box_nms.*at least 2 axes"):
        nd.contrib.box_nms(nd.ones((6,)))
    with pytest.raises(mx.base.MXNetError, match="box_nms"):
        nd.contrib.box_nms(nd.ones((2, 6), dtype="int32"))


def test_index_copy_out_of_range_fails_at_the_read():
    y = nd.contrib.index_copy(nd.zeros((3, 2)), nd.array([5], dtype="int64"), nd.ones((1, 2)))
    with pytest.raises(mx.base.MXNetError, match="index_copy.*out of range"):
        y.asnumpy()


def test_index_copy_shape_errors():
    with pytest.raises(mx.base.MXNetError, match="index_copy"):
        nd.contrib.index_copy(nd.zeros((3, 2)), nd.array([0, 1]), nd.ones((2, 3)))


def test_straight_through_estimators_pass_the_gradient():
    x = nd.array([0.2, 1.7, -2.6])
    x.attach_grad()
    with autograd.record():
        y = (nd.contrib.round_ste(x) * nd.contrib.sign_ste(x) * 3).sum()
    y.backward()
    # d/dx [round(x) sign(x) 3] with both estimators' gradient 1: 3 (sign(x) + round(x))
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * (np.sign([0.2, 1.7, -2.6]) + np.round([0.2, 1.7, -2.6])))


def test_gradientmultiplier_reverses_the_gradient():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = (nd.contrib.gradientmultiplier(x * x, scalar=-1.0)).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [-2.0, -4.0])
    np.testing.assert_allclose(nd.contrib.backward_gradientmultiplier(x, scalar=3.0).asnumpy(), [3.0, 6.0])


def test_quadratic_backward_operator():
    x, g = nd.array([1.0, -2.0]), nd.array([0.5, 1.0])
    got = nd.contrib.backward_quadratic(g, x, a=2.0, b=1.0).asnumpy()
    np.testing.assert_allclose(got, [0.5 * 5.0, 1.0 * -7.0])


def test_boolean_mask_checks_like_mxnet():
    with pytest.raises(mx.base.MXNetError, match="boolean_mask.*axis"):
        nd.contrib.boolean_mask(nd.ones((2, 3)), nd.array([1, 0, 1]), axis=1)
    with pytest.raises(mx.base.MXNetError, match="boolean_mask"):
        nd.contrib.boolean_mask(nd.ones((2, 3)), nd.array([1, 0, 1]))


def test_foreach_runs_the_body_over_axis_0():
    data = nd.arange(12).reshape((4, 3))

    def step(x, states):
        s = states[0] + x
        return [s * 2, x.sum()], [s]

    (outs, sums), states = nd.contrib.foreach(step, data, [nd.zeros(3)])
    want = np.cumsum(data.asnumpy(), axis=0)
    np.testing.assert_allclose(outs.asnumpy(), want * 2)
    np.testing.assert_allclose(sums.asnumpy().ravel(), data.asnumpy().sum(1))
    np.testing.assert_allclose(states[0].asnumpy(), want[-1])


def test_foreach_is_differentiable():
    data = nd.array([[1.0, 2.0], [3.0, 4.0]])
    w = nd.array([2.0, 0.5])
    w.attach_grad()
    with autograd.record():
        outs, _ = nd.contrib.foreach(lambda x, s: (x * w + s[0], [s[0] + 1]), data, [nd.zeros(2)])
        loss = outs.sum()
    loss.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [4.0, 6.0])


def test_while_loop_pads_to_max_iterations():
    def cond(i, s):
        return i < 3

    def func(i, s):
        return [s * 10], [i + 1, s + i]

    outs, (i, s) = nd.contrib.while_loop(cond, func, [nd.array([0]), nd.array([1])], max_iterations=5)
    assert outs[0].shape == (5, 1)
    np.testing.assert_allclose(outs[0].asnumpy()[:3].ravel(), [10, 10, 20])
    assert i.asscalar() == 3 and s.asscalar() == 4
    with pytest.raises(ValueError, match="max_iterations"):
        nd.contrib.while_loop(cond, func, [nd.array([0]), nd.array([1])])


def test_cond_picks_a_branch():
    assert nd.contrib.cond(nd.array([1]), lambda: "then", lambda: "else") == "then"
    assert nd.contrib.cond(nd.array([0]), lambda: "then", lambda: "else") == "else"


def test_sync_batch_norm_is_batch_norm_in_one_process():
    rng = np.random.default_rng(0)
    x = nd.array(rng.normal(size=(4, 3, 2, 2)))
    args = [nd.ones(3), nd.zeros(3), nd.zeros(3), nd.ones(3)]
    with autograd.train_mode():
        a = nd.contrib.SyncBatchNorm(x, *[v.copy() for v in args], key="bn0")
        b = nd.BatchNorm(x, *[v.copy() for v in args])
        c = nd.contrib.BatchNormWithReLU(x, *[v.copy() for v in args])
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(c.asnumpy(), np.maximum(b.asnumpy(), 0), rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="ndev"):
        nd.contrib.SyncBatchNorm(x, *args, ndev=2, key="bn0")


@pytest.mark.parametrize("fn, msg", [
    (lambda: nd.contrib.fft(nd.ones((2, 4))), "fft is only available for GPU"),
    (lambda: nd.contrib.ifft(nd.ones((2, 4))), "ifft is only available for GPU"),
    (lambda: nd.contrib.count_sketch(nd.ones((1, 2)), nd.zeros((1, 2)), nd.ones((1, 2)), out_dim=3),
     "CountSketch is only available for GPU"),
])
def test_gpu_only_operators_raise_mxnets_error(fn, msg):
    with pytest.raises(mx.base.MXNetError, match=msg):
        fn()


def test_contrib_reexports():
    assert nd.contrib.mx is mx
    assert nd.contrib.current_context() == mx.cpu()
    assert nd.contrib.uniform is nd.random.uniform
    assert nd.contrib.np is np


def test_registry_module():
    class Base:
        pass

    @mx.registry.get_alias_func(Base, "thing")("b1", "bee")
    class B(Base):
        def __init__(self, v=0):
            self.v = v

    create = mx.registry.get_create_func(Base, "thing")
    assert isinstance(create("BEE", v=3), B) and create("b1", v=3).v == 3
    assert create('["b1", {"v": 5}]').v == 5
    inst = B()
    assert create(inst) is inst
    with pytest.raises(AssertionError, match="not registered"):
        create("nope")
    assert set(mx.registry.get_registry(Base)) == {"b1", "bee"}


with open(FIX) as _f:
    UPDATES = json.load(_f)["updates"]


def _build(v):
    return [nd.array(_np(x), dtype=x["dtype"]) for x in v] if isinstance(v, list) else \
        nd.array(_np(v), dtype=v["dtype"])


@pytest.mark.parametrize("name, fn", [
    ("adamw", nd.contrib.adamw_update),
    ("adamw_skip_inf", nd.contrib.adamw_update),
    ("mp_adamw", nd.contrib.mp_adamw_update),
    ("multi_adamw", nd.contrib.multi_adamw_update),
    ("multi_lamb", nd.contrib.multi_lamb_update),
])
def test_updates_match_mxnet(name, fn):
    c = UPDATES[name]
    arrs = {k: _build(v) for k, v in c["inputs"].items()}
    kw = dict(c["kw"])
    if "out_is" in kw:
        kw["out"] = arrs[kw.pop("out_is")]
    res = fn(**arrs, **kw)
    res = res if isinstance(res, list) else [res]
    if name == "adamw_skip_inf":
        # MXNet leaves a fresh out= unwritten (uninitialised memory) when it skips the step;
        # ferromx returns the weight unchanged (docs/for-mxnet-users.md)
        np.testing.assert_array_equal(res[0].asnumpy(), _np(c["inputs"]["weight"]))
    else:
        for r, want in zip(res, c["result"]):
            np.testing.assert_allclose(r.asnumpy(), _np(want), rtol=2e-3 if "mp" in name else 1e-5,
                                       atol=1e-6, err_msg=name)
    for k, want in c["after"].items():
        if k in ("grad", "grads"):
            continue  # MXNet's _adamw_update rescales and clips grad in place; ferromx leaves it
        got = arrs[k]
        for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]):
            np.testing.assert_allclose(g.asnumpy(), _np(w), rtol=1e-5, atol=1e-6, err_msg=f"{name}: {k}")


def test_updates_leave_the_gradient_alone():
    c = UPDATES["adamw"]
    arrs = {k: _build(v) for k, v in c["inputs"].items()}
    nd.contrib.adamw_update(**arrs, **c["kw"])
    np.testing.assert_array_equal(arrs["grad"].asnumpy(), _np(c["inputs"]["grad"]))


def test_internal_names_of_the_updates():
    assert nd._internal._adamw_update is not None and nd._internal._multi_lamb_update is not None
    with pytest.raises(mx.base.MXNetError, match="row_sparse"):
        nd.contrib.group_adagrad_update(nd.ones((2, 2)), nd.ones((2, 2)), nd.ones((2, 1)), lr=0.1)


@pytest.mark.parametrize("fn", [
    lambda: nd.contrib.ROIAlign(nd.zeros((1, 2, 0, 5)), nd.array([[0, 1, 1, 3, 3]]),
                                pooled_size=(2, 2), spatial_scale=1.0),
    lambda: nd.contrib.RROIAlign(nd.zeros((1, 2, 0, 5)), nd.array([[0, 1, 1, 3, 3, 10]]),
                                 pooled_size=(2, 2), spatial_scale=1.0),
    lambda: nd.contrib.PSROIPooling(nd.zeros((1, 8, 4, 0)), nd.array([[0, 1, 1, 3, 3]]),
                                    spatial_scale=1.0, output_dim=2, pooled_size=2),
])
def test_region_operators_reject_an_empty_feature_map(fn):
    with pytest.raises(mx.base.MXNetError, match="ROI.*empty|PSROI.*empty"):
        fn()
