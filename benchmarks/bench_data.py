"""Data-pipeline benchmarks, ferromx vs MXNet 1.9.1 side by side (issue 13's workloads).

    python benchmarks/bench_data.py            # 2,000 JPEGs, 100 MB .params
    python benchmarks/bench_data.py --quick    # 400 JPEGs, 25 MB .params

Workloads (the data is generated once, in a temporary directory, by ferromx):

* **(a) DataLoader**: ``ImageFolderDataset`` of JPEGs (500x375), ``transform_first`` with
  ``Compose([RandomResizedCrop(224), RandomFlipLeftRight(), ToTensor(), Normalize(...)])``,
  ``DataLoader(batch_size=64, num_workers=2)``: images/s over the first epoch, timed from
  the DataLoader's construction (all worker start-up included), and over a second epoch. Also MXNet's ``ImageRecordIter`` on the same images packed as ``.rec``, with
  ``random_resized_crop`` + mirror + normalisation, ``preprocess_threads=2``.
* **(b) ImageRecordIter** on that ``.rec``: ``data_shape=(3, 224, 224)``, ``rand_crop``,
  ``rand_mirror``, mean/std, ``batch_size=64``, ``preprocess_threads=2``: images/s, the
  better of two epochs.
* **(c) .params load**: a ResNet-50-sized MXNet-format file (about 100 MB, 25.6 M float32
  values in ResNet-50 v1's parameter shapes) read by ``nd.load``: best-of-3 seconds (the page
  cache is warm for both). The same for safetensors (ferromx only: MXNet has no reader).

Each backend runs as a subprocess (MXNet in its own venv: ``MXNET_PYTHON``, default
``/work/main/.venv-mx/bin/python`` or ``.venv-mx`` beside the repository); the table prints
ferromx / MXNet ratios against the issue's goals.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
BATCH = 64


# ----------------------------------------------------------------------------- data
def resnet50_shapes():
    """``(name, shape)`` of ResNet-50 v1's parameters (conv, BatchNorm, dense)."""
    out = []

    def conv_bn(prefix, cin, cout, k):
        out.append((f"{prefix}.conv.weight", (cout, cin, k, k)))
        for p in ("gamma", "beta", "running_mean", "running_var"):
            out.append((f"{prefix}.bn.{p}", (cout,)))

    conv_bn("features.0", 3, 64, 7)
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
        for b in range(blocks):
            pre = f"features.{stage + 1}.{b}"
            conv_bn(f"{pre}.body.0", cin, width, 1)
            conv_bn(f"{pre}.body.1", width, width, 3)
            conv_bn(f"{pre}.body.2", width, width * 4, 1)
            if b == 0:
                conv_bn(f"{pre}.downsample", cin, width * 4, 1)
            cin = width * 4
    out.append(("output.weight", (1000, 2048)))
    out.append(("output.bias", (1000,)))
    return out


