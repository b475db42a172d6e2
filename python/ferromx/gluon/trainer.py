"""The Gluon :class:`Trainer`, following ``mxnet.gluon.Trainer`` (MXNet 1.9.1).

There is no KVStore: ``kvstore`` and ``update_on_kvstore`` are accepted and ignored.
With parameters on several contexts, :meth:`Trainer.allreduce_grads` sums the gradients
across them (engine copies and adds); with one context it does nothing.
"""


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
    kvstore, compression_params, update_on_kvstore
        Accepted for compatibility; ignored.
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

    def step(self, batch_size, ignore_stale_grad=False):
        """Make one optimization step, normalizing gradients by ``1/batch_size``.

        Call after ``backward()``.  A parameter whose gradient was not written by backward
        since the last step raises ``UserWarning`` (as MXNet does), unless
        ``ignore_stale_grad=True``, which skips such parameters.
        """
        self._optimizer.rescale_grad = self._scale / batch_size
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sum gradients over contexts (a no-op with one context).

        For use with :meth:`update` when gradients are changed between the two calls.
        """
        self._allreduce_grads()

    def _allreduce_grads(self):
        for param in self._params:
            if param.grad_req == "null" or param._data is None:
                continue
            grads = param.list_grad()
            if len(grads) <= 1:
                continue
            total = grads[0] + grads[1].as_in_context(grads[0].context)
            for grad in grads[2:]:
                total = total + grad.as_in_context(grads[0].context)
            for grad in grads:
                grad[:] = total.as_in_context(grad.context)

    def update(self, batch_size, ignore_stale_grad=False):
        """Apply the optimizer without all-reducing (see :meth:`allreduce_grads`)."""
        self._optimizer.rescale_grad = self._scale / batch_size
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
        for updater, upd in zip(updaters, updates):
            if upd:
                indices, grads, weights = zip(*upd)
                updater(list(indices), list(grads), list(weights))

    def save_states(self, fname):
        """Save optimizer states (momentum ...) and the optimizer to ``fname`` (atomically)."""
        updater = self._get_updaters()[0]
        from ..serialization import atomic_write

        atomic_write(fname, updater.get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Load states written by :meth:`save_states` or by MXNet 1.9.1's
        ``Trainer.save_states``; they move to the weights' contexts on the next update."""
        with open(fname, "rb") as fobj:
            states = to_ferromx_states(fobj.read(), fname)
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
