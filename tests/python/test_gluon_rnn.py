"""gluon.rnn against MXNet 1.9.1: layers (RNN/LSTM/GRU, 1-2 layers, bidirectional, TNC and
NTC, states in and out) match recorded outputs and input/parameter/state gradients
(tests/fixtures/rnn/rnn_layers.npz, ``record_rnn.py``); MXNet's .params files load; cells'
unroll (with valid_length) matches MXNet and the layers; modifier cells; errors; and two
small trainings (a character LSTM language model, a GRU encoder-decoder)."""

import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx.gluon import contrib, rnn

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "rnn")
REF = np.load(os.path.join(HERE, "rnn_layers.npz"))
KEYS = list(REF.files)


def _make(mode, **kw):
    if mode.startswith("rnn_"):
        return rnn.RNN(6, activation=mode[4:], input_size=4, **kw)
    return {"lstm": rnn.LSTM, "gru": rnn.GRU}[mode](6, input_size=4, **kw)


def _load_params(block, key):
    block.initialize()
    params = block._collect_params_with_prefix()
    names = [k[len(key) + 3:] for k in KEYS if k.startswith(key + "|p|")]
    assert sorted(names) == sorted(params), (names, list(params))
    for n in names:
        params[n].set_data(nd.array(REF[f"{key}|p|{n}"]))
    return params


def _run_layer(key, layer):
    params = _load_params(layer, key)
    x = nd.array(REF[f"{key}|x"])
    x.attach_grad()
    n = sum(1 for k in KEYS if k.startswith(key + "|begin"))
    begin = [nd.array(REF[f"{key}|begin{i}"]) for i in range(n)]
    for b in begin:
        b.attach_grad()
    with autograd.record():
        if n:
            y, states = layer(x, begin)
        else:
            y, states = layer(x), []
        loss = (y * y).sum()
        for s in states:
            loss = loss + (s * s * 0.5).sum()
    loss.backward()
    tol = {"rtol": 1e-4, "atol": 1e-5}
    np.testing.assert_allclose(y.asnumpy(), REF[f"{key}|y"], **tol)
    np.testing.assert_allclose(x.grad.asnumpy(), REF[f"{key}|dx"], **tol)
    for i, s in enumerate(states):
        np.testing.assert_allclose(s.asnumpy(), REF[f"{key}|state{i}"], **tol)
        np.testing.assert_allclose(begin[i].grad.asnumpy(), REF[f"{key}|dbegin{i}"], **tol)
    for name, p in params.items():
        np.testing.assert_allclose(p.grad().asnumpy(), REF[f"{key}|g|{name}"], err_msg=name,
                                   **tol)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("layers,bi", [(1, False), (2, True)])
def test_layer_matches_mxnet(mode, layers, bi):
    _run_layer(f"{mode}_{layers}_{bi}", _make(mode, num_layers=layers, bidirectional=bi))


def test_ntc_layers_with_states_in_and_out_match_mxnet():
    _run_layer("lstm_ntc_states", rnn.LSTM(6, num_layers=2, bidirectional=True, layout="NTC",
                                           input_size=4))
    _run_layer("gru_ntc_states", rnn.GRU(6, layout="NTC", input_size=4))


def test_mxnet_params_file_loads_and_saves_with_mxnet_names(tmp_path):
    ref = np.load(os.path.join(HERE, "lstm_bi2.npz"))
    net = rnn.LSTM(5, num_layers=2, bidirectional=True)  # input size deferred
    net.load_parameters(os.path.join(HERE, "lstm_bi2.params"))
    np.testing.assert_allclose(net(nd.array(ref["x"])).asnumpy(), ref["y"], rtol=1e-5,
                               atol=1e-6)
    path = str(tmp_path / "out.params")
    net.save_parameters(path)
    assert sorted(nd.load(path)) == sorted(nd.load(os.path.join(HERE, "lstm_bi2.params")))
    assert "_unfused.1.r_cell.h2h_bias" in nd.load(path)
    names = sorted(net.collect_params())
    assert names[0].endswith("l0_h2h_bias") and any(n.endswith("r1_i2h_weight") for n in names)


