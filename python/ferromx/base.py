"""Errors and small shared helpers (MXNet's ``mxnet.base``).

ferromx has no C library behind a ctypes FFI, so the ctypes helpers here (``c_str``,
``c_array`` ...) only build ctypes values for code that uses them, and :func:`check_call`
turns a non-zero return code into :class:`MXNetError`.
"""

import ctypes
import inspect
import os
import platform
import sys

import numpy as _np

from . import _native

__all__ = [
    "MXNetError",
    "MXNetIndexError",
    "MXNetTypeError",
    "MXNetValueError",
    "integer_types",
    "numeric_types",
    "string_types",
]


class MXNetError(RuntimeError):
    """Error raised by ferromx operators and by the engine (MXNet's ``MXNetError``)."""


class MXNetValueError(MXNetError, ValueError):
    """A bad value or shape; also a ``ValueError`` as NumPy would raise."""


class MXNetTypeError(MXNetError, TypeError):
    """A bad dtype; also a ``TypeError``."""


class MXNetIndexError(MXNetError, IndexError):
    """An index out of range; also an ``IndexError``."""


_native._set_error_types(MXNetError, MXNetValueError, MXNetTypeError, MXNetIndexError)

basestring = str
long = int

integer_types = (int, _np.int32, _np.int64)
numeric_types = (float, int, _np.generic)
string_types = (str,)

#: registered error classes by name (MXNet's ``base.error_types``)
error_types = {}


def py_str(x):
    """Decode the UTF-8 bytes ``x`` (a C string) to ``str``."""
    return x.decode("utf-8")


def data_dir_default():
    """The default data directory: ``%APPDATA%/mxnet`` on Windows, ``~/.mxnet`` elsewhere."""
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """The data directory for downloads: ``$MXNET_HOME`` or :func:`data_dir_default`."""
    return os.getenv("MXNET_HOME", data_dir_default())


class _NullType:
    """Placeholder for arguments left unset."""

    def __repr__(self):
        return "_Null"


_Null = _NullType()


def register_error(func_name=None, cls=None):
    """Register an error class under a name (usable as a decorator, with or without a name)."""
    if callable(func_name):
        cls = func_name
        func_name = cls.__name__

    def register(mycls):
        err_name = func_name if isinstance(func_name, str) else mycls.__name__
        error_types[err_name] = mycls
        return mycls

    if cls is None:
        return register
    return register(cls)


def _symbol_style_message(self, what):
    msg = f"Function {self.function}"
    if self.alias:
        msg += f' (namely operator "{self.alias}")'
    if self.args:
        msg += " with arguments ({})".format(", ".join(self.args))
    return msg + what


class _FunctionNotAvailable(MXNetError):
    """A function that exists for dense NDArray only (the function, its alias, the
    argument types; ``_WHAT`` completes the message)."""

    _WHAT = ""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        return _symbol_style_message(self, self._WHAT)


@register_error
class NotImplementedForSymbol(_FunctionNotAvailable):
    """A function available for NDArray but not for Symbol."""

    _WHAT = " is not implemented for Symbol and only available in NDArray."


class NotSupportedForSparseNDArray(_FunctionNotAvailable):
    """A function available for dense NDArray but not for sparse storage."""

    _WHAT = " is not supported for SparseNDArray and only available in NDArray."


for _name, _cls in (("ValueError", ValueError), ("TypeError", TypeError),
                    ("AttributeError", AttributeError), ("IndexError", IndexError),
                    ("NotImplementedError", NotImplementedError)):
    register_error(_name, _cls)


def c2pyerror(err_msg):
    """Split a C++-style error message into ``(python style message, error type name)``.

    The type is the ``Name:`` prefix of the first line when it is a registered-looking
    identifier; a ``Stack trace:`` block becomes a Python-style traceback header.
    """
    lines = err_msg.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    head = lines[0] if lines else ""
    err_type = None
    if ":" in head:
        cand = head.split(":", 1)[0].strip()
        if cand and all(c.isalnum() or c in "_." for c in cand):
            err_type = cand
    trace, message, in_trace = [], [], False
    for line in lines:
        if in_trace and line.startswith("  "):
            trace.append(line)
            continue
        in_trace = line.startswith("Stack trace")
        if not in_trace:
            message.append(line)
    out = ""
    if trace:
        out = "Traceback (most recent call last):\n" + "\n".join(reversed(trace)) + "\n"
    return out + "\n".join(message), err_type


def get_last_ffi_error():
    """ferromx reports errors as Python exceptions directly; this returns an ``MXNetError``
    saying so (MXNet reads the C library's last error here)."""
    return MXNetError("ferromx has no C API error buffer: errors are raised where they occur")


def check_call(ret):
    """Raise :class:`MXNetError` when the C-style return code ``ret`` is not 0."""
    if ret != 0:
        raise MXNetError(f"check_call: call returned error code {ret}")


