"""``gluon.model_zoo.vision`` against MXNet 1.9.1.

``tests/fixtures/model_zoo/models.json.gz`` (from ``record_model_zoo.py``, MXNet 1.9.1)
holds, for every model, the parameter names (prefix stripped), shapes before
initialization and grad_req, the ``save_parameters`` names and the shapes after a
forward pass, and the output shape.
"""

import gzip
import json
import logging
import os
import zipfile

import numpy as np
import pytest
from ferromx import autograd, gluon
from ferromx import ndarray as nd
from ferromx.gluon.model_zoo import model_store, vision

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "model_zoo", "models.json.gz")
with gzip.open(FIX, "rt") as _f:
    MODELS = json.load(_f)["models"]

# One or two models of each family, cheap enough to run forward (shape inference) in a
# fast test (all 34 were checked this way once; the rest differ only in depth or width).
FORWARD = [
    "resnet18_v1",
    "resnet18_v2",
    "resnet50_v2",
    "vgg11_bn",
    "alexnet",
    "densenet121",
    "squeezenet1.0",
    "squeezenet1.1",
    "inceptionv3",
    "mobilenet0.25",
    "mobilenet1.0",
    "mobilenetv2_0.25",
    "mobilenetv2_1.0",
]

UNREACHABLE = "http://127.0.0.1:9/"


def _have_conv_ops():
    return all(hasattr(nd, op) for op in ("Convolution", "Pooling", "BatchNorm"))


def test_every_mxnet_model_is_available():
    assert sorted(MODELS) == sorted(vision._MODELS)
    assert len(MODELS) == 34
    with pytest.raises(ValueError, match="resnet18_v1"):
        vision.get_model("resnet17")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_parameter_names_match_mxnet(name):
    rec = MODELS[name]
    net = vision.get_model(name, classes=rec["classes"])
    got = [
        [key[len(net.prefix) :], list(p.shape), p.grad_req]
        for key, p in net.collect_params().items()
    ]
    assert got == rec["params"]
    structural = list(net._collect_params_with_prefix())
    assert structural == [key for key, _ in rec["structural"]]


@pytest.mark.parametrize("name", FORWARD)
def test_inferred_shapes_match_mxnet(name):
    if not _have_conv_ops():
        pytest.skip("convolution operators are not available yet")
    rec = MODELS[name]
    net = vision.get_model(name, classes=rec["classes"])
    net.initialize()
    out = net(nd.zeros(tuple(rec["input_shape"])))
    assert list(out.shape) == rec["output_shape"]
    got = [[key, list(p.shape)] for key, p in net._collect_params_with_prefix().items()]
    assert got == rec["structural"]


def _write_mxnet_style_file(name, root, seed=0):
    """Write ``<root>/<name>-<hash>.params`` with the recorded names and shapes."""
    rng = np.random.RandomState(seed)
    arrays = {
        key: nd.array(rng.uniform(-1, 1, shape).astype(np.float32))
        for key, shape in MODELS[name]["structural"]
    }
    path = os.path.join(root, f"{name}-{model_store.short_hash(name)}.params")
    nd.save(path, arrays)
    return path, arrays


def test_pretrained_loads_local_file(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MXNET_GLUON_REPO", UNREACHABLE)
    _, arrays = _write_mxnet_style_file("mobilenet0.25", str(tmp_path))
    # The published file has 1000 classes; the recorded shapes use 10.
    with caplog.at_level(logging.WARNING):
        net = vision.get_model("mobilenet0.25", pretrained=True, root=str(tmp_path), classes=10)
    assert "local file" in caplog.text
    params = net._collect_params_with_prefix()
    assert set(params) == set(arrays)
    for key, value in arrays.items():
        np.testing.assert_array_equal(params[key].data().asnumpy(), value.asnumpy())
    assert params["features.0.weight"].shape == (8, 3, 3, 3)


def test_pretrained_missing_file_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_GLUON_REPO", UNREACHABLE)
    with pytest.raises(OSError, match=r"resnet18_v1.*resnet18_v1-a0666292\.params.*downloaded"):
        vision.resnet18_v1(pretrained=True, root=str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_pretrained_download_from_mirror(tmp_path, monkeypatch):
    # A mirror (file:// URL) serving the zip: it is fetched and unpacked, then rejected
    # because its content is not the published file's.
    name = "squeezenet1.1"
    mirror = tmp_path / "mirror" / "gluon" / "models"
    mirror.mkdir(parents=True)
    path, _ = _write_mxnet_style_file(name, str(mirror))
    file_name = os.path.basename(path)
    with zipfile.ZipFile(str(mirror / (file_name[: -len(".params")] + ".zip")), "w") as zf:
        zf.write(path, file_name)
    monkeypatch.setenv("MXNET_GLUON_REPO", (tmp_path / "mirror").as_uri())
    root = tmp_path / "models"
    with pytest.raises(ValueError, match="different hash"):
        model_store.get_model_file(name, root=str(root))
    assert os.listdir(root) == [file_name]  # no temporary files left behind
    model_store.purge(str(root))
    assert os.listdir(root) == []


def test_model_store_names():
    assert model_store.short_hash("resnet50_v2") == "ecdde353"
    with pytest.raises(ValueError, match="not available"):
        model_store.short_hash("resnet19_v1")
    default = model_store.default_root()
    assert default.endswith("models")


def test_thumbnail_resnet_and_training_step():
    if not _have_conv_ops():
        pytest.skip("convolution operators are not available yet")
    net = vision.get_resnet(1, 18, classes=4, thumbnail=True)
    net.initialize()
    x = nd.array(np.random.RandomState(0).uniform(size=(2, 3, 16, 16)).astype(np.float32))
    label = nd.array([1, 3])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        loss = loss_fn(net(x), label)
    loss.backward()
    trainer.step(2)
    assert net.features[0].weight.shape == (64, 3, 3, 3)
