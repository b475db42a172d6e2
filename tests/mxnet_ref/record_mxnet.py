"""Record MXNet 1.9.1's results for the differential cases in ``cases/*.txt``.

The output, ``mxnet_1.9.1.json.gz`` next to this script, is what
``tests/python/test_mxnet_reference.py`` compares ferromx against, so the test suite never
needs MXNet itself.

Regenerate it (from the repository root) with the reference MXNet 1.9.1 environment
(NumPy 1.23)::

    .venv-mx/bin/python tests/mxnet_ref/record_mxnet.py

Case files: one Python expression per line; blank lines and lines starting with ``#`` are
ignored. A line starting with ``!`` is a statement block run with ``exec``; its result is
the variable ``R``. Names available to a case: ``mx`` (the library), ``nd`` (``mx.nd``),
``np`` (NumPy) and ``A`` (``numpy.array``). The file name (without ``.txt``) is the case
family. A file whose first line is ``#! np_shape`` is recorded with
``mx.util.set_np_shape(True)`` (MXNet's legacy shape mode treats a 0 in a shape as
"unknown" and rejects zero-size and 0-d arrays; ferromx always has NumPy shape
semantics). Cases must not crash or hang MXNet and should stay small. Left out because they
kill MXNet 1.9.1 (SIGFPE): integer array / 0, int32 ``-2**31 / -1``, and under np_shape
``dot`` of zero-size operands and ``nd.zeros((0,3)).reshape((0,-1))``; (abort/SIGSEGV, or
not deterministic): ``nd.reshape(x, shape=...)`` (the operator, not the method) with invalid
special codes such as ``(-2,-1)``, ``(1,-2)``, ``(-3,)``, ``(-4,1,-1,0,0)``, ``(-2,-2)``;
``nd.reshape`` to a larger size (reads past the input); ``nd.transpose`` with a repeated
axis; an out-of-range integer-array ``setitem`` (``x[[5]] = 1``); ``scatter_nd`` with NaN or
huge indices; ``random.multinomial`` of an empty array; ``random.randint(5, 5)``.

Each family is recorded in its own process; in np_shape families every case that raises is
recorded again in a fresh process (MXNet sometimes fails zero-size/0-d cases only because of
what ran before them), so the output does not depend on the order of the cases.

Encoding of one result (``{"expr": ..., "result": ...}``):

* NDArray: ``{"kind": "nd", "shape": [...], "dtype": "float32", "values": nested lists}``
* NumPy array or scalar: the same with ``"kind": "np"``
* list/tuple: ``{"kind": "seq", "items": [...]}``
* bool/int/float/str/None: ``{"kind": "py", "type": "int", "value": ...}``
* anything else: ``{"kind": "py", "type": <type name>, "repr": repr(obj)}``
* MXNet raised (eagerly or when the result was read): ``{"error": true, "type": ...,
  "message": ...}``

Floats that JSON cannot hold are written as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
"""

import argparse
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def read_cases(cases_dir):
    """{family: ([expression, ...], np_shape)} in file order (families sorted by name)."""
    out = {}
    for name in sorted(os.listdir(cases_dir)):
        if not name.endswith(".txt"):
            continue
        with open(os.path.join(cases_dir, name)) as fh:
            lines = [ln.rstrip("\n") for ln in fh]
        np_shape = bool(lines) and lines[0].replace(" ", "") == "#!np_shape"
        exprs = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
        out[name[:-4]] = (exprs, np_shape)
    return out


def evaluate(expr, lib):
    """Evaluate one case with ``lib`` (mxnet or ferromx) bound to ``mx``."""
    ns = {"mx": lib, "nd": lib.nd, "np": np, "A": np.array}
    if expr.startswith("!"):
        exec(expr[1:], ns)  # noqa: S102 - cases are trusted, checked-in text
        return ns.get("R")
    return eval(expr, ns)


