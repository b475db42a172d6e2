"""MXNet 1.9.1's binary NDArray file format (``nd.save`` / ``.params`` files), both ways.

Layout (all integers little-endian), written and read byte-compatibly with MXNet 1.9.1:

* **List file**: ``uint64 0x112`` (list magic), ``uint64 0`` (reserved), ``uint64 n``,
  ``n`` NDArray records, then the names: ``uint64 m`` (0 for a list, ``n`` for a dict) and
  ``m`` times ``uint64 length`` + UTF-8 bytes.
* **NDArray record** (V2 ``0xF993FAC9``, or V3 ``0xF993FACA`` under NumPy shape
  semantics): ``uint32 magic``, ``int32 stype`` (0 dense; 1 row-sparse and 2 CSR are
  refused), the shape as ``int32 ndim`` + ``ndim`` x ``int64``, the context as
  ``int32 dev_type`` + ``int32 dev_id`` (MXNet writes the array's own context; ferromx
  writes ``cpu(0)``, i.e. ``1, 0``), ``int32 dtype flag`` (mshadow's: 0 float32, 1 float64,
  2 float16, 3 uint8, 4 int32, 5 int8, 6 int64, 7 bool, 8 int16, 9 uint16, 10 uint32,
  11 uint64, 12 bfloat16) and the C-order data.  A "none" array (unknown shape: ``ndim``
  -1 or a -1 dim in V3, ``ndim`` 0 in V2) stops after the shape.
* **Legacy records** (read only): V1 ``0xF993FAC8`` (int64 dims, no stype) and the
  oldest form, whose first ``uint32`` is ``ndim`` followed by ``uint32`` dims.

Writing picks V3 for every record when NumPy shape semantics are on (``npx.set_np()``,
``with np_shape(True)``) (as MXNet does) *or* when
some array is 0-d: MXNet 1.9.1 itself writes a 0-d array outside NumPy semantics as a V2
record that it cannot read back, so ferromx writes such a file as MXNet would under
``set_np()`` (MXNet loads it inside ``npx.set_np()`` / ``with mx.util.np_shape(True)``).
Reading checks the mode as MXNet does: a V3 file loads only with NumPy shape semantics on,
any other only with them off (Gluon's parameter loader reads either, as MXNet's does by
retrying with the semantics off).

Reading from a path goes first through the native reader (``ferromx::fileio::mxnet``): it
maps the file copy-on-write and the arrays share its pages (the OS reads a page when it is
first touched; ``FERROMX_MMAP_LOAD=0`` turns this off).  What it does not handle falls back
to the Python reader here, which parses the whole buffer into NumPy arrays first and
creates ferromx arrays only when everything parsed.  Either way a bad file loads nothing.  Writing goes to a temporary file
in the target directory, is fsynced and then ``os.replace``-d over the target.
"""

import os
import struct
import tempfile

import numpy as np

from .base import MXNetError

__all__ = [
    "LIST_MAGIC",
    "HostArray",
    "MXNetFormatError",
    "dump_record",
    "dumps",
    "is_mxnet_file",
    "load",
    "load_host",
    "load_record",
    "loads_host",
    "save",
    "to_ndarray",
]

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA

_FLAG_TO_DTYPE = {
    0: "float32",
    1: "float64",
    2: "float16",
    3: "uint8",
    4: "int32",
    5: "int8",
    6: "int64",
    7: "bool",
    8: "int16",
    9: "uint16",
    10: "uint32",
    11: "uint64",
    12: "bfloat16",
}
_DTYPE_TO_FLAG = {name: flag for flag, name in _FLAG_TO_DTYPE.items()}
_STYPE_NAMES = {-1: "undefined", 0: "default", 1: "row_sparse", 2: "csr"}
_MAX_NDIM = 32
_CPU_CONTEXT = (1, 0)  # dev_type kCPU, dev_id 0

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")


class MXNetFormatError(MXNetError, ValueError):
    """A file or buffer is not a valid MXNet NDArray file (bad magic, truncated, corrupt)."""


