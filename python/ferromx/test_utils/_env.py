"""Environment, platform and data helpers of ``mxnet.test_utils``."""

import bz2
import contextlib
import gzip
import logging
import os
import platform
import struct
import sys
import urllib.error
import urllib.request
import zipfile

import numpy as np

from ..base import MXNetError
from ..context import current_context
from ..runtime import Features
from ..util import get_gpu_count, setenv

_LOG = logging.getLogger(__name__)

__all__ = [
    "DummyIter",
    "discard_stderr",
    "download",
    "download_model",
    "environment",
    "get_bz2_data",
    "get_cifar10",
    "get_im2rec_path",
    "get_mnist",
    "get_mnist_iterator",
    "get_mnist_pkl",
    "get_mnist_ubyte",
    "get_zip_data",
    "has_tvm_ops",
    "is_aarch64_run",
    "is_cd_run",
    "is_op_runnable",
    "list_gpus",
    "retry",
    "set_env_var",
]


class environment(contextlib.ContextDecorator):
    """Set environment variables for a ``with`` block or a decorated function, then restore.

    ``environment('NAME', 'value')`` or ``environment({'A': '1', 'B': None})``; ``None``
    unsets. The previous values (or absence) come back afterwards, also after an exception,
    once all pushed engine work is done.
    """

    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], dict):
            env_vars = dict(args[0])
        elif len(args) == 2:
            env_vars = {args[0]: args[1]}
        else:
            raise ValueError("environment: expecting one dict arg or two args: env var name "
                             "and value")
        for name, value in env_vars.items():
            if not isinstance(name, str) or not (value is None or isinstance(value, str)):
                raise TypeError(f"environment: names and values must be str (or None value), "
                                f"got {name!r}={value!r}")
        self._env_vars = env_vars
        self._snapshots = []

    @staticmethod
    def _apply(env_vars):
        for name, value in env_vars.items():
            setenv(name, value)

    def __enter__(self):
        self._snapshots.append({k: os.environ.get(k) for k in self._env_vars})
        self._apply(self._env_vars)
        return self

    def __exit__(self, *exc):
        from .. import waitall

        try:
            waitall()
        finally:
            self._apply(self._snapshots.pop())
        return False


def set_env_var(key, val, default_val=""):
    """Set environment variable ``key`` to ``val``; returns its previous value (or
    ``default_val`` when it was unset)."""
    prev = os.environ.get(key, default_val)
    os.environ[key] = val
    return prev


def retry(n):
    """Decorator: rerun a stochastic test up to ``n`` times while it raises ``AssertionError``."""
    if n <= 0:
        raise ValueError(f"retry: n must be positive, got {n}")

    def decorate(f):
        import functools

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            from .. import waitall

            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
                    waitall()

        return wrapper

    return decorate


@contextlib.contextmanager
def discard_stderr():
    """Send the process's file descriptor 2 to ``/dev/null`` inside the ``with`` block."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (e.g. captured)
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as sink:
            os.dup2(sink.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def is_cd_run():
    """Whether this runs as part of a Continuous Delivery job (``CD_JOB=1``)."""
    return os.environ.get("CD_JOB", "0") == "1"


def is_aarch64_run():
    """Whether this runs on an aarch64 machine."""
    return platform.machine() == "aarch64"


def has_tvm_ops():
    """Whether TVM-generated operators are built in (never in ferromx)."""
    return Features().is_enabled("TVM_OP") and current_context().device_type != "gpu"


def is_op_runnable():
    """Whether operators can run on the current context (always on CPU; not on GPU)."""
    return current_context().device_type != "gpu"


def list_gpus():
    """The GPU ids usable: ``range(0)`` (ferromx has no GPU backend)."""
    return range(get_gpu_count())


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Fetch ``url`` (``http(s)://`` or ``file://``) to ``fname`` (or its basename) in
    ``dirname``; returns the file name. An existing file is kept unless ``overwrite``.

    Raises ``MXNetError`` naming the URL when every attempt fails (e.g. offline).
    """
    if retries < 0:
        raise ValueError("Number of retries should be at least 0")
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname):
        _LOG.info("%s exists, skipping download", fname)
        return fname
    last = None
    for _ in range(retries + 1):
        try:
            with urllib.request.urlopen(url, timeout=30) as resp, open(fname, "wb") as f:
                while True:
                    chunk = resp.read(1 << 16)
                    if not chunk:
                        break
                    f.write(chunk)
            _LOG.info("downloaded %s into %s successfully", url, fname)
            return fname
        except (urllib.error.URLError, OSError, ValueError) as err:
            last = err
    raise MXNetError(f"download: could not fetch {url!r} after {retries + 1} attempt(s): {last}")