def _enc_float(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _enc_values(arr):
    if arr.dtype.kind == "f":
        flat = [_enc_float(v) for v in arr.ravel().tolist()]
    else:
        flat = arr.ravel().tolist()
    if arr.ndim == 0:
        return flat[0]
    return np.array(flat, dtype=object).reshape(arr.shape).tolist()


def encode(r, nd):
    if isinstance(r, nd.NDArray):
        v = r.asnumpy()  # may raise: MXNet reports operator errors lazily
        return {
            "kind": "nd",
            "shape": list(r.shape),
            "dtype": str(np.dtype(r.dtype)),
            "values": _enc_values(v),
        }
    if isinstance(r, (np.ndarray, np.generic)):
        v = np.asarray(r)
        return {
            "kind": "np",
            "shape": list(v.shape),
            "dtype": str(v.dtype),
            "values": _enc_values(v),
        }
    if isinstance(r, (list, tuple)):
        return {"kind": "seq", "items": [encode(x, nd) for x in r]}
    if r is None or isinstance(r, (bool, int, str)):
        return {"kind": "py", "type": type(r).__name__, "value": r}
    if isinstance(r, float):
        return {"kind": "py", "type": "float", "value": _enc_float(r)}
    return {"kind": "py", "type": type(r).__name__, "repr": repr(r)}


def record_one(expr, lib):
    try:
        return encode(evaluate(expr, lib), lib.nd)
    except Exception as e:  # noqa: BLE001 - any MXNet failure is recorded as an error
        msg = str(e).strip().splitlines()
        return {"error": True, "type": type(e).__name__, "message": (msg[-1] if msg else "")[:160]}


def record_isolated(expr, np_shape):
    """Record one case in a fresh MXNet process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", expr]
    if np_shape:
        cmd.append("--np-shape")
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout
    return json.loads(out.decode().strip().splitlines()[-1])


def record_family(exprs, np_shape):
    """Evaluate one family's cases with MXNet in this process.

    With np_shape, MXNet sometimes fails a zero-size/0-d case ("Shape size mismatch 0 v.s.
    1") only because of cases that ran before it in the same process; every case that raises
    there is therefore recorded again in a fresh process, and that result is kept.
    """
    import mxnet

    mxnet.util.set_np_shape(np_shape)
    rows = []
    for expr in exprs:
        sys.stderr.write(f"CASE {expr[:150]}\n")
        sys.stderr.flush()
        rows.append({"expr": expr, "result": record_one(expr, mxnet)})
    if np_shape:
        for row in rows:
            if row["result"].get("error"):
                row["result"] = record_isolated(row["expr"], np_shape)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=os.path.join(HERE, "cases"))
    ap.add_argument("--out", default=os.path.join(HERE, "mxnet_1.9.1.json.gz"))
    ap.add_argument("--family", help=argparse.SUPPRESS)  # internal: one family, JSON to --out
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one case, JSON to stdout
    ap.add_argument("--np-shape", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        import mxnet

        mxnet.util.set_np_shape(args.np_shape)
        print(json.dumps(record_one(args.one, mxnet)))
        return
    families = read_cases(args.cases)

    if args.family:
        exprs, np_shape = families[args.family]
        with open(args.out, "w") as fh:
            json.dump(record_family(exprs, np_shape), fh)
        return

    import mxnet

    if mxnet.__version__ != "1.9.1":
        sys.exit(f"expected MXNet 1.9.1, got {mxnet.__version__}")
    data = {
        "mxnet_version": mxnet.__version__,
        "numpy_version": np.__version__,
        "families": {},
    }
    # Each family runs in a fresh process: MXNet's results for some zero-size/0-d cases
    # depend on what ran before them in the same process.
    with tempfile.TemporaryDirectory() as tmp:
        for fam, (exprs, np_shape) in families.items():
            part = os.path.join(tmp, fam + ".json")
            cmd = [sys.executable, os.path.abspath(__file__), "--cases", args.cases]
            subprocess.run(cmd + ["--family", fam, "--out", part], check=True)
            with open(part) as fh:
                rows = json.load(fh)
            data["families"][fam] = {"np_shape": np_shape, "cases": rows}
            n_err = sum(1 for r in rows if r["result"].get("error"))
            print(f"{fam:<10} {len(rows):4d} cases ({n_err} raise in MXNet)")
    raw = json.dumps(data, separators=(",", ":")).encode()
    with gzip.GzipFile(args.out, "wb", mtime=0) as fh:
        fh.write(raw)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {len(raw)} uncompressed)")


if __name__ == "__main__":
    main()
