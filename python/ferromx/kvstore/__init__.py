"""Key-value stores (``mx.kv`` / ``mx.kvstore``), following MXNet 1.9.1.

``create('local')`` and ``create('device')`` give a single-process store that sums the
values pushed from several contexts with engine operations (asynchronous, ordered with
the arrays' other operations, visible in the profiler) and, after ``set_optimizer``,
applies the optimizer inside the store. ``'dist_sync'``, ``'dist_sync_device'``,
``'dist_async'`` and ``'horovod'`` run over MPI (:mod:`ferromx.distributed`, needs
``mpi4py``); ``'nccl'`` needs GPUs, which ferromx does not have.
"""

from .kvstore import SUPPORTED, KVStore, KVStoreBase, create

__all__ = ["SUPPORTED", "KVStore", "KVStoreBase", "create"]
