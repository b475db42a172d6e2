"""Convolution, transposed convolution, pooling and padding layers, following
``mxnet.gluon.nn.conv_layers`` (MXNet 1.9.1).

Each layer is one native operator (``Convolution``, ``Deconvolution``, ``Pooling``,
``pad``).  Parameter names (``weight``, ``bias``), their shapes (including the 0 of a
deferred ``in_channels``) and the block prefixes (``conv0_``, ``pool0_``) are MXNet's, so
``.params`` files move between MXNet and ferromx.
"""

import numbers

from ...base import MXNetError
from ..block import HybridBlock
from .basic_layers import Activation

__all__ = [
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "Conv1D",
    "Conv1DTranspose",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "ReflectionPad2D",
]

_LAYOUTS = {
    1: ("NCW", "NWC"),
    2: ("NCHW", "NHWC"),
    3: ("NCDHW", "NDHWC"),
}


def _tuple(value, n, what):
    """``value`` as a tuple of ``n`` ints (a number is repeated)."""
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"{what} must be a number or a list of {n} ints, got {value}")
    return value


def _check_layout(cls_name, layout, ndim, allowed=None):
    allowed = allowed or _LAYOUTS[ndim]
    if layout not in allowed:
        raise ValueError(
            f"{cls_name}: only {' and '.join(allowed)} layouts are supported, got {layout!r}"
        )


def _check_input(block, x, layout):
    """Raise a ValueError naming ``block`` when ``x`` is not a batch in ``layout``."""
    shape = getattr(x, "shape", None)
    if shape is None:
        raise TypeError(
            f"{type(block).__name__} '{block.name}' expects an NDArray input, got {type(x)}"
        )
    if len(shape) != len(layout):
        raise ValueError(
            f"{type(block).__name__} '{block.name}' expects a {len(layout)}-D input in layout "
            f"{layout}, got shape {tuple(shape)}"
        )


def _call_op(block, op, *args, **kwargs):
    """Run ``op``; an operator error is re-raised naming the layer as well."""
    try:
        return op(*args, **kwargs)
    except MXNetError as err:
        try:
            named = type(err)(f"{type(block).__name__} '{block.name}': {err}")
        except TypeError:
            raise err from None
        raise named from err


