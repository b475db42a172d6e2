"""``mx.model``: checkpoints as MXNet writes them (``prefix-symbol.json`` and
``prefix-NNNN.params`` with ``arg:``/``aux:`` keys)."""

from . import ndarray as nd
from . import symbol as sym

__all__ = ["load_checkpoint", "load_params", "save_checkpoint"]


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``symbol`` (when given) and the parameters of checkpoint ``epoch``."""
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json")
    data = {f"arg:{k}": v for k, v in arg_params.items()}
    data.update({f"aux:{k}": v for k, v in aux_params.items()})
    nd.save(f"{prefix}-{epoch:04d}.params", data)


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` of checkpoint ``epoch``."""
    loaded = nd.load(f"{prefix}-{epoch:04d}.params")
    arg = {k[4:]: v for k, v in loaded.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in loaded.items() if k.startswith("aux:")}
    return arg, aux


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` of checkpoint ``epoch``."""
    arg, aux = load_params(prefix, epoch)
    return sym.load(f"{prefix}-symbol.json"), arg, aux
