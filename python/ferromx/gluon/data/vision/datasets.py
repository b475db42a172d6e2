"""MNIST, FashionMNIST, CIFAR10 and CIFAR100 (``gluon.data.vision.datasets``), as MXNet 1.9.1.

The files are read from ``root`` under MXNet's names (``train-images-idx3-ubyte.gz`` ...,
``data_batch_1.bin`` ... ``test_batch.bin``, ``train.bin``/``test.bin``).  Missing files are
downloaded from the Gluon repository (``$MXNET_GLUON_REPO``); when that fails (offline) the
error says which files to place in ``root``.  Files already in ``root`` are used as they are,
without MXNet's SHA-1 check (MXNet re-downloads a file whose hash differs), so subsets and
generated files in the same format work.

``ImageRecordDataset``, ``ImageFolderDataset`` and ``ImageListDataset`` come from the image
package (``image_datasets``) and are looked up here on first use.
"""

import gzip
import importlib
import os
import struct
import tarfile

import numpy as np

from .... import base
from .... import ndarray as nd
from ..dataset import Dataset

__all__ = ["CIFAR10", "CIFAR100", "MNIST", "FashionMNIST"]

_DEFAULT_REPO = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"


def _root(name):
    return os.path.join(base.data_dir(), "datasets", name)


_MNIST_ROOT = _root("mnist")
_FASHION_ROOT = _root("fashion-mnist")
_CIFAR10_ROOT = _root("cifar10")
_CIFAR100_ROOT = _root("cifar100")


def _repo_file_url(namespace, filename):
    repo = os.environ.get("MXNET_GLUON_REPO", _DEFAULT_REPO)
    if not repo.endswith("/"):
        repo += "/"
    return f"{repo}{namespace}/{filename}"


def _fetch(url, path):
    """Download ``url`` into the folder ``path`` (``gluon.utils.download`` when present)."""
    from ... import utils as gutils

    download = getattr(gutils, "download", None)
    if download is not None:
        return download(url, path=path)
    import urllib.request

    fname = os.path.join(path, url.split("/")[-1])
    tmp = fname + ".part"
    with urllib.request.urlopen(url, timeout=30) as resp, open(tmp, "wb") as out:
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)
    os.replace(tmp, fname)
    return fname


def _ensure_file(root, namespace, filename, dataset):
    path = os.path.join(root, filename)
    if os.path.exists(path):
        return path
    url = _repo_file_url("gluon/dataset/" + namespace, filename)
    try:
        return _fetch(url, root)
    except Exception as err:
        raise RuntimeError(
            f"{dataset}: {filename!r} is not in {root!r} and downloading it from {url} "
            f"failed ({type(err).__name__}: {err}). Without network access, put the file "
            f"in {root!r}.") from err


class _DownloadedDataset(Dataset):
    """A dataset held in memory: ``self._data`` (NDArray) and ``self._label`` (NumPy)."""

    def __init__(self, root, transform):
        self._transform = transform
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        os.makedirs(self._root, exist_ok=True)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError


def _read_idx(path, what, ndim):
    with gzip.open(path, "rb") as fin:
        head = fin.read(4 + 4 * ndim)
        if len(head) != 4 + 4 * ndim:
            raise ValueError(f"{what}: {path!r} is too short for an idx header")
        magic = struct.unpack(">I", head[:4])[0]
        if magic != 0x800 + ndim:
            raise ValueError(f"{what}: {path!r} has idx magic {magic:#x}, expected "
                             f"{0x800 + ndim:#x} (unsigned bytes, {ndim} dimensions)")
        dims = struct.unpack(">" + "I" * ndim, head[4:])
        body = fin.read()
    if len(body) != int(np.prod(dims)):
        raise ValueError(f"{what}: {path!r} holds {len(body)} bytes of data, its header "
                         f"announces {dims}")
    return np.frombuffer(body, dtype=np.uint8).reshape(dims)


