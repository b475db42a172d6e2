"""DataLoader with worker processes: shared-memory batches, errors, dead and stuck workers."""

import os
import pickle
import time

import numpy as np
import pytest
from ferromx import nd
from ferromx.gluon import data as gdata
from ferromx.gluon.data import _workers
from ferromx.ndarray import NDArray

pytestmark = pytest.mark.timeout(90)


class PidDataset(gdata.Dataset):
    """Sample i: (nd.ones(3) * i computed in the worker, the worker's pid)."""

    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        return nd.ones((3,)) * idx, np.int64(os.getpid())


class FailingDataset(PidDataset):
    def __getitem__(self, idx):
        if idx == 6:
            raise KeyError(f"bad sample {idx}")
        return super().__getitem__(idx)


class DyingDataset(PidDataset):
    def __getitem__(self, idx):
        if idx == 5:
            os._exit(3)
        return super().__getitem__(idx)


class SlowDataset(PidDataset):
    def __getitem__(self, idx):
        if idx == 2:
            time.sleep(20)  # the stuck worker the loader must time out on
        return super().__getitem__(idx)


class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("no pickling")


class UnpicklableErrorDataset(PidDataset):
    def __getitem__(self, idx):
        raise Unpicklable("custom failure")


def _shm_names():
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("psm_")}
    except FileNotFoundError:
        return set()


def test_process_workers_match_serial_loader():
    (nd.ones((2,)) + 1).wait_to_read()  # the parent's engine is running before the workers
    before = _shm_names()
    loader = gdata.DataLoader(PidDataset(10), batch_size=4, num_workers=2)
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    values = np.concatenate([b[0].asnumpy()[:, 0] for b in batches])
    assert values.tolist() == list(range(10))
    pids = {int(p) for b in batches for p in b[1].asnumpy()}
    assert os.getpid() not in pids and pids == set(loader.worker_pids) and len(pids) == 2
    assert isinstance(batches[0][0], NDArray) and np.dtype(batches[0][1].dtype) == np.int64
    again = list(loader)  # the pool is kept for the next epoch
    assert {int(p) for b in again for p in b[1].asnumpy()} == pids
    serial = list(gdata.DataLoader(PidDataset(10), batch_size=4))
    for a, b in zip(again, serial):
        assert np.array_equal(a[0].asnumpy(), b[0].asnumpy())
    assert _shm_names() <= before  # every shared-memory block was unlinked


def test_worker_exception_is_reraised_with_traceback():
    loader = gdata.DataLoader(FailingDataset(10), batch_size=2, num_workers=2)
    got = []
    with pytest.raises(KeyError, match="bad sample 6") as info:
        for batch in loader:
            got.append(batch[0].asnumpy()[:, 0].tolist())
    assert got == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    cause = str(info.value.__cause__)
    assert "Traceback in the DataLoader worker" in cause and "__getitem__" in cause
    # the pool survives a dataset error: the next epoch runs again up to the bad sample
    with pytest.raises(KeyError):
        list(loader)
    loader2 = gdata.DataLoader(UnpicklableErrorDataset(4), batch_size=2, num_workers=1)
    with pytest.raises(gdata.DataLoaderWorkerError, match="Unpicklable: custom failure"):
        next(iter(loader2))


def test_dead_worker_raises_promptly():
    loader = gdata.DataLoader(DyingDataset(10), batch_size=2, num_workers=2, timeout=60)
    start = time.monotonic()
    with pytest.raises(gdata.DataLoaderWorkerError, match="exited unexpectedly with exit code 3"):
        list(loader)
    assert time.monotonic() - start < 30  # well before the 60 s timeout: the sentinel fired


def test_stuck_worker_times_out():
    loader = gdata.DataLoader(SlowDataset(6), batch_size=2, num_workers=1, timeout=1)
    it = iter(loader)
    assert next(it)[0].shape == (2, 3)
    start = time.monotonic()
    with pytest.raises(gdata.DataLoaderTimeoutError, match="timed out after 1 s"):
        next(it)
    assert time.monotonic() - start < 10
    import multiprocessing

    assert issubclass(gdata.DataLoaderTimeoutError, multiprocessing.TimeoutError)
    del it, loader  # a broken pool is terminated, not waited for