class HostArray:
    """One parsed record: a NumPy ``value`` (``None`` for MXNet's "none" array) and the
    ferromx ``dtype`` name (``bfloat16`` values are held as float32)."""

    __slots__ = ("dtype", "value")

    def __init__(self, value, dtype):
        self.value = value
        self.dtype = dtype

    @property
    def shape(self):
        """The array's shape (``None`` for a none array)."""
        return None if self.value is None else self.value.shape

    def __repr__(self):
        return f"HostArray(shape={self.shape}, dtype={self.dtype})"


# ---- reading ---------------------------------------------------------------------------------
class _Reader:
    """Bounds-checked little-endian reads from a bytes-like buffer."""

    def __init__(self, buf, source):
        self.buf = memoryview(buf).cast("B")
        self.pos = 0
        self.source = source

    def fail(self, what):
        raise MXNetFormatError(
            f"Invalid MXNet NDArray file {self.source}: {what} (at byte {self.pos})"
        )

    def take(self, nbytes, what):
        if nbytes < 0 or self.pos + nbytes > len(self.buf):
            self.fail(
                f"truncated while reading {what} (needs {nbytes} bytes, "
                f"{len(self.buf) - self.pos} left)"
            )
        out = self.buf[self.pos : self.pos + nbytes]
        self.pos += nbytes
        return out

    def unpack(self, fmt, what):
        return fmt.unpack(self.take(fmt.size, what))[0]

    def remaining(self):
        return len(self.buf) - self.pos


def _read_shape(rd, dim_fmt, ndim, what):
    if ndim == -1:
        return None
    if ndim < -1 or ndim > _MAX_NDIM:
        rd.fail(f"implausible ndim {ndim} in {what}")
    size = 8 if dim_fmt == "q" else 4
    raw = rd.take(size * ndim, f"the dims of {what}")
    return tuple(int(d) for d in np.frombuffer(raw, dtype="<" + dim_fmt))


def _read_payload(rd, shape, what):
    """Context, dtype flag and data of a record whose ``shape`` is known."""
    rd.unpack(_I32, f"the context of {what}")  # dev_type: ferromx loads onto the CPU
    rd.unpack(_I32, f"the device id of {what}")
    flag = rd.unpack(_I32, f"the dtype flag of {what}")
    dtype = _FLAG_TO_DTYPE.get(flag)
    if dtype is None:
        rd.fail(f"unknown dtype flag {flag} in {what} (known: {sorted(_FLAG_TO_DTYPE)})")
    if any(d < 0 for d in shape):
        rd.fail(f"negative dimension in shape {shape} of {what}")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if dtype == "bfloat16":
        raw = rd.take(2 * count, f"the data of {what}")
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        value = bits.view(np.float32).reshape(shape)
    else:
        np_dtype = np.dtype(dtype).newbyteorder("<")
        raw = rd.take(np_dtype.itemsize * count, f"the data of {what}")
        value = np.frombuffer(raw, dtype=np_dtype).astype(np.dtype(dtype)).reshape(shape)
    return HostArray(value, dtype)


def _read_record(rd, what):
    magic = rd.unpack(_U32, f"the magic of {what}")
    if magic in (V2_MAGIC, V3_MAGIC):
        stype = rd.unpack(_I32, f"the storage type of {what}")
        if stype in (1, 2):
            rd.fail(
                f"{what} has sparse storage ({_STYPE_NAMES[stype]}); ferromx supports only "
                "dense (default storage) arrays"
            )
        if stype not in (-1, 0):
            rd.fail(f"unknown storage type {stype} in {what}")
        ndim = rd.unpack(_I32, f"the ndim of {what}")
        shape = _read_shape(rd, "q", ndim, what)
        if shape is None or (magic == V2_MAGIC and ndim == 0):
            return HostArray(None, None)
        if magic == V3_MAGIC and any(d == -1 for d in shape):
            return HostArray(None, None)
        if stype == -1:
            rd.fail(f"{what} has undefined storage but a known shape {shape}")
        return _read_payload(rd, shape, what)
    if magic == V1_MAGIC:
        ndim = rd.unpack(_I32, f"the ndim of {what}")
        shape = _read_shape(rd, "q", ndim, what)
    elif magic <= _MAX_NDIM:  # the oldest layout: the magic is ndim, dims are uint32
        shape = _read_shape(rd, "I", magic, what)
    else:
        rd.pos -= 4
        rd.fail(
            f"bad magic 0x{magic:08X} for {what} (expected 0x{V2_MAGIC:08X} or 0x{V3_MAGIC:08X})"
        )
    if shape is None or any(d < 0 for d in shape):
        return HostArray(None, None)
    return _read_payload(rd, shape, what)