class _MXClassPropertyDescriptor:
    """A property looked up on the class (and instances), with an optional class setter."""

    def __init__(self, fget, fset=None):
        self.fget = fget
        self.fset = fset

    def __get__(self, obj, clas=None):
        if clas is None:
            clas = type(obj)
        return self.fget.__get__(obj, clas)()

    def __set__(self, obj, value):
        if not self.fset:
            raise MXNetError(f"cannot use the setter: {obj!r} has no setter for this attribute")
        type_ = obj if inspect.isclass(obj) else type(obj)
        return self.fset.__get__(None, type_)(value)

    def setter(self, func):
        """Set the class-level setter (wrapped as a classmethod)."""
        if not isinstance(func, (classmethod, staticmethod)):
            func = classmethod(func)
        self.fset = func
        return self


class _MXClassPropertyMetaClass(type):
    """Metaclass routing class-attribute assignment to class properties' setters."""

    def __setattr__(cls, key, value):
        obj = cls.__dict__.get(key)
        if obj and isinstance(obj, _MXClassPropertyDescriptor):
            return obj.__set__(cls, value)
        return super().__setattr__(key, value)


def with_metaclass(meta, *bases):
    """Create a base class with metaclass ``meta`` (Python 2/3 compatible idiom)."""

    class _Meta(type):
        def __new__(cls, name, _bases, d):
            return meta(name, bases, d)

        @classmethod
        def __prepare__(cls, name, _bases):
            return meta.__prepare__(name, bases)

    return type.__new__(_Meta, "temporary_class", (), {})


def classproperty(func):
    """Decorator: a read-only (unless ``.setter`` is used) property of the class itself."""
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _MXClassPropertyDescriptor(func)


mx_int = ctypes.c_int
mx_uint = ctypes.c_uint
mx_int64 = ctypes.c_int64
mx_float = ctypes.c_float
mx_float_p = ctypes.POINTER(mx_float)
mx_real_t = _np.float32
NDArrayHandle = FunctionHandle = OpHandle = CachedOpHandle = ctypes.c_void_p
SymbolHandle = ExecutorHandle = DataIterCreatorHandle = DataIterHandle = ctypes.c_void_p
KVStoreHandle = RecordIOHandle = RtcHandle = CudaModuleHandle = ctypes.c_void_p
CudaKernelHandle = ProfileHandle = DLPackHandle = ctypes.c_void_p


class MXCallbackList(ctypes.Structure):
    """A ctypes structure of callbacks (as MXNet's custom-operator interface passes)."""

    _fields_ = [
        ("num_callbacks", ctypes.c_int),
        ("callbacks", ctypes.POINTER(ctypes.CFUNCTYPE(ctypes.c_int))),
        ("contexts", ctypes.POINTER(ctypes.c_void_p)),
    ]


def c_str(string):
    """``string`` as a ``ctypes.c_char_p`` (UTF-8)."""
    return ctypes.c_char_p(string.encode("utf-8"))


def c_str_array(strings):
    """A ctypes array of ``c_char_p`` holding ``strings`` (UTF-8)."""
    arr = (ctypes.c_char_p * len(strings))()
    arr[:] = [s.encode("utf-8") for s in strings]
    return arr


def c_array(ctype, values):
    """A ctypes array of ``ctype`` holding ``values``."""
    out = (ctype * len(values))()
    out[:] = values
    return out


def c_array_buf(ctype, buf):
    """A ctypes array of ``ctype`` sharing the memory of the writable buffer ``buf``."""
    return (ctype * len(buf)).from_buffer(buf)


def c_handle_array(objs):
    """A ctypes ``void*`` array of the ``.handle`` of each object."""
    arr = (ctypes.c_void_p * len(objs))()
    arr[:] = [o.handle for o in objs]
    return arr


def ctypes2buffer(cptr, length):
    """Copy ``length`` bytes from the ``char*`` pointer ``cptr`` into a ``bytearray``."""
    if not isinstance(cptr, ctypes.POINTER(ctypes.c_char)):
        raise TypeError("expected a char pointer")
    res = bytearray(length)
    rptr = (ctypes.c_char * length).from_buffer(res)
    if not ctypes.memmove(rptr, cptr, length):
        raise RuntimeError("memmove failed")
    return res


def ctypes2numpy_shared(cptr, shape):
    """A NumPy float32 array of ``shape`` sharing the memory of ``float*`` pointer ``cptr``."""
    if not isinstance(cptr, ctypes.POINTER(mx_float)):
        raise TypeError("expected a float pointer")
    size = 1
    for s in shape:
        size *= s
    dbuffer = (mx_float * size).from_address(ctypes.addressof(cptr.contents))
    return _np.frombuffer(dbuffer, dtype=_np.float32).reshape(shape)


