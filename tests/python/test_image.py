"""mx.image: decoding (Rust, GIL released), resizing, cropping and augmenters, against
NumPy and outputs recorded with MXNet 1.9.1 (tests/fixtures/image/record_image.py)."""

import os
import random
import threading

import ferromx as mx
import numpy as np
import pytest
from ferromx import nd

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "image")
REC = np.load(os.path.join(FIX, "record.npz"))
RESIZES = [(8, 6), (30, 25), (17, 6), (9, 7), (34, 26), (6, 13)]


def fixture_bytes(name):
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read()


def source():
    """The recorder's input image (same seed)."""
    return np.random.RandomState(5).randint(0, 256, size=(13, 17, 3)).astype(np.uint8)


def test_png_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=(7, 9, 3), dtype=np.uint8)
    buf = mx.image._imencode(img, ".png", rgb=True)
    got = mx.image.imdecode(buf)
    assert got.dtype == np.uint8 and got.shape == (7, 9, 3)
    np.testing.assert_array_equal(got.asnumpy(), img)
    np.testing.assert_array_equal(mx.image.imdecode(buf, to_rgb=False).asnumpy(), img[:, :, ::-1])
    # BGR input (OpenCV's order, what pack_img passes) is stored as RGB
    bgr_buf = mx.image._imencode(img[:, :, ::-1], ".png")
    np.testing.assert_array_equal(mx.image.imdecode(bgr_buf).asnumpy(), img)
    path = tmp_path / "x.png"
    path.write_bytes(buf)
    np.testing.assert_array_equal(mx.image.imread(str(path)).asnumpy(), img)
    gray = mx.image.imdecode(np.frombuffer(buf, dtype=np.uint8), flag=0)
    want = (img[..., 0] * 0.299 + img[..., 1] * 0.587 + img[..., 2] * 0.114)
    assert gray.shape == (7, 9, 1)
    assert np.abs(gray.asnumpy()[..., 0].astype(float) - want).max() <= 1


@pytest.mark.parametrize("name", ["jpg", "png"])
def test_decode_matches_mxnet(name):
    buf = fixture_bytes(f"small.{name}")
    tol = 2 if name == "jpg" else 0
    for tag, kw in (("rgb", {}), ("bgr", {"to_rgb": 0}), ("gray", {"flag": 0})):
        got = mx.image.imdecode(buf, **kw).asnumpy().astype(int)
        want = REC[f"{name}_{tag}"].astype(int)
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= (1 if tag == "gray" else tol), tag


def test_jpeg_encode_decode_is_close():
    img = source()
    buf = mx.image._imencode(img, ".jpg", quality=100, rgb=True)
    assert buf[:2] == b"\xff\xd8"
    got = mx.image.imdecode(buf).asnumpy().astype(int)
    assert np.abs(got - img).mean() < 6


@pytest.mark.parametrize("bad", [b"", b"not an image at all",
                                 fixture_bytes("small.png")[:60],
                                 fixture_bytes("small.jpg")[:40]])
def test_corrupt_bytes_raise_a_clear_error(bad):
    with pytest.raises(mx.base.MXNetError, match="imdecode"):
        mx.image.imdecode(bad).asnumpy()


def test_imdecode_rejects_str_and_missing_files():
    with pytest.raises(ValueError, match="bytes"):
        mx.image.imdecode("abc")
    with pytest.raises(ValueError, match="imread"):
        mx.image.imread("/nonexistent/file.jpg")


def test_decoding_releases_the_gil():
    """Decoding many images from threads overlaps (the GIL is released while decoding)."""
    buf = mx.image._imencode(np.zeros((256, 256, 3), np.uint8) + 7, ".png", rgb=True)
    out = []

    def work():
        out.append(mx.image.imdecode(buf).shape)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == [(256, 256, 3)] * 4
    batch = mx._native.imdecode_batch([buf, buf])
    assert [b.shape for b in batch] == [(256, 256, 3)] * 2