def _read_names(rd, count):
    nnames = rd.unpack(_U64, "the number of names")
    if nnames not in (0, count):
        rd.fail(f"{nnames} names for {count} arrays")
    names = []
    for i in range(nnames):
        length = rd.unpack(_U64, f"the length of name {i}")
        if length > rd.remaining():
            rd.fail(f"truncated: name {i} claims {length} bytes, only {rd.remaining()} left")
        raw = bytes(rd.take(length, f"name {i}"))
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            rd.fail(f"name {i} is not UTF-8 ({err})")
    return names


def loads_host(buf, source="<buffer>"):
    """Parse a whole MXNet NDArray list file held in ``buf``.

    Returns ``(arrays, names)``: a list of :class:`HostArray` and a list of names (empty
    for a file saved from a list).  Raises :class:`MXNetFormatError` on any problem.
    """
    rd = _Reader(buf, source)
    if rd.remaining() < 8:
        rd.fail(f"too short ({rd.remaining()} bytes) to be an NDArray file")
    header = rd.unpack(_U64, "the file magic")
    if header != LIST_MAGIC:
        rd.pos = 0
        rd.fail(f"bad file magic 0x{header:X} (expected 0x{LIST_MAGIC:X}): not an NDArray file")
    rd.unpack(_U64, "the reserved header field")
    count = rd.unpack(_U64, "the number of arrays")
    if count > rd.remaining() // 4:
        rd.fail(f"claims {count} arrays, more than the {rd.remaining()} bytes left can hold")
    arrays = [_read_record(rd, f"array {i}") for i in range(count)]
    names = _read_names(rd, count)
    if rd.remaining():
        rd.fail(f"{rd.remaining()} unexpected bytes after the names")
    return arrays, names


def load_record(buf, source="<buffer>"):
    """Parse one NDArray record (MXNet's raw bytes of a pickled NDArray) into a HostArray."""
    rd = _Reader(buf, source)
    out = _read_record(rd, "the array")
    if rd.remaining():
        rd.fail(f"{rd.remaining()} unexpected bytes after the array")
    return out


def is_mxnet_file(head):
    """Whether ``head`` (the first bytes of a file) starts with the NDArray list magic."""
    return len(head) >= 8 and _U64.unpack(bytes(head[:8]))[0] == LIST_MAGIC


def _read_file(fname):
    fname = os.fspath(fname)
    if not isinstance(fname, str):
        raise TypeError(f"fname must be a str or os.PathLike, got {type(fname).__name__}")
    with open(fname, "rb") as fobj:
        return fobj.read()


def load_host(fname):
    """Read and parse an MXNet NDArray file: ``(list of HostArray, list of names)``."""
    return loads_host(_read_file(fname), source=f"'{os.fspath(fname)}'")


def to_ndarray(host, ctx=None):
    """A ferromx NDArray (on ``ctx``, default CPU) holding ``host``; ``None`` stays ``None``."""
    from . import ndarray as nd
    from .context import cpu

    if host.value is None:
        return None
    return nd.array(host.value, ctx=ctx or cpu(), dtype=host.dtype)


def mmap_enabled():
    """Whether loaders map files copy-on-write (``FERROMX_MMAP_LOAD``, default on)."""
    return os.environ.get("FERROMX_MMAP_LOAD", "1").strip().lower() not in ("0", "false", "off")


