"""mx.io iterators against batches recorded with MXNet 1.9.1 (tests/fixtures/io)."""

import importlib.util
import json
import os

import numpy as np
import pytest
from ferromx import io, nd

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "io")
_spec = importlib.util.spec_from_file_location("record_io", os.path.join(FIX, "record_io.py"))
record_io = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(record_io)  # only the case definitions; MXNet is not imported


def _expected():
    with open(os.path.join(FIX, "expected.json")) as f:
        return json.load(f)


def _desc(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]


def _run(it, epochs=3):
    out = []
    for _ in range(epochs):
        ep = []
        for b in it:
            ep.append({
                "data": [d.asnumpy().tolist() for d in b.data],
                "label": [lab.asnumpy().tolist() for lab in (b.label or [])],
                "pad": b.pad,
                "index": None if b.index is None else [int(i) for i in b.index],
            })
        out.append(ep)
        it.reset()
    return out


@pytest.mark.parametrize("name", sorted(record_io.nd_cases()))
def test_ndarrayiter_matches_mxnet(name):
    want = _expected()["ndarray"][name]
    np.random.seed(7)
    it = io.NDArrayIter(**record_io.nd_cases()[name])
    assert _desc(it.provide_data) == want["provide_data"]
    assert _desc(it.provide_label) == want["provide_label"]
    assert _run(it) == want["epochs"]


@pytest.mark.parametrize("name", ["round", "noround", "label", "shape"])
def test_csviter_matches_mxnet(name):
    want = _expected()["csv"][name]
    kw = dict(want["kwargs"])
    kw["data_shape"] = tuple(kw["data_shape"])
    if "label_csv" in kw:
        kw["label_csv"] = os.path.join(FIX, kw["label_csv"])
        kw["label_shape"] = tuple(kw["label_shape"])
    it = io.CSVIter(data_csv=os.path.join(FIX, "data.csv"), **kw)
    assert _desc(it.provide_data) == want["provide_data"]
    assert _desc(it.provide_label) == want["provide_label"]
    assert _run(it) == want["epochs"]


def test_csviter_errors(tmp_path):
    with pytest.raises(ValueError, match="needs 4"):
        io.CSVIter(data_csv=os.path.join(FIX, "data.csv"), data_shape=(4,), batch_size=2)
    with pytest.raises(ValueError, match="cannot read"):
        io.CSVIter(data_csv=str(tmp_path / "none.csv"), data_shape=(3,))


def test_ndarrayiter_dtype_and_errors():
    it = io.NDArrayIter(nd.array(np.arange(6).reshape(3, 2), dtype="int32"), batch_size=2)
    assert it.provide_data[0].dtype == np.int32 and next(it).data[0].dtype == np.int32
    with pytest.raises(ValueError, match="last_batch_handle"):
        io.NDArrayIter(np.zeros((4, 2)), last_batch_handle="wrap")
    with pytest.raises(ValueError, match="examples"):
        io.NDArrayIter(np.zeros((4, 2)), np.zeros(3))
    with pytest.raises(TypeError):
        io.NDArrayIter(data=5)


def test_data_desc_and_batch():
    d = io.DataDesc("x", (2, 3), "float16", layout="NTC")
    assert d == ("x", (2, 3)) and d.dtype == "float16" and d.layout == "NTC"
    assert io.DataDesc.get_batch_axis("TNC") == 1 and io.DataDesc.get_batch_axis(None) == 0
    descs = io.DataDesc.get_list([("a", (1,)), ("b", (2,))], [("a", "int32"), ("b", "f")])
    assert [x.dtype for x in descs] == ["int32", "f"]
    b = io.DataBatch([nd.zeros((2, 3))], [nd.zeros((2,))], pad=1)
    assert str(b) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    with pytest.raises(TypeError):
        io.DataBatch(nd.zeros((1,)))


def test_resize_iter():
    base = io.NDArrayIter(np.arange(10).reshape(10, 1), batch_size=4, last_batch_handle="discard")
    it = io.ResizeIter(base, 5)
    firsts = [int(b.data[0].asnumpy()[0, 0]) for b in it]
    assert firsts == [0, 4, 0, 4, 0]  # restarts the inner iterator when it runs out
    it.reset()
    assert len(list(it)) == 5 and it.provide_data == base.provide_data


def test_prefetching_iter_joins_and_renames():
    a = io.NDArrayIter(np.arange(10).reshape(10, 1), np.arange(10), batch_size=5)
    b = io.NDArrayIter(np.arange(10).reshape(10, 1) * 2, np.arange(10), batch_size=5)
    it = io.PrefetchingIter([a, b], rename_data=[{"data": "d1"}, {"data": "d2"}])
    assert [d.name for d in it.provide_data] == ["d1", "d2"] and it.batch_size == 5
    for _ in range(2):
        got = [(bt.data[0].asnumpy()[:, 0].tolist(), bt.data[1].asnumpy()[:, 0].tolist())
               for bt in it]
        assert got == [([0, 1, 2, 3, 4], [0, 2, 4, 6, 8]), ([5, 6, 7, 8, 9], [10, 12, 14, 16, 18])]
        it.reset()
    it.close()


def test_prefetching_iter_reraises_and_checks_lengths():
    class Boom(io.DataIter):
        def __init__(self):
            super().__init__(2)
            self.provide_data = [io.DataDesc("data", (2, 1))]
            self.provide_label = []

        def next(self):
            raise KeyError("boom")

    it = io.PrefetchingIter(Boom())
    with pytest.raises(KeyError, match="boom"):
        next(it)
    it.close()
    short = io.NDArrayIter(np.zeros((4, 1)), batch_size=2)
    long = io.NDArrayIter(np.zeros((6, 1)), batch_size=2)
    it = io.PrefetchingIter([short, long])
    with pytest.raises(ValueError, match="different lengths"):
        list(it)
    it.close()


def test_image_record_iter_hook_is_lazy():
    try:
        cls = io.ImageRecordIter
    except AttributeError as err:
        assert "image" in str(err)
    else:
        assert callable(cls)
    with pytest.raises(AttributeError):
        io.NoSuchIter  # noqa: B018