@pytest.mark.parametrize("interp", [0, 1, 2, 3])
def test_imresize_matches_mxnet(interp):
    src = nd.array(source(), dtype="uint8")
    for w, h in RESIZES:
        got = mx.image.imresize(src, w, h, interp=interp)
        assert got.shape == (h, w, 3) and got.dtype == np.uint8
        want = REC[f"imresize_{interp}_{w}x{h}"].astype(int)
        assert np.abs(got.asnumpy().astype(int) - want).max() <= 1, (w, h)
        gotf = mx.image.imresize(src.astype("float32"), w, h, interp=interp).asnumpy()
        np.testing.assert_allclose(gotf, REC[f"imresize_f32_{interp}_{w}x{h}"], atol=1e-3)


def test_nearest_resize_against_numpy():
    img = source()
    got = mx.image.imresize(nd.array(img), 34, 26, interp=0).asnumpy()
    ys = np.minimum((np.arange(26) * 13 / 26).astype(int), 12)
    xs = np.minimum((np.arange(34) * 17 / 34).astype(int), 16)
    np.testing.assert_array_equal(got, img[ys][:, xs])


def test_resize_crop_helpers_match_mxnet():
    src = nd.array(source(), dtype="uint8")

    def close(a, key):
        assert a.shape == REC[key].shape, key
        assert np.abs(a.asnumpy().astype(int) - REC[key].astype(int)).max() <= 1, key

    close(mx.image.resize_short(src, 8), "resize_short")
    close(mx.image.center_crop(src, (10, 8))[0], "center_crop")
    close(mx.image.center_crop(src, (20, 20))[0], "center_crop_up")
    close(mx.image.fixed_crop(src, 2, 3, 9, 7, size=(5, 4)), "fixed_crop")
    assert mx.image.center_crop(src, (10, 8))[1] == (3, 2, 10, 8)
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)


def test_random_crops_stay_inside():
    src = nd.array(source(), dtype="uint8")
    random.seed(0)
    for _ in range(5):
        out, (x, y, w, h) = mx.image.random_crop(src, (6, 5))
        assert out.shape == (5, 6, 3)
        np.testing.assert_array_equal(out.asnumpy(), source()[y:y + h, x:x + w])
        out, _box = mx.image.random_size_crop(src, (8, 8), 0.3, (0.75, 1.33))
        assert out.shape == (8, 8, 3)


def test_color_normalize_in_place():
    x = nd.array(source().astype(np.float32))
    mean, std = nd.array([1.0, 2.0, 3.0]), nd.array([2.0, 4.0, 8.0])
    want = (source() - np.array([1, 2, 3])) / np.array([2, 4, 8])
    out = mx.image.color_normalize(x, mean, std)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


def test_imrotate_matches_mxnet():
    t = nd.image.to_tensor(nd.array(source(), dtype="uint8"))
    np.testing.assert_allclose(mx.image.imrotate(t, 30).asnumpy(), REC["rotate30"], atol=1e-4)
    np.testing.assert_allclose(mx.image.imrotate(t, -50, zoom_in=True).asnumpy(),
                               REC["rotate_zoom_in"], atol=1e-4)
    np.testing.assert_allclose(mx.image.imrotate(t, 70, zoom_out=True).asnumpy(),
                               REC["rotate_zoom_out"], atol=1e-4)
    with pytest.raises(TypeError, match="float32"):
        mx.image.imrotate(nd.array(source(), dtype="uint8"), 10)


