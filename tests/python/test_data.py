"""Tests of ferromx.gluon.data: datasets, samplers and the (threaded) DataLoader."""

import collections

import numpy as np
import pytest
from ferromx import gluon, nd
from ferromx.gluon import data as gdata
from ferromx.gluon.data import dataset as dataset_module
from ferromx.ndarray import NDArray


def _arrays(n=10, dim=3):
    x = np.arange(n * dim, dtype=np.float32).reshape(n, dim)
    y = np.arange(n, dtype=np.int32)
    return x, y


def _rows(batches):
    """Map each sample's first feature back to its row index (x[i, 0] == 3 * i)."""
    out = []
    for xb, yb in batches:
        xs = xb.asnumpy()
        ys = yb.asnumpy()
        assert np.array_equal(xs[:, 0] / 3, ys)  # features and labels stay paired
        out.extend(int(v) for v in ys)
    return out


# ---- datasets -------------------------------------------------------------------------------
def test_array_dataset():
    x, y = _arrays()
    ds = gdata.ArrayDataset(nd.array(x), nd.array(y, dtype="int32"))
    assert len(ds) == 10
    xi, yi = ds[4]
    assert isinstance(xi, NDArray) and np.array_equal(xi.asnumpy(), x[4])
    assert int(yi) == 4 and not isinstance(yi, NDArray)  # 1-D elements are scalars
    mixed = gdata.ArrayDataset(x, list(range(10)))
    assert np.array_equal(mixed[3][0], x[3]) and mixed[3][1] == 3
    single = gdata.ArrayDataset(x)
    assert np.array_equal(single[2], x[2])
    with pytest.raises(ValueError):
        gdata.ArrayDataset(x, y[:5])


def test_simple_dataset_transforms():
    ds = gdata.SimpleDataset([(i, 10 * i) for i in range(6)])
    assert len(ds) == 6 and ds[2] == (2, 20)
    t = ds.transform(lambda a, b: a + b)
    assert [t[i] for i in range(6)] == [11 * i for i in range(6)]
    tf = ds.transform_first(lambda a: -a)
    assert tf[3] == (-3, 30)
    eager = ds.transform_first(lambda a: a * 2, lazy=False)
    assert isinstance(eager, gdata.SimpleDataset) and eager[5] == (10, 50)
    assert gdata.SimpleDataset([1, 2, 3]).transform(lambda v: v * v)[2] == 9
    evens = ds.filter(lambda s: s[0] % 2 == 0)
    assert [evens[i][0] for i in range(len(evens))] == [0, 2, 4]
    assert [s[0] for s in ds.take(2)] == [0, 1] and len(ds.take(100)) == 6
    shards = [ds.shard(4, i) for i in range(4)]
    assert [len(s) for s in shards] == [2, 2, 1, 1]
    assert [s[0] for sh in shards for s in sh] == list(range(6))


# ---- samplers --------------------------------------------------------------------------------
def test_samplers():
    assert list(gdata.SequentialSampler(4)) == [0, 1, 2, 3]
    assert list(gdata.SequentialSampler(3, start=5)) == [5, 6, 7]
    np.random.seed(3)
    perm = list(gdata.RandomSampler(50))
    assert sorted(perm) == list(range(50)) and perm != list(range(50))
    assert len(gdata.RandomSampler(7)) == 7


@pytest.mark.parametrize(
    "last_batch,expected",
    [("keep", [[0, 1, 2], [3, 4, 5], [6]]), ("discard", [[0, 1, 2], [3, 4, 5]])],
)
def test_batch_sampler(last_batch, expected):
    bs = gdata.BatchSampler(gdata.SequentialSampler(7), 3, last_batch)
    assert list(bs) == expected and len(bs) == len(expected)