def test_early_break_frees_shared_memory_and_reiterates():
    before = _shm_names()
    loader = gdata.DataLoader(PidDataset(40), batch_size=4, num_workers=2, prefetch=6)
    for _ in range(3):
        it = iter(loader)
        next(it)
        it.close()
    values = sorted(np.concatenate([b[0].asnumpy()[:, 0] for b in loader]).tolist())
    assert values == list(range(40))
    loader._pool.shutdown()
    loader._pool = None
    assert _shm_names() <= before


def _numpy_batchify(samples):
    xs = np.stack([s[0].asnumpy() for s in samples])
    return {"n": len(samples)}, (xs, [nd.array(xs) * 2]), "tag"


def test_custom_batchify_types_pin_memory_and_threads():
    loader = gdata.DataLoader(PidDataset(6), batch_size=3, num_workers=2,
                              batchify_fn=_numpy_batchify)
    meta, (xs, [doubled]), tag = next(iter(loader))
    assert meta == {"n": 3} and tag == "tag"
    assert isinstance(xs, np.ndarray) and xs[:, 0].tolist() == [0, 1, 2]
    assert isinstance(doubled, NDArray) and doubled.asnumpy()[:, 0].tolist() == [0, 2, 4]
    pinned = next(iter(gdata.DataLoader(PidDataset(6), batch_size=3, num_workers=1,
                                        pin_memory=True)))
    assert str(pinned[0].context) == "cpu_pinned(0)"
    threaded = gdata.DataLoader(PidDataset(6), batch_size=3, num_workers=2, thread_pool=True)
    pids = {int(p) for b in threaded for p in b[1].asnumpy()}
    assert pids == {os.getpid()} and threaded.worker_pids == []


def test_lambda_dataset_uses_processes_or_falls_back(monkeypatch):
    ds = gdata.SimpleDataset(list(range(8))).transform(lambda v: (v * 2, os.getpid()))
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2)
    out = list(loader)
    assert np.concatenate([b[0].asnumpy() for b in out]).tolist() == list(range(0, 16, 2))

    def refuse(obj):
        raise pickle.PicklingError("cannot pickle this")

    monkeypatch.setattr(_workers, "_dumps", refuse)
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2)
    with pytest.warns(RuntimeWarning, match="worker threads instead"):
        out = list(loader)
    assert {int(p) for b in out for p in b[1].asnumpy()} == {os.getpid()}


def test_main_script_classes_without_cloudpickle_fall_back(monkeypatch):
    import sys

    class MainDataset(PidDataset):
        pass

    MainDataset.__module__ = "__main__"
    MainDataset.__qualname__ = "MainDataset"
    monkeypatch.setattr(sys.modules["__main__"], "MainDataset", MainDataset, raising=False)
    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # `import cloudpickle` fails
    loader = gdata.DataLoader(MainDataset(4), batch_size=2, num_workers=2)
    with pytest.warns(RuntimeWarning, match="__main__"):
        out = list(loader)
    assert {int(p) for b in out for p in b[1].asnumpy()} == {os.getpid()}


class ImageLikeDataset(gdata.Dataset):
    """Sample i: a (2, 3, 4) uint8 NDArray and a float16 one; sample 5 has another shape
    when ``ragged``."""

    def __init__(self, ragged=False):
        self.ragged = ragged

    def __len__(self):
        return 6

    def __getitem__(self, idx):
        shape = (2, 3, 5) if self.ragged and idx == 5 else (2, 3, 4)
        img = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape) + np.uint8(idx)
        return nd.array(img, dtype="uint8"), nd.array(img * 0.5, dtype="float16")


def test_samples_are_stacked_straight_into_shared_memory():
    loader = gdata.DataLoader(ImageLikeDataset(), batch_size=4, num_workers=2)
    batches = list(loader)
    want = np.stack([np.arange(24, dtype=np.uint8).reshape(2, 3, 4) + np.uint8(i)
                     for i in range(6)])
    got = np.concatenate([b[0].asnumpy() for b in batches])
    assert got.dtype == np.uint8 and np.array_equal(got, want)
    halves = np.concatenate([b[1].asnumpy() for b in batches])
    assert halves.dtype == np.float16 and np.array_equal(halves, (want * 0.5).astype(np.float16))
    ragged = gdata.DataLoader(ImageLikeDataset(ragged=True), batch_size=6, num_workers=1)
    with pytest.raises(Exception, match="shape"):
        list(ragged)
