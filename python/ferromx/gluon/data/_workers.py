"""Worker processes of the Gluon DataLoader, with batches returned through shared memory.

Design (see ``dataloader.py`` for how it is used):

* **Start method.** Workers are started with the ``'forkserver'`` method where the platform
  has it (``'spawn'`` elsewhere), never with a plain ``fork`` of the training process: the
  engine's worker threads live in the parent only, and a forked copy of a process whose
  engine is running would block on its first operator.  The fork server is a fresh
  interpreter that preloads ``ferromx`` and ``numpy`` before any operator runs, so workers
  fork from it in milliseconds and each starts its own engine (with
  ``FERROMX_CPU_WORKER_NTHREADS=1`` unless set) on its first operator.  The pool is made
  when the ``DataLoader`` is (as MXNet's), and a background thread starts the processes
  (which waits for the fork server's imports, about a second), so they boot while the
  caller goes on; the first batch request waits for them.
  Where the DataLoader is made before the engine, rayon or any Python thread has started
  (the process runs only its main thread and the OS threads that existed when ferromx was
  imported, i.e. NumPy's BLAS pool, which handles ``fork`` itself; Linux:
  ``/proc/self/task``), no ferromx thread can be half-running or hold a lock, so the
  workers are plain ``fork`` children of it, started at once (milliseconds instead of the
  fork server's ~1 s boot).  ``FERROMX_DATALOADER_FORK=0`` turns that off.
* **Dataset transfer.** The dataset and ``batchify_fn`` are pickled once per pool (with
  ``cloudpickle`` when it is installed, so lambdas, local classes and classes of the main
  script work; plain ``pickle`` otherwise, which cannot send those: the DataLoader then
  warns and uses threads) and unpickled in every worker.
* **Batches.** A worker builds the batch, writes every array of it into one
  ``multiprocessing.shared_memory`` block and sends back only the block's name and the
  layout.  The consumer maps the block itself (``mmap`` of the POSIX shared-memory file,
  which it unlinks at once) and wraps each array of it without a copy
  (``nd.from_numpy``): the NumPy views hold the ``mmap`` object, and the NDArrays hold the
  views (DLPack), so the mapping lives exactly as long as the last NDArray of the batch.
  (Where POSIX shared memory is missing, or for ``pin_memory``, each array is copied once.)
* **Fused vision path.** With the default batching, a dataset of encoded images under
  ``transform_first(Compose([...]))`` of the known vision transforms has its images built
  by one native call per batch, straight into the block (``vision/_fused.py``).
* **Failures.** A worker exception is sent back with its traceback and re-raised in the
  training loop (same type when it can be pickled, the worker traceback as ``__cause__``).
  The consumer waits on the result pipe *and* the worker's process sentinel, so a worker
  that dies raises :class:`DataLoaderWorkerError` at once, and a batch that takes longer
  than ``timeout`` raises :class:`DataLoaderTimeoutError`; neither can hang.
"""

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import threading
import time
import traceback
from multiprocessing import shared_memory

import numpy as np

__all__ = ["DataLoaderTimeoutError", "DataLoaderWorkerError"]

_ALIGN = 64

try:  # POSIX shared memory, mapped by the consumer itself (zero-copy batches)
    import _posixshmem
    import mmap
    from multiprocessing import resource_tracker
except ImportError:  # pragma: no cover - Windows
    _posixshmem = None


class DataLoaderWorkerError(RuntimeError):
    """A DataLoader worker process died, or raised an exception that could not be pickled."""


class DataLoaderTimeoutError(multiprocessing.TimeoutError, TimeoutError):
    """A DataLoader worker took longer than ``timeout`` seconds for one batch."""


class _RemoteTraceback(Exception):
    def __init__(self, tb):
        super().__init__(tb)
        self.tb = tb

    def __str__(self):
        return "\n\nTraceback in the DataLoader worker:\n" + self.tb