def _cell(name):
    return {"lstmcell": lambda: rnn.LSTMCell(6, input_size=4),
            "grucell": lambda: rnn.GRUCell(6, input_size=4),
            "rnncell": lambda: rnn.RNNCell(6, input_size=4),
            "bicell": lambda: rnn.BidirectionalCell(rnn.LSTMCell(6, input_size=4),
                                                    rnn.GRUCell(6, input_size=4)),
            "lstmpcell": lambda: contrib.rnn.LSTMPCell(6, 3, input_size=4)}[name]()


@pytest.mark.parametrize("name", ["lstmcell", "grucell", "rnncell", "bicell", "lstmpcell"])
@pytest.mark.parametrize("valid", [False, True])
def test_cell_unroll_matches_mxnet(name, valid):
    cell = _cell(name)
    cell.initialize()
    params = list(cell.collect_params().values())
    saved = [k for k in KEYS if k.startswith(name + "|p|")]
    assert len(saved) == len(params)
    for p, k in zip(params, saved):
        assert p.name.split("_")[-2:] == k.split("|")[-1].split("_")[-2:], (p.name, k)
        p.set_data(nd.array(REF[k]))
    x = nd.array(REF["cells|x"])
    x.attach_grad()
    vl = nd.array(REF["cells|valid"]) if valid else None
    with autograd.record():
        y, states = cell.unroll(5, x, layout="NTC", merge_outputs=True, valid_length=vl)
        loss = (y * y).sum()
        for s in states:
            loss = loss + (s * s).sum()
    loss.backward()
    key = f"{name}_{'valid' if valid else 'full'}"
    np.testing.assert_allclose(y.asnumpy(), REF[f"{key}|y"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), REF[f"{key}|dx"], rtol=1e-4, atol=1e-5)
    for i, s in enumerate(states):
        np.testing.assert_allclose(s.asnumpy(), REF[f"{key}|state{i}"], rtol=1e-4, atol=1e-5)
    if valid:  # steps past each sequence's length are zero
        lens = REF["cells|valid"].astype(int)
        for b, n in enumerate(lens):
            assert not y.asnumpy()[b, n:].any()


def _copy_cell_weights(layer, cell_stack, projection=False):
    """Copies a layer's l<i>_* parameters into the i-th cell of a stack."""
    lp = layer._collect_params_with_prefix()
    for i, cell in enumerate(cell_stack):
        for suffix in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias") + (
                ("h2r_weight",) if projection else ()):
            getattr(cell, suffix).set_data(lp[f"_unfused.{i}.{suffix}"].data())


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_stacked_cells_unroll_matches_the_layer(mode):
    layer = _make(mode, num_layers=2)
    layer.initialize(mx.init.Uniform(0.5))
    make = {"lstm": rnn.LSTMCell, "gru": rnn.GRUCell,
            "rnn_tanh": lambda h, input_size: rnn.RNNCell(h, "tanh", input_size=input_size)}
    stack = rnn.HybridSequentialRNNCell()
    for ni in (4, 6):
        stack.add(make[mode](6, input_size=ni))
    stack.initialize()
    _copy_cell_weights(layer, list(stack))
    x = nd.random.uniform(-1, 1, shape=(7, 3, 4))
    want = layer(x)
    got, _ = stack.unroll(7, x, layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)