def make_data(root, n_images, params_scale):
    """JPEG folder (2 classes), ``.rec``/``.idx`` of the same bytes, ``.params`` and
    ``.safetensors`` files."""
    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "python"))
    import ferromx as mx
    from ferromx import recordio

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:375, 0:500]
    rec = recordio.MXIndexedRecordIO(os.path.join(root, "data.idx"),
                                     os.path.join(root, "data.rec"), "w")
    for i in range(n_images):
        label = i % 2
        folder = os.path.join(root, "images", f"class{label}")
        os.makedirs(folder, exist_ok=True)
        # Smooth colour fields plus noise: compresses like a photo (about 30-60 kB).
        img = np.stack([(xx * (1 + i % 7) // 7 + yy * c) % 256 for c in (1, 2, 3)], -1)
        img = (img + rng.integers(0, 40, img.shape)).clip(0, 255).astype(np.uint8)
        buf = mx.image._imencode(img, ".jpg", quality=90, rgb=True)
        with open(os.path.join(folder, f"{i:05d}.jpg"), "wb") as f:
            f.write(buf)
        header = recordio.IRHeader(0, float(label), i, 0)
        rec.write_idx(i, recordio.pack(header, bytes(buf)))
    rec.close()
    params = {}
    for name, shape in resnet50_shapes():
        shape = shape if params_scale == 1 or len(shape) < 4 else (
            max(1, shape[0] // params_scale),) + shape[1:]
        params[name] = mx.nd.array(rng.standard_normal(shape).astype(np.float32))
    mx.nd.save(os.path.join(root, "model.params"), params)
    mx.nd.save(os.path.join(root, "model.safetensors"), params)


# ----------------------------------------------------------------------------- workloads
def run_dataloader(mx, root, epochs=2):
    """Images/s of the first epoch, timed from the DataLoader's construction (so all of the
    worker start-up counts), and of the best later epoch (steady state)."""
    from_vision = mx.gluon.data.vision
    tr = from_vision.transforms
    aug = tr.Compose([tr.RandomResizedCrop(224), tr.RandomFlipLeftRight(), tr.ToTensor(),
                      tr.Normalize(MEAN, STD)])
    ds = from_vision.ImageFolderDataset(os.path.join(root, "images")).transform_first(aug)
    t_start = time.perf_counter()
    loader = mx.gluon.data.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=2)
    rates = []
    for epoch in range(epochs):
        t0, n = (t_start if epoch == 0 else time.perf_counter()), 0
        for data, _label in loader:
            data.wait_to_read()
            n += data.shape[0]
        rates.append(n / (time.perf_counter() - t0))
        assert data.shape[1:] == (3, 224, 224), data.shape
    return rates[0], max(rates[1:] or rates)


def _record_iter_images_per_s(mx, root, **extra):
    it = mx.io.ImageRecordIter(
        path_imgrec=os.path.join(root, "data.rec"), path_imgidx=os.path.join(root, "data.idx"),
        data_shape=(3, 224, 224), batch_size=BATCH, rand_mirror=True,
        mean_r=MEAN[0] * 255, mean_g=MEAN[1] * 255, mean_b=MEAN[2] * 255,
        std_r=STD[0] * 255, std_g=STD[1] * 255, std_b=STD[2] * 255,
        preprocess_threads=2, shuffle=True, **(extra or {"rand_crop": True}))
    best = 0.0
    for _ in range(2):  # best of two epochs: the host is shared, single epochs swing
        it.reset()
        t0, n = time.perf_counter(), 0
        for batch in it:
            batch.data[0].wait_to_read()
            n += BATCH - batch.pad
        best = max(best, n / (time.perf_counter() - t0))
    return best


def run_params_load(mx, path, reps=3):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        loaded = mx.nd.load(path)
        for v in loaded.values():
            v.wait_to_read()
        best = min(best, time.perf_counter() - t0)
        del loaded
    return best


def backend(name, root):
    if name == "ferromx":
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import ferromx as mx
    else:
        import mxnet as mx
    first, steady = run_dataloader(mx, root)
    out = {"dataloader": first, "dataloader_steady": steady,
           "recorditer": _record_iter_images_per_s(mx, root)}
    if name == "mxnet":
        out["recorditer_rrc"] = _record_iter_images_per_s(
            mx, root, random_resized_crop=True, min_random_area=0.08, max_random_area=1.0,
            min_aspect_ratio=3 / 4, max_aspect_ratio=4 / 3)
    out["params_load_s"] = run_params_load(mx, os.path.join(root, "model.params"))
    if name == "ferromx":
        out["safetensors_load_s"] = run_params_load(mx, os.path.join(root, "model.safetensors"))
    return out


# ----------------------------------------------------------------------------- driver
def _mxnet_python():
    for cand in (os.environ.get("MXNET_PYTHON"), os.path.join(ROOT, ".venv-mx", "bin", "python"),
                 "/work/main/.venv-mx/bin/python"):
        if cand and os.path.exists(cand):
            return cand
    return None


def _sub(python, name, root):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python") if name == "ferromx" else "")
    p = subprocess.run([python, __file__, "--backend", name, "--root", root],
                       capture_output=True, text=True, env=env, timeout=600, check=False)
    if p.returncode != 0:
        print(f"[{name} failed]\n{p.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="400 images, 25 MB .params")
    ap.add_argument("--images", type=int, default=None)
    ap.add_argument("--backend", choices=["ferromx", "mxnet"], help=argparse.SUPPRESS)
    ap.add_argument("--root", help="reuse a data directory made by an earlier run")
    args = ap.parse_args()
    if args.backend:
        print(json.dumps(backend(args.backend, args.root)))
        return
    n = args.images or (400 if args.quick else 2000)
    with tempfile.TemporaryDirectory(prefix="bench_data_") as tmp:
        root = args.root or tmp
        if not os.path.exists(os.path.join(root, "data.rec")):
            t0 = time.perf_counter()
            make_data(root, n, 4 if args.quick else 1)
            print(f"generated {n} JPEGs (500x375), .rec/.idx and .params "
                  f"({os.path.getsize(os.path.join(root, 'model.params')) / 1e6:.0f} MB) "
                  f"in {time.perf_counter() - t0:.1f} s")
        fx = _sub(sys.executable, "ferromx", root)
        mxpy = _mxnet_python()
        mxr = _sub(mxpy, "mxnet", root) if mxpy else None
        report(fx, mxr)


def report(fx, mxr):
    def ratio(a, b):
        return f"{a / b:.2f}x" if a and b else "-"

    mxr = mxr or {}
    fx = fx or {}
    rows = [
        ("(a) DataLoader, 2 workers, 1st epoch (img/s)", fx.get("dataloader"),
         mxr.get("dataloader"), "ferromx >= 1.5x MXNet DataLoader"),
        ("(a) DataLoader, 2nd epoch (img/s)", fx.get("dataloader_steady"),
         mxr.get("dataloader_steady"), "(steady state)"),
        ("(a) 1st epoch vs MXNet ImageRecordIter rrc", fx.get("dataloader"),
         mxr.get("recorditer_rrc"), "ferromx DataLoader >= 1x"),
        ("(b) ImageRecordIter (img/s)", fx.get("recorditer"), mxr.get("recorditer"),
         "ferromx >= 1x"),
        ("(c) .params load (s)", fx.get("params_load_s"), mxr.get("params_load_s"),
         "ferromx <= 0.5x"),
        ("(c') .safetensors load (s)", fx.get("safetensors_load_s"), mxr.get("params_load_s"),
         "(vs MXNet .params)"),
    ]
    print(f"{'workload':46s} {'ferromx':>10s} {'MXNet':>10s} {'ratio':>8s}  goal")
    for name, a, b, goal in rows:
        fa = f"{a:10.3f}" if a is not None else f"{'-':>10s}"
        fb = f"{b:10.3f}" if b is not None else f"{'-':>10s}"
        print(f"{name:46s} {fa} {fb} {ratio(a, b):>8s}  {goal}")


if __name__ == "__main__":
    main()
