"""gluon.data.vision datasets read from files in MXNet's formats, and an end-to-end proof:
a FashionMNIST-format dataset through a ToTensor-like transform and a 2-process DataLoader
trains a softmax regression well above chance."""

import gzip
import os
import struct
import time

import numpy as np
import pytest
from ferromx import autograd, gluon, nd
from ferromx.gluon.data import vision

pytestmark = pytest.mark.timeout(120)


def _write_idx(path, arr):
    dims = arr.shape
    head = struct.pack(">I", 0x800 + len(dims)) + struct.pack(">" + "I" * len(dims), *dims)
    with gzip.open(path, "wb") as f:
        f.write(head + arr.astype(np.uint8).tobytes())


def _synthetic(n, rng):
    """Ten classes of 28x28 images: class k has a bright band at rows 2k..2k+4, plus noise."""
    labels = rng.integers(0, 10, size=n).astype(np.uint8)
    imgs = rng.integers(0, 60, size=(n, 28, 28)).astype(np.uint8)
    for i, k in enumerate(labels):
        imgs[i, 2 * k + 2: 2 * k + 6, 4:24] = 200
    return imgs, labels


def _write_mnist(root, n_train=600, n_test=200, seed=0):
    rng = np.random.default_rng(seed)
    train = _synthetic(n_train, rng)
    test = _synthetic(n_test, rng)
    os.makedirs(root, exist_ok=True)
    _write_idx(os.path.join(root, "train-images-idx3-ubyte.gz"), train[0])
    _write_idx(os.path.join(root, "train-labels-idx1-ubyte.gz"), train[1])
    _write_idx(os.path.join(root, "t10k-images-idx3-ubyte.gz"), test[0])
    _write_idx(os.path.join(root, "t10k-labels-idx1-ubyte.gz"), test[1])
    return train, test


@pytest.mark.parametrize("cls", [vision.MNIST, vision.FashionMNIST])
def test_mnist_reads_idx_files(tmp_path, cls):
    (xtr, ytr), (_, yte) = _write_mnist(str(tmp_path), 20, 7)
    ds = cls(root=str(tmp_path))
    assert len(ds) == 20
    img, label = ds[3]
    assert img.shape == (28, 28, 1) and np.dtype(img.dtype) == np.uint8
    assert np.array_equal(img.asnumpy()[:, :, 0], xtr[3])
    assert label == ytr[3] and isinstance(label, np.int32)
    test = cls(root=str(tmp_path), train=False, transform=lambda d, lab: (d.shape, lab + 1))
    assert len(test) == 7 and test[6] == ((28, 28, 1), yte[6] + 1)


def test_mnist_rejects_corrupt_files(tmp_path):
    _write_mnist(str(tmp_path), 5, 5)
    with gzip.open(tmp_path / "train-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 0x803, 5) + bytes(5))
    with pytest.raises(ValueError, match="idx magic"):
        vision.MNIST(root=str(tmp_path))
    with gzip.open(tmp_path / "train-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 0x801, 9) + bytes(5))
    with pytest.raises(ValueError, match="holds 5 bytes"):
        vision.MNIST(root=str(tmp_path))


def test_missing_files_fail_clearly_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://127.0.0.1:9/")  # nothing listens there
    with pytest.raises(RuntimeError, match="put the file in") as info:
        vision.FashionMNIST(root=str(tmp_path / "fm"))
    assert "train-images-idx3-ubyte.gz" in str(info.value)
    assert "gluon/dataset/fashion-mnist/" in str(info.value)
    with pytest.raises(RuntimeError, match="cifar-10-binary.tar.gz"):
        vision.CIFAR10(root=str(tmp_path / "c10"))


def _cifar_rows(n, label_bytes, rng):
    labels = rng.integers(0, 100, size=(n, label_bytes)).astype(np.uint8)
    pixels = rng.integers(0, 256, size=(n, 3072)).astype(np.uint8)
    return np.concatenate([labels, pixels], axis=1), labels, pixels


def test_cifar10_and_cifar100(tmp_path):
    rng = np.random.default_rng(1)
    root10 = tmp_path / "c10"
    root10.mkdir()
    want = []
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        rows, labels, pixels = _cifar_rows(3, 1, rng)
        (root10 / name).write_bytes(rows.tobytes())
        want.append((labels, pixels))
    train = vision.CIFAR10(root=str(root10))
    assert len(train) == 15
    img, label = train[4]  # second record of data_batch_2
    ref = want[1][1][1].reshape(3, 32, 32).transpose(1, 2, 0)
    assert img.shape == (32, 32, 3) and np.array_equal(img.asnumpy(), ref)
    assert label == want[1][0][1, 0] and isinstance(label, np.int32)
    assert len(vision.CIFAR10(root=str(root10), train=False)) == 3

    root100 = tmp_path / "c100"
    root100.mkdir()
    rows, labels, pixels = _cifar_rows(4, 2, rng)
    (root100 / "train.bin").write_bytes(rows.tobytes())
    (root100 / "test.bin").write_bytes(rows[:2].tobytes())
    coarse = vision.CIFAR100(root=str(root100))
    fine = vision.CIFAR100(root=str(root100), fine_label=True)
    assert [coarse[i][1] for i in range(4)] == labels[:, 0].tolist()
    assert [fine[i][1] for i in range(4)] == labels[:, 1].tolist()
    assert np.array_equal(fine[2][0].asnumpy(), pixels[2].reshape(3, 32, 32).transpose(1, 2, 0))
    (root100 / "test.bin").write_bytes(rows[:2].tobytes()[:-3])
    with pytest.raises(ValueError, match="not a multiple"):
        vision.CIFAR100(root=str(root100), train=False)


def to_tensor(img):
    """ToTensor with nd ops: HWC uint8 -> CHW float32 in [0, 1] (runs in the workers)."""
    return nd.transpose(img.astype("float32"), axes=(2, 0, 1)) / 255.0


def _transform():
    transforms = getattr(vision, "transforms", None)
    if transforms is not None and hasattr(transforms, "ToTensor"):
        return transforms.ToTensor()
    return to_tensor


def test_fashion_mnist_workers_train_softmax_regression(tmp_path):
    start = time.monotonic()
    _write_mnist(str(tmp_path))
    train = vision.FashionMNIST(root=str(tmp_path)).transform_first(_transform())
    test = vision.FashionMNIST(root=str(tmp_path), train=False).transform_first(_transform())
    loader = gluon.data.DataLoader(train, batch_size=50, shuffle=True, num_workers=2)
    net = gluon.nn.Dense(10)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(3):
        for x, y in loader:
            assert x.shape[1:] == (1, 28, 28) and np.dtype(x.dtype) == np.float32
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
    assert len(loader.worker_pids) == 2 and os.getpid() not in loader.worker_pids
    correct = total = 0
    for x, y in gluon.data.DataLoader(test, batch_size=100, num_workers=2):
        pred = net(x).argmax(axis=1).astype("int32")
        correct += int((pred == y.astype("int32")).sum().asscalar())
        total += x.shape[0]
    assert total == 200 and correct / total > 0.9  # chance is 0.1
    assert time.monotonic() - start < 15
