"""Normalization layers, following MXNet 1.9.1 (``mxnet.gluon.nn.BatchNorm``,
``InstanceNorm``, ``GroupNorm`` and ``mxnet.gluon.contrib.nn.SyncBatchNorm``).

Parameter names are MXNet's: ``gamma``, ``beta`` and, for batch norm, the auxiliary
``running_mean`` / ``running_var`` (``grad_req='null'``, updated by the ``BatchNorm``
operator in training mode).
"""

import numpy as np

from ..block import HybridBlock

__all__ = ["BatchNorm", "BatchNormReLU", "GroupNorm", "InstanceNorm", "SyncBatchNorm"]


def _check_axis(block, x, axis):
    shape = getattr(x, "shape", None)
    if shape is None:
        raise TypeError(
            f"{type(block).__name__} '{block.name}' expects an NDArray input, got {type(x)}"
        )
    if not -len(shape) <= axis < len(shape) or len(shape) < 2:
        raise ValueError(
            f"{type(block).__name__} '{block.name}': axis {axis} is out of range for input "
            f"shape {tuple(shape)}"
        )
    return int(shape[axis])


def _check_channels(block, x, axis, param):
    channels = _check_axis(block, x, axis)
    expected = param.shape[0]
    if expected and channels != expected:
        raise ValueError(
            f"{type(block).__name__} '{block.name}' expects {expected} channels on axis {axis}, "
            f"got input shape {tuple(x.shape)}"
        )


def _affine(block, shape, center, scale, beta_initializer, gamma_initializer,
            mark_differentiable=False):
    """Registers ``gamma`` (learned when ``scale``) and ``beta`` (when ``center``) of shape
    ``shape`` on ``block``: the parameter setup the normalization layers share
    (``mark_differentiable`` also marks a fixed one non-differentiable, as batch norm does)."""
    for name, learned, init in (("gamma", scale, gamma_initializer),
                                ("beta", center, beta_initializer)):
        extra = {"differentiable": learned} if mark_differentiable else {}
        setattr(block, name, block.params.get(
            name,
            grad_req="write" if learned else "null",
            shape=shape,
            init=init,
            allow_deferred_init=True,
            **extra,
        ))


class _BatchNorm(HybridBlock):
    """Shared implementation of :class:`BatchNorm` and :class:`SyncBatchNorm`."""

    def __init__(
        self,
        axis=1,
        momentum=0.9,
        epsilon=1e-5,
        center=True,
        scale=True,
        use_global_stats=False,
        beta_initializer="zeros",
        gamma_initializer="ones",
        running_mean_initializer="zeros",
        running_variance_initializer="ones",
        in_channels=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._axis = axis
        self._kwargs = {
            "axis": axis,
            "eps": epsilon,
            "momentum": momentum,
            "fix_gamma": not scale,
            "use_global_stats": use_global_stats,
        }
        if in_channels != 0:
            self.in_channels = in_channels
        shape = (in_channels,)
        _affine(self, shape, center, scale, beta_initializer, gamma_initializer,
                mark_differentiable=True)
        self.running_mean = self.params.get(
            "running_mean",
            grad_req="null",
            shape=shape,
            init=running_mean_initializer,
            allow_deferred_init=True,
            differentiable=False,
        )
        self.running_var = self.params.get(
            "running_var",
            grad_req="null",
            shape=shape,
            init=running_variance_initializer,
            allow_deferred_init=True,
            differentiable=False,
        )

    def cast(self, dtype):
        """Cast the parameters; float16 is kept as float32 (as MXNet does)."""
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super().cast(dtype)

    def infer_shape(self, x, *args):
        """Set the channel count from ``x.shape[axis]``."""
        channels = _check_axis(self, x, self._axis)
        for param in (self.gamma, self.beta, self.running_mean, self.running_var):
            param.shape = (channels,)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        _check_channels(self, x, self._axis, self.gamma)
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, **self._kwargs)

    def __repr__(self):
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        channels = self.gamma.shape[0]
        return f"{type(self).__name__}({content}, in_channels={channels if channels else None})"


class BatchNorm(_BatchNorm):
    """Batch normalization (Ioffe and Szegedy, 2014) over ``axis`` (the channels).

    In training mode (``autograd.record(train_mode=True)``) it normalizes with the
    batch's mean and variance and updates ``running_mean``/``running_var`` as
    ``running = momentum * running + (1 - momentum) * batch``; in prediction mode (or with
    ``use_global_stats``) it uses the running statistics.

    Parameters
    ----------
    axis : int
        The channel axis (1 for ``NCHW``, 3 for ``NHWC``).
    momentum : float
        Momentum of the running statistics.
    epsilon : float
        Added to the variance.
    center, scale : bool
        Whether ``beta`` / ``gamma`` are learned (``scale=False`` fixes ``gamma`` at 1).
    use_global_stats : bool
        Always normalize with the running statistics.
    beta_initializer, gamma_initializer, running_mean_initializer,
    running_variance_initializer : Initializer or str
        Initializers.
    in_channels : int
        Channels; 0 infers them at the first forward pass.
    """


