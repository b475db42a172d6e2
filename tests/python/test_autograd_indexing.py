"""Higher-order gradients through slicing and indexing, and ``autograd.get_symbol`` of
advanced indexing.

The backward of a slice, ``take``, ``pick`` and ``gather_nd`` is itself a recorded
operator (``_backward_slice``, ``_backward_take``, ``_backward_pick``,
``_backward_gather_nd``) whose gradient is the forward selection, so
``autograd.grad(..., create_graph=True)`` through ``x[key]`` differentiates again.
MXNet 1.9.1 raises here ("_backward_slice is non-differentiable"), so the reference is
analytic: for ``f(x) = sum(S(x)**3)`` with a linear selection ``S`` (``S(x) = x[key]``),
``grad f = S^T(3 S(x)**2)`` and ``d/dx <w, grad f> = S^T(6 S(x) * S(w))``, with ``S^T``
computed by NumPy's ``np.add.at`` (duplicated indices accumulate). A finite-difference
check backs the analytic formula up for one case of each kind.
"""

import json

import ferromx as mx
import numpy as onp
import pytest
from ferromx import _native, autograd, nd

X0 = onp.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [0.5, 1.5, 2.5, 3.5]])
W0 = onp.array([[0.3, -1.0, 2.0, 0.5], [1.5, 0.2, -0.7, 1.1], [0.9, 1.3, -0.4, 0.6]])


def _idx(v):
    return nd.array(v, dtype="float64")


# (name, selection on an NDArray, the same selection as a NumPy key)
CASES = [
    ("slice_rows", lambda x: x[1:3], (slice(1, 3),)),
    ("strided_cols", lambda x: x[:, ::2], (slice(None), slice(None, None, 2))),
    ("integer", lambda x: x[1], (1,)),
    ("integer_and_slice", lambda x: x[2, 1:], (2, slice(1, None))),
    ("negative_step", lambda x: x[::-1, 1], (slice(None, None, -1), 1)),
    ("int_array_dup", lambda x: x[_idx([0, 2, 0])], (onp.array([0, 2, 0]),)),
    ("int_array_cols", lambda x: x[:, _idx([1, 3, 3])], (slice(None), onp.array([1, 3, 3]))),
    ("two_arrays", lambda x: x[_idx([0, 2, 2]), _idx([1, 3, 3])],
     (onp.array([0, 2, 2]), onp.array([1, 3, 3]))),
    ("take", lambda x: nd.take(x, _idx([0, 2, 2])), (onp.array([0, 2, 2]),)),
    ("take_axis1", lambda x: nd.take(x, _idx([[1, 3], [3, 0]]), axis=1),
     (slice(None), onp.array([[1, 3], [3, 0]]))),
    ("pick", lambda x: nd.pick(x, _idx([0, 2, 1]), axis=1), (onp.arange(3), onp.array([0, 2, 1]))),
    ("slice_axis", lambda x: nd.slice_axis(x, axis=1, begin=1, end=3), (slice(None), slice(1, 3))),
    ("nd_slice_step", lambda x: nd.slice(x, begin=(0, 1), end=(2, 4), step=(1, 2)),
     (slice(0, 2), slice(1, 4, 2))),
    ("slice_like", lambda x: nd.slice_like(x, nd.zeros((2, 2))), (slice(0, 2), slice(0, 2))),
    ("gather_nd", lambda x: nd.gather_nd(x, _idx([[0, 2, 2], [1, 3, 3]])),
     (onp.array([0, 2, 2]), onp.array([1, 3, 3]))),
    ("embedding", lambda x: nd.Embedding(_idx([2, 0, 2]), x, input_dim=3, output_dim=4),
     (onp.array([2, 0, 2]),)),
]


def _expected(key, x, w):
    """(grad f, d/dx <w, grad f>) for f(x) = sum(x[key]**3)."""
    g, h = onp.zeros_like(x), onp.zeros_like(x)
    onp.add.at(g, key, 3 * x[key] ** 2)
    onp.add.at(h, key, 6 * x[key] * w[key])
    return g, h


def _first_and_second(sel, x0, w0):
    x = nd.array(x0, dtype="float64")
    x.attach_grad()
    w = nd.array(w0, dtype="float64")
    with autograd.record():
        y = (sel(x) ** 3).sum()
        g = autograd.grad(y, [x], create_graph=True, retain_graph=True)[0]
        s = (g * w).sum()
    s.backward()
    return g.asnumpy(), x.grad.asnumpy()


@pytest.mark.parametrize("name,sel,key", CASES, ids=[c[0] for c in CASES])
def test_second_order_gradient_through_selection_is_analytic(name, sel, key):
    g, h = _first_and_second(sel, X0, W0)
    want_g, want_h = _expected(key, X0, W0)
    onp.testing.assert_allclose(g, want_g, rtol=1e-12, err_msg=name)
    onp.testing.assert_allclose(h, want_h, rtol=1e-12, err_msg=name)
    assert onp.abs(want_h).sum() > 0  # the case selects something


