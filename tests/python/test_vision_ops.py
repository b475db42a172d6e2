"""MXNet's legacy vision and region operators as table operators: GridGenerator,
BilinearSampler, SpatialTransformer, ROIPooling, Correlation, Crop, the ``*_v1``
operators and IdentityAttachKLSparseReg. Values and gradients are compared with
MXNet 1.9.1's, recorded in tests/fixtures/vision_ops/vision_mxnet.json (re-record with
tests/fixtures/vision_ops/record_vision_ops.py); gradients are also checked against
central differences and errors name the operator."""

import json
import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "vision_ops", "vision_mxnet.json")
with open(FIX) as _f:
    REC = json.load(_f)

AUX = {"BatchNorm_v1": ("moving_mean", "moving_var"), "IdentityAttachKLSparseReg": ("moving_avg",)}


def _kw(r):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in r["kw"].items()}


def _arr(spec):
    return nd.array(np.array(spec["v"], dtype=np.float32).reshape(spec["shape"]))


@pytest.mark.parametrize("case", sorted(REC))
def test_values_and_gradients_match_recorded_mxnet(case):
    r = REC[case]
    ins = {k: _arr(v) for k, v in r["inputs"].items()}
    for k in r["grads"]:
        ins[k].attach_grad()
    with autograd.record():
        out = getattr(nd, r["op"])(*ins.values(), **_kw(r))
    outs = out if isinstance(out, list) else [out]
    assert len(outs) == len(r["outs"])
    head = nd.array(np.array(r["head"], dtype=np.float32).reshape(outs[0].shape))
    outs[0].backward(head)
    for got, want in zip(outs, r["outs"]):
        assert got.shape == tuple(want["shape"])
        np.testing.assert_allclose(got.asnumpy().ravel(), want["v"], rtol=1e-5, atol=1e-5,
                                   err_msg=f"{case} output")
    for k, want in r["grads"].items():
        np.testing.assert_allclose(ins[k].grad.asnumpy().ravel(), want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"{case} d/d{k}")
    for k, want in r["aux_after"].items():
        np.testing.assert_allclose(ins[k].asnumpy().ravel(), want, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{case} {k} after backward")


def _fd_check(f, xs, eps=1e-6):
    arrs = [nd.array(x, dtype="float64") for x in xs]
    for a in arrs:
        a.attach_grad()
    rng = np.random.default_rng(3)
    with autograd.record():
        y = f(*arrs)
    w = rng.uniform(0.5, 1.5, size=y.shape)
    y.backward(nd.array(w, dtype="float64"))
    for k, x in enumerate(xs):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            hi, lo = [v.copy() for v in xs], [v.copy() for v in xs]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            fh = (f(*[nd.array(v, dtype="float64") for v in hi]).asnumpy() * w).sum()
            fl = (f(*[nd.array(v, dtype="float64") for v in lo]).asnumpy() * w).sum()
            num[idx] = (fh - fl) / (2 * eps)
        np.testing.assert_allclose(arrs[k].grad.asnumpy(), num, rtol=1e-4, atol=1e-6, err_msg=f"input {k}")


def test_sampler_gradients_match_finite_differences_with_points_outside():
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (1, 2, 4, 5))
    grid = rng.uniform(-1.4, 1.4, (1, 2, 3, 3))
    _fd_check(nd.BilinearSampler, [data, grid])


def test_correlation_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (1, 2, 6, 6)), rng.uniform(-1, 1, (1, 2, 6, 6))
    _fd_check(lambda x, y: nd.Correlation(x, y, kernel_size=3, max_displacement=2, stride2=2, pad_size=2), [a, b])
    _fd_check(lambda x, y: nd.Correlation(x, y, max_displacement=1, is_multiply=False, pad_size=1), [a, b])


def test_grid_generator_gradients_match_finite_differences():
    rng = np.random.default_rng(2)
    _fd_check(lambda t: nd.GridGenerator(t, transform_type="affine", target_shape=(3, 4)), [rng.uniform(-1, 1, (2, 6))])
    _fd_check(lambda f: nd.GridGenerator(f, transform_type="warp"), [rng.uniform(-1, 1, (1, 2, 3, 4))])


def test_roi_pooling_rois_get_zero_gradient_and_bad_batch_index_pools_zero():
    x = nd.array(np.arange(2 * 8 * 6, dtype=np.float32).reshape(2, 1, 8, 6))
    rois = nd.array([[0, 0, 0, 4, 4], [5, 0, 0, 4, 4], [1, 1, 1, 3, 3]])
    x.attach_grad()
    rois.attach_grad()
    with autograd.record():
        y = nd.ROIPooling(x, rois, pooled_size=(2, 2), spatial_scale=1.0)
    y.backward()
    assert y.shape == (3, 1, 2, 2)
    np.testing.assert_array_equal(y.asnumpy()[0, 0], [[14, 16], [26, 28]])
    np.testing.assert_array_equal(y.asnumpy()[1], 0)
    np.testing.assert_array_equal(rois.grad.asnumpy(), 0)
    assert x.grad.asnumpy().sum() == 8  # each non-empty bin routes its gradient to one cell


