"""The DataLoader's fused vision path (gluon/data/vision/_fused.py): one native call per
batch gives the same bits as the per-transform chain for seeded draws, and is taken only
for the exact known transforms on the image datasets."""

import os
import random

import ferromx as mx
import numpy as np
import pytest
from ferromx import recordio
from ferromx.gluon.data import DataLoader, _workers
from ferromx.gluon.data.vision import ImageFolderDataset, ImageRecordDataset, _fused
from ferromx.gluon.data.vision import transforms as T

pytestmark = pytest.mark.timeout(120)

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
SIZES = [(30, 40), (48, 36), (25, 25), (60, 44), (33, 51), (40, 30), (29, 64), (50, 50)]


def _image(i, h, w):
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.stack([(xx * (i + 3) + yy * c * 5) % 256 for c in (1, 2, 3)], -1)
    return img.astype(np.uint8)


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "images"
    rec = recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), str(tmp_path / "d.rec"), "w")
    for i, (h, w) in enumerate(SIZES):
        cls = root / f"c{i % 2}"
        cls.mkdir(parents=True, exist_ok=True)
        ext = ".png" if i % 3 == 2 else ".jpg"
        buf = mx.image._imencode(_image(i, h, w), ext, quality=90, rgb=True)
        (cls / f"{i:03d}{ext}").write_bytes(buf)
        rec.write_idx(i, recordio.pack(recordio.IRHeader(0, float(i % 2), i, 0), bytes(buf)))
    rec.close()
    return str(root), str(tmp_path / "d.rec")


def _generic(ds, indices):
    samples = [ds[i] for i in indices]
    return np.stack([s[0].asnumpy() for s in samples]), [s[1] for s in samples]


def _fused_batch(ds, indices):
    plan = _fused.plan_for(ds)
    assert plan is not None
    leaf, labels = plan.images(indices)
    out = np.full(leaf.shape, np.nan, np.float32)
    leaf.write(out)
    return out, labels


def _seeded(fn, ds, indices, seed):
    random.seed(seed)
    mx.random.seed(seed + 1)
    return fn(ds, indices)


CHAINS = {
    "rrc_flip_norm": lambda: [T.RandomResizedCrop(24), T.RandomFlipLeftRight(), T.ToTensor(),
                              T.Normalize(MEAN, STD)],
    "rrc_rect_scale": lambda: [T.RandomResizedCrop((20, 16), scale=(0.5, 1.0)), T.ToTensor(),
                               T.Normalize(0.5, 0.25)],
    "center_flip": lambda: [T.CenterCrop(28), T.RandomFlipLeftRight(), T.ToTensor()],
    "resize_norm": lambda: [T.Resize((22, 18)), T.ToTensor(), T.Normalize(MEAN, STD)],
    "center_no_resize": lambda: [T.CenterCrop(25), T.ToTensor()],
}


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_fused_batch_equals_the_transform_chain(folder, chain):
    root, _ = folder
    ds = ImageFolderDataset(root).transform_first(T.Compose(CHAINS[chain]()))
    idx = list(range(len(SIZES)))
    want, want_labels = _seeded(_generic, ds, idx, 11)
    got, labels = _seeded(_fused_batch, ds, idx, 11)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert labels == want_labels
    # The draws advance as the per-transform path's do: a second seeded batch agrees too.
    random.seed(5)
    mx.random.seed(6)
    _generic(ds, idx)
    want2, _ = _generic(ds, idx)
    random.seed(5)
    mx.random.seed(6)
    _fused_batch(ds, idx)
    got2, _ = _fused_batch(ds, idx)
    np.testing.assert_array_equal(got2, want2)


def test_flip_draws_both_ways_and_grey_images(folder):
    root, _ = folder
    chain = [T.CenterCrop(20), T.RandomFlipLeftRight(), T.ToTensor()]
    ds = ImageFolderDataset(root).transform_first(T.Compose(chain))
    idx = list(range(len(SIZES)))
    got, _ = _seeded(_fused_batch, ds, idx, 3)
    plain = ImageFolderDataset(root).transform_first(T.Compose([T.CenterCrop(20), T.ToTensor()]))
    unflipped, _ = _fused_batch(plain, idx)
    same = [np.array_equal(got[i], unflipped[i]) for i in idx]
    mirrored = [np.array_equal(got[i], unflipped[i][:, :, ::-1]) for i in idx]
    assert all(s or m for s, m in zip(same, mirrored))
    assert any(same) and any(mirrored)
    grey = ImageFolderDataset(root, flag=0).transform_first(T.Compose(chain))
    want, _ = _seeded(_generic, grey, idx, 4)
    got, _ = _seeded(_fused_batch, grey, idx, 4)
    assert got.shape == (len(idx), 1, 20, 20)
    np.testing.assert_array_equal(got, want)


def test_record_dataset_is_fused_too(folder):
    _, rec = folder
    ds = ImageRecordDataset(rec).transform_first(T.Compose(CHAINS["rrc_flip_norm"]()))
    idx = [3, 0, 7, 5]
    want, want_labels = _seeded(_generic, ds, idx, 8)
    got, labels = _seeded(_fused_batch, ds, idx, 8)
    np.testing.assert_array_equal(got, want)
    assert labels == want_labels