class _Conv(HybridBlock):
    """Shared implementation of the convolution layers (``op_name`` ``Convolution`` or
    ``Deconvolution``); see :class:`Conv2D` for the parameters."""

    def __init__(
        self,
        channels,
        kernel_size,
        strides,
        padding,
        dilation,
        groups,
        layout,
        in_channels=0,
        activation=None,
        use_bias=True,
        weight_initializer=None,
        bias_initializer="zeros",
        op_name="Convolution",
        adj=None,
        prefix=None,
        params=None,
    ):
        super().__init__(prefix=prefix, params=params)
        n = len(kernel_size)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name
            self._layout = layout
            self._kwargs = {
                "kernel": tuple(kernel_size),
                "stride": _tuple(strides, n, "strides"),
                "dilate": _tuple(dilation, n, "dilation"),
                "pad": _tuple(padding, n, "padding"),
                "num_filter": channels,
                "num_group": groups,
                "no_bias": not use_bias,
                "layout": layout,
            }
            if adj is not None:
                self._kwargs["adj"] = tuple(adj)
            self.weight = self.params.get(
                "weight",
                shape=self._weight_shape(in_channels),
                init=weight_initializer,
                allow_deferred_init=True,
            )
            if use_bias:
                self.bias = self.params.get(
                    "bias", shape=(channels,), init=bias_initializer, allow_deferred_init=True
                )
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def _weight_shape(self, in_channels):
        """MXNet's weight shape: (out, in/groups, *kernel) for Convolution and
        (in, out/groups, *kernel) for Deconvolution; channel-last layouts put the
        per-group channel dimension last."""
        groups = self._kwargs["num_group"]
        kernel = self._kwargs["kernel"]
        if self._op_name == "Convolution":
            first, per_group = self._channels, in_channels // groups
        else:
            first, per_group = in_channels, self._channels // groups
        if self._layout.find("C") == 1:
            return (first, per_group, *kernel)
        return (first, *kernel, per_group)

    def _alias(self):
        return "conv"

    def _channel_axis(self):
        return self._layout.find("C")

    def infer_shape(self, x, *args):
        """Set ``in_channels`` (the weight's unknown dimension) from the input."""
        _check_input(self, x, self._layout)
        in_channels = int(x.shape[self._channel_axis()])
        groups = self._kwargs["num_group"]
        if in_channels % groups:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': input channels {in_channels} (input shape "
                f"{tuple(x.shape)}) are not divisible by groups={groups}"
            )
        self.weight.shape = self._weight_shape(in_channels)

    def _check_call(self, x):
        _check_input(self, x, self._layout)
        in_channels = int(x.shape[self._channel_axis()])
        expected = self._expected_in_channels()
        if expected and in_channels != expected:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' expects {expected} input channels "
                f"(axis {self._channel_axis()} of layout {self._layout}), got input shape "
                f"{tuple(x.shape)} (weight shape {self.weight.shape})"
            )

    def _expected_in_channels(self):
        shape = self.weight.shape
        if self._op_name == "Convolution":
            per_group = shape[1] if self._channel_axis() == 1 else shape[-1]
            return per_group * self._kwargs["num_group"]
        return shape[0]

    def hybrid_forward(self, F, x, weight, bias=None):
        self._check_call(x)
        op = getattr(F, self._op_name)
        if bias is None:
            out = _call_op(self, op, x, weight, **self._kwargs)
        else:
            out = _call_op(self, op, x, weight, bias, **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        n = len(self._kwargs["kernel"])
        parts = [
            f"{self._in_channels_repr()} -> {self._channels}",
            f"kernel_size={self._kwargs['kernel']}",
            f"stride={self._kwargs['stride']}",
        ]
        if self._kwargs["pad"] != (0,) * n:
            parts.append(f"padding={self._kwargs['pad']}")
        if self._kwargs["dilate"] != (1,) * n:
            parts.append(f"dilation={self._kwargs['dilate']}")
        outpad = self._kwargs.get("adj")
        if outpad is not None and outpad != (0,) * n:
            parts.append(f"output_padding={outpad}")
        if self._kwargs["num_group"] != 1:
            parts.append(f"groups={self._kwargs['num_group']}")
        if self.bias is None:
            parts.append("bias=False")
        if self.act:
            parts.append(repr(self.act))
        return f"{type(self).__name__}({', '.join(parts)})"

    def _in_channels_repr(self):
        channels = self._expected_in_channels()
        return channels if channels else None


def _conv_args(cls_name, ndim, kernel_size, layout, allowed_layouts=None):
    _check_layout(cls_name, layout, ndim, allowed_layouts)
    return _tuple(kernel_size, ndim, "kernel_size")


class Conv1D(_Conv):
    """1-D convolution over ``(batch, in_channels, width)`` (layout ``'NCW'``).

    ``out_width = floor((width + 2*padding - dilation*(kernel_size-1) - 1)/stride) + 1``.

    Parameters
    ----------
    channels : int
        Number of output channels (filters).
    kernel_size, strides, padding, dilation : int or tuple of 1 int
        Window size, stride, implicit zero padding on both sides, dilation.
    groups : int
        Split the channels into ``groups`` independent convolutions.
    layout : str
        Only ``'NCW'``.
    activation : str, optional
        Activation applied to the output.
    use_bias : bool
        Whether the layer has a bias.
    weight_initializer, bias_initializer : Initializer or str
        Initializers of ``weight`` and ``bias``.
    in_channels : int
        Input channels; 0 infers them at the first forward pass.
    """

    def __init__(
        self,
        channels,
        kernel_size,
        strides=1,
        padding=0,
        dilation=1,
        groups=1,
        layout="NCW",
        activation=None,
        use_bias=True,
        weight_initializer=None,
        bias_initializer="zeros",
        in_channels=0,
        **kwargs,
    ):
        kernel_size = _conv_args("Conv1D", 1, kernel_size, layout, ("NCW",))
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
            activation, use_bias, weight_initializer, bias_initializer, op_name, **kwargs,
        )  # fmt: skip