def load_native(fname, ctx=None, np_array=False):
    """``(arrays, names)`` read by the native reader (the file mapped copy-on-write, arrays
    sharing its pages, the GIL released), or ``None`` when it does not handle the file
    (sparse or int16/uint16/uint32/uint64 arrays, a corrupt file, mapping disabled by
    ``FERROMX_MMAP_LOAD=0``): the caller then uses the Python reader, which loads it or
    raises the precise error."""
    if not mmap_enabled():
        return None
    from . import _native
    from .context import _ctx_str

    try:
        arrays, names = _native.load_mxnet(os.fspath(fname), _ctx_str(ctx), bool(np_array))
    except (MXNetError, ValueError, TypeError, OSError):
        return None
    return arrays, names


def _first_record_magic(fname):
    """The magic of the file's first record, or ``None`` (no records, not a list file)."""
    with open(os.fspath(fname), "rb") as fobj:
        head = fobj.read(28)
    if len(head) < 28 or not is_mxnet_file(head) or _U64.unpack(head[16:24])[0] == 0:
        return None
    return _U32.unpack(head[24:28])[0]


def check_shape_semantics(fname):
    """Raise as MXNet 1.9.1's ``NDArray::Load`` does when the file's records were written
    under the other shape semantics: a V3 record (saved with NumPy shape semantics on)
    loads only with them on, any other record only with them off.  Both MXNet and
    ferromx write every record of a file with the same magic, so the first one decides.
    The message names ``is_np_shape``, which Gluon's loader (MXNet's and ours) looks
    for to retry a legacy file with the semantics off."""
    from .util import is_np_shape

    magic = _first_record_magic(fname)
    if magic is None:
        return
    on = is_np_shape()
    if magic == V3_MAGIC and not on:
        raise MXNetError(
            f"load '{os.fspath(fname)}': ndarray was saved in np shape semantics, must be loaded "
            "in the same semantics (is_np_shape() is off). Please turn on np shape semantics "
            "in Python using `with np_shape(True)` or decorator `use_np_shape` to scope the "
            "code of loading the ndarray."
        )
    if magic != V3_MAGIC and on:
        raise MXNetError(
            f"load '{os.fspath(fname)}': ndarray was not saved in np shape semantics, but "
            "being loaded in np shape semantics (is_np_shape() is on). Please turn off np "
            "shape semantics in Python using `with np_shape(False)` to scope the code of "
            "loading the ndarray."
        )


def load(fname, ctx=None):
    """Load an MXNet NDArray file as MXNet's ``nd.load`` does: a list, or a dict when the
    file has names.  The shape semantics must match the file's
    (:func:`check_shape_semantics`).  Every array is parsed before any NDArray is
    created; the native reader (:func:`load_native`) is tried first."""
    check_shape_semantics(fname)
    fast = load_native(fname, ctx)
    if fast is not None:
        values, names = fast
        return dict(zip(names, values)) if names else values
    arrays, names = load_host(fname)
    values = [to_ndarray(h, ctx) for h in arrays]
    if names:
        return dict(zip(names, values))
    return values


# ---- writing ---------------------------------------------------------------------------------
def _host_array(arr):
    """``(C-contiguous little-endian NumPy data, dtype name)`` of an NDArray or NumPy array."""
    from .ndarray import NDArray

    if isinstance(arr, NDArray):
        dtype = getattr(arr, "_dtype_name", None) or np.dtype(arr.dtype).name
        value = arr.asnumpy()
    elif isinstance(arr, np.ndarray):
        value, dtype = arr, arr.dtype.name
    else:
        raise TypeError(f"can only save NDArray or numpy.ndarray values, got {type(arr).__name__}")
    if dtype == "bfloat16":
        bits = np.asarray(value, dtype=np.float32, order="C").view(np.uint32) >> 16
        return bits.astype("<u2"), dtype
    if dtype not in _DTYPE_TO_FLAG:
        raise TypeError(
            f"cannot save dtype {dtype!r} in the MXNet format "
            f"(supported: {', '.join(_DTYPE_TO_FLAG)})"
        )
    return np.asarray(value, dtype=np.dtype(dtype).newbyteorder("<"), order="C"), dtype


