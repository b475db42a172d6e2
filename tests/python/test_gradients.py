"""Gradients of every differentiable operator reachable from Python, checked against
central finite differences in float64 (``mx.test_utils.check_numeric_gradient``).
The autograd API itself is tested in test_autograd_api.py."""

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, nd
from ferromx.test_utils import check_numeric_gradient
from numpy.testing import assert_allclose

F64 = "float64"


def _rs(seed=0):
    return np.random.RandomState(seed)


def _check(fn, *arrays, **kw):
    """Autograd vs central differences in float64 (eps 1e-5 keeps curvature error tiny)."""
    kw.setdefault("numeric_eps", 1e-5)
    kw.setdefault("rtol", 1e-4)
    kw.setdefault("atol", 1e-6)
    check_numeric_gradient(fn, [np.asarray(a, dtype=np.float64) for a in arrays], **kw)


def _idx(values, dtype="int64"):
    return nd.array(np.asarray(values), dtype=dtype)


def _away_from_zero(shape, lo=0.3, hi=1.5, seed=0):
    r = _rs(seed)
    return r.uniform(lo, hi, size=shape) * r.choice([-1.0, 1.0], size=shape)


def _distinct(shape, seed=0):
    """Values at least 0.05 apart (no ties for max/min/sort/maximum)."""
    n = int(np.prod(shape))
    return (_rs(seed).permutation(n) * 0.1 - 0.05 * n).reshape(shape) + 0.013


# ----------------------------------------------------------------------------- the checker


class _Square(autograd.Function):
    def __init__(self, factor=2.0):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        self.save_for_backward(x)
        return x * x

    def backward(self, dy):
        (x,) = self.saved_tensors
        return dy * x * self.factor


def test_check_numeric_gradient_detects_a_wrong_gradient():
    x = _away_from_zero((2, 3))
    _check(lambda a: _Square(2.0)(a), x)
    with pytest.raises(AssertionError, match="numeric gradient"):
        _check(lambda a: _Square(3.0)(a), x)  # should be 2x


# ----------------------------------------------------------------------------- unary

_UNARY_DOMAIN = {
    "erfinv": (-0.8, 0.8),
    "negative": (-2, 2),
    "abs": "nonzero",
    "square": (-2, 2),
    "relu": "nonzero",
    "sqrt": (0.2, 3),
    "rsqrt": (0.2, 3),
    "cbrt": (0.2, 3),
    "rcbrt": (0.2, 3),
    "exp": (-2, 2),
    "expm1": (-2, 2),
    "log": (0.2, 3),
    "log2": (0.2, 3),
    "log10": (0.2, 3),
    "log1p": (-0.8, 3),
    "sin": (-3, 3),
    "cos": (-3, 3),
    "tan": (-1.2, 1.2),
    "arcsin": (-0.9, 0.9),
    "arccos": (-0.9, 0.9),
    "arctan": (-3, 3),
    "sinh": (-2, 2),
    "cosh": (-2, 2),
    "tanh": (-2, 2),
    "arcsinh": (-3, 3),
    "arccosh": (1.2, 3),
    "arctanh": (-0.9, 0.9),
    "reciprocal": "nonzero",
    "sigmoid": (-3, 3),
    "softsign": "nonzero",
    "erf": (-2, 2),
    "degrees": (-2, 2),
    "radians": (-2, 2),
    "softrelu": (-3, 3),
}
_PIECEWISE_CONSTANT = ["sign", "floor", "ceil", "round", "rint", "fix", "trunc", "logical_not"]
_NOT_CHECKED = {"gamma", "gammaln"}  # MXNet defines them; finite differences are ill-conditioned
# internal (no nd function): the Rust table test checks their derivatives by finite differences
_NOT_CHECKED |= {"_digamma", "_trigamma"}
# straight-through estimators: the gradient is deliberately 1, not the derivative (checked in
# tests/python/test_contrib_ops.py)
_NOT_CHECKED |= {"_contrib_round_ste", "_contrib_sign_ste"}


