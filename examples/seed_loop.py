# The seed's training loop (shared/seeds/000_*.txt), verbatim except for the imports:
# `mxnet` became `ferromx`.
from __future__ import print_function

import ferromx as mx
from ferromx import gluon, nd, autograd
from ferromx.ndarray import NDArray
from ferromx.gluon import HybridBlock
import numpy as np

class LossBuffer(object):
    """
    Simple buffer for storing loss value
    """
    def __init__(self):
        self._loss = None

    def new_loss(self, loss):
        ret = self._loss
        self._loss = loss
        return ret

    @property
    def loss(self):
        return self._loss


net = gluon.nn.Dense(10)
ce = gluon.loss.SoftmaxCELoss()
net.initialize()

data = nd.random.uniform(shape=(1024, 100))
label = nd.array(np.random.randint(0, 10, (1024,)), dtype='int32')
train_dataset = gluon.data.ArrayDataset(data, label)
train_data = gluon.data.DataLoader(train_dataset, batch_size=128, shuffle=True, num_workers=2)

trainer = gluon.Trainer(net.collect_params(), optimizer='sgd')
loss_buffer = LossBuffer()

for data, label in train_data:
    with autograd.record():
        out = net(data)
        # This call saves new loss and returns previous loss
        prev_loss = loss_buffer.new_loss(ce(out, label))
        
    loss_buffer.loss.backward()
    trainer.step(data.shape[0])
    
    if prev_loss is not None:
        print("Loss: {}".format(np.mean(prev_loss.asnumpy())))