def _record_bytes(data, dtype, np_shape):
    """The record of host ``data`` (from :func:`_host_array`)."""
    head = [
        _U32.pack(V3_MAGIC if np_shape else V2_MAGIC),
        _I32.pack(0),
        _I32.pack(data.ndim),
        np.asarray(data.shape, dtype="<i8").tobytes(),
        _I32.pack(_CPU_CONTEXT[0]),
        _I32.pack(_CPU_CONTEXT[1]),
        _I32.pack(_DTYPE_TO_FLAG[dtype]),
    ]
    return b"".join(head) + data.tobytes()


def _use_np_shape(arrays):
    from .util import is_np_shape

    return is_np_shape() or any(len(a.shape) == 0 for a in arrays)


def dump_record(arr, np_shape=None):
    """One NDArray record (as MXNet pickles an NDArray).  ``np_shape`` picks V3 over V2;
    by default V3 under ``npx.set_np()`` or for a 0-d array."""
    if np_shape is None:
        np_shape = _use_np_shape([arr])
    data, dtype = _host_array(arr)
    return _record_bytes(data, dtype, np_shape)


def _split(data):
    """``(list of arrays, list of names)`` from an NDArray, a list or a dict."""
    from .ndarray import NDArray

    if isinstance(data, (NDArray, np.ndarray)):
        return [data], []
    if isinstance(data, dict):
        if any(not isinstance(k, str) for k in data):
            raise TypeError("save only accept dict str->NDArray or list of NDArray")
        return list(data.values()), list(data.keys())
    if isinstance(data, (list, tuple)):
        return list(data), []
    raise ValueError(
        "data needs to either be a NDArray, dict of str, NDArray pairs or a list of NDarrays."
    )


def _chunks(arrays, names, np_shape):
    """The file's bytes, one chunk per record (each array is copied to host in turn)."""
    yield _U64.pack(LIST_MAGIC) + _U64.pack(0) + _U64.pack(len(arrays))
    for arr in arrays:
        data, dtype = _host_array(arr)
        yield _record_bytes(data, dtype, np_shape)
    out = [_U64.pack(len(names))]
    for name in names:
        raw = name.encode("utf-8")
        out.append(_U64.pack(len(raw)) + raw)
    yield b"".join(out)


def dumps(data, np_shape=None):
    """The bytes of an MXNet NDArray file holding ``data`` (NDArray, list or dict)."""
    arrays, names = _split(data)
    if np_shape is None:
        np_shape = _use_np_shape(arrays)
    return b"".join(_chunks(arrays, names, np_shape))


def atomic_write(fname, chunks):
    """Write the byte ``chunks`` to ``fname`` atomically: a temporary file in the same
    directory, fsynced, then ``os.replace``.  On any error the old file is untouched."""
    fname = os.fspath(fname)
    if isinstance(chunks, (bytes, bytearray, memoryview)):
        chunks = [chunks]
    directory = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(fname)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fobj:
            for chunk in chunks:
                fobj.write(chunk)
            fobj.flush()
            os.fsync(fobj.fileno())
        os.replace(tmp, fname)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(fname, data, np_shape=None):
    """Save an NDArray, a list or a dict of str -> NDArray in MXNet's format, atomically.

    Validates every value first; then copies one array at a time to the host while
    writing.  ``np_shape`` forces V3 (True) or V2 (False) records; see the module notes.
    """
    fname = os.fspath(fname)
    if not isinstance(fname, str):
        raise TypeError(f"fname must be a str or os.PathLike, got {type(fname).__name__}")
    from .ndarray import NDArray

    arrays, names = _split(data)
    for arr in arrays:
        if not isinstance(arr, (NDArray, np.ndarray)):
            raise TypeError("save only accept dict str->NDArray or list of NDArray")
    if np_shape is None:
        np_shape = _use_np_shape(arrays)
    atomic_write(fname, _chunks(arrays, names, np_shape))