def test_unary_list_is_covered():
    listed = set(_UNARY_DOMAIN) | set(_PIECEWISE_CONSTANT) | _NOT_CHECKED
    assert set(nd._UNARY) <= listed, sorted(set(nd._UNARY) - listed)


@pytest.mark.parametrize("op", sorted(_UNARY_DOMAIN))
def test_unary_gradient(op):
    dom = _UNARY_DOMAIN[op]
    x = _away_from_zero((3, 4)) if dom == "nonzero" else _rs(1).uniform(*dom, size=(3, 4))
    fn = getattr(nd, op)
    _check(fn, x)
    # the fluent method records the same gradient
    if hasattr(nd.NDArray, op) and op != "softrelu":
        _check(lambda a: getattr(a, op)(), x)


@pytest.mark.parametrize("op", _PIECEWISE_CONSTANT)
def test_piecewise_constant_unary_has_zero_gradient(op):
    x = nd.array(_rs(2).uniform(-3, 3, size=(3, 4)) + 0.25, dtype=F64)
    x.attach_grad()
    with autograd.record():
        y = getattr(nd, op)(x) * 3 + x * 0  # the zero term keeps a path even if op has none
    y.backward()
    assert_allclose(x.grad.asnumpy(), np.zeros((3, 4)))


# ----------------------------------------------------------------------------- binary


def _mod_operands():
    r = _rs(3)
    b = r.uniform(1.0, 2.0, size=(1, 4))
    a = b * (r.randint(-2, 3, size=(3, 4)) + r.uniform(0.2, 0.8, size=(3, 4)))
    return a, b


_BINARY_INPUTS = {
    "add": lambda: (_rs(4).normal(size=(3, 4)), _rs(5).normal(size=(1, 4))),
    "subtract": lambda: (_rs(4).normal(size=(3, 1)), _rs(5).normal(size=(3, 4))),
    "multiply": lambda: (_rs(4).normal(size=(2, 3, 4)), _rs(5).normal(size=(3, 1))),
    "divide": lambda: (_rs(4).normal(size=(3, 4)), _away_from_zero((3, 1))),
    "power": lambda: (_rs(4).uniform(0.5, 2, size=(3, 4)), _rs(5).uniform(-1.5, 2, size=(4,))),
    "maximum": lambda: (_distinct((3, 4), 1), _distinct((1, 4), 2) + 0.021),
    "minimum": lambda: (_distinct((3, 1), 1) + 0.021, _distinct((3, 4), 2)),
    "hypot": lambda: (_away_from_zero((3, 4)), _away_from_zero((3, 4), seed=1)),
    "modulo": _mod_operands,
}


@pytest.mark.parametrize("op", sorted(_BINARY_INPUTS))
def test_broadcast_binary_gradient(op):
    a, b = _BINARY_INPUTS[op]()
    _check(getattr(nd, op), a, b)


_SCALAR_FORMS = {
    "x+s": lambda x: x + 2.5,
    "s+x": lambda x: 2.5 + x,
    "x-s": lambda x: x - 1.5,
    "s-x": lambda x: 1.5 - x,
    "x*s": lambda x: x * -3.0,
    "s*x": lambda x: 3.0 * x,
    "x/s": lambda x: x / 4.0,
    "s/x": lambda x: 4.0 / x,
    "x**s": lambda x: x**2.5,
    "s**x": lambda x: 2.5**x,
    "x%s": lambda x: x % 0.7,
    "neg": lambda x: -x,
    "abs()": lambda x: abs(x),
    "maximum(x,s)": lambda x: nd.maximum(x, 0.8),
    "minimum(s,x)": lambda x: nd.minimum(0.8, x),
    "hypot(x,s)": lambda x: nd.hypot(x, 1.5),
}


