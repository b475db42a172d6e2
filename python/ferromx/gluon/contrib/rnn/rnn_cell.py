"""Contributed recurrent cells: variational dropout (one mask per sequence) and the LSTM
with a projected hidden state (LSTMP), following MXNet 1.9.1's ``gluon.contrib.rnn``."""

from .... import autograd
from .... import ndarray as nd
from ...rnn.rnn_cell import BidirectionalCell, HybridRecurrentCell, ModifierCell, _as_list

__all__ = ["LSTMPCell", "VariationalDropoutCell"]


class VariationalDropoutCell(ModifierCell):
    """Dropout on the inputs, the first state and the outputs of ``base_cell`` with masks
    drawn once per sequence (Gal & Ghahramani, 2016) and reused at every step until
    :meth:`reset` (which ``unroll`` calls)."""

    def __init__(self, base_cell, drop_inputs=0.0, drop_states=0.0, drop_outputs=0.0):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise ValueError("BidirectionalCell doesn't support variational state dropout; "
                             "apply VariationalDropoutCell to each cell instead")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return "vardrop"

    def reset(self):
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def __repr__(self):
        return (f"VariationalDropoutCell(p_in={self.drop_inputs}, p_state={self.drop_states}, "
                f"p_out={self.drop_outputs}, {self.base_cell!r})")

    @staticmethod
    def _mask(p, like):
        return nd.Dropout(nd.ones_like(like), p=p)

    def hybrid_forward(self, F, inputs, states):
        states = _as_list(states)
        training = autograd.is_training()
        if training and self.drop_states:
            if self.drop_states_mask is None:
                self.drop_states_mask = self._mask(self.drop_states, states[0])
            states = [states[0] * self.drop_states_mask, *states[1:]]
        if training and self.drop_inputs:
            if self.drop_inputs_mask is None:
                self.drop_inputs_mask = self._mask(self.drop_inputs, inputs)
            inputs = inputs * self.drop_inputs_mask
        output, states = self.base_cell(inputs, states)
        if training and self.drop_outputs:
            if self.drop_outputs_mask is None:
                self.drop_outputs_mask = self._mask(self.drop_outputs, output)
            output = output * self.drop_outputs_mask
        return output, states

    def forward(self, inputs, states):
        self._counter += 1
        return self.hybrid_forward(nd, inputs, states)


class LSTMPCell(HybridRecurrentCell):
    """LSTM whose recurrent state is the projection ``r = W_hr (o * tanh(c))`` of size
    ``projection_size`` (Sak et al., 2014). States ``[r, c]``; parameters ``i2h_weight``,
    ``h2h_weight`` (4 * hidden, projection), ``h2r_weight``, ``i2h_bias``, ``h2h_bias``."""

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        g = 4 * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(g, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(g, projection_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(g,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(g,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def _alias(self):
        return "lstmp"

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def infer_shape(self, x, *args):
        self.i2h_weight.shape = (4 * self._hidden_size, x.shape[-1])

    def __repr__(self):
        shape = self.i2h_weight.shape
        return (f"LSTMPCell({shape[1] if shape[1] else None} -> {shape[0]}, "
                f"projection={self._projection_size})")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        r, c = _as_list(states)
        g = 4 * self._hidden_size
        gates = (F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=g)
                 + F.FullyConnected(r, h2h_weight, h2h_bias, num_hidden=g))
        i, f, t, o = F.split(gates, num_outputs=4, axis=1)
        next_c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(t)
        hidden = F.sigmoid(o) * F.tanh(next_c)
        next_r = F.FullyConnected(hidden, h2r_weight, None, num_hidden=self._projection_size,
                                  no_bias=True)
        return next_r, [next_r, next_c]
