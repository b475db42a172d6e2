"""mx.mod.Module over the symbol executor: bind, init_params, fit, score, predict, and
checkpoints in MXNet's format (mx.model)."""

import logging

import ferromx as mx
import numpy as np


def _data():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (200, 3)).astype(np.float32)
    y = (x @ np.array([[1.5, -2.0, 0.5]], np.float32).T + 0.3).astype(np.float32)
    return x, y, mx.io.NDArrayIter(x, y, batch_size=20, label_name="lin_label")


def _graph():
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc")
    return fc, mx.sym.mean(mx.sym.square(fc - mx.sym.var("lin_label")))


def test_fit_score_predict_checkpoint(tmp_path):
    _x, y, it = _data()
    fc, loss = _graph()
    mod = mx.mod.Module(loss, data_names=["data"], label_names=["lin_label"],
                        logger=logging.getLogger("quiet"))
    mod.fit(it, num_epoch=40, optimizer="sgd", optimizer_params={"learning_rate": 0.5},
            eval_metric="loss")
    arg, aux = mod.get_params()
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), [[1.5, -2.0, 0.5]], atol=0.05)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), [0.3], atol=0.05)
    assert mod.score(it, "loss")[0][1] < 1e-3
    assert mod.output_shapes == [(loss.list_outputs()[0], ())]

    pred = mx.mod.Module(fc, data_names=["data"], label_names=None)
    pred.bind(data_shapes=it.provide_data, for_training=False)
    pred.set_params(arg, aux)
    out = pred.predict(it)
    assert out.shape == (200, 1)
    np.testing.assert_allclose(out.asnumpy(), y, atol=0.1)

    prefix = str(tmp_path / "lin")
    mod.save_checkpoint(prefix, 3)
    sym, arg2, _ = mx.model.load_checkpoint(prefix, 3)
    assert sym.tojson() == loss.tojson()
    np.testing.assert_array_equal(arg2["fc_weight"].asnumpy(), arg["fc_weight"].asnumpy())
    back = mx.mod.Module.load(prefix, 3, data_names=["data"], label_names=["lin_label"])
    back.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert abs(back.score(it, "loss")[0][1] - mod.score(it, "loss")[0][1]) < 1e-7


def test_forward_backward_update_by_hand():
    _, _, it = _data()
    _, loss = _graph()
    mod = mx.mod.Module(loss, data_names=["data"], label_names=["lin_label"],
                        fixed_param_names=["fc_bias"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(mx.init.Zero())
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 1.0),))
    batch = next(iter(it))
    mod.forward(batch, is_train=True)
    first = float(mod.get_outputs()[0].asscalar())
    mod.backward()
    mod.update()
    mod.forward(batch, is_train=False)
    assert float(mod.get_outputs()[0].asscalar()) < first
    arg, _ = mod.get_params()
    assert float(arg["fc_bias"].asscalar()) == 0.0  # fixed
