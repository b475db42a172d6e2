"""MXNet 1.9.1's NDArray file format: byte equality with files MXNet wrote, loading them,
round trips, bad files, atomic writes, and the gluon / trainer / numpy file functions.

The fixture files come from ``tests/fixtures/mxnet_files/record_files.py`` (MXNet 1.9.1);
these tests do not need MXNet.
"""

import json
import os
import struct

import ferromx as mx
import numpy as np
import pytest
from ferromx import autograd, gluon, nd, serialization
from ferromx.base import MXNetError
from ferromx.gluon import nn

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet_files")
with open(os.path.join(FIX, "expected.json")) as _f:
    EXPECTED = json.load(_f)
DTYPES = ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "bool"]


def fixture(name):
    return os.path.join(FIX, name)


def read(path):
    with open(path, "rb") as fobj:
        return fobj.read()


def expected_arrays(name):
    spec = EXPECTED[name]
    arrays = [np.array(a["values"], dtype=a["dtype"]).reshape(a["shape"]) for a in spec["arrays"]]
    return arrays, spec["names"]


def as_ferromx(arrays, names):
    values = [nd.array(a, dtype=a.dtype.name) for a in arrays]
    return dict(zip(names, values)) if names else values


@pytest.fixture
def np_mode():
    mx.npx.set_np()
    yield
    mx.npx.reset_np()


# ---- MXNet's files: byte equality and loading --------------------------------------------------
@pytest.mark.parametrize(
    "name", ["dtypes_list.nd", "dtypes_dict.nd", "empty_legacy.nd", "nothing.nd"]
)
def test_bytes_equal_mxnet_legacy_mode(name, tmp_path):
    arrays, names = expected_arrays(name)
    out = str(tmp_path / name)
    nd.save(out, as_ferromx(arrays, names))
    assert read(out) == read(fixture(name))


def test_bytes_equal_mxnet_np_mode(tmp_path, np_mode):
    arrays, names = expected_arrays("np_shape.nd")
    out = str(tmp_path / "np.nd")
    mx.npx.save(out, as_ferromx(arrays, names))
    assert read(out) == read(fixture("np_shape.nd"))
    assert read(out)[24:28] == struct.pack("<I", serialization.V3_MAGIC)


def test_zero_d_outside_np_mode_is_written_as_v3(tmp_path):
    # MXNet 1.9.1 writes an unreadable V2 record here; ferromx writes it as under set_np().
    arrays, names = expected_arrays("np_shape.nd")
    out = str(tmp_path / "np.nd")
    nd.save(out, as_ferromx(arrays, names))
    assert read(out) == read(fixture("np_shape.nd"))


@pytest.mark.parametrize(
    "name",
    [
        "dtypes_list.nd",
        "dtypes_dict.nd",
        "empty_legacy.nd",
        "nothing.nd",
        "np_shape.nd",
        "legacy_v1.nd",
        "legacy_v0.nd",
    ],
)
def test_load_mxnet_files(name):
    arrays, names = expected_arrays(name)
    # MXNet loads a V3 (NumPy-shape) file only with the semantics on, the others only off
    with mx.util.np_shape(name == "np_shape.nd"):
        loaded = nd.load(fixture(name))
    if names:
        assert isinstance(loaded, dict) and list(loaded) == names
        loaded = [loaded[k] for k in names]
    else:
        assert isinstance(loaded, list)
    assert len(loaded) == len(arrays)
    for got, want in zip(loaded, arrays):
        assert got.shape == want.shape
        assert np.dtype(got.dtype) == want.dtype
        np.testing.assert_array_equal(got.asnumpy(), want)


def test_load_checks_shape_semantics_as_mxnet(tmp_path):
    # MXNet 1.9.1 NDArray::Load: V3 needs is_np_shape on, V2 needs it off; the message
    # names is_np_shape (Gluon's retry looks for it)
    with pytest.raises(MXNetError, match="saved in np shape semantics.*is_np_shape"):
        nd.load(fixture("np_shape.nd"))
    with mx.util.np_shape(True), pytest.raises(MXNetError, match="not saved in np shape.*is_np_shape"):
        nd.load(fixture("dtypes_list.nd"))
    # saving under np_shape alone (no np array mode) writes V3, as MXNet does
    out = str(tmp_path / "a.nd")
    with mx.util.np_shape(True):
        nd.save(out, [nd.ones((2, 0, 1)), nd.ones((3,))])
        back = nd.load(out)
    assert read(out)[24:28] == struct.pack("<I", serialization.V3_MAGIC)
    assert [b.shape for b in back] == [(2, 0, 1), (3,)]
    with pytest.raises(MXNetError, match="saved in np shape semantics"):
        nd.load(out)