@pytest.mark.parametrize("form", sorted(_SCALAR_FORMS))
def test_scalar_binary_gradient(form):
    x = _rs(6).uniform(0.3, 1.3, size=(3, 4)) + 0.0021  # positive, away from 0.7 and 0.8 ties
    if form == "x%s":
        x = 0.7 * (np.arange(12).reshape(3, 4) % 3 + _rs(6).uniform(0.2, 0.8, size=(3, 4)))
    _check(_SCALAR_FORMS[form], x)


# ----------------------------------------------------------------------------- reductions

_AXES = [None, 0, 1, -1, (0, 2), (1, 2)]


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "max", "min", "nansum", "nanprod"])
@pytest.mark.parametrize("axis", _AXES)
def test_reduction_gradient(op, axis):
    x = _distinct((2, 3, 4)) if op in ("max", "min") else _rs(7).uniform(0.5, 1.5, (2, 3, 4))
    fn = getattr(nd, op)
    _check(lambda a: fn(a, axis=axis), x)
    _check(lambda a: fn(a, axis=axis, keepdims=True), x)


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "max", "min"])
def test_reduction_exclude_gradient(op):
    x = _distinct((2, 3, 4)) if op in ("max", "min") else _rs(7).uniform(0.5, 1.5, (2, 3, 4))
    _check(lambda a: getattr(nd, op)(a, axis=1, exclude=True), x)


@pytest.mark.parametrize("ord_", [1, 2])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_norm_gradient(ord_, axis):
    x = _away_from_zero((3, 4))
    _check(lambda a: nd.norm(a, ord=ord_, axis=axis), x)
    _check(lambda a: nd.norm(a, ord=ord_, axis=axis, keepdims=True), x)


# ----------------------------------------------------------------------------- linear algebra


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_dot_gradient(ta, tb):
    a = _rs(8).normal(size=(4, 3) if ta else (3, 4))
    b = _rs(9).normal(size=(5, 4) if tb else (4, 5))
    _check(lambda x, y: nd.dot(x, y, transpose_a=ta, transpose_b=tb), a, b)


def test_dot_vector_and_matmul_gradient():
    _check(lambda x, y: nd.dot(x, y), _rs(1).normal(size=(4,)), _rs(2).normal(size=(4,)))
    _check(lambda x, y: x @ y, _rs(1).normal(size=(2, 4)), _rs(2).normal(size=(4, 3)))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_batch_dot_gradient(ta, tb):
    a = _rs(8).normal(size=(2, 4, 3) if ta else (2, 3, 4))
    b = _rs(9).normal(size=(2, 5, 4) if tb else (2, 4, 5))
    _check(lambda x, y: nd.batch_dot(x, y, transpose_a=ta, transpose_b=tb), a, b)


def test_fully_connected_gradient():
    x, w, b = _rs(1).normal(size=(3, 2, 2)), _rs(2).normal(size=(5, 4)), _rs(3).normal(size=5)
    _check(lambda d, wt, bs: nd.FullyConnected(d, wt, bs, num_hidden=5), x, w, b)
    _check(lambda d, wt: nd.FullyConnected(d, wt, None, num_hidden=5, no_bias=True), x, w)
    # flatten=False: applied to the last axis
    x2, w2 = _rs(4).normal(size=(2, 3, 4)), _rs(5).normal(size=(6, 4))
    _check(
        lambda d, wt, bs: nd.FullyConnected(d, wt, bs, num_hidden=6, flatten=False),
        x2,
        w2,
        _rs(6).normal(size=6),
    )


# ----------------------------------------------------------------------------- nn operators


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis,temp", [(-1, None), (0, None), (1, 2.0)])
def test_softmax_gradient(op, axis, temp):
    kw = {"axis": axis} if temp is None else {"axis": axis, "temperature": temp}
    _check(lambda a: getattr(nd, op)(a, **kw), _rs(1).normal(size=(3, 4)))


