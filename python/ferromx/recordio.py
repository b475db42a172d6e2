"""Reading and writing MXNet's RecordIO format (``mx.recordio``), as in MXNet 1.9.1.

A ``.rec`` file is a sequence of records.  Each record starts with the magic word
``0xced7230a`` and a 32-bit ``lrecord`` (``cflag << 29 | length``, little endian), followed by
``length`` payload bytes and zero padding up to a multiple of 4.  A payload that contains the
magic word at a 4-byte-aligned offset is split there into parts (``cflag`` 1 = first, 2 =
middle, 3 = last; 0 = a record in one part) and the magic word itself is not stored: a reader
re-inserts it between parts.  Files written here are byte-identical to MXNet's.

``MXIndexedRecordIO`` adds a text ``.idx`` file of ``key<TAB>byte offset`` lines for random
access.  ``pack``/``unpack`` add or strip the ``IRHeader`` (``struct`` format ``IfQQ``, then
``flag`` float32 labels when ``flag > 0``); ``pack_img``/``unpack_img`` encode and decode images
through :mod:`ferromx.image`.
"""

import numbers
import os
import struct
from collections import namedtuple
from multiprocessing import current_process

import numpy as np

from .base import MXNetError

__all__ = [
    "IRHeader",
    "MXIndexedRecordIO",
    "MXRecordIO",
    "pack",
    "pack_img",
    "unpack",
    "unpack_img",
]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_HEAD = struct.Struct("<II")
_MAX_LEN = 1 << 29


def _lrec(cflag, length):
    return (cflag << 29) | length


def _split_at_magic(buf):
    """Offsets of the magic word at 4-byte-aligned positions inside ``buf``'s aligned part."""
    lower = (len(buf) >> 2) << 2
    found = []
    pos = buf.find(_MAGIC_BYTES, 0, lower)
    while pos != -1:
        if pos % 4 == 0:
            found.append(pos)
            pos = buf.find(_MAGIC_BYTES, pos + 4, lower)
        else:
            pos = buf.find(_MAGIC_BYTES, pos + 1, lower)
    return found


def _encode_record(buf):
    """The bytes MXNet's (dmlc) RecordIO writer emits for one record."""
    n = len(buf)
    if n >= _MAX_LEN:
        raise MXNetError(f"MXRecordIO.write: a record must be smaller than 2**29 bytes, got {n}")
    out = []
    start = 0
    for pos in _split_at_magic(buf):
        out.append(_HEAD.pack(_MAGIC, _lrec(1 if start == 0 else 2, pos - start)))
        out.append(buf[start:pos])
        start = pos + 4
    out.append(_HEAD.pack(_MAGIC, _lrec(3 if start != 0 else 0, n - start)))
    out.append(buf[start:])
    pad = (-n) % 4
    if pad:
        out.append(b"\0" * pad)
    return b"".join(out)


class MXRecordIO:
    """Sequential reader/writer of a RecordIO file.

    Parameters
    ----------
    uri : str
        Path of the ``.rec`` file.
    flag : {'r', 'w'}
        Read, or write (truncating the file).

    Pickling closes the record (as in MXNet) and the copy reopens it when it was open; a
    record opened in one process may not be read or written in another (``RuntimeError``),
    except through :meth:`MXIndexedRecordIO.seek`, which reopens it.
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self._file = None
        self.open()

    def open(self):
        """Open the file (``'w'`` truncates it)."""
        if self.flag == "w":
            self._file = open(self.uri, "wb")  # noqa: SIM115 - held open
            self.writable = True
        elif self.flag == "r":
            try:
                self._file = open(self.uri, "rb")  # noqa: SIM115
            except OSError as err:
                msg = f"MXRecordIO: cannot open {self.uri!r} for reading: {err}"
                raise MXNetError(msg) from err
            self.writable = False
        else:
            raise ValueError(f"Invalid flag {self.flag}")
        self.pid = current_process().pid
        self.is_open = True

    def __del__(self):
        if getattr(self, "is_open", False) and self._file is not None:
            self.close()

    def __getstate__(self):
        is_open = self.is_open
        self.close()
        state = dict(self.__dict__)
        state["is_open"] = is_open
        state.pop("_file", None)
        return state

    def __setstate__(self, state):
        self.__dict__ = state
        was_open = state["is_open"]
        self.is_open = False
        self._file = None
        if was_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        if self.pid != current_process().pid:
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self):
        """Close the file (no-op when closed)."""
        if not self.is_open:
            return
        self._file.close()
        self._file = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Go back to the first record (a writer truncates the file)."""
        self.close()
        self.open()

    def write(self, buf):
        """Append ``buf`` (bytes-like) as one record."""
        assert self.writable, "MXRecordIO.write: the record was opened for reading"
        self._check_pid(allow_reset=False)
        if isinstance(buf, str):
            raise TypeError("MXRecordIO.write expects bytes, got str (encode it first)")
        self._file.write(_encode_record(bytes(buf)))

    def _fail(self, offset, what):
        raise MXNetError(f"Invalid RecordIO File {self.uri!r} at byte {offset}: {what}")

    def read(self):
        """Return the next record as ``bytes``, or ``None`` at the end of the file."""
        assert not self.writable, "MXRecordIO.read: the record was opened for writing"
        self._check_pid(allow_reset=False)
        parts = []
        while True:
            offset = self._file.tell()
            head = self._file.read(8)
            if not head and not parts:
                return None
            if len(head) != 8:
                self._fail(offset, f"truncated record header ({len(head)} of 8 bytes)")
            magic, lrec = _HEAD.unpack(head)
            if magic != _MAGIC:
                self._fail(offset, f"bad magic number {magic:#010x} (expected {_MAGIC:#010x})")
            cflag, length = lrec >> 29, lrec & (_MAX_LEN - 1)
            padded = (length + 3) & ~3
            body = self._file.read(padded)
            if len(body) != padded:
                self._fail(offset, f"truncated record: {len(body)} of {padded} payload bytes")
            parts.append(body[:length])
            if cflag in (0, 3):
                return _MAGIC_BYTES.join(parts)


