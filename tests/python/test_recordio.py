"""ferromx.recordio against files recorded with MXNet 1.9.1 (tests/fixtures/recordio)."""

import base64
import json
import os
import pickle

import numpy as np
import pytest
from ferromx import recordio
from ferromx.base import MXNetError

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "recordio")


def _expected():
    with open(os.path.join(FIX, "expected.json")) as f:
        return json.load(f)


def _b(s):
    return base64.b64decode(s)


def _headers():
    magic = bytes.fromhex("0a23d7ce")
    return [
        (0, (0, 3.0, 7, 0), b"first"),
        (1, (0, [1.0, 2.5, -3.0], 8, 1), b"multi-label"),
        (5, (0, 0.5, 2**40, 3), magic * 2),
        (9, (0, np.array([4.0, 5.0], dtype=np.float32), 10, 0), b""),
    ]


def test_reads_mxnet_plain_file():
    exp = [_b(p) for p in _expected()["plain"]]
    rec = recordio.MXRecordIO(os.path.join(FIX, "plain.rec"), "r")
    got = []
    while True:
        item = rec.read()
        if item is None:
            break
        got.append(item)
    assert got == exp
    assert len(exp[-1]) == 20480 and exp[1] == b""
    rec.reset()
    assert rec.read() == exp[0]
    rec.close()


def test_writes_bytes_identical_to_mxnet(tmp_path):
    exp = [_b(p) for p in _expected()["plain"]]
    path = tmp_path / "out.rec"
    rec = recordio.MXRecordIO(str(path), "w")
    for p in exp:
        rec.write(p)
    rec.close()
    with open(os.path.join(FIX, "plain.rec"), "rb") as f:
        assert path.read_bytes() == f.read()


def test_indexed_reads_and_writes_like_mxnet(tmp_path):
    e = _expected()
    rec = recordio.MXIndexedRecordIO(
        os.path.join(FIX, "indexed.idx"), os.path.join(FIX, "indexed.rec"), "r"
    )
    assert rec.keys == e["indexed_keys"] == [0, 1, 5, 9]
    for key in reversed(rec.keys):  # random access
        header, s = recordio.unpack(rec.read_idx(key))
        want = next(u for u in e["indexed"] if u["key"] == key)
        label = header.label.tolist() if isinstance(header.label, np.ndarray) else header.label
        assert (header.flag, label, header.id, header.id2) == (
            want["flag"], want["label"], want["id"], want["id2"])
        assert s == _b(want["payload"])
    multi = recordio.unpack(rec.read_idx(1))[0]
    assert multi.flag == 3 and multi.label.dtype == np.float32
    rec.close()

    w = recordio.MXIndexedRecordIO(str(tmp_path / "o.idx"), str(tmp_path / "o.rec"), "w")
    tells = []
    for key, hdr, s in _headers():
        tells.append(w.tell())
        packed = recordio.pack(recordio.IRHeader(*hdr), s)
        assert packed == _b(e["packed"][len(tells) - 1])
        w.write_idx(key, packed)
    w.close()
    assert tells == e["indexed_tells"]
    for name in ("indexed.rec", "indexed.idx"):
        with open(os.path.join(FIX, name), "rb") as f:
            assert (tmp_path / ("o" + name[7:])).read_bytes() == f.read()


def test_pickle_closes_and_reopens():
    path = os.path.join(FIX, "plain.rec")
    rec = recordio.MXRecordIO(path, "r")
    rec.read()
    clone = pickle.loads(pickle.dumps(rec))
    assert not rec.is_open  # MXNet closes the pickled record
    assert clone.is_open and clone.read() == b"record_0"
    idx = recordio.MXIndexedRecordIO(os.path.join(FIX, "indexed.idx"),
                                     os.path.join(FIX, "indexed.rec"), "r")
    clone = pickle.loads(pickle.dumps(idx))
    assert recordio.unpack(clone.read_idx(5))[0].id == 2**40
    closed = pickle.loads(pickle.dumps(idx))
    assert not closed.is_open


def test_corrupt_and_truncated_files_raise(tmp_path):
    with open(os.path.join(FIX, "plain.rec"), "rb") as f:
        data = f.read()
    trunc = tmp_path / "trunc.rec"
    trunc.write_bytes(data[:-100])
    rec = recordio.MXRecordIO(str(trunc), "r")
    for _ in range(7):
        rec.read()
    with pytest.raises(MXNetError, match="truncated record"):
        rec.read()
    head = tmp_path / "head.rec"
    head.write_bytes(data[:20])
    rec = recordio.MXRecordIO(str(head), "r")
    assert rec.read() == b"record_0"
    with pytest.raises(MXNetError, match="truncated record header"):
        rec.read()
    bad = tmp_path / "bad.rec"
    bad.write_bytes(b"\x00" * 4 + data[4:])
    with pytest.raises(MXNetError, match="bad magic"):
        recordio.MXRecordIO(str(bad), "r").read()
    with pytest.raises(MXNetError, match="cannot open"):
        recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    with pytest.raises(ValueError):
        recordio.MXRecordIO(str(tmp_path / "x.rec"), "a")
    with pytest.raises(MXNetError, match="shorter than"):
        recordio.unpack(b"abc")
    w = recordio.MXRecordIO(str(tmp_path / "w.rec"), "w")
    with pytest.raises(TypeError):
        w.write("text")


def test_unpack_header_only_and_scalar_label():
    h, s = recordio.unpack(recordio.pack((7, 2.0, 3, 4), b"img"))
    assert h == recordio.IRHeader(0, 2.0, 3, 4) and s == b"img"


def test_pack_img_needs_the_image_module():
    img = np.zeros((4, 4, 3), dtype=np.uint8)
    img[1:3, 1:3] = (10, 200, 30)
    header = recordio.IRHeader(0, 1.0, 3, 0)
    try:
        from ferromx import image  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="ferromx.image"):
            recordio.pack_img(header, img, img_fmt=".png")
        with pytest.raises(ImportError, match="ferromx.image"):
            recordio.unpack_img(recordio.pack(header, b"\x89PNG"))
        return
    packed = recordio.pack_img(header, img, img_fmt=".png")
    h, decoded = recordio.unpack_img(packed)
    assert h.label == 1.0 and h.id == 3
    assert np.array_equal(np.asarray(decoded), img)  # PNG is lossless, BGR kept as written
