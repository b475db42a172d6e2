"""KVStores across processes on MPI: ``dist_sync``, ``dist_sync_device``, ``dist_async``
and ``horovod`` (see :mod:`ferromx.distributed`).

There are no servers: every worker keeps the store, ``init`` takes rank 0's value (as the
servers of MXNet do), and ``push`` sums the values of this process's contexts, then sums
that over all ranks with an allreduce (an engine op), then updates the stored value the
same way on every rank. As in MXNet, the optimizer's ``rescale_grad`` applies to the sum
over workers. ``dist_async`` is synchronous here (every rank sees the same values).
"""

from .. import distributed as dist
from .kvstore import KVStore, _key_value_pairs, _sum_on


class DistKVStore(KVStore):
    """A KVStore whose pushes are summed over all MPI ranks."""

    _fuses_key_lists = True  # the Trainer pushes all gradients in one call

    def __init__(self, kv_type):
        super().__init__(kv_type)
        dist.init()

    @property
    def rank(self):
        """This worker's rank."""
        return dist.rank()

    @property
    def num_workers(self):
        """Number of workers (MPI processes)."""
        return dist.size()

    def is_capable(self, capability):
        """``horovod`` has no optimizer in the store (as in MXNet)."""
        return self._type != "horovod" and super().is_capable(capability)

    def barrier(self):
        """Waits for this process's pending work, then for every rank."""
        from .. import waitall

        waitall()
        dist._wait(dist._S["comm"].Ibarrier(), "barrier")

    def init(self, key, value):
        """Initialise keys with rank 0's values."""
        super().init(key, value)
        for k, _ in _key_value_pairs(key, value, "init"):
            dist.broadcast_(self._store[k], 0, name=f"init:{k}")

    def push(self, key, value, priority=0):
        """Sum ``value`` over contexts and ranks, then update or replace the stored value.

        A list of keys is reduced in buckets (:func:`ferromx.distributed.allreduce_buckets`,
        in the order given), one allreduce per bucket; the Trainer pushes its gradients
        this way, in reverse parameter order, so they are reduced while backward runs.
        """
        del priority
        pairs = _key_value_pairs(key, value, "push")
        stored = [self._stored(k, "push") for k, _ in pairs]
        for (k, vals), st in zip(pairs, stored):
            self._check_shapes(k, st, vals, "push")
        merged = [_sum_on(vals, st.context) for (_, vals), st in zip(pairs, stored)]
        name = f"push:{pairs[0][0]}" if len(pairs) == 1 else "push:bucket"
        reduced = dist.allreduce_buckets(merged, average=False, in_place=False, name=name)
        for (k, _), st, red in zip(pairs, stored, reduced):
            if self._updater is not None:
                self._updater(k, red, st)
            else:
                st[:] = red