def _fd(f, a, eps=1e-6):
    out = onp.zeros_like(a)
    for i in onp.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[i] += eps
        am[i] -= eps
        out[i] = (f(ap) - f(am)) / (2 * eps)
    return out


@pytest.mark.parametrize("name", ["strided_cols", "int_array_dup", "pick", "gather_nd"])
def test_second_order_matches_finite_differences_of_the_first_order_gradient(name):
    _, sel, _ = next(c for c in CASES if c[0] == name)

    def wg(xv):  # <w, grad f(x)> from ferromx's first-order gradient
        x = nd.array(xv, dtype="float64")
        x.attach_grad()
        with autograd.record():
            y = (sel(x) ** 3).sum()
        y.backward()
        return float((x.grad.asnumpy() * W0).sum())

    _, h = _first_and_second(sel, X0, W0)
    onp.testing.assert_allclose(h, _fd(wg, X0), rtol=1e-6, atol=1e-6)


def test_third_order_through_a_slice():
    """d3/dx3 sum(x[1:3]**4) along w three times is 24 w**3 on the selected rows."""
    x = nd.array(X0, dtype="float64")
    x.attach_grad()
    w = nd.array(W0, dtype="float64")
    with autograd.record():
        y = (x[1:3] ** 4).sum()
        g1 = autograd.grad(y, [x], create_graph=True, retain_graph=True)[0]
        g2 = autograd.grad((g1 * w).sum(), [x], create_graph=True, retain_graph=True)[0]
        s = (g2 * w).sum()
    s.backward()
    want = onp.zeros_like(X0)
    want[1:3] = 24 * X0[1:3] * W0[1:3] ** 2
    onp.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-12)


def test_np_mask_and_integer_array_second_order():
    xv = mx.np.array(X0, dtype="float64")
    xv.attach_grad()
    with autograd.record():
        y = (xv[xv > 2.2] ** 3).sum() + (xv[mx.np.array([2, 2], dtype="int64")] ** 3).sum()
        g = autograd.grad(y, [xv], create_graph=True, retain_graph=True)[0]
        s = (g * mx.np.array(W0, dtype="float64")).sum()
    s.backward()
    mask = X0 > 2.2
    want = onp.where(mask, 6 * X0 * W0, 0.0)
    want[2] += 2 * 6 * X0[2] * W0[2]
    onp.testing.assert_allclose(xv.grad.asnumpy(), want, rtol=1e-12)


def test_first_order_gradients_unchanged_and_not_recorded_without_create_graph():
    x = nd.array(X0)
    x.attach_grad()
    with autograd.record():
        y = (x[:, 1:3] * 2).sum() + nd.take(x, nd.array([1, 1])).sum()
    y.backward()
    want = onp.zeros_like(X0)
    want[:, 1:3] = 2
    want[1] += 2
    onp.testing.assert_array_equal(x.grad.asnumpy(), want)


def test_gradient_operators_are_table_operators():
    g = nd.array(onp.arange(6, dtype="float64").reshape(2, 3))
    r = _native.invoke("_backward_slice", [g], begin=(0, 1), end=(2, 4), shape=(3, 4))
    want = onp.zeros((3, 4))
    want[0:2, 1:4] = g.asnumpy()
    onp.testing.assert_array_equal(r.asnumpy(), want)
    gt = nd.array([[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]])
    r = _native.invoke("_backward_take", [gt, nd.array([2, 2])], axis=0, shape=(3, 4))
    onp.testing.assert_array_equal(r.asnumpy(), [[0] * 4, [0] * 4, [11, 22, 33, 44]])
    r = _native.invoke("_backward_pick", [nd.array([5.0, 6.0]), nd.array([2, 0])], axis=1, shape=(2, 3))
    onp.testing.assert_array_equal(r.asnumpy(), [[0, 0, 5], [6, 0, 0]])
    r = _native.invoke("_backward_gather_nd", [nd.array([1.0, 2.0, 3.0]), nd.array([[0, 0, 1], [1, 1, 0]])],
                       shape=(2, 2))
    onp.testing.assert_array_equal(r.asnumpy(), [[0, 3], [3, 0]])
    with pytest.raises(mx.base.MXNetError, match="_backward_take"):
        _native.invoke("_backward_take", [gt, nd.array([2, 2, 2])], axis=0, shape=(3, 4))


# ------------------------------------------------------------------ get_symbol


def _ops(sym):
    return [(n["op"], n["inputs"]) for n in json.loads(sym.tojson())["nodes"]]


