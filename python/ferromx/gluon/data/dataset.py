"""Datasets (``mx.gluon.data.dataset``), following MXNet 1.9.1."""

import os

import numpy as np

from ... import ndarray as nd
from ...ndarray import NDArray
from .sampler import FilterSampler, SequentialSampler

__all__ = ["ArrayDataset", "Dataset", "RecordFileDataset", "SimpleDataset"]


class Dataset:
    """Abstract dataset: implement ``__getitem__`` and ``__len__``."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn):
        """Return a dataset of the samples for which ``fn(sample)`` is true."""
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """Return contiguous shard ``index`` of ``num_shards`` (sizes differ by at most 1)."""
        if not 0 <= index < num_shards:
            raise ValueError(f"Shard index of out bound: {index} out of {num_shards}")
        length = len(self)
        shard_len, rest = divmod(length, num_shards)
        start = shard_len * index + min(index, rest)
        end = start + shard_len + (1 if index < rest else 0)
        return _SampledDataset(self, SequentialSampler(end - start, start))

    def take(self, count):
        """Return a dataset of the first ``count`` samples (all when ``None`` or too big)."""
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler):
        """Return a dataset of the samples at the indices produced by ``sampler``."""
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy=True):
        """Return a dataset whose samples are ``fn(*sample)`` (``fn(sample)`` for non-tuples).

        With ``lazy=False`` every sample is transformed now.
        """
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn, lazy=True):
        """Like :meth:`transform` but apply ``fn`` to the first element of each sample only."""
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset wrapping a list (or anything indexable with a length)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    """Apply ``fn`` to the first element of a sample (a picklable closure)."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


def _length(data):
    return int(data.shape[0]) if isinstance(data, NDArray) else len(data)


class ArrayDataset(Dataset):
    """A dataset zipping arrays of equal length: sample ``i`` is ``(a[i], b[i], ...)``.

    Arrays may be NDArrays, NumPy arrays or lists.  When every array is an NDArray or a
    NumPy array, the DataLoader's default batching takes a whole batch with one native
    gather per array (``nd.take``) instead of stacking samples one by one.  Elements of
    1-D arrays are returned as NumPy scalars, as in MXNet.
    """

    def __init__(self, *args):
        if not args:
            raise ValueError("Needs at least 1 arrays")
        self._length = _length(args[0])
        self._data = []
        for i, data in enumerate(args):
            if _length(data) != self._length:
                raise ValueError(
                    f"All arrays must have the same length; array[0] has length {self._length} "
                    f"while array[{i}] has {_length(data)}."
                )
            self._data.append(data)
        self._host_copies = [None] * len(self._data)

    def _field_item(self, field, idx):
        data = self._data[field]
        if isinstance(data, NDArray) and data.ndim == 1:
            host = self._host_copies[field]
            if host is None:
                host = data.asnumpy()
                self._host_copies[field] = host
            return host[idx]
        return data[idx]

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._field_item(0, idx)
        return tuple(self._field_item(i, idx) for i in range(len(self._data)))

    def __len__(self):
        return self._length

    def _gather_batch(self, indices):
        """Return the batch at ``indices`` with one gather per array, or ``None`` if some
        array is neither an NDArray nor a NumPy array."""
        if not all(isinstance(d, (NDArray, np.ndarray)) for d in self._data):
            return None
        host_idx = np.asarray(indices, dtype=np.int64)
        out = []
        for data in self._data:
            if isinstance(data, NDArray):
                idx = nd.array(host_idx, ctx=data.context, dtype="int64")
                out.append(nd.take(data, idx, axis=0))
            else:
                part = data[host_idx]
                out.append(nd.array(part, dtype=part.dtype))
        return out[0] if len(out) == 1 else out


class RecordFileDataset(Dataset):
    """The records of a RecordIO file: sample ``i`` is the raw ``bytes`` of record ``i`` of
    ``filename``, read through the ``.idx`` file next to it (same stem)."""

    def __init__(self, filename):
        from ... import recordio

        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)