class SyncBatchNorm(_BatchNorm):
    """Cross-device batch normalization (MXNet's ``gluon.contrib.nn.SyncBatchNorm``).

    ferromx runs one process with one batch per call, so the statistics are the
    batch's own: it computes exactly what :class:`BatchNorm` (``axis=1``) computes.
    ``num_devices`` and ``key`` are accepted for compatibility.
    """

    def __init__(
        self,
        in_channels=0,
        num_devices=None,
        momentum=0.9,
        epsilon=1e-5,
        center=True,
        scale=True,
        use_global_stats=False,
        beta_initializer="zeros",
        gamma_initializer="ones",
        running_mean_initializer="zeros",
        running_variance_initializer="ones",
        **kwargs,
    ):
        kwargs.pop("key", None)
        super().__init__(
            axis=1,
            momentum=momentum,
            epsilon=epsilon,
            center=center,
            scale=scale,
            use_global_stats=use_global_stats,
            beta_initializer=beta_initializer,
            gamma_initializer=gamma_initializer,
            running_mean_initializer=running_mean_initializer,
            running_variance_initializer=running_variance_initializer,
            in_channels=in_channels,
            **kwargs,
        )
        self._num_devices = 1 if num_devices is None else num_devices


class InstanceNorm(HybridBlock):
    """Instance normalization: each sample's each channel is normalized over its spatial
    axes, then scaled by ``gamma`` and shifted by ``beta`` (per channel).

    Parameters
    ----------
    axis : int
        The channel axis.
    epsilon : float
        Added to the variance.
    center, scale : bool
        Whether ``beta`` / ``gamma`` are learned (MXNet's default: ``scale=False``).
    in_channels : int
        Channels; 0 infers them at the first forward pass.
    """

    def __init__(
        self,
        axis=1,
        epsilon=1e-5,
        center=True,
        scale=False,
        beta_initializer="zeros",
        gamma_initializer="ones",
        in_channels=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        _affine(self, (in_channels,), center, scale, beta_initializer, gamma_initializer)

    def infer_shape(self, x, *args):
        """Set the channel count from ``x.shape[axis]``."""
        channels = _check_axis(self, x, self._axis)
        self.gamma.shape = (channels,)
        self.beta.shape = (channels,)

    def hybrid_forward(self, F, x, gamma, beta):
        _check_channels(self, x, self._axis, self.gamma)
        if self._axis in (1, 1 - len(x.shape)):
            return F.InstanceNorm(x, gamma, beta, eps=self._epsilon)
        x = F.swapaxes(x, 1, self._axis)
        out = F.InstanceNorm(x, gamma, beta, eps=self._epsilon)
        return F.swapaxes(out, 1, self._axis)

    def __repr__(self):
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({content}, in_channels={self.gamma.shape[0]})"


class GroupNorm(HybridBlock):
    """Group normalization: the channels (axis 1) are split into ``num_groups`` groups and
    each sample's group is normalized over its channels and spatial axes.

    As in MXNet 1.9.1, ``gamma`` and ``beta`` have one value per *group* (shape
    ``(num_groups,)``).

    Parameters
    ----------
    num_groups : int
        Number of groups; must divide the channel count.
    epsilon : float
        Added to the variance.
    center, scale : bool
        Whether ``beta`` / ``gamma`` are learned.
    """

    def __init__(
        self,
        num_groups=1,
        epsilon=1e-5,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        prefix=None,
        params=None,
    ):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {
            "eps": epsilon,
            "num_groups": num_groups,
            "center": center,
            "scale": scale,
        }
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _affine(self, (num_groups,), center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        channels = _check_axis(self, data, 1)
        if channels % self._num_groups:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': {channels} channels (input shape "
                f"{tuple(data.shape)}) are not divisible by num_groups={self._num_groups}"
            )
        return F.GroupNorm(
            data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon
        )

    def __repr__(self):
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({content})"


class BatchNormReLU(_BatchNorm):
    """:class:`BatchNorm` followed by ReLU (MXNet fuses the two in one operator; the
    result is the same). Arguments as :class:`BatchNorm`."""

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        out = super().hybrid_forward(F, x, gamma, beta, running_mean, running_var)
        return F.relu(out)
