"""The single-process KVStore and :func:`create`."""

import pickle

from .. import optimizer as opt
from ..base import MXNetError
from ..ndarray import NDArray

__all__ = ["SUPPORTED", "KVStore", "KVStoreBase", "create"]

SUPPORTED = ("local", "device", "dist_sync", "dist_sync_device", "dist_async", "horovod")
_DIST = ("dist_sync", "dist_sync_device", "dist_async", "dist_device_sync", "horovod")


class KVStoreBase:
    """Common base of the stores (``isinstance`` checks, capability names)."""

    OPTIMIZER = "optimizer"

    def is_capable(self, capability):
        """Whether the store supports ``capability`` (``'optimizer'``)."""
        return capability.lower() == self.OPTIMIZER


def _key_value_pairs(key, value, what):
    """Normalise ``(key, value)`` to a list of ``(key, [arrays])``."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise MXNetError(
                f"KVStore.{what}: {len(key)} keys need a list of {len(key)} values, "
                f"got {type(value).__name__}"
            )
        return [(_check_key(k, what), _as_list(v, what)) for k, v in zip(key, value)]
    return [(_check_key(key, what), _as_list(value, what))]


def _check_key(key, what):
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise MXNetError(f"KVStore.{what}: keys must be int or str, got {type(key).__name__}")
    return key


def _as_list(value, what):
    vals = list(value) if isinstance(value, (list, tuple)) else [value]
    for v in vals:
        if not isinstance(v, NDArray):
            raise MXNetError(f"KVStore.{what}: values must be NDArrays, got {type(v).__name__}")
    if not vals:
        raise MXNetError(f"KVStore.{what}: empty list of values")
    return vals


def _sum_on(values, ctx):
    """Sum of ``values`` on ``ctx``: engine copies and adds (returns at once)."""
    total = values[0].as_in_context(ctx)
    if len(values) == 1:
        return total
    for v in values[1:]:
        total = total + v.as_in_context(ctx)
    return total


def _assign(dst, src):
    dst[:] = src.as_in_context(dst.context)


class KVStore(KVStoreBase):
    """A key-value store on one machine (``'local'`` or ``'device'``).

    ``push`` sums the values given for a key (one per context) and, with an optimizer
    set, updates the stored value with it; without one the sum replaces the stored value.
    ``pull`` copies the stored value to every output. All of it is engine operations.
    """

    def __init__(self, kv_type="local"):
        self._type = kv_type
        self._store = {}
        self._key_kind = None
        self._updater = None
        self._optimizer = None
        self._compression = {"type": "none"}

    # -- properties ---------------------------------------------------------------
    @property
    def type(self):
        """The store's type name."""
        return self._type

    @property
    def rank(self):
        """This worker's rank (0: one process)."""
        return 0

    @property
    def num_workers(self):
        """Number of workers (1: one process)."""
        return 1

    def barrier(self):
        """Synchronise the workers (nothing to do in one process)."""

    def _stored(self, key, what):
        try:
            return self._store[key]
        except KeyError:
            raise MXNetError(
                f"KVStore.{what}: key {key!r} has not been initialized (call init first)"
            ) from None

    def _check_kind(self, key, what):
        kind = type(key)
        if self._key_kind is None:
            self._key_kind = kind
        elif kind is not self._key_kind:
            raise MXNetError(
                f"KVStore.{what}: cannot mix int and str keys (this store uses "
                f"{self._key_kind.__name__} keys, got {key!r})"
            )

    @staticmethod
    def _check_shapes(key, stored, vals, what):
        for v in vals:
            if v.shape != stored.shape:
                raise MXNetError(
                    f"KVStore.{what}: shape mismatch for key {key!r}: stored {stored.shape}, "
                    f"got {v.shape}"
                )

    # -- operations ---------------------------------------------------------------
    def init(self, key, value):
        """Initialise ``key`` (or each key of a list) with a copy of ``value``."""
        for k, vals in _key_value_pairs(key, value, "init"):
            self._check_kind(k, "init")
            if k in self._store:
                raise MXNetError(
                    f"KVStore.init: duplicate init of key {k!r}. Please double check if you "
                    "called kv.init or kv.broadcast with this key multiple times"
                )
            self._store[k] = vals[0].copy()

    def push(self, key, value, priority=0):
        """Push ``value`` (an NDArray or one per context) for ``key`` (or a list of keys)."""
        del priority
        pairs = _key_value_pairs(key, value, "push")
        stored = [self._stored(k, "push") for k, _ in pairs]
        for (k, vals), st in zip(pairs, stored):
            self._check_shapes(k, st, vals, "push")
        for (k, vals), st in zip(pairs, stored):
            merged = _sum_on(vals, st.context)
            if self._updater is not None:
                self._updater(k, merged, st)
            else:
                st[:] = merged

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the value of ``key`` (or of each key of a list) into ``out``."""
        del priority, ignore_sparse
        if out is None:
            raise MXNetError("KVStore.pull: out is required")
        pairs = _key_value_pairs(key, out, "pull")
        stored = [self._stored(k, "pull") for k, _ in pairs]
        for (k, outs), st in zip(pairs, stored):
            self._check_shapes(k, st, outs, "pull")
        for (_, outs), st in zip(pairs, stored):
            for o in outs:
                _assign(o, st)

    def pushpull(self, key, value, out=None, priority=0):
        """``push`` then ``pull`` (into ``value`` when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """``init`` the key with ``value`` then ``pull`` it into ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Not supported: ferromx has no row_sparse storage."""
        raise MXNetError("KVStore.row_sparse_pull: ferromx has no row_sparse storage type")

    def set_gradient_compression(self, compression_params):
        """Only ``{'type': 'none'}`` is accepted (ferromx does not compress gradients)."""
        ctype = dict(compression_params or {}).get("type", "none")
        if ctype != "none":
            raise MXNetError(
                f"KVStore.set_gradient_compression: compression type {ctype!r} is not "
                "supported by ferromx (only 'none')"
            )
        self._compression = dict(compression_params or {"type": "none"})

    def set_optimizer(self, optimizer):
        """Apply ``optimizer`` inside the store: each push updates the stored value."""
        if not isinstance(optimizer, opt.Optimizer):
            raise MXNetError(
                f"KVStore.set_optimizer: expected an Optimizer, got {type(optimizer).__name__}"
            )
        self._optimizer = optimizer
        self._updater = opt.get_updater(optimizer)

    def _set_updater(self, updater):
        """Use ``updater(key, merged_value, stored_value)`` on each push."""
        self._updater = updater

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the optimizer states (and the optimizer with ``dump_optimizer``)."""
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise MXNetError("KVStore.save_optimizer_states: no optimizer set (set_optimizer)")
        from ..serialization import atomic_write

        atomic_write(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Load optimizer states written by :meth:`save_optimizer_states`."""
        if self._updater is None or not hasattr(self._updater, "set_states"):
            raise MXNetError("KVStore.load_optimizer_states: no optimizer set (set_optimizer)")
        with open(fname, "rb") as fobj:
            data = fobj.read()
        try:
            self._updater.set_states(data)
        except (pickle.UnpicklingError, EOFError, ValueError) as err:
            raise MXNetError(f"KVStore.load_optimizer_states: cannot load {fname!r}: {err}") from err
        self._optimizer = self._updater.optimizer


def create(name="local"):
    """Create a store: ``'local'``, ``'device'`` (one process); ``'dist_sync'``,
    ``'dist_sync_device'``, ``'dist_async'``, ``'horovod'`` (MPI, see
    :mod:`ferromx.distributed`)."""
    if not isinstance(name, str):
        raise TypeError(f"kvstore.create: name must be a str, got {type(name).__name__}")
    if name in ("local", "device") or name.startswith("local_"):
        return KVStore(name)
    if name == "nccl":
        raise MXNetError(
            "kvstore.create('nccl'): NCCL needs GPUs, which ferromx does not have; use "
            f"one of {', '.join(SUPPORTED)}"
        )
    if name in _DIST:
        from ..distributed import _create_kvstore

        return _create_kvstore(name)
    raise MXNetError(
        f"kvstore.create: unknown KVStore type {name!r}; supported: {', '.join(SUPPORTED)}"
    )
