"""The support modules with MXNet 1.9.1's names and behaviour: ``base``, ``util``, ``runtime``,
``context``, ``name``, ``attribute`` and the initializers added for parity (Bilinear, Load,
LSTMBias, FusedRNN), checked against data recorded from MXNet 1.9.1
(``tests/fixtures/modules/record_modules.py``)."""

import ctypes
import json
import os
import threading
import warnings

import ferromx as mx
import numpy as np
import pytest
from ferromx import base, nd, runtime, util
from ferromx.base import MXNetError

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                   "modules", "modules_1.9.1.json")
with open(FIX) as _f:
    REF = json.load(_f)


# ---- base ------------------------------------------------------------------------------------
def test_base_type_tuples_and_helpers(tmp_path, monkeypatch):
    assert isinstance(np.int64(3), base.integer_types) and not isinstance(2.0, base.integer_types)
    assert isinstance(np.float32(1), base.numeric_types) and isinstance(3, base.numeric_types)
    assert base.string_types == (str,) and base.mx_real_t is np.float32
    assert base.py_str(b"caf\xc3\xa9") == "café"
    assert base._as_list(3) == [3] and base._as_list((1, 2)) == (1, 2)
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    assert base.data_dir() == str(tmp_path)
    monkeypatch.delenv("MXNET_HOME")
    assert base.data_dir() == base.data_dir_default() == os.path.expanduser("~/.mxnet")
    base.check_call(0)
    with pytest.raises(MXNetError, match="error code 3"):
        base.check_call(3)
    assert base.c_str("ab").value == b"ab"
    assert list(base.c_array(ctypes.c_int, [1, 2, 3])) == [1, 2, 3]
    assert [s for s in base.c_str_array(["x", "yz"])] == [b"x", b"yz"]


def test_base_dtype_tables_match_mxnet():
    for name, idx in REF["dtype_ids"].items():
        assert base.dtype_np_to_mx(name) == idx
        assert base._DTYPE_NP_TO_MX[np.dtype(name).type] == idx
        assert base.dtype_mx_to_np(idx) == np.dtype(name)
    assert base.dtype_np_to_mx("bfloat16") == 12 and base.dtype_np_to_mx(None) == -1
    with pytest.raises(TypeError, match="no MXNet id"):
        base.dtype_np_to_mx(np.complex64)
    with pytest.raises(TypeError, match="unknown MXNet dtype id"):
        base.dtype_mx_to_np(99)


def test_base_errors_and_classproperty():
    def fn():
        pass

    err = base.NotImplementedForSymbol(fn, "op_x", 1)
    assert isinstance(err, MXNetError)
    assert 'Function fn (namely operator "op_x")' in str(err) and "Symbol" in str(err)
    assert "SparseNDArray" in str(base.NotSupportedForSparseNDArray(fn, None))
    assert base.error_types["NotImplementedForSymbol"] is base.NotImplementedForSymbol
    msg, kind = base.c2pyerror("ValueError: bad thing\nStack trace:\n  at f\n  at g\n")
    assert kind == "ValueError" and msg.startswith("Traceback") and "bad thing" in msg

    class Holder(metaclass=base._MXClassPropertyMetaClass):
        _v = 1

        @base.classproperty
        def value(cls):
            return cls._v

        @value.setter
        def value(cls, v):
            cls._v = v

    assert Holder.value == 1
    Holder.value = 5
    assert Holder.value == 5 and Holder().value == 5


# ---- util ------------------------------------------------------------------------------------
def test_np_flags_are_thread_local_and_shared_with_npx():
    assert not util.is_np_array() and not util.is_np_shape()
    mx.npx.set_np()
    try:
        assert util.is_np_array() and util.is_np_shape() and mx.npx.is_np_array()
        seen = []
        t = threading.Thread(target=lambda: seen.append(util.is_np_array()))
        t.start()
        t.join(timeout=10)
        assert seen == [False]  # per thread, as in MXNet 1.9.1
        with pytest.raises(ValueError, match="Deactivating NumPy shape"):
            util.set_np_shape(False)
    finally:
        mx.npx.reset_np()
    assert not util.is_np_array() and not util.is_np_shape()
    with pytest.raises(ValueError, match="NumPy Shape semantics is required"):
        util.set_np(shape=False, array=True)
    assert util.set_np_shape(True) is False and util.set_np_shape(False) is True


