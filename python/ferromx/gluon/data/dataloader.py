"""The Gluon :class:`DataLoader`, following ``mxnet.gluon.data.DataLoader`` (MXNet 1.9.1).

Differences from MXNet, by design:

* ``num_workers > 0`` uses a pool of *threads*, never processes.  Batches are made in
  the workers and handed back in order; at most ``prefetch`` batches are in flight, so
  memory stays bounded.  Native operators release the GIL, so workers overlap with the
  training loop and cannot deadlock it.
* For an :class:`ArrayDataset` of NDArrays (or NumPy arrays) and the default
  ``batchify_fn``, a batch is one native gather per array (``nd.take``). That gather is
  itself asynchronous (pushed to the engine, returns at once), so worker threads would
  only add hand-off cost: with ``num_workers > 0`` such loaders still build batches on
  the calling thread, and prefetching happens in the engine instead.
* ``pin_memory``/``pin_device_id``/``thread_pool``/``auto_reload`` are accepted and ignored.
"""

import collections
import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ... import ndarray as nd
from ...ndarray import NDArray
from ...util import _as_np_mode
from . import sampler as _sampler
from .dataset import ArrayDataset

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data):
    """Collate a list of samples into a batch.

    NDArray samples are stacked with ``nd.stack``; tuple samples are collated field by
    field into a list; anything else goes through ``numpy.asarray`` and ``nd.array``
    (keeping the NumPy dtype).
    """
    first = data[0]
    if isinstance(first, NDArray):
        return nd.stack(*data)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    arr = np.asarray(data)
    return nd.array(arr, dtype=arr.dtype)


# Worker threads share memory with the main thread, so one collate function serves both.
default_mp_batchify_fn = default_batchify_fn


def _can_gather(dataset):
    return isinstance(dataset, ArrayDataset) and (
        type(dataset).__getitem__ is ArrayDataset.__getitem__
    )


class DataLoader:
    """Load batches from a dataset.

    Parameters
    ----------
    dataset : Dataset
        The source of samples.
    batch_size : int
        Samples per batch (required unless ``batch_sampler`` is given).
    shuffle : bool
        Shuffle the samples every epoch.
    sampler : Sampler, optional
        Order of the samples (excludes ``shuffle``).
    last_batch : {'keep', 'discard', 'rollover'}, optional
        Handling of an incomplete last batch (default ``'keep'``).
    batch_sampler : Sampler, optional
        Yields lists of indices (excludes batch_size, shuffle, sampler, last_batch).
    batchify_fn : callable, optional
        Collates a list of samples into a batch (default :func:`default_batchify_fn`).
    num_workers : int
        Number of worker threads (0: make batches in the iterating thread).
    pin_memory, pin_device_id : accepted and ignored.
    prefetch : int, optional
        Batches in flight with workers (default ``2 * num_workers``, at least 1).
    thread_pool : bool
        Accepted; workers are always threads.
    timeout : float
        Seconds to wait for one batch from a worker before raising ``TimeoutError``.
    """

    def __init__(
        self,
        dataset,
        batch_size=None,
        shuffle=False,
        sampler=None,
        last_batch=None,
        batch_sampler=None,
        batchify_fn=None,
        num_workers=0,
        pin_memory=False,
        pin_device_id=0,
        prefetch=None,
        thread_pool=False,
        timeout=120,
        auto_reload=False,
        try_nopython=None,
    ):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, given {timeout}")
        self._timeout = timeout
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                if shuffle:
                    sampler = _sampler.RandomSampler(len(dataset))
                else:
                    sampler = _sampler.SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = _sampler.BatchSampler(
                sampler, batch_size, last_batch if last_batch else "keep"
            )
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError(
                "batch_size, shuffle, sampler and last_batch must not be specified if "
                "batch_sampler is specified."
            )
        self._batch_sampler = batch_sampler
        self._num_workers = max(num_workers, 0)
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._default_batchify = batchify_fn is None
        self._batchify_fn = default_batchify_fn if batchify_fn is None else batchify_fn

    def _make_batch(self, indices):
        if self._default_batchify and _can_gather(self._dataset):
            batch = self._dataset._gather_batch(indices)
            if batch is not None:
                return batch
        return self._batchify_fn([self._dataset[i] for i in indices])

    def __iter__(self):
        if self._num_workers == 0 or (self._default_batchify and _can_gather(self._dataset)):
            return self._serial_iter()
        return self._threaded_iter()

    def _serial_iter(self):
        for indices in self._batch_sampler:
            yield _as_np_mode(self._make_batch(indices))

    def _threaded_iter(self):
        # Indices are drawn in this thread (so NumPy seeding stays deterministic); the
        # workers only build batches.  The deque holds the futures in sampler order.
        batches = iter(self._batch_sampler)
        depth = max(1, self._prefetch)
        pool = ThreadPoolExecutor(
            max_workers=self._num_workers, thread_name_prefix="ferromx-dataloader"
        )
        pending = collections.deque()
        try:
            for indices in itertools.islice(batches, depth):
                pending.append(pool.submit(self._make_batch, indices))
            while pending:
                batch = pending.popleft().result(timeout=self._timeout)
                nxt = next(batches, None)
                if nxt is not None:
                    pending.append(pool.submit(self._make_batch, nxt))
                yield _as_np_mode(batch)
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)

    def __len__(self):
        return len(self._batch_sampler)