class Conv2D(_Conv):
    """2-D convolution over ``(batch, in_channels, height, width)`` (``'NCHW'``) or
    ``(batch, height, width, in_channels)`` (``'NHWC'``).

    ``out = floor((size + 2*padding - dilation*(kernel_size-1) - 1)/stride) + 1`` per axis.

    Parameters
    ----------
    channels : int
        Number of output channels (filters).
    kernel_size, strides, padding, dilation : int or tuple of 2 ints
        Window size, stride, implicit zero padding on both sides, dilation.
    groups : int
        Split the channels into ``groups`` independent convolutions.
    layout : str
        ``'NCHW'`` or ``'NHWC'``.
    activation : str, optional
        Activation applied to the output.
    use_bias : bool
        Whether the layer has a bias.
    weight_initializer, bias_initializer : Initializer or str
        Initializers of ``weight`` and ``bias``.
    in_channels : int
        Input channels; 0 infers them at the first forward pass.
    """

    def __init__(
        self,
        channels,
        kernel_size,
        strides=(1, 1),
        padding=(0, 0),
        dilation=(1, 1),
        groups=1,
        layout="NCHW",
        activation=None,
        use_bias=True,
        weight_initializer=None,
        bias_initializer="zeros",
        in_channels=0,
        **kwargs,
    ):
        kernel_size = _conv_args("Conv2D", 2, kernel_size, layout)
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
            activation, use_bias, weight_initializer, bias_initializer, op_name, **kwargs,
        )  # fmt: skip


class Conv3D(_Conv):
    """3-D convolution over ``(batch, in_channels, depth, height, width)`` (``'NCDHW'``)
    or channel-last ``'NDHWC'``; parameters as :class:`Conv2D` with 3-tuples."""

    def __init__(
        self,
        channels,
        kernel_size,
        strides=(1, 1, 1),
        padding=(0, 0, 0),
        dilation=(1, 1, 1),
        groups=1,
        layout="NCDHW",
        activation=None,
        use_bias=True,
        weight_initializer=None,
        bias_initializer="zeros",
        in_channels=0,
        **kwargs,
    ):
        kernel_size = _conv_args("Conv3D", 3, kernel_size, layout)
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
            activation, use_bias, weight_initializer, bias_initializer, op_name, **kwargs,
        )  # fmt: skip


