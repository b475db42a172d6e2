"""Weight initializers, following the behaviour of ``mxnet.initializer`` (MXNet 1.9.1).

An initializer is called as ``init(desc, arr)`` and fills the NDArray ``arr`` in place.
``desc`` is an :class:`InitDesc` (a ``str`` holding the parameter name).  When ``desc``
carries an explicit initializer in ``desc.attrs['__init__']`` (which is what Gluon
parameters pass), that initializer's ``_init_weight`` fills the array whatever the name.
Otherwise the name decides: ``*weight`` uses ``_init_weight``, ``*bias``/``*beta``/``*min``
become 0, ``*gamma``/``*max`` become 1, anything else is an error.

All random draws go through ``nd.random`` so they follow ``mx.random.seed``.
"""

import json
import logging
import math
import re

import numpy as np

from . import ndarray as nd
from . import random, registry  # noqa: F401 - MXNet's initializer module exposes these names
from .base import string_types  # noqa: F401
from .ndarray import NDArray, load  # noqa: F401
from .util import is_np_array  # noqa: F401

ndarray = nd

_LOG = logging.getLogger(__name__)

__all__ = [
    "Bilinear",
    "Constant",
    "FusedRNN",
    "InitDesc",
    "Initializer",
    "LSTMBias",
    "Load",
    "MSRAPrelu",
    "Mixed",
    "Normal",
    "One",
    "Orthogonal",
    "Uniform",
    "Xavier",
    "Zero",
    "alias",
    "create",
    "register",
]

_INITIALIZER_REGISTRY = {}


def register(klass):
    """Register an :class:`Initializer` subclass under its lower-cased class name."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError(f"can only register subclasses of Initializer, got {klass!r}")
    _INITIALIZER_REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases):
    """Class decorator registering additional (lower-case) names for an initializer."""

    def _reg(klass):
        for name in aliases:
            _INITIALIZER_REGISTRY[name.lower()] = klass
        return klass

    return _reg


def create(init, **kwargs):
    """Create an initializer from an instance, a registered name or a ``dumps()`` JSON string."""
    if isinstance(init, Initializer):
        if kwargs:
            raise ValueError("cannot pass keyword arguments with an Initializer instance")
        return init
    if isinstance(init, type) and issubclass(init, Initializer):
        return init(**kwargs)
    if isinstance(init, str):
        text = init.strip()
        if text.startswith("["):
            try:
                name, init_kwargs = json.loads(text)
            except (ValueError, TypeError) as err:
                raise ValueError(f"cannot parse initializer description {init!r}") from err
            init_kwargs = dict(init_kwargs)
            init_kwargs.update(kwargs)
            return create(name, **init_kwargs)
        key = text.lower()
        if key not in _INITIALIZER_REGISTRY:
            raise ValueError(
                "Cannot find initializer {!r}. Registered initializers: {}".format(
                    init, ", ".join(sorted(_INITIALIZER_REGISTRY))
                )
            )
        return _INITIALIZER_REGISTRY[key](**kwargs)
    raise TypeError(f"cannot create an initializer from {init!r}")


def _dtype_name(dtype):
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(getattr(dtype, "name", dtype))


def _fill_random(arr, dist, a, b):
    """Fill ``arr`` in place with uniform(a, b) or normal(mean=a, std=b) samples."""
    kwargs = {"shape": arr.shape, "ctx": arr.context, "dtype": _dtype_name(arr.dtype)}
    if dist == "uniform":
        sample = nd.random.uniform(low=a, high=b, **kwargs)
    else:
        sample = nd.random.normal(loc=a, scale=b, **kwargs)
    arr[:] = sample


class InitDesc(str):
    """A parameter name plus attributes, passed to :class:`Initializer` calls.

    Parameters
    ----------
    name : str
        Name of the parameter being initialized.
    attrs : dict, optional
        Attributes; ``attrs['__init__']`` names an explicit initializer.
    global_init : Initializer, optional
        The initializer the call came from.
    """

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer:
    """Base class of all initializers.

    Subclasses implement ``_init_weight(name, arr)``; keyword arguments given to
    ``__init__`` are recorded so that :meth:`dumps` can describe the initializer.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Log each initialization (with ``print_func(arr)``, by default the RMS value)."""
        self._verbose = verbose
        if print_func is None:

            def print_func(x):
                return str(float(nd.norm(x).asscalar()) / math.sqrt(max(x.size, 1)))

        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            _LOG.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """Return a JSON string ``[name, kwargs]`` that :func:`create` accepts."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __repr__(self):
        args = ", ".join("{}={!r}".format(*kv) for kv in sorted(self._kwargs.items()))
        return f"{self.__class__.__name__}({args})"

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    def __hash__(self):
        return hash((type(self), self.dumps()))

    def __call__(self, desc, arr):
        """Initialize ``arr`` (an NDArray, written in place) for parameter ``desc``."""
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        if desc.endswith("weight"):
            self._init_weight(desc, arr)
            self._verbose_print(desc, "weight", arr)
        elif desc.endswith("bias"):
            self._init_bias(desc, arr)
            self._verbose_print(desc, "bias", arr)
        elif desc.endswith("gamma"):
            self._init_gamma(desc, arr)
            self._verbose_print(desc, "gamma", arr)
        elif desc.endswith("beta"):
            self._init_beta(desc, arr)
            self._verbose_print(desc, "beta", arr)
        elif desc.endswith("min"):
            self._init_zero(desc, arr)
        elif desc.endswith("max"):
            self._init_one(desc, arr)
        else:
            self._init_default(desc, arr)

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_weight(self, name, arr):
        raise NotImplementedError(f"{type(self).__name__} must implement _init_weight")

    def _init_default(self, name, _):
        raise ValueError(
            f"Unknown initialization pattern for {name}. Default initialization is limited to "
            '"weight", "bias", "gamma" (1.0) and "beta" (0.0). Set an explicit initializer '
            "on the parameter (Parameter(init=...)) for other names."
        )