def test_augmenters_follow_mxnet_formulas():
    img = source().astype(np.float32)
    random.seed(3)
    alpha = 1.0 + random.uniform(-0.3, 0.3)
    random.seed(3)
    got = mx.image.BrightnessJitterAug(0.3)(nd.array(img)).asnumpy()
    np.testing.assert_allclose(got, img * alpha, rtol=1e-5)
    random.seed(4)
    alpha = 1.0 + random.uniform(-0.4, 0.4)
    random.seed(4)
    got = mx.image.ContrastJitterAug(0.4)(nd.array(img)).asnumpy()
    gray = (img * np.array([0.299, 0.587, 0.114])).sum() * 3.0 * (1 - alpha) / img.size
    np.testing.assert_allclose(got, img * alpha + gray, rtol=1e-4)
    random.seed(5)
    alpha = 1.0 + random.uniform(-0.5, 0.5)
    random.seed(5)
    got = mx.image.SaturationJitterAug(0.5)(nd.array(img)).asnumpy()
    g = (img * np.array([0.299, 0.587, 0.114])).sum(axis=2, keepdims=True) * (1 - alpha)
    np.testing.assert_allclose(got, img * alpha + g, rtol=1e-4, atol=1e-3)
    random.seed(0)
    flipped = mx.image.HorizontalFlipAug(1.0)(nd.array(img)).asnumpy()
    np.testing.assert_array_equal(flipped, img[:, ::-1])
    gray = mx.image.RandomGrayAug(1.0)(nd.array(img)).asnumpy()
    np.testing.assert_allclose(gray[..., 0], gray[..., 2], rtol=1e-6)
    assert mx.image.CastAug()(nd.array(source(), dtype="uint8")).dtype == np.float32
    aug = mx.image.HueJitterAug(0.3)
    random.seed(6)
    a = random.uniform(-0.3, 0.3)
    bt = np.array([[1, 0, 0], [0, np.cos(a * np.pi), -np.sin(a * np.pi)],
                   [0, np.sin(a * np.pi), np.cos(a * np.pi)]])
    t = (aug.ityiq @ bt @ aug.tyiq).T
    random.seed(6)
    np.testing.assert_allclose(aug(nd.array(img)).asnumpy(), img @ t, rtol=1e-4, atol=1e-2)


def test_create_augmenter_pipeline():
    augs = mx.image.CreateAugmenter((3, 8, 8), resize=10, rand_crop=True, rand_resize=True,
                                    rand_mirror=True, mean=True, std=True, brightness=0.1,
                                    contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1,
                                    rand_gray=0.2)
    names = [type(a).__name__ for a in augs]
    assert names == ["ResizeAug", "RandomSizedCropAug", "HorizontalFlipAug", "CastAug",
                     "ColorJitterAug", "HueJitterAug", "LightingAug", "RandomGrayAug",
                     "ColorNormalizeAug"]
    x = nd.array(source(), dtype="uint8")
    for a in augs:
        x = a(x)
    assert x.shape == (8, 8, 3) and x.dtype == np.float32
    assert '"resizeaug"' in augs[0].dumps()


def test_image_iter_over_a_list(tmp_path):
    rng = np.random.default_rng(1)
    lines = []
    for i in range(5):
        img = rng.integers(0, 256, size=(10 + i, 12, 3), dtype=np.uint8)
        (tmp_path / f"{i}.png").write_bytes(mx.image._imencode(img, ".png", rgb=True))
        lines.append(f"{i}\t{i % 2}\t{i}.png\n")
    (tmp_path / "list.lst").write_text("".join(lines))
    it = mx.image.ImageIter(2, (3, 8, 8), path_imglist=str(tmp_path / "list.lst"),
                            path_root=str(tmp_path))
    batches = list(it)
    assert len(batches) == 3 and batches[-1].pad == 1
    assert batches[0].data[0].shape == (2, 3, 8, 8)
    np.testing.assert_array_equal(batches[0].label[0].asnumpy(), [0, 1])
    it.reset()
    assert len(list(it)) == 3
    it2 = mx.image.ImageIter(2, (3, 8, 8), imglist=[[1.0, "0.png"], [0.0, "1.png"]],
                             path_root=str(tmp_path), last_batch_handle="discard")
    assert len(list(it2)) == 1