class MyFolder(ImageFolderDataset):
    pass


class MyFlip(T.RandomFlipLeftRight):
    pass


def test_fused_path_is_not_taken_for_other_transforms(folder):
    root, rec = folder
    base = ImageFolderDataset(root)
    chain = CHAINS["rrc_flip_norm"]
    assert _fused.plan_for(base.transform_first(T.Compose(chain()))) is not None
    custom = [
        base.transform_first(T.Compose(chain()[:1] + [MyFlip()] + chain()[2:])),
        base.transform_first(T.Compose(chain() + [T.Cast("float16")])),
        base.transform_first(T.Compose([T.RandomColorJitter(0.1)] + chain())),
        base.transform_first(T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])),
        base.transform_first(T.Compose([T.Resize(20, keep_ratio=True), T.ToTensor()])),
        base.transform_first(T.Compose([T.RandomResizedCrop(24), T.Normalize(MEAN, STD)])),
        base.transform_first(lambda x: T.Compose(chain())(x)),
        base.transform(lambda x, y: (x, y)),
        MyFolder(root).transform_first(T.Compose(chain())),
        ImageFolderDataset(root, flag=-1).transform_first(T.Compose(chain())),
        ImageRecordDataset(rec).transform_first(T.Compose(chain())).transform_first(T.ToTensor()),
    ]
    for ds in custom:
        assert _fused.plan_for(ds) is None
    hooked = T.Compose(chain())
    hooked.register_forward_hook(lambda *a: None)
    assert _fused.plan_for(base.transform_first(hooked)) is None
    # A header that cannot be read leaves the batch to the generic path.
    with open(os.path.join(root, "c0", "zzz.jpg"), "wb") as f:
        f.write(b"\xff\xd8garbage")
    broken = ImageFolderDataset(root).transform_first(T.Compose(chain()))
    bad = [i for i, (path, _) in enumerate(broken._data.items) if path.endswith("zzz.jpg")]
    assert _fused.plan_for(broken).images([0] + bad) is None
    os.remove(os.path.join(root, "c0", "zzz.jpg"))  # a missing file: the generic error too
    assert _fused.plan_for(broken).images([0] + bad) is None


def test_process_workers_use_the_fused_path_and_match_serial(folder):
    root, _ = folder
    chain = [T.CenterCrop(24), T.ToTensor(), T.Normalize(MEAN, STD)]
    ds = ImageFolderDataset(root).transform_first(T.Compose(chain))
    assert _workers._fused_plan(ds) is not None
    serial = [(d.asnumpy(), y.asnumpy()) for d, y in DataLoader(ds, batch_size=3)]
    loader = DataLoader(ds, batch_size=3, num_workers=2)
    batches = list(loader)
    assert len(batches) == len(serial)
    del loader  # the batches own their memory: they stay valid after the pool is gone
    for (d, y), (sd, sy) in zip(batches, serial):
        np.testing.assert_array_equal(d.asnumpy(), sd)
        np.testing.assert_array_equal(y.asnumpy(), sy)
    batches[0][0][:] = 1.0  # a batch is an ordinary, writable NDArray
    assert float(batches[0][0].asnumpy().min()) == 1.0


def test_zero_copy_batches_leave_no_shared_memory(folder):
    root, _ = folder

    def names():
        return {n for n in os.listdir("/dev/shm") if n.startswith("psm_")}

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    before = names()
    ds = ImageFolderDataset(root).transform_first(T.Compose(CHAINS["rrc_flip_norm"]()))
    loader = DataLoader(ds, batch_size=4, num_workers=1)
    shapes = [b[0].shape for b in loader]
    assert shapes == [(4, 3, 24, 24), (4, 3, 24, 24)]
    loader._pool.shutdown()
    loader._pool = None
    assert names() <= before


_FORK_SCRIPT = r"""
import sys
import numpy as np
from ferromx.gluon.data import DataLoader
from ferromx.gluon.data.vision import ImageFolderDataset
from ferromx.gluon.data.vision import transforms as T

chain = [T.CenterCrop(24), T.ToTensor(), T.Normalize(0.5, 0.25)]
ds = ImageFolderDataset(sys.argv[1]).transform_first(T.Compose(chain))
loader = DataLoader(ds, batch_size=3, num_workers=2)
method = loader._pool.start_method
got = [(d.asnumpy(), y.asnumpy()) for d, y in loader]
want = [(d.asnumpy(), y.asnumpy()) for d, y in DataLoader(ds, batch_size=3)]
assert len(got) == len(want)
for (a, b), (c, d) in zip(got, want):
    assert np.array_equal(a, c) and np.array_equal(b, d)
print(method)
"""


def test_single_threaded_process_forks_its_workers(folder):
    import subprocess
    import sys

    root, _ = folder
    env = dict(os.environ)
    run = [sys.executable, "-c", _FORK_SCRIPT, root]
    out = subprocess.run(run, capture_output=True, text=True, env=env, timeout=100, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "fork"
    env["FERROMX_DATALOADER_FORK"] = "0"
    out = subprocess.run(run, capture_output=True, text=True, env=env, timeout=100, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "forkserver"