def test_np_scopes_and_decorators():
    with util.np_shape():
        assert util.is_np_shape() and not util.is_np_array()
        with util.np_shape(False):
            assert not util.is_np_shape()
        assert util.is_np_shape()
    assert not util.is_np_shape()

    @util.use_np
    def both():
        return util.is_np_shape(), util.is_np_array()

    assert both() == (True, True) and not util.is_np_array()

    @util.use_np_array
    class Net:
        def forward(self):
            return util.is_np_array()

        @property
        def flag(self):
            return util.is_np_array()

    assert Net().forward() is True and Net().flag is True and not util.is_np_array()
    with pytest.raises(TypeError, match="can only decorate"):
        util.use_np_shape(3)
    arr = util.default_array([1, 2])
    assert isinstance(arr, nd.NDArray)


def test_util_misc():
    @util.set_module("mxnet.foo")
    def f():
        pass

    assert f.__module__ == "mxnet.foo"
    assert util.get_gpu_count() == 0
    with pytest.raises(MXNetError, match="no GPU backend"):
        util.get_gpu_memory(0)
    with pytest.raises(ValueError, match="Expecting a gpu context"):
        util.get_cuda_compute_capability(mx.cpu())
    with pytest.raises(MXNetError, match="no CUDA"):
        util.get_cuda_compute_capability(mx.gpu(0))

    def add(x, y, out=None):
        return x + y

    wrapped = util.wrap_np_binary_func(add)
    assert wrapped(1, 2, casting="same_kind") == 3
    with pytest.raises(NotImplementedError):
        wrapped(1, 2, casting="unsafe")
    with pytest.raises(TypeError, match="invalid keyword"):
        wrapped(1, 2, bogus=1)
    assert util.np_ufunc_legal_option("dtype", np.float32)
    assert not util.np_ufunc_legal_option("casting", "weird")


# ---- runtime ---------------------------------------------------------------------------------
def test_runtime_features():
    feats = runtime.Features()
    assert feats is runtime.Features()  # one shared instance
    assert [n for n, _ in REF["features"]] == list(feats.keys())  # MXNet's names and order
    assert [f.name for f in runtime.feature_list()] == list(feats.keys())
    assert feats.is_enabled("cpu_sse2") == feats.is_enabled("CPU_SSE2")
    for name in ("CUDA", "CUDNN", "MKLDNN", "TENSORRT", "DEBUG", "TVM_OP", "DIST_KVSTORE"):
        assert not feats.is_enabled(name)
    for name in ("OPENMP", "INT64_TENSOR_SIZE", "PROFILER"):
        assert feats.is_enabled(name)
    assert repr(feats["CUDA"]) == "✖ CUDA" and repr(feats["OPENMP"]) == "✔ OPENMP"
    with pytest.raises(RuntimeError, match="Feature 'NO_SUCH' is unknown"):
        feats.is_enabled("no_such")


# ---- context ---------------------------------------------------------------------------------
def test_context_tables_and_cpu_shared():
    assert {str(k): v for k, v in mx.Context.devtype2str.items()} == REF["devtype2str"]
    assert mx.Context.devstr2type == {v: int(k) for k, v in REF["devtype2str"].items()}
    ctx = mx.cpu_shared(1)
    assert str(ctx) == "cpu_shared(1)" and ctx.device_typeid == 5
    a = nd.ones((2,), ctx=mx.cpu_shared(0))
    assert a.context == mx.cpu_shared(0)  # as in MXNet (host memory underneath)
    np.testing.assert_array_equal(a.asnumpy(), [1, 1])
    b = (a * 2).copyto(mx.cpu())
    assert (a * 2).context == mx.cpu_shared(0) and b.context == mx.cpu(0)
    np.testing.assert_array_equal(b.asnumpy(), [2, 2])
    with pytest.raises(MXNetError, match="cpu_shared"):
        _ = a + nd.ones((2,))  # contexts must match, as for any two contexts
    assert mx.num_gpus() == 0 and mx.context.num_gpus() == 0
    with pytest.raises(MXNetError, match="no GPU backend"):
        mx.context.gpu_memory_info(0)


