"""Convolutional networks train: D2L's LeNet (sigmoid, average pooling) on synthetic
28x28 digits and a narrow ResNet-18 (``thumbnail``) on synthetic 32x32 images; the loss
must fall within a few steps."""

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, init
from ferromx import ndarray as nd
from ferromx.gluon import nn
from ferromx.gluon.model_zoo import vision

pytestmark = pytest.mark.skipif(
    not all(hasattr(nd, op) for op in ("Convolution", "Pooling", "BatchNorm")),
    reason="convolution operators are not available yet",
)


def _synthetic(rng, n, classes, shape):
    """``n`` images: a fixed random template per class plus noise."""
    templates = rng.uniform(-1, 1, (classes, *shape)).astype(np.float32)
    labels = rng.randint(0, classes, n)
    images = templates[labels] + 0.3 * rng.normal(size=(n, *shape)).astype(np.float32)
    return nd.array(images), nd.array(labels.astype(np.float32))


def _train(net, x, y, trainer, steps):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(float(loss.mean().asscalar()))
    return losses


def lenet():
    net = nn.HybridSequential()
    net.add(
        nn.Conv2D(6, kernel_size=5, padding=2, activation="sigmoid"),
        nn.AvgPool2D(pool_size=2, strides=2),
        nn.Conv2D(16, kernel_size=5, activation="sigmoid"),
        nn.AvgPool2D(pool_size=2, strides=2),
        nn.Dense(120, activation="sigmoid"),
        nn.Dense(84, activation="sigmoid"),
        nn.Dense(10),
    )
    return net


def test_lenet_loss_decreases():
    # Sigmoid LeNet sits on a plateau near ln(10) for a while before it learns (as in D2L).
    mx.random.seed(0)
    rng = np.random.RandomState(0)
    x, y = _synthetic(rng, 64, 10, (1, 28, 28))
    net = lenet()
    net.initialize(init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    losses = _train(net, x, y, trainer, 120)
    assert net[0].weight.shape == (6, 1, 5, 5)
    assert net[4].weight.shape == (120, 16 * 5 * 5)
    assert losses[-1] < 0.5, losses[::10]
    accuracy = (net(x).argmax(axis=1) == y).mean().asscalar()
    assert accuracy > 0.9


def test_small_resnet_loss_decreases():
    mx.random.seed(1)
    rng = np.random.RandomState(1)
    x, y = _synthetic(rng, 16, 10, (3, 32, 32))
    net = vision.ResNetV1(
        vision.BasicBlockV1, [2, 2, 2, 2], [8, 8, 16, 32, 64], classes=10, thumbnail=True
    )
    net.initialize(init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    losses = _train(net, x, y, trainer, 8)
    assert losses[-1] < 0.5 * losses[0], losses
    bn = net.features[1][0].body[1]
    assert not np.allclose(bn.running_mean.data().asnumpy(), 0)  # running stats moved
    pred = net(x).argmax(axis=1).asnumpy()  # prediction mode uses the running statistics
    assert pred.shape == (16,)
