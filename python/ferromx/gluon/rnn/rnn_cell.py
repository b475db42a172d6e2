"""Recurrent cells (``gluon.rnn.RNNCell``, ``LSTMCell``, ``GRUCell``, stacking and modifier
cells), following MXNet 1.9.1: one step per call, ``unroll`` over a sequence, the same
parameter names (``i2h_weight``, ``h2h_weight``, ``i2h_bias``, ``h2h_bias``) and gate order
(LSTM: input, forget, candidate, output; GRU: reset, update, new)."""

from ... import ndarray as nd
from ...ndarray import NDArray
from ..block import Block, HybridBlock

__all__ = [
    "BidirectionalCell",
    "DropoutCell",
    "GRUCell",
    "HybridRecurrentCell",
    "HybridSequentialRNNCell",
    "LSTMCell",
    "ModifierCell",
    "RNNCell",
    "RecurrentCell",
    "ResidualCell",
    "SequentialRNNCell",
    "ZoneoutCell",
]


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _cells_state_info(cells, batch_size):
    return [info for c in cells for info in c.state_info(batch_size)]


def _cells_begin_state(cells, **kwargs):
    return [s for c in cells for s in c.begin_state(**kwargs)]


def _get_begin_state(cell, begin_state, inputs, batch_size):
    if begin_state is not None:
        return _as_list(begin_state)
    x = inputs if isinstance(inputs, NDArray) else inputs[0]
    return cell.begin_state(batch_size=batch_size, func=nd.zeros, ctx=x.context, dtype=x.dtype)


def _check_layout(where, layout):
    if layout not in ("TNC", "NTC"):
        raise ValueError(f"{where}: invalid layout {layout!r}; must be 'TNC' or 'NTC'")


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """``inputs`` (an array in ``in_layout`` or a list of (N, C) steps) as a list of steps
    (``merge`` False) or one array in ``layout`` (``merge`` True); also the time axis and
    the batch size."""
    if inputs is None:
        raise ValueError("unroll: inputs must be given (an NDArray or a list of NDArrays)")
    axis, batch_axis = layout.find("T"), layout.find("N")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, NDArray):
        batch_size = inputs.shape[batch_axis]
        if length is not None and length != inputs.shape[in_axis]:
            raise ValueError(
                f"unroll: length={length} but the inputs have {inputs.shape[in_axis]} steps "
                f"(shape {inputs.shape}, layout {layout})"
            )
        if merge is False:
            inputs = _as_list(nd.split(inputs, axis=in_axis, num_outputs=inputs.shape[in_axis],
                                       squeeze_axis=True))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: length={length} but {len(inputs)} input steps were given")
        batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = nd.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, NDArray) and axis != in_axis:
        inputs = nd.swapaxes(inputs, axis, in_axis)
    return inputs, axis, batch_size


def _mask_sequence_variable_length(data, length, valid_length, time_axis, merge):
    if not isinstance(data, NDArray):
        data = nd.stack(*data, axis=time_axis)
    out = nd.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                          axis=time_axis)
    if not merge:
        out = _as_list(nd.split(out, num_outputs=length, axis=time_axis, squeeze_axis=True))
    return out


def _reverse_sequences(steps, length, valid_length=None):
    if valid_length is None:
        return list(reversed(steps))
    rev = nd.SequenceReverse(nd.stack(*steps, axis=0), sequence_length=valid_length,
                             use_sequence_length=True)
    return _as_list(nd.split(rev, axis=0, num_outputs=length, squeeze_axis=True))