class _ConvTranspose(_Conv):
    """Shared constructor of the transposed convolutions (``Deconvolution``)."""

    _NDIM = 0

    def __init__(
        self,
        channels,
        kernel_size,
        strides,
        padding,
        output_padding,
        dilation,
        groups,
        layout,
        activation,
        use_bias,
        weight_initializer,
        bias_initializer,
        in_channels,
        allowed_layouts=None,
        **kwargs,
    ):
        n = self._NDIM
        name = type(self).__name__
        kernel_size = _conv_args(name, n, kernel_size, layout, allowed_layouts)
        output_padding = _tuple(output_padding, n, "output_padding")
        op_name = kwargs.pop("op_name", "Deconvolution")
        super().__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
            activation, use_bias, weight_initializer, bias_initializer, op_name=op_name,
            adj=output_padding, **kwargs,
        )  # fmt: skip
        self.outpad = output_padding


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution (``Deconvolution``), layout ``'NCW'``.

    ``out_width = (width-1)*strides - 2*padding + kernel_size + output_padding``
    (with dilation 1).  ``output_padding`` adds that many points at the end of the output;
    the other parameters are as :class:`Conv1D`.
    """

    _NDIM = 1

    def __init__(
        self,
        channels,
        kernel_size,
        strides=1,
        padding=0,
        output_padding=0,
        dilation=1,
        groups=1,
        layout="NCW",
        activation=None,
        use_bias=True,
        weight_initializer=None,
        bias_initializer="zeros",
        in_channels=0,
        **kwargs,
    ):
        super().__init__(
            channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
            activation, use_bias, weight_initializer, bias_initializer, in_channels,
            allowed_layouts=("NCW",), **kwargs,
        )  # fmt: skip


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution (``Deconvolution``), layout ``'NCHW'`` or ``'NHWC'``.

    ``out = (size-1)*strides - 2*padding + kernel_size + output_padding`` per axis (with
    dilation 1); the weight has shape ``(in_channels, channels/groups, kh, kw)``.
    """

    _NDIM = 2

    def __init__(
        self,
        channels,
        kernel_size,
        strides=(1, 1),
        padding=(0, 0),
        output_padding=(0, 0),
        dilation=(1, 1),
        groups=1,
        layout="NCHW",
        activation=None,
        use_bias=True,
        weight_initializer=None,
        bias_initializer="zeros",
        in_channels=0,
        **kwargs,
    ):
        super().__init__(
            channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
            activation, use_bias, weight_initializer, bias_initializer, in_channels, **kwargs,
        )  # fmt: skip


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution (``Deconvolution``), layout ``'NCDHW'`` or ``'NDHWC'``."""

    _NDIM = 3

    def __init__(
        self,
        channels,
        kernel_size,
        strides=(1, 1, 1),
        padding=(0, 0, 0),
        output_padding=(0, 0, 0),
        dilation=(1, 1, 1),
        groups=1,
        layout="NCDHW",
        activation=None,
        use_bias=True,
        weight_initializer=None,
        bias_initializer="zeros",
        in_channels=0,
        **kwargs,
    ):
        super().__init__(
            channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
            activation, use_bias, weight_initializer, bias_initializer, in_channels, **kwargs,
        )  # fmt: skip


class _Pooling(HybridBlock):
    """Shared implementation of the pooling layers (the ``Pooling`` operator)."""

    def __init__(
        self,
        pool_size,
        strides,
        padding,
        ceil_mode,
        global_pool,
        pool_type,
        layout,
        count_include_pad=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        n = len(pool_size)
        if strides is None:
            strides = pool_size
        self._layout = layout
        self._kwargs = {
            "kernel": tuple(pool_size),
            "stride": _tuple(strides, n, "strides"),
            "pad": _tuple(padding, n, "padding"),
            "global_pool": global_pool,
            "pool_type": pool_type,
            "layout": layout,
            "pooling_convention": "full" if ceil_mode else "valid",
        }
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        _check_input(self, x, self._layout)
        return _call_op(self, F.Pooling, x, **self._kwargs)

    def __repr__(self):
        kw = self._kwargs
        return (
            f"{type(self).__name__}(size={kw['kernel']}, stride={kw['stride']}, "
            f"padding={kw['pad']}, ceil_mode={kw['pooling_convention'] == 'full'}, "
            f"global_pool={kw['global_pool']}, pool_type={kw['pool_type']}, layout={kw['layout']})"
        )


def _layer_name(block):
    """The name of the layer class of this module that ``block`` is (or derives from)."""
    return next(c.__name__ for c in type(block).__mro__ if c.__module__ == __name__)


class _WindowPooling(_Pooling):
    """Max or average pooling with a window over ``_NDIM`` axes (``_POOL_TYPE``); the
    subclasses only fix MXNet's signature and defaults."""

    _NDIM = 0
    _POOL_TYPE = ""

    def __init__(
        self, pool_size, strides, padding, ceil_mode, layout, count_include_pad=None, **kwargs
    ):
        n = self._NDIM
        _check_layout(_layer_name(self), layout, n)
        pool_size = _tuple(pool_size, n, "pool_size")
        super().__init__(pool_size, strides, padding, ceil_mode, False, self._POOL_TYPE, layout,
                         count_include_pad, **kwargs)  # fmt: skip


class _GlobalPooling(_Pooling):
    """Max or average over all ``_NDIM`` spatial axes (``_POOL_TYPE``)."""

    _NDIM = 0
    _POOL_TYPE = ""

    def __init__(self, layout, **kwargs):
        n = self._NDIM
        _check_layout(_layer_name(self), layout, n)
        super().__init__((1,) * n, None, 0, True, True, self._POOL_TYPE, layout, **kwargs)


class MaxPool1D(_WindowPooling):
    """Max pooling over ``(batch, channels, width)`` (``'NCW'`` or ``'NWC'``).

    ``strides`` defaults to ``pool_size``; ``ceil_mode`` rounds the output size up
    (MXNet's ``pooling_convention='full'``).
    """

    _NDIM, _POOL_TYPE = 1, "max"

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 **kwargs):  # fmt: skip
        super().__init__(pool_size, strides, padding, ceil_mode, layout, **kwargs)


