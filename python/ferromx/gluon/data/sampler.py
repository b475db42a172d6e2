"""Samplers: iterables of dataset indices (``mx.gluon.data.sampler``)."""

import numpy as np

__all__ = [
    "BatchSampler",
    "FilterSampler",
    "IntervalSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
]


class Sampler:
    """Base class of samplers: an iterable of indices with a length."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices ``start, start + 1, ..., start + length - 1`` in order."""

    def __init__(self, length, start=0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A random permutation of ``range(length)`` (NumPy's global RNG), new every epoch."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class IntervalSampler(Sampler):
    """Indices ``0, interval, 2 * interval, ...``; with ``rollover`` (the default) then
    ``1, 1 + interval, ...`` and so on, so every index appears once (as MXNet 2's
    ``IntervalSampler``; MXNet 1.9.1 has no such sampler).
    """

    def __init__(self, length, interval, rollover=True):
        if not 0 < interval <= length:
            raise ValueError(
                f"IntervalSampler: interval {interval} must be in (0, length={length}]")
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        starts = range(self._interval) if self._rollover else range(1)
        for start in starts:
            yield from range(start, self._length, self._interval)

    def __len__(self):
        if self._rollover:
            return self._length
        return len(range(0, self._length, self._interval))


class FilterSampler(Sampler):
    """Indices ``i`` of ``dataset`` for which ``fn(dataset[i])`` is true."""

    def __init__(self, fn, dataset):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i, sample in enumerate(dataset) if fn(sample)]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``.

    Parameters
    ----------
    sampler : Sampler
        The source of indices.
    batch_size : int
        Size of each batch.
    last_batch : {'keep', 'discard', 'rollover'}
        What to do with an incomplete last batch: yield it, drop it, or carry its indices
        over to the start of the next epoch.
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if last_batch not in ("keep", "discard", "rollover"):
            raise ValueError(
                f"last_batch must be one of 'keep', 'discard', or 'rollover', but got {last_batch}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        self._sampler = sampler
        self._batch_size = batch_size
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size
