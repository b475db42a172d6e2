"""safetensors read and write: round trips, the reference package's files, corrupt files,
nd/npx/np entry points and Gluon parameters from each of the three formats."""

import json
import os
import struct

import ferromx as mx
import numpy as np
import pytest
from ferromx import gluon, npx
from ferromx.util import load_safetensors, save_safetensors

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "safetensors")
DTYPES = ["float32", "float16", "float64", "int8", "int32", "int64", "uint8", "bool"]


def _value(dtype, shape=(2, 3)):
    rng = np.random.default_rng(abs(hash(dtype)) % 1000)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def test_round_trip_every_dtype(tmp_path):
    data = {f"t_{d}": mx.nd.array(_value(d), dtype=d) for d in DTYPES}
    data["scalar"] = mx.nd.array(np.array(3.5, np.float32))
    data["empty"] = mx.nd.zeros((0, 4))
    path = tmp_path / "all.safetensors"
    save_safetensors(path, data, metadata={"author": "test"})
    back, meta = load_safetensors(path, with_metadata=True)
    assert meta == {"author": "test"}
    assert set(back) == set(data)
    for name, arr in data.items():
        assert back[name].dtype == arr.dtype, name
        assert back[name].shape == arr.shape, name
        np.testing.assert_array_equal(back[name].asnumpy(), arr.asnumpy())


def test_bfloat16_round_trip(tmp_path):
    x = mx.nd.array([1.0, -2.0, 0.15625, 3.140625]).astype("bfloat16")
    path = tmp_path / "bf.safetensors"
    mx.nd.save(path, {"x": x})
    raw = path.read_bytes()
    header = json.loads(raw[8 : 8 + struct.unpack("<Q", raw[:8])[0]])
    assert header["x"]["dtype"] == "BF16"
    back = mx.nd.load(path)["x"]
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(back.astype("float32").asnumpy(), [1.0, -2.0, 0.15625, 3.140625])


def test_reference_fixture_loads():
    """A file written by the reference ``safetensors`` package (record_safetensors.py)."""
    expected = dict(np.load(os.path.join(FIXTURES, "reference_values.npz")))
    bf16 = expected.pop("bf16_as_f32")
    data, meta = load_safetensors(os.path.join(FIXTURES, "reference.safetensors"),
                                  with_metadata=True)
    assert meta["format"] == "np" and meta["written_by"].startswith("safetensors")
    assert set(data) == set(expected)
    for name, want in expected.items():
        got = data[name].asnumpy()
        assert got.dtype == want.dtype, name
        assert got.shape == want.shape, name
        np.testing.assert_array_equal(got, want)
    got = mx.nd.load(os.path.join(FIXTURES, "reference_bf16.safetensors"))["bf16"]
    assert str(got.dtype) == str(mx.nd.array([1.0]).astype("bfloat16").dtype)
    np.testing.assert_array_equal(got.astype("float32").asnumpy(), bf16)


def test_written_file_matches_reference_layout(tmp_path):
    """ferromx's header is the format's: 8-byte aligned JSON, offsets tiling the data."""
    path = tmp_path / "w.safetensors"
    save_safetensors(path, {"b": mx.nd.ones((3,), dtype="int8"), "a": mx.nd.ones((2, 2))})
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    assert n % 8 == 0
    header = json.loads(raw[8 : 8 + n])
    assert header["a"] == {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}
    assert header["b"] == {"dtype": "I8", "shape": [3], "data_offsets": [16, 19]}
    assert len(raw) == 8 + n + 19


