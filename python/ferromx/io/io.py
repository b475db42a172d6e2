"""Data descriptions, batches and the Python data iterators of ``mx.io`` (MXNet 1.9.1)."""

import threading
from collections import namedtuple

import numpy as np

from .. import ndarray as nd
from .utils import _getdata_by_idx, _init_data

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter", "PrefetchingIter", "ResizeIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name and shape (plus ``dtype`` and ``layout`` attributes) of one data or label input.

    Compares and unpacks as the ``(name, shape)`` tuple, as in MXNet.
    """

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """Index of ``'N'`` in ``layout`` (0 when ``layout`` is ``None``; -1 when absent)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """``DataDesc`` list from ``[(name, shape)]`` and optional ``[(name, dtype)]``."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch:
    """One batch: lists of data and label NDArrays, the ``pad`` count and the example index."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError("DataBatch: data must be a list of NDArrays")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError("DataBatch: label must be a list of NDArrays")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lab.shape for lab in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """Base class of data iterators: ``next()`` returns a :class:`DataBatch` built from
    ``iter_next``/``getdata``/``getlabel``/``getpad``/``getindex``."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Go back to the start of the data."""

    def next(self):
        """Return the next :class:`DataBatch`; raise ``StopIteration`` at the end."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Advance to the next batch; return whether there is one."""

    def getdata(self):
        """Data arrays of the current batch."""

    def getlabel(self):
        """Label arrays of the current batch."""

    def getindex(self):
        """Example indices of the current batch (``None`` when unknown)."""

    def getpad(self):
        """Number of padding examples in the current batch."""


class _BatchHoldingIter(DataIter):
    """An iterator whose ``iter_next`` stores the whole batch in ``current_batch``; the
    getters read it."""

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class ResizeIter(_BatchHoldingIter):
    """Make ``data_iter`` yield exactly ``size`` batches per epoch (restarting it as needed).

    ``reset_internal``: whether :meth:`reset` also resets ``data_iter``.
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


class PrefetchingIter(_BatchHoldingIter):
    """Fetch the next batch of each iterator in ``iters`` on a background thread.

    The batches of several iterators are joined (data lists and label lists concatenated);
    ``rename_data``/``rename_label`` are per-iterator ``{old: new}`` name maps.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter needs at least one iterator")
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self._ready = [threading.Event() for _ in iters]
        self._wanted = [threading.Event() for _ in iters]
        self._next = [None] * self.n_iter
        self._errors = [None] * self.n_iter
        self._running = True
        self.current_batch = None
        for event in self._wanted:
            event.set()
        self._threads = [
            threading.Thread(target=self._fetch_loop, args=(i,), daemon=True,
                             name=f"ferromx-prefetch-{i}")
            for i in range(self.n_iter)
        ]
        for thread in self._threads:
            thread.start()

    def _fetch_loop(self, i):
        while True:
            self._wanted[i].wait()
            if not self._running:
                return
            try:
                self._next[i] = self.iters[i].next()
            except StopIteration:
                self._next[i] = None
            except Exception as err:  # noqa: BLE001 - re-raised in the consumer
                self._next[i] = None
                self._errors[i] = err
            self._wanted[i].clear()
            self._ready[i].set()

    def close(self):
        """Stop the prefetch threads."""
        if not getattr(self, "_running", False):
            return
        for event in self._ready:
            event.wait()
        self._running = False
        for event in self._wanted:
            event.set()
        for thread in self._threads:
            thread.join()

    def __del__(self):
        self.close()

    def _renamed(self, attr, renames):
        out = []
        for k, it in enumerate(self.iters):
            for desc in getattr(it, attr):
                if renames is None:
                    out.append(desc)
                elif isinstance(desc, DataDesc):
                    out.append(DataDesc(renames[k][desc.name], desc.shape, desc.dtype))
                else:
                    out.append(DataDesc(renames[k][desc[0]], desc[1]))
        return out

    @property
    def provide_data(self):
        return self._renamed("provide_data", self.rename_data)

    @property
    def provide_label(self):
        return self._renamed("provide_label", self.rename_label)

    def reset(self):
        for event in self._ready:
            event.wait()
        for it in self.iters:
            it.reset()
        for event in self._ready:
            event.clear()
        for event in self._wanted:
            event.set()

    def iter_next(self):
        for event in self._ready:
            event.wait()
        for err in self._errors:
            if err is not None:
                self._errors = [None] * self.n_iter
                raise err
        if self._next[0] is None:
            if any(b is not None for b in self._next):
                raise ValueError("PrefetchingIter: the iterators have different lengths")
            return False
        pads = {b.pad for b in self._next}
        if None in self._next or len(pads) != 1:
            raise ValueError("PrefetchingIter: the iterators have different lengths")
        first = self._next[0]
        self.current_batch = DataBatch(
            [d for b in self._next for d in b.data],
            [lab for b in self._next for lab in (b.label or [])],
            first.pad, first.index, provide_data=self.provide_data,
            provide_label=self.provide_label)
        for event in self._ready:
            event.clear()
        for event in self._wanted:
            event.set()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration


