"""The Gluon :class:`Trainer`, following ``mxnet.gluon.Trainer`` (MXNet 1.9.1).

The KVStore is chosen by MXNet's rules (``_init_kvstore``): none for one context on one
machine, otherwise ``kvstore`` (a name or a :class:`~ferromx.kvstore.KVStoreBase`); the
gradients of every context are reduced through it (engine copies and adds), and with
``update_on_kvstore`` the optimizer runs inside the store and the weights are pulled
back to every context.
"""

import os

from .. import kvstore as kvs
from .. import optimizer as opt
from ..base import MXNetError
from ..context import current_context
from ._states_io import to_ferromx_states
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]

_STALE_MSG = (
    "Gradient of Parameter `%s` on context %s has not been updated by backward since last `step`. "
    "This could mean a bug in your model that made it only use a subset of the Parameters "
    "(Blocks) for this iteration. If you are intentionally only using a subset, call step with "
    "ignore_stale_grad=True to suppress this warning and skip updating of Parameters with stale "
    "gradient"
)


def _grad_is_fresh(arr):
    """Whether backward wrote ``arr``'s gradient since the last step."""
    probe = getattr(arr, "grad_fresh", None)
    if probe is not None:
        return bool(probe())
    return bool(getattr(arr, "_fresh_grad", True))


def _mark_grad_stale(arr):
    setter = getattr(arr, "_set_grad_fresh", None)
    if setter is not None:
        setter(False)
    else:
        arr._fresh_grad = False


def _same_contexts(a, b):
    return len(a) == len(b) and all(x == y for x, y in zip(a, b))


