"""``mx.io.ImageRecordIter``: batches from an image RecordIO file, decoded and augmented
natively, one call per batch, on ``preprocess_threads`` threads with the GIL released.

Supported: ``path_imgrec`` (+ optional ``path_imgidx``), ``data_shape`` (C, H, W),
``batch_size``, ``label_width``, ``shuffle``, ``seed``, ``resize`` (shorter edge),
``rand_crop``, ``rand_mirror``, ``mean_r/g/b``, ``std_r/g/b``, ``scale``,
``preprocess_threads``, ``round_batch``, ``data_name``, ``label_name``, ``dtype``.

Like MXNet's iterator, the next batch is prepared in the background (one background thread
reads the records and makes the native call) while the current one is used. The random crop
positions and flips are drawn on the calling thread, in batch order, from ``seed``.
"""

import contextlib
import os
import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import _native
from .. import ndarray as nd
from ..image import _records

try:
    from . import DataBatch, DataIter  # the io package's classes, when present
except ImportError:  # pragma: no cover - until ferromx.io provides them
    from ..image._iter import DataBatch, DataIter

__all__ = ["ImageRecordIter"]


class ImageRecordIter(DataIter):
    """Image RecordIO iterator (MXNet's C++ ``ImageRecordIter``, the common options)."""

    def __init__(self, path_imgrec, data_shape, batch_size, path_imgidx=None, label_width=1,
                 shuffle=False, seed=0, resize=-1, rand_crop=False, rand_mirror=False,
                 mean_r=0.0, mean_g=0.0, mean_b=0.0, std_r=1.0, std_g=1.0, std_b=1.0,
                 scale=1.0, preprocess_threads=4, round_batch=True, data_name="data",
                 label_name="softmax_label", dtype="float32", **kwargs):
        super().__init__()
        if len(data_shape) != 3 or data_shape[0] not in (1, 3):
            raise ValueError(f"ImageRecordIter: data_shape must be (1 or 3, H, W), got {data_shape}")
        if not os.path.isfile(path_imgrec):
            raise ValueError(f"ImageRecordIter: cannot open {path_imgrec!r}")
        self._reader = _records._IndexedRecords(path_imgidx, path_imgrec)
        self.data_shape, self.batch_size = tuple(data_shape), batch_size
        self.label_width, self.shuffle, self.resize = label_width, shuffle, resize
        self.rand_crop, self.rand_mirror, self.round_batch = rand_crop, rand_mirror, round_batch
        self.preprocess_threads = max(1, int(preprocess_threads))
        self.dtype = dtype
        c = data_shape[0]
        mean = [mean_r, mean_g, mean_b][:c]
        std = [std_r, std_g, std_b][:c]
        for s in std:
            if s == 0:
                raise ValueError(f"ImageRecordIter: std_r/g/b must be non-zero, got {std}")
        self._mean = [float(m) for m in mean]
        self._mul = [float(scale) / float(s) for s in std]
        self._rng = random.Random(seed)
        self.provide_data = [(data_name, (batch_size,) + self.data_shape)]
        self.provide_label = [(label_name, (batch_size, label_width) if label_width > 1
                               else (batch_size,))]
        self._order = list(self._reader.keys)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ImageRecordIter")
        self._pending = None
        self.reset()

    def reset(self):
        """Back to the first record (reshuffled when ``shuffle``)."""
        self._drop_pending()
        if self.shuffle:
            self._rng.shuffle(self._order)
        self._cur = 0
        self._submit()

    def _drop_pending(self):
        if self._pending is not None:
            self._pending.cancel()
            with contextlib.suppress(Exception):  # a batch nobody will see: its error is moot
                self._pending.result()
            self._pending = None

    def _plan(self):
        """The next batch's keys, padding and random draws (on the calling thread), or None."""
        n, bs = len(self._order), self.batch_size
        if self._cur >= n or (not self.round_batch and self._cur + bs > n):
            return None
        keys = [self._order[(self._cur + i) % n] for i in range(bs)]
        pad = max(0, self._cur + bs - n)
        self._cur += bs
        rnd = self._rng.random
        u_y, u_x, mirror = [], [], []
        for _ in keys:
            u_y.append(rnd() if self.rand_crop else 0.0)
            u_x.append(rnd() if self.rand_crop else 0.0)
            mirror.append(bool(self.rand_mirror and rnd() < 0.5))
        return keys, pad, u_y, u_x, mirror

    def _submit(self):
        plan = self._plan()
        self._pending = None if plan is None else self._pool.submit(self._load, *plan)

    def _load(self, keys, pad, u_y, u_x, mirror):
        """Background thread: reads the records and decodes + augments them natively."""
        labels, bufs = [], []
        for k in keys:
            label, payload = self._reader.unpack(self._reader.read_idx(k))
            lab = np.asarray(label, dtype=np.float32).ravel()
            labels.append(lab[: self.label_width] if self.label_width > 1 else lab[:1])
            bufs.append(payload)
        data, _offsets = _native.image_record_batch(
            bufs, self.data_shape, u_y, u_x, mirror, self._mean, self._mul,
            resize=int(self.resize), rand_crop=bool(self.rand_crop),
            threads=self.preprocess_threads)
        return data, labels, pad

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def next(self):
        """The next ``DataBatch``; the last one wraps around (``pad`` counts the extra)."""
        if self._pending is None:
            raise StopIteration
        fut, self._pending = self._pending, None
        data, labels, pad = fut.result()
        self._submit()  # the next batch is prepared while this one is used
        if self.dtype != "float32":
            data = data.astype(self.dtype)
        label = nd.array(np.stack(labels).reshape(self.provide_label[0][1]))
        return DataBatch([data], [label], pad=pad)