class NDArrayIter(DataIter):
    """Iterate over NDArrays / NumPy arrays in batches, as MXNet's ``NDArrayIter``.

    Parameters
    ----------
    data, label : array, list of arrays or dict of name to array
        Inputs (``label`` optional).  NumPy inputs become float32 NDArrays, as in MXNet.
    batch_size : int
    shuffle : bool
        Shuffle (NumPy's global RNG) at construction and at every :meth:`reset`.
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        ``'pad'`` fills the last batch from the start (``batch.pad`` counts the filler),
        ``'discard'`` drops it, ``'roll_over'`` carries its examples into the first batch of
        the next epoch (whose ``pad`` is the number carried over, as in MXNet).
    data_name, label_name : str
        Names used in ``provide_data``/``provide_label`` for array or list inputs.
    layout : str
        Position of ``'N'`` gives the batch axis.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label", layout="NCHW"):
        super().__init__(batch_size)
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError(
                f"NDArrayIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', "
                f"got {last_batch_handle!r}")
        if batch_size < 1:
            raise ValueError(f"NDArrayIter: batch_size must be positive, got {batch_size}")
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        self.layout = layout
        self._axis = layout.find("N")
        self.num_data = self.data[0][1].shape[self._axis]
        for k, v in self.data + self.label:
            # As MXNet: longer inputs are fine (batches read their first examples only)
            if v.shape[self._axis] < self.num_data:
                raise ValueError(
                    f"NDArrayIter: all inputs need at least {self.num_data} examples along "
                    f"axis {self._axis} (as many as the first data array); {k} has shape "
                    f"{v.shape}")
        self.idx = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.cursor = -batch_size
        self._cache_data = None
        self._cache_label = None
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)

    def _descs(self, source):
        ax = self._axis
        return [
            DataDesc(k, tuple(v.shape[:ax]) + (self.batch_size,) + tuple(v.shape[ax + 1:]),
                     v.dtype, layout=self.layout)
            for k, v in source
        ]

    @property
    def provide_data(self):
        """``DataDesc`` of each data input, with the batch size on the batch axis."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """``DataDesc`` of each label input."""
        return self._descs(self.label)

    def hard_reset(self):
        """Reset ignoring roll-over data."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        """Reset to the start (keeping roll-over examples for the first batch)."""
        if self.shuffle:
            self._shuffle_data()
        if (self.last_batch_handle == "roll_over"
                and self.num_data - self.batch_size < self.cursor < self.num_data):
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self._axis] != self.batch_size:
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _slice(self, source, start=None, end=None):
        start = 0 if start is None else start
        end = self.num_data if end is None else end
        return [nd.slice_axis(v, axis=self._axis, begin=start, end=end) for _, v in source]

    def _concat(self, first, second):
        if not first or not second:
            return first if first else second
        return [nd.concat(a, b, dim=self._axis) for a, b in zip(first, second)]

    def _tile(self, arrays, repeats):
        out = []
        for a in arrays:
            reps = [1] * a.ndim
            reps[0] = repeats
            out.append(nd.tile(a, reps=tuple(reps)))
        return out

    def _batchify(self, source, is_data):
        if self.cursor >= self.num_data:
            raise RuntimeError("NDArrayIter needs reset()")
        bs, n, cur = self.batch_size, self.num_data, self.cursor
        if self.last_batch_handle == "roll_over" and -bs < cur < 0:
            cache = self._cache_data if is_data else self._cache_label
            if cache is None:
                raise RuntimeError("NDArrayIter: roll_over batch without carried-over data")
            if is_data:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cache, self._slice(source, end=cur + bs))
        if self.last_batch_handle == "pad" and cur + bs > n:
            pad = bs - n + cur
            first = self._slice(source, start=cur)
            if pad > n:
                second = self._tile(self._slice(source, end=n), pad // n)
                if pad % n:
                    second = self._concat(second, self._slice(source, end=pad % n))
            else:
                second = self._slice(source, end=pad)
            return self._concat(first, second)
        return self._slice(source, cur, min(cur + bs, n))

    def getdata(self):
        return self._batchify(self.data, True)

    def getlabel(self):
        return self._batchify(self.label, False)

    def getpad(self):
        bs, n, cur = self.batch_size, self.num_data, self.cursor
        if self.last_batch_handle == "pad" and cur + bs > n:
            return cur + bs - n
        if self.last_batch_handle == "roll_over" and -bs < cur < 0:
            return -cur
        return 0

    def _shuffle_data(self):
        # The same cumulative reordering as MXNet (so a seeded run sees the same batches),
        # done with one gather per array on the engine.
        np.random.shuffle(self.idx)
        self.data = _getdata_by_idx(self.data, self.idx)
        self.label = _getdata_by_idx(self.label, self.idx)