def test_all_dtype_flags_in_mxnet_file():
    raw = read(fixture("dtypes_list.nd"))
    hosts, _ = serialization.loads_host(raw)
    assert [h.dtype for h in hosts] == DTYPES


def test_sparse_file_raises_clearly():
    with pytest.raises(MXNetError, match="sparse storage.*row_sparse"):
        nd.load(fixture("sparse.nd"))


def test_npx_load_needs_np_mode_and_reads_mxnet(np_mode):
    loaded = mx.npx.load(fixture("np_shape.nd"))
    assert loaded["scalar"].shape == () and float(loaded["scalar"].asnumpy()) == 2.5
    assert loaded["int_scalar"].asnumpy().dtype == np.int64
    mx.npx.reset_np()
    with pytest.raises(ValueError, match="legacy mode"):
        mx.npx.load(fixture("np_shape.nd"))
    with pytest.raises(ValueError, match="legacy mode"):
        mx.npx.save("unused.nd", [nd.ones((1,))])


# ---- round trips -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16"])
def test_roundtrip_every_dtype(dtype, tmp_path):
    rng = np.random.RandomState(3)
    values = (rng.randn(3, 4) * 5).astype("float32")
    if dtype == "bool":
        values = values > 0
    elif dtype != "bfloat16":
        values = values.astype(dtype)
    arr = nd.array(values, dtype=dtype)
    out = str(tmp_path / "a.nd")
    nd.save(out, {"x": arr, "y": arr[1]})
    back = nd.load(out)
    assert back["x"].dtype == arr.dtype and back["y"].shape == (4,)
    np.testing.assert_array_equal(back["x"].asnumpy(), arr.asnumpy())
    np.testing.assert_array_equal(back["y"].asnumpy(), arr.asnumpy()[1])


def test_roundtrip_forms(tmp_path):
    out = str(tmp_path / "a.nd")
    nd.save(out, nd.array([1.0, 2.0]))  # a single NDArray saves as a list
    back = nd.load(out)
    assert isinstance(back, list) and back[0].asnumpy().tolist() == [1.0, 2.0]
    nd.save(out, {})
    assert nd.load(out) == []
    t = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3)).T  # non-contiguous view
    nd.save(out, [t, nd.zeros((0, 2)), nd.array(np.float32(4.0))])
    with mx.util.np_shape(True):  # the 0-d array makes it a V3 file
        a, b, c = nd.load(out)
    np.testing.assert_array_equal(a.asnumpy(), t.asnumpy())
    assert b.shape == (0, 2) and c.shape == () and float(c.asnumpy()) == 4.0


def test_save_rejects_bad_input(tmp_path):
    out = str(tmp_path / "a.nd")
    with pytest.raises(TypeError):
        nd.save(out, [nd.ones((1,)), "nope"])
    with pytest.raises(TypeError):
        nd.save(out, {1: nd.ones((1,))})
    with pytest.raises(ValueError):
        nd.save(out, 3)
    assert not os.path.exists(out)


def test_old_ferromx_npz_still_loads(tmp_path):
    out = str(tmp_path / "old.npz")
    with open(out, "wb") as fobj:
        np.savez(fobj, __list__0=np.ones((2,), np.float32), __list__1=np.arange(3))
    back = nd.load(out)
    assert [b.asnumpy().tolist() for b in back] == [[1.0, 1.0], [0, 1, 2]]


# ---- bad files ---------------------------------------------------------------------------------
def _corrupt(tmp_path, data):
    path = str(tmp_path / "bad.nd")
    with open(path, "wb") as fobj:
        fobj.write(data)
    return path


