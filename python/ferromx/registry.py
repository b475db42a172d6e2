"""Class registries by base class, as ``mxnet.registry``: a ``register`` decorator, an
``alias`` decorator and a ``create`` factory per base class (``metric``, ``initializer``
and ``optimizer`` keep their own registries; this module is for code that builds its own
factories the MXNet way)."""

import json
import warnings

_REGISTRY = {}


def _table(base_class):
    return _REGISTRY.setdefault(base_class, {})


def get_registry(base_class):
    """A copy of the ``{name: class}`` registry of ``base_class``."""
    return dict(_table(base_class))


def get_register_func(base_class, nickname):
    """A ``register(klass, name=None)`` function for subclasses of ``base_class``; names are
    case-insensitive, and registering a name again warns and replaces it."""
    table = _table(base_class)

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise AssertionError(f"Can only register subclass of {base_class.__name__}")  # noqa: TRY004 - MXNet asserts
        key = (name or klass.__name__).lower()
        if key in table and table[key] is not klass:
            old = table[key]
            warnings.warn(f"New {nickname} {klass.__module__}.{klass.__name__} registered with name "
                          f"{key} is overriding existing {nickname} {old.__module__}.{old.__name__}",
                          UserWarning, stacklevel=2)
        table[key] = klass
        return klass

    register.__doc__ = f"Register {nickname} to the {nickname} factory"
    return register


def get_alias_func(base_class, nickname):
    """An ``alias(*names)`` class decorator registering a class under extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for a in aliases:
                register(klass, a)
            return klass

        return reg

    return alias


def get_create_func(base_class, nickname):
    """A ``create(name_or_instance_or_config, *args, **kwargs)`` factory: an instance is
    returned as is, a dict or its JSON (``'{...}'``, ``'["name", {...}]'``) is unpacked, and a
    name is looked up case-insensitively."""
    table = _table(base_class)

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        else:
            name = kwargs.pop(nickname)
        if isinstance(name, base_class):
            if args or kwargs:
                raise AssertionError(f"{nickname} is already an instance. Additional arguments are invalid")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise AssertionError(f"{nickname} must be of string type")  # noqa: TRY004 - MXNet asserts
        if name.startswith("["):
            name, kw = json.loads(name)
            return create(name, **kw)
        if name.startswith("{"):
            return create(**json.loads(name))
        key = name.lower()
        if key not in table:
            raise AssertionError(f"{name} is not registered. Please register with {nickname}.register first")
        return table[key](*args, **kwargs)

    create.__doc__ = f"Create a {nickname} instance from config."
    return create