class MXIndexedRecordIO(MXRecordIO):
    """Random-access RecordIO: a ``.rec`` file plus a ``.idx`` file of ``key\\toffset`` lines.

    Parameters
    ----------
    idx_path : str
        Path of the index file.
    uri : str
        Path of the record file.
    flag : {'r', 'w'}
        Read or write.
    key_type : type
        Type the keys are converted to (default ``int``).
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        """Open the record and index files; in read mode load the index."""
        super().open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)  # noqa: SIM115 - held open
        if not self.writable:
            for lineno, line in enumerate(self.fidx, 1):
                fields = line.strip().split("\t")
                if not fields[0]:
                    continue
                if len(fields) < 2:
                    raise MXNetError(
                        f"MXIndexedRecordIO: bad line {lineno} in {self.idx_path!r}: {line!r}"
                    )
                key = self.key_type(fields[0])
                self.idx[key] = int(fields[1])
                self.keys.append(key)

    def close(self):
        """Close both files."""
        if not self.is_open:
            return
        super().close()
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx):
        """Move the reader to the record of key ``idx``."""
        assert not self.writable, "MXIndexedRecordIO.seek: the record was opened for writing"
        self._check_pid(allow_reset=True)
        self._file.seek(self.idx[idx])

    def tell(self):
        """Byte offset where the next record will be written."""
        assert self.writable, "MXIndexedRecordIO.tell: the record was opened for reading"
        return self._file.tell()

    def read_idx(self, idx):
        """Return the record of key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Append ``buf`` as the record of key ``idx`` and index it."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Header of an image record: ``flag`` (number of float32 labels stored after
the header when > 0), ``label`` (a float, or an array of floats), ``id`` and ``id2``."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """Prefix the bytes ``s`` with an :data:`IRHeader` (an array label is stored after it)."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """Split a record into ``(IRHeader, payload bytes)``; labels stored after the header
    become a float32 array."""
    if len(s) < _IR_SIZE:
        raise MXNetError(f"recordio.unpack: record of {len(s)} bytes is shorter than the "
                         f"{_IR_SIZE}-byte IRHeader")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def _image_module(fn):
    try:
        from . import image
    except ImportError as err:
        raise ImportError(f"recordio.{fn} needs ferromx.image (image encoding/decoding), "
                          f"which is not available: {err}") from err
    for name in ("imdecode", "_imencode"):
        if not hasattr(image, name):
            raise ImportError(f"recordio.{fn} needs ferromx.image.{name}, which is missing")
    return image


def unpack_img(s, iscolor=-1):
    """Split a record into ``(IRHeader, image)``; the image is a NumPy ``uint8`` array in the
    file's channel order (BGR for colour, as OpenCV's ``imdecode`` in MXNet).  ``iscolor``:
    -1 unchanged, 0 grayscale, 1 colour."""
    image = _image_module("unpack_img")
    header, s = unpack(s)
    img = image.imdecode(s, flag=iscolor, to_rgb=False)
    if hasattr(img, "asnumpy"):
        img = img.asnumpy()
    return header, img


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encode ``img`` (HWC uint8, BGR as in MXNet) as ``img_fmt`` and :func:`pack` it."""
    image = _image_module("pack_img")
    buf = image._imencode(img, img_fmt=img_fmt, quality=quality)
    return pack(header, bytes(buf))