def test_batch_sampler_rollover():
    bs = gdata.BatchSampler(gdata.SequentialSampler(7), 3, "rollover")
    assert len(bs) == 2
    assert list(bs) == [[0, 1, 2], [3, 4, 5]]
    assert len(bs) == 2  # (1 left over + 7) // 3
    assert list(bs) == [[6, 0, 1], [2, 3, 4]]
    assert len(bs) == 3  # (2 left over + 7) // 3
    assert list(bs) == [[5, 6, 0], [1, 2, 3], [4, 5, 6]]
    with pytest.raises(ValueError):
        gdata.BatchSampler(gdata.SequentialSampler(7), 3, "bogus")


# ---- DataLoader ---------------------------------------------------------------------------------
def _loader_dataset():
    x, y = _arrays(10)
    return gdata.ArrayDataset(nd.array(x), nd.array(y, dtype="int32"))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_sequential_order(num_workers):
    loader = gdata.DataLoader(_loader_dataset(), batch_size=4, num_workers=num_workers)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    assert _rows(batches) == list(range(10))
    assert np.dtype(batches[0][1].dtype) == np.int32  # label dtype preserved


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_last_batch_variants(num_workers):
    ds = _loader_dataset()
    discard = list(
        gdata.DataLoader(ds, batch_size=4, last_batch="discard", num_workers=num_workers)
    )
    assert [b[0].shape[0] for b in discard] == [4, 4]
    roll = gdata.DataLoader(ds, batch_size=4, last_batch="rollover", num_workers=num_workers)
    first = _rows(list(roll))
    second = _rows(list(roll))
    assert first == list(range(8))
    assert second == [8, 9] + list(range(10))  # the 2 left over start the next epoch


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_shuffle_same_multiset(num_workers):
    np.random.seed(11)
    x, y = _arrays(100)
    ds = gdata.ArrayDataset(nd.array(x), nd.array(y, dtype="int32"))
    loader = gdata.DataLoader(ds, batch_size=16, shuffle=True, num_workers=num_workers)
    epoch1 = _rows(list(loader))
    epoch2 = _rows(list(loader))
    assert sorted(epoch1) == list(range(100)) and sorted(epoch2) == list(range(100))
    assert epoch1 != list(range(100)) and epoch1 != epoch2


def test_threaded_loader_matches_serial_loader():
    x, y = _arrays(200)
    ds = gdata.ArrayDataset(nd.array(x), nd.array(y, dtype="int32"))
    np.random.seed(5)
    serial = _rows(list(gdata.DataLoader(ds, batch_size=7, shuffle=True)))
    np.random.seed(5)
    threaded = _rows(
        list(gdata.DataLoader(ds, batch_size=7, shuffle=True, num_workers=3, prefetch=2))
    )
    assert threaded == serial  # same indices, same order: workers only build batches


def test_dataloader_gathers_with_one_take_per_field(monkeypatch):
    calls = []
    real_take = dataset_module.nd.take

    def counting_take(*args, **kwargs):
        calls.append(args[1].dtype)
        return real_take(*args, **kwargs)

    monkeypatch.setattr(dataset_module.nd, "take", counting_take)
    x, y = _arrays(10)
    loader = gdata.DataLoader(
        gdata.ArrayDataset(nd.array(x), nd.array(y, dtype="int32")), batch_size=4, shuffle=True
    )
    batches = list(loader)
    assert len(calls) == 2 * len(batches)
    assert all(np.dtype(dt) == np.int64 for dt in calls)
    assert sorted(_rows(batches)) == list(range(10))


def test_dataloader_numpy_and_generic_datasets():
    x, y = _arrays(6)
    batches = list(gdata.DataLoader(gdata.ArrayDataset(x, y), batch_size=4))
    assert isinstance(batches[0], list) and isinstance(batches[0][0], NDArray)
    assert np.array_equal(batches[1][0].asnumpy(), x[4:])
    assert np.dtype(batches[0][1].dtype) == np.int32

    samples = gdata.SimpleDataset([(x[i], int(y[i])) for i in range(6)])
    for workers in (0, 2):
        out = list(gdata.DataLoader(samples, batch_size=3, num_workers=workers))
        assert np.array_equal(out[0][0].asnumpy(), x[:3])
        assert out[1][1].asnumpy().tolist() == [3, 4, 5]

    nd_samples = gdata.SimpleDataset([nd.array(x[i]) for i in range(6)])
    stacked = list(gdata.DataLoader(nd_samples, batch_size=6))
    assert len(stacked) == 1 and np.array_equal(stacked[0].asnumpy(), x)

    transformed = gdata.ArrayDataset(x, y).transform_first(lambda v: v * 2)
    out = list(gdata.DataLoader(transformed, batch_size=6, num_workers=2))
    assert np.array_equal(out[0][0].asnumpy(), 2 * x)