class RecurrentCell(Block):
    """Abstract base of recurrent cells: ``cell(inputs, states)`` runs one step and returns
    ``(output, new_states)``; :meth:`unroll` runs a whole sequence."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset before re-using the cell for another graph (step counters)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """Shape and layout of each state: a list of dicts (``shape``, ``__layout__``)."""
        raise NotImplementedError

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """Initial states: ``func(name=..., shape=..., **kwargs)`` for each state
        (``func`` is ``nd.zeros`` by default; ``nd.ones``, ``nd.random.uniform``... work)."""
        if self._modified:
            raise RuntimeError(
                "After applying a modifier cell (e.g. ZoneoutCell) the base cell cannot be "
                "called directly. Call the modifier cell instead."
            )
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info or {})
            info.pop("__layout__", None)
            info.update(kwargs)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Run ``length`` steps.

        ``inputs`` is an array in ``layout`` (``'NTC'`` or ``'TNC'``) or a list of (N, C)
        steps. Returns ``(outputs, states)``: outputs one array in ``layout`` when
        ``merge_outputs`` is True, a list of steps when False, and like the inputs when
        None. With ``valid_length`` (N,), outputs past each sequence's length are zero and
        the states are those at its last valid step.
        """
        _check_layout(f"{type(self).__name__}.unroll", layout)
        self.reset()
        inputs, axis, batch_size = _format_sequence(length, inputs, layout, False)
        length = len(inputs)
        begin_state = _get_begin_state(self, begin_state, inputs, batch_size)
        states = begin_state
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [nd.SequenceLast(nd.stack(*ele, axis=0), sequence_length=valid_length,
                                      use_sequence_length=True, axis=0)
                      for ele in zip(*all_states)]
            outputs = _mask_sequence_variable_length(outputs, length, valid_length, axis, True)
        outputs, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        if isinstance(activation, str):
            if activation in ("tanh", "sigmoid", "relu", "softrelu", "softsign"):
                return nd.Activation(inputs, act_type=activation, **kwargs)
            raise ValueError(f"{type(self).__name__}: unknown activation {activation!r}")
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One step: ``(output, new_states)``."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell whose step is written in ``hybrid_forward(F, inputs, states, ...)``."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, inputs, states):
        self._counter += 1
        return HybridBlock.forward(self, inputs, states)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _GatedCell(HybridRecurrentCell):
    """Shared parameters of the gated cells: ``gates * hidden_size`` rows each."""

    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        g = self._gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(g, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(g, hidden_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(g,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(g,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def infer_shape(self, x, *args):
        self.i2h_weight.shape = (self._gates * self._hidden_size, x.shape[-1])

    def _check_states(self, states, n):
        states = _as_list(states)
        if len(states) != n:
            raise ValueError(f"{type(self).__name__}: expected {n} states, got {len(states)}")
        return states

    def _proj(self, F, x, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        g = self._gates * self._hidden_size
        i2h = F.FullyConnected(x, i2h_weight, i2h_bias, num_hidden=g)
        h2h = F.FullyConnected(h, h2h_weight, h2h_bias, num_hidden=g)
        return i2h, h2h

    def __repr__(self):
        shape = self.i2h_weight.shape
        return f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]})"


class RNNCell(_GatedCell):
    """Elman cell: ``h' = act(W_i x + b_i + W_h h + b_h)`` (``activation`` 'tanh' by default,
    or 'relu', 'sigmoid', 'softsign', or a callable)."""

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def _alias(self):
        return "rnn"

    @property
    def _gate_names(self):
        return ("",)

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        states = self._check_states(states, 1)
        i2h, h2h = self._proj(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        output = self._get_activation(i2h + h2h, self._activation)
        return output, [output]


class LSTMCell(_GatedCell):
    """Long short-term memory cell; gates in MXNet's order (input, forget, candidate,
    output). States ``[h, c]``."""

    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def _alias(self):
        return "lstm"

    @property
    def _gate_names(self):
        return ("_i", "_f", "_c", "_o")

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        h, c = self._check_states(states, 2)
        i2h, h2h = self._proj(F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        s = F.split(i2h + h2h, num_outputs=4, axis=1)
        ra = self._recurrent_activation
        in_gate, forget_gate = self._get_activation(s[0], ra), self._get_activation(s[1], ra)
        in_transform = self._get_activation(s[2], self._activation)
        out_gate = self._get_activation(s[3], ra)
        next_c = forget_gate * c + in_gate * in_transform
        next_h = out_gate * self._get_activation(next_c, self._activation)
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """Gated recurrent unit with MXNet's formula: ``r = σ(W_ir x + b_ir + W_hr h + b_hr)``,
    ``z = σ(... z ...)``, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``,
    ``h' = (1 - z) * n + z * h``."""

    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def _alias(self):
        return "gru"

    @property
    def _gate_names(self):
        return ("_r", "_z", "_o")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        (h,) = self._check_states(states, 1)
        i2h, h2h = self._proj(F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        i_r, i_z, i_n = F.split(i2h, num_outputs=3, axis=1)
        h_r, h_z, h_n = F.split(h2h, num_outputs=3, axis=1)
        ra = self._recurrent_activation
        reset = self._get_activation(i_r + h_r, ra)
        update = self._get_activation(i_z + h_z, ra)
        new = self._get_activation(i_n + reset * h_n, self._activation)
        next_h = (1 - update) * new + update * h
        return next_h, [next_h]


class SequentialRNNCell(RecurrentCell):
    """Stacks cells: each cell's output is the next one's input; states are concatenated."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._layers = []

    def __repr__(self):
        mods = "\n".join(f"({i}): {c!r}" for i, c in enumerate(self._layers))
        return f"{type(self).__name__}(\n{mods}\n)"

    def add(self, cell):
        """Append a cell."""
        self._layers.append(cell)
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._layers, batch_size)

    def begin_state(self, **kwargs):
        if self._modified:
            raise RuntimeError("the base cell of a modifier cell cannot be called directly")
        return _cells_begin_state(self._layers, **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, p = [], 0
        states = _as_list(states)
        for cell in self._layers:
            if isinstance(cell, BidirectionalCell):
                raise NotImplementedError("BidirectionalCell cannot be stepped; use unroll")
            n = len(cell.state_info())
            inputs, st = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(st)
        return inputs, next_states

    def forward(self, inputs, states):
        return self(inputs, states)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        _check_layout(f"{type(self).__name__}.unroll", layout)
        self.reset()
        inputs, _, batch_size = _format_sequence(length, inputs, layout, None)
        num_cells = len(self._layers)
        begin_state = _get_begin_state(self, begin_state, inputs, batch_size)
        p, next_states = 0, []
        for i, cell in enumerate(self._layers):
            n = len(cell.state_info())
            states = begin_state[p:p + n]
            p += n
            inputs, states = cell.unroll(
                length, inputs=inputs, begin_state=states, layout=layout,
                merge_outputs=None if i < num_cells - 1 else merge_outputs,
                valid_length=valid_length)
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._layers[i]

    def __len__(self):
        return len(self._layers)


class HybridSequentialRNNCell(SequentialRNNCell, HybridBlock):
    """:class:`SequentialRNNCell` whose children are all hybrid cells."""

    def add(self, cell):
        if not isinstance(cell, HybridBlock):
            raise ValueError(f"HybridSequentialRNNCell: {type(cell).__name__} is not a hybrid cell")  # noqa: TRY004
        super().add(cell)

    def hybrid_forward(self, F, inputs, states):
        return self(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Applies dropout (rate ``rate``, shared over ``axes``) to its input; no states."""

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, (int, float)):
            raise TypeError(f"DropoutCell: rate must be a number, got {type(rate).__name__}")
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return f"DropoutCell(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size=0):
        return []

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = _dropout(inputs, self._rate, self._axes)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, NDArray):
            return self.hybrid_forward(nd, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


def _dropout(x, rate, axes=()):
    """Dropout with the mask shared along ``axes`` (training mode only)."""
    from ... import autograd

    if not autograd.is_training() or rate <= 0:
        return x
    if not axes:
        return nd.Dropout(x, p=rate)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    mask = nd.Dropout(nd.ones(shape, ctx=x.context, dtype=x.dtype), p=rate)
    return nd.broadcast_mul(x, mask)


class ModifierCell(HybridRecurrentCell):
    """Base of cells that wrap another cell (dropout, zoneout, residual) and add to it."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise ValueError(f"Cell {base_cell.name} is already modified; one cell cannot be "
                             "modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=nd.zeros, **kwargs):
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each output/state element keeps its previous value with
    probability ``zoneout_outputs`` / ``zoneout_states``."""

    def __init__(self, base_cell, zoneout_outputs=0.0, zoneout_states=0.0):
        if isinstance(base_cell, BidirectionalCell):
            raise ValueError("BidirectionalCell doesn't support zoneout; apply it to each cell")  # noqa: TRY004
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return (f"ZoneoutCell(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
                f"{self.base_cell!r})")

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        from ... import autograd

        cell, p_out, p_st = self.base_cell, self.zoneout_outputs, self.zoneout_states
        next_output, next_states = cell(inputs, states)

        def mask(p, like):
            return F.Dropout(F.ones_like(like), p=p)

        prev = self._prev_output if self._prev_output is not None else F.zeros_like(next_output)
        if autograd.is_training() and p_out != 0:
            output = F.where(mask(p_out, next_output), next_output, prev)
        else:
            output = next_output
        if autograd.is_training() and p_st != 0:
            states = [F.where(mask(p_st, n), n, o) for n, o in zip(next_states, states)]
        else:
            states = next_states
        self._prev_output = output
        return output, states

    def forward(self, inputs, states):
        self._counter += 1
        return self.hybrid_forward(nd, inputs, states)


class ResidualCell(ModifierCell):
    """Adds the input to the base cell's output (``output + inputs``)."""

    def _alias(self):
        return "residual"

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return output + inputs, states

    def forward(self, inputs, states):
        self._counter += 1
        return self.hybrid_forward(nd, inputs, states)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length, inputs=inputs, begin_state=begin_state, layout=layout,
                merge_outputs=merge_outputs, valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        merge = isinstance(outputs, NDArray) if merge_outputs is None else merge_outputs
        inputs, axis, _ = _format_sequence(length, inputs, layout, merge)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(inputs, length, valid_length, axis, merge)
        if merge:
            outputs = outputs + inputs
        else:
            outputs = [o + i for o, i in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forwards and ``r_cell`` backwards over the sequence and concatenates
    their outputs (features: left then right). Only :meth:`unroll` is defined."""

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped. Please use unroll")

    def __repr__(self):
        return (f"BidirectionalCell(forward={self._children['l_cell']!r}, "
                f"backward={self._children['r_cell']!r})")

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        if self._modified:
            raise RuntimeError("the base cell of a modifier cell cannot be called directly")
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        _check_layout("BidirectionalCell.unroll", layout)
        self.reset()
        inputs, axis, batch_size = _format_sequence(length, inputs, layout, False)
        length = len(inputs)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        begin_state = _get_begin_state(self, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children["l_cell"], self._children["r_cell"]
        n = len(l_cell.state_info(batch_size))
        l_out, l_states = l_cell.unroll(length, inputs=inputs, begin_state=begin_state[:n],
                                        layout=layout, merge_outputs=False,
                                        valid_length=valid_length)
        r_out, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                        begin_state=begin_state[n:], layout=layout,
                                        merge_outputs=False, valid_length=valid_length)
        r_out = _reverse_sequences(r_out, length, valid_length)
        if merge_outputs is None:
            merge_outputs = False
        outputs = [nd.concat(lo, ro, dim=1) for lo, ro in zip(l_out, r_out)]
        if merge_outputs:
            outputs = nd.stack(*outputs, axis=axis)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, l_states + r_states
