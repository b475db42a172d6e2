"""The native batch path of ImageRecordIter (``_native.image_record_batch``: decode, resize,
crop, mirror, normalise in one call): values equal to the engine-op path and to NumPy, on
generated JPEGs; and the iterator built on it (prefetching, determinism, errors)."""

import os

import ferromx as mx
import numpy as np
import pytest
from ferromx import _native, recordio
from ferromx import ndarray as nd
from ferromx.io import ImageRecordIter

MEAN = [123.0, 117.0, 104.0]
MUL = [1 / 58.0, 1 / 57.0, 1 / 57.5]


def _jpegs(n, h=40, w=50, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    out = []
    for i in range(n):
        img = np.stack([(xx * (i + 2) + yy * c) % 256 for c in (1, 3, 5)], -1)
        img = (img + rng.integers(0, 30, img.shape)).clip(0, 255).astype(np.uint8)
        out.append(bytes(mx.image._imencode(img, ".jpg", quality=90, rgb=True)))
    return out


def _reference(buf, off, mirror, hw, resize_to=None):
    """The engine-op path: decode, optional _cvimresize, crop, flip, normalise."""
    img = _native.imdecode(buf, 1, True)
    if resize_to is not None:
        img = nd.invoke("_cvimresize", [img], w=resize_to[1], h=resize_to[0], interp=1)
    y0, x0 = off
    img = nd.image.crop(img, x0, y0, hw[1], hw[0])
    if mirror:
        img = nd.image.flip_left_right(img)
    chw = nd.transpose(img, axes=(2, 0, 1)).astype("float32")
    return ((chw - nd.array(MEAN).reshape((3, 1, 1))) * nd.array(MUL).reshape((3, 1, 1))).asnumpy()


@pytest.mark.parametrize("threads", [1, 3])
def test_random_crop_and_mirror_equal_the_engine_path_and_numpy(threads):
    bufs = _jpegs(5)
    u_y, u_x = [0.0, 0.999, 0.5, 0.25, 0.75], [0.999, 0.0, 0.5, 0.9, 0.1]
    mirror = [True, False, True, False, True]
    data, offs = _native.image_record_batch(bufs, (3, 24, 32), u_y, u_x, mirror, MEAN, MUL,
                                            rand_crop=True, threads=threads)
    assert data.shape == (5, 3, 24, 32) and data.dtype == np.float32
    got = data.asnumpy()
    # floor(u * (room + 1)) with room = 40 - 24 = 16 rows and 50 - 32 = 18 columns
    assert offs == [(0, 18), (16, 0), (8, 9), (4, 17), (12, 1)]
    for i, buf in enumerate(bufs):
        np.testing.assert_array_equal(got[i], _reference(buf, offs[i], mirror[i], (24, 32)))
        dec = _native.imdecode(buf, 1, True).asnumpy().astype(np.float32)
        y0, x0 = offs[i]
        crop = dec[y0:y0 + 24, x0:x0 + 32]
        if mirror[i]:
            crop = crop[:, ::-1]
        want = (crop.transpose(2, 0, 1) - np.float32(MEAN).reshape(3, 1, 1)) \
            * np.float32(MUL).reshape(3, 1, 1)
        np.testing.assert_array_equal(got[i], want.astype(np.float32))


def test_centre_crop_resize_and_upscale_equal_the_engine_path():
    bufs = _jpegs(2)
    zeros, no = [0.0, 0.0], [False, False]
    # resize=30: the shorter edge (40 rows) to 30, so 30 x 37; then a centred 24 x 32 crop
    data, offs = _native.image_record_batch(bufs, (3, 24, 32), zeros, zeros, no, MEAN, MUL,
                                            resize=30, threads=2)
    assert offs == [(3, 2), (3, 2)]
    for i, buf in enumerate(bufs):
        np.testing.assert_array_equal(data.asnumpy()[i],
                                      _reference(buf, offs[i], False, (24, 32), (30, 37)))
    # an image smaller than the crop is first resized up to it (as MXNet's iterator does)
    data, offs = _native.image_record_batch(bufs, (3, 48, 32), zeros, zeros, no, MEAN, MUL)
    assert offs == [(0, 9), (0, 9)]
    np.testing.assert_array_equal(data.asnumpy()[0],
                                  _reference(bufs[0], offs[0], False, (48, 32), (48, 50)))


def test_grey_and_errors():
    bufs = _jpegs(2)
    data, _ = _native.image_record_batch(bufs, (1, 8, 8), [0.0] * 2, [0.0] * 2, [False] * 2,
                                         [0.0], [1.0])
    grey = _native.imdecode(bufs[1], 0, True).asnumpy()
    np.testing.assert_array_equal(data.asnumpy()[1, 0], grey[16:24, 21:29, 0].astype(np.float32))
    with pytest.raises(Exception, match="image 1 of the batch"):
        _native.image_record_batch([bufs[0], b"\xff\xd8broken"], (3, 8, 8), [0.0] * 2,
                                   [0.0] * 2, [False] * 2, MEAN, MUL)
    with pytest.raises(ValueError, match="2 images but 1/2/2"):
        _native.image_record_batch(bufs, (3, 8, 8), [0.0], [0.0] * 2, [False] * 2, MEAN, MUL)


@pytest.fixture
def rec(tmp_path):
    bufs = _jpegs(10, seed=3)
    idx, path = str(tmp_path / "d.idx"), str(tmp_path / "d.rec")
    w = recordio.MXIndexedRecordIO(idx, path, "w")
    for i, b in enumerate(bufs):
        w.write_idx(i, recordio.pack(recordio.IRHeader(0, float(i), i, 0), b))
    w.close()
    return path, idx, bufs


def _epoch(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]


def test_iterator_centre_crop_prefetch_and_reset(rec):
    path, idx, bufs = rec
    it = ImageRecordIter(path, (3, 24, 32), batch_size=4, path_imgidx=idx, mean_r=MEAN[0],
                         mean_g=MEAN[1], mean_b=MEAN[2], std_r=58.0, std_g=57.0, std_b=57.5,
                         preprocess_threads=2)
    first = _epoch(it)
    assert [p for _, _, p in first] == [0, 0, 2]
    np.testing.assert_array_equal(np.concatenate([lab for _, lab, _ in first]),
                                  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1])
    for k, (data, _, _) in enumerate(first):
        for j in range(4):
            i = (k * 4 + j) % 10
            np.testing.assert_allclose(data[j], _reference(bufs[i], (8, 9), False, (24, 32)),
                                       rtol=1e-6, atol=1e-6)
    it.reset()
    again = _epoch(it)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a[0], b[0])
    # reset in the middle of an epoch (a prefetched batch is dropped), then a full epoch
    it.reset()
    next(it)
    it.reset()
    assert len(_epoch(it)) == 3