def test_spatial_transformer_hybridizes_and_is_grid_then_sampler():
    rng = np.random.default_rng(4)
    data = nd.array(rng.uniform(-1, 1, (2, 3, 5, 6)))
    loc = nd.array(rng.uniform(-1, 1, (2, 6)))
    want = nd.BilinearSampler(data, nd.GridGenerator(loc, transform_type="affine", target_shape=(4, 4)))
    got = nd.SpatialTransformer(data, loc, target_shape=(4, 4), transform_type="affine", sampler_type="bilinear")
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())

    class STN(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, t):
            return F.SpatialTransformer(x, t, target_shape=(4, 4), transform_type="affine",
                                        sampler_type="bilinear")

    net = STN()
    net.hybridize()
    np.testing.assert_allclose(net(data, loc).asnumpy(), want.asnumpy(), rtol=1e-6)
    s = mx.sym.SpatialTransformer(mx.sym.var("data"), mx.sym.var("loc"), target_shape=(4, 4),
                                  transform_type="affine", sampler_type="bilinear")
    assert s.infer_shape(data=(2, 3, 5, 6), loc=(2, 6))[1] == [(2, 3, 4, 4)]


def test_crop_like_gets_no_gradient_and_shapes_infer():
    x = nd.array(np.arange(2 * 6 * 7, dtype=np.float32).reshape(1, 2, 6, 7))
    like = nd.zeros((1, 1, 2, 3))
    x.attach_grad()
    like.attach_grad()
    with autograd.record():
        y = nd.Crop(x, like, num_args=2, offset=(1, 2))
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy()[:, :, 1:3, 2:5])
    np.testing.assert_array_equal(like.grad.asnumpy(), 0)
    assert x.grad.asnumpy().sum() == 2 * 2 * 3
    s = mx.sym.Crop(mx.sym.var("a"), num_args=1, h_w=(3, 3), center_crop=True)
    assert s.infer_shape(a=(2, 3, 6, 7))[1] == [(2, 3, 3, 3)]


@pytest.mark.parametrize("call,words", [
    (lambda: nd.BilinearSampler(nd.ones((1, 2, 3, 3)), nd.ones((2, 2, 3, 3))), ["BilinearSampler", "(1, 2, 3, 3)"]),
    (lambda: nd.BilinearSampler(nd.ones((1, 2, 3, 3), dtype="int32"), nd.ones((1, 2, 3, 3), dtype="int32")),
     ["BilinearSampler", "int32"]),
    (lambda: nd.GridGenerator(nd.ones((2, 5)), transform_type="affine", target_shape=(3, 3)),
     ["GridGenerator", "(N, 6)"]),
    (lambda: nd.GridGenerator(nd.ones((2, 6)), transform_type="rotate"), ["GridGenerator", "rotate"]),
    (lambda: nd.GridGenerator(nd.ones((2, 6)), transform_type="affine"), ["GridGenerator", "target_shape"]),
    (lambda: nd.SpatialTransformer(nd.ones((1, 1, 3, 3)), nd.ones((1, 6)), target_shape=(2, 2),
                                   transform_type="affine", sampler_type="nearest"),
     ["SpatialTransformer", "sampler_type"]),
    (lambda: nd.ROIPooling(nd.ones((1, 1, 4, 4)), nd.ones((2, 4)), pooled_size=(2, 2), spatial_scale=1.0),
     ["ROIPooling", "(R, 5)"]),
    (lambda: nd.ROIPooling(nd.ones((1, 1, 4, 4)), nd.ones((2, 5)), pooled_size=(2, 2), spatial_scale=2.0),
     ["ROIPooling", "spatial_scale"]),
    (lambda: nd.Correlation(nd.ones((1, 1, 4, 4)), nd.ones((1, 1, 4, 5))), ["Correlation", "same shape"]),
    (lambda: nd.Correlation(nd.ones((1, 1, 4, 4)), nd.ones((1, 1, 4, 4)), kernel_size=2), ["Correlation", "odd"]),
    (lambda: nd.Correlation(nd.ones((1, 1, 3, 3)), nd.ones((1, 1, 3, 3)), max_displacement=2),
     ["Correlation", "do not fit"]),
    (lambda: nd.Crop(nd.ones((1, 1, 4, 4)), num_args=1, h_w=(5, 2)), ["Crop", "larger"]),
    (lambda: nd.Crop(nd.ones((1, 1, 4, 4)), num_args=1, h_w=(2, 2), offset=(3, 0)), ["Crop", "offset"]),
    (lambda: nd.Crop(nd.ones((1, 1, 4, 4)), num_args=2, h_w=(2, 2)), ["Crop", "num_args"]),
    (lambda: nd.IdentityAttachKLSparseReg(nd.ones((2, 3)), nd.ones((4,))), ["IdentityAttachKLSparseReg", "(3,)"]),
])
def test_bad_input_raises_naming_the_operator(call, words):
    with pytest.raises(mx.MXNetError) as e:
        call()
        mx.nd.waitall()
    for w in words:
        assert w in str(e.value), str(e.value)