class MNIST(_DownloadedDataset):
    """MNIST handwritten digits: samples ``(image, label)``, the image a ``(28, 28, 1)``
    uint8 NDArray, the label an ``int32`` NumPy scalar.

    Parameters
    ----------
    root : str
        Folder of the idx-ubyte ``.gz`` files (default ``$MXNET_HOME/datasets/mnist``).
    train : bool
        Training set (``train-*``) or test set (``t10k-*``).
    transform : callable, optional
        ``transform(data, label)`` applied to each sample.
    """

    _namespace = "mnist"
    _train_files = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
    _test_files = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")

    def __init__(self, root=_MNIST_ROOT, train=True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _get_data(self):
        name = type(self).__name__
        data_name, label_name = self._train_files if self._train else self._test_files
        data_file = _ensure_file(self._root, self._namespace, data_name, name)
        label_file = _ensure_file(self._root, self._namespace, label_name, name)
        label = _read_idx(label_file, name, 1).astype(np.int32)
        data = _read_idx(data_file, name, 3)
        if data.shape[0] != label.shape[0]:
            raise ValueError(f"{name}: {data.shape[0]} images but {label.shape[0]} labels")
        self._data = nd.array(data.reshape(data.shape + (1,)), dtype="uint8")
        self._label = label


class FashionMNIST(MNIST):
    """Zalando's FashionMNIST, a drop-in replacement of :class:`MNIST` (same files and
    samples; default root ``$MXNET_HOME/datasets/fashion-mnist``)."""

    _namespace = "fashion-mnist"

    def __init__(self, root=_FASHION_ROOT,
                 train=True, transform=None):
        super().__init__(root, train, transform)


class CIFAR10(_DownloadedDataset):
    """CIFAR10: samples ``(image, label)``, the image a ``(32, 32, 3)`` uint8 NDArray.

    Parameters
    ----------
    root : str
        Folder of ``data_batch_1.bin`` ... ``data_batch_5.bin`` and ``test_batch.bin``
        (default ``$MXNET_HOME/datasets/cifar10``); when any is missing the archive
        ``cifar-10-binary.tar.gz`` is downloaded and extracted there.
    train : bool
    transform : callable, optional
        ``transform(data, label)`` applied to each sample.
    """

    _namespace = "cifar10"
    _archive = "cifar-10-binary.tar.gz"
    _train_files = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
    _test_files = ("test_batch.bin",)
    _label_bytes = 1

    def __init__(self, root=_CIFAR10_ROOT, train=True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _label_column(self):
        return 0

    def _read_batch(self, path):
        width = 3072 + self._label_bytes
        with open(path, "rb") as fin:
            raw = fin.read()
        if len(raw) % width:
            raise ValueError(f"{type(self).__name__}: {path!r} has {len(raw)} bytes, not a "
                             f"multiple of the {width}-byte record")
        rows = np.frombuffer(raw, dtype=np.uint8).reshape(-1, width)
        return rows[:, self._label_bytes:], rows[:, self._label_column()].astype(np.int32)

    def _get_data(self):
        files = self._train_files + self._test_files
        if any(not os.path.exists(os.path.join(self._root, f)) for f in files):
            archive = _ensure_file(self._root, self._namespace, self._archive,
                                   type(self).__name__)
            with tarfile.open(archive) as tar:
                try:
                    tar.extractall(self._root, filter="data")
                except TypeError:  # Python without extraction filters
                    tar.extractall(self._root)
        names = self._train_files if self._train else self._test_files
        parts = [self._read_batch(os.path.join(self._root, n)) for n in names]
        data = np.concatenate([p[0] for p in parts]).reshape(-1, 3, 32, 32)
        # CHW records become HWC images (on the engine).
        self._data = nd.transpose(nd.array(data, dtype="uint8"), axes=(0, 2, 3, 1))
        self._label = np.concatenate([p[1] for p in parts])


class CIFAR100(CIFAR10):
    """CIFAR100: as :class:`CIFAR10` with ``train.bin``/``test.bin`` (archive
    ``cifar-100-binary.tar.gz``); ``fine_label`` picks the 100 fine classes instead of the
    20 coarse ones."""

    _namespace = "cifar100"
    _archive = "cifar-100-binary.tar.gz"
    _train_files = ("train.bin",)
    _test_files = ("test.bin",)
    _label_bytes = 2

    def __init__(self, root=_CIFAR100_ROOT,
                 fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_column(self):
        return 1 if self._fine_label else 0


_IMAGE_DATASETS = ("ImageRecordDataset", "ImageFolderDataset", "ImageListDataset")


def __getattr__(name):
    if name in _IMAGE_DATASETS:
        try:
            module = importlib.import_module("..image_datasets", __name__)
        except ImportError as err:
            raise AttributeError(f"gluon.data.vision.datasets.{name} needs the image package "
                                 f"(gluon.data.vision.image_datasets): {err}") from err
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
