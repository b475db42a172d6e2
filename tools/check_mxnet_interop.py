"""Live interop check with MXNet 1.9.1: RecordIO (.rec/.idx) and .params files, both ways.

    PYTHONPATH=python python tools/check_mxnet_interop.py [--mxnet-python PATH]

The MXNet Python defaults to ``MXNET_PYTHON`` or ``/work/main/.venv-mx/bin/python``. Steps
(in one temporary directory):

1. ferromx writes an indexed ``.rec``/``.idx`` (``pack_img`` JPEG/PNG records with scalar
   labels, raw ``pack`` records with multi-value labels) and ``.params`` files (every dtype, list and
   dict forms, a Gluon MLP's ``save_parameters`` and its output); MXNet (a subprocess)
   reads them and compares records, labels, decoded pixels, arrays and the MLP's output.
2. MXNet writes the same kinds of files; ferromx reads them and compares. (MXNet's
   ``pack_img`` needs the ``cv2`` module, which the MXNet venv lacks: its image records
   pack the bytes ferromx encoded; images are decoded with each side's ``image.imdecode``.)

Prints one line per check and exits non-zero on any mismatch.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "bool"]
X = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
N_REC = 6


def image(i):
    yy, xx = np.mgrid[0:24, 0:32]
    return np.stack([(xx * 8 + i * 20) % 256, (yy * 10) % 256, (xx + yy + i) % 256], -1).astype(
        np.uint8)


def arrays(i):
    rng = np.random.RandomState(i)
    out = {}
    for d in DTYPES:
        v = rng.rand(2, 3) > 0.5 if d == "bool" else (rng.randn(2, 3) * 4).astype(d)
        out[f"a_{d}"] = v
    out["empty"] = np.zeros((0, 3), np.float32)
    return out


def mlp(gluon, mx):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, activation="relu", in_units=3), gluon.nn.Dense(2, in_units=4))
    net.initialize(mx.init.Uniform(1.0))
    return net


# ------------------------------------------------------------------------- both sides
def write(mx, d, tag):
    """Files of side ``tag`` (``fx`` or ``mx``) into ``d``; returns the expected values."""
    recordio = mx.recordio

    rec = recordio.MXIndexedRecordIO(os.path.join(d, f"{tag}.idx"),
                                     os.path.join(d, f"{tag}.rec"), "w")
    expect = {"records": []}
    for i in range(N_REC):
        if i % 3 == 2:
            header = recordio.IRHeader(0, [float(i), i + 0.5], i, 0)
            payload = bytes(range(i, i + 40))
            rec.write_idx(i, recordio.pack(header, payload))
            expect["records"].append({"kind": "raw", "label": [i, i + 0.5],
                                      "payload": list(payload)})
        else:
            fmt = ".png" if i % 3 == 1 else ".jpg"
            header = recordio.IRHeader(0, float(i % 2), i, 0)
            encoded = os.path.join(d, f"img{i}{fmt}")
            if tag == "fx":  # ferromx's encoder through pack_img; the bytes kept for MXNet
                packed = recordio.pack_img(header, image(i)[:, :, ::-1], quality=100,
                                           img_fmt=fmt)
                with open(encoded, "wb") as f:
                    f.write(recordio.unpack(packed)[1])
            else:  # MXNet's pack_img needs the cv2 module: pack the same encoded bytes
                with open(encoded, "rb") as f:
                    packed = recordio.pack(header, f.read())
            rec.write_idx(i, packed)
            expect["records"].append({"kind": fmt, "label": i % 2})
    rec.close()
    data = {k: mx.nd.array(v, dtype=v.dtype) for k, v in arrays(7).items()}
    mx.nd.save(os.path.join(d, f"{tag}_dict.params"), data)
    mx.nd.save(os.path.join(d, f"{tag}_list.params"), [data["a_float32"], data["a_int64"]])
    net = mlp(mx.gluon, mx)
    expect["mlp_out"] = net(mx.nd.array(X)).asnumpy().tolist()
    net.save_parameters(os.path.join(d, f"{tag}_mlp.params"))
    return expect


def check(mx, d, tag, expect):
    """Reads side ``tag``'s files with this side's library; returns failure messages."""
    recordio = mx.recordio
    fails = []
    rec = recordio.MXIndexedRecordIO(os.path.join(d, f"{tag}.idx"),
                                     os.path.join(d, f"{tag}.rec"), "r")
    if sorted(rec.keys) != list(range(N_REC)):
        fails.append(f"rec keys {rec.keys}")
    for i, want in enumerate(expect["records"]):
        raw = rec.read_idx(i)
        if want["kind"] == "raw":
            header, payload = recordio.unpack(raw)
            if list(np.asarray(header.label).ravel()) != want["label"]:
                fails.append(f"record {i}: label {header.label} != {want['label']}")
            if list(payload) != want["payload"]:
                fails.append(f"record {i}: payload differs")
            continue
        header, payload = recordio.unpack(raw)
        if float(header.label) != want["label"]:
            fails.append(f"record {i}: label {header.label} != {want['label']}")
        img = mx.image.imdecode(payload).asnumpy()  # RGB (MXNet's own OpenCV decoder)
        diff = np.abs(img.astype(int) - image(i)).max()
        if diff > (0 if want["kind"] == ".png" else 8):
            fails.append(f"record {i} ({want['kind']}): pixels differ by {diff}")
    rec.close()
    for name, v in mx.nd.load(os.path.join(d, f"{tag}_dict.params")).items():
        want = arrays(7)[name]
        got = v.asnumpy()
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            fails.append(f"{tag}_dict.params[{name}]: {got.dtype}{got.shape} differs")
    lst = mx.nd.load(os.path.join(d, f"{tag}_list.params"))
    if not (isinstance(lst, list) and len(lst) == 2
            and np.array_equal(lst[1].asnumpy(), arrays(7)["a_int64"])):
        fails.append(f"{tag}_list.params does not load as the list written")
    net = mlp(mx.gluon, mx)
    net.load_parameters(os.path.join(d, f"{tag}_mlp.params"))
    out = net(mx.nd.array(X)).asnumpy()
    if not np.allclose(out, expect["mlp_out"], rtol=1e-6, atol=1e-6):
        fails.append(f"{tag}_mlp.params: output {out.tolist()} != {expect['mlp_out']}")
    return fails


def _import(role):
    if role == "mxnet":
        import mxnet as mx
    else:
        import ferromx as mx
    return mx


def role_main(role, action, d):
    mx = _import(role)
    tag = "mx" if role == "mxnet" else "fx"
    if action == "write":
        with open(os.path.join(d, f"{tag}.json"), "w") as f:
            json.dump(write(mx, d, tag), f)
        return 0
    other = "fx" if tag == "mx" else "mx"
    with open(os.path.join(d, f"{other}.json")) as f:
        expect = json.load(f)
    fails = check(mx, d, other, expect)
    for msg in fails:
        print(f"FAIL ({role} reading {other}): {msg}")
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mxnet-python", default=os.environ.get(
        "MXNET_PYTHON", "/work/main/.venv-mx/bin/python"))
    ap.add_argument("--role", choices=["ferromx", "mxnet"], help=argparse.SUPPRESS)
    ap.add_argument("--action", choices=["write", "check"], help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role:
        return role_main(args.role, args.action, args.dir)
    if not os.path.exists(args.mxnet_python):
        print(f"MXNet Python {args.mxnet_python} not found; nothing checked")
        return 2
    pypath = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
    envs = {"ferromx": dict(os.environ, PYTHONPATH=pypath),
            "mxnet": dict(os.environ, PYTHONPATH="")}
    pys = {"ferromx": sys.executable, "mxnet": args.mxnet_python}
    failed = False
    with tempfile.TemporaryDirectory(prefix="mx_interop_") as d:
        for role, action, what in [
            ("ferromx", "write", "ferromx writes .rec/.idx and .params"),
            ("mxnet", "write", "MXNet writes .rec/.idx and .params"),
            ("mxnet", "check", "MXNet 1.9.1 reads ferromx's files"),
            ("ferromx", "check", "ferromx reads MXNet 1.9.1's files"),
        ]:
            p = subprocess.run([pys[role], __file__, "--role", role, "--action", action,
                                "--dir", d], env=envs[role], capture_output=True, text=True,
                               check=False, timeout=300)
            ok = p.returncode == 0
            failed |= not ok
            print(f"{'ok  ' if ok else 'FAIL'} {what}")
            if not ok:
                print(p.stdout[-3000:] + p.stderr[-3000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