class Trainer:
    """Apply an optimizer to a set of parameters.

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameter
        The parameters to train (a dict is taken in sorted-key order).
    optimizer : str or Optimizer
        The optimizer or its registered name (``'sgd'``, ``'adam'`` ...).
    optimizer_params : dict, optional
        Keyword arguments for the optimizer (``learning_rate``, ``wd``, ``momentum`` ...).
    kvstore : str, KVStore or None
        ``'device'`` (default), ``'local'``, a ``dist_*`` name, a store, or None.
    compression_params : dict, optional
        Gradient compression (only ``{'type': 'none'}``).
    update_on_kvstore : bool, optional
        Whether the optimizer runs inside the store (default: MXNet's choice).
    """

    def __init__(
        self,
        params,
        optimizer,
        optimizer_params=None,
        kvstore="device",
        compression_params=None,
        update_on_kvstore=None,
    ):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[key] for key in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise ValueError(  # noqa: TRY004 - as MXNet
                f"First argument must be a list or dict of Parameters, got {type(params)}."
            )
        self._params = []
        self._param2idx = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError(  # noqa: TRY004 - as MXNet
                    "First argument must be a list or dict of Parameters, got list of "
                    f"{type(param)}."
                )
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
        self._kvstore = None
        self._kv_initialized = False
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = list(self._params)
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._compression_params = compression_params
        self._contexts = None
        self._updaters = []
        self._loaded_states = None
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: param for i, param in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise ValueError(
                    "optimizer_params must be None if optimizer is an instance of Optimizer "
                    "instead of str"
                )
            self._optimizer = optimizer
            # Not a copy: later changes to lr_mult / wd_mult must take effect.
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = []

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            if contexts is not None and not _same_contexts(contexts, ctx):
                raise ValueError(
                    "All Parameters must be initialized on the same set of contexts, but "
                    f"Parameter {param.name} is initialized on {ctx!s} while previous Parameters "
                    f"are initialized on {contexts!s}."
                )
            contexts = ctx
        return list(contexts) if contexts else [current_context()]

    def _get_updaters(self):
        """One updater (optimizer state store) per context, created on first use."""
        if self._contexts is None:
            try:
                self._contexts = self._check_contexts()
            except RuntimeError:  # parameters not initialized yet
                pass
        wanted = len(self._contexts) if self._contexts else 1
        while len(self._updaters) < wanted:
            updater = opt.get_updater(self._optimizer)
            if self._loaded_states is not None:
                updater.set_states(self._loaded_states)
                updater.optimizer = self._optimizer
            self._updaters.append(updater)
        return self._updaters

    @property
    def optimizer(self):
        """The optimizer."""
        return self._optimizer

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning(
                "Optimizer has to be defined before its learning rate can be accessed."
            )
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        """Set the optimizer's learning rate (not allowed with an ``lr_scheduler``)."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate is mutated.")
        self._optimizer.set_learning_rate(lr)

    # ---- KVStore (MXNet's _init_kvstore rules) -------------------------------------------
    def _create_kvstore(self, num_device):
        config = self._kvstore_params["kvstore"]
        update = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
        if config is None:
            kv = None
        elif isinstance(config, kvs.KVStoreBase):
            kv = config
        elif isinstance(config, str):
            if num_device == 1 and "dist" not in config:
                kv = None
            else:
                kv = kvs.create(config)
                if config == "local":
                    sizes = [p.data(self._contexts[0]).size for p in self._params if p._data]
                    if sizes and max(sizes) > 1024 * 1024 * 16:
                        update = False
        else:
            raise TypeError("kvstore must be KVStore, str or None")
        if kv is None:
            update = False
        else:
            update = update and kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
        return kv, update

    def _init_kvstore(self):
        """Create the store as MXNet does and decide ``update_on_kvstore``."""
        self._contexts = self._check_contexts()
        config = self._kvstore_params
        kv, update = self._create_kvstore(len(self._contexts))
        self._distributed = "dist" in kv.type if kv is not None else False
        if self._distributed and "async" in kv.type:
            update = True
            if config["update_on_kvstore"] is False:
                raise ValueError("Please set update_on_kvstore=True when training in async mode.")
        if config["update_on_kvstore"] is not None:
            update = config["update_on_kvstore"]
        if update and kv is not None and not kv.is_capable(kvs.KVStoreBase.OPTIMIZER):
            if config["update_on_kvstore"]:
                raise ValueError(f"Please set update_on_kvstore=False when training with {type(kv)}")
            update = False
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if update:
                kv.set_optimizer(self._optimizer)
            self._kvstore, self._update_on_kvstore = kv, bool(update)
        else:
            self._kvstore, self._update_on_kvstore = None, None
        self._kv_initialized = True

    def _init_params(self):
        """Put initialized parameters into the store (broadcast from the first context)."""
        pending = []
        if self._kvstore:
            for param in self._params_to_init:
                if param._data is None:
                    pending.append(param)
                    continue
                datas = param.list_data()
                self._kvstore.broadcast(self._param2idx[param.name], datas[0], datas)
        self._params_to_init = pending

    def _reset_kvstore(self):
        """Forget the store (parameters moved to other contexts)."""
        if self._kvstore and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._contexts = None
        self._updaters = []
        self._params_to_init = list(self._params)

    def _prepare(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    def _check_and_rescale_grad(self, scale):
        changed = self._optimizer.rescale_grad != scale
        if self._update_on_kvstore and self._distributed and self._kv_initialized and changed:
            raise UserWarning(
                "Possible change in the `batch_size` from previous `step` detected. "
                "Optimizer gradient normalizing factor will not change w.r.t new "
                "batch_size when update_on_kvstore=True and when distributed kvstore "
                "is used."
            )
        self._optimizer.rescale_grad = scale

    def step(self, batch_size, ignore_stale_grad=False):
        """Make one optimization step, normalizing gradients by ``1/batch_size``.

        Call after ``backward()``.  A parameter whose gradient was not written by backward
        since the last step raises ``UserWarning`` (as MXNet does), unless
        ``ignore_stale_grad=True``, which skips such parameters.
        """
        self._check_and_rescale_grad(self._scale / batch_size)
        self._prepare()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Reduce the gradients over contexts through the KVStore (none: nothing to do).

        For use with :meth:`update` when gradients are changed between the two calls.
        """
        self._prepare()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError(
                "allreduce_grads() when parameters are updated on kvstore is not supported. "
                "Try setting `update_on_kvstore` to False when creating trainer."
            )
        self._allreduce_grads()

    def _allreduce_grads(self):
        if not self._kvstore:
            return
        if getattr(self._kvstore, "_fuses_key_lists", False):
            # one call in reverse parameter order: the store reduces the gradients in
            # buckets while backward still produces the earlier layers' gradients
            idx = [i for i, p in enumerate(self._params)
                   if p.grad_req != "null" and p._data is not None][::-1]
            grads = [self._params[i].list_grad() for i in idx]
            if idx and self._update_on_kvstore:
                outs = [self._params[i].list_data() for i in idx]
                self._kvstore.pushpull(idx, grads, out=outs)
            elif idx:
                self._kvstore.pushpull(idx, grads)
            return
        for i, param in enumerate(self._params):
            if param.grad_req == "null" or param._data is None:
                continue
            if self._update_on_kvstore:
                self._kvstore.pushpull(i, param.list_grad(), out=param.list_data(), priority=-i)
            else:
                self._kvstore.pushpull(i, param.list_grad(), priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Apply the optimizer without all-reducing (see :meth:`allreduce_grads`)."""
        self._prepare()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError(
                "update() when parameters are updated on kvstore is not supported. "
                "Try setting `update_on_kvstore` to False when creating trainer."
            )
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        updaters = self._get_updaters()
        updates = [[] for _ in updaters]
        # Check every parameter before touching any, so an error leaves no half-step.
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            if param._data is None:
                if ignore_stale_grad:
                    continue
                raise UserWarning(_STALE_MSG % (param.name, str(param.list_ctx())))
            datas = param.list_data()
            grads = param.list_grad()
            if not ignore_stale_grad:
                for data in datas:
                    if not _grad_is_fresh(data):
                        raise UserWarning(_STALE_MSG % (param.name, str(data.context)))
            for upd, data, grad in zip(updates, datas, grads):
                if not ignore_stale_grad or _grad_is_fresh(data):
                    upd.append((i, grad, data))
        for upd in updates:
            for _, _, data in upd:
                _mark_grad_stale(data)
        if self._kvstore and self._update_on_kvstore:
            return  # the store applied the optimizer in push
        for updater, upd in zip(updaters, updates):
            if upd:
                indices, grads, weights = zip(*upd)
                updater(list(indices), list(grads), list(weights))

    def save_states(self, fname):
        """Save optimizer states (momentum ...) and the optimizer to ``fname`` (atomically)."""
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
            return
        updater = self._get_updaters()[0]
        from ..serialization import atomic_write

        atomic_write(fname, updater.get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Load states written by :meth:`save_states` or by MXNet 1.9.1's
        ``Trainer.save_states``; they move to the weights' contexts on the next update."""
        self._prepare()
        with open(fname, "rb") as fobj:
            states = to_ferromx_states(fobj.read(), fname)
        if self._update_on_kvstore:
            updater = self._kvstore._updater
            try:
                updater.set_states(states)
            except Exception as err:
                raise MXNetError(
                    f"Cannot load trainer states from '{fname}': {type(err).__name__}: {err}"
                ) from err
            self._optimizer = updater.optimizer
            self._optimizer.param_dict = {i: param for i, param in enumerate(self._params)}
            return
        try:
            probe = opt.get_updater(self._optimizer)
            probe.set_states(states)
        except Exception as err:
            raise MXNetError(
                f"Cannot load trainer states from '{fname}': {type(err).__name__}: {err}"
            ) from err
        self._loaded_states = states
        self._optimizer = probe.optimizer
        self._optimizer.param_dict = {i: param for i, param in enumerate(self._params)}
        for updater in self._get_updaters():
            updater.set_states(states)
            updater.optimizer = self._optimizer