def test_softmax_ce_loss_gradient():
    label = _idx([0, 3, 1, 2], "int32")
    _check(lambda p: nd.softmax_ce_loss(p, label), _rs(1).normal(size=(4, 5)))
    _check(
        lambda p: nd.softmax_cross_entropy(p, label.astype("float64")), _rs(2).normal(size=(4, 5))
    )


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation_gradient(act):
    _check(lambda a: nd.Activation(a, act_type=act), _away_from_zero((3, 4)))


@pytest.mark.parametrize("act", ["leaky", "elu", "selu", "gelu"])
def test_leaky_relu_gradient(act):
    _check(lambda a: nd.LeakyReLU(a, act_type=act, slope=0.2), _away_from_zero((3, 4)))


def test_prelu_gradient_including_gamma():
    x = _away_from_zero((2, 3, 4))
    _check(lambda a, g: nd.LeakyReLU(a, g, act_type="prelu"), x, [0.1, 0.3, 0.25])
    _check(lambda a, g: nd.LeakyReLU(a, g, act_type="prelu"), x, [0.2])


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm_gradient(axis):
    x = _rs(1).normal(size=(2, 3, 4))
    n = x.shape[axis]
    g, b = _rs(2).uniform(0.5, 1.5, size=n), _rs(3).normal(size=n)
    _check(lambda d, gm, bt: nd.LayerNorm(d, gm, bt, axis=axis, eps=1e-5), x, g, b)


def test_embedding_gradient():
    ids = _idx([[0, 2, 2], [4, 1, 0]], "float32")  # repeated ids accumulate
    _check(lambda w: nd.Embedding(ids, w, input_dim=5, output_dim=3), _rs(1).normal(size=(5, 3)))


def test_dropout_predict_mode_is_identity_for_gradients():
    x = nd.array(_rs(1).normal(size=(3, 4)), dtype=F64)
    x.attach_grad()
    with autograd.record(train_mode=False):
        y = nd.Dropout(x, p=0.5) * 2
    y.backward()
    assert_allclose(y.asnumpy(), x.asnumpy() * 2)
    assert_allclose(x.grad.asnumpy(), np.full((3, 4), 2.0))

    def predict_dropout(a):
        with autograd.predict_mode():
            return nd.Dropout(a, p=0.5)

    _check(predict_dropout, _rs(2).normal(size=(3, 4)))


# ----------------------------------------------------------------------------- indexing


@pytest.mark.parametrize("axis", [0, 1])
def test_take_gradient(axis):
    idx = _idx([2, 0, 2, 1])
    _check(lambda a: nd.take(a, idx, axis=axis), _rs(1).normal(size=(3, 3)))


def test_pick_gradient():
    _check(lambda a: nd.pick(a, _idx([0, 2, 1], "float32"), axis=1), _rs(1).normal(size=(3, 4)))
    _check(
        lambda a: nd.pick(a, _idx([0, 2, 1, 1], "float32"), axis=0, keepdims=True),
        _rs(2).normal(size=(3, 4)),
    )


def test_where_gradient():
    cond = nd.array(np.array([[1, 0, 1, 0], [0, 0, 1, 1], [1, 1, 0, 0]]), dtype=F64)
    _check(
        lambda x, y: nd.where(cond, x, y), _rs(1).normal(size=(3, 4)), _rs(2).normal(size=(3, 4))
    )


def test_gather_nd_gradient():
    idx = _idx([[0, 1, 1], [2, 0, 2]])  # (0,2), (1,0), (1,2)
    _check(lambda a: nd.gather_nd(a, idx), _rs(1).normal(size=(2, 3, 2)))


def test_clip_gradient():
    x = np.linspace(-2, 2, 12).reshape(3, 4) + 0.013  # none on the bounds
    _check(lambda a: nd.clip(a, -1.0, 1.2), x)


# ----------------------------------------------------------------------------- shape ops


def _weighted_sum(parts):
    assert isinstance(parts, list) and len(parts) > 1
    return sum(p * (i + 1) for i, p in enumerate(parts))


