"""``mx.io.CSVIter``: batches read from CSV files, as MXNet 1.9.1's C++ ``CSVIter``."""

import numpy as np

from .. import ndarray as nd
from .io import DataBatch, DataDesc, DataIter

__all__ = ["CSVIter"]


def _read_csv(path, shape, what):
    try:
        rows = np.loadtxt(path, delimiter=",", ndmin=2, dtype=np.float64)
    except (OSError, ValueError) as err:
        raise ValueError(f"CSVIter: cannot read {what} {path!r}: {err}") from err
    width = int(np.prod(shape))
    if rows.shape[1] != width:
        raise ValueError(
            f"CSVIter: {what} {path!r} has {rows.shape[1]} values per row but "
            f"{what.split('_')[0]}_shape {tuple(shape)} needs {width}")
    return rows.reshape((rows.shape[0],) + tuple(shape))


class CSVIter(DataIter):
    """Iterate over the rows of ``data_csv`` (and ``label_csv``) in batches.

    Parameters
    ----------
    data_csv : str
        CSV file of the data; each row holds ``prod(data_shape)`` values.
    data_shape : tuple of int
        Shape of one example.
    label_csv : str, optional
        CSV file of the labels (all zeros when omitted).
    label_shape : tuple of int
        Shape of one label (default ``(1,)``, which gives labels of shape ``(batch_size,)``).
    batch_size : int
    round_batch : bool
        When true (the default), the last incomplete batch is filled from the start of the
        file and the next epoch starts after the rows used as filler (MXNet's behaviour);
        when false, the filler rows are those left over from the previous batch.  ``pad``
        counts the filler either way.
    dtype : {'float32', 'int32', 'int64'}, optional
        Type of the data and labels (default float32).
    data_name, label_name : str
        Names in ``provide_data``/``provide_label``.
    """

    def __init__(self, data_csv, data_shape, label_csv=None, label_shape=(1,), batch_size=1,
                 round_batch=True, dtype=None, data_name="data", label_name="softmax_label",
                 **_ignored):
        super().__init__(batch_size)
        if batch_size < 1:
            raise ValueError(f"CSVIter: batch_size must be positive, got {batch_size}")
        self._dtype = np.dtype(dtype or "float32")
        self._data = _read_csv(data_csv, data_shape, "data_csv").astype(self._dtype)
        n = self._data.shape[0]
        if label_csv is None:
            self._label = np.zeros((n,) + tuple(label_shape), dtype=self._dtype)
        else:
            self._label = _read_csv(label_csv, label_shape, "label_csv").astype(self._dtype)
            if self._label.shape[0] != n:
                raise ValueError(f"CSVIter: data_csv has {n} rows but label_csv has "
                                 f"{self._label.shape[0]}")
        if tuple(label_shape) == (1,):
            self._label = self._label.reshape(n)
        if n < batch_size:
            raise ValueError(f"CSVIter: number of rows ({n}) must be at least batch_size "
                             f"({batch_size})")
        self._round = bool(round_batch)
        self._pos = 0
        self._overflow = 0
        self._buf_data = np.zeros((batch_size,) + self._data.shape[1:], dtype=self._dtype)
        self._buf_label = np.zeros((batch_size,) + self._label.shape[1:], dtype=self._dtype)
        self._buf_index = np.zeros(batch_size, dtype=np.uint64)
        self._batch = None
        self.provide_data = [DataDesc(data_name, self._buf_data.shape, self._dtype)]
        self.provide_label = [DataDesc(label_name, self._buf_label.shape, self._dtype)]

    def reset(self):
        if self._round and self._overflow:
            self._overflow = 0
        else:
            self._pos = 0

    def _fill(self, top, start, count):
        rows = slice(start, start + count)
        self._buf_data[top:top + count] = self._data[rows]
        self._buf_label[top:top + count] = self._label[rows]
        self._buf_index[top:top + count] = np.arange(start, start + count, dtype=np.uint64)

    def iter_next(self):
        if self._overflow:
            return False
        n, bs = self._data.shape[0], self.batch_size
        top = min(bs, n - self._pos)
        if top <= 0:
            return False
        self._fill(0, self._pos, top)
        self._pos += top
        pad = 0
        if top < bs:
            pad = bs - top
            if self._round:
                self._fill(top, 0, pad)
                self._pos = pad
                self._overflow = pad
        self._batch = DataBatch(
            [nd.array(self._buf_data.copy(), dtype=self._dtype)],
            [nd.array(self._buf_label.copy(), dtype=self._dtype)],
            pad=pad, index=self._buf_index.copy())
        return True

    def next(self):
        if self.iter_next():
            return self._batch
        raise StopIteration

    def getdata(self):
        return self._batch.data

    def getlabel(self):
        return self._batch.label

    def getpad(self):
        return self._batch.pad

    def getindex(self):
        return self._batch.index
