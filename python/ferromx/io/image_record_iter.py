"""``mx.io.ImageRecordIter``: batches from an image RecordIO file, decoded natively on
``preprocess_threads`` threads (the GIL released), augmented with engine operators.

Supported: ``path_imgrec`` (+ optional ``path_imgidx``), ``data_shape`` (C, H, W),
``batch_size``, ``label_width``, ``shuffle``, ``seed``, ``resize`` (shorter edge),
``rand_crop``, ``rand_mirror``, ``mean_r/g/b``, ``std_r/g/b``, ``scale``,
``preprocess_threads``, ``round_batch``, ``data_name``, ``label_name``, ``dtype``.
"""

import os
import random

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
        self._mean = nd.array(mean).reshape((1, c, 1, 1))
        self._scale_std = nd.array([scale / s for s in std]).reshape((1, c, 1, 1))
        self._rng = random.Random(seed)
        self.provide_data = [(data_name, (batch_size,) + self.data_shape)]
        self.provide_label = [(label_name, (batch_size, label_width) if label_width > 1
                               else (batch_size,))]
        self._order = list(self._reader.keys)
        self.reset()

    def reset(self):
        """Back to the first record (reshuffled when ``shuffle``)."""
        if self.shuffle:
            self._rng.shuffle(self._order)
        self._cur = 0

    def _augment(self, img):
        _, h, w = self.data_shape
        if self.resize > 0:
            ih, iw = img.shape[:2]
            nh, nw = ((self.resize * ih // iw, self.resize) if ih > iw
                      else (self.resize, self.resize * iw // ih))
            img = nd.invoke("_cvimresize", [img], w=nw, h=nh, interp=1)
        ih, iw = img.shape[:2]
        if ih < h or iw < w:
            img = nd.invoke("_cvimresize", [img], w=max(w, iw), h=max(h, ih), interp=1)
            ih, iw = img.shape[:2]
        if self.rand_crop:
            y0, x0 = self._rng.randint(0, ih - h), self._rng.randint(0, iw - w)
        else:
            y0, x0 = (ih - h) // 2, (iw - w) // 2
        img = nd.image.crop(img, x0, y0, w, h)
        if self.rand_mirror and self._rng.random() < 0.5:
            img = nd.image.flip_left_right(img)
        return img

    def next(self):
        """The next ``DataBatch``; the last one wraps around (``pad`` counts the extra)."""
        n = len(self._order)
        if self._cur >= n or (not self.round_batch and self._cur + self.batch_size > n):
            raise StopIteration
        keys = [self._order[(self._cur + i) % n] for i in range(self.batch_size)]
        pad = max(0, self._cur + self.batch_size - n)
        self._cur += self.batch_size
        labels, bufs = [], []
        for k in keys:
            label, payload = self._reader.unpack(self._reader.read_idx(k))
            lab = np.asarray(label, dtype=np.float32).ravel()
            labels.append(lab[: self.label_width] if self.label_width > 1 else lab[:1])
            bufs.append(payload)
        flag = 1 if self.data_shape[0] == 3 else 0
        imgs = _native.imdecode_batch(bufs, flag, True)  # parallel, the GIL released
        # Crops and flips per image (uint8 HWC); layout, cast and normalisation once per batch.
        hwc = nd.stack(*[self._augment(im) for im in imgs])
        chw = nd.transpose(hwc, axes=(0, 3, 1, 2)).astype("float32")
        data = (chw - self._mean) * self._scale_std
        if self.dtype != "float32":
            data = data.astype(self.dtype)
        label = nd.array(np.stack(labels).reshape(self.provide_label[0][1]))
        return DataBatch([data], [label], pad=pad)