def _dumps(obj):
    try:
        import cloudpickle
    except ImportError:
        cloudpickle = None
    if cloudpickle is not None:
        return cloudpickle.dumps(obj)
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    if b"__main__" in payload:
        # Plain pickle refers to classes and functions of the main script by name, and a
        # worker forked from the fork server has no such module: refuse (threads are used).
        raise pickle.PicklingError("it refers to objects defined in the __main__ script")
    return payload


_CTX = None


def _context():
    global _CTX
    if _CTX is None:
        methods = multiprocessing.get_all_start_methods()
        name = "forkserver" if "forkserver" in methods else "spawn"
        ctx = multiprocessing.get_context(name)
        if name == "forkserver":
            ctx.set_forkserver_preload(["numpy", "ferromx"])
        _CTX = ctx
    return _CTX


def _os_threads():
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return None


# The OS threads of the process when ferromx was imported (the main thread and NumPy's
# BLAS pool); the engine and rayon start theirs later, on the first operator.
_IMPORT_THREADS = _os_threads()


def _fork_is_safe():
    """Whether a plain ``fork`` of this process is safe now: no OS thread started since
    ``import ferromx`` (no engine or rayon thread) and no Python thread but this one."""
    if os.environ.get("FERROMX_DATALOADER_FORK", "1") == "0":
        return False
    if "fork" not in multiprocessing.get_all_start_methods() or _IMPORT_THREADS is None:
        return False
    if threading.active_count() != 1 or threading.current_thread() is not threading.main_thread():
        return False
    now = _os_threads()
    return now is not None and now <= _IMPORT_THREADS


# ---- worker side ----------------------------------------------------------------------------
def _host_collate(data):
    """The default collation, done on the host: returns a tree with ('nd', array) leaves."""
    from ...ndarray import NDArray

    first = data[0]
    if isinstance(first, NDArray):
        from ... import ndarray as nd

        shape, dt = first.shape, first._dtype_name
        if dt != "bfloat16" and all(
                isinstance(d, NDArray) and d.shape == shape and d._dtype_name == dt
                for d in data):
            return ("stack", data)  # stacked by _to_shared straight into the shared block
        return ("nd", nd.stack(*data).asnumpy())
    if isinstance(first, tuple):
        return ("list", [_host_collate(list(field)) for field in zip(*data)])
    return ("nd", np.asarray(data))


def _tree(obj):
    """Encode a batch as a tree whose array leaves will travel through shared memory."""
    from ...ndarray import NDArray

    if isinstance(obj, NDArray):
        return ("nd", obj.asnumpy())
    if isinstance(obj, np.ndarray):
        return ("np", obj)
    if isinstance(obj, list):
        return ("list", [_tree(o) for o in obj])
    if isinstance(obj, tuple):
        return ("tuple", [_tree(o) for o in obj])
    return ("obj", obj)


def _pack(tree, leaves):
    """Replace array leaves by their index in ``leaves``."""
    kind, val = tree
    if kind in ("nd", "np"):
        leaves.append(np.ascontiguousarray(val))
        return (kind, len(leaves) - 1)
    if kind == "stack":
        leaves.append(_Stack(val))
        return ("nd", len(leaves) - 1)
    if kind == "leaf":  # writes itself into the block (the fused vision images)
        leaves.append(val)
        return ("nd", len(leaves) - 1)
    if kind in ("list", "tuple"):
        return (kind, [_pack(t, leaves) for t in val])
    return tree


class _Stack:
    """Same-shaped NDArray samples to be stacked: each is copied by the engine straight into
    its slot of the shared block (no stacked array, no intermediate host copy)."""

    def __init__(self, arrays):
        from ...ndarray.ndarray import _np_dtype

        self.arrays = arrays
        self.shape = (len(arrays),) + tuple(arrays[0].shape)
        self.dtype = np.dtype(_np_dtype(arrays[0]._dtype_name))
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize

    def write(self, out):
        tickets = []
        try:
            for i, a in enumerate(self.arrays):
                tickets.append(a._copy_out(out[i].reshape(-1).view(np.uint8), "DataLoader"))
            for t in tickets:
                t.finish()
        finally:  # no view of the block may outlive this call (the block is closed after)
            del tickets, out


