"""Optimizers, following ``mxnet.optimizer`` (MXNet 1.9.1).

``mx.optimizer.SGD``, ``mx.optimizer.create('sgd')`` and ``Optimizer.register`` work as in
MXNet; the classes live in :mod:`.optimizer` (base, registry, updater), :mod:`.sgd`,
:mod:`.adaptive` and :mod:`.contrib`.
"""

from .. import ndarray as _nd
from . import contrib, optimizer
from .adaptive import FTML, LAMB, AdaDelta, AdaGrad, Adam, Adamax, Ftrl, Nadam, RMSProp
from .optimizer import Optimizer, Updater, create, get_updater, register
from .sgd import DCASGD, LARS, LBSGD, NAG, SGD, SGLD, Signum, Test, ccSGD

#: ``mxnet.optimizer.NDabs`` (the ``abs`` operator, re-exported there by MXNet).
NDabs = _nd.abs

__all__ = [
    "DCASGD",
    "FTML",
    "LAMB",
    "LARS",
    "LBSGD",
    "NAG",
    "SGD",
    "SGLD",
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "Adamax",
    "Ftrl",
    "NDabs",
    "Nadam",
    "Optimizer",
    "RMSProp",
    "Signum",
    "Test",
    "Updater",
    "ccSGD",
    "contrib",
    "create",
    "get_updater",
    "optimizer",
    "register",
]
