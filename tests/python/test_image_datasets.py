"""Image datasets: ImageFolderDataset over a generated folder, ImageListDataset, and
ImageRecordDataset over a .rec written by MXNet 1.9.1 (tests/fixtures/image/tiny.rec)."""

import os
import warnings

import ferromx as mx
import numpy as np
import pytest
from ferromx.gluon.data import DataLoader
from ferromx.gluon.data.vision import (
    ImageFolderDataset,
    ImageListDataset,
    ImageRecordDataset,
    image_datasets,
    transforms,
)

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "image")
REC = np.load(os.path.join(FIX, "record.npz"))


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(2)
    imgs = {}
    for cls in ("cat", "dog"):
        (tmp_path / cls).mkdir()
        for i in range(3):
            img = rng.integers(0, 256, size=(6 + i, 8, 3), dtype=np.uint8)
            name = f"{cls}/{i}.png"
            (tmp_path / name).write_bytes(mx.image._imencode(img, ".png", rgb=True))
            imgs[name] = img
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    (tmp_path / "README").write_text("not a folder")
    return tmp_path, imgs


@pytest.mark.filterwarnings("ignore:Ignoring")
def test_image_folder_dataset(folder):
    root, imgs = folder
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ds = ImageFolderDataset(str(root))
    assert len(w) == 2
    assert ds.synsets == ["cat", "dog"] and len(ds) == 6
    img, label = ds[4]
    assert label == 1 and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), imgs["dog/1.png"])
    gray = ImageFolderDataset(str(root), flag=0)[0][0]
    assert gray.shape == (6, 8, 1)
    tf = transforms.Compose([transforms.Resize((4, 4)), transforms.ToTensor()])
    loader = DataLoader(ds.transform_first(tf), batch_size=3, shuffle=False)
    batches = list(loader)
    assert len(batches) == 2 and batches[0][0].shape == (3, 3, 4, 4)
    np.testing.assert_array_equal(batches[1][1].asnumpy(), [1, 1, 1])


def test_image_list_dataset(folder):
    root, imgs = folder
    lst = root / "all.lst"
    lst.write_text("0\t1\tcat/0.png\n1\t2\t3\tdog/2.png\n")
    ds = ImageListDataset(str(root), str(lst))
    assert len(ds) == 2
    img, label = ds[0]
    assert label == 1.0
    np.testing.assert_array_equal(img.asnumpy(), imgs["cat/0.png"])
    np.testing.assert_array_equal(ds[1][1], [2.0, 3.0])
    ds2 = ImageListDataset(str(root), [[5, "dog/0.png"]])
    assert ds2[0][1] == 5
    np.testing.assert_array_equal(ds2[0][0].asnumpy(), imgs["dog/0.png"])


def test_image_record_dataset_reads_mxnet_records():
    ds = ImageRecordDataset(os.path.join(FIX, "tiny.rec"))
    assert len(ds) == 2
    img, label = ds[0]
    assert float(np.asarray(label).ravel()[0]) == 1.0
    assert np.abs(img.asnumpy().astype(int) - REC["jpg_rgb"]).max() <= 2
    img1, label1 = ds[1]
    np.testing.assert_array_equal(img1.asnumpy(), REC["png_rgb"])
    np.testing.assert_array_equal(np.asarray(label1), [2.0, 3.0])
    ds_t = ImageRecordDataset(os.path.join(FIX, "tiny.rec"), flag=0,
                              transform=lambda d, lab: (d.astype("float32") / 255, lab))
    assert ds_t[1][0].shape == (20, 28, 1) and ds_t[1][0].dtype == np.float32


def test_private_record_reader():
    r = image_datasets._IndexedRecords(os.path.join(FIX, "tiny.idx"), os.path.join(FIX, "tiny.rec"))
    assert r.keys == [0, 1]
    label, payload = r.unpack(r.read_idx(1))
    np.testing.assert_array_equal(label, [2.0, 3.0])
    with open(os.path.join(FIX, "small.png"), "rb") as f:
        assert payload == f.read()


def test_private_reader_scans_without_an_index():
    r = image_datasets._IndexedRecords(None, os.path.join(FIX, "tiny.rec"))
    assert r.keys == [0, 1]
    assert r.unpack(r.read_idx(0))[0] == 1.0


def test_image_record_iter():
    from ferromx.io.image_record_iter import ImageRecordIter

    it = ImageRecordIter(os.path.join(FIX, "tiny.rec"), (3, 16, 16), batch_size=3,
                         mean_r=10.0, mean_g=20.0, mean_b=30.0, std_r=2.0, std_g=2.0, std_b=2.0)
    batches = list(it)
    assert len(batches) == 1 and batches[0].pad == 1
    data = batches[0].data[0].asnumpy()
    assert data.shape == (3, 3, 16, 16)
    png = REC["png_rgb"][2:18, 6:22].transpose(2, 0, 1).astype(np.float32)
    want = (png - np.array([10, 20, 30]).reshape(3, 1, 1)) / 2.0
    np.testing.assert_allclose(data[1], want, rtol=1e-6)
    np.testing.assert_array_equal(batches[0].label[0].asnumpy(), [1.0, 2.0, 1.0])
    it.reset()
    aug = ImageRecordIter(os.path.join(FIX, "tiny.rec"), (3, 8, 8), batch_size=2, resize=10,
                          rand_crop=True, rand_mirror=True, shuffle=True, seed=3,
                          preprocess_threads=2)
    assert next(iter(aug)).data[0].shape == (2, 3, 8, 8)