def _to_shared(tree):
    leaves = []
    layout = _pack(tree, leaves)
    if not leaves:
        return None, [], layout
    specs, offset = [], 0
    for a in leaves:
        specs.append((offset, a.shape, a.dtype.str))
        offset += -(-a.nbytes // _ALIGN) * _ALIGN
    shm = shared_memory.SharedMemory(create=True, size=max(offset, 1))
    try:
        for a, (off, shape, dt) in zip(leaves, specs):
            out = np.ndarray(shape, dt, buffer=shm.buf, offset=off)
            try:
                if isinstance(a, np.ndarray):
                    out[...] = a
                else:
                    a.write(out)
            finally:
                del out
    except BaseException:
        with contextlib.suppress(BufferError):  # a view held by a traceback: leave it mapped
            shm.close()
        shm.unlink()
        raise
    name = shm.name
    shm.close()
    return name, specs, layout


def _error_payload(err):
    tb = traceback.format_exc()
    try:
        blob = pickle.dumps(err)
        pickle.loads(blob)
    except Exception:  # noqa: BLE001 - an unpicklable exception travels as text
        blob = None
    return (type(err).__name__, str(err), tb, blob)


def _fused_plan(dataset):
    """The fused vision plan of ``dataset`` (see ``vision/_fused.py``), or None."""
    try:
        from .vision import _fused

        return _fused.plan_for(dataset)
    except Exception:  # noqa: BLE001 - anything unusual keeps the generic path
        return None


def _fused_tree(plan, indices):
    """The batch tree of the fused path, or None when it does not apply to this batch."""
    got = plan.images(indices)
    if got is None:
        return None
    leaf, labels = got
    return ("list", [("leaf", leaf), _host_collate(labels)])


def _worker_main(payload, conn, default_collate):
    """Entry point of a worker process: build batches until told to stop."""
    os.environ.setdefault("FERROMX_CPU_WORKER_NTHREADS", "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the training loop's business
    startup_error = None
    try:
        dataset, batchify_fn = pickle.loads(payload)
    except Exception as err:  # noqa: BLE001 - reported with the first task
        startup_error = _error_payload(err)
    fused = _fused_plan(dataset) if default_collate and startup_error is None else None
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        task_id, indices = msg
        if startup_error is not None:
            conn.send((task_id, False, startup_error))
            continue
        try:
            tree = _fused_tree(fused, indices) if fused is not None else None
            if tree is None:
                samples = [dataset[i] for i in indices]
                tree = _host_collate(samples) if default_collate else _tree(batchify_fn(samples))
            result = (task_id, True, _to_shared(tree))
        except Exception as err:  # noqa: BLE001 - re-raised in the training loop
            result = (task_id, False, _error_payload(err))
        conn.send(result)


# ---- consumer side --------------------------------------------------------------------------
def _free(meta):
    name = meta[0]
    if name is None:
        return
    try:
        shm = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return
    shm.close()
    shm.unlink()


def _unpack(layout, arrays):
    kind, val = layout
    if kind in ("nd", "np"):
        return arrays[val]
    if kind == "list":
        return [_unpack(t, arrays) for t in val]
    if kind == "tuple":
        return tuple(_unpack(t, arrays) for t in val)
    return val


def _from_shared(meta, ctx):
    name, specs, layout = meta
    if name is None:
        return _unpack(layout, [])
    kinds = {}
    _collect_kinds(layout, kinds)
    if _posixshmem is not None and ctx.device_type == "cpu" and ctx.device_id == 0:
        arrays = _map_shared(name, specs, kinds)
        if arrays is not None:
            return _unpack(layout, arrays)
    return _unpack(layout, _copy_shared(name, specs, kinds, ctx))


def _copy_shared(name, specs, kinds, ctx):
    """Each array of the block copied once (``nd.array``); the block is unlinked."""
    from ... import ndarray as nd

    shm = shared_memory.SharedMemory(name=name)
    arrays = []
    try:
        for i, (off, shape, dt) in enumerate(specs):
            view = np.ndarray(shape, dt, buffer=shm.buf, offset=off)
            if kinds[i] == "nd":
                arrays.append(nd.array(view, ctx=ctx, dtype=view.dtype))  # the one copy
            else:
                arrays.append(view.copy())
            del view
    finally:
        shm.close()
        shm.unlink()
    return arrays


def _map_shared(name, specs, kinds):
    """The block's arrays without a copy: NDArrays over a private mapping of it (the
    file is unlinked at once; the mapping dies with the last array). None when an array
    cannot be shared this way (the caller copies)."""
    from ... import ndarray as nd

    path = "/" + name
    try:
        fd = _posixshmem.shm_open(path, os.O_RDWR, mode=0o600)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        mm = mmap.mmap(fd, size) if size else None
    finally:
        os.close(fd)
    _posixshmem.shm_unlink(path)
    # The worker's SharedMemory registered the block with the (shared) resource tracker;
    # it is gone now, so the tracker must not try to clean it up at exit.
    with contextlib.suppress(Exception):
        resource_tracker.unregister(path, "shared_memory")
    arrays = []
    for i, (off, shape, dt) in enumerate(specs):
        count = int(np.prod(shape, dtype=np.int64))
        view = np.frombuffer(mm, dtype=dt, count=count, offset=off).reshape(shape) \
            if count else np.zeros(shape, dt)
        if kinds[i] != "nd":
            arrays.append(view.copy())
            continue
        try:
            arrays.append(nd.from_numpy(view, zero_copy=True) if count
                          else nd.array(view, dtype=view.dtype))
        except (ValueError, TypeError):  # a dtype DLPack cannot carry: one copy
            arrays.append(nd.array(view.copy(), dtype=view.dtype))
    return arrays


def _collect_kinds(layout, out):
    kind, val = layout
    if kind in ("nd", "np"):
        out[val] = kind
    elif kind in ("list", "tuple"):
        for t in val:
            _collect_kinds(t, out)


def _raise_worker_error(info, worker):
    type_name, msg, tb, blob = info
    err = None
    if blob is not None:
        try:
            err = pickle.loads(blob)
        except Exception:  # noqa: BLE001
            err = None
    where = f"DataLoader worker {worker.name} (pid {worker.pid})"
    if err is None:
        raise DataLoaderWorkerError(f"{type_name}: {msg} (raised in {where})\n\n"
                                    f"Traceback in the DataLoader worker:\n{tb}")
    if hasattr(err, "add_note"):
        err.add_note(f"(raised in {where})")
    raise err from _RemoteTraceback(tb)


class ProcessPool:
    """A fixed set of worker processes; batch ``k`` of the pool goes to worker ``k % n``."""

    def __init__(self, num_workers, dataset, batchify_fn, default_collate):
        payload = _dumps((dataset, None if default_collate else batchify_fn))
        self._workers = []
        self._conns = []
        self._counter = 0
        self._stale = set()
        self.broken = False
        self._start_error = None
        self._starter = None
        self.start_method = "fork" if _fork_is_safe() else _context().get_start_method()
        if self.start_method == "fork":
            # Single-threaded: fork now (the resource tracker first, so that the workers
            # share it with this process and the shared blocks are tracked in one place).
            from multiprocessing import resource_tracker as tracker

            tracker.ensure_running()
            self._start(num_workers, payload, default_collate, multiprocessing.get_context("fork"))
            return
        # Starting a worker waits for the fork server to have imported ferromx (about a
        # second): a background thread does it, so the caller goes on meanwhile.
        self._starter = threading.Thread(
            target=self._start, args=(num_workers, payload, default_collate),
            name="ferromx-dataloader-start", daemon=True)
        self._starter.start()

    def _start(self, num_workers, payload, default_collate, ctx=None):
        try:
            ctx = ctx or _context()
            for i in range(num_workers):
                parent_conn, child_conn = ctx.Pipe(duplex=True)
                proc = ctx.Process(target=_worker_main,
                                   args=(payload, child_conn, default_collate),
                                   name=f"ferromx-dataloader-{i}", daemon=True)
                proc.start()
                child_conn.close()
                self._workers.append(proc)
                self._conns.append(parent_conn)
        except BaseException as err:  # noqa: BLE001 - re-raised by the first use of the pool
            self._start_error = err

    def _started(self):
        """Waits for the workers to be started; re-raises a failure to start them."""
        if self._starter is not None:
            self._starter.join()
            self._starter = None
        if self._start_error is not None:
            self.broken = True
            raise DataLoaderWorkerError(
                f"DataLoader: could not start the worker processes: {self._start_error!r}"
            ) from self._start_error

    @property
    def pids(self):
        """Process ids of the workers."""
        self._started()
        return [w.pid for w in self._workers]

    def submit(self, indices):
        """Queue one batch; returns a handle for :meth:`result`/:meth:`abandon`."""
        self._started()
        task_id = self._counter
        self._counter += 1
        w = task_id % len(self._workers)
        try:
            self._conns[w].send((task_id, list(indices)))
        except OSError:  # the worker is gone (broken pipe)
            self._workers[w].join(1.0)
            self._died(self._workers[w])
        return task_id, w

    def abandon(self, handle):
        """Forget a queued batch (its shared memory is freed when its result arrives)."""
        self._stale.add(handle[0])

    def result(self, handle, timeout, ctx):
        """Wait for a queued batch; raises on worker error, death or timeout."""
        task_id, w = handle
        conn, proc = self._conns[w], self._workers[w]
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.broken = True
                raise DataLoaderTimeoutError(
                    f"DataLoader worker {proc.name} (pid {proc.pid}) timed out after {timeout} s "
                    "on one batch; a slow transform may need a larger `timeout`.")
            ready = multiprocessing.connection.wait([conn, proc.sentinel], left)
            if conn in ready or conn.poll():
                try:
                    tid, ok, payload = conn.recv()
                except (EOFError, OSError):  # the worker's end closed: it is exiting
                    proc.join(min(max(left, 0.1), 5.0))
                    self._died(proc)
                if tid != task_id:  # left over from an abandoned epoch
                    self._stale.discard(tid)
                    if ok:
                        _free(payload)
                    continue
                if not ok:
                    _raise_worker_error(payload, proc)
                return _from_shared(payload, ctx)
            if proc.sentinel in ready:
                self._died(proc)

    def _died(self, proc):
        self.broken = True
        raise DataLoaderWorkerError(
            f"DataLoader worker {proc.name} (pid {proc.pid}) exited unexpectedly with exit "
            f"code {proc.exitcode} while loading a batch")

    def shutdown(self):
        """Stop the workers and free the shared memory of results never consumed."""
        if self._starter is not None:
            self._starter.join()
            self._starter = None
        for conn in self._conns:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        # A broken pool (a worker died or is stuck) is not waited for.
        deadline = time.monotonic() + (0.0 if self.broken else 5.0)
        for conn, proc in zip(self._conns, self._workers):
            while proc.is_alive() or conn.poll():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                ready = multiprocessing.connection.wait([conn, proc.sentinel], left)
                if conn in ready:
                    try:
                        _, ok, payload = conn.recv()
                    except (EOFError, OSError):
                        break
                    if ok:
                        _free(payload)
                elif proc.sentinel in ready:
                    break
            if proc.is_alive():
                proc.terminate()
            proc.join(1.0)
            conn.close()
        self._workers, self._conns = [], []