def test_lstm_projection_layer_matches_lstmp_cell():
    layer = rnn.LSTM(6, projection_size=3, input_size=4, layout="NTC")
    layer.initialize(mx.init.Uniform(0.5))
    cell = contrib.rnn.LSTMPCell(6, 3, input_size=4)
    cell.initialize()
    _copy_cell_weights(layer, [cell], projection=True)
    x = nd.random.uniform(-1, 1, shape=(2, 5, 4))
    y, (h, c) = layer(x, layer.begin_state(2))
    assert y.shape == (2, 5, 3) and h.shape == (1, 2, 3) and c.shape == (1, 2, 6)
    got, (r2, c2) = cell.unroll(5, x, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(got.asnumpy(), y.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c2.asnumpy(), c[0].asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r2.asnumpy(), h[0].asnumpy(), rtol=1e-5, atol=1e-6)


def test_layer_sequence_length_masks_and_takes_last_states():
    layer = rnn.GRU(5, bidirectional=True, input_size=3, use_sequence_length=True)
    layer.initialize(mx.init.Uniform(0.5))
    x = nd.random.uniform(-1, 1, shape=(6, 2, 3))
    lens = nd.array([3, 6])
    y, (h,) = layer(x, layer.begin_state(2), lens)
    assert not y.asnumpy()[3:, 0].any()
    # the first sequence alone, cut to its length, gives the same outputs and states
    ref = rnn.GRU(5, bidirectional=True, input_size=3)
    ref.initialize()
    for k, p in ref._collect_params_with_prefix().items():
        p.set_data(layer._collect_params_with_prefix()[k].data())
    y0, (h0,) = ref(x[:3, 0:1], ref.begin_state(1))
    np.testing.assert_allclose(y.asnumpy()[:3, 0:1], y0.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.asnumpy()[:, 0:1], h0.asnumpy(), rtol=1e-5, atol=1e-6)
    too_long = layer(x, layer.begin_state(2), nd.array([7, 2]))[0]
    with pytest.raises(mx.base.MXNetError, match=r"sequence_length\[0\] = 7 is outside"):
        too_long.asnumpy()


def test_errors_name_the_layer_and_shapes():
    layer = rnn.LSTM(4, num_layers=2, input_size=3)
    layer.initialize()
    x = nd.zeros((5, 2, 3))
    bad = [nd.zeros((1, 2, 4)), nd.zeros((2, 2, 4))]
    with pytest.raises(ValueError, match=r"LSTM: invalid recurrent state shape .*Expecting "
                                         r"\(2, 2, 4\) \(num_layers \* directions = 2"):
        layer(x, bad)
    with pytest.raises(ValueError, match="GRU: invalid layout 'CTN'"):
        rnn.GRU(4, layout="CTN")
    with pytest.raises(ValueError, match="LSTMCell.unroll: invalid layout"):
        rnn.LSTMCell(4).unroll(3, x, layout="TCN")
    with pytest.raises(ValueError, match="use_sequence_length=True"):
        layer(x, None, nd.array([1, 2]))
    with pytest.raises(ValueError, match="unroll: length=4 but the inputs have 5 steps"):
        rnn.LSTMCell(4, input_size=3).unroll(4, x, layout="TNC")


def test_begin_state_func_reset_state_info_and_modifier_cells():
    cell = rnn.LSTMCell(3, input_size=2)
    cell.initialize()
    assert cell.state_info(4) == [{"shape": (4, 3), "__layout__": "NC"}] * 2
    ones = cell.begin_state(batch_size=4, func=nd.ones)
    assert [s.asnumpy().tolist() for s in ones] == [np.ones((4, 3)).tolist()] * 2
    x = nd.random.uniform(shape=(4, 5, 2))
    out, _ = cell.unroll(5, x, merge_outputs=False)
    assert isinstance(out, list) and len(out) == 5 and out[0].shape == (4, 3)
    assert cell._counter == 4
    cell.reset()
    assert cell._counter == -1
    # residual adds the input; dropout/zoneout/variational dropout are identities outside
    # training
    res = rnn.ResidualCell(rnn.GRUCell(2, input_size=2))
    res.initialize()
    ro, _ = res.unroll(5, x, merge_outputs=True)
    res.base_cell._modified = False
    bo, _ = res.base_cell.unroll(5, x, merge_outputs=True)
    res.base_cell._modified = True
    np.testing.assert_allclose(ro.asnumpy(), (bo + x).asnumpy(), rtol=1e-6)
    seq = rnn.SequentialRNNCell()
    seq.add(rnn.LSTMCell(3, input_size=2))
    seq.add(rnn.DropoutCell(0.5))
    seq.add(rnn.ZoneoutCell(rnn.GRUCell(3, input_size=3), 0.3, 0.3))
    seq.add(contrib.rnn.VariationalDropoutCell(rnn.RNNCell(3, input_size=3), 0.2, 0.2, 0.2))
    seq.initialize()
    y1, st = seq.unroll(5, x, merge_outputs=True)
    assert y1.shape == (4, 5, 3) and len(st) == 4
    with autograd.record():  # training: dropout and zoneout change the result
        y2, _ = seq.unroll(5, x, merge_outputs=True)
    assert not np.allclose(y1.asnumpy(), y2.asnumpy())
    with pytest.raises(RuntimeError, match="modifier cell"):
        seq[2].base_cell.begin_state(batch_size=2)
    with pytest.raises(NotImplementedError):
        rnn.BidirectionalCell(rnn.LSTMCell(2), rnn.LSTMCell(2))(x[:, 0], [])


def _lm_text(rng, n):
    words = ["the", "cat", "sat", "on", "mat", "dog", "ran", "to", "a", "red", "ball"]
    return " ".join(rng.choice(words) for _ in range(n))


def test_char_lstm_language_model_learns_the_text():
    rng = np.random.default_rng(0)
    text = _lm_text(rng, 600)
    vocab = sorted(set(text))
    ids = np.array([vocab.index(c) for c in text])
    V, T, B = len(vocab), 20, 16

    class LM(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.emb = gluon.nn.Embedding(V, 16)
                self.lstm = rnn.LSTM(48, layout="NTC")
                self.out = gluon.nn.Dense(V, flatten=False)

        def hybrid_forward(self, F, x):
            return self.out(self.lstm(self.emb(x)))

    mx.random.seed(0)
    net = LM()
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.02})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    starts = np.arange(0, len(ids) - T - 1, T)
    for _epoch in range(6):
        for k in range(0, len(starts) - B + 1, B):
            s = starts[k:k + B]
            x = nd.array(np.stack([ids[i:i + T] for i in s]))
            y = nd.array(np.stack([ids[i + 1:i + T + 1] for i in s]))
            with autograd.record():
                loss = loss_fn(net(x), y).mean()
            loss.backward()
            trainer.step(1)
    test = np.array([vocab.index(c) for c in _lm_text(np.random.default_rng(1), 60)])
    n = (len(test) - 1) // T * T
    x = nd.array(test[:n].reshape(-1, T))
    y = nd.array(test[1:n + 1].reshape(-1, T))
    ppl = float(np.exp(loss_fn(net(x), y).mean().asscalar()))
    assert ppl < V / 3, (ppl, V)  # uniform guessing has perplexity V


