"""Replayed plans (``fusion::replay``): a hybridized block's first run of an input
signature outside ``autograd.record()`` is recorded, and later runs push the recorded
operator calls again on the new inputs. Results must be those of running each
operator, inputs and parameters must be read afresh each time, and runs that are not a
function of their inputs' metadata (random numbers) must never be replayed."""

import ferromx as mx
import numpy as np
from ferromx import autograd, gluon, nd


def _mlp(units=(16, 8, 3), act="relu"):
    net = gluon.nn.HybridSequential()
    for u in units[:-1]:
        net.add(gluon.nn.Dense(u, activation=act))
    net.add(gluon.nn.Dense(units[-1]))
    net.initialize(mx.init.Xavier())
    return net


def _native(net):
    (entry,) = net._cached_graphs.values()
    return entry.plan.native


def _twin(net, x):
    """An eager copy of ``net`` with the same parameters."""
    ref = _mlp()
    ref(x)
    for p, q in zip(net.collect_params().values(), ref.collect_params().values()):
        q.set_data(p.data())
    return ref


def test_replays_give_the_operators_results_on_new_inputs_and_parameters():
    rng = np.random.RandomState(0)
    net = _mlp()
    x = nd.array(rng.randn(1, 10).astype(np.float32))
    net(x)
    net.hybridize(static_alloc=True, static_shape=True)
    net(x).wait_to_read()
    plan = _native(net)
    assert plan.taped() == 1
    ref = _twin(net, x)
    for _ in range(3):
        x = nd.array(rng.randn(1, 10).astype(np.float32))
        np.testing.assert_array_equal(net(x).asnumpy(), ref(x).asnumpy())
    # a new value in a parameter (in place, set_data, an optimizer step) is read by the replay
    net[0].weight.data()[:] = 0.5
    ref[0].weight.data()[:] = 0.5
    np.testing.assert_array_equal(net(x).asnumpy(), ref(x).asnumpy())
    net[2].bias.set_data(nd.ones((3,)))
    ref[2].bias.set_data(nd.ones((3,)))
    np.testing.assert_array_equal(net(x).asnumpy(), ref(x).asnumpy())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(1)
    ref = _twin(net, x)
    np.testing.assert_array_equal(net(x).asnumpy(), ref(x).asnumpy())
    assert plan.taped() == 1


def test_outputs_of_replays_are_new_arrays():
    net = _mlp()
    net.hybridize()
    a, b = nd.ones((1, 10)), nd.ones((1, 10)) * 2
    ya = net(a)
    yb = net(b)
    ya2 = net(a)
    assert _native(net).taped() == 1
    assert not np.array_equal(ya.asnumpy(), yb.asnumpy())
    np.testing.assert_array_equal(ya.asnumpy(), ya2.asnumpy())
    ya2[:] = 0  # writing one output leaves the others alone
    assert ya.asnumpy().any() and yb.asnumpy().any()


def test_random_operators_are_never_replayed():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(64, in_units=8), gluon.nn.Dropout(0.5))
    net.initialize()
    net.hybridize()
    x = nd.ones((4, 8))
    with autograd.train_mode():
        outs = [net(x).asnumpy() for _ in range(4)]
    assert _native(net).taped() == 0
    masks = [o == 0 for o in outs]
    assert all(0.2 < m.mean() < 0.8 for m in masks)
    assert not all((m == masks[0]).all() for m in masks[1:]), "every run draws a new mask"


def test_batchnorm_statistics_update_in_place_on_each_replay():
    def block():
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(6, in_units=4), gluon.nn.BatchNorm(in_channels=6))
        net.initialize(mx.init.Xavier())
        return net

    net, ref = block(), block()
    x = nd.array(np.random.RandomState(1).randn(5, 4).astype(np.float32))
    net(x), ref(x)
    for p, q in zip(net.collect_params().values(), ref.collect_params().values()):
        q.set_data(p.data())
    net.hybridize()
    with autograd.train_mode():  # training-mode BatchNorm, nothing recorded
        for i in range(4):
            xi = x * (i + 1)
            np.testing.assert_allclose(net(xi).asnumpy(), ref(xi).asnumpy(), rtol=1e-6,
                                       atol=1e-6)
    assert _native(net).taped() == 1
    for name in ("running_mean", "running_var"):
        got = getattr(net[1], name).data().asnumpy()
        want = getattr(ref[1], name).data().asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # the training flag is part of the signature: predict mode records its own tape
    y = net(x)
    np.testing.assert_allclose(y.asnumpy(), ref(x).asnumpy(), rtol=1e-6, atol=1e-6)
    net(x)
    assert _native(net).taped() == 2


def test_recorded_runs_are_not_replayed_and_keep_their_gradients():
    net = _mlp()
    x = nd.ones((2, 10))
    net.hybridize()
    for _ in range(3):
        with autograd.record():
            y = net(x)
        y.backward()
    assert _native(net).taped() == 0
    assert net[0].weight.grad().abs().sum().asscalar() > 0


def test_the_same_array_passed_twice_runs_without_the_tape():
    class Add(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return F.relu(a) + b * 2

    net = Add()
    net.hybridize()
    a, b = nd.array([[1.0, -2.0]]), nd.array([[3.0, 4.0]])
    np.testing.assert_array_equal(net(a, b).asnumpy(), [[7.0, 8.0]])
    np.testing.assert_array_equal(net(a, b).asnumpy(), [[7.0, 8.0]])
    np.testing.assert_array_equal(net(a, a).asnumpy(), [[3.0, -4.0]])
    np.testing.assert_array_equal(net(b, a).asnumpy(), [[5.0, 0.0]])
