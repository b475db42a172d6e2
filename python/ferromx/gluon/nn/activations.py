"""Activation layers, following ``mxnet.gluon.nn.activations`` (MXNet 1.9.1).

``Activation`` and ``LeakyReLU`` live in :mod:`.basic_layers`; the layers here are
``PReLU``, ``ELU``, ``SELU``, ``GELU``, ``Swish`` and ``SiLU`` (MXNet 2.0's name for
``Swish`` with ``beta=1``), each one ``LeakyReLU`` / ``sigmoid`` operator call.
"""

import math

from ... import initializer
from ..block import HybridBlock
from .basic_layers import Activation, LeakyReLU

__all__ = ["ELU", "GELU", "SELU", "Activation", "LeakyReLU", "PReLU", "SiLU", "Swish"]


class PReLU(HybridBlock):
    """Parametric ReLU: ``x`` for ``x >= 0``, ``alpha * x`` otherwise, with a learned
    ``alpha`` (one value, or one per channel on axis 1 with ``in_channels > 1``).

    Parameters
    ----------
    alpha_initializer : Initializer
        Initializer of ``alpha`` (default ``Constant(0.25)``).
    in_channels : int
        Number of ``alpha`` values: 1 or the number of channels.
    """

    def __init__(self, alpha_initializer=None, in_channels=1, **kwargs):
        super().__init__(**kwargs)
        if alpha_initializer is None:
            alpha_initializer = initializer.Constant(0.25)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        channels = self.alpha.shape[0]
        if channels > 1 and (len(x.shape) < 2 or x.shape[1] != channels):
            raise ValueError(
                f"PReLU '{self.name}' has {channels} alpha values (in_channels) but the input "
                f"shape {tuple(x.shape)} has no matching axis 1"
            )
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu")

    def __repr__(self):
        return f"{type(self).__name__}(in_channels={self.alpha.shape[0]})"


class ELU(HybridBlock):
    """Exponential linear unit (Clevert et al., 2016): ``x`` for ``x > 0``,
    ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)

    def __repr__(self):
        return f"{type(self).__name__}(alpha={self._alpha})"


class SELU(HybridBlock):
    """Scaled exponential linear unit (Klambauer et al., 2017)."""

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="selu")

    def __repr__(self):
        return type(self).__name__


class GELU(HybridBlock):
    """Gaussian error linear unit (Hendrycks and Gimpel, 2016): ``x * Phi(x)``.

    ``approximation='erf'`` (the default, and MXNet 1.9.1's only form) is exact;
    ``'tanh'`` is ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, MXNet 2.0's
    ``approximation='tanh'`` (MXNet 1.9.1's ``GELU`` takes no such argument).
    """

    _TANH_SCALE = math.sqrt(2.0 / math.pi)

    def __init__(self, approximation="erf", **kwargs):
        if approximation not in ("erf", "tanh"):
            raise ValueError(
                f"GELU: approximation must be 'erf' or 'tanh', got {approximation!r}"
            )
        super().__init__(**kwargs)
        self._approximation = approximation

    def hybrid_forward(self, F, x):
        if self._approximation == "erf":
            return F.LeakyReLU(x, act_type="gelu")
        inner = (x + 0.044715 * x * x * x) * self._TANH_SCALE
        return 0.5 * x * (1.0 + F.tanh(inner))

    def __repr__(self):
        if self._approximation == "erf":
            return type(self).__name__
        return f"{type(self).__name__}(approximation={self._approximation!r})"


class Swish(HybridBlock):
    """Swish (Ramachandran et al., 2017): ``x * sigmoid(beta * x)``."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x)

    def __repr__(self):
        return f"{type(self).__name__}(beta={self._beta})"


class SiLU(HybridBlock):
    """Sigmoid linear unit ``x * sigmoid(x)`` (MXNet 2.0's layer; Swish with beta 1)."""

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(x)

    def __repr__(self):
        return type(self).__name__
