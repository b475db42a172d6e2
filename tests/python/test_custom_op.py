"""``mx.operator`` custom operators: forward/backward as engine ops, autograd, errors.

The expected values come from the operators' definitions (NumPy) and from MXNet 1.9.1's
documented behaviour: keyword arguments reach the property class as strings,
``create_operator`` receives the input shapes and MXNet dtype codes, ``need_top_grad=False``
loss layers compute their own gradient (the custom softmax of MXNet's examples).
"""

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native, autograd, nd

CREATED = []


class _Sigmoid(mx.operator.CustomOp):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], self.scale / (1 + nd.exp(-in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0] / self.scale
        self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y) * self.scale)


@mx.operator.register("test_scaled_sigmoid")
class _SigmoidProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1.0"):
        super().__init__(need_top_grad=True)
        assert isinstance(scale, str)  # MXNet passes kwargs as strings
        self.scale = float(scale)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        CREATED.append((ctx, in_shapes, in_dtypes))
        return _Sigmoid(self.scale)


class _Softmax(mx.operator.CustomOp):
    """MXNet's example custom softmax (a loss layer), written with NumPy inside."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)
        self.assign(out_data[0], req[0], nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().ravel().astype(int)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], nd.array(y))


@mx.operator.register("test_softmax")
class _SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Softmax()


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_forward_backward_and_string_kwargs():
    CREATED.clear()
    xv = np.array([[-1.0, 0.0, 2.0]], dtype=np.float32)
    x = nd.array(xv)
    x.attach_grad()
    with autograd.record():
        y = nd.Custom(x, op_type="test_scaled_sigmoid", scale=2)
    head = nd.array([[1.0, 2.0, 3.0]])
    y.backward(head)
    s = _np_sigmoid(xv)
    np.testing.assert_allclose(y.asnumpy(), 2 * s, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), head.asnumpy() * 2 * s * (1 - s), rtol=1e-5)
    # MXNet 1.9.1 gives [[0.5378829, 1.0, 1.7615941]] and grad [[0.3932239, 1.0, 0.6299618]]
    np.testing.assert_allclose(y.asnumpy(), [[0.5378829, 1.0, 1.7615941]], rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), [[0.3932239, 1.0, 0.6299618]], rtol=1e-5)
    ctx, shapes, dtypes = CREATED[-1]
    assert ctx == mx.cpu(0) and shapes == [[1, 3]] and dtypes == [0]


def test_mx_nd_custom_alias_and_chain_with_other_ops():
    x = nd.array(np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4))
    x.attach_grad()
    with autograd.record():
        y = mx.nd.Custom(x * 3, op_type="test_scaled_sigmoid")
        z = (y * y).sum()
    z.backward()
    xv = x.asnumpy()
    s = _np_sigmoid(3 * xv)
    np.testing.assert_allclose(z.asnumpy(), (s * s).sum(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * s * s * (1 - s) * 3, rtol=1e-4)


def test_custom_softmax_loss_layer_trains():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((16, 5)).astype(np.float32)
    label = rng.integers(0, 3, 16).astype(np.float32)
    w = nd.array(rng.standard_normal((5, 3)).astype(np.float32) * 0.1)
    w.attach_grad()
    x, lab = nd.array(data), nd.array(label)
    with autograd.record():
        logits = nd.dot(x, w)
        prob = nd.Custom(logits, lab, op_type="test_softmax")
    prob.backward()
    lv = data @ w.asnumpy()
    p = np.exp(lv - lv.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(prob.asnumpy(), p, rtol=1e-5, atol=1e-6)
    g = p.copy()
    g[np.arange(16), label.astype(int)] -= 1
    np.testing.assert_allclose(w.grad.asnumpy(), data.T @ g, rtol=1e-4, atol=1e-5)


def test_forward_is_an_engine_op_ordered_after_its_inputs():
    x = nd.ones((2, 2))
    _native._sleep_op(x, 150)
    x += 1  # x == 2 once the sleep is done
    y = nd.Custom(x, op_type="test_scaled_sigmoid", scale=1)
    assert not y.is_ready()  # Custom returned while its input was still being written
    np.testing.assert_allclose(y.asnumpy(), _np_sigmoid(np.full((2, 2), 2.0)), rtol=1e-6)


def test_exception_in_forward_raises_at_read_with_op_name():
    class Bad(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("bad forward 7")

    @mx.operator.register("test_bad")
    class BadProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Bad()

    y = nd.Custom(nd.ones((2,)), op_type="test_bad")
    with pytest.raises(ValueError, match="bad forward 7") as err:
        y.asnumpy()
    assert "Custom:test_bad" in str(err.value)


@pytest.mark.parametrize("wait_inside", [False, True])
def test_failure_of_an_op_inside_forward_is_raised_once(wait_inside):
    # MXNet's test_custom_op_exc: the failure reaches the custom op's output and is
    # raised there; waitall afterwards has nothing left to report
    class Chol(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            dot = nd.dot(in_data[0], in_data[1])
            out_data[0][:] = nd.linalg.potrf(dot)  # zeros: not positive definite
            if wait_inside:
                out_data[0].wait_to_read()

    @mx.operator.register("test_chol_fail")
    class CholProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["a", "b"]

        def infer_shape(self, in_shape):
            return in_shape, [(in_shape[0][0], in_shape[1][1])]

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Chol()

    c = nd.Custom(nd.zeros((2, 1)), nd.zeros((1, 2)), op_type="test_chol_fail")
    with pytest.raises(mx.MXNetError, match="potrf") as err:
        c.wait_to_read()
    assert "Custom:test_chol_fail" in str(err.value)
    nd.waitall()
    # and a later failure is still reported by waitall
    bad = nd.linalg.potrf(nd.zeros((2, 2)))
    del bad
    with pytest.raises(mx.MXNetError, match="potrf"):
        nd.waitall()


def test_bad_calls():
    with pytest.raises(mx.MXNetError, match="no operator registered as 'nope'"):
        nd.Custom(nd.ones((2,)), op_type="nope")
    with pytest.raises(mx.MXNetError, match="expected 2 arguments"):
        nd.Custom(nd.ones((2, 3)), op_type="test_softmax")
    with pytest.raises(TypeError, match="CustomOpProp"):
        mx.operator.register("x")(object)


def test_is_train_and_assign_add():
    seen = []

    class Probe(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            seen.append(is_train)
            self.assign(out_data[0], "add", in_data[0])
            self.assign(out_data[0], "add", in_data[0])
            self.assign(out_data[0], "null", in_data[0] * 100)

    @mx.operator.register("test_probe")
    class ProbeProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Probe()

    y = nd.Custom(nd.ones((3,)), op_type="test_probe")
    # the two calls share no array, so the engine may run them in either order: read the
    # first before pushing the second
    y.wait_to_read()
    with autograd.record(train_mode=True):
        z = nd.Custom(nd.ones((3,)), op_type="test_probe")
    np.testing.assert_allclose(y.asnumpy(), [2.0, 2.0, 2.0])
    z.wait_to_read()
    assert seen == [False, True]


def test_registry_listing():
    names = mx.operator.get_all_registered_operators()
    assert "Custom" in names and "FullyConnected" in names and "softmax" in names


def test_sym_custom_binds_runs_and_differentiates():
    """``mx.sym.Custom``: inputs named by the property (a missing label becomes a variable
    ``<name>_label``), outputs by ``list_outputs``; forward and backward as imperatively."""
    data = mx.sym.var("data")
    sym = mx.sym.Custom(data=data, op_type="test_scaled_sigmoid", scale=2.0, name="sig")
    assert sym.list_arguments() == ["data"] and sym.list_outputs() == ["sig_output"]
    assert sym.infer_shape(data=(2, 3))[1] == [(2, 3)]
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    ex = sym.simple_bind(mx.cpu(), data=(2, 3))
    ex.forward(is_train=True, data=x)
    y = 2.0 / (1 + np.exp(-x))
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), y, rtol=1e-5)
    ex.backward(nd.ones((2, 3)))
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), y * (1 - y / 2), rtol=1e-5)
    soft = mx.sym.Custom(mx.sym.var("x"), op_type="test_softmax", name="sm")
    assert soft.list_arguments() == ["x", "sm_label"]
    with pytest.raises(mx.base.MXNetError, match="no operator registered"):
        mx.sym.Custom(data, op_type="no_such_op")