def test_default_ctx_class_property():
    assert mx.Context.default_ctx == mx.cpu(0) == mx.current_context()
    with mx.cpu(2):
        assert mx.Context.default_ctx == mx.cpu(2) == mx.context.current_context()
    mx.Context.default_ctx = mx.cpu(1)
    try:
        assert mx.current_context() == mx.cpu(1)
        assert nd.zeros((1,)).context == mx.cpu(1)
    finally:
        mx.Context.default_ctx = None
    assert mx.current_context() == mx.cpu(0)


# ---- name / attribute ------------------------------------------------------------------------
def test_name_manager_and_prefix():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with mx.name.NameManager():
            nm = mx.name.NameManager.current
            names = [nm.get(None, "fc"), nm.get(None, "fc"), nm.get("given", "fc"),
                     nm.get(None, "conv")]
        with mx.name.Prefix("net_"):
            names.append(mx.name.NameManager.current.get(None, "dense"))
        assert names == REF["names"]
        outer = mx.name.NameManager.current
        with mx.name.Prefix("a_") as p:
            assert mx.name.NameManager.current is p
        assert mx.name.NameManager.current is outer
    with pytest.warns(DeprecationWarning):
        mx.name.NameManager.current  # noqa: B018


def test_attr_scope():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with mx.AttrScope(group="a", lr="1"):
            with mx.attribute.AttrScope(lr="2"):
                got = mx.AttrScope.current.get({"wd": "0"})
            assert mx.AttrScope.current.get(None) == {"group": "a", "lr": "1"}
        assert got == REF["attrs"]
        assert mx.AttrScope.current.get(None) == {}
    with pytest.raises(ValueError, match="Attributes need to be string"):
        mx.AttrScope(lr=1)


# ---- initializers ----------------------------------------------------------------------------
def test_bilinear_matches_mxnet():
    for case in REF["bilinear"]:
        w = nd.zeros(tuple(case["shape"]))
        mx.init.Bilinear()("up_weight", w)
        np.testing.assert_array_equal(w.asnumpy().ravel(), np.float32(case["value"]))
    with pytest.raises(ValueError, match="4-D"):
        mx.init.Bilinear()("w_weight", nd.zeros((3, 3)))
    assert isinstance(mx.init.create("bilinear"), mx.init.Bilinear)


def _name_value(name):
    return (sum(ord(c) for c in name) % 89) / 10.0


class _NameInit(mx.init.Initializer):
    def _init_weight(self, name, arr):
        arr[:] = _name_value(str(name))


def test_fused_rnn_matches_mxnet_layout():
    for case in REF["fused_rnn"]:
        mode, hid, layers, bidir, _, forget = case["case"]
        expected = np.array(case["value"], dtype=np.float32)
        arr = nd.zeros(expected.shape)
        desc = mx.init.InitDesc("rnn_parameters", global_init=mx.init.Zero())
        mx.init.FusedRNN(_NameInit(), hid, layers, mode, bidir, forget)._init_weight(desc, arr)
        np.testing.assert_array_equal(arr.asnumpy(), expected)
    with pytest.raises(ValueError, match="do not fit"):
        mx.init.FusedRNN(None, 2, 1, "lstm")._init_weight("p", nd.zeros((7,)))
    with pytest.raises(ValueError, match="mode must be"):
        mx.init.FusedRNN(None, 2, 1, "transformer")


def test_lstm_bias_and_load(tmp_path):
    b = nd.zeros((8,))
    mx.init.LSTMBias(forget_bias=2.5)._init_weight("lstm_bias", b)
    np.testing.assert_array_equal(b.asnumpy(), [0, 0, 2.5, 2.5, 0, 0, 0, 0])
    fname = str(tmp_path / "params")
    nd.save(fname, {"arg:fc_weight": nd.ones((2, 2)) * 3, "fc_bias": nd.ones((2,))})
    load = mx.init.Load(fname, default_init=mx.init.Zero())
    w = nd.zeros((2, 2))
    load("fc_weight", w)
    np.testing.assert_array_equal(w.asnumpy(), np.full((2, 2), 3.0))
    other = nd.ones((3,))
    load("other_weight", other)
    np.testing.assert_array_equal(other.asnumpy(), np.zeros(3))
    with pytest.raises(ValueError, match="Shape mismatch"):
        load("fc_bias", nd.zeros((3,)))
    with pytest.raises(ValueError, match="no default Initializer"):
        mx.init.Load({"a": nd.ones((1,))})("b", nd.zeros((1,)))
