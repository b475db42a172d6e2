"""Recurrent layers (``gluon.rnn.RNN``, ``LSTM``, ``GRU``) following MXNet 1.9.1: the same
parameters (``l0_i2h_weight``, ``l0_h2h_weight``, ``l0_i2h_bias``, ``l0_h2h_bias``, ``r0_...``
for the reverse direction, ``l0_h2r_weight`` with a projection), saved under MXNet's
structural names (``_unfused.0.i2h_weight``, ``_unfused.0.l_cell.i2h_weight``), so ``.params``
files written by MXNet load; the same gate order and formulas as MXNet's fused ``RNN``
operator.

The forward is the ``RNN`` operator (``ops/sequence/rnn.rs``): one input-projection gemm for
all steps of a layer and direction, then one gemm and the gate arithmetic per step, as
engine operators that autograd differentiates through time.
"""

import re

from ... import ndarray as nd
from ...ndarray import NDArray
from ..block import HybridBlock

__all__ = ["GRU", "LSTM", "RNN"]

_KEY = re.compile(r"(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z")


class _RNNLayer(HybridBlock):
    """The shared implementation of :class:`RNN`, :class:`LSTM` and :class:`GRU`."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        name = type(self).__name__
        if layout not in ("TNC", "NTC"):
            raise ValueError(f"{name}: invalid layout {layout!r}; must be one of ['TNC' or 'NTC']")
        if num_layers < 1:
            raise ValueError(f"{name}: num_layers must be at least 1, got {num_layers}")
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states = None
        self._gates = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}[mode]
        ng, ni, nh = self._gates, input_size, hidden_size
        nr = self._projection_size or nh
        for i in range(num_layers):
            for j in "lr"[: self._dir]:
                self._register_param(f"{j}{i}_i2h_weight", (ng * nh, ni), i2h_weight_initializer,
                                     dtype)
                self._register_param(f"{j}{i}_h2h_weight", (ng * nh, nr), h2h_weight_initializer,
                                     dtype)
                self._register_param(f"{j}{i}_i2h_bias", (ng * nh,), i2h_bias_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_bias", (ng * nh,), h2h_bias_initializer, dtype)
                if self._projection_size:
                    self._register_param(f"{j}{i}_h2r_weight", (nr, nh), h2r_weight_initializer,
                                         dtype)
            ni = nr * self._dir

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self):
        s = "{name}({mapping}, {_layout}"
        if self._num_layers != 1:
            s += ", num_layers={_num_layers}"
        if self._dropout != 0:
            s += ", dropout={_dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        s += ")"
        shape = self.l0_i2h_weight.shape
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0] // self._gates}"
        return s.format(name=type(self).__name__, mapping=mapping, **self.__dict__)

    def _collect_params_with_prefix(self, prefix=""):
        """MXNet 1.9.1's structural names: ``_unfused.<layer>.<i2h|h2h>_<weight|bias>``, and
        ``_unfused.<layer>.<l|r>_cell.`` ... when bidirectional."""
        if prefix:
            prefix += "."
        bidirectional = self._dir == 2
        ret = {}
        for key, val in self._reg_params.items():
            d, layer, g, t = _KEY.match(key).groups()
            cell = f"{d}_cell." if bidirectional else ""
            ret[f"{prefix}_unfused.{layer}.{cell}{g}_{t}"] = val
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size=0):
        raise NotImplementedError

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """Initial states: ``func(name=..., shape=..., **kwargs)`` per state (``nd.zeros``
        by default), shaped (num_layers * directions, batch_size, state size)."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info or {})
            info.pop("__layout__", None)
            info.update(kwargs)
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    def infer_shape(self, inputs, *args):
        """Set the first layer's input size from ``inputs`` (deferred ``input_size``)."""
        c = inputs.shape[2]
        for j in "lr"[: self._dir]:
            getattr(self, f"{j}0_i2h_weight").shape = (self._gates * self._hidden_size, c)

    def __call__(self, inputs, states=None, sequence_length=None):
        args = (inputs, states, sequence_length)
        for hook in list(self._forward_pre_hooks.values()):
            hook(self, args)
        out = self.forward(*args)
        for hook in list(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def forward(self, inputs, states=None, sequence_length=None):
        """``outputs`` (in the layer's layout), or ``(outputs, states)`` when states were
        given; ``sequence_length`` (N,) needs ``use_sequence_length=True``."""
        name = type(self).__name__
        if not isinstance(inputs, NDArray) or inputs.ndim != 3:
            shape = getattr(inputs, "shape", None)
            raise ValueError(f"{name}: inputs must be a 3-d NDArray in layout {self._layout}, "
                             f"got shape {shape}")
        if sequence_length is not None and not self._use_sequence_length:
            raise ValueError(f"{name}: sequence_length was given but the layer was created "
                             "without use_sequence_length=True")
        if self._use_sequence_length and sequence_length is None:
            raise ValueError(f"{name}: use_sequence_length=True needs sequence_length")
        self.skip_states = states is None
        if states is None:
            batch_size = inputs.shape[self._layout.find("N")]
            states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
        if isinstance(states, NDArray):
            states = [states]
        return super().forward(inputs, list(states), sequence_length)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        name = type(self).__name__
        batch_size = inputs.shape[self._layout.find("N")]
        infos = self.state_info(batch_size)
        if len(states) != len(infos):
            raise ValueError(f"{name}: expected {len(infos)} state arrays, got {len(states)}")
        for i, (state, info) in enumerate(zip(states, infos)):
            if state.shape != info["shape"]:
                raise ValueError(
                    f"{name}: invalid recurrent state shape for state {i}. Expecting "
                    f"{info['shape']} (num_layers * directions = "
                    f"{self._num_layers * self._dir}, batch_size = {batch_size}, state size = "
                    f"{info['shape'][2]}), got {state.shape}."
                )
        if sequence_length is not None and sequence_length.shape != (batch_size,):
            raise ValueError(f"{name}: sequence_length must have shape ({batch_size},), got "
                             f"{sequence_length.shape}")
        out = self._forward_kernel(inputs, states, sequence_length, kwargs)
        return out[0] if self.skip_states else out

    # ------------------------------------------------------------------ the computation

    def _forward_kernel(self, inputs, states, sequence_length, params):
        """MXNet's fused ``RNN`` operator on the flat parameter vector (all weights, then
        all biases, layer by layer and direction by direction)."""
        x = nd.swapaxes(inputs, 0, 1) if self._layout == "NTC" else inputs
        proj = self._projection_size is not None
        flat = nd.concat(*[params[f"{d}{layer}_{g}_{t}"].reshape(-1)
                           for t in ("weight", "bias")
                           for layer in range(self._num_layers)
                           for d in "lr"[: self._dir]
                           for g in ("i2h", "h2h", "h2r")
                           if g != "h2r" or (proj and t == "weight")], dim=0)
        args = [x, flat, *states]
        if sequence_length is not None:
            args.append(sequence_length)
        res = nd.RNN(*args, state_size=self._hidden_size, num_layers=self._num_layers,
                     bidirectional=self._dir == 2, mode=self._mode, p=self._dropout,
                     state_outputs=True, projection_size=self._projection_size,
                     lstm_state_clip_min=self._lstm_state_clip_min,
                     lstm_state_clip_max=self._lstm_state_clip_max,
                     lstm_state_clip_nan=self._lstm_state_clip_nan,
                     use_sequence_length=sequence_length is not None)
        out, new_states = res[0], list(res[1:])
        if self._layout == "NTC":
            out = nd.swapaxes(out, 0, 1)
        return out, new_states


class RNN(_RNNLayer):
    """Multi-layer Elman RNN: ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` with
    ``activation`` 'relu' (default) or 'tanh'.

    Inputs ``(data, states)``: data in ``layout`` ('TNC' default, or 'NTC'); states a list
    of one (num_layers * directions, N, hidden_size) array (zeros when omitted, and then
    only the output is returned).
    """

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 dtype="float32", **kwargs):
        if activation not in ("relu", "tanh"):
            raise ValueError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, None, None, None, None,
                         False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]


class LSTM(_RNNLayer):
    """Multi-layer LSTM (gates input, forget, candidate, output as MXNet's fused operator),
    optionally with a projection (``projection_size``: LSTMP) and cell-state clipping.

    States ``[h, c]``: h (num_layers * directions, N, projection_size or hidden_size), c
    (num_layers * directions, N, hidden_size).
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 projection_size=None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        n = self._num_layers * self._dir
        h = self._projection_size or self._hidden_size
        return [{"shape": (n, batch_size, h), "__layout__": "LNC", "dtype": self._dtype},
                {"shape": (n, batch_size, self._hidden_size), "__layout__": "LNC",
                 "dtype": self._dtype}]


class GRU(_RNNLayer):
    """Multi-layer GRU with MXNet's formula (reset gate applied to ``W_hn h + b_hn``)."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", None, None, None, None, False, dtype,
                         **kwargs)

    def state_info(self, batch_size=0):
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]