def test_legacy_names_load_from_a_graph():
    """An old graph's ``Convolution_v1`` / ``Pooling_v1`` / ``BatchNorm_v1`` nodes load and run."""
    x = mx.sym.var("data")
    net = mx.sym.Convolution_v1(x, kernel=(3, 3), num_filter=2, name="c")
    net = mx.sym.BatchNorm_v1(net, name="bn")
    net = mx.sym.Pooling_v1(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="p")
    back = mx.sym.load_json(net.tojson())
    assert back.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert back.infer_shape(data=(1, 3, 6, 6))[1] == [(1, 2, 2, 2)]


@pytest.mark.parametrize("case", ["bn_v1", "kl_sparse"])
def test_auxiliary_state_operators_through_a_bound_symbol_match_mxnet(case):
    """How MXNet runs these (its ``nd`` cannot pass their auxiliary states): a bound
    symbol, forward in training mode, backward; the states are updated by the backward."""
    r = REC[case]
    aux = AUX[r["op"]]
    args = {k: _arr(v) for k, v in r["inputs"].items() if k not in aux}
    sym = getattr(mx.sym, r["op"])(*[mx.sym.var(k) for k in args], name="op", **_kw(r))
    assert sym.list_auxiliary_states() == ["op_" + k for k in aux]
    ex = sym.bind(mx.cpu(), args=args, args_grad={k: nd.zeros(args[k].shape) for k in r["grads"]},
                  aux_states={"op_" + k: _arr(r["inputs"][k]) for k in aux})
    outs = ex.forward(is_train=True)
    head = nd.array(np.array(r["head"], dtype=np.float32).reshape(outs[0].shape))
    ex.backward([head] + [nd.zeros(o.shape) for o in outs[1:]])
    np.testing.assert_allclose(outs[0].asnumpy().ravel(), r["outs"][0]["v"], rtol=1e-5, atol=1e-5)
    for k, want in r["grads"].items():
        np.testing.assert_allclose(ex.grad_dict[k].asnumpy().ravel(), want, rtol=1e-4, atol=1e-5)
    for k, want in r["aux_after"].items():
        np.testing.assert_allclose(ex.aux_dict["op_" + k].asnumpy().ravel(), want, rtol=1e-5, atol=1e-6)


def _png(a):
    from ferromx.image.image import _imencode

    return bytes(_imencode(nd.array(a, dtype="uint8"), ".png", rgb=True))


def test_legacy_imdecode_gives_bgr_channels_first_clipped_minus_mean():
    rng = np.random.default_rng(5)
    rgb = rng.integers(0, 256, (5, 6, 3)).astype(np.uint8)
    png = _png(rgb)
    bgr_chw = rgb[:, :, ::-1].transpose(2, 0, 1).astype(np.float32)
    r = nd.imdecode(png)
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r.asnumpy(), bgr_chw)
    np.testing.assert_array_equal(nd.imdecode(png, clip_rect=(1, 2, 5, 4)).asnumpy(), bgr_chw[:, 2:4, 1:5])
    mean = nd.array(np.arange(90).reshape(3, 5, 6) * 0.5)
    np.testing.assert_allclose(nd.imdecode(png, mean=mean).asnumpy(), bgr_chw - mean.asnumpy())
    out = nd.zeros((2, 3, 5, 6))
    assert nd.imdecode(png, out=out, index=1) is out
    np.testing.assert_array_equal(out.asnumpy()[1], bgr_chw)
    np.testing.assert_array_equal(out.asnumpy()[0], 0)
    grey = nd.imdecode(png, channels=1)
    assert grey.shape == (1, 5, 6)
    with pytest.raises(mx.MXNetError, match="clip_rect"):
        nd.imdecode(png, clip_rect=(0, 0, 7, 3))
    with pytest.raises(mx.MXNetError, match="imdecode"):
        nd.imdecode(b"not an image")