def test_python_package_reads_ferromx_file(tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "x.safetensors"
    w = _value("float32", (3, 4))
    save_safetensors(path, {"w": mx.nd.array(w), "i": mx.nd.array([1, 2], dtype="int64")})
    back = st_numpy.load_file(str(path))
    np.testing.assert_array_equal(back["w"], w)
    np.testing.assert_array_equal(back["i"], np.array([1, 2], np.int64))


def test_list_container_and_nd_save_by_extension(tmp_path):
    a, b = mx.nd.arange(6).reshape((2, 3)), mx.nd.array([7], dtype="int32")
    path = tmp_path / "lst.safetensors"
    mx.nd.save(path, [a, b])
    assert path.read_bytes()[8:9] == b"{"
    back = mx.nd.load(path)
    assert isinstance(back, list) and len(back) == 2
    np.testing.assert_array_equal(back[0].asnumpy(), a.asnumpy())
    assert back[1].dtype == np.int32
    # A safetensors file under another name still loads (by content).
    other = tmp_path / "renamed.bin"
    other.write_bytes(path.read_bytes())
    assert len(mx.nd.load(other)) == 2
    # Other names still get MXNet's format.
    mx.nd.save(tmp_path / "x.params", {"a": a})
    assert (tmp_path / "x.params").read_bytes()[:8] == struct.pack("<Q", 0x112)


def test_npx_and_np_entry_points(tmp_path):
    npx.set_np()
    try:
        x = mx.np.array([[1.0, 2.0], [3.0, 4.0]])
        path = tmp_path / "n.safetensors"
        npx.save(str(path), {"x": x})
        back = npx.load(str(path))
        assert isinstance(back["x"], mx.np.ndarray)
        np.testing.assert_array_equal(back["x"].asnumpy(), x.asnumpy())
        viaload = mx.np.load(str(path))
        assert isinstance(viaload["x"], mx.np.ndarray)
    finally:
        npx.reset_np()


def test_bytes_source_and_numpy_values(tmp_path):
    path = tmp_path / "b.safetensors"
    save_safetensors(path, {"v": np.arange(4, dtype=np.int32)})
    back = load_safetensors(path.read_bytes())
    np.testing.assert_array_equal(back["v"].asnumpy(), np.arange(4))


def _good_file(tmp_path):
    path = tmp_path / "good.safetensors"
    save_safetensors(path, {"w": mx.nd.ones((4, 4)), "b": mx.nd.zeros((4,))})
    return path.read_bytes()


@pytest.mark.parametrize(
    "mangle",
    [
        lambda raw: raw[: len(raw) - 5],  # truncated data
        lambda raw: raw[:20],  # truncated header
        lambda raw: raw + b"\0\0\0\0",  # trailing bytes
        lambda raw: raw[:8] + b"[" + raw[9:],  # header is not a JSON object
        lambda raw: struct.pack("<Q", 1 << 40) + raw[8:],  # absurd header length
        lambda raw: raw.replace(b'"F32"', b'"X32"', 1),  # unknown dtype
        lambda raw: raw.replace(b'"F32"', b'"U16"', 1),  # a dtype ferromx lacks
    ],
)
def test_corrupt_files_raise_and_load_nothing(tmp_path, mangle):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(mangle(_good_file(tmp_path)))
    with pytest.raises(ValueError, match="safetensors"):
        load_safetensors(bad)
    with pytest.raises(mx.base.MXNetError):
        load_safetensors(bad)


def test_unsupported_dtype_is_named(tmp_path):
    raw = _good_file(tmp_path).replace(b'"F32"', b'"U32"', 1)  # same size: a valid file
    with pytest.raises(ValueError, match="U32"):
        load_safetensors(raw)


def test_missing_file_and_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_safetensors(tmp_path / "nope.safetensors")
    with pytest.raises(TypeError, match="save_safetensors"):
        save_safetensors(tmp_path / "x.safetensors", {"a": [1, 2]})
    with pytest.raises(TypeError, match="metadata"):
        save_safetensors(tmp_path / "x.safetensors", {"a": mx.nd.ones(1)}, metadata={"k": 1})
    with pytest.raises(ValueError, match="reserved"):
        save_safetensors(tmp_path / "x.safetensors", {"__metadata__": mx.nd.ones(1)})


def test_write_is_atomic(tmp_path):
    path = tmp_path / "keep.safetensors"
    save_safetensors(path, {"a": mx.nd.ones((2,))})
    before = path.read_bytes()
    with pytest.raises(ValueError):
        save_safetensors(path, {"__metadata__": mx.nd.ones(1)})
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.safetensors"]  # no temporary file left


def _net():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(5, in_units=3), gluon.nn.Dense(2, in_units=5))
    net.initialize(mx.init.Uniform(1.0))
    return net


@pytest.mark.parametrize("fmt", ["params", "npz", "safetensors"])
def test_gluon_loads_each_format_by_content(tmp_path, fmt):
    net = _net()
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    want = net(x).asnumpy()
    params = {k: p.data().asnumpy() for k, p in net._collect_params_with_prefix().items()}
    path = tmp_path / f"model.{fmt}"
    if fmt == "params":
        net.save_parameters(str(path))
        assert path.read_bytes()[:8] == struct.pack("<Q", 0x112)
    elif fmt == "npz":
        np.savez(path, **params)
    else:
        net.save_parameters(str(path))
        assert path.read_bytes()[8:9] == b"{"
    # Detection is by content: the same bytes under a neutral name load too.
    neutral = tmp_path / "weights.bin"
    neutral.write_bytes(path.read_bytes())
    net2 = _net()
    net2.load_parameters(str(neutral))
    np.testing.assert_allclose(net2(x).asnumpy(), want, rtol=1e-6)


def test_gluon_corrupt_safetensors_raises_and_keeps_params(tmp_path):
    net = _net()
    path = tmp_path / "m.safetensors"
    net.save_parameters(str(path))
    path.write_bytes(path.read_bytes()[:-3])
    net2 = _net()
    before = {k: p.data().asnumpy() for k, p in net2.collect_params().items()}
    with pytest.raises(gluon.parameter.ParameterLoadError, match="safetensors"):
        net2.load_parameters(str(path))
    for k, p in net2.collect_params().items():
        np.testing.assert_array_equal(p.data().asnumpy(), before[k])