def test_get_symbol_of_integer_array_indexing_is_gather_nd_as_in_mxnet():
    """MXNet 1.9.1 records ``x[idx]`` as ``gather_nd(var0, null1)``, ``null1`` being the
    index array it builds from the key (``idx`` as one row; for ``x[:, idx]`` the
    broadcast ``arange`` of the first axis stacked on ``idx``)."""
    x = nd.array(onp.arange(12, dtype="float32").reshape(3, 4))
    x.attach_grad()
    idx = nd.array([0, 2])
    with autograd.record():
        y = x[idx]
        z = x[:, idx] * 2
    sym = autograd.get_symbol(y)
    assert _ops(sym) == [("null", []), ("null", []), ("gather_nd", [[0, 0, 0], [1, 0, 0]])]
    assert sym.list_arguments() == ["var0", "null1"]
    out = sym.eval(ctx=mx.cpu(), var0=x, null1=nd.array([[0, 2]]))[0]
    onp.testing.assert_array_equal(out.asnumpy(), y.asnumpy())

    sym = autograd.get_symbol(z)
    assert [o for o, _ in _ops(sym)] == ["null", "null", "gather_nd", "_mul_scalar"]
    rows = onp.broadcast_to(onp.arange(3)[:, None], (3, 2))
    cols = onp.broadcast_to(onp.array([0, 2]), (3, 2))
    k = nd.array(onp.stack([rows, cols]))
    out = sym.eval(ctx=mx.cpu(), var0=x, null1=k)[0]
    onp.testing.assert_array_equal(out.asnumpy(), z.asnumpy())
    again = mx.sym.load_json(sym.tojson())
    onp.testing.assert_array_equal(again.eval(ctx=mx.cpu(), var0=x, null1=k)[0].asnumpy(),
                                   z.asnumpy())


def test_get_symbol_of_np_integer_array_indexing():
    x = mx.np.arange(12, dtype="float32").reshape(3, 4)
    x.attach_grad()
    with autograd.record():
        y = x[mx.np.array([2, 0], dtype="int32")] + 1
    sym = autograd.get_symbol(y)
    assert [o for o, _ in _ops(sym)][:3] == ["null", "null", "gather_nd"]
    out = sym.eval(ctx=mx.cpu(), var0=x.as_nd_ndarray(), null1=nd.array([[2, 0]]))[0]
    onp.testing.assert_array_equal(out.asnumpy(), y.asnumpy())


def test_diag_gradient_is_differentiable_again():
    # diag's backward is the recorded affine scatter (_backward_slice), so the
    # second derivative of sum(diag(x, 1) ** 3) is 6 x on that diagonal.
    xn = onp.random.rand(3, 4)
    x = nd.array(xn)
    x.attach_grad()
    with autograd.record():
        y = nd.diag(x, k=1) ** 3
        (gx,) = autograd.grad(y.sum(), [x], create_graph=True)
        z = gx.sum()
    z.backward()
    first, second = onp.zeros_like(xn), onp.zeros_like(xn)
    for i in range(3):
        first[i, i + 1] = 3 * xn[i, i + 1] ** 2
        second[i, i + 1] = 6 * xn[i, i + 1]
    onp.testing.assert_allclose(gx.asnumpy(), first, rtol=1e-5)
    onp.testing.assert_allclose(x.grad.asnumpy(), second, rtol=1e-5)


_NEWAXIS_KEYS = [
    ([1, 2], slice(3, 5), None, None, [3, 4]),
    (slice(None), slice(3, 5), None, None, [2, 3], [3, 4]),
    (slice(None), slice(3, 5), None, [2, 3], None, [3, 4]),
    (None, slice(None), slice(3, 5), [2, 3], None, [3, 4]),
    (None, slice(None), None, slice(3, 5), [2, 3], None, [3, 4]),
    ([2, 3, 4], None, [3, 4, 6], None, slice(1, 2), None, [1, 2, 3]),
    (Ellipsis, None, [1, 0]),
    (0, None, [1, 2]),
    ([0, 1], [1, 2], None),
]


@pytest.mark.parametrize("key", _NEWAXIS_KEYS, ids=str)
def test_index_arrays_with_newaxis_are_recorded_as_numpy_indexes(key):
    # MXNet 1.9.1's test_ndarray_indexing: None among index arrays; values and the
    # placement of the broadcast dims follow NumPy, and the gradient scatters back
    shape = (6, 7, 8, 9)
    x0 = onp.arange(onp.prod(shape), dtype=onp.float32).reshape(shape)
    w0 = onp.random.RandomState(0).rand(*x0[key].shape).astype(onp.float32)
    x = nd.array(x0)
    x.attach_grad()
    with autograd.record():
        y = x[key]
        loss = (y * nd.array(w0)).sum()
    loss.backward()
    assert y.shape == x0[key].shape
    onp.testing.assert_array_equal(y.asnumpy(), x0[key])
    want = onp.zeros_like(x0)
    onp.add.at(want, key, w0)
    onp.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-6)