_SHAPE_OPS = {
    "concat": (lambda a, b: nd.concat(a, b, dim=1), [(2, 3), (2, 2)]),
    "concat0": (lambda a, b: nd.concat(a, b, dim=0), [(1, 3), (2, 3)]),
    "stack": (lambda a, b: nd.stack(a, b, axis=1), [(2, 3), (2, 3)]),
    "split": (lambda a: _weighted_sum(nd.split(a, num_outputs=3, axis=1)), [(2, 6)]),
    "split_squeeze": (lambda a: _weighted_sum(nd.split(a, 2, axis=0, squeeze_axis=True)), [(2, 3)]),
    "slice_axis": (lambda a: nd.slice_axis(a, axis=1, begin=1, end=3), [(2, 4)]),
    "slice": (lambda a: nd.slice(a, begin=(0, 1), end=(2, None), step=(1, 2)), [(3, 5)]),
    "getitem": (lambda a: a[1:, ::2], [(3, 5)]),
    "transpose": (lambda a: nd.transpose(a, axes=(2, 0, 1)), [(2, 3, 4)]),
    "T": (lambda a: a.T, [(2, 3)]),
    "reshape": (lambda a: a.reshape((4, -1)), [(2, 3, 2)]),
    "reshape_codes": (lambda a: nd.reshape(a, shape=(0, -3)), [(2, 3, 2)]),
    "broadcast_to": (lambda a: nd.broadcast_to(a, shape=(2, 3, 4)), [(1, 3, 1)]),
    "tile": (lambda a: nd.tile(a, reps=(2, 3)), [(2, 2)]),
    "repeat": (lambda a: nd.repeat(a, repeats=3, axis=1), [(2, 2)]),
    "flip": (lambda a: nd.flip(a, axis=1), [(2, 3)]),
    "expand_squeeze": (lambda a: nd.squeeze(nd.expand_dims(a, axis=1) * 2), [(3, 2)]),
    "copy": (lambda a: a.copy() * 2, [(2, 3)]),
    "copyto": (lambda a: a.copyto(mx.cpu()) * 2, [(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(_SHAPE_OPS))
def test_shape_op_gradient(name):
    fn, shapes = _SHAPE_OPS[name]
    _check(fn, *[_rs(i).normal(size=s) for i, s in enumerate(shapes)])


def test_astype_gradient():
    # through float32 and back: the finite differences see float32 rounding, so a wide step
    _check(
        lambda a: a.astype("float32").astype(F64) * 3,
        _rs(1).normal(size=(2, 3)),
        numeric_eps=1e-2,
        rtol=1e-3,
    )


@pytest.mark.parametrize("ascend", [True, False])
def test_sort_and_topk_value_gradient(ascend):
    x = _distinct((3, 4))
    _check(lambda a: nd.sort(a, axis=1, is_ascend=ascend), x)
    _check(lambda a: nd.topk(a, axis=1, k=2, ret_typ="value", is_ascend=ascend), x)
    _check(lambda a: nd.topk(a, axis=0, k=2, ret_typ="value", is_ascend=ascend), x)


_MORE_SHAPE_OPS = {
    "swapaxes": (lambda a: nd.swapaxes(a, dim1=0, dim2=2), [(2, 3, 4)]),
    "moveaxis": (lambda a: nd.moveaxis(a, source=0, destination=2), [(2, 3, 4)]),
    "flatten": (lambda a: nd.flatten(a), [(2, 3, 4)]),
    "squeeze": (lambda a: nd.squeeze(a, axis=1), [(3, 1, 2)]),
    "reshape_like": (lambda a, b: nd.reshape_like(a, b) * b, [(2, 6), (3, 4)]),
    "broadcast_like": (lambda a: nd.broadcast_like(a, nd.zeros((3, 4), dtype=F64)), [(1, 4)]),
    "broadcast_axis": (lambda a: nd.broadcast_axis(a, axis=1, size=3), [(2, 1)]),
    "broadcast_axes": (lambda a: nd.broadcast_axes(a, axis=(0, 2), size=(2, 3)), [(1, 2, 1)]),
    "slice_like": (lambda a: nd.slice_like(a, nd.zeros((2, 2), dtype=F64)), [(3, 4)]),
    "diag": (lambda a: nd.diag(a), [(3, 3)]),
    "diag_1d": (lambda a: nd.diag(a), [(3,)]),
    "reverse": (lambda a: nd.reverse(a, axis=0), [(3, 2)]),
    "pad_constant": (lambda a: nd.pad(a, mode="constant", pad_width=(1, 0, 0, 2)), [(2, 3)]),
    "pad_edge": (lambda a: nd.pad(a, mode="edge", pad_width=(1, 1, 0, 2)), [(2, 3)]),
    "pad_reflect": (lambda a: nd.pad(a, mode="reflect", pad_width=(1, 1, 1, 1)), [(3, 3)]),
    "gemm2": (lambda a, b: nd.linalg.gemm2(a, b, transpose_a=True, alpha=2.0), [(3, 2), (3, 4)]),
    "scatter_nd": (lambda a: nd.scatter_nd(a, _idx([[0, 1], [1, 2]]), shape=(2, 3)), [(2,)]),
    "split_v2": (lambda a: _weighted_sum(nd.split_v2(a, [1, 3], axis=1)), [(2, 4)]),
    "getitem_int": (lambda a: a[1], [(3, 4)]),
    "getitem_negative_step": (lambda a: a[::-1, 1], [(3, 4)]),
    "getitem_array": (lambda a: a[_idx([2, 0, 2])], [(3, 4)]),
    "take_clip": (lambda a: nd.take(a, _idx([0, 5, -1]), axis=0, mode="clip"), [(3, 2)]),
    "take_wrap": (lambda a: nd.take(a, _idx([0, 5, -1]), axis=0, mode="wrap"), [(3, 2)]),
}


@pytest.mark.parametrize("name", sorted(_MORE_SHAPE_OPS))
def test_more_shape_op_gradient(name):
    fn, shapes = _MORE_SHAPE_OPS[name]
    _check(fn, *[_rs(i).normal(size=s) for i, s in enumerate(shapes)])


def test_smooth_l1_gradient():
    x = np.array([[-2.0, -0.5, 0.3], [0.7, 1.5, 3.0]])  # both branches, off the kink at |x|=1
    _check(lambda a: nd.smooth_l1(a, scalar=1.0), x)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_pick_out_of_range_index_gradient(mode):
    _check(
        lambda a: nd.pick(a, _idx([0, 5, -1], "float32"), axis=1, mode=mode),
        _rs(1).normal(size=(3, 2)),
    )


def test_a_large_weight_gradient_is_written_whole_into_grad():
    # A convolution's weight gradient reaches `.grad` through `_copyto`, which splits
    # copies above 2^18 elements across cores: every piece must land at its own offset.
    rng = np.random.RandomState(7)
    x = rng.rand(2, 128, 6, 6).astype(np.float32)
    w = rng.rand(512, 128, 3, 3).astype(np.float32)  # 589,824 elements: two pieces
    dy = rng.rand(2, 512, 6, 6).astype(np.float32)
    xn, wn = nd.array(x), nd.array(w)
    wn.attach_grad()
    with autograd.record():
        y = nd.Convolution(xn, wn, kernel=(3, 3), pad=(1, 1), num_filter=512, no_bias=True)
    y.backward(nd.array(dy))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros_like(w)
    for i in range(3):
        for j in range(3):
            want[:, :, i, j] = np.einsum("noyx,ncyx->oc", dy, xp[:, :, i:i + 6, j:j + 6])
    np.testing.assert_allclose(wn.grad.asnumpy(), want, rtol=1e-4, atol=1e-3)
