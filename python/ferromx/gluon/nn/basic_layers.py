"""Basic Gluon layers, following ``mxnet.gluon.nn`` (MXNet 1.9.1).

Each layer's math is one native operator (``FullyConnected``, ``Activation``,
``Dropout``, ``Embedding``, ``LayerNorm`` ...).
"""

import numpy as np

from ... import ndarray as nd
from ..block import Block, HybridBlock, HybridSequential, Sequential

# MXNet defines its normalization layers in this module; keep them importable from here.
from .norm_layers import BatchNorm, BatchNormReLU, GroupNorm, InstanceNorm, _affine

__all__ = [
    "Activation",
    "BatchNorm",
    "BatchNormReLU",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "GroupNorm",
    "HybridLambda",
    "HybridSequential",
    "InstanceNorm",
    "Lambda",
    "LayerNorm",
    "LeakyReLU",
    "Sequential",
]


class Dense(HybridBlock):
    """Fully connected layer: ``out = activation(dot(x, weight.T) + bias)``.

    Parameters
    ----------
    units : int
        Output dimension.
    activation : str, optional
        Activation applied to the output (``'relu'``, ``'sigmoid'``, ``'tanh'`` ...).
    use_bias : bool
        Whether to add a bias.
    flatten : bool
        Flatten all but the first input axis (``True``) or apply to the last axis only.
    dtype : str
        Parameter dtype.
    weight_initializer, bias_initializer : Initializer or str
        Initializers (the bias defaults to zeros).
    in_units : int
        Input dimension; 0 infers it at the first forward pass.
    """

    def __init__(
        self,
        units,
        activation=None,
        use_bias=True,
        flatten=True,
        dtype="float32",
        weight_initializer=None,
        bias_initializer="zeros",
        in_units=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get(
                "weight",
                shape=(units, in_units),
                init=weight_initializer,
                dtype=dtype,
                allow_deferred_init=True,
            )
            if use_bias:
                self.bias = self.params.get(
                    "bias",
                    shape=(units,),
                    init=bias_initializer,
                    dtype=dtype,
                    allow_deferred_init=True,
                )
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def infer_shape(self, x, *args):
        """Set the weight's input dimension from ``x``."""
        if self._flatten:
            in_units = int(np.prod(x.shape[1:]))
        else:
            in_units = int(x.shape[-1])
        self.weight.shape = (self._units, in_units)

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.FullyConnected(
            x,
            weight,
            bias,
            num_hidden=self._units,
            no_bias=bias is None,
            flatten=self._flatten,
            name="fwd",
        )
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        layout = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        return "{name}({layout}, {act})".format(
            name=self.__class__.__name__, layout=layout, act=self.act if self.act else "linear"
        )


class Activation(HybridBlock):
    """Apply an activation function: ``'relu'``, ``'sigmoid'``, ``'tanh'``, ``'softrelu'``,
    ``'softsign'``."""

    def __init__(self, activation, **kwargs):
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self):
        return f"{self.__class__.__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """Leaky ReLU: ``x`` for ``x > 0``, ``alpha * x`` otherwise."""

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise ValueError("Slope coefficient for LeakyReLU must be no less than 0.")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self):
        return f"{self.__class__.__name__}({self._alpha})"


class Dropout(HybridBlock):
    """Randomly zero elements with probability ``rate`` during training (scaling the rest by
    ``1/(1-rate)``); the identity in prediction mode.

    Parameters
    ----------
    rate : float
        Fraction of inputs dropped.
    axes : tuple of int
        Axes along which the same mask is shared (variational dropout).
    """

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = tuple(axes)

    def hybrid_forward(self, F, x):
        if self._rate <= 0:
            return x
        if self._axes:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd")
        return F.Dropout(x, p=self._rate, name="fwd")

    def __repr__(self):
        return f"{self.__class__.__name__}(p = {self._rate}, axes={self._axes})"


class Flatten(HybridBlock):
    """Reshape ``(N, d1, d2, ...)`` to ``(N, d1*d2*...)``."""

    def hybrid_forward(self, F, x):
        return F.flatten(x, name="fwd")

    def __repr__(self):
        return self.__class__.__name__


class Embedding(HybridBlock):
    """Map integer indices to rows of a ``(input_dim, output_dim)`` weight.

    ``sparse_grad`` is accepted; ferromx gradients are dense.
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        dtype="float32",
        weight_initializer=None,
        sparse_grad=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        grad_stype = "row_sparse" if sparse_grad else "default"
        self._kwargs = {
            "input_dim": input_dim,
            "output_dim": output_dim,
            "dtype": dtype,
            "sparse_grad": sparse_grad,
        }
        self.weight = self.params.get(
            "weight",
            shape=(input_dim, output_dim),
            init=weight_initializer,
            dtype=dtype,
            allow_deferred_init=True,
            grad_stype=grad_stype,
        )

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(
            x, weight, input_dim=self._kwargs["input_dim"], output_dim=self._kwargs["output_dim"],
            name="fwd",
        )

    def __repr__(self):
        return "{block_name}({input_dim} -> {output_dim}, {dtype})".format(
            block_name=self.__class__.__name__, **self._kwargs
        )


class LayerNorm(HybridBlock):
    """Layer normalization over ``axis``: ``gamma * (x - mean) / sqrt(var + eps) + beta``.

    Parameters
    ----------
    axis : int
        The normalized axis.
    epsilon : float
        Added to the variance.
    center, scale : bool
        Whether ``beta`` / ``gamma`` are trained (otherwise fixed at 0 / 1).
    in_channels : int
        Size of ``axis``; 0 infers it at the first forward pass.
    """

    def __init__(
        self,
        axis=-1,
        epsilon=1e-5,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        in_channels=0,
        prefix=None,
        params=None,
    ):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _affine(self, (in_channels,), center, scale, beta_initializer, gamma_initializer)

    def infer_shape(self, x, *args):
        """Set gamma and beta's size from ``x.shape[axis]``."""
        channels = int(x.shape[self._axis])
        self.gamma.shape = (channels,)
        self.beta.shape = (channels,)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon,
                           name="fwd")

    def __repr__(self):
        content = ", ".join("=".join([k, repr(v)]) for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({content}, in_channels={self.gamma.shape[0]})"


def _function_name(function):
    return getattr(function, "__name__", type(function).__name__)


class Lambda(Block):
    """Wrap a function (or the name of an ``nd`` function) as a Block.

    Example: ``Lambda('tanh')`` or ``Lambda(lambda x: nd.LeakyReLU(x, slope=0.1))``.
    """

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise ValueError(f"Function name {function} is not found in ndarray.")
            self._func_impl = getattr(nd, function)
            self._func_name = function
        elif callable(function):
            self._func_impl = function
            self._func_name = _function_name(function)
        else:
            raise ValueError(  # noqa: TRY004 - as MXNet
                f"Unrecognized function in lambda: {function} of type {type(function)}"
            )

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"


class HybridLambda(HybridBlock):
    """Wrap ``function(F, x, *args)`` (or the name of an ``F`` function) as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise ValueError(f"Function name {function} is not found in ndarray.")
            name = function
            self._func = lambda F, *args: getattr(F, name)(*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = _function_name(function)
        else:
            raise ValueError(  # noqa: TRY004 - as MXNet
                f"Unrecognized function in lambda: {function} of type {type(function)}"
            )

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"