def test_bad_files_raise_clear_errors(tmp_path):
    good = read(fixture("dtypes_dict.nd"))
    cases = {
        "bad file magic": b"\x13" + good[1:],
        "truncated": good[:-3],
        "truncated while reading the data": good[:150],
        "too short": good[:5],
        "bad magic 0x": good[:24] + b"\xff\xff\xff\x7f" + good[28:],
        "unknown dtype flag 99": good[:60] + struct.pack("<i", 99) + good[64:],
        "unexpected bytes": good + b"\x00",
        "claims": good[:16] + struct.pack("<Q", 1 << 40) + good[24:],
    }
    # the first record (at 24) has magic, stype, ndim, 2 dims, the context (1, 0), the flag
    assert struct.unpack("<iii", good[52:64]) == (1, 0, 0)
    for what, data in cases.items():
        path = _corrupt(tmp_path, data)
        with pytest.raises(serialization.MXNetFormatError, match=what) as info:
            nd.load(path)
        assert "bad.nd" in str(info.value)
        with pytest.raises(MXNetError):
            gluon.nn.Dense(2, in_units=3).load_parameters(path)


def test_bad_name_count(tmp_path):
    good = read(fixture("legacy_v1.nd"))
    names_at = good.index(struct.pack("<Q", 2) + struct.pack("<Q", 6) + b"weight")
    bad = good[:names_at] + struct.pack("<Q", 3) + good[names_at + 8 :]
    with pytest.raises(MXNetError, match="3 names for 2 arrays"):
        nd.load(_corrupt(tmp_path, bad))


def test_failed_load_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("FERROMX_MMAP_LOAD", "0")  # the Python reader (the native one below)
    made = []
    real = serialization.to_ndarray
    monkeypatch.setattr(serialization, "to_ndarray", lambda *a: made.append(1) or real(*a))
    good = read(fixture("dtypes_list.nd"))
    with pytest.raises(MXNetError):
        nd.load(_corrupt(tmp_path, good[:-20]))  # last array's data truncated
    assert made == []
    nd.load(fixture("dtypes_list.nd"))
    assert len(made) == len(DTYPES)


NATIVE_FIXTURES = ["dtypes_dict.nd", "dtypes_list.nd", "empty_legacy.nd", "legacy_v0.nd",
                   "legacy_v1.nd", "mlp.params", "nothing.nd", "np_shape.nd", "sgd_net.params"]


@pytest.mark.parametrize("name", NATIVE_FIXTURES)
def test_native_reader_matches_python_reader(name, monkeypatch):
    """The native (mapped) reader gives what the Python reader gives, for MXNet's files."""
    fast = serialization.load_native(fixture(name))
    assert fast is not None, name
    arrays, names = fast
    hosts, want_names = serialization.load_host(fixture(name))
    assert names == want_names
    assert len(arrays) == len(hosts)
    for got, host in zip(arrays, hosts):
        if host.value is None:
            assert got is None
            continue
        assert got.shape == host.value.shape
        assert np.dtype(got.dtype).name == host.dtype or host.dtype == "bfloat16"
        np.testing.assert_array_equal(got.asnumpy(), host.value)


def test_native_reader_refuses_and_python_reader_explains(tmp_path):
    good = read(fixture("dtypes_list.nd"))
    for bad in (good[:-20], good[:30], b"\0" * 8 + good[8:], good + b"x"):
        path = _corrupt(tmp_path, bad)
        assert serialization.load_native(path) is None
        with pytest.raises(MXNetError):
            nd.load(path)
    # Sparse arrays are the Python reader's business (it names the storage type).
    assert serialization.load_native(fixture("sparse.nd")) is None


def test_mapped_arrays_are_private_copies(tmp_path):
    """Writing to a loaded array never reaches the file (copy-on-write mapping)."""
    path = str(tmp_path / "w.params")
    nd.save(path, {"w": nd.ones((256, 256))})
    before = read(path)
    w = nd.load(path)["w"]
    w[:] = 5
    w += 1
    assert float(w.sum().asscalar()) == 6 * 256 * 256
    assert read(path) == before
    os.unlink(path)  # the mapping keeps the data alive
    assert float(w.mean().asscalar()) == 6


# ---- atomic writes -----------------------------------------------------------------------------
def test_failure_mid_write_keeps_old_file(tmp_path, monkeypatch):
    out = str(tmp_path / "a.nd")
    nd.save(out, [nd.ones((2,))])
    before = read(out)
    real = serialization._record_bytes
    calls = []

    def second_fails(*args):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("serialising the second array failed")
        return real(*args)

    monkeypatch.setattr(serialization, "_record_bytes", second_fails)
    with pytest.raises(RuntimeError, match="second array"):
        nd.save(out, [nd.zeros((3,)), nd.zeros((4,))])
    assert read(out) == before
    assert os.listdir(tmp_path) == ["a.nd"]