def test_dataloader_custom_batchify_and_batch_sampler():
    x, y = _arrays(6)
    ds = gdata.ArrayDataset(nd.array(x), nd.array(y, dtype="int32"))
    seen = []

    def batchify(samples):
        seen.append(len(samples))
        return len(samples)

    assert list(gdata.DataLoader(ds, batch_size=4, batchify_fn=batchify)) == [4, 2]
    assert seen == [4, 2]
    sampler = gdata.BatchSampler(gdata.SequentialSampler(6), 5, "discard")
    out = list(gdata.DataLoader(ds, batch_sampler=sampler))
    assert len(out) == 1 and out[0][0].shape == (5, 3)
    with pytest.raises(ValueError):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=sampler)
    with pytest.raises(ValueError):
        gdata.DataLoader(ds)
    with pytest.raises(ValueError):
        gdata.DataLoader(ds, batch_size=2, shuffle=True, sampler=gdata.SequentialSampler(6))


def test_dataloader_worker_error_propagates():
    class Broken(gdata.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, idx):
            if idx == 5:
                raise KeyError(f"bad sample {idx}")
            return np.float32(idx)

    loader = gdata.DataLoader(Broken(), batch_size=2, num_workers=2)
    got = []
    with pytest.raises(KeyError, match="bad sample 5"):
        for batch in loader:
            got.append(batch.asnumpy().tolist())
    assert got == [[0.0, 1.0], [2.0, 3.0]]


def test_dataloader_early_break_then_reiterate():
    x, y = _arrays(64)
    ds = gdata.ArrayDataset(nd.array(x), nd.array(y, dtype="int32"))
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2, prefetch=4)
    for _ in range(3):
        it = iter(loader)
        next(it)
        it.close()  # abandoning an epoch must not hang or leak the pool
    counts = collections.Counter(_rows(list(loader)))
    assert counts == collections.Counter(range(64))


def test_dataloader_with_trainer_loop():
    x = np.random.uniform(size=(64, 5)).astype(np.float32)
    y = (x.sum(axis=1) > 2.5).astype(np.int32)
    loader = gdata.DataLoader(
        gdata.ArrayDataset(nd.array(x), nd.array(y, dtype="int32")),
        batch_size=16,
        shuffle=True,
        num_workers=2,
    )
    net = gluon.nn.Dense(2, in_units=5)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    from ferromx import autograd

    steps = 0
    for xb, yb in loader:
        with autograd.record():
            loss = gluon.loss.SoftmaxCELoss()(net(xb), yb)
        loss.backward()
        trainer.step(xb.shape[0])
        steps += 1
    assert steps == 4 and np.all(np.isfinite(net.weight.data().asnumpy()))


def test_interval_sampler():
    assert list(gdata.IntervalSampler(7, 3)) == [0, 3, 6, 1, 4, 2, 5]
    assert len(gdata.IntervalSampler(7, 3)) == 7
    no_roll = gdata.IntervalSampler(7, 3, rollover=False)
    assert list(no_roll) == [0, 3, 6] and len(no_roll) == 3
    with pytest.raises(ValueError):
        gdata.IntervalSampler(3, 5)


def test_record_file_dataset():
    import os

    from ferromx import recordio

    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "recordio", "indexed.rec")
    ds = gdata.RecordFileDataset(path)
    assert len(ds) == 4
    header, payload = recordio.unpack(ds[1])
    assert payload == b"multi-label" and header.label.tolist() == [1.0, 2.5, -3.0]
    assert recordio.unpack(ds[3])[0].id == 10