def test_gru_encoder_decoder_copies_reversed_sequences():
    V, T, B = 6, 5, 32
    rng = np.random.default_rng(0)

    class Seq2Seq(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.emb = gluon.nn.Embedding(V + 1, 16)
                self.enc = rnn.GRU(48, layout="TNC", use_sequence_length=True)
                self.dec = rnn.GRU(48, layout="NTC")
                self.out = gluon.nn.Dense(V, flatten=False)

        def forward(self, src, lens, dec_in):
            s = self.emb(src)
            _, st = self.enc(nd.swapaxes(s, 0, 1), self.enc.begin_state(src.shape[0]), lens)
            out, _ = self.dec(self.emb(dec_in), st)
            return self.out(out)

    def batch():
        lens = rng.integers(2, T + 1, size=B)
        src = rng.integers(1, V, size=(B, T))
        tgt = np.zeros((B, T), dtype=np.int64)
        for b, n in enumerate(lens):
            src[b, n:] = 0
            tgt[b, :n] = src[b, :n][::-1]
        dec_in = np.concatenate([np.full((B, 1), V), tgt[:, :-1]], axis=1)
        mask = (np.arange(T)[None] < lens[:, None]).astype("float32")
        return src, lens, tgt, dec_in, mask

    net = Seq2Seq()
    mx.random.seed(1)
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(120):
        src, lens, tgt, dec_in, mask = batch()
        with autograd.record():
            out = net(nd.array(src), nd.array(lens), nd.array(dec_in))
            loss = (loss_fn(out, nd.array(tgt)) * nd.array(mask.mean(axis=1))).mean()
        loss.backward()
        trainer.step(1)
    src, lens, tgt, dec_in, mask = batch()
    pred = net(nd.array(src), nd.array(lens), nd.array(dec_in)).argmax(axis=2).asnumpy()
    acc = ((pred == tgt) * mask).sum() / mask.sum()
    assert acc > 0.5, acc  # chance is 1 / (V - 1) = 0.2


FUSED = np.load(os.path.join(HERE, "fused_rnn.npz"))


@pytest.mark.parametrize("key,mode", [("lstm", "lstm"), ("lstm_clip", "lstm"), ("gru", "gru"),
                                      ("rnn_relu", "rnn_relu"), ("rnn_tanh", "rnn_tanh")])
def test_fused_rnn_operator_matches_mxnet(key, mode):
    layers, bi, lo, hi = FUSED[f"{key}|cfg"]
    n = sum(1 for k in FUSED.files if k.startswith(key + "|in"))
    xs = [nd.array(FUSED[f"{key}|in{i}"]) for i in range(n)]
    for x in xs:
        x.attach_grad()
    clip = {} if lo < -1e8 else {"lstm_state_clip_min": lo, "lstm_state_clip_max": hi}
    if clip:  # MXNet 1.9.1 clips only under cuDNN: its CPU values are unclipped
        cy = nd.RNN(*xs, state_size=6, num_layers=1, mode=mode, state_outputs=True, **clip)[2]
        assert cy.asnumpy().min() >= lo - 1e-7 and cy.asnumpy().max() <= hi + 1e-7
        clip = {}
    with autograd.record():
        res = nd.RNN(*xs, state_size=6, num_layers=int(layers), bidirectional=bool(bi),
                     mode=mode, state_outputs=True, **clip)
        loss = sum((r * r).sum() for r in res)
    loss.backward()
    assert len(res) == n - 1
    for i, r in enumerate(res):
        np.testing.assert_allclose(r.asnumpy(), FUSED[f"{key}|out{i}"], rtol=1e-4, atol=1e-5)
    for i, x in enumerate(xs):
        np.testing.assert_allclose(x.grad.asnumpy(), FUSED[f"{key}|grad{i}"], rtol=1e-4,
                                   atol=1e-5, err_msg=f"input {i}")
    one = mx.npx.rnn(*xs, state_size=6, num_layers=int(layers), bidirectional=bool(bi),
                     mode=mode, **clip)
    np.testing.assert_allclose(one.asnumpy(), res[0].asnumpy(), rtol=1e-6)


def test_fused_rnn_operator_errors():
    x, h = nd.zeros((3, 2, 4)), nd.zeros((1, 2, 5))
    with pytest.raises(mx.base.MXNetError, match=r"RNN: .*parameters must have shape \(165,\)"):
        nd.RNN(x, nd.zeros((7,)), h, state_size=5, num_layers=1, mode="gru")
    with pytest.raises(mx.base.MXNetError, match="RNN: expects 4 inputs for mode lstm"):
        nd.RNN(x, nd.zeros((7,)), h, state_size=5, num_layers=1, mode="lstm")
    with pytest.raises(mx.base.MXNetError, match="RNN: mode must be"):
        nd.RNN(x, nd.zeros((7,)), h, state_size=5, num_layers=1, mode="elman")
    with pytest.raises(mx.base.MXNetError, match=r"state must have shape \(2, 2, 5\)"):
        nd.RNN(x, nd.zeros((115,)), h, state_size=5, num_layers=2, mode="rnn_tanh")