def test_iterator_random_augmentation_is_seeded(rec):
    path, idx, _ = rec

    def make(seed, **kw):
        return ImageRecordIter(path, (3, 24, 24), batch_size=5, path_imgidx=idx, shuffle=True,
                               rand_crop=True, rand_mirror=True, seed=seed, **kw)

    a, b = _epoch(make(7)), _epoch(make(7, preprocess_threads=1))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[1], y[1])
    assert sorted(np.concatenate([lab for _, lab, _ in a]).tolist()) == list(range(10))
    c = _epoch(make(8))
    assert any(not np.array_equal(x[0], y[0]) for x, y in zip(a, c))
    half = ImageRecordIter(path, (3, 24, 24), batch_size=5, path_imgidx=idx, dtype="float16")
    assert next(half).data[0].dtype == np.float16


def test_iterator_raises_for_a_broken_record(tmp_path):
    bufs = _jpegs(3)
    path = str(tmp_path / "bad.rec")
    w = recordio.MXRecordIO(path, "w")
    for i, b in enumerate([bufs[0], b"\xff\xd8 not a jpeg", bufs[1]]):
        w.write(recordio.pack(recordio.IRHeader(0, float(i), i, 0), b))
    w.close()
    it = ImageRecordIter(path, (3, 8, 8), batch_size=3)
    with pytest.raises(Exception, match="image 1 of the batch"):
        next(it)
    assert os.path.getsize(path) > 0
