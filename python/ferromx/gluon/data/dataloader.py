"""The Gluon :class:`DataLoader`, following ``mxnet.gluon.data.DataLoader`` (MXNet 1.9.1).

Workers:

* ``num_workers > 0`` (default ``thread_pool=False``) starts that many worker *processes*
  (see :mod:`ferromx.gluon.data._workers`: fork-server start, or a plain fork while no
  ferromx thread has started; batches returned through shared memory that the NDArrays use
  without a copy; the fused native path for the common vision ``Compose``; worker
  exceptions re-raised with the worker traceback, a dead or stuck worker raises within
  ``timeout``).  The pool is started on the
  first iteration and kept for later epochs.  If the dataset or ``batchify_fn`` cannot be
  pickled (a lambda without ``cloudpickle`` installed), the loader warns once and uses
  threads instead.
* ``thread_pool=True`` uses worker threads; native operators release the GIL, so they
  overlap with the training loop.  Batches come back in order and at most ``prefetch``
  are in flight.
* For an :class:`ArrayDataset` of NDArrays (or NumPy arrays) and the default
  ``batchify_fn``, a batch is one native gather per array (``nd.take``). That gather is
  itself asynchronous (pushed to the engine, returns at once), so workers would only add
  hand-off cost: such loaders always build batches on the calling thread, and prefetching
  happens in the engine instead.
* ``pin_memory=True`` places batches on ``cpu_pinned(pin_device_id)``; ``auto_reload`` and
  ``try_nopython`` are accepted and ignored.
"""

import collections
import itertools
import pickle
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ... import context as _context
from ... import ndarray as nd
from ...ndarray import NDArray
from ...util import _as_np_mode
from . import _workers
from . import sampler as _sampler
from ._workers import DataLoaderTimeoutError, DataLoaderWorkerError
from .dataset import ArrayDataset

__all__ = [
    "DataLoader",
    "DataLoaderTimeoutError",
    "DataLoaderWorkerError",
    "default_batchify_fn",
    "default_mp_batchify_fn",
]


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


def default_mp_batchify_fn(data):
    """Collate samples in a worker: the same result as :func:`default_batchify_fn` (worker
    processes recognise it and collate on the host, handing the arrays back through shared
    memory)."""
    return default_batchify_fn(data)


def _in_context(batch, ctx):
    if isinstance(batch, NDArray):
        return batch.as_in_context(ctx)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_in_context(b, ctx) for b in batch)
    return batch


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
        Number of worker processes (threads with ``thread_pool=True``); 0 makes batches in
        the iterating thread.
    pin_memory : bool
        Return batches on ``cpu_pinned(pin_device_id)``.
    pin_device_id : int
    prefetch : int, optional
        Batches in flight with workers (default ``2 * num_workers``, at least 1).
    thread_pool : bool
        Use worker threads instead of processes.
    timeout : float
        Seconds to wait for one batch from a worker before raising
        :class:`DataLoaderTimeoutError` (a ``multiprocessing.TimeoutError``).
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
        self._default_batchify = batchify_fn is None or batchify_fn in (
            default_batchify_fn, default_mp_batchify_fn)
        if batchify_fn is None:
            batchify_fn = default_mp_batchify_fn if self._num_workers else default_batchify_fn
        self._batchify_fn = batchify_fn
        self._pool = None
        self._pool_error = None
        self._use_threads = thread_pool
        if self._num_workers and not thread_pool and not (
                self._default_batchify and _can_gather(dataset)):
            # As in MXNet, the worker processes start with the DataLoader: they boot (a
            # fork-server interpreter importing ferromx, then the workers) while the caller
            # goes on setting up, instead of at the start of the first epoch.
            self._start_pool()

    def _start_pool(self):
        try:
            self._pool = _workers.ProcessPool(
                self._num_workers, self._dataset, self._batchify_fn, self._default_batchify)
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            self._pool_error = err  # reported when iterated: threads are used instead

    def _out_ctx(self):
        return _context.cpu_pinned(self._pin_device_id) if self._pin_memory else _context.cpu()

    def _make_batch(self, indices):
        if self._default_batchify and _can_gather(self._dataset):
            batch = self._dataset._gather_batch(indices)
            if batch is not None:
                return batch
        return self._batchify_fn([self._dataset[i] for i in indices])

    def __iter__(self):
        if self._num_workers == 0 or (self._default_batchify and _can_gather(self._dataset)):
            return self._serial_iter()
        if not self._use_threads and self._ensure_pool() is not None:
            return self._process_iter()
        return self._threaded_iter()

    def _serial_iter(self):
        for indices in self._batch_sampler:
            batch = self._make_batch(indices)
            yield _as_np_mode(_in_context(batch, self._out_ctx()) if self._pin_memory else batch)

    def _ensure_pool(self):
        if self._pool is not None and self._pool.broken:
            self._pool.shutdown()
            self._pool = None
        if self._pool is None and self._pool_error is None:
            self._start_pool()
        if self._pool is None:
            err, self._pool_error = self._pool_error, None
            if err is not None:
                warnings.warn(
                    f"DataLoader: the dataset or batchify_fn cannot be pickled for worker "
                    f"processes ({err}); using {self._num_workers} worker threads instead "
                    "(install cloudpickle to send lambdas to processes).",
                    RuntimeWarning, stacklevel=3)
                self._use_threads = True
                return None
        return self._pool

    @property
    def worker_pids(self):
        """Process ids of the worker processes (empty when there are none yet)."""
        return [] if self._pool is None else self._pool.pids

    def _process_iter(self):
        pool = self._pool
        ctx = self._out_ctx()
        batches = iter(self._batch_sampler)
        pending = collections.deque(
            pool.submit(i) for i in itertools.islice(batches, max(1, self._prefetch)))
        try:
            while pending:
                nxt = next(batches, None)
                if nxt is not None:
                    pending.append(pool.submit(nxt))
                yield _as_np_mode(pool.result(pending.popleft(), self._timeout, ctx))
        finally:
            for handle in pending:
                pool.abandon(handle)

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown()
            self._pool = None

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
                try:
                    batch = pending.popleft().result(timeout=self._timeout)
                except TimeoutError as err:
                    raise DataLoaderTimeoutError(
                        f"DataLoader worker thread timed out after {self._timeout} s on one "
                        "batch; a slow transform may need a larger `timeout`.") from err
                if self._pin_memory:
                    batch = _in_context(batch, self._out_ctx())
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