# ---- gluon parameters --------------------------------------------------------------------------
def make_mlp():
    # Names fixed by a prefix, as in the fresh MXNet process that recorded the fixtures: the
    # Trainer takes parameters in sorted-name order (as MXNet's does), so 'dense10_' after
    # 'dense9_' from earlier tests would reorder them against the recorded states.
    net = nn.HybridSequential(prefix="mlp_")
    with net.name_scope():
        net.add(nn.Dense(4, activation="relu", in_units=3))
        net.add(nn.Dense(2, in_units=4))
    return net


def test_load_mxnet_params_matches_mxnet_output():
    net = make_mlp()
    net.load_parameters(fixture("mlp.params"))
    x = nd.array(np.array(EXPECTED["mlp"]["input"], dtype=np.float32))
    want = np.array(EXPECTED["mlp"]["output"], dtype=np.float32)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-6, atol=1e-6)


def test_save_parameters_bytes_equal_mxnet(tmp_path):
    net = make_mlp()
    net.load_parameters(fixture("mlp.params"))
    out = str(tmp_path / "mlp.params")
    net.save_parameters(out)
    assert read(out) == read(fixture("mlp.params"))


def test_load_parameters_options(tmp_path):
    bigger = nn.HybridSequential()
    bigger.add(nn.Dense(4, activation="relu", in_units=3), nn.Dense(2, in_units=4))
    bigger.add(nn.Dense(5, in_units=2))
    bigger.initialize()
    with pytest.raises(MXNetError, match="missing"):
        bigger.load_parameters(fixture("mlp.params"))
    bigger.load_parameters(fixture("mlp.params"), allow_missing=True)
    saved = nd.load(fixture("mlp.params"))
    np.testing.assert_array_equal(bigger[1].weight.data().asnumpy(), saved["1.weight"].asnumpy())

    smaller = nn.HybridSequential()
    smaller.add(nn.Dense(4, activation="relu", in_units=3))
    with pytest.raises(ValueError, match="not present"):
        smaller.load_parameters(fixture("mlp.params"))
    smaller.load_parameters(fixture("mlp.params"), ignore_extra=True)
    np.testing.assert_array_equal(smaller[0].bias.data().asnumpy(), saved["0.bias"].asnumpy())

    as64 = make_mlp()
    as64.initialize()
    as64.cast("float64")
    with pytest.raises(MXNetError, match="dtype incompatible"):
        as64.load_parameters(fixture("mlp.params"))
    as64.load_parameters(fixture("mlp.params"), cast_dtype=True)
    assert np.dtype(as64[0].weight.data().dtype) == np.float64
    as64.load_parameters(fixture("mlp.params"), cast_dtype=True, dtype_source="saved")
    assert np.dtype(as64[0].weight.data().dtype) == np.float32
    with pytest.raises(ValueError, match="dtype_source"):
        as64.load_parameters(fixture("mlp.params"), cast_dtype=True, dtype_source="bogus")


def test_deduplicate_keeps_last_name_like_mxnet(tmp_path):
    net = nn.HybridSequential()
    first = nn.Dense(3, in_units=3)
    net.add(first, nn.Dense(3, in_units=3, params=first.collect_params()))
    net.initialize()
    out = str(tmp_path / "d.params")
    net.save_parameters(out, deduplicate=True)
    assert list(nd.load(out)) == ["1.weight", "1.bias"]
    net.save_parameters(out)
    assert list(nd.load(out)) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    twin = nn.HybridSequential()
    a = nn.Dense(3, in_units=3)
    twin.add(a, nn.Dense(3, in_units=3, params=a.collect_params()))
    twin.load_parameters(out)
    np.testing.assert_array_equal(twin[0].weight.data().asnumpy(), first.weight.data().asnumpy())


