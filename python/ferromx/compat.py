"""``ferromx.compat``: run unmodified MXNet scripts on ferromx.

:func:`install` makes ``mxnet`` and every ``mxnet.X`` module name an alias of the matching
``ferromx`` module (``mxnet.ndarray`` *is* ``ferromx.ndarray``), so ``import mxnet as mx``,
``from mxnet import nd, gluon, autograd``, ``from mxnet.gluon import nn`` and
``import mxnet.ndarray as nd`` all work. The top-level ``mxnet`` is a thin facade over the
``ferromx`` package (attribute reads and writes go to ``ferromx``) that reports MXNet's
version: ``mxnet.__version__`` is ``'1.9.1'``, the MXNet release ferromx follows, while
``ferromx.__version__`` stays ferromx's own. Nothing is aliased until you ask::

    import ferromx.compat
    ferromx.compat.install()
    import mxnet as mx          # ferromx

or, for a whole script, from the command line::

    python -m ferromx.compat train.py --epochs 3
    python -m ferromx.compat -m package.module args...

:func:`uninstall` removes the alias again (and the ``mxnet`` entries it put in
``sys.modules``). Importing ``ferromx`` never installs it.
"""

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys
import types

__all__ = ["install", "is_installed", "main", "uninstall"]

ALIAS = "mxnet"
TARGET = "ferromx"
#: the MXNet release whose behaviour ferromx follows; what ``mxnet.__version__`` reports
MXNET_VERSION = "1.9.1"


class _Facade(types.ModuleType):
    """The ``mxnet`` module: every attribute is the ``ferromx`` package's, but ``__version__``.

    Dunder attributes the import system sets (``__spec__``, ``__loader__`` ...) stay on the
    facade; other writes go to ``ferromx``.
    """

    def __init__(self, target):
        super().__init__(target.__name__, target.__doc__)
        object.__setattr__(self, "_ferromx_target", target)
        object.__setattr__(self, "__version__", MXNET_VERSION)
        for key in ("__file__", "__path__", "__package__", "__spec__", "__loader__"):
            if hasattr(target, key):
                object.__setattr__(self, key, getattr(target, key))

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_ferromx_target"), name)

    def __setattr__(self, name, value):
        if name.startswith("__") and name.endswith("__"):
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, "_ferromx_target"), name, value)

    def __delattr__(self, name):
        delattr(object.__getattribute__(self, "_ferromx_target"), name)

    def __dir__(self):
        return sorted(set(dir(object.__getattribute__(self, "_ferromx_target"))) | {"__version__"})

    def __repr__(self):
        return f"<module 'mxnet' (ferromx facade, MXNet {MXNET_VERSION} API)>"


def _target_name(fullname):
    return TARGET + fullname[len(ALIAS) :]


class _AliasLoader(importlib.abc.Loader):
    """Hands back the already-imported ``ferromx`` module for an ``mxnet`` name."""

    def __init__(self, target):
        self._target = target
        self._module = None
        self._spec = None

    def create_module(self, spec):
        self._module = (
            self._target
            if isinstance(self._target, types.ModuleType)
            else importlib.import_module(self._target)
        )
        self._spec = getattr(self._module, "__spec__", None)
        if spec.name == ALIAS:
            return _Facade(self._module)
        return self._module

    def exec_module(self, module):
        # The import system stamped the alias spec onto the shared module object;
        # put the real one back so ferromx's own imports and reloads are unaffected.
        try:
            module.__spec__ = self._spec
        except AttributeError:  # pragma: no cover - read-only module types
            pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``mxnet`` / ``mxnet.*`` and answers with the ``ferromx`` module of that name."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        real = _target_name(fullname)
        module = sys.modules.get(real)
        if module is None:
            try:
                real_spec = importlib.util.find_spec(real)
            except (ImportError, ValueError):
                real_spec = None
            if real_spec is None:
                module = self._attribute_module(real)
                if module is None:
                    return None  # -> ModuleNotFoundError for the mxnet name
        if module is not None:
            is_pkg = hasattr(module, "__path__")
            loader = _AliasLoader(module)
        else:
            is_pkg = real_spec.submodule_search_locations is not None
            loader = _AliasLoader(real)
        return importlib.util.spec_from_loader(fullname, loader, is_package=is_pkg)

    @staticmethod
    def _attribute_module(real):
        """``ferromx.nd`` and friends: modules bound as attributes under another name."""
        parent, _, attr = real.rpartition(".")
        if not parent:
            return None
        try:
            mod = importlib.import_module(parent)
        except ImportError:
            return None
        value = getattr(mod, attr, None)
        return value if isinstance(value, types.ModuleType) else None

    def __repr__(self):
        return f"<ferromx.compat alias finder {ALIAS} -> {TARGET}>"


_FINDER = _AliasFinder()


def is_installed():
    """Whether the ``mxnet`` alias is active."""
    return _FINDER in sys.meta_path


def install():
    """Makes ``import mxnet`` (and every ``mxnet.X``) import ferromx. Idempotent.

    Raises ``RuntimeError`` if a real ``mxnet`` is already imported in this process.
    """
    real = sys.modules.get(ALIAS)
    if real is not None and not getattr(real, "__name__", "").startswith(TARGET):
        raise RuntimeError(
            "ferromx.compat.install(): a real 'mxnet' module is already imported; "
            "install the alias before anything imports mxnet"
        )
    if not is_installed():
        sys.meta_path.insert(0, _FINDER)
    return _FINDER


def uninstall():
    """Removes the alias and the ``mxnet`` / ``mxnet.*`` entries it created in ``sys.modules``."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + ".")]:
        mod = sys.modules[name]
        if getattr(mod, "__name__", "").startswith(TARGET):
            del sys.modules[name]


_USAGE = """usage: python -m ferromx.compat SCRIPT.py [ARGS...]
       python -m ferromx.compat -m MODULE [ARGS...]

Runs an MXNet script (or module) with `import mxnet` mapped to ferromx."""


def main(argv=None):
    """Command-line entry point: runs a script or ``-m module`` with the alias installed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    path = argv[0]
    if not os.path.exists(path):
        print(f"ferromx.compat: can't open file {path!r}", file=sys.stderr)
        return 2
    sys.argv = argv
    # like `python script.py`: the script's directory goes first on sys.path
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    runpy.run_path(path, run_name="__main__")
    return 0


if __name__ == "__main__":
    # Run as `python -m ferromx.compat`: use the canonical module (not this `__main__`
    # copy) so `ferromx.compat.is_installed()` inside the script sees the same finder.
    from ferromx import compat as _compat  # noqa: PLW0406 - the canonical module

    sys.exit(_compat.main())