def download_model(model_name, dst_dir="./", meta_info=None):
    """Download a symbolic checkpoint from MXNet's model store; raises ``MXNetError``
    (ferromx has no network model store; load local files with ``mx.sym.load`` and
    ``SymbolBlock.imports``)."""
    raise MXNetError("test_utils.download_model is not available in ferromx: load local "
                     "'-symbol.json' / '.params' files with SymbolBlock.imports")


_MNIST_URL = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/dataset/mnist/"


def _read_mnist(label_path, image_path):
    with gzip.open(label_path) as f:
        struct.unpack(">II", f.read(8))
        label = np.frombuffer(f.read(), dtype=np.int8).astype(np.int32)
    with gzip.open(image_path, "rb") as f:
        _, _, rows, cols = struct.unpack(">IIII", f.read(16))
        image = np.frombuffer(f.read(), dtype=np.uint8).reshape(len(label), rows, cols)
        image = image.reshape(image.shape[0], 1, 28, 28).astype(np.float32) / 255
    return label, image


def get_mnist(path="data"):
    """MNIST as NumPy arrays ``{'train_data', 'train_label', 'test_data', 'test_label'}``,
    downloaded into ``path`` (raises ``MXNetError`` offline)."""
    files = {}
    for name in ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                 "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"):
        files[name] = download(_MNIST_URL + name, dirname=path)
    train_lbl, train_img = _read_mnist(files["train-labels-idx1-ubyte.gz"],
                                       files["train-images-idx3-ubyte.gz"])
    test_lbl, test_img = _read_mnist(files["t10k-labels-idx1-ubyte.gz"],
                                     files["t10k-images-idx3-ubyte.gz"])
    return {"train_data": train_img, "train_label": train_lbl,
            "test_data": test_img, "test_label": test_lbl}


def get_mnist_pkl(path="data"):
    """Download ``mnist.pkl.gz`` into ``path`` (raises ``MXNetError`` offline)."""
    return download("http://deeplearning.net/data/mnist/mnist.pkl.gz", dirname=path)


def get_mnist_ubyte(path="data"):
    """Download and unpack the MNIST ubyte files into ``path``."""
    return get_zip_data(path, "http://data.mxnet.io/mxnet/data/mnist.zip", "mnist.zip")


def get_cifar10(path="data"):
    """Download and unpack CIFAR-10 (recordio files) into ``path``."""
    return get_zip_data(path, "http://data.mxnet.io/mxnet/data/cifar10.zip", "cifar10.zip")


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """MNIST ``mx.io`` iterators; raises ``MXNetError`` (ferromx has no ``mx.io``; use
    ``gluon.data.vision``-style loaders)."""
    raise MXNetError("test_utils.get_mnist_iterator needs mx.io.MNISTIter, which ferromx lacks")


def get_zip_data(data_dir, url, data_origin_name):
    """Download the zip at ``url`` as ``data_dir/data_origin_name`` and extract it there."""
    os.makedirs(data_dir, exist_ok=True)
    zip_path = download(url, fname=data_origin_name, dirname=data_dir)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(data_dir)
    return data_dir


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Download the ``.bz2`` at ``url`` and decompress it to ``data_dir/data_name``."""
    os.makedirs(data_dir, exist_ok=True)
    out = os.path.join(data_dir, data_name)
    if not os.path.exists(out):
        src = download(url, fname=data_origin_name, dirname=data_dir)
        with bz2.open(src, "rb") as fin, open(out, "wb") as fout:
            fout.write(fin.read())
        os.remove(src)
    return out


def get_im2rec_path(home_env="MXNET_HOME"):
    """Path of MXNet's ``tools/im2rec.py`` (under ``$MXNET_HOME`` or the package); raises
    ``IOError`` when absent (ferromx does not ship it)."""
    from .. import __file__ as pkg_file

    root = os.environ.get(home_env, os.path.dirname(pkg_file))
    for cand in (os.path.join(root, "tools", "im2rec.py"),
                 os.path.join(root, "..", "..", "tools", "im2rec.py")):
        if os.path.isfile(cand):
            return cand
    raise OSError("Could not find path to tools/im2rec.py")


class DummyIter:
    """An iterator that returns the first batch of ``real_iter`` forever (speed tests).

    ``real_iter`` is a data iterator (anything ``next()`` or ``iter()`` works on); its
    ``provide_data``, ``provide_label`` and ``batch_size`` are copied when present.
    """

    def __init__(self, real_iter):
        self.real_iter = real_iter
        self.provide_data = getattr(real_iter, "provide_data", None)
        self.provide_label = getattr(real_iter, "provide_label", None)
        self.batch_size = getattr(real_iter, "batch_size", None)
        try:
            self.the_batch = next(real_iter)
        except TypeError:
            self.the_batch = next(iter(real_iter))

    def __iter__(self):
        return self

    def reset(self):
        """Nothing to reset: the same batch is returned forever."""

    def next(self):
        """The first batch of the real iterator (never raises ``StopIteration``)."""
        return self.the_batch

    __next__ = next