def test_params_from_numpy_files(tmp_path):
    saved = {k: v.asnumpy() for k, v in nd.load(fixture("mlp.params")).items()}
    npz = str(tmp_path / "w.npz")
    np.savez(npz, **saved)
    net = make_mlp()
    net.load_parameters(npz)
    np.testing.assert_array_equal(net[1].bias.data().asnumpy(), saved["1.bias"])
    npy = str(tmp_path / "w.npy")
    np.save(npy, saved["0.weight"])
    with pytest.raises(MXNetError, match="unnamed"):
        net.load_parameters(npy)
    single = nn.Dense(4, in_units=3, use_bias=False)  # one parameter: unambiguous
    single.load_parameters(npy)
    np.testing.assert_array_equal(single.weight.data().asnumpy(), saved["0.weight"])


def test_collect_params_save_load_mxnet_format(tmp_path):
    net = nn.Dense(4, in_units=3)
    net.initialize()
    out = str(tmp_path / "pd.params")
    net.collect_params().save(out, strip_prefix=net.prefix)
    assert serialization.is_mxnet_file(read(out)[:8])
    assert sorted(nd.load(out)) == ["bias", "weight"]
    twin = nn.Dense(4, in_units=3)
    twin.collect_params().load(out, restore_prefix=twin.prefix)
    x = nd.ones((1, 3))
    np.testing.assert_array_equal(twin(x).asnumpy(), net(x).asnumpy())


# ---- trainer states ----------------------------------------------------------------------------
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_trainer_loads_mxnet_states(optimizer):
    spec = EXPECTED[f"{optimizer}.states"]
    net = make_mlp()
    net.load_parameters(fixture(f"{optimizer}_net.params"))
    trainer = gluon.Trainer(net.collect_params(), optimizer, dict(spec["params"]))
    trainer.load_states(fixture(f"{optimizer}.states"))
    assert trainer.optimizer.num_update == spec["num_update"] - 1
    x = nd.array(np.array(spec["input"], dtype=np.float32))
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    trainer.step(2)
    for key, param in net._collect_params_with_prefix().items():
        want = np.array(spec["after_step"][key], dtype=np.float32)
        np.testing.assert_allclose(param.data().asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_trainer_states_roundtrip_and_bad_file(tmp_path):
    net = make_mlp()
    net.load_parameters(fixture("sgd_net.params"))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    trainer.load_states(fixture("sgd.states"))
    out = str(tmp_path / "t.states")
    trainer.save_states(out)
    again = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    again.load_states(out)
    assert again.optimizer.momentum == 0.9 and again.learning_rate == 0.1
    with open(out, "wb") as fobj:
        fobj.write(b"\x80\x04cos\nsystem\n.")
    with pytest.raises(MXNetError, match="t.states"):
        again.load_states(out)


# ---- mx.np.save / load / savez -----------------------------------------------------------------
def test_np_save_load_savez(tmp_path):
    a = mx.np.array([[1.0, 2.0], [3.0, 4.0]])
    b = nd.array(np.arange(3), dtype="int64")
    path = str(tmp_path / "a")
    mx.np.save(path, a)  # NumPy's rule: .npy is appended
    back = mx.np.load(path + ".npy")
    np.testing.assert_array_equal(back.asnumpy(), a.asnumpy())
    np.testing.assert_array_equal(np.load(path + ".npy"), a.asnumpy())
    mx.np.savez(str(tmp_path / "z.npz"), a, b=b)
    loaded = mx.np.load(str(tmp_path / "z.npz"))
    assert sorted(loaded) == ["arr_0", "b"]
    assert loaded["b"].asnumpy().dtype == np.int64
    with np.load(str(tmp_path / "z.npz")) as z:
        np.testing.assert_array_equal(z["arr_0"], a.asnumpy())
    with pytest.raises(TypeError):
        mx.np.save(path, [1, 2])
    with pytest.raises(ValueError, match="not a .npy"):
        mx.np.load(fixture("expected.json"))


# ---- MXNet reads ferromx's files (only with an MXNet Python) ------------------------------------
def test_mxnet_reads_ferromx_files(tmp_path):
    import subprocess
    import sys

    mxnet_python = os.environ.get("FERROMX_MXNET_PYTHON")
    if not mxnet_python:
        pytest.skip("set FERROMX_MXNET_PYTHON to a Python with MXNet 1.9.1 to run this check")
    script = os.path.join(FIX, "check_mxnet_reads_ours.py")
    subprocess.run([sys.executable, script, "write", str(tmp_path)], check=True)
    done = subprocess.run(
        [mxnet_python, script, "check", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 failures" in done.stdout
