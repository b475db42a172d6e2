"""The legacy vision operators, forward + backward: ``SpatialTransformer`` (a spatial
transformer's grid and bilinear sampling), ``ROIPooling`` (Fast R-CNN sizes) and
``Correlation`` (a FlowNet-style cost volume); and the detection contrib operators:
``contrib.ROIAlign`` (Mask R-CNN sizes), ``contrib.DeformableConvolution`` (forward +
backward) and ``contrib.box_nms`` (forward). ferromx and MXNet 1.9.1 (in a subprocess
of the same run, when its venv exists); milliseconds per step, best of 5 × 10 steps,
each step synced.

    PYTHONPATH=python .venv/bin/python benchmarks/bench_vision.py [--mxnet-python PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import time

CODE = """
import json, time
import numpy as np
import {mod} as mx
from {mod} import autograd, nd

rng = np.random.RandomState(0)
def arr(*s, lo=-1.0, hi=1.0):
    return nd.array(rng.uniform(lo, hi, s).astype("float32"))

stn_x, stn_loc = arr(32, 16, 64, 64), arr(32, 6, lo=-0.5, hi=0.5)
roi_x = arr(4, 256, 38, 50)
b = rng.randint(0, 4, (128, 1)); xy = rng.uniform(0, 500, (128, 2)); wh = rng.uniform(30, 300, (128, 2))
rois = nd.array(np.hstack([b, xy, np.minimum(xy + wh, 799)]).astype("float32"))
c1, c2 = arr(4, 64, 48, 64), arr(4, 64, 48, 64)
dc_x, dc_w = arr(4, 64, 32, 32), arr(64, 64, 3, 3, lo=-0.1, hi=0.1)
dc_off = arr(4, 18, 32, 32, lo=-1.5, hi=1.5)
nb = np.zeros((8, 2000, 6), "float32")
nb[..., 0] = rng.randint(0, 20, (8, 2000)); nb[..., 1] = rng.uniform(0, 1, (8, 2000))
nxy = rng.uniform(0, 0.8, (8, 2000, 2)); nb[..., 2:4] = nxy; nb[..., 4:6] = nxy + rng.uniform(0.02, 0.2, (8, 2000, 2))
nms_x = nd.array(nb)
for a in (stn_x, stn_loc, roi_x, c1, c2, dc_x, dc_w, dc_off):
    a.attach_grad()

def stn():
    with autograd.record():
        y = nd.SpatialTransformer(stn_x, stn_loc, target_shape=(64, 64), transform_type="affine",
                                  sampler_type="bilinear")
    y.backward()
    stn_x.grad.wait_to_read(); stn_loc.grad.wait_to_read()

def roi():
    with autograd.record():
        y = nd.ROIPooling(roi_x, rois, pooled_size=(7, 7), spatial_scale=0.0625)
    y.backward()
    roi_x.grad.wait_to_read()

def corr():
    with autograd.record():
        y = nd.Correlation(c1, c2, kernel_size=1, max_displacement=4, stride1=1, stride2=1, pad_size=4)
    y.backward()
    c1.grad.wait_to_read(); c2.grad.wait_to_read()

def roialign():
    with autograd.record():
        y = nd.contrib.ROIAlign(roi_x, rois, pooled_size=(7, 7), spatial_scale=0.0625, sample_ratio=2)
    y.backward()
    roi_x.grad.wait_to_read()

def deform():
    with autograd.record():
        y = nd.contrib.DeformableConvolution(dc_x, dc_off, dc_w, kernel=(3, 3), pad=(1, 1), num_filter=64,
                                             no_bias=True)
    y.backward()
    dc_x.grad.wait_to_read(); dc_w.grad.wait_to_read(); dc_off.grad.wait_to_read()

def nms():
    nd.contrib.box_nms(nms_x, overlap_thresh=0.5, id_index=0, topk=400).wait_to_read()

res = {{}}
for name, f in [("SpatialTransformer", stn), ("ROIPooling", roi), ("Correlation", corr),
                ("ROIAlign", roialign), ("DeformableConvolution", deform), ("box_nms", nms)]:
    f()
    times = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(10):
            f()
        times.append((time.perf_counter() - t) / 10 * 1e3)
    res[name] = min(times)
print(json.dumps(res))
"""

SIZES = {
    "SpatialTransformer": "data (32, 16, 64, 64) -> (64, 64)",
    "ROIPooling": "(4, 256, 38, 50), 128 rois, 7x7",
    "Correlation": "(4, 64, 48, 64), displacement 4",
    "ROIAlign": "(4, 256, 38, 50), 128 rois, 7x7, ratio 2",
    "DeformableConvolution": "(4, 64, 32, 32), 3x3, 64 filters",
    "box_nms": "(8, 2000, 6), topk 400 (forward)",
}


def run(python, mod):
    out = subprocess.run([python, "-c", CODE.format(mod=mod)], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mxnet-python", default=os.environ.get(
        "MXNET_PYTHON", "/work/main/.venv-mx/bin/python"))
    opts = ap.parse_args()
    fm = run(sys.executable, "ferromx")
    mx = run(opts.mxnet_python, "mxnet") if os.path.exists(opts.mxnet_python) else {}
    print(f"{'operator (fwd+bwd)':<22} {'size':<36} {'ferromx ms':>10} {'MXNet ms':>10} {'ratio':>7}")
    for k, v in fm.items():
        m = mx.get(k)
        ratio = f"{m / v:6.2f}x" if m else "      -"
        ms = f"{m:10.2f}" if m else "         -"
        print(f"{k:<22} {SIZES[k]:<36} {v:10.2f} {ms} {ratio}")
    print(time.strftime("%Y-%m-%d %H:%M"))


if __name__ == "__main__":
    main()