@register
@alias("zeros")
class Zero(Initializer):
    """Initialize to 0."""

    def _init_weight(self, _, arr):
        arr[:] = 0.0


@register
@alias("ones")
class One(Initializer):
    """Initialize to 1."""

    def _init_weight(self, _, arr):
        arr[:] = 1.0


@register
class Constant(Initializer):
    """Initialize to a constant ``value`` (a scalar, a list or an NDArray broadcast to the "
    "shape)."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def dumps(self):
        value = self.value
        if hasattr(value, "asnumpy"):
            value = value.asnumpy().tolist()
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        self._kwargs["value"] = value  # as MXNet: the stored kwargs become JSON-ready
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def _init_weight(self, _, arr):
        value = self.value
        if isinstance(value, (list, tuple, np.ndarray)):
            value = nd.array(np.broadcast_to(np.asarray(value), arr.shape), ctx=arr.context)
        elif hasattr(value, "asnumpy") and tuple(value.shape) != tuple(arr.shape):
            value = nd.broadcast_to(value.as_in_context(arr.context), shape=arr.shape)
        arr[:] = value


@register
class Uniform(Initializer):
    """Initialize with values drawn uniformly from ``[-scale, scale]``."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _fill_random(arr, "uniform", -self.scale, self.scale)


@register
class Normal(Initializer):
    """Initialize with values drawn from a normal distribution with mean 0 and std ``sigma``."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _fill_random(arr, "normal", 0.0, self.sigma)


@register
class Orthogonal(Initializer):
    """Initialize with a (scaled) random orthogonal matrix, as in Saxe et al. 2013."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise ValueError(f"rand_type must be 'uniform' or 'normal', got {rand_type!r}")
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = nd.random.uniform(low=-1.0, high=1.0, shape=(nout, nin)).asnumpy()
        else:
            tmp = nd.random.normal(loc=0.0, scale=1.0, shape=(nout, nin)).asnumpy()
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        res = self.scale * res.reshape(arr.shape)
        arr[:] = nd.array(res, ctx=arr.context, dtype=_dtype_name(arr.dtype))


@register
class Xavier(Initializer):
    """Xavier/Glorot initialization.

    The scale is ``sqrt(magnitude / factor)`` where ``factor`` is the fan-in, the fan-out or
    their average (``factor_type`` = ``'in'``, ``'out'``, ``'avg'``); samples are uniform in
    ``[-scale, scale]`` (``rnd_type='uniform'``) or normal with std ``scale``
    (``rnd_type='gaussian'``).  Fans of an N-d weight (N > 2) include the receptive field.
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(
                f"Xavier initializer cannot be applied to vector {name}. It requires at least 2D."
            )
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == "avg":
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == "in":
            factor = fan_in
        elif self.factor_type == "out":
            factor = fan_out
        else:
            raise ValueError(f"Incorrect factor type {self.factor_type!r}")
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            _fill_random(arr, "uniform", -scale, scale)
        elif self.rnd_type == "gaussian":
            _fill_random(arr, "normal", 0.0, scale)
        else:
            raise ValueError(f"Unknown random type {self.rnd_type!r}")


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for PReLU nets: Gaussian Xavier with magnitude 2/(1+slope^2)."""

    def __init__(self, factor_type="avg", slope=0.25):
        magnitude = 2.0 / (1 + slope**2)
        super().__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


class Mixed:
    """Dispatch to one of several initializers by regular expression on the parameter name.

    Parameters
    ----------
    patterns : list of str
        Regular expressions, tried in order with ``re.match``.
    initializers : list of Initializer
        The initializer used for names matching the pattern at the same position.
    """

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError("patterns and initializers must have the same length")
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        """Initialize ``arr`` with the first initializer whose pattern matches ``name``."""
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError(
            f'Parameter name {name} did not match any pattern. Consider adding a ".*" pattern '
            "at the end with a default Initializer."
        )


