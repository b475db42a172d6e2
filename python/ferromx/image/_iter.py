"""``ImageIter``: batches of augmented images from a ``.lst`` + image root, an
``imglist``, or a ``.rec`` file (through ``ferromx.recordio``, imported lazily)."""

import logging
import os
import random
from numbers import Number

from .. import ndarray as nd
from ._augment import CreateAugmenter
from .image import imdecode

_LOG = logging.getLogger(__name__)

try:  # the io package (DataIter, DataBatch) is built separately
    from ..io import DataBatch, DataIter
except ImportError:  # pragma: no cover - minimal stand-ins until ferromx.io exists
    class DataIter:
        """Minimal data iterator base (``mx.io.DataIter``)."""

        def __init__(self, batch_size=0):
            self.batch_size = batch_size

        def __iter__(self):
            return self

        def __next__(self):
            return self.next()

    class DataBatch:
        """One batch: ``data`` and ``label`` lists of NDArrays, ``pad`` padded samples."""

        def __init__(self, data, label=None, pad=None, index=None):
            self.data, self.label, self.pad, self.index = data, label, pad, index


class ImageIter(DataIter):
    """Image iterator with MXNet's augmentation choices (see :func:`CreateAugmenter`):
    ``batch_size``, ``data_shape`` (3, H, W), ``path_imgrec`` / ``path_imglist`` /
    ``imglist``, ``path_root``, ``shuffle``, ``part_index``/``num_parts``,
    ``last_batch_handle`` ('pad', 'discard', 'roll_over'), ``aug_list``."""

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name="data",
                 label_name="softmax_label", dtype="float32", last_batch_handle="pad",
                 **kwargs):
        super().__init__()
        assert path_imgrec or path_imglist or isinstance(imglist, list)
        assert dtype in ["int32", "float32", "int64", "float64"], dtype + " label not supported"
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            from .. import recordio  # lazy: the record reader lives in its own module

            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        imgkeys = []
        if path_imglist:
            self.imglist = {}
            with open(path_imglist) as fin:
                for line in fin:
                    parts = line.strip().split("\t")
                    if len(parts) < 3:
                        continue
                    key = int(parts[0])
                    self.imglist[key] = (nd.array([float(v) for v in parts[1:-1]], dtype=dtype),
                                         parts[-1])
                    imgkeys.append(key)
        elif isinstance(imglist, list):
            self.imglist = {}
            for index, img in enumerate(imglist, 1):
                key = str(index)
                if len(img) > 2:
                    label = nd.array(img[:-1], dtype=dtype)
                elif isinstance(img[0], Number):
                    label = nd.array([img[0]], dtype=dtype)
                else:
                    label = nd.array(img[0], dtype=dtype)
                self.imglist[key] = (label, img[-1])
                imgkeys.append(key)
        else:
            self.imglist = None
        self.path_root = path_root
        self.check_data_shape(data_shape)
        self.provide_data = [(data_name, (batch_size,) + tuple(data_shape))]
        self.provide_label = [(label_name, (batch_size, label_width) if label_width > 1
                               else (batch_size,))]
        self.batch_size, self.data_shape, self.label_width = batch_size, data_shape, label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            assert self.imgidx is not None
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            assert part_index < num_parts
            c = len(self.seq) // num_parts
            self.seq = self.seq[part_index * c:(part_index + 1) * c]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = self._cache_label = self._cache_idx = None
        self.reset()

    def reset(self):
        """Back to the first sample (reshuffling when ``shuffle``)."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Resets and drops rolled-over data."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = self._cache_label = self._cache_idx = None

    def next_sample(self):
        """The next (label, encoded image bytes)."""
        if self._allow_read is False:
            raise StopIteration
        if self.seq is not None:
            if self.cur >= self.num_image:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            if self.imgrec is not None:
                from .. import recordio

                header, img = recordio.unpack(self.imgrec.read_idx(idx))
                return (header.label if self.imglist is None else self.imglist[idx][0]), img
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        from .. import recordio

        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(s)
        return header.label, img

    def _batchify(self, batch_data, batch_label, start=0):
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    _LOG.debug("Invalid image, skipping:  %s", str(e))
                    continue
                data = self.augmentation_transform(data)
                batch_data[i] = self.postprocess_data(data)
                batch_label[i] = label
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        """The next ``DataBatch`` (``pad`` counts the padded samples)."""
        c, h, w = self.data_shape
        if self._cache_data is not None:
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data = nd.zeros((self.batch_size, c, h, w))
            batch_label = nd.zeros(self.provide_label[0][1])
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape):
        """``data_shape`` must be (3, H, W)."""
        if not len(data_shape) == 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Raises for an empty image."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s):
        """Decodes one image, naming the file or record when it is broken."""
        try:
            return imdecode(s)
        except Exception as e:
            idx = self.seq[(self.cur % self.num_image) - 1] if self.seq is not None else self.cur
            where = (f"filename: {self.imglist[idx][1]}" if self.imglist is not None
                     else f"index: {idx}")
            raise RuntimeError(f"Broken image {where}, {e}") from e

    def read_image(self, fname):
        """The raw bytes of ``fname`` under ``path_root``."""
        with open(os.path.join(self.path_root or "", fname), "rb") as fin:
            return fin.read()

    def augmentation_transform(self, data):
        """Applies the augmenters in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HWC to CHW."""
        return nd.transpose(datum, axes=(2, 0, 1))