def build_param_doc(arg_names, arg_types, arg_descs, remove_dup=True):
    """Build a NumPy-style ``Parameters`` docstring section from names, types and texts."""
    seen, parts = set(), []
    for key, type_info, desc in zip(arg_names, arg_types, arg_descs):
        if (key in seen and remove_dup) or key == "num_args":
            continue
        seen.add(key)
        part = f"{key} : {type_info}"
        if desc:
            part += "\n    " + desc
        parts.append(part)
    return "Parameters\n----------\n{}\n".format("\n".join(parts))


def add_fileline_to_docstring(module, incursive=True):
    """Append ``From:file:line`` to the docstring of each function (and class method) of
    ``module`` (a module or its name)."""

    def _add(obj):
        if obj.__doc__ is None or "From:" in obj.__doc__:
            return
        try:
            fname = inspect.getsourcefile(obj)
            line = inspect.getsourcelines(obj)[-1]
        except (OSError, TypeError):
            return
        if fname is not None:
            obj.__doc__ += f"\n\nFrom:{fname}:{line}"

    if isinstance(module, str):
        module = sys.modules[module]
    for _, obj in inspect.getmembers(module):
        if inspect.isbuiltin(obj):
            continue
        if inspect.isfunction(obj):
            _add(obj)
        elif inspect.ismethod(obj):
            _add(obj.__func__)
        elif inspect.isclass(obj) and incursive:
            add_fileline_to_docstring(obj, False)


class _NoLibMXNet:
    """Stand-in for MXNet's ``_LIB`` (the ctypes handle of libmxnet): ferromx has no C API,
    so any ``_LIB.MXSomething`` raises ``MXNetError`` naming the function."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise MXNetError(
            f"_LIB.{name}: ferromx has no libmxnet C API; use the Python API instead "
            f"(for example nd.from_dlpack / nd.to_dlpack_for_read)"
        )

    def __repr__(self):
        return "<ferromx: no libmxnet C API>"


_LIB = _NoLibMXNet()


def _as_list(obj):
    """``obj`` itself when it is a list or tuple, else ``[obj]``."""
    if isinstance(obj, (list, tuple)):
        return obj
    return [obj]


def _bfloat16():
    return _np.dtype([("bfloat16", _np.uint16)])


#: MXNet's dtype ids (``mshadow::TypeFlag``), NumPy type -> id
_DTYPE_NP_TO_MX = {
    None: -1,
    _np.float32: 0,
    _np.float64: 1,
    _np.float16: 2,
    _np.uint8: 3,
    _np.int32: 4,
    _np.int8: 5,
    _np.int64: 6,
    _np.bool_: 7,
    _bfloat16(): 12,
}
#: MXNet's dtype ids, id -> NumPy type
_DTYPE_MX_TO_NP = {v: k for k, v in _DTYPE_NP_TO_MX.items()}


def dtype_np_to_mx(dtype):
    """MXNet's numeric id of ``dtype`` (a NumPy dtype, type or name; ``'bfloat16'`` is 12)."""
    if dtype is None:
        return -1
    if isinstance(dtype, str) and dtype == "bfloat16":
        return 12
    try:
        key = _np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype_np_to_mx: {dtype!r} is not a dtype") from None
    if key == _bfloat16():
        return 12
    if key.type not in _DTYPE_NP_TO_MX:
        raise TypeError(f"dtype_np_to_mx: dtype {key.name} has no MXNet id")
    return _DTYPE_NP_TO_MX[key.type]


def dtype_mx_to_np(dtype_idx):
    """The NumPy dtype of MXNet dtype id ``dtype_idx`` (``None`` for -1)."""
    if dtype_idx not in _DTYPE_MX_TO_NP:
        raise TypeError(f"dtype_mx_to_np: unknown MXNet dtype id {dtype_idx!r}")
    value = _DTYPE_MX_TO_NP[dtype_idx]
    return None if value is None else _np.dtype(value)


#: operator-name prefixes of MXNet's np / npx operators and their submodules
#: (``_np_random_x`` is ``np.random.x``; ``_npx_image_x`` is ``npx.image.x``)
_NP_OP_PREFIX = "_np_"
_NP_OP_SUBMODULE_LIST = ["_random_", "_linalg_"]
_NP_EXT_OP_PREFIX = "_npx_"
_NP_EXT_OP_SUBMODULE_LIST = ["_image_", "_random_"]
_NP_INTERNAL_OP_PREFIX = "_npi_"


def _get_op_submodule_name(op_name, op_name_prefix, submodule_name_list):
    """The submodule part (``"_random_"`` ...) of ``op_name`` after ``op_name_prefix``, or
    ``""`` when the operator lives in the root module."""
    if not op_name.startswith(op_name_prefix):
        raise ValueError(f"operator {op_name!r} does not start with {op_name_prefix!r}")
    rest = op_name[len(op_name_prefix) :]
    for sub in submodule_name_list:
        if rest.startswith(sub):
            return sub
    return ""