class Load:
    """Initialize parameters from a saved file or a dict of name -> array.

    Names saved with an ``arg:`` or ``aux:`` prefix match without it. Parameters not found
    are passed to ``default_init`` (a missing one raises ``ValueError``); a shape mismatch
    raises ``ValueError``.
    """

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = nd.load(param)
        if not isinstance(param, dict):
            raise TypeError(f"Load: param must be a file name or a dict, got {type(param)}")
        self.param = {}
        for name, arr in param.items():
            key = name[4:] if name.startswith(("arg:", "aux:")) else name
            self.param[key] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        """Initialize ``arr`` with the loaded value of ``name`` (or ``default_init``)."""
        if name in self.param:
            src = self.param[name]
            if tuple(arr.shape) != tuple(src.shape):
                raise ValueError(f"Parameter {name} cannot be initialized from loading. Shape "
                                 f"mismatch, target {arr.shape} vs loaded {src.shape}")
            arr[:] = src if isinstance(src, NDArray) else nd.array(src, ctx=arr.context)
            if self.verbose:
                _LOG.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise ValueError(f"Cannot Initialize {name}. Not found in loaded param and no "
                             "default Initializer is provided.")
        self.default_init(name, arr)
        if self.verbose:
            _LOG.info("Initialized %s by default", name)


@register
class Bilinear(Initializer):
    """Initialize a 4-D ``(out, in, h, w)`` weight with a bilinear upsampling kernel.

    Every ``(h, w)`` slice is ``(1 - |x/f - c|) * (1 - |y/f - c|)`` with ``f = ceil(w/2)`` and
    ``c = (2f - 1 - f % 2) / (2f)``, the kernel of a ``Deconvolution`` that upsamples by ``f``.
    """

    def __init__(self):
        super().__init__()

    def _init_weight(self, name, arr):
        shape = tuple(arr.shape)
        if len(shape) != 4:
            raise ValueError(f"Bilinear initializer needs a 4-D weight, got {name} of {shape}")
        f = math.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        ctx = arr.context

        def ramp(n):
            pos = nd.arange(0, n, ctx=ctx, dtype="float64")
            return 1.0 - nd.abs(pos / f - c)

        kernel = ramp(shape[2]).reshape((shape[2], 1)) * ramp(shape[3]).reshape((1, shape[3]))
        kernel = nd.broadcast_to(kernel.reshape((1, 1, shape[2], shape[3])), shape=shape)
        arr[:] = kernel.astype("float32").astype(_dtype_name(arr.dtype))


@register
class LSTMBias(Initializer):
    """Initialize an LSTM bias to 0 except the forget gate (the second quarter), set to
    ``forget_bias``."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        arr[:] = 0.0
        num_hidden = int(arr.shape[0] / 4)
        arr[num_hidden:2 * num_hidden] = self.forget_bias


_RNN_GATES = {"lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"],
              "rnn_relu": [""], "rnn_tanh": [""]}


@register
class FusedRNN(Initializer):
    """Initialize the flat parameter vector of a fused RNN layer gate by gate.

    The vector is unpacked as MXNet's fused RNN lays it out (for each layer and direction the
    i2h then h2h weights, gates stacked; then the biases in the same order); each gate's
    weight gets ``init`` (or the global initializer), biases 0, and LSTM forget-gate biases
    ``forget_bias``.
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        if isinstance(init, str):
            init = create(init)
        if mode not in _RNN_GATES:
            raise ValueError(f"FusedRNN: mode must be one of {sorted(_RNN_GATES)}, got {mode!r}")
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                         forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _layout(self, total):
        """``[(name, shape)]`` of the unpacked pieces, in packing order."""
        gates, hid = _RNN_GATES[self._mode], self._num_hidden
        dirs = ["l", "r"] if self._bidirectional else ["l"]
        g, d, layers = len(gates), len(dirs), self._num_layers
        rest = (layers - 1) * d * (g * hid * d * hid + g * hid * hid) + layers * d * 2 * g * hid
        rest += d * g * hid * hid
        if total <= rest or (total - rest) % (d * g * hid):
            raise ValueError(f"FusedRNN: {total} parameters do not fit {layers} {self._mode} "
                             f"layer(s) of {hid} hidden units")
        inputs = (total - rest) // (d * g * hid)
        weights, biases = [], []
        for layer in range(layers):
            width = inputs if layer == 0 else d * hid
            for dr in dirs:
                for kind, cols in (("i2h", width), ("h2h", hid)):
                    for gate in gates:
                        weights.append((f"{dr}{layer}_{kind}{gate}_weight", (hid, cols)))
                        biases.append((f"{dr}{layer}_{kind}{gate}_bias", (hid,)))
        return weights + biases

    def _init_weight(self, desc, arr):
        ctx, dtype = arr.context, _dtype_name(arr.dtype)
        pieces = []
        for name, shape in self._layout(int(arr.size)):
            part = nd.zeros(shape, ctx=ctx, dtype=dtype)
            arg_desc = InitDesc(name, global_init=getattr(desc, "global_init", None))
            if self._mode == "lstm" and name.endswith("_f_bias"):
                part[:] = self._forget_bias
            elif self._init is not None:
                self._init(arg_desc, part)
            elif arg_desc.global_init is not None and arg_desc.global_init is not self:
                arg_desc.global_init(arg_desc, part)
            else:
                raise ValueError("FusedRNN: no init given and no global initializer to use")
            pieces.append(part.reshape((-1,)))
        arr[:] = nd.concat(*pieces, dim=0).reshape(arr.shape)