class MaxPool2D(_WindowPooling):
    """Max pooling over ``(batch, channels, height, width)`` (``'NCHW'`` or ``'NHWC'``).

    ``out = floor((size + 2*padding - pool_size)/strides) + 1`` per axis (``ceil`` with
    ``ceil_mode``); ``strides`` defaults to ``pool_size``.
    """

    _NDIM, _POOL_TYPE = 2, "max"

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, **kwargs):  # fmt: skip
        super().__init__(pool_size, strides, padding, ceil_mode, layout, **kwargs)


class MaxPool3D(_WindowPooling):
    """Max pooling over 5-D input (``'NCDHW'`` or ``'NDHWC'``); see :class:`MaxPool2D`."""

    _NDIM, _POOL_TYPE = 3, "max"

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", **kwargs):  # fmt: skip
        super().__init__(pool_size, strides, padding, ceil_mode, layout, **kwargs)


class AvgPool1D(_WindowPooling):
    """Average pooling over 3-D input; ``count_include_pad`` counts padded zeros in the
    average (MXNet's default)."""

    _NDIM, _POOL_TYPE = 1, "avg"

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):  # fmt: skip
        super().__init__(pool_size, strides, padding, ceil_mode, layout, count_include_pad,
                         **kwargs)  # fmt: skip


class AvgPool2D(_WindowPooling):
    """Average pooling over 4-D input (``'NCHW'`` or ``'NHWC'``); ``count_include_pad``
    counts padded zeros in the average (MXNet's default)."""

    _NDIM, _POOL_TYPE = 2, "avg"

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCHW", count_include_pad=True, **kwargs):  # fmt: skip
        super().__init__(pool_size, strides, padding, ceil_mode, layout, count_include_pad,
                         **kwargs)  # fmt: skip


class AvgPool3D(_WindowPooling):
    """Average pooling over 5-D input (``'NCDHW'`` or ``'NDHWC'``)."""

    _NDIM, _POOL_TYPE = 3, "avg"

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", count_include_pad=True, **kwargs):  # fmt: skip
        super().__init__(pool_size, strides, padding, ceil_mode, layout, count_include_pad,
                         **kwargs)  # fmt: skip


class GlobalMaxPool1D(_GlobalPooling):
    """Max over the whole width: ``(N, C, W) -> (N, C, 1)``."""

    _NDIM, _POOL_TYPE = 1, "max"

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalMaxPool2D(_GlobalPooling):
    """Max over height and width: ``(N, C, H, W) -> (N, C, 1, 1)``."""

    _NDIM, _POOL_TYPE = 2, "max"

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalMaxPool3D(_GlobalPooling):
    """Max over depth, height and width: ``(N, C, D, H, W) -> (N, C, 1, 1, 1)``."""

    _NDIM, _POOL_TYPE = 3, "max"

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalAvgPool1D(_GlobalPooling):
    """Mean over the whole width: ``(N, C, W) -> (N, C, 1)``."""

    _NDIM, _POOL_TYPE = 1, "avg"

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalAvgPool2D(_GlobalPooling):
    """Mean over height and width: ``(N, C, H, W) -> (N, C, 1, 1)``."""

    _NDIM, _POOL_TYPE = 2, "avg"

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(layout, **kwargs)


class GlobalAvgPool3D(_GlobalPooling):
    """Mean over depth, height and width: ``(N, C, D, H, W) -> (N, C, 1, 1, 1)``."""

    _NDIM, _POOL_TYPE = 3, "avg"

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(layout, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pad the height and width of an ``NCHW`` batch by reflection.

    ``padding`` is an int (the same on all four sides) or MXNet's 8-tuple ``pad_width``
    (``(0, 0, 0, 0, top, bottom, left, right)``).
    """

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, numbers.Integral):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        padding = tuple(int(p) for p in padding)
        if len(padding) != 8:
            raise ValueError(f"ReflectionPad2D: padding must be an int or 8 ints, got {padding}")
        self._padding = padding

    def hybrid_forward(self, F, x):
        _check_input(self, x, "NCHW")
        return F.pad(x, mode="reflect", pad_width=self._padding)

    def __repr__(self):
        return f"{type(self).__name__}(padding={self._padding})"
