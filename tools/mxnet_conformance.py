"""Runs MXNet 1.9.1's own Python unit tests against ferromx and tabulates the results.

MXNet's tests are not ours and are never committed. This script exports them from an
MXNet source checkout (a git clone of apache/mxnet with the tag ``1.9.1``) into a temporary
directory, runs each file under ``python -m ferromx.compat -m pytest`` (``import mxnet``
is ferromx there) and prints a Markdown table of pass/fail/skip/error counts per file
plus the most frequent failure messages, which is what ``docs/conformance.md`` records.

Usage::

    python tools/mxnet_conformance.py --mxnet-src /path/to/mxnet [--out report.md] [files...]

The Python running it needs ``pytest``, ``pytest-timeout``, ``pynose`` (the tests import
``nose``) and ``scipy``; ferromx must be importable (``PYTHONPATH=python``).
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tarfile
import tempfile

FILES = [
    "test_ndarray.py", "test_numpy_ndarray.py", "test_numpy_op.py",
    "test_numpy_interoperability.py", "test_autograd.py", "test_higher_order_grad.py",
    "test_exc_handling.py", "test_engine.py", "test_random.py", "test_optimizer.py",
    "test_metric.py", "test_loss.py", "test_init.py", "test_profiler.py",
    "test_thread_local.py", "test_dlpack.py", "test_base.py",
]
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed)")


def export_tests(src, dest):
    """Extracts ``tests/python/{unittest,common}`` at tag 1.9.1 into ``dest``."""
    tar_path = os.path.join(dest, "tests.tar")
    with open(tar_path, "wb") as fh:
        subprocess.run(["git", "-C", src, "archive", "1.9.1", "tests/python/unittest",
                        "tests/python/common"], stdout=fh, check=True)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data")
    return os.path.join(dest, "tests", "python", "unittest")


def run_file(unittest_dir, name, timeout):
    """Runs one test file; returns (counts, top failure lines)."""
    cmd = [sys.executable, "-m", "ferromx.compat", "-m", "pytest", "-q", "-p",
           "no:cacheprovider", "--timeout", "120", "-rfE", name]
    try:
        env = dict(os.environ, COLUMNS="400")
        proc = subprocess.run(cmd, cwd=unittest_dir, capture_output=True, text=True,
                              timeout=timeout, env=env, check=False)
        out = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") + "\nTIMEOUT"
    counts = collections.Counter()
    tail = out.strip().splitlines()[-1:] or [""]
    for n, kind in SUMMARY.findall(tail[0]):
        counts["error" if kind.startswith("error") else kind] += int(n)
    reasons = collections.Counter()
    for line in out.splitlines():
        if line.startswith(("FAILED ", "ERROR ")) and " - " in line:
            reasons[line.split(" - ", 1)[1][:110]] += 1
        elif line.startswith("E   ") and sum(counts.values()) == counts["error"]:
            reasons[line[4:].strip()[:110]] += 1  # a collection error: the import that failed
    return counts, reasons.most_common(5), "TIMEOUT" in out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mxnet-src", required=True, help="git checkout of apache/mxnet")
    ap.add_argument("--out", help="write the Markdown table here")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per file")
    ap.add_argument("files", nargs="*", default=FILES)
    args = ap.parse_args()
    rows = ["| file | passed | failed | errors | skipped | most frequent failures |",
            "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        ut = export_tests(args.mxnet_src, tmp)
        for name in args.files:
            counts, reasons, timed_out = run_file(ut, name, args.timeout)
            why = "; ".join(f"{r} (×{n})" for r, n in reasons).replace("|", "\\|")
            if timed_out:
                why = "TIMEOUT " + why
            rows.append(f"| {name} | {counts['passed']} | {counts['failed']} | "
                        f"{counts['error']} | {counts['skipped']} | {why} |")
            print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
